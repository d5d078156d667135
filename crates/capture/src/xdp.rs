//! An inline bridge over AF_XDP: two interfaces, every frame received on one either sent out
//! of the other or dropped, moved by descriptor through one shared UMEM.
//!
//! [`XdpPair::open`] maps one UMEM (`frames` frames of `frame_size` bytes) and binds an
//! AF_XDP socket to queue [`XdpConfig::queue`] of each interface, the second sharing the
//! first's UMEM (`XDP_SHARED_UMEM`); each (interface, queue) has its own fill and completion
//! rings. libxdp attaches its default redirect program (`xsk_def_xdp_prog`) to both
//! interfaces, which hands every frame arriving on that queue to the socket.
//! [`XdpPair::exchange`] takes a batch from both RX rings, shows it to the caller as
//! [`Frame`]s that borrow the UMEM, and for each frame the caller accepts writes the same
//! descriptor to the other socket's TX ring: the frame is never copied in user space. Dropped
//! frames go back to a fill ring, sent ones come back through the completion rings.
//!
//! # Only one queue is bridged
//! The program redirects frames of the bound queue only. Frames the NIC steers to another
//! queue are passed to the host's network stack and never reach the other interface, so on a
//! multi-queue NIC the bridge sees only part of the traffic. [`XdpPair::notes`] says how many
//! RX queues each interface has; give the interface one (`ethtool -L IFACE combined 1`) or
//! steer all traffic to the bound queue. What the host itself sends out of the interfaces is
//! not seen either (XDP runs on receive only).
//!
//! # Modes
//! Native (driver) XDP by default, generic XDP with [`XdpConfig::skb_mode`]. Zero copy is
//! used where the driver offers it ([`XdpConfig::zero_copy`] `None`), otherwise copy mode,
//! in which the kernel copies each frame into the UMEM on receive and out of it on transmit
//! (veth, for one, has native XDP but no AF_XDP zero copy). A frame longer than the frame
//! size less the kernel's 256-byte XDP headroom (1792 bytes with 2048-byte frames) is
//! dropped by the kernel and counted in [`XdpKernelStats::rx_dropped`]; turn off GRO/LRO on
//! the interfaces so frames arrive as they were on the wire. A frame is forwarded with the
//! bytes XDP saw: a sender on the same host whose checksums are left to offload (a veth peer
//! with `tx` checksumming on) hands over frames with unfinished checksums, which the far side
//! then drops, so turn checksum offload off there (`ethtool -K IFACE tx off`).
//!
//! # Buffers
//! Each interface's fill ring holds up to half the frames; the other half serve frames being
//! decided and sent, and a few are kept back for [`XdpPair::inject`]. A fill ring is kept only
//! as deep as the traffic needs: at most [`FILL_START`] frames at first, twice as many each
//! time the kernel took three quarters of them between two refills, up to the whole ring.
//! Idle frames wait in a last-in, first-out list, so a link that does not need the depth
//! cycles a few thousand frames that stay in the cache; a full ring of a large UMEM would
//! cycle all of them, and in copy mode every copy into and out of a frame, and the kernel's
//! frame bookkeeping, would miss the cache. When the fill ring runs
//! dry (the bridge fell behind), the kernel drops what arrives and counts it in
//! [`XdpKernelStats::rx_fill_ring_empty_descs`] (in copy mode also in `rx_dropped`). Sent
//! frames come back when the device has finished with them. In copy mode a wake-up of the
//! kernel sends the whole TX ring where the kernel lets the budget be raised
//! (`XDP_MAX_TX_SKB_BUDGET`, Linux 6.17), else 32 frames per call, and the bridge calls again
//! while frames are left.
//!
//! # libxdp, loaded at run time
//! rampart does not link libxdp: the first [`XdpPair::open`] loads it (`libxdp.so.1` as
//! Debian's `libxdp1` installs it; `RAMPART_LIBXDP` names another file) and uses its socket
//! and UMEM set-up, which also loads and attaches the redirect program. The rings' fast path
//! (the `static inline` accessors of `xdp/xsk.h`) is this module's own code. What libxdp and
//! libbpf print while the pair opens is collected into [`XdpPair::notes`] (or into the
//! error) instead of going to standard error (libbpf's informational messages are left out);
//! what they print while it closes goes to standard error, except libxdp's notice that no BPF
//! file system is mounted (it then keeps its lock in `/run/xdp`, which works).
//!
//! A queue that another AF_XDP socket holds is tried again for up to two seconds before
//! [`XdpPair::open`] gives up: the kernel frees a closed socket's hold on its queue a moment
//! after the close, so a bridge reopened at once would otherwise fail.
//!
//! Dropping the pair deletes the sockets, which detaches the program (libxdp counts the
//! sockets that use it), and unmaps the UMEM. A process without the privileges to detach
//! it by then, or killed before, leaves the program attached, passing everything to the
//! host's stack, unless a process that kept them calls [`release`] with
//! [`XdpPair::programs`] (as `rampart run` does when it drops its privileges); otherwise
//! `xdp-loader unload IFACE --all` (from xdp-tools) or `ip link set dev IFACE xdp off`
//! removes it.
//!
//! The `unsafe` here: the foreign calls into libxdp, the ring words shared with the kernel
//! (read and written with the acquire/release ordering the kernel's `xsk_queue.h` pairs
//! with), and the UMEM frames, each of which is touched only while it is ours (between
//! coming off an RX or completion ring and going onto a fill or TX ring).
#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use rampart_wire::LinkType;

use crate::live::LiveError;
use crate::{Frame, Timestamp};

/// Options of an [`XdpPair`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XdpConfig {
    /// The queue bound on both interfaces.
    pub queue: u32,
    /// `Some(true)`: zero copy or fail; `Some(false)`: copy mode; `None`: zero copy where the
    /// driver offers it, else copy.
    pub zero_copy: Option<bool>,
    /// Frames in the UMEM shared by both interfaces: a power of two, 64 to 1 Mi. Each
    /// interface's fill, completion, RX and TX rings get half as many entries.
    pub frames: u32,
    /// Bytes per frame: 2048 or 4096.
    pub frame_size: u32,
    /// Attach the program as generic XDP (after the kernel has built its socket buffer)
    /// instead of in the driver.
    pub skb_mode: bool,
    /// The `interface` number the first interface's frames carry (the second's is the next
    /// one), so that several pairs feeding one data plane number their ports apart;
    /// [`XdpPair::inject`] takes the same numbers.
    pub first_interface: u32,
}

impl Default for XdpConfig {
    fn default() -> Self {
        Self {
            queue: 0,
            zero_copy: None,
            frames: 4096,
            frame_size: 2048,
            skb_mode: false,
            first_interface: 0,
        }
    }
}

/// What the kernel counted on one AF_XDP socket (`XDP_STATISTICS`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XdpKernelStats {
    /// Frames dropped on receive for reasons other than a bad descriptor (no free frame in
    /// the fill ring in copy mode, a frame longer than a UMEM frame).
    pub rx_dropped: u64,
    /// Frames dropped because the RX ring was full.
    pub rx_ring_full: u64,
    /// Times the kernel found the fill ring empty.
    pub rx_fill_ring_empty_descs: u64,
    /// TX descriptors the kernel refused as invalid.
    pub tx_invalid_descs: u64,
}

/// The counters of one interface of an [`XdpPair`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XdpPortStats {
    /// Frames received on this interface.
    pub received: u64,
    /// Frames received here that the caller dropped (judged `false`).
    pub dropped: u64,
    /// Frames received here that the caller accepted but that were dropped because the
    /// other interface's TX ring was full.
    pub tx_full: u64,
    /// Frames put on this interface's TX ring: forwarded from the other interface, plus
    /// [`XdpPortStats::injected`].
    pub sent: u64,
    /// Of [`XdpPortStats::sent`], the frames built by the caller ([`XdpPair::inject`]).
    pub injected: u64,
    /// Sent frames whose buffer the kernel has given back (completion ring).
    pub completed: u64,
    /// Transmit wake-ups (`sendto`) on this interface's socket.
    pub kicks: u64,
    /// Wake-ups to which the kernel answered that the device dropped a frame (`EBUSY`).
    pub tx_busy: u64,
    /// How many frames the fill ring is kept at now (module docs, "Buffers").
    pub fill_depth: u32,
    /// The kernel's counters for this interface's socket.
    pub kernel: XdpKernelStats,
}

/// The counters of an [`XdpPair`]: per interface (0 for the first, 1 for the second), and the
/// mode in effect. For each interface `i` and the other `o`, `received[i] = dropped[i] +
/// tx_full[i] + sent[o] - injected[o]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XdpStats {
    /// The two interfaces.
    pub ports: [XdpPortStats; 2],
    /// Whether the sockets run in zero-copy mode.
    pub zero_copy: bool,
}

// ---------------------------------------------------------------------------------------------
// The rings.

/// One ring as `xdp/xsk.h` describes it (`DEFINE_XSK_RING`): libxdp fills it in when it maps
/// the ring and keeps a pointer to it until the socket is deleted, so the layout is libxdp's.
///
/// A producer ring (fill, TX) keeps `cached_cons` one ring size ahead of the consumer it last
/// read, so its free entries are `cached_cons - cached_prod`; a consumer ring (RX,
/// completion) keeps `cached_prod` as the producer it last read. All indices run freely and
/// wrap at 2^32; `mask` picks the slot.
#[repr(C)]
struct XskRing {
    cached_prod: u32,
    cached_cons: u32,
    mask: u32,
    size: u32,
    producer: *mut u32,
    consumer: *mut u32,
    ring: *mut c_void,
    flags: *mut u32,
}

