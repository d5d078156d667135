//! The tracker's knobs and timeouts, each named after the Linux sysctl it mirrors
//! (`net.netfilter.nf_conntrack_*`), with Linux's defaults.

use rampart_wire::Span;

use crate::TcpState;

/// `n` seconds.
const fn s(n: u64) -> Span {
    Span::from_secs(n)
}

/// How long an entry lives without packets, per state (capture time). The
/// defaults are Linux's (`Documentation/networking/nf_conntrack-sysctl.rst`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// `nf_conntrack_tcp_timeout_syn_sent`: 120 s (also SYN_SENT2).
    pub tcp_syn_sent: Span,
    /// `nf_conntrack_tcp_timeout_syn_recv`: 60 s.
    pub tcp_syn_recv: Span,
    /// `nf_conntrack_tcp_timeout_established`: 432000 s (5 days).
    pub tcp_established: Span,
    /// `nf_conntrack_tcp_timeout_fin_wait`: 120 s.
    pub tcp_fin_wait: Span,
    /// `nf_conntrack_tcp_timeout_close_wait`: 60 s.
    pub tcp_close_wait: Span,
    /// `nf_conntrack_tcp_timeout_last_ack`: 30 s.
    pub tcp_last_ack: Span,
    /// `nf_conntrack_tcp_timeout_time_wait`: 120 s.
    pub tcp_time_wait: Span,
    /// `nf_conntrack_tcp_timeout_close`: 10 s.
    pub tcp_close: Span,
    /// `nf_conntrack_tcp_timeout_max_retrans`: 300 s, the cap once
    /// [`Config::tcp_max_retrans`] identical retransmissions were seen, or while the last
    /// window advertised was zero.
    pub tcp_max_retrans: Span,
    /// `nf_conntrack_tcp_timeout_unacknowledged`: 300 s, the cap while data is unacknowledged
    /// (and for a connection picked up mid-stream that has had no reply).
    pub tcp_unacknowledged: Span,
    /// `nf_conntrack_udp_timeout`: 30 s, before a reply and in the first 2 s after one.
    pub udp: Span,
    /// `nf_conntrack_udp_timeout_stream`: 120 s, for a UDP flow still active 2 s after its
    /// first packet with replies seen.
    pub udp_stream: Span,
    /// `nf_conntrack_icmp_timeout`: 30 s.
    pub icmp: Span,
    /// `nf_conntrack_icmpv6_timeout`: 30 s.
    pub icmpv6: Span,
    /// `nf_conntrack_generic_timeout`: 600 s, for protocols without a tracker of their own.
    pub generic: Span,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            tcp_syn_sent: s(120),
            tcp_syn_recv: s(60),
            tcp_established: s(432_000),
            tcp_fin_wait: s(120),
            tcp_close_wait: s(60),
            tcp_last_ack: s(30),
            tcp_time_wait: s(120),
            tcp_close: s(10),
            tcp_max_retrans: s(300),
            tcp_unacknowledged: s(300),
            udp: s(30),
            udp_stream: s(120),
            icmp: s(30),
            icmpv6: s(30),
            generic: s(600),
        }
    }
}

impl Timeouts {
    /// The timeout of a TCP state (SYN_SENT's for NONE, which no stored entry is in).
    pub fn tcp(&self, state: TcpState) -> Span {
        match state {
            TcpState::None | TcpState::SynSent | TcpState::SynSent2 => self.tcp_syn_sent,
            TcpState::SynRecv => self.tcp_syn_recv,
            TcpState::Established => self.tcp_established,
            TcpState::FinWait => self.tcp_fin_wait,
            TcpState::CloseWait => self.tcp_close_wait,
            TcpState::LastAck => self.tcp_last_ack,
            TcpState::TimeWait => self.tcp_time_wait,
            TcpState::Close => self.tcp_close,
        }
    }

    /// Sets the timeout named by its sysctl (`nf_conntrack_tcp_timeout_established`, or without
    /// the `nf_conntrack_` prefix) to `secs` seconds; the error says which names exist.
    pub fn set(&mut self, name: &str, secs: u64) -> Result<(), String> {
        let name = name.strip_prefix("net.netfilter.").unwrap_or(name);
        let name = name.strip_prefix("nf_conntrack_").unwrap_or(name);
        let slot = match name {
            "tcp_timeout_syn_sent" => &mut self.tcp_syn_sent,
            "tcp_timeout_syn_recv" => &mut self.tcp_syn_recv,
            "tcp_timeout_established" => &mut self.tcp_established,
            "tcp_timeout_fin_wait" => &mut self.tcp_fin_wait,
            "tcp_timeout_close_wait" => &mut self.tcp_close_wait,
            "tcp_timeout_last_ack" => &mut self.tcp_last_ack,
            "tcp_timeout_time_wait" => &mut self.tcp_time_wait,
            "tcp_timeout_close" => &mut self.tcp_close,
            "tcp_timeout_max_retrans" => &mut self.tcp_max_retrans,
            "tcp_timeout_unacknowledged" => &mut self.tcp_unacknowledged,
            "udp_timeout" => &mut self.udp,
            "udp_timeout_stream" => &mut self.udp_stream,
            "icmp_timeout" => &mut self.icmp,
            "icmpv6_timeout" => &mut self.icmpv6,
            "generic_timeout" => &mut self.generic,
            _ => {
                return Err(format!(
                    "unknown conntrack timeout `{name}` (expected one of {})",
                    Self::NAMES.join(", ")
                ));
            }
        };
        *slot = Span::from_secs(secs);
        Ok(())
    }

