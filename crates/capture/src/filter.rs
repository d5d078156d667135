//! tcpdump filter expressions (`-f EXPR`), compiled by libpcap's own compiler, loaded only
//! when an expression is given.
//!
//! rampart does not parse filter expressions itself, and it does not link libpcap either: the
//! first [`Filter::new`] loads the shared library (`libpcap.so.0.8` as Debian's `libpcap0.8`
//! installs it, else `libpcap.so.1`, else `libpcap.so`; `RAMPART_LIBPCAP` names another file)
//! and hands the text to `pcap_compile` on a dead handle for each link type it meets;
//! [`Filter::matches`] runs the compiled classic-BPF program on a frame with
//! `pcap_offline_filter`. The same program can be attached to a live socket so the kernel drops
//! what the filter rejects ([`Filter::kernel_program`]). Everything else rampart does works
//! without libpcap on the machine; without it, [`Filter::new`] returns an error that names the
//! package to install ([`FilterError::missing_library`]).
//!
//! One difference from tcpdump: the program sees the captured bytes as both the captured and
//! the wire length, so `greater`/`less` compare against the captured length of a frame cut by
//! the snap length.
//!
//! The `unsafe` of this module is the foreign calls into the loaded library, each with the
//! types of libpcap's public header (`pcap/pcap.h`, `pcap/bpf.h`), and the one function that
//! reads the compiled instructions out of libpcap's allocation.
#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

use rampart_wire::LinkType;

/// A filter expression and its compiled programs, one per link type met so far.
pub struct Filter {
    expr: String,
    programs: Vec<(LinkType, Program)>,
}

/// Why an expression has no program: libpcap refused it, or libpcap is not installed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct FilterError {
    /// The expression.
    pub expr: String,
    /// The link type it was compiled for.
    pub link: String,
    /// libpcap's message, or why the library could not be loaded.
    pub message: String,
    /// The library could not be loaded (nothing was compiled).
    pub missing_library: bool,
}

impl FilterError {
    fn describe(&self) -> String {
        if self.missing_library {
            format!("filter expression '{}': {}", self.expr, self.message)
        } else {
            format!("filter expression '{}' ({}): {}", self.expr, self.link, self.message)
        }
    }
}

/// The DLT_ value libpcap's compiler expects for a link type.
fn dlt(link: LinkType) -> c_int {
    match link {
        LinkType::Null => 0,
        LinkType::Ethernet => 1,
        LinkType::Raw => 12,
        LinkType::Loop => 108,
        LinkType::LinuxSll => 113,
        LinkType::Ipv4 => 228,
        LinkType::Ipv6 => 229,
        LinkType::LinuxSll2 => 276,
        LinkType::Other(n) => n as c_int,
    }
}

