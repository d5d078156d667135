use rampart_wire::{IpFamily, PacketMeta, proto};

/// What the port fields of a [`FlowKey`] hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum KeyKind {
    /// Transport ports (TCP, UDP, SCTP, DCCP, UDP-Lite).
    #[default]
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
/// directions of a flow. IPv4 addresses sit in the first 4 bytes of their 16-byte slots,
/// the other 12 bytes zero, and the family keeps them apart from IPv6.
///
/// The fields are private so that every key is made by [`FlowKey::new`] (or
/// [`FlowKey::from_meta`]): equality and hashing read the key as five machine words
/// ([`FlowKey::words`]), which is right only while the endpoints are in canonical order and
/// an IPv4 slot's last 12 bytes are zero.
#[derive(Clone, Copy, Debug, Default, Eq, PartialOrd, Ord)]
#[repr(C, align(8))]
pub struct FlowKey {
    /// Address of endpoint A (the lower endpoint).
    addr_a: [u8; 16],
    /// Address of endpoint B.
    addr_b: [u8; 16],
    /// Port (or echo identifier) of endpoint A.
    port_a: u16,
    /// Port (or echo identifier) of endpoint B.
    port_b: u16,
    /// IP protocol number.
    proto: u8,
    /// The address family (a byte: 4 or 6).
    family: IpFamily,
    /// What the ports mean.
    kind: KeyKind,
    /// The tunnel the packets came out of ([`rampart_wire::Tunnel::code`]; 0 outside any):
    /// the same addresses and ports inside a tunnel and outside are two flows.
    tunnel: u8,
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
        (u128::from_ne_bytes(self.addr_a) ^ u128::from_ne_bytes(o.addr_a))
            | (u128::from_ne_bytes(self.addr_b) ^ u128::from_ne_bytes(o.addr_b))
            | u128::from(self.tail() ^ o.tail())
            == 0
    }
}

impl FlowKey {
    /// The key of the flow `meta` belongs to, and which side sent it; `None` for packets that
    /// are not IP.
    #[inline]
    pub fn from_meta(meta: &PacketMeta) -> Option<(Self, Side)> {
        let family = meta.family.ip()?;
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
        let (key, side) = Self::new(meta.src, sp, meta.dst, dp, meta.proto, family, kind);
        Some((key.with_tunnel(meta.tunnel.code()), side))
    }

