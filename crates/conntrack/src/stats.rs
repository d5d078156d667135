//! Why a packet is invalid ([`Reason`]) and the tracker's counters ([`Stats`]).

use std::ops::AddAssign;

/// Why conntrack attached no entry to a packet (its `ct state` is then `invalid`). Where Linux
/// logs a reason (`nf_conntrack_log_invalid`), [`Reason::name`] is its wording; where Linux
/// drops the packet silently, or the cause is rampart's own (a capture's limits, the IP layer
/// that runs before conntrack), [`Reason::linux_logs`] is false and the name describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Reason {
    /// TCP: the data offset is below 5 words or past the segment.
    TcpTruncated,
    /// TCP: fewer than 20 bytes of TCP header in the IP datagram (Linux: silent).
    TcpShort,
    /// TCP, UDP, UDP-Lite: the transport checksum is wrong.
    BadChecksum,
    /// TCP: a flag combination outside Linux's `tcp_valid_flags` whitelist.
    TcpFlags,
    /// TCP: a first packet that cannot open an entry (SYN/ACK, FIN, RST, or no flags).
    TcpInvalidNew,
    /// TCP: a first packet other than a SYN with `tcp_loose` off (Linux: silent).
    TcpNotLoose,
    /// TCP: the transition table says invalid for this packet in this state.
    TcpTransition,
    /// TCP window check I: the segment starts past the receiver's window.
    SeqOver,
    /// TCP window check III: the packet acknowledges data not sent yet.
    AckOver,
    /// TCP: an RST whose sequence number lies below what the peer acknowledged.
    InvalidRst,
    /// UDP, UDP-Lite, ICMP, ICMPv6: fewer header bytes than the protocol's header.
    ShortPacket,
    /// UDP: the length field is below 8 or beyond the datagram.
    UdpMalformed,
    /// UDP-Lite: the checksum coverage is below 8 or beyond the datagram.
    UdpliteCoverage,
    /// UDP-Lite: no checksum (it is mandatory).
    UdpliteNoChecksum,
    /// ICMP: the checksum is wrong.
    IcmpChecksum,
    /// ICMPv6: the checksum is wrong.
    Icmpv6Checksum,
    /// ICMP: a type above 18.
    IcmpType,
    /// ICMP, ICMPv6: a message that cannot open an entry (an echo reply, a router
    /// advertisement, ...) with no entry to belong to (Linux: silent).
    IcmpNotNew,
    /// ICMP, ICMPv6: an error whose quoted packet belongs to no tracked flow (Linux: silent).
    IcmpOrphan,
    /// ICMP, ICMPv6: an error about a tracked flow sent to another address than that flow's
    /// endpoint.
    IcmpOuterDaddr,
    /// ICMPv6 redirect: not from a link-local address with hop limit 255.
    RedirectSource,
    /// ICMPv6 redirect with code 0: the redirected header is not followed (rampart).
    RedirectNotFollowed,
    /// The IPv4 header checksum is wrong: Linux's IP layer drops such a packet before any
    /// hook (rampart reports it invalid).
    IpChecksum,
    /// The IP header contradicts itself: Linux's IP layer drops it before any hook.
    IpMalformed,
    /// A non-first IP fragment: Linux tracks the reassembled datagram, rampart does not
    /// reassemble.
    Fragment,
    /// The headers are cut by the capture's snap length, so the packet cannot be tracked.
    Cut,
}

impl Reason {
    /// Number of reasons (the length of [`Stats::by_reason`]).
    pub const COUNT: usize = 26;

    /// Every reason, in index order.
    pub const ALL: [Reason; Self::COUNT] = [
        Self::TcpTruncated,
        Self::TcpShort,
        Self::BadChecksum,
        Self::TcpFlags,
        Self::TcpInvalidNew,
        Self::TcpNotLoose,
        Self::TcpTransition,
        Self::SeqOver,
        Self::AckOver,
        Self::InvalidRst,
        Self::ShortPacket,
        Self::UdpMalformed,
        Self::UdpliteCoverage,
        Self::UdpliteNoChecksum,
        Self::IcmpChecksum,
        Self::Icmpv6Checksum,
        Self::IcmpType,
        Self::IcmpNotNew,
        Self::IcmpOrphan,
        Self::IcmpOuterDaddr,
        Self::RedirectSource,
        Self::RedirectNotFollowed,
        Self::IpChecksum,
        Self::IpMalformed,
        Self::Fragment,
        Self::Cut,
    ];

