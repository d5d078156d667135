//! Community ID v1 (Corelight's community-id-spec): one string per flow that Zeek, Suricata,
//! Wireshark, Arkime and Elastic compute alike, so records of the same flow from different
//! tools join on a string comparison.
//!
//! The value is `1:` followed by the base64 of a SHA-1 over, in network byte order: the seed
//! (2 octets), the two addresses, the IP protocol (1 octet), one octet of zero padding, then
//! for TCP, UDP, SCTP, ICMP and ICMPv6 two ports (2 octets each). The endpoints are put in
//! order first, the numerically smaller address (and on equal addresses the smaller port)
//! first, so both directions of a flow give the same ID. ICMP has no ports: its type and code
//! stand for them, Zeek's way: a request type takes its reply type as the second "port"
//! (echo 8 and echo reply 0, and so on; [`icmp_ports`]), both ways; any other type is one-way
//! and keeps its code, and one-way messages are not reordered.
//!
//! [`of_flow`] computes it from a flow record's key; for an ICMP echo flow, the initiator
//! (the sender of the first packet seen) is taken to be the one sending the requests. A
//! record cannot always give what the
//! spec hashes; then there is no ID (`None`), as the spec allows ("an empty string"):
//!
//! - an ICMP or ICMPv6 flow other than an echo: rampart keys those by address pair, and the
//!   type and code they would hash are not kept;
//! - a TCP, UDP or SCTP flow keyed without ports (a non-first IP fragment).
//!
//! Other protocols (GRE, ESP, DCCP, UDP-Lite, ...) hash without ports, as the spec says for
//! "other IP-borne protocols", even where rampart keys them by ports.

use rampart_flow::{Flow, KeyKind};
use rampart_wire::{IpFamily, proto};
use sha1::{Digest, Sha1};

/// A Community ID: `1:` and 28 base64 characters.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CommunityId([u8; 30]);

impl CommunityId {
    /// The ID as bytes of text (`1:...=`, ASCII).
    pub fn as_bytes(&self) -> &[u8; 30] {
        &self.0
    }

    /// The ID as text (`1:...=`).
    pub fn as_str(&self) -> &str {
        // Only ASCII is ever written into it.
        std::str::from_utf8(&self.0).unwrap_or("")
    }
}

impl std::fmt::Display for CommunityId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for CommunityId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CommunityId({})", self.as_str())
    }
}

/// The port equivalents of an ICMP (`v6` false) or ICMPv6 message of `type_` and `code`,
/// and whether it is one-way (then the endpoints keep their order). From Zeek's
/// `ICMP4_counterpart`/`ICMP6_counterpart`, as the spec's reference implementation maps them.
pub fn icmp_ports(v6: bool, type_: u8, code: u8) -> (u16, u16, bool) {
    let counterpart = if v6 {
        match type_ {
            128 => Some(129), // echo request, reply
            129 => Some(128),
            133 => Some(134), // router solicitation, advertisement
            134 => Some(133),
            135 => Some(136), // neighbour solicitation, advertisement
            136 => Some(135),
            130 => Some(131), // multicast listener query, report
            131 => Some(130),
            139 => Some(140), // node information query, reply ("who are you")
            140 => Some(139),
            144 => Some(145), // home agent address discovery request, reply
            145 => Some(144),
            _ => None,
        }
    } else {
        match type_ {
            8 => Some(0), // echo, echo reply
            0 => Some(8),
            13 => Some(14), // timestamp, reply
            14 => Some(13),
            15 => Some(16), // information request, reply
            16 => Some(15),
            10 => Some(9), // router solicitation, advertisement
            9 => Some(10),
            17 => Some(18), // address mask request, reply
            18 => Some(17),
            _ => None,
        }
    };
    match counterpart {
        Some(c) => (type_.into(), c, false),
        None => (type_.into(), code.into(), true),
    }
}

/// The Community ID of a flow between `src` and `dst` (4 octets each for IPv4, 16 for IPv6)
/// over IP protocol `proto`, with `ports` for the protocols that hash them (ICMP's port
/// equivalents from [`icmp_ports`]); `one_way` keeps the endpoints in the order given.
pub fn compute(
    seed: u16,
    src: &[u8],
    dst: &[u8],
    proto: u8,
    ports: Option<(u16, u16)>,
    one_way: bool,
) -> CommunityId {
    let (sp, dp) = ports.unwrap_or((0, 0));
    let ordered = one_way || src < dst || (src == dst && sp <= dp);
    let (a, b, pa, pb) = if ordered { (src, dst, sp, dp) } else { (dst, src, dp, sp) };
    let ports = ports.map(|_| (pa, pb));
    let digest = match one_block(seed, a, b, proto, ports) {
        Some(d) => d,
        None => {
            let mut h = Sha1::new();
            h.update(seed.to_be_bytes());
            h.update(a);
            h.update(b);
            h.update([proto, 0]);
            if let Some((pa, pb)) = ports {
                h.update(pa.to_be_bytes());
                h.update(pb.to_be_bytes());
            }
            h.finalize().into()
        }
    };
    let mut out = [0u8; 30];
    out[..2].copy_from_slice(b"1:");
    base64(&digest, &mut out[2..]);
    CommunityId(out)
}