const XDP_RING_NEED_WAKEUP: u32 = 1;

impl XskRing {
    const fn empty() -> Self {
        Self {
            cached_prod: 0,
            cached_cons: 0,
            mask: 0,
            size: 0,
            producer: std::ptr::null_mut(),
            consumer: std::ptr::null_mut(),
            ring: std::ptr::null_mut(),
            flags: std::ptr::null_mut(),
        }
    }

    fn word(p: *mut u32) -> &'static AtomicU32 {
        // SAFETY: `p` is a producer, consumer or flags word of a ring mapped for the life of
        // the socket (or, in the unit tests, of the test's buffer), 4-aligned, and shared
        // with the kernel only through atomic accesses.
        unsafe { AtomicU32::from_ptr(p) }
    }

    /// Producer side: free entries, reading the kernel's consumer again only when fewer
    /// than `nb` are known to be free.
    fn prod_free(&mut self, nb: u32) -> u32 {
        let free = self.cached_cons.wrapping_sub(self.cached_prod);
        if free >= nb {
            return free;
        }
        // Acquire: the kernel is done with the entries it has consumed.
        self.cached_cons =
            Self::word(self.consumer).load(Ordering::Acquire).wrapping_add(self.size);
        self.cached_cons.wrapping_sub(self.cached_prod)
    }

    /// Producer side: reserves `nb` entries (all or none), giving the first index.
    fn reserve(&mut self, nb: u32) -> Option<u32> {
        if self.prod_free(nb) < nb {
            return None;
        }
        let idx = self.cached_prod;
        self.cached_prod = self.cached_prod.wrapping_add(nb);
        Some(idx)
    }

    /// Producer side: hands `nb` written entries to the kernel.
    fn submit(&mut self, nb: u32) {
        let p = Self::word(self.producer);
        // Release: the entries are written before the kernel can see the new producer. Only
        // this side writes the producer word, so the relaxed read is its last value.
        p.store(p.load(Ordering::Relaxed).wrapping_add(nb), Ordering::Release);
    }

    /// Producer side: entries handed to the kernel and not yet consumed by it.
    fn prod_outstanding(&self) -> u32 {
        let prod = Self::word(self.producer).load(Ordering::Relaxed);
        prod.wrapping_sub(Self::word(self.consumer).load(Ordering::Acquire))
    }

    /// Whether the kernel asked to be woken up to process this ring.
    fn needs_wakeup(&self) -> bool {
        Self::word(self.flags).load(Ordering::Relaxed) & XDP_RING_NEED_WAKEUP != 0
    }

    /// Consumer side: up to `nb` entries ready, reading the kernel's producer again only
    /// when none is known to be ready.
    fn cons_avail(&mut self, nb: u32) -> u32 {
        let mut entries = self.cached_prod.wrapping_sub(self.cached_cons);
        if entries == 0 {
            // Acquire: the entries are written before the producer that covers them.
            self.cached_prod = Self::word(self.producer).load(Ordering::Acquire);
            entries = self.cached_prod.wrapping_sub(self.cached_cons);
        }
        entries.min(nb)
    }

    /// Consumer side: takes up to `nb` ready entries, giving how many and the first index.
    fn peek(&mut self, nb: u32) -> (u32, u32) {
        let n = self.cons_avail(nb);
        let idx = self.cached_cons;
        self.cached_cons = self.cached_cons.wrapping_add(n);
        (n, idx)
    }

    /// Consumer side: gives `nb` read entries back to the kernel.
    fn release(&mut self, nb: u32) {
        let c = Self::word(self.consumer);
        // Release: the entries are read before the kernel may overwrite them.
        c.store(c.load(Ordering::Relaxed).wrapping_add(nb), Ordering::Release);
    }

    /// Slot `idx` of a fill or completion ring (an address in the UMEM).
    fn addr(&self, idx: u32) -> *mut u64 {
        // SAFETY: the ring holds `size` u64 slots and `idx & mask` is below `size`.
        unsafe { self.ring.cast::<u64>().add((idx & self.mask) as usize) }
    }

    /// Slot `idx` of an RX or TX ring.
    fn desc(&self, idx: u32) -> *mut XdpDesc {
        // SAFETY: the ring holds `size` descriptors and `idx & mask` is below `size`.
        unsafe { self.ring.cast::<XdpDesc>().add((idx & self.mask) as usize) }
    }
}

/// `struct xdp_desc` of `linux/if_xdp.h`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct XdpDesc {
    addr: u64,
    len: u32,
    options: u32,
}

/// The four rings of one interface, at a fixed address libxdp keeps pointers into.
#[repr(C)]
struct Rings {
    fill: XskRing,
    comp: XskRing,
    rx: XskRing,
    tx: XskRing,
}

// ---------------------------------------------------------------------------------------------
// libxdp.

/// `struct xsk_umem_config` of `xdp/xsk.h`.
#[repr(C)]
struct UmemConfig {
    fill_size: u32,
    comp_size: u32,
    frame_size: u32,
    frame_headroom: u32,
    flags: u32,
}

/// `struct xsk_socket_config` of `xdp/xsk.h` (libxdp 1.x).
#[repr(C)]
struct SocketConfig {
    rx_size: u32,
    tx_size: u32,
    libxdp_flags: u32,
    xdp_flags: u32,
    bind_flags: u16,
}

type UmemCreate = unsafe extern "C" fn(
    *mut *mut c_void,
    *mut c_void,
    u64,
    *mut XskRing,
    *mut XskRing,
    *const UmemConfig,
) -> c_int;
type SocketCreateShared = unsafe extern "C" fn(
    *mut *mut c_void,
    *const c_char,
    u32,
    *mut c_void,
    *mut XskRing,
    *mut XskRing,
    *mut XskRing,
    *mut XskRing,
    *const SocketConfig,
) -> c_int;
type SocketDelete = unsafe extern "C" fn(*mut c_void);
type UmemDelete = unsafe extern "C" fn(*mut c_void) -> c_int;
type SocketFd = unsafe extern "C" fn(*const c_void) -> c_int;
type MultiprogFromIfindex = unsafe extern "C" fn(c_int) -> *mut c_void;
type MultiprogClose = unsafe extern "C" fn(*mut c_void);
type MultiprogMain = unsafe extern "C" fn(*const c_void) -> *mut c_void;
type MultiprogNext = unsafe extern "C" fn(*const c_void, *const c_void) -> *mut c_void;
type ProgramName = unsafe extern "C" fn(*const c_void) -> *const c_char;
type ProgramId = unsafe extern "C" fn(*const c_void) -> u32;
type ProgramFromId = unsafe extern "C" fn(u32) -> *mut c_void;
type ProgramIsAttached = unsafe extern "C" fn(*const c_void, c_int) -> c_int;
type ProgramDetach = unsafe extern "C" fn(*mut c_void, c_int, c_int, u32) -> c_int;
type ProgramClose = unsafe extern "C" fn(*mut c_void);
type GetError = unsafe extern "C" fn(*const c_void) -> libc::c_long;
/// libxdp's and libbpf's print callback: level, format, `va_list` (passed as a pointer on the
/// architectures the messages are collected on).
type PrintFn = unsafe extern "C" fn(c_int, *const c_char, *mut c_void) -> c_int;
type SetPrint = unsafe extern "C" fn(Option<PrintFn>) -> Option<PrintFn>;

/// The functions rampart calls, resolved once from the loaded library.
struct Libxdp {
    umem_create: UmemCreate,
    socket_create_shared: SocketCreateShared,
    socket_delete: SocketDelete,
    umem_delete: UmemDelete,
    socket_fd: SocketFd,
    set_print: SetPrint,
    mp_from_ifindex: MultiprogFromIfindex,
    mp_close: MultiprogClose,
    mp_main: MultiprogMain,
    mp_next: MultiprogNext,
    prog_name: ProgramName,
    prog_id: ProgramId,
    prog_from_id: ProgramFromId,
    prog_is_attached: ProgramIsAttached,
    prog_detach: ProgramDetach,
    prog_close: ProgramClose,
    get_error: GetError,
    /// libbpf's `libbpf_set_print` (libbpf is loaded with libxdp).
    bpf_set_print: Option<SetPrint>,
    /// Kept loaded for the life of the process (the function pointers point into them).
    _libs: Vec<libloading::Library>,
}

/// The environment variable naming the libxdp file to load instead of `libxdp.so.1`.
pub const LIBRARY_VAR: &str = "RAMPART_LIBXDP";

