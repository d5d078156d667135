//! Tunnels: the packet inside IP-in-IP, GRE, VXLAN, GTP-U and CAPWAP data
//! ([`PacketMeta::decapsulate`]).
//!
//! Each is read from its specification, one level deep:
//! - IP in IP: IPv4 or IPv6 carried as IP protocol 4 (RFC 2003) or 41 (RFC 2473, 6in4 as
//!   RFC 4213), whatever the outer version;
//! - GRE version 0 (RFC 2784, RFC 2890's key and sequence number): protocol type IPv4, IPv6,
//!   transparent Ethernet bridging (0x6558, as NVGRE), or ERSPAN type II (0x88BE, an 8-byte
//!   header) and type III (0x22EB, 12 bytes plus its optional 8-byte platform subheader) before
//!   an Ethernet frame; and version 1, PPTP's enhanced GRE (RFC 2637), carrying PPP with IPv4 or
//!   IPv6; a GRE header with routing present (RFC 1701) is not followed;
//! - VXLAN (RFC 7348): UDP destination port 4789 with the I flag, then an Ethernet frame;
//! - GTP-U (3GPP TS 29.281): UDP port 2152, version 1, a G-PDU (message type 255), its optional
//!   sequence number, N-PDU number and extension header chain, then IPv4 or IPv6;
//! - CAPWAP data (RFC 5415, RFC 5416): UDP port 5247, a plain (not DTLS) header that is not a
//!   fragment, then an 802.3 frame, or with the T flag an IEEE 802.11 data frame (its frame
//!   control field in either byte order, as access points send it) whose LLC/SNAP header gives
//!   the EtherType.

use super::*;

/// How a packet reached the fields that describe it ([`PacketMeta::tunnel`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Tunnel {
    /// Not inside a tunnel (or not decapsulated).
    #[default]
    None = 0,
    /// IPv4 or IPv6 inside IP (protocol 4 or 41).
    IpInIp = 1,
    /// Generic Routing Encapsulation (with ERSPAN).
    Gre = 2,
    /// VXLAN.
    Vxlan = 3,
    /// GTP-U (mobile user plane).
    GtpU = 4,
    /// CAPWAP data channel (wireless access points).
    Capwap = 5,
}

impl Tunnel {
    /// The name used in records: `ip-in-ip`, `gre`, `vxlan`, `gtp-u`, `capwap` (empty for none).
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "",
            Self::IpInIp => "ip-in-ip",
            Self::Gre => "gre",
            Self::Vxlan => "vxlan",
            Self::GtpU => "gtp-u",
            Self::Capwap => "capwap",
        }
    }

    /// The tunnel of a [`Tunnel::code`], if it is one.
    pub fn from_code(c: u8) -> Option<Self> {
        Some(match c {
            0 => Self::None,
            1 => Self::IpInIp,
            2 => Self::Gre,
            3 => Self::Vxlan,
            4 => Self::GtpU,
            5 => Self::Capwap,
            _ => return None,
        })
    }

    /// Its number (0 for none), as flow keys keep it.
    pub fn code(self) -> u8 {
        self as u8
    }
}

/// UDP ports of the tunnels carried over UDP.
const VXLAN_PORT: u16 = 4789;
const GTPU_PORT: u16 = 2152;
const CAPWAP_DATA_PORT: u16 = 5247;

/// What a tunnel header leads to.
enum Inner {
    /// An IP packet (its version nibble says which) at this offset.
    Ip(usize),
    /// An Ethernet frame at this offset.
    Ethernet(usize),
    /// An EtherType, and the offset of what it describes.
    EtherType(u16, usize),
}

