//! ICMP (RFC 792) and ICMPv6 (RFC 4443) headers, with the echo identifier.

/// Length of the ICMP header through the echo identifier and sequence number.
pub const HEADER_LEN: usize = 8;

/// A borrowed view of an ICMP or ICMPv6 message; [`Message::new`] checks the 8 bytes.
#[derive(Clone, Copy, Debug)]
pub struct Message<'a> {
    bytes: &'a [u8],
}

impl<'a> Message<'a> {
    /// A view of `bytes`, or `None` when fewer than [`HEADER_LEN`] bytes are present.
    #[inline]
    pub fn new(bytes: &'a [u8]) -> Option<Self> {
        (bytes.len() >= HEADER_LEN).then_some(Self { bytes })
    }

    /// Message type.
    #[inline]
    pub fn kind(&self) -> u8 {
        self.bytes[0]
    }

    /// Message code.
    #[inline]
    pub fn code(&self) -> u8 {
        self.bytes[1]
    }

    /// Identifier of an echo request or reply (meaningless for other types).
    #[inline]
    pub fn echo_id(&self) -> u16 {
        u16::from_be_bytes([self.bytes[4], self.bytes[5]])
    }

    /// Sequence number of an echo request or reply.
    #[inline]
    pub fn echo_seq(&self) -> u16 {
        u16::from_be_bytes([self.bytes[6], self.bytes[7]])
    }
}

/// Whether `kind` is an echo request or reply: ICMP 0/8, or ICMPv6 128/129 when `v6`.
#[inline]
pub fn is_echo(kind: u8, v6: bool) -> bool {
    if v6 { matches!(kind, 128 | 129) } else { matches!(kind, 0 | 8) }
}

/// Whether `kind` is an error message, which quotes the packet that caused it: ICMP destination
/// unreachable, source quench, redirect, time exceeded and parameter problem (3, 4, 5, 11,
/// 12), or any ICMPv6 type below 128 when `v6` (RFC 4443).
#[inline]
pub fn is_error(kind: u8, v6: bool) -> bool {
    if v6 { kind < 128 } else { matches!(kind, 3 | 4 | 5 | 11 | 12) }
}

/// The request or reply an ICMP (or ICMPv6 when `v6`) query type pairs with: echo, timestamp,
/// information and address mask (ICMPv6: echo and node information), or `None` for types
/// that have no counterpart (errors, router messages, ...).
#[inline]
pub fn inverse(kind: u8, v6: bool) -> Option<u8> {
    let pairs: &[(u8, u8)] =
        if v6 { &[(128, 129), (139, 140)] } else { &[(8, 0), (13, 14), (15, 16), (17, 18)] };
    pairs.iter().find_map(|&(a, b)| match kind {
        k if k == a => Some(b),
        k if k == b => Some(a),
        _ => None,
    })
}

/// What the inner header of a quote holds after its addresses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum QuoteKind {
    /// Ports (TCP, UDP, UDP-Lite, SCTP, DCCP) in [`Quote::sport`] and [`Quote::dport`].
    Ports,
    /// An ICMP or ICMPv6 header: [`Quote::icmp_type`], [`Quote::icmp_code`] and [`Quote::id`]
    /// (the identifier field, meaningful for queries).
    Icmp,
    /// Another protocol: the quote is its address pair and protocol.
    #[default]
    Other,
}

/// The packet an ICMP or ICMPv6 error quotes, as far as a flow lookup needs it: found by
/// [`crate::PacketMeta::icmp_quote`]. Addresses and ports are those of the quoted packet, so
/// the quoted packet went from `src` to `dst` and the error travels the other way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Quote {
    /// The quoted packet's protocol (after IPv6 extension headers).
    pub proto: u8,
    /// What follows the addresses.
    pub kind: QuoteKind,
    /// The quoted packet's source address (IPv4 in the first 4 bytes).
    pub src: [u8; 16],
    /// The quoted packet's destination address.
    pub dst: [u8; 16],
    /// Source port ([`QuoteKind::Ports`]), else 0.
    pub sport: u16,
    /// Destination port ([`QuoteKind::Ports`]), else 0.
    pub dport: u16,
    /// The quoted ICMP message's type ([`QuoteKind::Icmp`]).
    pub icmp_type: u8,
    /// The quoted ICMP message's code.
    pub icmp_code: u8,
    /// The quoted ICMP message's identifier.
    pub id: u16,
}

/// Reads the quoted packet of an error whose body (after the 8-byte ICMP header) is `body`; the
/// quote's IP version is the outer packet's (`v6`). `None` when the quoted headers are cut
/// short before the ports (or the ICMP identifier), or the quote is a non-first fragment.
pub(crate) fn read_quote(body: &[u8], v6: bool) -> Option<Quote> {
    let mut q = Quote::default();
    let (proto, l4) = if v6 {
        let ip = crate::ipv6::Packet::new(body)?;
        q.src = ip.src();
        q.dst = ip.dst();
        let walk = crate::ipv6::walk_extensions(body, ip.next_header());
        if walk.later_fragment || walk.end != crate::ipv6::ExtEnd::Done {
            return None;
        }
        (walk.protocol, walk.offset)
    } else {
        let ip = crate::ipv4::Packet::new(body)?;
        if ip.frag_offset() != 0 {
            return None;
        }
        q.src[..4].copy_from_slice(&ip.src());
        q.dst[..4].copy_from_slice(&ip.dst());
        (ip.protocol(), ip.header_len())
    };
    q.proto = proto;
    let l4 = body.get(l4..)?;
    match proto {
        crate::proto::TCP
        | crate::proto::UDP
        | crate::proto::UDPLITE
        | crate::proto::SCTP
        | crate::proto::DCCP => {
            q.kind = QuoteKind::Ports;
            q.sport = crate::be16(l4, 0)?;
            q.dport = crate::be16(l4, 2)?;
        }
        crate::proto::ICMP | crate::proto::ICMPV6 => {
            let m = Message::new(l4)?;
            q.kind = QuoteKind::Icmp;
            q.icmp_type = m.kind();
            q.icmp_code = m.code();
            q.id = m.echo_id();
        }
        _ => {}
    }
    Some(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_and_inverses() {
        for t in [3, 4, 5, 11, 12] {
            assert!(is_error(t, false));
        }
        assert!(!is_error(8, false) && !is_error(0, false) && !is_error(13, false));
        assert!(is_error(1, true) && is_error(127, true) && !is_error(128, true));
        assert_eq!(inverse(8, false), Some(0));
        assert_eq!(inverse(0, false), Some(8));
        assert_eq!(inverse(17, false), Some(18));
        assert_eq!(inverse(3, false), None);
        assert_eq!(inverse(128, true), Some(129));
        assert_eq!(inverse(140, true), Some(139));
        assert_eq!(inverse(8, true), None);
    }

    #[test]
    fn deconstruct() {
        let b = [8, 0, 0xf7, 0xff, 0x12, 0x34, 0x00, 0x07];
        let m = Message::new(&b).unwrap();
        assert_eq!((m.kind(), m.code(), m.echo_id(), m.echo_seq()), (8, 0, 0x1234, 7));
        assert!(is_echo(8, false) && is_echo(129, true) && !is_echo(3, false));
        assert!(!is_echo(8, true));
        assert!(Message::new(&b[..7]).is_none());
    }
}
