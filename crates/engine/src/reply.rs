//! The packets a firewall sends back when it rejects one: a TCP reset, or an ICMP or ICMPv6
//! error quoting the rejected packet, built as Linux's `nf_reject` builds them.
//!
//! - **TCP reset** (`reject with tcp reset`): addresses and ports swapped; if the rejected
//!   segment carried an ACK, the reset's sequence number is that ACK and it carries no ACK;
//!   otherwise its sequence number is 0 and it acknowledges the segment (its sequence number
//!   plus SYN, FIN and the payload length). TTL (hop limit) 64, window 0, IPv4 "don't
//!   fragment". No reset answers a reset.
//! - **ICMP/ICMPv6 error** (`reject`, `reject with icmp type ...`): the rejected packet quoted
//!   from its IP header, as much as fits in 576 bytes (IPv4) or 1280 bytes (IPv6), the minimum
//!   each must forward; sent from `from` (the router's address on the input interface), or
//!   from the rejected packet's destination when that is unknown. No error answers an ICMP
//!   error, a fragment other than the first, or a packet to a multicast or broadcast address.
//!
//! The Ethernet header, when the rejected frame has one, is the frame's with its two
//! addresses swapped: the reply leaves by the port the packet came in on.

use rampart_wire::check::{finish, pseudo_header, sum};
use rampart_wire::{Family, LinkType, PacketMeta, icmp, proto};

/// How a rejected packet is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RejectWith {
    /// A TCP reset (for TCP; other protocols get the ICMP port-unreachable error).
    TcpReset,
    /// An ICMP error of this type and code for IPv4 packets, and the ICMPv6 error of this
    /// type and code for IPv6 ones.
    Icmp {
        /// ICMP type and code.
        v4: (u8, u8),
        /// ICMPv6 type and code.
        v6: (u8, u8),
    },
}

impl Default for RejectWith {
    /// Port unreachable (ICMP 3/3, ICMPv6 1/4): what `reject` and `-j REJECT` send.
    fn default() -> Self {
        Self::Icmp { v4: (3, 3), v6: (1, 4) }
    }
}

const ETH: usize = 14;

/// The reply to the rejected packet `frame` (parsed into `meta`), or `None` where Linux sends
/// none. `from` is the router's address to send an ICMP error from, if known.
pub fn reject_reply(
    link: LinkType,
    frame: &[u8],
    meta: &PacketMeta,
    with: RejectWith,
    from: Option<[u8; 16]>,
) -> Option<Vec<u8>> {
    if meta.is_later_fragment() || meta.family == Family::None {
        return None;
    }
    let tcp_reset = with == RejectWith::TcpReset && meta.proto == proto::TCP;
    let link_len = match link {
        LinkType::Ethernet if usize::from(meta.l3_offset) >= ETH => usize::from(meta.l3_offset),
        LinkType::Raw | LinkType::Ipv4 | LinkType::Ipv6 => 0,
        _ => return None,
    };
    let mut out = Vec::with_capacity(128);
    if link_len > 0 {
        // Swapped addresses; the tags and type between them and the IP header are kept.
        out.extend_from_slice(&frame[6..12]);
        out.extend_from_slice(&frame[0..6]);
        out.extend_from_slice(&frame[12..link_len]);
    }
    let body = if tcp_reset {
        reset(frame, meta)?
    } else {
        let (v4, v6) = match with {
            RejectWith::Icmp { v4, v6 } => (v4, v6),
            RejectWith::TcpReset => RejectWith::default().v4_v6(),
        };
        error(frame, meta, if meta.family == Family::V6 { v6 } else { v4 }, from)?
    };
    out.extend_from_slice(&body);
    Some(out)
}

impl RejectWith {
    fn v4_v6(self) -> ((u8, u8), (u8, u8)) {
        match self {
            Self::Icmp { v4, v6 } => (v4, v6),
            Self::TcpReset => ((3, 3), (1, 4)),
        }
    }
}