    /// Linux's log wording (without the values some messages carry: see
    /// [`crate::Inspection::message`]), or a description where Linux logs nothing.
    pub fn name(self) -> &'static str {
        match self {
            Self::TcpTruncated => "truncated packet",
            Self::TcpShort => "short tcp header",
            Self::BadChecksum => "bad checksum",
            Self::TcpFlags => "invalid tcp flag combination",
            Self::TcpInvalidNew => "invalid new",
            Self::TcpNotLoose => "not a syn and tcp_loose is off",
            Self::TcpTransition => "invalid state transition",
            Self::SeqOver => "SEQ is over upper bound",
            Self::AckOver => "ACK is over upper bound",
            Self::InvalidRst => "invalid rst",
            Self::ShortPacket => "short packet",
            Self::UdpMalformed => "truncated/malformed packet",
            Self::UdpliteCoverage => "invalid checksum coverage",
            Self::UdpliteNoChecksum => "checksum missing",
            Self::IcmpChecksum => "bad hw icmp checksum",
            Self::Icmpv6Checksum => "ICMPv6 checksum failed",
            Self::IcmpType => "invalid icmp type",
            Self::IcmpNotNew => "icmp type cannot open an entry",
            Self::IcmpOrphan => "icmp error quotes no tracked flow",
            Self::IcmpOuterDaddr => "outer daddr != inner",
            Self::RedirectSource => "invalid saddr or hoplimit for redirect",
            Self::RedirectNotFollowed => "redirect not followed",
            Self::IpChecksum => "bad ipv4 header checksum",
            Self::IpMalformed => "malformed ip header",
            Self::Fragment => "fragment not reassembled",
            Self::Cut => "headers cut by the snap length",
        }
    }

    /// Whether Linux logs this reason (with `nf_conntrack_log_invalid`); otherwise it drops
    /// silently or the cause is rampart's own.
    pub fn linux_logs(self) -> bool {
        !matches!(
            self,
            Self::TcpShort
                | Self::TcpNotLoose
                | Self::IcmpNotNew
                | Self::IcmpOrphan
                | Self::RedirectNotFollowed
                | Self::IpChecksum
                | Self::IpMalformed
                | Self::Fragment
                | Self::Cut
        )
    }

    /// Whether Linux counts this in the `error` statistic (failures while handling an ICMP
    /// error) rather than `invalid`; `None` for packets conntrack never sees on Linux (the IP
    /// layer drops them) or cannot judge here.
    pub fn linux_counter(self) -> Option<Counter> {
        match self {
            Self::IpChecksum | Self::IpMalformed | Self::Fragment | Self::Cut => None,
            Self::ShortPacket
            | Self::IcmpChecksum
            | Self::Icmpv6Checksum
            | Self::IcmpType
            | Self::IcmpOrphan
            | Self::IcmpOuterDaddr
            | Self::RedirectSource
            | Self::RedirectNotFollowed => Some(Counter::Error),
            _ => Some(Counter::Invalid),
        }
    }
}

/// The `conntrack -S` counter a failure goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    /// `invalid`.
    Invalid,
    /// `error`.
    Error,
}

/// Counters, named as `conntrack -S` prints them, plus invalids by reason. The counters of
/// several workers add up (`+=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Packets that found their entry. (Linux counted this until 4.10; today's kernels use
    /// `found` only for NAT tuple clashes, so a router without NAT shows 0 there.)
    pub found: u64,
    /// Packets conntrack attached no entry to, outside the ICMP error path (Linux's
    /// `invalid`).
    pub invalid: u64,
    /// Entries confirmed (a new packet accepted).
    pub insert: u64,
    /// New entries that could not be confirmed (their flow's slot held another entry).
    pub insert_failed: u64,
    /// New packets dropped because the table was full and nothing could be evicted.
    pub drop: u64,
    /// Entries evicted to make room (never ASSURED ones while others exist).
    pub early_drop: u64,
    /// ICMP and ICMPv6 errors that failed the error path (short, bad checksum, unknown type,
    /// quoting no tracked flow, wrong outer destination): Linux's `error`.
    pub error: u64,
    /// Packets whose checksum could not be verified (cut by the snap length, or a fragment)
    /// and were tracked without it.
    pub unchecked: u64,
    /// TCP packets the state machine ignored (accepted with the state unchanged, as Linux's
    /// `packet ... ignored` and window checks II and IV do).
    pub ignored: u64,
    /// Invalid packets by [`Reason`] (indexed by `reason as usize`), whichever counter above
    /// they went to; reasons of the IP layer and of the capture are counted only here.
    pub by_reason: [u64; Reason::COUNT],
}

impl Default for Stats {
    fn default() -> Self {
        Self {
            found: 0,
            invalid: 0,
            insert: 0,
            insert_failed: 0,
            drop: 0,
            early_drop: 0,
            error: 0,
            unchecked: 0,
            ignored: 0,
            by_reason: [0; Reason::COUNT],
        }
    }
}

impl Stats {
    /// Counts one invalid packet.
    pub(crate) fn count_invalid(&mut self, r: Reason) {
        self.by_reason[r as usize] += 1;
        match r.linux_counter() {
            Some(Counter::Invalid) => self.invalid += 1,
            Some(Counter::Error) => self.error += 1,
            None => {}
        }
    }

    /// The reasons seen, with their counts, in index order.
    pub fn reasons(&self) -> impl Iterator<Item = (Reason, u64)> + '_ {
        Reason::ALL.into_iter().zip(self.by_reason).filter(|&(_, n)| n > 0)
    }
}

impl AddAssign for Stats {
    fn add_assign(&mut self, o: Self) {
        self.found += o.found;
        self.invalid += o.invalid;
        self.insert += o.insert;
        self.insert_failed += o.insert_failed;
        self.drop += o.drop;
        self.early_drop += o.early_drop;
        self.error += o.error;
        self.unchecked += o.unchecked;
        self.ignored += o.ignored;
        for (a, b) in self.by_reason.iter_mut().zip(o.by_reason) {
            *a += b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_dense_and_named() {
        for (i, r) in Reason::ALL.into_iter().enumerate() {
            assert_eq!(r as usize, i);
            assert!(!r.name().is_empty());
        }
        let names: std::collections::BTreeSet<_> = Reason::ALL.iter().map(|r| r.name()).collect();
        assert_eq!(names.len(), Reason::COUNT);
    }

    #[test]
    fn stats_add_up() {
        let mut a = Stats::default();
        a.count_invalid(Reason::TcpFlags);
        a.count_invalid(Reason::IcmpOrphan);
        a.count_invalid(Reason::Cut);
        let mut b = a;
        b += a;
        assert_eq!((b.invalid, b.error), (2, 2));
        assert_eq!(b.by_reason[Reason::Cut as usize], 2);
        assert_eq!(b.reasons().count(), 3);
    }
}