/// The GRE header at `off`: where its payload starts and what it is.
fn gre(f: &[u8], off: usize) -> Option<Inner> {
    let flags = be16(f, off)?;
    let (checksum, routing, key, seq) =
        (flags & 0x8000 != 0, flags & 0x4000 != 0, flags & 0x2000 != 0, flags & 0x1000 != 0);
    let proto = be16(f, off + 2)?;
    if flags & 0x7 == 1 && proto == 0x880b && key && !checksum && !routing {
        // PPTP's enhanced GRE (RFC 2637): the key word, the sequence and acknowledgment numbers
        // when present, then a PPP frame.
        let ack = flags & 0x0080 != 0;
        return ppp(f, off + 8 + 4 * (usize::from(seq) + usize::from(ack)));
    }
    if flags & 0x7 != 0 || routing {
        // Other versions, and routing (RFC 1701), are not followed.
        return None;
    }
    let body = off + 4 + 4 * (usize::from(checksum) + usize::from(key) + usize::from(seq));
    match proto {
        ethertype::IPV4 | ethertype::IPV6 => Some(Inner::Ip(body)),
        0x6558 => Some(Inner::Ethernet(body)),
        // ERSPAN type II: version 1 in the first nibble, an 8-byte header.
        0x88be if f.get(body).is_some_and(|b| b >> 4 == 1) => Some(Inner::Ethernet(body + 8)),
        // ERSPAN type III: version 2, 12 bytes, then 8 more when its O flag (last bit) is set.
        0x22eb if f.get(body).is_some_and(|b| b >> 4 == 2) => {
            let o = f.get(body + 11)? & 1 != 0;
            Some(Inner::Ethernet(body + 12 + 8 * usize::from(o)))
        }
        _ => None,
    }
}

/// A PPP frame at `off` (RFC 1661, with RFC 1662's address and control bytes when present and
/// the protocol field compressed or not): where its IPv4 or IPv6 packet starts.
fn ppp(f: &[u8], mut off: usize) -> Option<Inner> {
    if f.get(off..off + 2)? == [0xff, 0x03] {
        off += 2;
    }
    let first = *f.get(off)?;
    let (proto, len) = if first & 1 == 1 { (u16::from(first), 1) } else { (be16(f, off)?, 2) };
    match proto {
        0x21 | 0x57 => Some(Inner::Ip(off + len)),
        _ => None,
    }
}

/// The GTP-U header at `off` of a G-PDU: where the user's IP packet starts.
fn gtpu(f: &[u8], off: usize) -> Option<Inner> {
    let b0 = *f.get(off)?;
    // Version 1, protocol type GTP, a G-PDU.
    if b0 >> 5 != 1 || b0 & 0x10 == 0 || *f.get(off + 1)? != 0xff {
        return None;
    }
    let mut at = off + 8;
    if b0 & 0x07 != 0 {
        // Sequence number, N-PDU number and the next extension header's type.
        let mut next = *f.get(at + 3)?;
        at += 4;
        let mut hops = 0;
        while b0 & 0x04 != 0 && next != 0 {
            // Each extension header: its length in 4-octet units, content, next type.
            let len = usize::from(*f.get(at)?) * 4;
            hops += 1;
            if len == 0 || hops > 8 {
                return None;
            }
            next = *f.get(at + len - 1)?;
            at += len;
        }
    }
    Some(Inner::Ip(at))
}

/// The CAPWAP header at `off` of a data packet: where the frame it carries starts.
fn capwap(f: &[u8], off: usize) -> Option<Inner> {
    let w = be32(f, off)?;
    // Preamble: version 0, type 0 (a CAPWAP header, not DTLS).
    if w >> 24 != 0 {
        return None;
    }
    let hlen = ((w >> 19) & 0x1f) as usize * 4;
    let wbid = (w >> 9) & 0x1f;
    let (native, fragment) = (w & 0x100 != 0, w & 0x80 != 0);
    if hlen < 8 || fragment {
        return None;
    }
    let body = off + hlen;
    if !native {
        return Some(Inner::Ethernet(body));
    }
    if wbid != 1 {
        return None;
    }
    // An IEEE 802.11 data frame (type 2) with a body, then LLC/SNAP. Some access points send
    // the frame control field with its two bytes swapped (Wireshark's "swap frame control"):
    // take the order in which it is a data frame.
    let (a, b) = (*f.get(body)?, *f.get(body + 1)?);
    let data = |fc0: u8| (fc0 >> 2) & 0x3 == 2;
    let (fc0, fc1) = if data(a) { (a, b) } else { (b, a) };
    let subtype = fc0 >> 4;
    if !data(fc0) || subtype & 0x4 != 0 {
        return None;
    }
    let qos = subtype & 0x8 != 0;
    let mut at = body + 24;
    if fc1 & 0x3 == 0x3 {
        at += 6;
    }
    if qos {
        at += 2;
        if fc1 & 0x80 != 0 {
            at += 4;
        }
    }
    if f.get(at..at + 6)? != [0xaa, 0xaa, 0x03, 0, 0, 0] {
        return None;
    }
    Some(Inner::EtherType(be16(f, at + 6)?, at + 8))
}

