use rampart_wire::{Family, PacketMeta, proto};

/// What the port fields of a [`FlowKey`] hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum KeyKind {
    /// Transport ports (TCP, UDP, SCTP, DCCP, UDP-Lite).
    Ports = 0,
    /// An ICMP or ICMPv6 echo identifier, in both port fields.
    Echo = 1,
    /// No ports: the flow is the address pair and protocol.
    Pair = 2,
}

/// Which endpoint of a [`FlowKey`] sent a packet: `A` is the lower (address, port).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Side {
    /// The packet came from endpoint A.
    #[default]
    A,
    /// The packet came from endpoint B.
    B,
}

/// Which way a packet goes relative to its flow's initiator (the sender of the first packet
/// seen), as conntrack's ORIGINAL and REPLY directions. Records, and every stage that keeps
/// per-flow state, index their two directions by it (`dir as usize`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Dir {
    /// From the initiator to the responder.
    #[default]
    Original = 0,
    /// From the responder back to the initiator.
    Reply = 1,
}

impl Dir {
    /// The other direction.
    #[inline]
    pub fn reverse(self) -> Self {
        match self {
            Self::Original => Self::Reply,
            Self::Reply => Self::Original,
        }
    }
}

/// A bidirectional flow key: 40 bytes, no padding left uninitialised, the same for both
/// directions of a flow. IPv4 addresses sit in the first 4 bytes of their 16-byte slots and
/// `family` keeps them apart from IPv6.
#[derive(Clone, Copy, Debug, Default, Eq, PartialOrd, Ord)]
#[repr(C, align(8))]
pub struct FlowKey {
    /// Address of endpoint A (the lower endpoint).
    pub addr_a: [u8; 16],
    /// Address of endpoint B.
    pub addr_b: [u8; 16],
    /// Port (or echo identifier) of endpoint A.
    pub port_a: u16,
    /// Port (or echo identifier) of endpoint B.
    pub port_b: u16,
    /// IP protocol number.
    pub proto: u8,
    /// 4 or 6.
    pub family: u8,
    /// What the ports mean, as a [`KeyKind`] value.
    pub kind: u8,
    /// The tunnel the packets came out of ([`rampart_wire::Tunnel::code`]; 0 outside any):
    /// the same addresses and ports inside a tunnel and outside are two flows.
    pub tunnel: u8,
}

const _: () = assert!(std::mem::size_of::<FlowKey>() == 40);

impl std::hash::Hash for FlowKey {
    /// Hashes the same words [`FlowKey::words`] gives, so equal keys hash alike.
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        for w in self.words() {
            h.write_u64(w);
        }
    }
}

impl PartialEq for FlowKey {
    /// Two 128-bit and one 64-bit comparison, without branching field by field.
    #[inline]
    fn eq(&self, o: &Self) -> bool {
        let tail = |k: &Self| {
            u64::from(k.port_a)
                | u64::from(k.port_b) << 16
                | u64::from(k.proto) << 32
                | u64::from(k.family) << 40
                | u64::from(k.kind) << 48
                | u64::from(k.tunnel) << 56
        };
        (u128::from_ne_bytes(self.addr_a) ^ u128::from_ne_bytes(o.addr_a))
            | (u128::from_ne_bytes(self.addr_b) ^ u128::from_ne_bytes(o.addr_b))
            | u128::from(tail(self) ^ tail(o))
            == 0
    }
}

impl FlowKey {
    /// The key of the flow `meta` belongs to, and which side sent it; `None` for packets that
    /// are not IP.
    #[inline]
    pub fn from_meta(meta: &PacketMeta) -> Option<(Self, Side)> {
        let family = match meta.family {
            Family::None => return None,
            Family::V4 => 4,
            Family::V6 => 6,
        };
        let (kind, sp, dp) = if meta.has_ports()
            && matches!(
                meta.proto,
                proto::TCP | proto::UDP | proto::SCTP | proto::DCCP | proto::UDPLITE
            ) {
            (KeyKind::Ports, meta.sport, meta.dport)
        } else if meta.is_icmp_echo() {
            (KeyKind::Echo, meta.icmp_id, meta.icmp_id)
        } else {
            (KeyKind::Pair, 0, 0)
        };
        let (mut key, side) = Self::new(meta.src, sp, meta.dst, dp, meta.proto, family, kind);
        key.tunnel = meta.tunnel.code();
        Some((key, side))
    }

