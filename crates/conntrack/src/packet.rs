//! [`CtPacket`]: what connection tracking needs of one packet, taken from the one parse
//! ([`PacketMeta`]) and the frame it was parsed from.

use rampart_wire::icmp::Quote;
use rampart_wire::{
    Checksum, Checksums, Family, Layer, Malformed, PacketMeta, Status, TcpMeta, proto,
};

use crate::Reason;

/// One packet as the tracker sees it. Build it with [`CtPacket::from_meta`] where the frame
/// is at hand (the parse step); it owns everything, so it can travel to another worker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CtPacket {
    /// IP family.
    pub family: Family,
    /// Transport protocol number.
    pub proto: u8,
    /// Source address (IPv4 in the first 4 bytes).
    pub src: [u8; 16],
    /// Destination address.
    pub dst: [u8; 16],
    /// TTL or hop limit.
    pub hop_limit: u8,
    /// A problem below the transport layer that keeps the packet from being tracked.
    pub problem: Option<Reason>,
    /// The IPv4 header checksum.
    pub ip_checksum: Checksum,
    /// The transport checksum.
    pub l4_checksum: Checksum,
    /// Transport length from the IP header (header and payload).
    pub l4_len: u32,
    /// Transport payload length (TCP: after the header and options).
    pub payload_len: u32,
    /// TCP fields and options.
    pub tcp: TcpMeta,
    /// Whether the fixed TCP header (20 bytes) was captured.
    pub tcp_header: bool,
    /// UDP length field (UDP-Lite: checksum coverage).
    pub udp_len: u16,
    /// Whether the UDP header (8 bytes) was captured.
    pub udp_header: bool,
    /// ICMP or ICMPv6 type.
    pub icmp_type: u8,
    /// ICMP code.
    pub icmp_code: u8,
    /// ICMP identifier (echo and other queries).
    pub icmp_id: u16,
    /// Whether the 8-byte ICMP header was captured.
    pub icmp_header: bool,
    /// For an ICMP error, the packet it quotes.
    pub quote: Option<Quote>,
}

impl CtPacket {
    /// The facts of a packet parsed into `meta` from `frame`. Checksums are verified only when
    /// `verify` (the tracker's `checksum` knob), since that reads every byte; UDP-Lite's
    /// always are, as Linux checks that its checksum is present whatever the knob says.
    pub fn from_meta(meta: &PacketMeta, frame: &[u8], verify: bool) -> Self {
        let mut p = Self::default();
        p.fill(meta, frame, verify);
        p
    }

    /// [`CtPacket::from_meta`] into this value, every field written: a caller that keeps one
    /// `CtPacket` for all its packets builds none per packet.
    #[inline]
    pub fn fill(&mut self, meta: &PacketMeta, frame: &[u8], verify: bool) {
        let l4 = usize::from(meta.l4_offset);
        let l3 = usize::from(meta.l3_offset);
        let l4_len = if l4 == 0 { 0 } else { (meta.ip_wire_len as usize).saturating_sub(l4 - l3) };
        let captured = frame.len().min(l3 + meta.ip_wire_len as usize).saturating_sub(l4);
        let problem = match meta.status {
            // Every header was there and consistent (the common case).
            Status::Ok if !meta.is_later_fragment() => None,
            Status::Malformed(
                Malformed::IpVersion
                | Malformed::Ipv4HeaderLen
                | Malformed::Ipv4TotalLen
                | Malformed::Ipv6ExtChain,
            ) => Some(Reason::IpMalformed),
            Status::Malformed(Malformed::TcpDataOffset) => Some(Reason::TcpTruncated),
            _ if meta.is_later_fragment() => Some(Reason::Fragment),
            Status::Truncated(
                Layer::Link
                | Layer::Vlan
                | Layer::Pppoe
                | Layer::Mpls
                | Layer::Ipv4
                | Layer::Ipv6
                | Layer::Ipv6Ext,
            ) => Some(Reason::Cut),
            // Cut inside the transport header: if the datagram itself is that short, the
            // protocol's own check says so; if only the capture is, nothing can be judged.
            Status::Truncated(Layer::Tcp) if l4_len >= 20 => Some(Reason::Cut),
            Status::Truncated(Layer::Udp | Layer::Icmp) if l4_len >= 8 => Some(Reason::Cut),
            _ => None,
        };
        let sums = if verify || meta.proto == proto::UDPLITE {
            meta.checksums(frame)
        } else {
            Checksums::default()
        };
        let icmp = meta.proto == proto::ICMP || meta.proto == proto::ICMPV6;
        self.family = meta.family;
        self.proto = meta.proto;
        self.src = meta.src;
        self.dst = meta.dst;
        self.hop_limit = meta.ttl;
        self.problem = problem;
        self.ip_checksum = sums.ip;
        self.l4_checksum = sums.l4;
        self.l4_len = l4_len as u32;
        self.payload_len = meta.payload_wire_len;
        self.tcp = meta.tcp;
        self.tcp_header = l4 != 0 && captured >= 20;
        self.udp_len = meta.udp_len;
        self.udp_header = l4 != 0 && captured >= 8;
        self.icmp_type = meta.icmp_type;
        self.icmp_code = meta.icmp_code;
        self.icmp_id = if icmp { icmp_id(frame, l4, captured) } else { 0 };
        self.icmp_header = l4 != 0 && captured >= 8;
        if icmp {
            self.quote = meta.icmp_quote(frame);
        } else if self.quote.is_some() {
            // (Written only when set: the quote is most of the value's bytes.)
            self.quote = None;
        }
    }

    /// Whether this is an ICMP packet of IPv4 or an ICMPv6 packet of IPv6.
    #[inline]
    pub(crate) fn is_icmp(&self) -> bool {
        (self.proto == proto::ICMP && self.family == Family::V4)
            || (self.proto == proto::ICMPV6 && self.family == Family::V6)
    }
}

fn icmp_id(frame: &[u8], l4: usize, captured: usize) -> u16 {
    if l4 == 0 || captured < 6 {
        return 0;
    }
    frame.get(l4 + 4..l4 + 6).map_or(0, |b| u16::from_be_bytes([b[0], b[1]]))
}