/// `struct bpf_insn` of `pcap/bpf.h`.
#[repr(C)]
#[derive(Clone, Copy)]
struct BpfInsn {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

/// `struct bpf_program` of `pcap/bpf.h`.
#[repr(C)]
struct BpfProgram {
    len: c_uint,
    insns: *mut BpfInsn,
}

/// `struct pcap_pkthdr` of `pcap/pcap.h`.
#[repr(C)]
struct PktHdr {
    ts: libc::timeval,
    caplen: u32,
    len: u32,
}

type OpenDead = unsafe extern "C" fn(c_int, c_int) -> *mut c_void;
type Compile =
    unsafe extern "C" fn(*mut c_void, *mut BpfProgram, *const c_char, c_int, u32) -> c_int;
type GetErr = unsafe extern "C" fn(*mut c_void) -> *const c_char;
type Close = unsafe extern "C" fn(*mut c_void);
type OfflineFilter = unsafe extern "C" fn(*const BpfProgram, *const PktHdr, *const u8) -> c_int;
type FreeCode = unsafe extern "C" fn(*mut BpfProgram);

/// The functions rampart calls, resolved once from the loaded library.
struct Libpcap {
    open_dead: OpenDead,
    compile: Compile,
    geterr: GetErr,
    close: Close,
    offline_filter: OfflineFilter,
    freecode: FreeCode,
    /// Kept loaded for the life of the process (the function pointers point into it).
    _lib: libloading::Library,
}

/// The names tried, in order, when `RAMPART_LIBPCAP` is not set.
const NAMES: [&str; 3] = ["libpcap.so.0.8", "libpcap.so.1", "libpcap.so"];

/// The environment variable naming the library file to load instead of the usual names.
pub const LIBRARY_VAR: &str = "RAMPART_LIBPCAP";

fn load() -> Result<Libpcap, String> {
    let names: Vec<String> = match std::env::var(LIBRARY_VAR) {
        Ok(path) if !path.is_empty() => vec![path],
        _ => NAMES.iter().map(|n| n.to_string()).collect(),
    };
    let mut first = None;
    for name in &names {
        // SAFETY: loading libpcap runs its initialisers, which have no preconditions.
        match unsafe { libloading::Library::new(name) } {
            Ok(lib) => return resolve(lib).map_err(|e| format!("{name}: {e}")),
            Err(e) => first = first.or(Some(e.to_string())),
        }
    }
    Err(format!(
        "filter expressions need libpcap at run time and it could not be loaded ({}); \
         install Debian's libpcap0.8 (apt-get install libpcap0.8), or leave out -f",
        first.unwrap_or_default()
    ))
}

fn resolve(lib: libloading::Library) -> Result<Libpcap, libloading::Error> {
    // SAFETY: each symbol is declared with the signature of libpcap's public header, and the
    // pointers are used only while `lib` (moved into the result) stays loaded.
    unsafe {
        let open_dead = *lib.get::<OpenDead>(b"pcap_open_dead\0")?;
        let compile = *lib.get::<Compile>(b"pcap_compile\0")?;
        let geterr = *lib.get::<GetErr>(b"pcap_geterr\0")?;
        let close = *lib.get::<Close>(b"pcap_close\0")?;
        let offline_filter = *lib.get::<OfflineFilter>(b"pcap_offline_filter\0")?;
        let freecode = *lib.get::<FreeCode>(b"pcap_freecode\0")?;
        Ok(Libpcap { open_dead, compile, geterr, close, offline_filter, freecode, _lib: lib })
    }
}

fn libpcap() -> Result<&'static Libpcap, &'static str> {
    static LIB: OnceLock<Result<Libpcap, String>> = OnceLock::new();
    LIB.get_or_init(load).as_ref().map_err(String::as_str)
}

/// Whether libpcap can be loaded here (so `-f` works).
pub fn available() -> bool {
    libpcap().is_ok()
}

/// A program libpcap compiled; freed with `pcap_freecode`.
struct Program {
    prog: BpfProgram,
    lib: &'static Libpcap,
}

// SAFETY: the program is plain memory libpcap allocated for it alone; `pcap_offline_filter`
// only reads it, and it is freed once, by its owner.
unsafe impl Send for Program {}

impl Program {
    fn filter(&self, frame: &[u8]) -> bool {
        let len = u32::try_from(frame.len()).unwrap_or(u32::MAX);
        let hdr = PktHdr { ts: libc::timeval { tv_sec: 0, tv_usec: 0 }, caplen: len, len };
        // SAFETY: the program is valid (compiled and not freed), and `frame` holds `caplen`
        // readable bytes; the interpreter reads only below `caplen`.
        unsafe { (self.lib.offline_filter)(&self.prog, &hdr, frame.as_ptr()) != 0 }
    }

    fn instructions(&self) -> &[BpfInsn] {
        if self.prog.insns.is_null() {
            return &[];
        }
        // SAFETY: libpcap allocated `len` instructions at `insns`, alive until freecode.
        unsafe { std::slice::from_raw_parts(self.prog.insns, self.prog.len as usize) }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the program was filled by pcap_compile and is freed only here.
        unsafe { (self.lib.freecode)(&mut self.prog) }
    }
}

fn compile(expr: &str, link: LinkType) -> Result<Program, FilterError> {
    let err = |message: String, missing_library: bool| FilterError {
        expr: expr.to_string(),
        link: format!("{link:?}"),
        message,
        missing_library,
    };
    let lib = libpcap().map_err(|m| err(m.to_string(), true))?;
    let text = CString::new(expr).map_err(|_| err("contains a NUL byte".into(), false))?;
    // SAFETY: pcap_open_dead only allocates; a null result is checked.
    let dead = unsafe { (lib.open_dead)(dlt(link), 262_144) };
    if dead.is_null() {
        return Err(err("pcap_open_dead failed".into(), false));
    }
    let mut prog = BpfProgram { len: 0, insns: std::ptr::null_mut() };
    // PCAP_NETMASK_UNKNOWN: `ip broadcast` is refused, as tcpdump -r does.
    const NETMASK_UNKNOWN: u32 = 0xffff_ffff;
    // SAFETY: `dead` is a live handle, `prog` and `text` outlive the call; on failure the
    // message is copied out before the handle is closed.
    unsafe {
        let rc = (lib.compile)(dead, &mut prog, text.as_ptr(), 1, NETMASK_UNKNOWN);
        let r = if rc == 0 {
            Ok(Program { prog, lib })
        } else {
            let msg = (lib.geterr)(dead);
            let msg = if msg.is_null() {
                "pcap_compile failed".to_string()
            } else {
                CStr::from_ptr(msg).to_string_lossy().into_owned()
            };
            Err(err(msg, false))
        };
        (lib.close)(dead);
        r
    }
}

impl Filter {
    /// Compiles `expr` for `link` (the first link type expected), so a bad expression, or a
    /// machine without libpcap, is reported before any packet is read.
    pub fn new(expr: &str, link: LinkType) -> Result<Self, FilterError> {
        let program = compile(expr, link)?;
        Ok(Self { expr: expr.to_string(), programs: vec![(link, program)] })
    }