/// The SHA-1 of the spec's bytes for ordered endpoints when they fit one 64-byte block (at
/// most 55 bytes, which addresses of IPv4 or IPv6 always do): the block is padded here and
/// compressed once, with no hasher's buffering. `None` for longer input.
fn one_block(
    seed: u16,
    a: &[u8],
    b: &[u8],
    proto: u8,
    ports: Option<(u16, u16)>,
) -> Option<[u8; 20]> {
    let len = 2 + a.len() + b.len() + 2 + if ports.is_some() { 4 } else { 0 };
    if len > 55 {
        return None;
    }
    let mut block = [0u8; 64];
    block[..2].copy_from_slice(&seed.to_be_bytes());
    let mut n = 2;
    for part in [a, b] {
        block[n..n + part.len()].copy_from_slice(part);
        n += part.len();
    }
    block[n] = proto;
    n += 2;
    if let Some((pa, pb)) = ports {
        block[n..n + 2].copy_from_slice(&pa.to_be_bytes());
        block[n + 2..n + 4].copy_from_slice(&pb.to_be_bytes());
        n += 4;
    }
    // SHA-1's padding: a one bit, zeros, and the length in bits in the last eight bytes.
    block[n] = 0x80;
    block[56..].copy_from_slice(&(len as u64 * 8).to_be_bytes());
    let mut state: [u32; 5] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476, 0xc3d2_e1f0];
    sha1::compress(&mut state, &[block.into()]);
    let mut digest = [0u8; 20];
    for (d, w) in digest.chunks_exact_mut(4).zip(state) {
        d.copy_from_slice(&w.to_be_bytes());
    }
    Some(digest)
}

/// The Community ID of an ICMP (`v6` false) or ICMPv6 message of `type_` and `code` from
/// `src` to `dst`.
pub fn icmp(seed: u16, src: &[u8], dst: &[u8], v6: bool, type_: u8, code: u8) -> CommunityId {
    let (sp, dp, one_way) = icmp_ports(v6, type_, code);
    let p = if v6 { proto::ICMPV6 } else { proto::ICMP };
    compute(seed, src, dst, p, Some((sp, dp)), one_way)
}

/// The Community ID of a flow record's flow, or `None` where the record lacks what the spec
/// hashes (see the module's docs). Either direction gives the same ID, so the initiator does
/// not matter.
pub fn of_flow(flow: &Flow, seed: u16) -> Option<CommunityId> {
    let k = &flow.key;
    let len = if k.family() == IpFamily::V4 { 4 } else { 16 };
    let (a, b) = (&k.addr_a_bytes()[..len], &k.addr_b_bytes()[..len]);
    // ICMP's mapping is directional: the echo requests' sender is taken to be the initiator.
    let (ia, ib) = match flow.initiator {
        rampart_flow::Side::A => (a, b),
        rampart_flow::Side::B => (b, a),
    };
    let hashes_ports = matches!(k.proto(), proto::TCP | proto::UDP | proto::SCTP);
    match (k.kind(), k.proto()) {
        // An echo flow holds requests one way and replies the other: the ID of both.
        (KeyKind::Echo, proto::ICMP) if k.family() == IpFamily::V4 => {
            Some(icmp(seed, ia, ib, false, 8, 0))
        }
        (KeyKind::Echo, proto::ICMPV6) if k.family() == IpFamily::V6 => {
            Some(icmp(seed, ia, ib, true, 128, 0))
        }
        (KeyKind::Echo, _) => None,
        (_, proto::ICMP | proto::ICMPV6) => None,
        (KeyKind::Ports, _) if hashes_ports => {
            Some(compute(seed, a, b, k.proto(), Some((k.port_a(), k.port_b())), false))
        }
        (_, _) if hashes_ports => None,
        (_, p) => Some(compute(seed, a, b, p, None, false)),
    }
}