fn load() -> Result<Libxdp, String> {
    let name = match std::env::var(LIBRARY_VAR) {
        Ok(path) if !path.is_empty() => path,
        _ => "libxdp.so.1".to_string(),
    };
    // SAFETY: loading libxdp (and the libbpf it needs) runs their initialisers, which have
    // no preconditions.
    let lib = unsafe { libloading::Library::new(&name) }.map_err(|e| e.to_string())?;
    // SAFETY: each symbol is declared with the signature of libxdp's public headers
    // (`xdp/xsk.h`, `xdp/libxdp.h`) and libbpf's (`bpf/libbpf.h`), and the pointers are used
    // only while the libraries (moved into the result) stay loaded.
    unsafe {
        let umem_create =
            *lib.get::<UmemCreate>(b"xsk_umem__create\0").map_err(|e| e.to_string())?;
        let socket_create_shared = *lib
            .get::<SocketCreateShared>(b"xsk_socket__create_shared\0")
            .map_err(|e| e.to_string())?;
        let socket_delete =
            *lib.get::<SocketDelete>(b"xsk_socket__delete\0").map_err(|e| e.to_string())?;
        let umem_delete =
            *lib.get::<UmemDelete>(b"xsk_umem__delete\0").map_err(|e| e.to_string())?;
        let socket_fd = *lib.get::<SocketFd>(b"xsk_socket__fd\0").map_err(|e| e.to_string())?;
        let set_print = *lib.get::<SetPrint>(b"libxdp_set_print\0").map_err(|e| e.to_string())?;
        macro_rules! sym {
            ($t:ty, $name:literal) => {
                *lib.get::<$t>(concat!($name, "\0").as_bytes()).map_err(|e| e.to_string())?
            };
        }
        let mp_from_ifindex = sym!(MultiprogFromIfindex, "xdp_multiprog__get_from_ifindex");
        let mp_close = sym!(MultiprogClose, "xdp_multiprog__close");
        let mp_main = sym!(MultiprogMain, "xdp_multiprog__main_prog");
        let mp_next = sym!(MultiprogNext, "xdp_multiprog__next_prog");
        let prog_name = sym!(ProgramName, "xdp_program__name");
        let prog_id = sym!(ProgramId, "xdp_program__id");
        let prog_from_id = sym!(ProgramFromId, "xdp_program__from_id");
        let prog_is_attached = sym!(ProgramIsAttached, "xdp_program__is_attached");
        let prog_detach = sym!(ProgramDetach, "xdp_program__detach");
        let prog_close = sym!(ProgramClose, "xdp_program__close");
        let get_error = sym!(GetError, "libxdp_get_error");
        let mut libs = vec![lib];
        let mut bpf_set_print = None;
        if let Ok(bpf) = libloading::Library::new("libbpf.so.1")
            && let Ok(f) = bpf.get::<SetPrint>(b"libbpf_set_print\0")
        {
            bpf_set_print = Some(*f);
            libs.push(bpf);
        }
        Ok(Libxdp {
            umem_create,
            socket_create_shared,
            socket_delete,
            umem_delete,
            socket_fd,
            set_print,
            mp_from_ifindex,
            mp_close,
            mp_main,
            mp_next,
            prog_name,
            prog_id,
            prog_from_id,
            prog_is_attached,
            prog_detach,
            prog_close,
            get_error,
            bpf_set_print,
            _libs: libs,
        })
    }
}

fn libxdp() -> Result<&'static Libxdp, LiveError> {
    static LIB: OnceLock<Result<Libxdp, String>> = OnceLock::new();
    LIB.get_or_init(load).as_ref().map_err(|e| LiveError::NoLibxdp(e.clone()))
}

/// The name of libxdp's AF_XDP redirect program.
const XSK_PROGRAM: &str = "xsk_def_prog";

/// The id of libxdp's AF_XDP redirect program on interface `ifindex` (attached alone, or
/// under libxdp's dispatcher), if there is one.
fn xsk_program(lib: &Libxdp, ifindex: u32) -> Option<u32> {
    // SAFETY: libxdp's query functions, each given what the one before returned (checked
    // with libxdp_get_error, which takes any pointer); the programs returned by the
    // iteration belong to `mp` and are not used after it is closed.
    unsafe {
        let mp = (lib.mp_from_ifindex)(ifindex as c_int);
        if mp.is_null() || (lib.get_error)(mp) != 0 {
            return None;
        }
        let named = |p: *mut c_void| {
            if p.is_null() || (lib.get_error)(p) != 0 {
                return None;
            }
            let name = (lib.prog_name)(p);
            (!name.is_null() && CStr::from_ptr(name).to_bytes() == XSK_PROGRAM.as_bytes())
                .then(|| (lib.prog_id)(p))
        };
        let mut found = named((lib.mp_main)(mp));
        let mut p = (lib.mp_next)(std::ptr::null(), mp);
        while found.is_none() && !p.is_null() && (lib.get_error)(p) == 0 {
            found = named(p);
            p = (lib.mp_next)(p, mp);
        }
        (lib.mp_close)(mp);
        found
    }
}

/// Detaches XDP program `id` from interface `ifindex` (of this network namespace) if it is
/// still attached there as libxdp's AF_XDP redirect program; `Ok(false)` when it is not
/// (another program is never touched). This is what a privileged helper does for an
/// [`XdpPair`] whose process gave up the privileges to detach its own program
/// ([`XdpPair::programs`], [`XdpPair::released_elsewhere`]).
pub fn release(ifindex: u32, id: u32) -> Result<bool, String> {
    let lib = libxdp().map_err(|e| e.to_string())?;
    let quiet = Quiet::new(lib);
    if xsk_program(lib, ifindex) != Some(id) {
        return Ok(false);
    }
    // SAFETY: libxdp's program functions on a program it returned (checked with
    // libxdp_get_error), closed once.
    let r = unsafe {
        let prog = (lib.prog_from_id)(id);
        match (lib.get_error)(prog) {
            0 if !prog.is_null() => {}
            // Gone already (the kernel frees a program nothing holds).
            0 => return Ok(false),
            e if e == -libc::c_long::from(libc::ENOENT) => return Ok(false),
            e => return Err(io::Error::from_raw_os_error(-e as i32).to_string()),
        }
        let mode = (lib.prog_is_attached)(prog, ifindex as c_int);
        let r = if mode == 0 {
            Ok(false)
        } else {
            match (lib.prog_detach)(prog, ifindex as c_int, mode, 0) {
                0 => Ok(true),
                rc => Err(io::Error::from_raw_os_error(-rc).to_string()),
            }
        };
        (lib.prog_close)(prog);
        r
    };
    let said = quiet.take();
    r.map_err(|e| if said.is_empty() { e } else { format!("{e} ({})", said.join("; ")) })
}

/// Whether libxdp can be loaded here (so an [`XdpPair`] can open).
pub fn available() -> bool {
    libxdp().is_ok()
}

/// Serialises the libxdp calls that set up and tear down (libxdp's print callback is global).
static SETUP: Mutex<()> = Mutex::new(());
/// What libxdp and libbpf printed while the print callback was installed (each message
/// starts with its library's name, as they print it).
static MESSAGES: Mutex<Vec<String>> = Mutex::new(Vec::new());

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
unsafe extern "C" {
    fn vsnprintf(s: *mut c_char, n: usize, format: *const c_char, ap: *mut c_void) -> c_int;
}

/// Collects one message from libxdp: warnings and information (debug messages are left out).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
unsafe extern "C" fn collect_xdp(level: c_int, format: *const c_char, ap: *mut c_void) -> c_int {
    // LIBXDP_WARN 0, LIBXDP_INFO 1, LIBXDP_DEBUG 2.
    if level >= 2 {
        return 0;
    }
    // SAFETY: the arguments are libxdp's, passed on unchanged.
    unsafe { collect(format, ap) }
}

/// Collects one message from libbpf: warnings only (libbpf's information is about the
/// sections of libxdp's object file it skips).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
unsafe extern "C" fn collect_bpf(level: c_int, format: *const c_char, ap: *mut c_void) -> c_int {
    // LIBBPF_WARN 0, LIBBPF_INFO 1, LIBBPF_DEBUG 2.
    if level >= 1 {
        return 0;
    }
    // SAFETY: the arguments are libbpf's, passed on unchanged.
    unsafe { collect(format, ap) }
}

/// Formats a message and keeps it in [`MESSAGES`] (once).
///
/// # Safety
/// `format` and `ap` are a printf format and its `va_list`, as the libraries pass them.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
unsafe fn collect(format: *const c_char, ap: *mut c_void) -> c_int {
    if format.is_null() {
        return 0;
    }
    let mut buf = [0 as c_char; 512];
    // SAFETY: on x86-64 a `va_list` is an array and on AArch64 a struct passed by reference,
    // so in both it arrives here, and goes on to vsnprintf, as a pointer; `buf` has room for
    // `buf.len()` bytes and vsnprintf always ends it with a NUL.
    let n = unsafe { vsnprintf(buf.as_mut_ptr(), buf.len(), format, ap) };
    if n > 0 {
        // SAFETY: vsnprintf wrote a NUL-terminated string into `buf`.
        let text = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy();
        let text = text.trim();
        let mut m = MESSAGES.lock().unwrap_or_else(|e| e.into_inner());
        if !text.is_empty() && !m.iter().any(|x| x == text) {
            m.push(text.to_string());
        }
    }
    n
}

/// While alive: libxdp's and libbpf's messages go into [`MESSAGES`] (on the architectures
/// where a `va_list` can be handed on), and the set-up lock is held.
struct Quiet<'a> {
    lib: &'a Libxdp,
    old: Option<(Option<PrintFn>, Option<PrintFn>)>,
    _lock: std::sync::MutexGuard<'static, ()>,
}

impl<'a> Quiet<'a> {
    fn new(lib: &'a Libxdp) -> Self {
        let lock = SETUP.lock().unwrap_or_else(|e| e.into_inner());
        MESSAGES.lock().unwrap_or_else(|e| e.into_inner()).clear();
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        // SAFETY: the callbacks have the libraries' print signature; the old ones are put
        // back when this guard drops, under the same lock.
        let old = unsafe {
            let x = (lib.set_print)(Some(collect_xdp as PrintFn));
            let b = lib.bpf_set_print.and_then(|f| f(Some(collect_bpf as PrintFn)));
            Some((x, b))
        };
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        let old = None;
        Self { lib, old, _lock: lock }
    }