impl PacketMeta {
    /// When this packet is the outer packet of a tunnel rampart reads (see the module docs),
    /// parses the packet inside it: every field then describes the inner packet (its VLAN tags
    /// added to the outer ones) and [`PacketMeta::tunnel`] says which tunnel it came through.
    /// One level only; a packet that is not a well-formed tunnel, or whose inner packet is not
    /// IP, keeps its outer fields. Never panics, never allocates.
    #[inline]
    pub fn decapsulate(&mut self, f: &[u8]) {
        // Most packets are not a tunnel's: tell them by protocol and port, inline.
        let maybe = match self.proto {
            proto::TCP => false,
            proto::UDP => {
                matches!(self.dport, VXLAN_PORT | GTPU_PORT | CAPWAP_DATA_PORT)
                    || matches!(self.sport, GTPU_PORT | CAPWAP_DATA_PORT)
            }
            p => matches!(p, proto::IPIP | proto::IPV6 | proto::GRE),
        };
        if maybe {
            self.decapsulate_tunnel(f);
        }
    }

    /// [`PacketMeta::decapsulate`] once the protocol or port says it may be a tunnel.
    fn decapsulate_tunnel(&mut self, f: &[u8]) {
        if self.status != Status::Ok || self.is_fragment() || self.tunnel != Tunnel::None {
            return;
        }
        let l4 = usize::from(self.l4_offset);
        let found = match self.proto {
            proto::IPIP | proto::IPV6 => Some((Tunnel::IpInIp, Inner::Ip(l4))),
            proto::GRE => gre(f, l4).map(|i| (Tunnel::Gre, i)),
            proto::UDP => {
                let body = usize::from(self.payload_offset);
                let (sp, dp) = (self.sport, self.dport);
                if dp == VXLAN_PORT {
                    f.get(body)
                        .is_some_and(|b| b & 0x08 != 0)
                        .then_some((Tunnel::Vxlan, Inner::Ethernet(body + 8)))
                } else if dp == GTPU_PORT || sp == GTPU_PORT {
                    gtpu(f, body).map(|i| (Tunnel::GtpU, i))
                } else if dp == CAPWAP_DATA_PORT || sp == CAPWAP_DATA_PORT {
                    capwap(f, body).map(|i| (Tunnel::Capwap, i))
                } else {
                    None
                }
            }
            _ => None,
        };
        let Some((tunnel, inner)) = found else { return };
        let mut m = PacketMeta { vlan_count: self.vlan_count, vlan: self.vlan, ..Self::default() };
        match inner {
            Inner::Ip(off) => match f.get(off).map(|b| b >> 4) {
                Some(4) => m.ipv4(f, off),
                Some(6) => m.ipv6(f, off),
                _ => return,
            },
            Inner::Ethernet(off) => match be16(f, off + 12) {
                Some(et) => m.ethertype_chain(f, et, off + ethernet::HEADER_LEN),
                None => return,
            },
            Inner::EtherType(et, off) => m.ethertype_chain(f, et, off),
        }
        if m.family == Family::None {
            return;
        }
        m.tunnel = tunnel;
        *self = m;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An inner IPv4 UDP packet 10.9.0.1:5353 -> 10.9.0.2:53 with 4 payload bytes.
    fn inner_v4() -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 32, 0, 1, 0, 0, 64, 17, 0, 0, 10, 9, 0, 1, 10, 9, 0, 2];
        p.extend_from_slice(&[0x14, 0xe9, 0, 53, 0, 12, 0, 0, 1, 2, 3, 4]);
        p
    }

    /// An inner IPv6 TCP SYN [2001:db8::1]:40000 -> [2001:db8::2]:443.
    fn inner_v6() -> Vec<u8> {
        let mut p = vec![0x60, 0, 0, 0, 0, 20, 6, 64];
        let mut a = [0u8; 16];
        a[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        a[15] = 1;
        p.extend_from_slice(&a);
        a[15] = 2;
        p.extend_from_slice(&a);
        p.extend_from_slice(&[0x9c, 0x40, 0x01, 0xbb, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02]);
        p.extend_from_slice(&[0xff, 0xff, 0, 0, 0, 0]);
        p
    }

    fn ether(et: u16, body: &[u8]) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
        f.extend_from_slice(&et.to_be_bytes());
        f.extend_from_slice(body);
        f
    }

    /// An outer IPv4 packet 192.0.2.1 -> 192.0.2.2 of protocol `p` around `body`.
    fn outer_v4(p: u8, body: &[u8]) -> Vec<u8> {
        let len = (20 + body.len()) as u16;
        let mut ip = vec![0x45, 0, 0, 0, 0, 1, 0, 0, 64, p, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2];
        ip[2..4].copy_from_slice(&len.to_be_bytes());
        ip.extend_from_slice(body);
        ether(ethertype::IPV4, &ip)
    }

    fn outer_udp(sport: u16, dport: u16, body: &[u8]) -> Vec<u8> {
        let mut u = Vec::new();
        u.extend_from_slice(&sport.to_be_bytes());
        u.extend_from_slice(&dport.to_be_bytes());
        u.extend_from_slice(&((8 + body.len()) as u16).to_be_bytes());
        u.extend_from_slice(&[0, 0]);
        u.extend_from_slice(body);
        outer_v4(proto::UDP, &u)
    }

    fn decap(f: &[u8]) -> PacketMeta {
        let mut m = PacketMeta::parse(LinkType::Ethernet, f);
        assert_eq!(m.status, Status::Ok, "outer packet");
        m.decapsulate(f);
        m
    }

    fn is_inner_v4(m: &PacketMeta, t: Tunnel) {
        assert_eq!(m.tunnel, t);
        assert_eq!((m.family, m.proto, m.sport, m.dport), (Family::V4, proto::UDP, 5353, 53));
        assert_eq!(&m.src[..4], &[10, 9, 0, 1]);
        assert_eq!(m.payload_wire_len, 4);
    }

    fn is_inner_v6(m: &PacketMeta, t: Tunnel) {
        assert_eq!(m.tunnel, t);
        assert_eq!((m.family, m.proto, m.sport, m.dport), (Family::V6, proto::TCP, 40000, 443));
    }

    #[test]
    fn ip_in_ip_either_version() {
        is_inner_v4(&decap(&outer_v4(proto::IPIP, &inner_v4())), Tunnel::IpInIp);
        is_inner_v6(&decap(&outer_v4(proto::IPV6, &inner_v6())), Tunnel::IpInIp);
    }

    #[test]
    fn gre_with_key_and_sequence_and_ethernet_and_erspan() {
        let mut g = vec![0x30, 0, 0x08, 0, 0, 0, 0, 7, 0, 0, 0, 1];
        g.extend_from_slice(&inner_v4());
        is_inner_v4(&decap(&outer_v4(proto::GRE, &g)), Tunnel::Gre);
        let mut g = vec![0, 0, 0x65, 0x58];
        g.extend_from_slice(&ether(ethertype::IPV6, &inner_v6()));
        is_inner_v6(&decap(&outer_v4(proto::GRE, &g)), Tunnel::Gre);
        let mut g = vec![0x10, 0, 0x88, 0xbe, 0, 0, 0, 1, 0x10, 0, 0, 0, 0, 0, 0, 0];
        g.extend_from_slice(&ether(ethertype::IPV4, &inner_v4()));
        is_inner_v4(&decap(&outer_v4(proto::GRE, &g)), Tunnel::Gre);
        // ERSPAN III with its platform subheader (O flag).
        let mut g = vec![0, 0, 0x22, 0xeb, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        g.extend_from_slice(&[0; 8]);
        g.extend_from_slice(&ether(ethertype::IPV4, &inner_v4()));
        is_inner_v4(&decap(&outer_v4(proto::GRE, &g)), Tunnel::Gre);
        // PPTP: key, sequence and acknowledgment, then PPP with address and control bytes, or
        // with the protocol field compressed.
        let mut g = vec![0x30, 0x81, 0x88, 0x0b, 0, 32, 0, 7, 0, 0, 0, 1, 0, 0, 0, 1];
        g.extend_from_slice(&[0xff, 0x03, 0x00, 0x21]);
        g.extend_from_slice(&inner_v4());
        is_inner_v4(&decap(&outer_v4(proto::GRE, &g)), Tunnel::Gre);
        let mut g = vec![0x20, 0x01, 0x88, 0x0b, 0, 32, 0, 7, 0x57];
        g.extend_from_slice(&inner_v6());
        is_inner_v6(&decap(&outer_v4(proto::GRE, &g)), Tunnel::Gre);
        // PPP carrying LCP, and GRE with routing present, are not followed.
        let mut g = vec![0x20, 0x01, 0x88, 0x0b, 0, 32, 0, 7, 0xc0, 0x21];
        g.extend_from_slice(&inner_v4());
        assert_eq!(decap(&outer_v4(proto::GRE, &g)).tunnel, Tunnel::None);
        let mut g = vec![0x40, 0, 0x08, 0, 0, 0, 0, 0];
        g.extend_from_slice(&inner_v4());
        assert_eq!(decap(&outer_v4(proto::GRE, &g)).tunnel, Tunnel::None);
    }

    #[test]
    fn vxlan_needs_its_port_and_i_flag() {
        let mut v = vec![0x08, 0, 0, 0, 0, 0, 42, 0];
        v.extend_from_slice(&ether(ethertype::IPV4, &inner_v4()));
        is_inner_v4(&decap(&outer_udp(50000, 4789, &v)), Tunnel::Vxlan);
        v[0] = 0;
        assert_eq!(decap(&outer_udp(50000, 4789, &v)).tunnel, Tunnel::None);
        v[0] = 0x08;
        let m = decap(&outer_udp(50000, 4790, &v));
        assert_eq!((m.tunnel, m.dport), (Tunnel::None, 4790));
    }

    #[test]
    fn gtpu_g_pdu_with_extension_headers() {
        let mut g = vec![0x30, 0xff, 0, 0, 0, 0, 0, 1];
        g.extend_from_slice(&inner_v6());
        is_inner_v6(&decap(&outer_udp(2152, 2152, &g)), Tunnel::GtpU);
        // E flag: sequence number word, then a PDU session container (type 0x85, one word).
        let mut g = vec![0x34, 0xff, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x85, 1, 0x10, 0x09, 0];
        g.extend_from_slice(&inner_v4());
        is_inner_v4(&decap(&outer_udp(40000, 2152, &g)), Tunnel::GtpU);
        // An echo request (type 1) carries no user packet.
        let mut g = vec![0x32, 0x01, 0, 4, 0, 0, 0, 0, 0, 1, 0, 0];
        g.extend_from_slice(&inner_v4());
        assert_eq!(decap(&outer_udp(2152, 2152, &g)).tunnel, Tunnel::None);
    }

    #[test]
    fn capwap_data_with_ethernet_or_80211() {
        // HLEN 2 words, WBID 1, T clear: an 802.3 frame.
        let mut c = vec![0, 0x10, 0x02, 0, 0, 0, 0, 0];
        c.extend_from_slice(&ether(ethertype::IPV4, &inner_v4()));
        is_inner_v4(&decap(&outer_udp(5247, 12222, &c)), Tunnel::Capwap);
        // T set: an 802.11 QoS data frame to the DS, LLC/SNAP, IPv6.
        let mut c = vec![0, 0x10, 0x03, 0, 0, 0, 0, 0];
        c.extend_from_slice(&[0x88, 0x01]);
        c.extend_from_slice(&[0; 22]);
        c.extend_from_slice(&[0, 0]);
        c.extend_from_slice(&[0xaa, 0xaa, 0x03, 0, 0, 0, 0x86, 0xdd]);
        c.extend_from_slice(&inner_v6());
        is_inner_v6(&decap(&outer_udp(12222, 5247, &c)), Tunnel::Capwap);
        // The same with the frame control bytes swapped.
        c.swap(8, 9);
        is_inner_v6(&decap(&outer_udp(12222, 5247, &c)), Tunnel::Capwap);
        // DTLS (preamble type 1) is not read.
        let mut c = vec![1, 0x10, 0x02, 0, 0, 0, 0, 0];
        c.extend_from_slice(&ether(ethertype::IPV4, &inner_v4()));
        assert_eq!(decap(&outer_udp(5247, 12222, &c)).tunnel, Tunnel::None);
    }

    #[test]
    fn a_cut_or_foreign_inner_packet_keeps_the_outer_one() {
        let mut v = vec![0x08, 0, 0, 0, 0, 0, 42, 0];
        v.extend_from_slice(&ether(0x0806, &[0; 28]));
        let f = outer_udp(50000, 4789, &v);
        let m = decap(&f);
        assert_eq!((m.tunnel, m.dport), (Tunnel::None, 4789));
        assert_eq!(m, PacketMeta::parse(LinkType::Ethernet, &f));
        for cut in 0..f.len() {
            let mut m = PacketMeta::parse(LinkType::Ethernet, &f[..cut]);
            m.decapsulate(&f[..cut]);
            assert_eq!(m.tunnel, Tunnel::None);
        }
        // Decapsulating twice is once.
        let f = outer_v4(proto::IPIP, &inner_v4());
        let mut m = decap(&f);
        m.decapsulate(&f);
        is_inner_v4(&m, Tunnel::IpInIp);
    }
}