/// Standard base64 (RFC 4648, with padding) of 20 octets into 28 characters.
fn base64(input: &[u8; 20], out: &mut [u8]) {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut o = 0;
    for chunk in input.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..4 {
            out[o + i] = if i < chars { ABC[((n >> (18 - 6 * i)) & 63) as usize] } else { b'=' };
        }
        o += 4;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rampart_flow::{FlowKey, PacketInfo};
    use std::net::IpAddr;

    fn octets(s: &str) -> Vec<u8> {
        match s.parse::<IpAddr>().unwrap() {
            IpAddr::V4(a) => a.octets().to_vec(),
            IpAddr::V6(a) => a.octets().to_vec(),
        }
    }

    /// The spec's published test vectors: corelight/community-id-spec, `baseline/
    /// baseline_deflt.json` (seed 0) and `baseline/baseline_seed1.json` (seed 1), commit
    /// c4ec2bc. For ICMP the baseline's `sport`/`dport` are the messages' port equivalents;
    /// fed back as type and code they map to themselves. Protocol 46 (RSVP) has no ports
    /// (`null` in the baseline).
    /// Protocol, source, destination, ports, the ID with seed 0 and with seed 1.
    type Vector = (u8, &'static str, &'static str, Option<(u16, u16)>, &'static str, &'static str);

    const VECTORS: &[Vector] = &[
        (
            58,
            "fe80::200:86ff:fe05:80da",
            "fe80::260:97ff:fe07:69ea",
            Some((135, 136)),
            "1:dGHyGvjMfljg6Bppwm3bg0LO8TY=",
            "1:kHa1FhMYIT6Ym2Vm2AOtoOARDzY=",
        ),
        (
            58,
            "fe80::260:97ff:fe07:69ea",
            "fe80::200:86ff:fe05:80da",
            Some((136, 135)),
            "1:dGHyGvjMfljg6Bppwm3bg0LO8TY=",
            "1:kHa1FhMYIT6Ym2Vm2AOtoOARDzY=",
        ),
        (
            58,
            "fe80::260:97ff:fe07:69ea",
            "fe80::200:86ff:fe05:80da",
            Some((135, 136)),
            "1:zavyT/cezQr1fmImYCwYnMXbgck=",
            "1:2hSqmsDZ2kdcY9kbiUzOEBic0iM=",
        ),
        (
            58,
            "fe80::200:86ff:fe05:80da",
            "fe80::260:97ff:fe07:69ea",
            Some((136, 135)),
            "1:zavyT/cezQr1fmImYCwYnMXbgck=",
            "1:2hSqmsDZ2kdcY9kbiUzOEBic0iM=",
        ),
        (
            58,
            "3ffe:501:1800:2345::2",
            "3ffe:507:0:1:200:86ff:fe05:80da",
            Some((3, 0)),
            "1:2ObVBgIn28oZvibYZhZMBgh7WdQ=",
            "1:lVEtCZpYu84Xqaa++3lXFyuu2n4=",
        ),
        (
            58,
            "3ffe:501:410:0:2c0:dfff:fe47:33e",
            "3ffe:507:0:1:200:86ff:fe05:80da",
            Some((1, 4)),
            "1:hLZd0XGWojozrvxqE0dWB1iM6R0=",
            "1:W8MHwXpWzpoSTD+cGcaJr4u0ys8=",
        ),
        (
            58,
            "3ffe:507:0:1:200:86ff:fe05:80da",
            "3ffe:501:0:1001::2",
            Some((128, 129)),
            "1:+TW+HtLHvV1xnGhV1lv7XoJrqQg=",
            "1:GfZxjAkDk2MkegpBYHV6tadtFXQ=",
        ),
        (
            58,
            "3ffe:501:0:1001::2",
            "3ffe:507:0:1:200:86ff:fe05:80da",
            Some((129, 128)),
            "1:+TW+HtLHvV1xnGhV1lv7XoJrqQg=",
            "1:GfZxjAkDk2MkegpBYHV6tadtFXQ=",
        ),
        (
            58,
            "fe80::200:86ff:fe05:80da",
            "ff02::2",
            Some((133, 134)),
            "1:hO+sN4H+MG5MY/8hIrXPqc4ZQz0=",
            "1:L7Ka0ZMYu+J3bL4ulW2PrqyXNo8=",
        ),
        (
            58,
            "fe80::260:97ff:fe07:69ea",
            "ff02::1",
            Some((134, 133)),
            "1:pkvHqCL88/tg1k4cPigmZXUtL00=",
            "1:K/ee5UCqAMAQXDorP5nSa2CGLjc=",
        ),
        (
            1,
            "192.168.0.89",
            "192.168.0.1",
            Some((8, 0)),
            "1:X0snYXpgwiv9TZtqg64sgzUn6Dk=",
            "1:03g6IloqVBdcZlPyX8r0hgoE7kA=",
        ),
        (
            1,
            "192.168.0.1",
            "192.168.0.89",
            Some((0, 8)),
            "1:X0snYXpgwiv9TZtqg64sgzUn6Dk=",
            "1:03g6IloqVBdcZlPyX8r0hgoE7kA=",
        ),
        (
            1,
            "10.0.0.1",
            "10.0.0.2",
            Some((11, 0)),
            "1:YHxtAirCG//0OzkcVAukqKQN9xM=",
            "1:XjUibYHaafLQ3pxQeiMI8g25q20=",
        ),
        (
            6,
            "2001:470:e5bf:dead:4957:2174:e82c:4887",
            "2607:f8b0:400c:c03::1a",
            Some((63943, 25)),
            "1:/qFaeAR+gFe1KYjMzVDsMv+wgU4=",
            "1:eJYTW6AOzFLlSUoESovMjnu7rMw=",
        ),
        (
            6,
            "2607:f8b0:400c:c03::1a",
            "2001:470:e5bf:dead:4957:2174:e82c:4887",
            Some((25, 63943)),
            "1:/qFaeAR+gFe1KYjMzVDsMv+wgU4=",
            "1:eJYTW6AOzFLlSUoESovMjnu7rMw=",
        ),
        (
            132,
            "192.168.170.8",
            "192.168.170.56",
            Some((7, 7)),
            "1:MP2EtRCAUIZvTw6MxJHLV7N7JDs=",
            "1:5w3ZRjeKBzqT3zsaEECDGjUbYeg=",
        ),
        (
            132,
            "192.168.170.56",
            "192.168.170.8",
            Some((7, 7)),
            "1:MP2EtRCAUIZvTw6MxJHLV7N7JDs=",
            "1:5w3ZRjeKBzqT3zsaEECDGjUbYeg=",
        ),
        (
            6,
            "128.232.110.120",
            "66.35.250.204",
            Some((34855, 80)),
            "1:LQU9qZlK+B5F3KDmev6m5PMibrg=",
            "1:3V71V58M3Ksw/yuFALMcW0LAHvc=",
        ),
        (
            6,
            "66.35.250.204",
            "128.232.110.120",
            Some((80, 34855)),
            "1:LQU9qZlK+B5F3KDmev6m5PMibrg=",
            "1:3V71V58M3Ksw/yuFALMcW0LAHvc=",
        ),
        (
            17,
            "192.168.1.52",
            "8.8.8.8",
            Some((54585, 53)),
            "1:d/FP5EW3wiY1vCndhwleRRKHowQ=",
            "1:Q9We8WO3piVF8yEQBNJF4uiSVrI=",
        ),
        (
            17,
            "8.8.8.8",
            "192.168.1.52",
            Some((53, 54585)),
            "1:d/FP5EW3wiY1vCndhwleRRKHowQ=",
            "1:Q9We8WO3piVF8yEQBNJF4uiSVrI=",
        ),
        (
            46,
            "10.1.12.1",
            "10.1.12.2",
            None,
            "1:KHlLkgoJW7ifUTyTSgyVfkFHzKw=",
            "1:rYir8gphR31noO9iDRQmF/BteEI=",
        ),
        (
            46,
            "10.1.12.2",
            "10.1.12.1",
            None,
            "1:KHlLkgoJW7ifUTyTSgyVfkFHzKw=",
            "1:rYir8gphR31noO9iDRQmF/BteEI=",
        ),
    ];

    #[test]
    fn the_specs_baseline_vectors() {
        for &(p, s, d, ports, seed0, seed1) in VECTORS {
            let (s, d) = (octets(s), octets(d));
            for (seed, want) in [(0, seed0), (1, seed1)] {
                let got = match (p, ports) {
                    (1 | 58, Some((t, c))) => icmp(seed, &s, &d, p == 58, t as u8, c as u8),
                    _ => compute(seed, &s, &d, p, ports, false),
                };
                assert_eq!(got.as_str(), want, "proto {p} {s:?} {d:?} {ports:?} seed {seed}");
            }
        }
    }

    /// The one-block SHA-1 equals the hasher's over the same bytes, for every length that fits
    /// (up to 55 bytes, the padding's limit) and with and without ports; longer input is left
    /// to the hasher.
    #[test]
    fn one_block_agrees_with_the_hasher() {
        let bytes: Vec<u8> = (0u8..60).map(|i| i.wrapping_mul(37) ^ 0xa5).collect();
        for ports in [None, Some((0, 0)), Some((443, 65535))] {
            for la in 0..=30 {
                for lb in [0, 1, 4, 16, 21, 30] {
                    let (a, b) = (&bytes[..la], &bytes[30 - lb.min(30)..30]);
                    let mut h = Sha1::new();
                    h.update(7u16.to_be_bytes());
                    h.update(a);
                    h.update(b);
                    h.update([17, 0]);
                    if let Some((x, y)) = ports {
                        h.update(u16::to_be_bytes(x));
                        h.update(u16::to_be_bytes(y));
                    }
                    let want: [u8; 20] = h.finalize().into();
                    let len = 4 + la + lb + if ports.is_some() { 4 } else { 0 };
                    let got = one_block(7, a, b, 17, ports);
                    if len <= 55 {
                        assert_eq!(got, Some(want), "{la} {lb} {ports:?}");
                    } else {
                        assert_eq!(got, None);
                    }
                    // compute() gives the same ID either way.
                    let id = compute(7, a, b, 17, ports, true);
                    let mut b64 = [0u8; 28];
                    base64(&want, &mut b64);
                    assert_eq!(&id.as_bytes()[2..], &b64);
                }
            }
        }
    }

    #[test]
    fn base64_pads_the_last_group() {
        let mut out = [0u8; 28];
        let mut input = [0u8; 20];
        input[..3].copy_from_slice(b"Man");
        base64(&input, &mut out);
        assert!(out.starts_with(b"TWFu"));
        assert!(out.ends_with(b"AAA="));
        base64(&[0xff; 20], &mut out);
        assert_eq!(&out, b"//////////////////////////8=");
    }

    fn flow(proto: u8, kind: KeyKind, a: &str, pa: u16, b: &str, pb: u16) -> Flow {
        let (mut sa, mut sb) = ([0u8; 16], [0u8; 16]);
        let (oa, ob) = (octets(a), octets(b));
        sa[..oa.len()].copy_from_slice(&oa);
        sb[..ob.len()].copy_from_slice(&ob);
        let family = if oa.len() == 4 { IpFamily::V4 } else { IpFamily::V6 };
        let (key, side) = FlowKey::new(sa, pa, sb, pb, proto, family, kind);
        let p = PacketInfo {
            key,
            side,
            hash: 0,
            ts: rampart_wire::Timestamp::from_nanos(1),
            wire_len: 60,
            tcp_flags: 0,
        };
        Flow::start(&p)
    }

    #[test]
    fn flows_give_the_ids_of_their_packets() {
        // Either end first: the same ID, the baseline's.
        for (a, pa, b, pb) in [("128.232.110.120", 34855, "66.35.250.204", 80)] {
            let f1 = flow(6, KeyKind::Ports, a, pa, b, pb);
            let f2 = flow(6, KeyKind::Ports, b, pb, a, pa);
            for f in [f1, f2] {
                assert_eq!(of_flow(&f, 0).unwrap().as_str(), "1:LQU9qZlK+B5F3KDmev6m5PMibrg=");
            }
        }
        let f = flow(17, KeyKind::Ports, "8.8.8.8", 53, "192.168.1.52", 54585);
        assert_eq!(of_flow(&f, 0).unwrap().as_str(), "1:d/FP5EW3wiY1vCndhwleRRKHowQ=");
        // An echo flow: the ID of its requests and of its replies alike (the initiator sends
        // the requests).
        let f = flow(1, KeyKind::Echo, "192.168.0.89", 7, "192.168.0.1", 7);
        assert_eq!(of_flow(&f, 0).unwrap().as_str(), "1:X0snYXpgwiv9TZtqg64sgzUn6Dk=");
        let f =
            flow(58, KeyKind::Echo, "3ffe:507:0:1:200:86ff:fe05:80da", 9, "3ffe:501:0:1001::2", 9);
        assert_eq!(of_flow(&f, 0).unwrap().as_str(), "1:+TW+HtLHvV1xnGhV1lv7XoJrqQg=");
        // No ports: RSVP as the baseline; ICMP other than echo and port-less TCP have none.
        let f = flow(46, KeyKind::Pair, "10.1.12.2", 0, "10.1.12.1", 0);
        assert_eq!(of_flow(&f, 0).unwrap().as_str(), "1:KHlLkgoJW7ifUTyTSgyVfkFHzKw=");
        assert!(of_flow(&flow(1, KeyKind::Pair, "10.0.0.1", 0, "10.0.0.2", 0), 0).is_none());
        assert!(of_flow(&flow(6, KeyKind::Pair, "10.0.0.1", 0, "10.0.0.2", 0), 0).is_none());
    }
}