    /// A key from one packet's source and destination, put in canonical order.
    #[inline]
    pub fn new(
        src: [u8; 16],
        sport: u16,
        dst: [u8; 16],
        dport: u16,
        proto: u8,
        family: u8,
        kind: KeyKind,
    ) -> (Self, Side) {
        // One 128-bit comparison orders the addresses as their bytes would.
        let src_first = (u128::from_be_bytes(src), sport) <= (u128::from_be_bytes(dst), dport);
        let (a, pa, b, pb, side) = if src_first {
            (src, sport, dst, dport, Side::A)
        } else {
            (dst, dport, src, sport, Side::B)
        };
        let key = Self {
            addr_a: a,
            addr_b: b,
            port_a: pa,
            port_b: pb,
            proto,
            family,
            kind: kind as u8,
            tunnel: 0,
        };
        (key, side)
    }

    /// The key as five machine words, for hashing.
    #[inline]
    pub fn words(&self) -> [u64; 5] {
        let w = |b: &[u8; 16], i: usize| {
            u64::from_ne_bytes([
                b[i],
                b[i + 1],
                b[i + 2],
                b[i + 3],
                b[i + 4],
                b[i + 5],
                b[i + 6],
                b[i + 7],
            ])
        };
        let tail = u64::from(self.port_a)
            | u64::from(self.port_b) << 16
            | u64::from(self.proto) << 32
            | u64::from(self.family) << 40
            | u64::from(self.kind) << 48
            | u64::from(self.tunnel) << 56;
        [w(&self.addr_a, 0), w(&self.addr_a, 8), w(&self.addr_b, 0), w(&self.addr_b, 8), tail]
    }

    /// What the port fields mean.
    pub fn kind(&self) -> KeyKind {
        match self.kind {
            0 => KeyKind::Ports,
            1 => KeyKind::Echo,
            _ => KeyKind::Pair,
        }
    }

    /// Address of endpoint A as a std address.
    pub fn addr_a(&self) -> std::net::IpAddr {
        to_ip(self.family, &self.addr_a)
    }

    /// Address of endpoint B as a std address.
    pub fn addr_b(&self) -> std::net::IpAddr {
        to_ip(self.family, &self.addr_b)
    }
}

fn to_ip(family: u8, a: &[u8; 16]) -> std::net::IpAddr {
    if family == 4 {
        std::net::Ipv4Addr::new(a[0], a[1], a[2], a[3]).into()
    } else {
        std::net::Ipv6Addr::from(*a).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v4(last: u8) -> [u8; 16] {
        let mut a = [0; 16];
        a[..4].copy_from_slice(&[10, 0, 0, last]);
        a
    }

    #[test]
    fn both_directions_meet() {
        let (k1, s1) = FlowKey::new(v4(1), 40000, v4(2), 80, 6, 4, KeyKind::Ports);
        let (k2, s2) = FlowKey::new(v4(2), 80, v4(1), 40000, 6, 4, KeyKind::Ports);
        assert_eq!(k1, k2);
        assert_eq!((s1, s2), (Side::A, Side::B));
        assert_eq!(k1.words(), k2.words());
        assert_eq!(k1.addr_a().to_string(), "10.0.0.1");
    }

    #[test]
    fn family_and_kind_separate_keys() {
        let (a, _) = FlowKey::new(v4(1), 0, v4(2), 0, 1, 4, KeyKind::Pair);
        let (b, _) = FlowKey::new(v4(1), 0, v4(2), 0, 1, 6, KeyKind::Pair);
        let (c, _) = FlowKey::new(v4(1), 0, v4(2), 0, 1, 4, KeyKind::Echo);
        assert_ne!(a.words(), b.words());
        assert_ne!(a.words(), c.words());
        assert_eq!(b.addr_a().to_string(), "a00:1::");
    }

    proptest! {
        #[test]
        fn canonical_order_is_symmetric(s in any::<[u8; 16]>(), d in any::<[u8; 16]>(),
                                        sp in any::<u16>(), dp in any::<u16>(), p in any::<u8>()) {
            let (k1, s1) = FlowKey::new(s, sp, d, dp, p, 6, KeyKind::Ports);
            let (k2, s2) = FlowKey::new(d, dp, s, sp, p, 6, KeyKind::Ports);
            prop_assert_eq!(k1, k2);
            prop_assert!(s1 != s2 || (s, sp) == (d, dp));
        }
    }
}