/// The IP packet of a TCP reset answering the segment in `frame`.
fn reset(frame: &[u8], meta: &PacketMeta) -> Option<Vec<u8>> {
    let t = &meta.tcp;
    if t.header_len == 0 || t.flags & rampart_wire::tcp::flags::RST != 0 {
        return None;
    }
    let l4 = usize::from(meta.l4_offset);
    if frame.len() < l4 + 20 {
        return None;
    }
    let mut tcp = [0u8; 20];
    tcp[0..2].copy_from_slice(&meta.dport.to_be_bytes());
    tcp[2..4].copy_from_slice(&meta.sport.to_be_bytes());
    let ack = t.flags & rampart_wire::tcp::flags::ACK != 0;
    let (seq, ack_seq, flags) = if ack {
        (t.ack, 0, 0x04)
    } else {
        let syn = u32::from(t.flags & rampart_wire::tcp::flags::SYN != 0);
        let fin = u32::from(t.flags & rampart_wire::tcp::flags::FIN != 0);
        (0, t.seq.wrapping_add(syn + fin + meta.payload_wire_len), 0x14)
    };
    tcp[4..8].copy_from_slice(&seq.to_be_bytes());
    tcp[8..12].copy_from_slice(&ack_seq.to_be_bytes());
    tcp[12] = 5 << 4;
    tcp[13] = flags;
    let (src, dst) = (meta.dst, meta.src);
    let c = finish(sum(&tcp, pseudo_header(meta.family, &src, &dst, proto::TCP, 20)));
    tcp[16..18].copy_from_slice(&c.to_be_bytes());
    Some(ip(meta.family, &src, &dst, proto::TCP, 0, &tcp))
}

/// The IP packet of an ICMP (IPv4) or ICMPv6 error of `(type, code)` quoting `frame`'s IP
/// packet.
fn error(
    frame: &[u8],
    meta: &PacketMeta,
    kind: (u8, u8),
    from: Option<[u8; 16]>,
) -> Option<Vec<u8>> {
    let v6 = meta.family == Family::V6;
    // No error about an error, nor about a packet to many hosts.
    let quoted_proto = if v6 { proto::ICMPV6 } else { proto::ICMP };
    if meta.proto == quoted_proto && icmp::is_error(meta.icmp_type, v6) {
        return None;
    }
    let multicast =
        if v6 { meta.dst[0] == 0xff } else { meta.dst[0] >= 224 || meta.dst[..4] == [255; 4] };
    if multicast {
        return None;
    }
    let l3 = usize::from(meta.l3_offset);
    let end = frame.len().min(l3 + meta.ip_wire_len as usize);
    let original = frame.get(l3..end)?;
    let (limit, header) = if v6 { (1280, 40) } else { (576, 20) };
    let quoted = &original[..original.len().min(limit - header - 8)];
    let mut msg = Vec::with_capacity(8 + quoted.len());
    msg.extend_from_slice(&[kind.0, kind.1, 0, 0, 0, 0, 0, 0]);
    msg.extend_from_slice(quoted);
    let src = from.unwrap_or(meta.dst);
    let dst = meta.src;
    let c = if v6 {
        finish(sum(&msg, pseudo_header(Family::V6, &src, &dst, proto::ICMPV6, msg.len() as u32)))
    } else {
        finish(sum(&msg, 0))
    };
    msg[2..4].copy_from_slice(&c.to_be_bytes());
    let tos = if v6 { 0 } else { (frame.get(l3 + 1).copied().unwrap_or(0) & 0x1e) | 0xc0 };
    Some(ip(meta.family, &src, &dst, quoted_proto, tos, &msg))
}

