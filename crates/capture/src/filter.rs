//! tcpdump filter expressions (`-f EXPR`), compiled by libpcap's own compiler.
//!
//! rampart does not parse filter expressions itself: [`Filter::new`] hands the text to
//! `pcap_compile` (through the `pcap` crate) for each link type it meets, and [`Filter::matches`]
//! runs the compiled classic-BPF program on a frame with `pcap_offline_filter`. The same program
//! can be attached to a live socket so the kernel drops what the filter rejects
//! ([`Filter::kernel_program`]).
//!
//! One difference from tcpdump: the program sees the captured bytes as both the captured and
//! the wire length, so `greater`/`less` compare against the captured length of a frame cut by
//! the snap length.

use pcap::{BpfProgram, Capture, Linktype};
use rampart_wire::LinkType;

/// A filter expression and its compiled programs, one per link type met so far.
pub struct Filter {
    expr: String,
    programs: Vec<(LinkType, BpfProgram)>,
}

/// libpcap refused an expression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("filter expression '{expr}' ({link}): {message}")]
pub struct FilterError {
    /// The expression.
    pub expr: String,
    /// The link type it was compiled for.
    pub link: String,
    /// libpcap's message.
    pub message: String,
}

/// The DLT_ value libpcap's compiler expects for a link type.
fn dlt(link: LinkType) -> i32 {
    match link {
        LinkType::Null => 0,
        LinkType::Ethernet => 1,
        LinkType::Raw => 12,
        LinkType::Loop => 108,
        LinkType::LinuxSll => 113,
        LinkType::Ipv4 => 228,
        LinkType::Ipv6 => 229,
        LinkType::LinuxSll2 => 276,
        LinkType::Other(n) => n as i32,
    }
}

fn compile(expr: &str, link: LinkType) -> Result<BpfProgram, FilterError> {
    let err = |message: String| FilterError {
        expr: expr.to_string(),
        link: format!("{link:?}"),
        message,
    };
    let dead = Capture::dead(Linktype(dlt(link))).map_err(|e| err(e.to_string()))?;
    dead.compile(expr, true).map_err(|e| {
        err(match e {
            pcap::Error::PcapError(m) => m,
            other => other.to_string(),
        })
    })
}

impl Filter {
    /// Compiles `expr` for `link` (the first link type expected), so a bad expression is
    /// reported before any packet is read.
    pub fn new(expr: &str, link: LinkType) -> Result<Self, FilterError> {
        let program = compile(expr, link)?;
        Ok(Self { expr: expr.to_string(), programs: vec![(link, program)] })
    }

    /// The expression.
    pub fn expr(&self) -> &str {
        &self.expr
    }

    /// Whether the frame passes. A link type not met before is compiled now; if libpcap
    /// refuses the expression for it, that is the error.
    #[inline]
    pub fn matches(&mut self, link: LinkType, frame: &[u8]) -> Result<bool, FilterError> {
        if let Some((_, p)) = self.programs.iter().find(|(l, _)| *l == link) {
            return Ok(p.filter(frame));
        }
        let program = compile(&self.expr, link)?;
        let pass = program.filter(frame);
        self.programs.push((link, program));
        Ok(pass)
    }

    /// The program for `link` as (code, jt, jf, k) instructions, with every non-zero return
    /// value replaced by `snaplen`, ready for `SO_ATTACH_FILTER`.
    pub fn kernel_program(
        &mut self,
        link: LinkType,
        snaplen: u32,
    ) -> Result<Vec<(u16, u8, u8, u32)>, FilterError> {
        if !self.programs.iter().any(|(l, _)| *l == link) {
            let program = compile(&self.expr, link)?;
            self.programs.push((link, program));
        }
        let (_, p) = self.programs.iter().find(|(l, _)| *l == link).expect("compiled above");
        let mut out = Vec::new();
        for insn in p.get_instructions() {
            // The pcap crate shows an instruction only through Display: "code jt jf k".
            let text = insn.to_string();
            let f: Vec<u64> = text.split(' ').filter_map(|v| v.parse().ok()).collect();
            let [code, jt, jf, k] = f[..] else {
                return Err(FilterError {
                    expr: self.expr.clone(),
                    link: format!("{link:?}"),
                    message: format!("unexpected instruction text '{text}'"),
                });
            };
            let (code, jt, jf, mut k) = (code as u16, jt as u8, jf as u8, k as u32);
            // BPF_RET | BPF_K with a non-zero length: accept, cut to the snap length.
            if code == 0x06 && k != 0 {
                k = snaplen;
            }
            out.push((code, jt, jf, k));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut f = Filter::new("tcp dst port 80 and host 10.0.0.1", LinkType::Ethernet).unwrap();
        assert!(f.matches(LinkType::Ethernet, &eth_tcp(80)).unwrap());
        assert!(!f.matches(LinkType::Ethernet, &eth_tcp(81)).unwrap());
        // The same expression over raw IP: the frame without its Ethernet header.
        assert!(f.matches(LinkType::Raw, &eth_tcp(80)[14..]).unwrap());
        assert!(!f.matches(LinkType::Raw, &eth_tcp(81)[14..]).unwrap());
    }

    #[test]
    fn bad_expressions_carry_libpcap_s_message() {
        let e = Filter::new("tcp and port", LinkType::Ethernet).err().unwrap();
        assert!(e.to_string().contains("syntax error"), "{e}");
        let e = Filter::new("ether host 1:2:3:4:5:6", LinkType::Raw).err().unwrap();
        assert!(!e.message.is_empty());
    }

    #[test]
    fn kernel_program_returns_the_snap_length() {
        let mut f = Filter::new("tcp", LinkType::Ethernet).unwrap();
        let prog = f.kernel_program(LinkType::Ethernet, 144).unwrap();
        assert!(prog.iter().any(|&(c, _, _, k)| c == 0x06 && k == 144));
        assert!(prog.iter().all(|&(c, _, _, k)| c != 0x06 || k == 0 || k == 144));
    }
}