    /// The messages collected so far (taken).
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *MESSAGES.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Drop for Quiet<'_> {
    fn drop(&mut self) {
        if let Some((x, b)) = self.old.take() {
            // SAFETY: puts back the callbacks the libraries had (the same signature).
            unsafe {
                (self.lib.set_print)(x);
                if let Some(f) = self.lib.bpf_set_print {
                    f(b);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The pair.

const SOL_XDP: c_int = 283;
const XDP_STATISTICS: c_int = 7;
const XDP_OPTIONS: c_int = 8;
/// Since Linux 6.17: descriptors one `sendto` sends in copy mode (32 before, and by default).
const XDP_MAX_TX_SKB_BUDGET: c_int = 9;
const XDP_OPTIONS_ZEROCOPY: u32 = 1;
const XDP_COPY: u16 = 1 << 1;
const XDP_ZEROCOPY: u16 = 1 << 2;
const XDP_USE_NEED_WAKEUP: u16 = 1 << 3;
const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;
/// Descriptors one copy-mode `sendto` sends on kernels without `XDP_MAX_TX_SKB_BUDGET`.
const TX_BATCH: u32 = 32;
/// The most frames a fill ring is first given (what the default UMEM gives each ring); the
/// depth doubles when traffic needs it (module docs, "Buffers").
pub const FILL_START: u32 = 2048;
/// How long [`XdpPair::open`] keeps trying a queue that is busy.
const BUSY_WAIT: Duration = Duration::from_secs(2);

/// One interface: its socket, rings and counters.
struct Port {
    name: String,
    xsk: *mut c_void,
    fd: RawFd,
    /// Boxed so libxdp's pointers into it stay valid; freed after the socket is deleted.
    rings: *mut Rings,
    /// One `sendto` drains the TX ring (copy mode with a budget as large as the ring, or
    /// zero copy, where the driver takes the ring itself).
    one_kick: bool,
    /// How many frames the fill ring is kept at (see [`fill_room`]); 0 until it is mapped.
    fill_depth: u32,
    /// The last refill brought the fill ring to `fill_depth`.
    fill_full: bool,
    stats: XdpPortStats,
}

impl Port {
    fn new(name: &str) -> Self {
        let rings = Box::into_raw(Box::new(Rings {
            fill: XskRing::empty(),
            comp: XskRing::empty(),
            rx: XskRing::empty(),
            tx: XskRing::empty(),
        }));
        Self {
            name: name.to_string(),
            xsk: std::ptr::null_mut(),
            fd: -1,
            rings,
            one_kick: false,
            fill_depth: 0,
            fill_full: false,
            stats: XdpPortStats::default(),
        }
    }

    fn rings(&mut self) -> &mut Rings {
        // SAFETY: `rings` came from Box::into_raw and is freed only in XdpPair's drop;
        // libxdp reads it only inside the set-up and delete calls, never while this
        // borrow lives.
        unsafe { &mut *self.rings }
    }

    fn kernel_stats(&self) -> XdpKernelStats {
        let mut s = [0u64; 6];
        let mut len = std::mem::size_of_val(&s) as libc::socklen_t;
        // SAFETY: `s` has room for `len` bytes (struct xdp_statistics: six u64), and the
        // kernel writes at most that many.
        let rc = unsafe {
            libc::getsockopt(self.fd, SOL_XDP, XDP_STATISTICS, s.as_mut_ptr().cast(), &mut len)
        };
        if rc != 0 {
            return XdpKernelStats::default();
        }
        // rx_dropped, rx_invalid_descs, tx_invalid_descs, rx_ring_full,
        // rx_fill_ring_empty_descs, tx_ring_empty_descs (the last three since Linux 5.9).
        XdpKernelStats {
            rx_dropped: s[0],
            tx_invalid_descs: s[2],
            rx_ring_full: s[3],
            rx_fill_ring_empty_descs: s[4],
        }
    }

    /// Wakes the kernel to send what is on the TX ring (when it asked to be woken), again
    /// while a copy-mode `sendto` leaves descriptors behind. Transient answers are not
    /// errors.
    fn kick(&mut self) -> io::Result<()> {
        let rounds = if self.one_kick { 1 } else { self.rings().tx.size / TX_BATCH + 1 };
        for _ in 0..rounds {
            if !self.rings().tx.needs_wakeup() {
                return Ok(());
            }
            self.stats.kicks += 1;
            // SAFETY: a zero-length sendto on our socket; no buffer is passed.
            let rc = unsafe {
                libc::sendto(self.fd, std::ptr::null(), 0, libc::MSG_DONTWAIT, std::ptr::null(), 0)
            };
            if rc >= 0 {
                if self.one_kick || self.rings().tx.prod_outstanding() == 0 {
                    return Ok(());
                }
                continue;
            }
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EAGAIN) if !self.one_kick && self.rings().tx.prod_outstanding() > 0 => {}
                Some(libc::EBUSY) => {
                    self.stats.tx_busy += 1;
                    return Ok(());
                }
                Some(libc::EAGAIN | libc::ENOBUFS | libc::ENETDOWN | libc::EINTR) => return Ok(()),
                _ => {
                    return Err(io::Error::new(
                        err.kind(),
                        format!("sending on '{}' (AF_XDP): {err}", self.name),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// How many frames to add to a fill ring of `size` entries that still holds `held` of the
/// frames given to it (`free` entries are free), keeping it at `depth` frames: `depth` starts
/// at [`FILL_START`] (or the ring's size, if smaller) and doubles, up to `size`, whenever the
/// kernel has left fewer than a quarter of it since the last refill (`filled`: that refill
/// brought the ring to `depth`, so the frames went to the kernel, not missing for want of
/// idle ones), so the ring keeps enough in hand for the gaps between two refills without
/// cycling every frame of the UMEM. The depth is kept once reached.
fn fill_room(depth: &mut u32, size: u32, held: u32, free: u32, filled: bool) -> u32 {
    if *depth == 0 {
        *depth = FILL_START.min(size);
    } else if filled && held < *depth / 4 && *depth < size {
        *depth = (*depth * 2).min(size);
    }
    depth.saturating_sub(held).min(free)
}

/// An AF_XDP bridge between two interfaces: see the [module docs](self).
pub struct XdpPair {
    lib: &'static Libxdp,
    ports: [Port; 2],
    umem: *mut c_void,
    area: *mut u8,
    area_len: usize,
    frame_size: u32,
    /// Frames that are ours and idle (chunk base addresses).
    free: Vec<u64>,
    /// Frames kept out of the fill rings for [`XdpPair::inject`].
    reserve: usize,
    zero_copy: bool,
    notes: Vec<String>,
    /// The batch being decided: port, UMEM address, length.
    batch: Vec<(u32, u64, u32)>,
    verdicts: Vec<bool>,
    /// The port read first in the next batch (alternates, so neither starves the other).
    first: usize,
    /// Still being set up: the set-up lock is held by `open`, so drop must not take it.
    opening: bool,
    /// Each interface's index and the id of the redirect program attached to it.
    programs: [(u32, Option<u32>); 2],
    /// Another process detaches the programs (this one may lack the privileges).
    released_elsewhere: bool,
    /// The `interface` number of the first interface's frames.
    base: u32,
    /// The batch's frames: an allocation kept from batch to batch (empty between them; see
    /// [`crate::recycle`]).
    frames: Vec<Frame<'static>>,
}

// SAFETY: the pair owns its sockets, rings and UMEM outright; nothing in it is tied to the
// thread that opened it, and `&self` methods only read counters and the kernel's statistics.
unsafe impl Send for XdpPair {}

fn xdp_error(iface: &str, what: &str, errno: i32, hint: &str, messages: &[String]) -> LiveError {
    let mut detail = String::new();
    if !hint.is_empty() {
        detail.push_str("; ");
        detail.push_str(hint);
    }
    if !messages.is_empty() {
        detail.push_str(&format!(" ({})", messages.join("; ")));
    }
    LiveError::Xdp {
        iface: iface.to_string(),
        what: what.to_string(),
        err: io::Error::from_raw_os_error(errno),
        detail,
    }
}

/// What an errno from libxdp's socket set-up most likely means, for the message.
fn hint(errno: i32, iface: &str, cfg: &XdpConfig, zero_copy: bool) -> String {
    match errno {
        libc::EOPNOTSUPP if zero_copy => format!(
            "the driver of '{iface}' does not offer AF_XDP zero copy (leave zero copy to the \
             driver's choice, or ask for copy mode)"
        ),
        libc::EOPNOTSUPP if !cfg.skb_mode => {
            format!("the driver of '{iface}' has no native XDP (try generic/skb mode)")
        }
        libc::EPERM | libc::EACCES => {
            "AF_XDP needs CAP_NET_RAW, CAP_NET_ADMIN and CAP_BPF (run as root)".to_string()
        }
        libc::EBUSY | libc::EEXIST => format!(
            "queue {} of '{iface}' is already bound by another AF_XDP socket, or '{iface}' has \
             another XDP program attached (see `ip link show {iface}`)",
            cfg.queue
        ),
        libc::ENOMEM | libc::ENOBUFS => {
            "not enough lockable memory for the UMEM and rings (ulimit -l, or fewer frames)"
                .to_string()
        }
        libc::ENOENT => "libxdp's redirect program xsk_def_xdp_prog.o was not found (it comes \
                         with libxdp1, in /usr/lib/<arch>/bpf; LIBXDP_OBJECT_PATH names another \
                         folder)"
            .to_string(),
        libc::EINVAL if !cfg.skb_mode => format!(
            "native XDP refused the program on '{iface}' (an MTU too large for XDP, or a \
             driver without native XDP; try generic/skb mode)"
        ),
        _ => String::new(),
    }
}

/// RX queues of `iface` in use (ETHTOOL_GCHANNELS, else sysfs).
fn rx_queues(iface: &str) -> Option<u32> {
    #[repr(C)]
    #[derive(Default)]
    struct Channels {
        cmd: u32,
        max_rx: u32,
        max_tx: u32,
        max_other: u32,
        max_combined: u32,
        rx_count: u32,
        tx_count: u32,
        other_count: u32,
        combined_count: u32,
    }
    const ETHTOOL_GCHANNELS: u32 = 0x3c;
    let mut ch = Channels { cmd: ETHTOOL_GCHANNELS, ..Default::default() };
    let ok = ifreq_ioctl(iface, libc::SIOCETHTOOL, |r| {
        r.ifr_ifru.ifru_data = (&mut ch as *mut Channels).cast();
    })
    .is_some();
    if ok {
        return Some((ch.rx_count + ch.combined_count).max(1));
    }
    let dir = std::fs::read_dir(format!("/sys/class/net/{iface}/queues")).ok()?;
    let n = dir
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
        .count();
    Some((n as u32).max(1))
}

/// The MTU of `iface`.
fn mtu(iface: &str) -> Option<u32> {
    let r = ifreq_ioctl(iface, libc::SIOCGIFMTU, |_| {})?;
    // SAFETY: SIOCGIFMTU fills the `ifru_mtu` member of the union.
    u32::try_from(unsafe { r.ifr_ifru.ifru_mtu }).ok()
}

/// An `ifreq` ioctl on `iface` through a datagram socket of the calling thread's network
/// namespace; `set` fills in the request.
fn ifreq_ioctl(
    iface: &str,
    req: libc::c_ulong,
    set: impl FnOnce(&mut libc::ifreq),
) -> Option<libc::ifreq> {
    let name = iface.as_bytes();
    if name.len() >= libc::IFNAMSIZ {
        return None;
    }
    // SAFETY: ifreq is plain data for which all zeroes is valid.
    let mut r: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in r.ifr_name.iter_mut().zip(name) {
        *d = *s as c_char;
    }
    set(&mut r);
    // SAFETY: a socket for the ioctl, closed below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `r` is a valid ifreq naming the interface; the requests used here write only
    // inside it, or into the buffer its data pointer names, which outlives the call.
    let rc = unsafe { libc::ioctl(fd, req as _, &mut r) };
    // SAFETY: `fd` is ours and closed once.
    unsafe { libc::close(fd) };
    (rc == 0).then_some(r)
}

fn realtime() -> Timestamp {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut t) };
    Timestamp::from_parts(t.tv_sec.max(0) as u64, t.tv_nsec.clamp(0, 999_999_999) as u32)
}

impl XdpPair {
    /// Opens AF_XDP sockets on queue `cfg.queue` of both interfaces, sharing one UMEM
    /// (`XDP_SHARED_UMEM`; each interface has its own fill and completion rings), with
    /// libxdp's redirect program attached to both. Interface 0 of every frame is `a`, 1 is
    /// `b`. What is worth knowing about the set-up (queues not bridged, copy instead of zero
    /// copy, libxdp's messages) is in [`XdpPair::notes`].
    pub fn open(a: &str, b: &str, cfg: &XdpConfig) -> Result<Self, LiveError> {
        let lib = libxdp()?;
        let config = |why: String| LiveError::XdpConfig { iface: a.to_string(), why };
        if a == b {
            return Err(config("both sides of the bridge are the same interface".into()));
        }
        if !cfg.frames.is_power_of_two() || !(64..=1 << 20).contains(&cfg.frames) {
            return Err(config(format!(
                "{} UMEM frames: the count must be a power of two from 64 to 1048576",
                cfg.frames
            )));
        }
        if cfg.frame_size != 2048 && cfg.frame_size != 4096 {
            return Err(config(format!("frame size {}: it must be 2048 or 4096", cfg.frame_size)));
        }
        if cfg.skb_mode && cfg.zero_copy == Some(true) {
            return Err(config("zero copy needs native XDP, not generic (skb) mode".into()));
        }
        let mut notes = Vec::new();
        let mut ifindex = [0u32; 2];
        for (iface, index) in [a, b].into_iter().zip(&mut ifindex) {
            let c = CString::new(iface).map_err(|_| LiveError::NoInterface(iface.to_string()))?;
            // SAFETY: a NUL-terminated name.
            *index = unsafe { libc::if_nametoindex(c.as_ptr()) };
            if *index == 0 {
                return Err(LiveError::NoInterface(iface.to_string()));
            }
            let queues = rx_queues(iface).unwrap_or(1);
            if cfg.queue >= queues {
                return Err(LiveError::XdpConfig {
                    iface: iface.to_string(),
                    why: format!(
                        "queue {} does not exist ('{iface}' has {queues} RX queue{})",
                        cfg.queue,
                        if queues == 1 { "" } else { "s" }
                    ),
                });
            }
            if queues > 1 {
                notes.push(format!(
                    "'{iface}' has {queues} RX queues and only queue {} is bridged: frames the \
                     NIC steers to the others go to this host's stack, not across the bridge \
                     (`ethtool -L {iface} combined 1` leaves one)",
                    cfg.queue
                ));
            }
            if let Some(m) = mtu(iface) {
                // Ethernet header and one VLAN tag on top of the MTU; the kernel keeps 256
                // bytes of every frame as XDP headroom.
                let room = cfg.frame_size - 256;
                if m + 18 > room {
                    notes.push(format!(
                        "'{iface}' has MTU {m}: frames longer than {room} bytes do not fit a \
                         {}-byte UMEM frame and are dropped by the kernel (rx_dropped)",
                        cfg.frame_size
                    ));
                }
            }
        }
        let quiet = Quiet::new(lib);
        // A socket closed just before may hold the queue for a moment longer (the kernel
        // releases its buffer pool from a work queue): a busy queue is tried again for a while.
        let patiently = |zc: bool| {
            let started = Instant::now();
            loop {
                match Self::attempt(lib, a, b, cfg, zc, &quiet) {
                    Err(LiveError::Xdp { ref err, .. })
                        if err.raw_os_error() == Some(libc::EBUSY)
                            && started.elapsed() < BUSY_WAIT =>
                    {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    r => break r,
                }
            }
        };
        let pair = match cfg.zero_copy {
            Some(zc) => patiently(zc)?,
            None => match patiently(true) {
                Ok(p) => p,
                Err(zc_err) => {
                    let p = patiently(false)?;
                    notes.push(format!("copy mode: zero copy is not available ({zc_err})"));
                    p
                }
            },
        };
        let mut pair = pair;
        notes.push(format!(
            "{} XDP, {} mode, queue {} of '{a}' and '{b}', {} frames of {} bytes",
            if cfg.skb_mode { "generic (skb)" } else { "native" },
            if pair.zero_copy { "zero-copy" } else { "copy" },
            cfg.queue,
            cfg.frames,
            cfg.frame_size
        ));
        if !pair.zero_copy && !pair.ports[0].one_kick {
            notes.push(
                "copy mode: this kernel sends at most 32 frames per wake-up (no \
                 XDP_MAX_TX_SKB_BUDGET before Linux 6.17), so a batch may take several"
                    .to_string(),
            );
        }
        pair.programs = ifindex.map(|i| (i, xsk_program(lib, i)));
        notes.extend(quiet.take());
        drop(quiet);
        pair.opening = false;
        pair.notes = notes;
        Ok(pair)
    }

    /// One try at the set-up, in zero-copy or copy mode; what it set up is undone on error
    /// (by the drop of the half-built pair).
    fn attempt(
        lib: &'static Libxdp,
        a: &str,
        b: &str,
        cfg: &XdpConfig,
        zero_copy: bool,
        quiet: &Quiet<'_>,
    ) -> Result<Self, LiveError> {
        let ring = cfg.frames / 2;
        let area_len = cfg.frames as usize * cfg.frame_size as usize;
        // SAFETY: a fresh anonymous mapping, unmapped in drop.
        let area = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                area_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if area == libc::MAP_FAILED {
            let e = io::Error::last_os_error().raw_os_error().unwrap_or(libc::ENOMEM);
            return Err(xdp_error(a, "mapping the UMEM", e, "", &[]));
        }
        // Huge pages where the kernel gives them (transparent huge pages in `madvise` or
        // `always` mode): the data plane reads every frame's headers, and with 4 KiB pages
        // each frame's first read also walked the page tables (measured under a SYN flood: a
        // tenth of the box's CPU on the first byte of each frame). Then the pages are made
        // now rather than on first use; where either call is refused, registering the UMEM
        // pins the pages anyway.
        // SAFETY: advice on the mapping just made, which nothing else uses yet.
        unsafe {
            libc::madvise(area, area_len, libc::MADV_HUGEPAGE);
            libc::madvise(area, area_len, libc::MADV_POPULATE_WRITE);
        }
        let mut pair = Self {
            lib,
            ports: [Port::new(a), Port::new(b)],
            umem: std::ptr::null_mut(),
            area: area.cast(),
            area_len,
            frame_size: cfg.frame_size,
            free: (0..u64::from(cfg.frames)).map(|i| i * u64::from(cfg.frame_size)).collect(),
            reserve: (cfg.frames as usize / 16).min(32),
            zero_copy,
            notes: Vec::new(),
            batch: Vec::new(),
            verdicts: Vec::new(),
            first: 0,
            opening: true,
            programs: [(0, None); 2],
            released_elsewhere: false,
            base: cfg.first_interface,
            frames: Vec::new(),
        };
        let ucfg = UmemConfig {
            fill_size: ring,
            comp_size: ring,
            frame_size: cfg.frame_size,
            frame_headroom: 0,
            flags: 0,
        };
        let r0 = pair.ports[0].rings;
        // SAFETY: the area is page-aligned and `area_len` long; the fill and completion ring
        // structs live (boxed) until after xsk_umem__delete.
        let rc = unsafe {
            (lib.umem_create)(
                &mut pair.umem,
                area,
                area_len as u64,
                &raw mut (*r0).fill,
                &raw mut (*r0).comp,
                &ucfg,
            )
        };
        if rc != 0 {
            return Err(xdp_error(
                a,
                "registering the UMEM",
                -rc,
                &hint(-rc, a, cfg, false),
                &quiet.take(),
            ));
        }
        // The first interface's fill ring is mapped with the UMEM: filled now, before its
        // socket is bound and the program attached, no frame finds it empty. The second's
        // is mapped, bound and attached in one libxdp call, so a frame arriving on it in
        // that instant, before the fill below, is dropped (rx_fill_ring_empty_descs).
        pair.refill();
        let scfg = SocketConfig {
            rx_size: ring,
            tx_size: ring,
            libxdp_flags: 0,
            xdp_flags: if cfg.skb_mode { XDP_FLAGS_SKB_MODE } else { XDP_FLAGS_DRV_MODE },
            bind_flags: XDP_USE_NEED_WAKEUP | if zero_copy { XDP_ZEROCOPY } else { XDP_COPY },
        };
        for (i, name) in [a, b].into_iter().enumerate() {
            let cname = CString::new(name).map_err(|_| LiveError::NoInterface(name.to_string()))?;
            let r = pair.ports[i].rings;
            let mut xsk = std::ptr::null_mut();
            // SAFETY: the name is NUL-terminated, the UMEM is registered, and the ring structs
            // live (boxed) until after this socket is deleted. The first socket takes the
            // UMEM's own fill and completion rings; the second, on another interface, gets
            // new ones mapped on its own socket (and binds with XDP_SHARED_UMEM).
            let rc = unsafe {
                (lib.socket_create_shared)(
                    &mut xsk,
                    cname.as_ptr(),
                    cfg.queue,
                    pair.umem,
                    &raw mut (*r).rx,
                    &raw mut (*r).tx,
                    &raw mut (*r).fill,
                    &raw mut (*r).comp,
                    &scfg,
                )
            };
            if rc != 0 {
                let what = format!(
                    "binding an AF_XDP socket to queue {} ({}, {} XDP)",
                    cfg.queue,
                    if zero_copy { "zero copy" } else { "copy mode" },
                    if cfg.skb_mode { "generic" } else { "native" }
                );
                return Err(xdp_error(
                    name,
                    &what,
                    -rc,
                    &hint(-rc, name, cfg, zero_copy),
                    &quiet.take(),
                ));
            }
            let port = &mut pair.ports[i];
            port.xsk = xsk;
            // SAFETY: a socket libxdp just created.
            port.fd = unsafe { (lib.socket_fd)(xsk) };
        }
        for port in &mut pair.ports {
            let mut opts = 0u32;
            let mut len = 4 as libc::socklen_t;
            // SAFETY: XDP_OPTIONS writes one u32 (struct xdp_options).
            let rc = unsafe {
                libc::getsockopt(port.fd, SOL_XDP, XDP_OPTIONS, (&raw mut opts).cast(), &mut len)
            };
            let zc = rc == 0 && opts & XDP_OPTIONS_ZEROCOPY != 0;
            if zc != zero_copy {
                return Err(LiveError::XdpConfig {
                    iface: port.name.clone(),
                    why: format!(
                        "the socket runs in {} mode, not the {} mode asked for",
                        if zc { "zero-copy" } else { "copy" },
                        if zero_copy { "zero-copy" } else { "copy" }
                    ),
                });
            }
            port.one_kick = zero_copy || {
                // Copy mode: let one sendto send the whole TX ring (Linux 6.17 and later).
                let budget: u32 = ring.max(TX_BATCH);
                // SAFETY: XDP_MAX_TX_SKB_BUDGET reads one unsigned int.
                unsafe {
                    libc::setsockopt(
                        port.fd,
                        SOL_XDP,
                        XDP_MAX_TX_SKB_BUDGET,
                        (&raw const budget).cast(),
                        4,
                    ) == 0
                }
            };
        }
        pair.refill();
        Ok(pair)
    }

    /// Whether the sockets run in zero-copy mode.
    pub fn zero_copy(&self) -> bool {
        self.zero_copy
    }

    /// What is worth knowing about the set-up: the RX queues of each interface when more than
    /// the bound one receive, the mode in effect and why, and what libxdp said.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Each interface's index and the id of libxdp's redirect program attached to it (`None`
    /// if it could not be found): what [`release`] takes to detach the programs after this
    /// process has given up the privileges to do it itself.
    pub fn programs(&self) -> [(u32, Option<u32>); 2] {
        self.programs
    }

    /// Says that another process detaches the programs when this one ends ([`release`]):
    /// deleting the sockets still removes them from the programs' maps, and what libxdp
    /// says when it cannot also detach the programs (without privileges) is not printed.
    pub fn released_elsewhere(&mut self) {
        self.released_elsewhere = true;
    }

    /// The two interfaces' names (0 and 1).
    pub fn interfaces(&self) -> [&str; 2] {
        [&self.ports[0].name, &self.ports[1].name]
    }

    /// The counters, with the kernel's read now.
    pub fn stats(&self) -> XdpStats {
        let mut ports = [self.ports[0].stats, self.ports[1].stats];
        for (s, p) in ports.iter_mut().zip(&self.ports) {
            s.kernel = p.kernel_stats();
            s.fill_depth = p.fill_depth;
        }
        XdpStats { ports, zero_copy: self.zero_copy }
    }

    /// Takes back the buffers of sent frames from both completion rings.
    fn reap(&mut self) {
        let mask = !(u64::from(self.frame_size) - 1);
        for port in &mut self.ports {
            let comp = &mut port.rings().comp;
            let (n, idx) = comp.peek(comp.size);
            for i in 0..n {
                // SAFETY: the kernel wrote the completed entries before its producer.
                let addr = unsafe { comp.addr(idx.wrapping_add(i)).read() };
                self.free.push(addr & mask);
            }
            comp.release(n);
            port.stats.completed += u64::from(n);
        }
    }

    /// Gives idle frames (all but the reserve for injected frames) to the fill rings, in
    /// proportion to the room each has.
    fn refill(&mut self) {
        let avail = self.free.len().saturating_sub(self.reserve);
        if avail == 0 {
            for p in &mut self.ports {
                p.fill_full = false;
            }
            return;
        }
        // A ring not mapped yet (size 0: the second interface during set-up) gets nothing.
        let room = self.ports.each_mut().map(|p| {
            let f = &mut p.rings().fill;
            if f.size == 0 {
                return 0;
            }
            let (size, held) = (f.size, f.prod_outstanding());
            let free = f.prod_free(size);
            fill_room(&mut p.fill_depth, size, held, free, p.fill_full) as usize
        });
        let total = room[0] + room[1];
        if total == 0 {
            for p in &mut self.ports {
                p.fill_full = true;
            }
            return;
        }
        let give0 = if total <= avail { room[0] } else { avail * room[0] / total };
        let give = [give0, (avail - give0).min(room[1])];
        for ((port, n), want) in self.ports.iter_mut().zip(give).zip(room) {
            port.fill_full = n == want;
            if n == 0 {
                continue;
            }
            let fill = &mut port.rings().fill;
            let Some(idx) = fill.reserve(n as u32) else { continue };
            for i in 0..n as u32 {
                let addr = self.free.pop().expect("counted above");
                // SAFETY: the slot was reserved above and is ours until submitted.
                unsafe { fill.addr(idx.wrapping_add(i)).write(addr) };
            }
            fill.submit(n as u32);
            // A zero-copy driver that ran out of fill entries sleeps until woken.
            if fill.needs_wakeup() && port.fd >= 0 {
                // SAFETY: a zero-length, non-blocking recvfrom on our socket wakes the
                // driver's receive side; no buffer is passed.
                unsafe {
                    libc::recvfrom(
                        port.fd,
                        std::ptr::null_mut(),
                        0,
                        libc::MSG_DONTWAIT,
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                    )
                };
            }
        }
    }

    /// Takes up to `max` received descriptors from both RX rings into `batch`.
    fn take_rx(&mut self, max: usize) {
        self.batch.clear();
        let first = self.first;
        self.first ^= 1;
        // Half each (the first port gets the odd one), then what the other left.
        let share = [max.div_ceil(2), max / 2];
        let mut left = max;
        for round in 0..2 {
            for (k, &half) in share.iter().enumerate() {
                let p = (first + k) % 2;
                let want = if round == 0 { half.min(left) } else { left };
                if want == 0 {
                    continue;
                }
                let rx = &mut self.ports[p].rings().rx;
                let (n, idx) = rx.peek(want as u32);
                for i in 0..n {
                    // SAFETY: the kernel wrote the entry before its producer covered it.
                    let d = unsafe { rx.desc(idx.wrapping_add(i)).read() };
                    self.batch.push((p as u32, d.addr, d.len));
                }
                // The descriptors are copied out: the slots can go back to the kernel (the
                // frames they name stay ours).
                rx.release(n);
                left -= n as usize;
                self.ports[p].stats.received += u64::from(n);
            }
        }
    }

    /// Waits up to `timeout_ms` for either RX ring to have frames.
    fn wait(&mut self, timeout_ms: i32) -> io::Result<()> {
        let mut fds = self.ports.each_ref().map(|p| libc::pollfd {
            fd: p.fd,
            events: libc::POLLIN,
            revents: 0,
        });
        // SAFETY: two valid pollfd entries.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout_ms) };
        if rc < 0 {
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
        for (f, p) in fds.iter().zip(&self.ports) {
            if f.revents & (libc::POLLERR | libc::POLLNVAL) != 0 {
                return Err(io::Error::other(format!(
                    "the AF_XDP socket on '{}' failed (the interface may be gone)",
                    p.name
                )));
            }
        }
        Ok(())
    }

    /// The bytes of the frame at `addr` (`len` long), if the descriptor lies in the UMEM and
    /// inside one frame.
    fn frame_ok(&self, addr: u64, len: u32) -> bool {
        let fs = u64::from(self.frame_size);
        let in_area =
            addr.checked_add(u64::from(len)).is_some_and(|end| end <= self.area_len as u64);
        len > 0 && in_area && (addr % fs) + u64::from(len) <= fs
    }

    /// Receives up to `max` frames from either interface (waiting up to `timeout_ms` when
    /// none is ready), shows them to `decide` as [`Frame`]s (interface 0 for the first
    /// interface, 1 for the second; one CLOCK_REALTIME timestamp per batch; Ethernet; the
    /// offset is the frame's address in the UMEM), which
    /// pushes one `bool` per frame: `true` sends the frame out of the other interface (by
    /// descriptor, no copy), `false` drops it (a missing verdict is a drop). Buffers of
    /// dropped frames go back to the fill rings; sent ones come back through the completion
    /// rings. The kernel is woken to transmit once per batch when it asks to be. Returns the
    /// number received (0 when none came in time).
    pub fn exchange(
        &mut self,
        max: usize,
        timeout_ms: i32,
        decide: &mut dyn FnMut(&[Frame<'_>], &mut Vec<bool>),
    ) -> io::Result<usize> {
        self.reap();
        self.refill();
        if max == 0 {
            return Ok(0);
        }
        self.take_rx(max);
        if self.batch.is_empty() {
            self.wait(timeout_ms)?;
            self.take_rx(max);
            if self.batch.is_empty() {
                return Ok(0);
            }
        }
        let ts = realtime();
        let mut verdicts = std::mem::take(&mut self.verdicts);
        verdicts.clear();
        {
            let mut frames: Vec<Frame<'_>> = crate::recycle(std::mem::take(&mut self.frames));
            frames.extend(self.batch.iter().map(|&(port, addr, len)| {
                let data: &[u8] = if self.frame_ok(addr, len) {
                    // SAFETY: the frame came off an RX ring, so it is ours (the kernel does
                    // not touch it until it goes onto a fill or TX ring, after `decide`),
                    // and it lies inside the UMEM (checked).
                    unsafe {
                        std::slice::from_raw_parts(self.area.add(addr as usize), len as usize)
                    }
                } else {
                    &[]
                };
                Frame {
                    ts,
                    origlen: len,
                    link: LinkType::Ethernet,
                    interface: self.base + port,
                    offset: addr,
                    data,
                }
            }));
            decide(&frames, &mut verdicts);
            self.frames = crate::recycle(frames);
        }
        let n = self.batch.len();
        let mask = !(u64::from(self.frame_size) - 1);
        // Per destination port: how many go, and room on its TX ring.
        let mut want = [0u32; 2];
        for (i, &(port, addr, len)) in self.batch.iter().enumerate() {
            if verdicts.get(i) == Some(&true) && self.frame_ok(addr, len) {
                want[1 - port as usize] += 1;
            }
        }
        let mut slot = [0u32; 2];
        let mut room = [0u32; 2];
        for q in 0..2 {
            if want[q] > 0 {
                let tx = &mut self.ports[q].rings().tx;
                room[q] = tx.prod_free(want[q]).min(want[q]);
                slot[q] = tx.reserve(room[q]).unwrap_or(0);
            }
        }
        let mut used = [0u32; 2];
        for i in 0..n {
            let (port, addr, len) = self.batch[i];
            let p = port as usize;
            let q = 1 - p;
            if verdicts.get(i) == Some(&true) && self.frame_ok(addr, len) {
                if used[q] < room[q] {
                    let tx = &mut self.ports[q].rings().tx;
                    // SAFETY: the slot was reserved above and is ours until submitted.
                    unsafe {
                        tx.desc(slot[q].wrapping_add(used[q])).write(XdpDesc {
                            addr,
                            len,
                            options: 0,
                        })
                    };
                    used[q] += 1;
                    continue;
                }
                self.ports[p].stats.tx_full += 1;
            } else {
                self.ports[p].stats.dropped += 1;
            }
            self.free.push(addr & mask);
        }
        self.verdicts = verdicts;
        let mut result = Ok(());
        for (port, &k) in self.ports.iter_mut().zip(&used) {
            if k > 0 {
                port.rings().tx.submit(k);
                port.stats.sent += u64::from(k);
                if let Err(e) = port.kick() {
                    result = Err(e);
                }
            }
        }
        self.reap();
        self.refill();
        result.map(|()| n)
    }

    /// Sends `data` (a whole Ethernet frame built by the caller, such as a TCP reset for a
    /// rejected packet) out of interface `port` (0 or 1), copied into an idle UMEM frame.
    /// `Ok(false)` when no frame or TX slot is free.
    pub fn inject(&mut self, port: u32, data: &[u8]) -> io::Result<bool> {
        let port = port.wrapping_sub(self.base);
        if port > 1 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("no port {port} (0 or 1)"),
            ));
        }
        if data.is_empty() || data.len() > self.frame_size as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a frame of {} bytes does not fit a {}-byte UMEM frame",
                    data.len(),
                    self.frame_size
                ),
            ));
        }
        if self.free.is_empty() {
            self.reap();
        }
        let Some(addr) = self.free.pop() else { return Ok(false) };
        let p = &mut self.ports[port as usize];
        let tx = &mut p.rings().tx;
        let Some(idx) = tx.reserve(1) else {
            self.free.push(addr);
            return Ok(false);
        };
        // SAFETY: the frame is idle (from the free list), so ours, and `data` fits in it
        // (checked); the TX slot was reserved above.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.area.add(addr as usize), data.len());
            tx.desc(idx).write(XdpDesc { addr, len: data.len() as u32, options: 0 });
        }
        tx.submit(1);
        p.stats.sent += 1;
        p.stats.injected += 1;
        p.kick()?;
        Ok(true)
    }
}

impl XdpPair {
    /// Deletes the sockets (detaching the program with the last one) and the UMEM.
    fn teardown(&mut self) {
        let lib = self.lib;
        // The second socket first: it shares the first's UMEM socket. Deleting a socket
        // removes it from the program's map and, with the last one, detaches the program.
        for port in self.ports.iter_mut().rev() {
            if !port.xsk.is_null() {
                // SAFETY: a socket libxdp created, deleted once.
                unsafe { (lib.socket_delete)(port.xsk) };
                port.xsk = std::ptr::null_mut();
            }
        }
        if !self.umem.is_null() {
            // SAFETY: the UMEM libxdp registered, with no socket left on it.
            unsafe { (lib.umem_delete)(self.umem) };
            self.umem = std::ptr::null_mut();
        }
    }
}

impl Drop for XdpPair {
    fn drop(&mut self) {
        if self.opening {
            // `open` holds the set-up lock and collects what libxdp says.
            self.teardown();
        } else {
            let quiet = Quiet::new(self.lib);
            self.teardown();
            // What libxdp says on the way out goes to standard error, as libxdp would print
            // it, but for its notice that no BPF file system is mounted (it then keeps its
            // lock in /run/xdp, which works).
            for m in quiet.take() {
                if !self.released_elsewhere && !m.contains("No bpffs found") {
                    eprintln!("{m}");
                }
            }
        }
        for port in &mut self.ports {
            // SAFETY: from Box::into_raw in Port::new; libxdp no longer points at it.
            drop(unsafe { Box::from_raw(port.rings) });
        }
        // SAFETY: the mapping made in `attempt`; nothing refers to it any more.
        unsafe { libc::munmap(self.area.cast(), self.area_len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring of `size` u64 slots over test memory, with the kernel's side played by hand.
    struct TestRing {
        words: Box<[u32; 3]>, // producer, consumer, flags
        slots: Vec<u64>,
        ring: XskRing,
    }

    impl TestRing {
        /// A producer ring (fill/TX) as libxdp sets it up, indices starting at `start`.
        fn producer(size: u32, start: u32) -> Self {
            let mut t = Self::raw(size, start);
            t.ring.cached_prod = start;
            t.ring.cached_cons = start.wrapping_add(size);
            t
        }

        /// A consumer ring (RX/completion), indices starting at `start`.
        fn consumer(size: u32, start: u32) -> Self {
            let mut t = Self::raw(size, start);
            t.ring.cached_prod = start;
            t.ring.cached_cons = start;
            t
        }

        fn raw(size: u32, start: u32) -> Self {
            let mut words = Box::new([start, start, 0]);
            let mut slots = vec![0u64; size as usize];
            let ring = XskRing {
                cached_prod: 0,
                cached_cons: 0,
                mask: size - 1,
                size,
                producer: &raw mut words[0],
                consumer: &raw mut words[1],
                ring: slots.as_mut_ptr().cast(),
                flags: &raw mut words[2],
            };
            Self { words, slots, ring }
        }

        fn kernel_producer(&self) -> u32 {
            XskRing::word(self.ring.producer).load(Ordering::Acquire)
        }

        fn kernel_consumer(&self) -> u32 {
            XskRing::word(self.ring.consumer).load(Ordering::Acquire)
        }

        /// The kernel consumes `n` entries of a producer ring, returning them.
        fn kernel_consume(&mut self, n: u32) -> Vec<u64> {
            let c = self.kernel_consumer();
            assert!(self.kernel_producer().wrapping_sub(c) >= n, "kernel consumes past producer");
            let out =
                (0..n).map(|i| self.slots[(c.wrapping_add(i) & self.ring.mask) as usize]).collect();
            XskRing::word(self.ring.consumer).store(c.wrapping_add(n), Ordering::Release);
            out
        }

        /// The kernel produces `vals` on a consumer ring.
        fn kernel_produce(&mut self, vals: &[u64]) {
            let p = self.kernel_producer();
            assert!(
                p.wrapping_sub(self.kernel_consumer()) + vals.len() as u32 <= self.ring.size,
                "kernel overfills"
            );
            for (i, v) in vals.iter().enumerate() {
                self.slots[(p.wrapping_add(i as u32) & self.ring.mask) as usize] = *v;
            }
            XskRing::word(self.ring.producer)
                .store(p.wrapping_add(vals.len() as u32), Ordering::Release);
        }

        fn write(&mut self, idx: u32, v: u64) {
            // SAFETY: reserved slot of the test ring.
            unsafe { self.ring.addr(idx).write(v) }
        }

        fn read(&self, idx: u32) -> u64 {
            // SAFETY: a produced slot of the test ring.
            unsafe { self.ring.addr(idx).read() }
        }
    }

    #[test]
    fn producer_reserves_up_to_the_ring_and_sees_what_the_kernel_consumed() {
        for start in [0u32, u32::MAX - 5] {
            let mut t = TestRing::producer(8, start);
            assert_eq!(t.ring.prod_free(1), 8);
            let idx = t.ring.reserve(5).unwrap();
            assert_eq!(idx, start);
            for i in 0..5 {
                t.write(idx.wrapping_add(i), 100 + u64::from(i));
            }
            // Not visible to the kernel before submit.
            assert_eq!(t.kernel_producer(), start);
            t.ring.submit(5);
            assert_eq!(t.kernel_producer(), start.wrapping_add(5));
            assert_eq!(t.ring.prod_outstanding(), 5);
            // 3 left: 4 cannot be reserved, all or nothing.
            assert_eq!(t.ring.reserve(4), None);
            let idx2 = t.ring.reserve(3).unwrap();
            assert_eq!(idx2, start.wrapping_add(5));
            for i in 0..3 {
                t.write(idx2.wrapping_add(i), 200 + u64::from(i));
            }
            t.ring.submit(3);
            assert_eq!(t.ring.prod_free(1), 0);
            assert_eq!(t.ring.reserve(1), None);
            // The kernel takes 6: they come out in order, across the wrap of slots and index.
            assert_eq!(t.kernel_consume(6), vec![100, 101, 102, 103, 104, 200]);
            assert_eq!(t.ring.prod_outstanding(), 2);
            // The cached consumer is refreshed only when needed.
            assert_eq!(t.ring.prod_free(6), 6);
            let idx3 = t.ring.reserve(6).unwrap();
            assert_eq!(idx3, start.wrapping_add(8));
            for i in 0..6 {
                t.write(idx3.wrapping_add(i), 300 + u64::from(i));
            }
            t.ring.submit(6);
            assert_eq!(t.kernel_consume(8), vec![201, 202, 300, 301, 302, 303, 304, 305]);
            assert_eq!(t.ring.prod_free(8), 8);
        }
    }

    #[test]
    fn consumer_peeks_what_the_kernel_produced_and_releases_it() {
        for start in [0u32, u32::MAX - 2] {
            let mut t = TestRing::consumer(4, start);
            assert_eq!(t.ring.peek(4), (0, start));
            t.kernel_produce(&[1, 2, 3]);
            // At most what is asked for.
            let (n, idx) = t.ring.peek(2);
            assert_eq!((n, idx), (2, start));
            assert_eq!((t.read(idx), t.read(idx.wrapping_add(1))), (1, 2));
            // The third is already known (cached), without a new look at the producer.
            let (n, idx) = t.ring.peek(4);
            assert_eq!((n, idx), (1, start.wrapping_add(2)));
            assert_eq!(t.read(idx), 3);
            // Nothing returned to the kernel before release.
            assert_eq!(t.kernel_consumer(), start);
            t.ring.release(3);
            assert_eq!(t.kernel_consumer(), start.wrapping_add(3));
            // Now the kernel can fill the ring again, across the wrap.
            t.kernel_produce(&[4, 5, 6, 7]);
            let (n, idx) = t.ring.peek(8);
            assert_eq!(n, 4);
            let got: Vec<u64> = (0..4).map(|i| t.read(idx.wrapping_add(i))).collect();
            assert_eq!(got, vec![4, 5, 6, 7]);
            t.ring.release(4);
            assert_eq!(t.ring.peek(1), (0, start.wrapping_add(7)));
        }
    }

    #[test]
    fn fill_rings_deepen_only_when_the_kernel_nearly_empties_them() {
        let mut depth = 0;
        // First refill of an empty ring of 16 Ki entries: the starting depth.
        assert_eq!(fill_room(&mut depth, 16384, 0, 16384, false), FILL_START);
        assert_eq!(depth, FILL_START);
        // The kernel took 100 of them: topped up, no deeper.
        assert_eq!(fill_room(&mut depth, 16384, FILL_START - 100, 16384, true), 100);
        assert_eq!(depth, FILL_START);
        // A quarter left exactly: still no deeper.
        assert_eq!(fill_room(&mut depth, 16384, FILL_START / 4, 16384, true), FILL_START * 3 / 4);
        // Fewer than a quarter left, but the last refill fell short (no idle frames): the
        // kernel did not take them, so no deeper.
        assert_eq!(fill_room(&mut depth, 16384, 10, 16384, false), FILL_START - 10);
        assert_eq!(depth, FILL_START);
        // Fewer than a quarter left after a full refill: twice as deep, and filled to it.
        assert_eq!(fill_room(&mut depth, 16384, 10, 16384, true), 2 * FILL_START - 10);
        assert_eq!(depth, 2 * FILL_START);
        // Never past the ring, and never more than the free entries.
        for _ in 0..10 {
            fill_room(&mut depth, 16384, 0, 16384, true);
        }
        assert_eq!(depth, 16384);
        assert_eq!(fill_room(&mut depth, 16384, 16000, 300, true), 300);
        // A ring smaller than the starting depth starts full.
        let mut small = 0;
        assert_eq!(fill_room(&mut small, 1024, 0, 1024, false), 1024);
        assert_eq!(fill_room(&mut small, 1024, 0, 1024, true), 1024);
        assert_eq!(small, 1024);
    }

    #[test]
    fn wakeup_flag_and_descriptor_slots() {
        let mut t = TestRing::producer(4, 0);
        assert!(!t.ring.needs_wakeup());
        t.words[2] = XDP_RING_NEED_WAKEUP;
        assert!(t.ring.needs_wakeup());
        // Descriptor slots are 16 bytes: `desc(i)` of a ring of descriptors.
        let mut descs = vec![XdpDesc::default(); 4];
        t.ring.ring = descs.as_mut_ptr().cast();
        // SAFETY: slot 5 & 3 = 1 of the four descriptors.
        unsafe { t.ring.desc(5).write(XdpDesc { addr: 4096, len: 60, options: 0 }) };
        assert_eq!(descs[1], XdpDesc { addr: 4096, len: 60, options: 0 });
        assert_eq!(std::mem::size_of::<XdpDesc>(), 16);
    }

    #[test]
    fn ring_struct_has_libxdp_layout() {
        // Four u32 then four pointers, as DEFINE_XSK_RING on a 64-bit target.
        assert_eq!(std::mem::offset_of!(XskRing, producer), 16);
        assert_eq!(std::mem::offset_of!(XskRing, flags), 16 + 3 * std::mem::size_of::<usize>());
        assert_eq!(std::mem::size_of::<SocketConfig>(), 20);
        assert_eq!(std::mem::size_of::<UmemConfig>(), 20);
    }

    #[test]
    fn a_missing_libxdp_names_the_package() {
        let e = LiveError::NoLibxdp("libxdp.so.1: cannot open shared object file".into());
        let e = e.to_string();
        assert!(e.contains("libxdp1") && e.contains("cannot open"), "{e}");
    }

    #[test]
    fn releasing_a_program_that_is_not_attached_changes_nothing() {
        // SAFETY: geteuid has no preconditions.
        if !available() || unsafe { libc::geteuid() } != 0 {
            return;
        }
        // No such program (ids count up from 1 and never reach this), on loopback, which
        // has none attached: nothing to detach, and no error.
        assert_eq!(release(1, u32::MAX - 1), Ok(false));
        let lib = libxdp().unwrap();
        assert_eq!(xsk_program(lib, 1), None, "loopback has no AF_XDP program");
    }

    #[test]
    fn bad_configurations_are_refused_naming_the_interface() {
        if !available() {
            return;
        }
        let cfg = XdpConfig { frames: 100, ..XdpConfig::default() };
        let e = XdpPair::open("lo", "lo-x", &cfg).err().unwrap().to_string();
        assert!(e.contains("'lo'") && e.contains("power of two"), "{e}");
        let e = XdpPair::open("lo", "lo", &XdpConfig::default()).err().unwrap().to_string();
        assert!(e.contains("same interface"), "{e}");
        let e =
            XdpPair::open("lo", "no-such-if0", &XdpConfig::default()).err().unwrap().to_string();
        assert!(e.contains("'no-such-if0'"), "{e}");
    }
}