    /// A key from one packet's source and destination, put in canonical order (outside any
    /// tunnel). An IPv4 address is read from the first 4 bytes of its slot; the other 12 are
    /// zeroed.
    #[inline]
    pub fn new(
        src: [u8; 16],
        sport: u16,
        dst: [u8; 16],
        dport: u16,
        proto: u8,
        family: IpFamily,
        kind: KeyKind,
    ) -> (Self, Side) {
        // An IPv4 slot keeps its first 4 bytes.
        const V4: [u8; 16] = [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let keep = u128::from_ne_bytes(if family == IpFamily::V4 { V4 } else { [0xff; 16] });
        let src = (u128::from_ne_bytes(src) & keep).to_ne_bytes();
        let dst = (u128::from_ne_bytes(dst) & keep).to_ne_bytes();
        // One 128-bit comparison orders the addresses as their bytes would.
        let src_first = (u128::from_be_bytes(src), sport) <= (u128::from_be_bytes(dst), dport);
        let (a, pa, b, pb, side) = if src_first {
            (src, sport, dst, dport, Side::A)
        } else {
            (dst, dport, src, sport, Side::B)
        };
        let key =
            Self { addr_a: a, addr_b: b, port_a: pa, port_b: pb, proto, family, kind, tunnel: 0 };
        (key, side)
    }

    /// The same key for packets that came out of tunnel `code` ([`rampart_wire::Tunnel::code`];
    /// 0: outside any).
    #[inline]
    pub fn with_tunnel(mut self, code: u8) -> Self {
        self.tunnel = code;
        self
    }

    /// The ports, protocol, family, kind and tunnel as one word.
    #[inline]
    fn tail(&self) -> u64 {
        u64::from(self.port_a)
            | u64::from(self.port_b) << 16
            | u64::from(self.proto) << 32
            | u64::from(self.family as u8) << 40
            | u64::from(self.kind as u8) << 48
            | u64::from(self.tunnel) << 56
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
        [
            w(&self.addr_a, 0),
            w(&self.addr_a, 8),
            w(&self.addr_b, 0),
            w(&self.addr_b, 8),
            self.tail(),
        ]
    }

    /// What the port fields mean.
    #[inline]
    pub fn kind(&self) -> KeyKind {
        self.kind
    }

    /// The address family.
    #[inline]
    pub fn family(&self) -> IpFamily {
        self.family
    }

    /// The IP protocol number.
    #[inline]
    pub fn proto(&self) -> u8 {
        self.proto
    }

    /// The tunnel the packets came out of ([`rampart_wire::Tunnel::code`]; 0 outside any).
    #[inline]
    pub fn tunnel(&self) -> u8 {
        self.tunnel
    }

    /// Endpoint A's address slot (16 bytes; IPv4 in the first 4).
    #[inline]
    pub fn addr_a_bytes(&self) -> &[u8; 16] {
        &self.addr_a
    }

    /// Endpoint B's address slot (16 bytes; IPv4 in the first 4).
    #[inline]
    pub fn addr_b_bytes(&self) -> &[u8; 16] {
        &self.addr_b
    }

    /// Endpoint A's port (or echo identifier; 0 for a [`KeyKind::Pair`] key).
    #[inline]
    pub fn port_a(&self) -> u16 {
        self.port_a
    }

    /// Endpoint B's port (or echo identifier; 0 for a [`KeyKind::Pair`] key).
    #[inline]
    pub fn port_b(&self) -> u16 {
        self.port_b
    }

    /// The address slot and port of the endpoint on `side`.
    #[inline]
    pub fn endpoint(&self, side: Side) -> (&[u8; 16], u16) {
        match side {
            Side::A => (&self.addr_a, self.port_a),
            Side::B => (&self.addr_b, self.port_b),
        }
    }

    /// Address of endpoint A as a std address.
    pub fn addr_a(&self) -> std::net::IpAddr {
        self.family.addr(&self.addr_a)
    }

    /// Address of endpoint B as a std address.
    pub fn addr_b(&self) -> std::net::IpAddr {
        self.family.addr(&self.addr_b)
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
        let (k1, s1) = FlowKey::new(v4(1), 40000, v4(2), 80, 6, IpFamily::V4, KeyKind::Ports);
        let (k2, s2) = FlowKey::new(v4(2), 80, v4(1), 40000, 6, IpFamily::V4, KeyKind::Ports);
        assert_eq!(k1, k2);
        assert_eq!((s1, s2), (Side::A, Side::B));
        assert_eq!(k1.words(), k2.words());
        assert_eq!(k1.addr_a().to_string(), "10.0.0.1");
    }

    #[test]
    fn family_and_kind_separate_keys() {
        let (a, _) = FlowKey::new(v4(1), 0, v4(2), 0, 1, IpFamily::V4, KeyKind::Pair);
        let (b, _) = FlowKey::new(v4(1), 0, v4(2), 0, 1, IpFamily::V6, KeyKind::Pair);
        let (c, _) = FlowKey::new(v4(1), 0, v4(2), 0, 1, IpFamily::V4, KeyKind::Echo);
        assert_ne!(a.words(), b.words());
        assert_ne!(a.words(), c.words());
        assert_eq!(b.addr_a().to_string(), "a00:1::");
    }

    #[test]
    fn ipv4_slots_keep_four_bytes() {
        let mut dirty = v4(1);
        dirty[4..].fill(0xaa);
        let (k, _) = FlowKey::new(dirty, 1, v4(2), 2, 17, IpFamily::V4, KeyKind::Ports);
        let (clean, _) = FlowKey::new(v4(1), 1, v4(2), 2, 17, IpFamily::V4, KeyKind::Ports);
        assert_eq!(k, clean);
        assert_eq!(k.words(), clean.words());
        assert_eq!(k.addr_a_bytes(), &v4(1));
    }

    proptest! {
        #[test]
        fn canonical_order_is_symmetric(s in any::<[u8; 16]>(), d in any::<[u8; 16]>(),
                                        sp in any::<u16>(), dp in any::<u16>(), p in any::<u8>()) {
            let (k1, s1) = FlowKey::new(s, sp, d, dp, p, IpFamily::V6, KeyKind::Ports);
            let (k2, s2) = FlowKey::new(d, dp, s, sp, p, IpFamily::V6, KeyKind::Ports);
            prop_assert_eq!(k1, k2);
            prop_assert!(s1 != s2 || (s, sp) == (d, dp));
        }
    }
}