/// An IPv4 or IPv6 packet around `payload`: TTL 64, IPv4 "don't fragment" for a reset.
fn ip(family: Family, src: &[u8; 16], dst: &[u8; 16], p: u8, tos: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(40 + payload.len());
    if family == Family::V6 {
        out.extend_from_slice(&[0x60, 0, 0, 0]);
        out.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        out.extend_from_slice(&[p, 64]);
        out.extend_from_slice(src);
        out.extend_from_slice(dst);
    } else {
        let total = (20 + payload.len()) as u16;
        let df: u16 = if p == proto::TCP { 0x4000 } else { 0 };
        let mut h = [0u8; 20];
        h[0] = 0x45;
        h[1] = tos;
        h[2..4].copy_from_slice(&total.to_be_bytes());
        h[6..8].copy_from_slice(&df.to_be_bytes());
        h[8] = 64;
        h[9] = p;
        h[12..16].copy_from_slice(&src[..4]);
        h[16..20].copy_from_slice(&dst[..4]);
        let c = finish(sum(&h, 0));
        h[10..12].copy_from_slice(&c.to_be_bytes());
        out.extend_from_slice(&h);
    }
    out.extend_from_slice(payload);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn syn(flags: u8, seq: u32, ack: u32, payload: usize) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 20 + payload];
        f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        f[14] = 0x45;
        f[16..18].copy_from_slice(&((40 + payload) as u16).to_be_bytes());
        f[22] = 64;
        f[23] = 6;
        f[26..30].copy_from_slice(&[10, 66, 1, 2]);
        f[30..34].copy_from_slice(&[10, 66, 2, 2]);
        f[34..36].copy_from_slice(&40000u16.to_be_bytes());
        f[36..38].copy_from_slice(&9999u16.to_be_bytes());
        f[38..42].copy_from_slice(&seq.to_be_bytes());
        f[42..46].copy_from_slice(&ack.to_be_bytes());
        f[46] = 0x50;
        f[47] = flags;
        f
    }

    #[test]
    fn a_reset_answers_a_syn_as_linux_does() {
        let f = syn(0x02, 1000, 0, 0);
        let m = PacketMeta::parse(LinkType::Ethernet, &f);
        let r = reject_reply(LinkType::Ethernet, &f, &m, RejectWith::TcpReset, None).unwrap();
        assert_eq!((&r[0..6], &r[6..12]), (&f[6..12], &f[0..6]), "MACs swapped");
        let rm = PacketMeta::parse(LinkType::Ethernet, &r);
        assert_eq!((rm.src, rm.dst, rm.sport, rm.dport), (m.dst, m.src, 9999, 40000));
        assert_eq!((rm.tcp.flags, rm.tcp.seq, rm.tcp.ack), (0x14, 0, 1001));
        assert_eq!(rm.ttl, 64);
        let c = rm.checksums(&r);
        assert_eq!((c.ip, c.l4), (rampart_wire::Checksum::Good, rampart_wire::Checksum::Good));
        // A segment with an ACK: the reset takes its sequence number from it, and no ACK.
        let f = syn(0x18, 5000, 777, 10);
        let m = PacketMeta::parse(LinkType::Ethernet, &f);
        let r = reject_reply(LinkType::Ethernet, &f, &m, RejectWith::TcpReset, None).unwrap();
        let rm = PacketMeta::parse(LinkType::Ethernet, &r);
        assert_eq!((rm.tcp.flags, rm.tcp.seq), (0x04, 777));
        // No reset answers a reset.
        let f = syn(0x04, 5000, 0, 0);
        let m = PacketMeta::parse(LinkType::Ethernet, &f);
        assert!(reject_reply(LinkType::Ethernet, &f, &m, RejectWith::TcpReset, None).is_none());
    }

    #[test]
    fn an_icmp_error_quotes_the_packet() {
        let f = syn(0x02, 1000, 0, 600);
        let m = PacketMeta::parse(LinkType::Ethernet, &f);
        let from = {
            let mut a = [0u8; 16];
            a[..4].copy_from_slice(&[10, 66, 1, 1]);
            a
        };
        let r =
            reject_reply(LinkType::Ethernet, &f, &m, RejectWith::default(), Some(from)).unwrap();
        let rm = PacketMeta::parse(LinkType::Ethernet, &r);
        assert_eq!((rm.proto, rm.icmp_type, rm.icmp_code), (proto::ICMP, 3, 3));
        assert_eq!((rm.src, rm.dst), (from, m.src));
        assert_eq!(r.len() - 14, 576, "as much of the packet as fits in 576 bytes");
        let q = rm.icmp_quote(&r).unwrap();
        assert_eq!((q.src, q.dst, q.sport, q.dport), (m.src, m.dst, 40000, 9999));
        let c = rm.checksums(&r);
        assert_eq!((c.ip, c.l4), (rampart_wire::Checksum::Good, rampart_wire::Checksum::Good));
        // No error about an error.
        assert!(reject_reply(LinkType::Ethernet, &r, &rm, RejectWith::default(), None).is_none());
    }
}