    /// The sysctl names [`Timeouts::set`] knows, without the `nf_conntrack_` prefix.
    pub const NAMES: [&'static str; 15] = [
        "tcp_timeout_syn_sent",
        "tcp_timeout_syn_recv",
        "tcp_timeout_established",
        "tcp_timeout_fin_wait",
        "tcp_timeout_close_wait",
        "tcp_timeout_last_ack",
        "tcp_timeout_time_wait",
        "tcp_timeout_close",
        "tcp_timeout_max_retrans",
        "tcp_timeout_unacknowledged",
        "udp_timeout",
        "udp_timeout_stream",
        "icmp_timeout",
        "icmpv6_timeout",
        "generic_timeout",
    ];
}

/// The tracker's behaviour switches, Linux's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// `nf_conntrack_tcp_loose` (default on): a TCP packet other than a SYN may open an entry
    /// (mid-stream pick-up); such an entry skips window checks in both directions. Off, only
    /// a SYN opens one and a bare ACK without an entry is invalid.
    pub tcp_loose: bool,
    /// `nf_conntrack_tcp_be_liberal` (default off): out-of-window packets are accepted;
    /// only RST checks remain.
    pub tcp_be_liberal: bool,
    /// `nf_conntrack_tcp_ignore_invalid_rst` (default off): an RST whose sequence number lies
    /// below what the peer acknowledged is not invalid.
    pub tcp_ignore_invalid_rst: bool,
    /// `nf_conntrack_tcp_max_retrans` (default 3): identical retransmissions after which the
    /// timeout is capped by [`Timeouts::tcp_max_retrans`].
    pub tcp_max_retrans: u8,
    /// `nf_conntrack_checksum` (default on): packets with a bad IPv4 header, TCP, UDP,
    /// UDP-Lite, ICMP or ICMPv6 checksum are invalid. Packets cut by the snap length cannot be
    /// verified: they pass and are counted ([`crate::Stats::unchecked`]).
    pub checksum: bool,
    /// The timeouts.
    pub timeouts: Timeouts,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            tcp_loose: true,
            tcp_be_liberal: false,
            tcp_ignore_invalid_rst: false,
            tcp_max_retrans: 3,
            checksum: true,
            timeouts: Timeouts::default(),
        }
    }
}

impl Config {
    /// Sets a knob or a timeout by its sysctl name (with or without `nf_conntrack_`): the
    /// switches take 0 or 1, `tcp_max_retrans` a count, timeouts seconds.
    pub fn set(&mut self, name: &str, value: u64) -> Result<(), String> {
        let short = name.strip_prefix("net.netfilter.").unwrap_or(name);
        let short = short.strip_prefix("nf_conntrack_").unwrap_or(short);
        let flag = |v: u64| match v {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(format!("{name} takes 0 or 1, not {v}")),
        };
        match short {
            "tcp_loose" => self.tcp_loose = flag(value)?,
            "tcp_be_liberal" => self.tcp_be_liberal = flag(value)?,
            "tcp_ignore_invalid_rst" => self.tcp_ignore_invalid_rst = flag(value)?,
            "checksum" => self.checksum = flag(value)?,
            "tcp_max_retrans" => {
                self.tcp_max_retrans = u8::try_from(value)
                    .map_err(|_| format!("{name} takes 0 to 255, not {value}"))?
            }
            _ => self.timeouts.set(short, value)?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_defaults() {
        let c = Config::default();
        assert!(c.tcp_loose && !c.tcp_be_liberal && !c.tcp_ignore_invalid_rst && c.checksum);
        assert_eq!(c.tcp_max_retrans, 3);
        let t = c.timeouts;
        assert_eq!(t.tcp(TcpState::Established), s(432_000));
        assert_eq!(t.tcp(TcpState::TimeWait), s(120));
        assert_eq!(t.tcp(TcpState::Close), s(10));
        assert_eq!((t.udp, t.udp_stream, t.icmp, t.generic), (s(30), s(120), s(30), s(600)));
    }

    #[test]
    fn set_by_sysctl_name() {
        let mut c = Config::default();
        c.set("net.netfilter.nf_conntrack_tcp_timeout_established", 86400).unwrap();
        c.set("nf_conntrack_tcp_loose", 0).unwrap();
        c.set("udp_timeout_stream", 180).unwrap();
        assert_eq!(c.timeouts.tcp_established, s(86400));
        assert_eq!(c.timeouts.udp_stream, s(180));
        assert!(!c.tcp_loose);
        assert!(c.set("tcp_loose", 2).unwrap_err().contains("0 or 1"));
        assert!(c.set("tcp_timeout_bogus", 1).unwrap_err().contains("unknown conntrack timeout"));
    }
}