    /// The expression.
    pub fn expr(&self) -> &str {
        &self.expr
    }

    fn program(&mut self, link: LinkType) -> Result<&Program, FilterError> {
        let at = match self.programs.iter().position(|(l, _)| *l == link) {
            Some(at) => at,
            None => {
                let program = compile(&self.expr, link)?;
                self.programs.push((link, program));
                self.programs.len() - 1
            }
        };
        Ok(&self.programs[at].1)
    }

    /// Whether the frame passes. A link type not met before is compiled now; if libpcap
    /// refuses the expression for it, that is the error.
    #[inline]
    pub fn matches(&mut self, link: LinkType, frame: &[u8]) -> Result<bool, FilterError> {
        Ok(self.program(link)?.filter(frame))
    }

    /// The program for `link` as (code, jt, jf, k) instructions, with every non-zero return
    /// value replaced by `snaplen`, ready for `SO_ATTACH_FILTER`.
    pub fn kernel_program(
        &mut self,
        link: LinkType,
        snaplen: u32,
    ) -> Result<Vec<(u16, u8, u8, u32)>, FilterError> {
        let program = self.program(link)?;
        Ok(program
            .instructions()
            .iter()
            .map(|i| {
                // BPF_RET | BPF_K with a non-zero length: accept, cut to the snap length.
                let k = if i.code == 0x06 && i.k != 0 { snaplen } else { i.k };
                (i.code, i.jt, i.jf, k)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the tests that need libpcap can run: they print one line and pass when it cannot
    /// be loaded, unless `RAMPART_REQUIRE_LIBPCAP` is set (as CI does), where that fails.
    fn have_libpcap(test: &str) -> bool {
        if available() {
            return true;
        }
        if std::env::var_os("RAMPART_REQUIRE_LIBPCAP").is_some() {
            panic!("{test}: libpcap cannot be loaded and RAMPART_REQUIRE_LIBPCAP is set");
        }
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "skipped {test}: libpcap cannot be loaded");
        false
    }

    fn eth_tcp(dport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 20];
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        f[14] = 0x45;
        f[16..18].copy_from_slice(&40u16.to_be_bytes());
        f[23] = 6;
        f[26..30].copy_from_slice(&[10, 0, 0, 1]);
        f[30..34].copy_from_slice(&[10, 0, 0, 2]);
        f[34..36].copy_from_slice(&40000u16.to_be_bytes());
        f[36..38].copy_from_slice(&dport.to_be_bytes());
        f[46] = 0x50;
        f
    }

    #[test]
    fn libpcap_decides() {
        if !have_libpcap("libpcap_decides") {
            return;
        }
        let mut f = Filter::new("tcp dst port 80 and host 10.0.0.1", LinkType::Ethernet).unwrap();
        assert!(f.matches(LinkType::Ethernet, &eth_tcp(80)).unwrap());
        assert!(!f.matches(LinkType::Ethernet, &eth_tcp(81)).unwrap());
        // The same expression over raw IP: the frame without its Ethernet header.
        assert!(f.matches(LinkType::Raw, &eth_tcp(80)[14..]).unwrap());
        assert!(!f.matches(LinkType::Raw, &eth_tcp(81)[14..]).unwrap());
        // A frame cut short fails the loads past its end: rejected, never read beyond.
        assert!(!f.matches(LinkType::Ethernet, &eth_tcp(80)[..20]).unwrap());
    }

    #[test]
    fn bad_expressions_carry_libpcap_s_message() {
        if !have_libpcap("bad_expressions_carry_libpcap_s_message") {
            return;
        }
        let e = Filter::new("tcp and port", LinkType::Ethernet).err().unwrap();
        assert!(e.to_string().contains("syntax error"), "{e}");
        assert!(!e.missing_library);
        let e = Filter::new("ether host 1:2:3:4:5:6", LinkType::Raw).err().unwrap();
        assert!(!e.message.is_empty());
        let e = Filter::new("tcp\0", LinkType::Raw).err().unwrap();
        assert!(e.message.contains("NUL"), "{e}");
    }

    #[test]
    fn kernel_program_returns_the_snap_length() {
        if !have_libpcap("kernel_program_returns_the_snap_length") {
            return;
        }
        let mut f = Filter::new("tcp", LinkType::Ethernet).unwrap();
        let prog = f.kernel_program(LinkType::Ethernet, 144).unwrap();
        assert!(prog.len() > 2);
        assert!(prog.iter().any(|&(c, _, _, k)| c == 0x06 && k == 144));
        assert!(prog.iter().all(|&(c, _, _, k)| c != 0x06 || k == 0 || k == 144));
        // The first instruction of an Ethernet `tcp` program loads the ethertype (ldh [12]).
        assert_eq!(prog[0], (0x28, 0, 0, 12));
    }
}
