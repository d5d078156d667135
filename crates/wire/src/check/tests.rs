use super::*;
use crate::{LinkType, icmp::QuoteKind};

/// Bytes from a tcpdump hex dump (spaces and line breaks ignored).
fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}

/// A SYN from the conntrack oracle's client-side capture (10.66.1.2:55936 -> 10.66.2.2:8080).
fn syn() -> Vec<u8> {
    hex("9ac0 d67f 0386 4217 8502 766e 0800 4500 003c 5ede 4000 4006 c456 0a42 0102 0a42
         0202 da80 1f90 b67f 9356 0000 0000 a002 faf0 5f87 0000 0204 05b4 0402 080a e575
         aca0 0000 0000 0103 030a")
}

/// A UDP datagram "ping 0" from the same capture (10.66.1.2:42000 -> 10.66.2.2:5300).
fn udp() -> Vec<u8> {
    hex("9ac0 d67f 0386 4217 8502 766e 0800 4500 0022 66a1 4000 4011 bca2 0a42 0102 0a42
         0202 a410 14b4 000e 3085 7069 6e67 2030")
}

/// The server's port unreachable for UDP 10.66.1.2:44838 -> 10.66.2.2:7777.
fn port_unreachable() -> Vec<u8> {
    hex("d262 18ba 5194 c671 c8dc 6fb8 0800 45c0 0039 ae2d 0000 4001 b44f 0a42 0202 0a42
         0102 0303 149f 0000 0000 4500 001d 6a05 4000 3f11 ba43 0a42 0102 0a42 0202 af26
         1e61 0009 a2cc 78")
}

/// The ICMPv6 port unreachable for UDP [fd66:1::2]:52503 -> [fd66:2::2]:7777.
fn port_unreachable6() -> Vec<u8> {
    hex("d262 18ba 5194 c671 c8dc 6fb8 86dd 600e 0c50 0039 3a40 fd66 0002 0000 0000 0000
         0000 0000 0002 fd66 0001 0000 0000 0000 0000 0000 0002 0104 181b 0000 0000 6002
         7a68 0009 113f fd66 0001 0000 0000 0000 0000 0000 0002 fd66 0002 0000 0000 0000
         0000 0000 0002 cd17 1e61 0009 a18e 78")
}

fn checks(frame: &[u8]) -> Checksums {
    PacketMeta::parse(LinkType::Ethernet, frame).checksums(frame)
}

#[test]
fn rfc1071_example() {
    // RFC 1071 section 3: the words 0001 f203 f4f5 f6f7 sum to ddf2 after the carries.
    assert_eq!(fold(sum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7], 0)), 0xddf2);
    // An odd length pads with a zero byte.
    assert_eq!(fold(sum(&[0x01], 0)), 0x0100);
    assert_eq!(finish(0xffff), 0);
}

#[test]
fn hand_computed_ipv4_header() {
    // 4500 003c 5ede 4000 4006 [c456] 0a42 0102 0a42 0202: the other nine words sum to
    // 0x13ba8, which folds to 0x3ba9, whose complement is the field the sender wrote.
    let f = syn();
    let mut h = f[14..34].to_vec();
    h[10..12].copy_from_slice(&[0, 0]);
    assert_eq!(finish(sum(&h, 0)), 0xc456);
    assert_eq!(checks(&f).ip, Checksum::Good);
}

#[test]
fn real_packets_verify() {
    for f in [syn(), udp(), port_unreachable(), port_unreachable6()] {
        let c = checks(&f);
        assert_eq!(c.l4, Checksum::Good, "{c:?}");
    }
    assert_eq!(checks(&port_unreachable6()).ip, Checksum::Absent, "IPv6 has no header checksum");
}

#[test]
fn hand_computed_tcp_checksum() {
    // The SYN's checksum field (0x5f87) recomputed: pseudo-header 10.66.1.2, 10.66.2.2,
    // protocol 6, length 40, then the 40 TCP bytes with the field zeroed.
    let f = syn();
    let mut seg = f[34..].to_vec();
    seg[16..18].copy_from_slice(&[0, 0]);
    let (mut src, mut dst) = ([0u8; 16], [0u8; 16]);
    src[..4].copy_from_slice(&[10, 66, 1, 2]);
    dst[..4].copy_from_slice(&[10, 66, 2, 2]);
    assert_eq!(finish(sum(&seg, pseudo_header(Family::V4, &src, &dst, 6, 40))), 0x5f87);
}

#[test]
fn one_flipped_bit_is_bad() {
    for (frame, at) in
        [(syn(), 50), (udp(), 45), (port_unreachable(), 60), (port_unreachable6(), 70)]
    {
        let mut f = frame.clone();
        f[at] ^= 0x10;
        assert_eq!(checks(&f).l4, Checksum::Bad, "byte {at}");
    }
    let mut f = syn();
    f[22] ^= 1; // the TTL
    assert_eq!(checks(&f).ip, Checksum::Bad);
}

#[test]
fn cut_by_the_snap_length() {
    let f = syn();
    assert_eq!(checks(&f[..f.len() - 1]).l4, Checksum::Cut);
    assert_eq!(checks(&f[..40]).l4, Checksum::Cut);
    assert_eq!(checks(&f[..40]).ip, Checksum::Good);
    assert_eq!(checks(&f[..20]).ip, Checksum::Absent, "no IP addresses, nothing to verify");
}

#[test]
fn padding_past_the_ip_length_is_not_summed() {
    let mut f = udp();
    f.extend_from_slice(&[0xaa; 12]);
    assert_eq!(checks(&f).l4, Checksum::Good);
}

#[test]
fn zero_udp_checksum_is_absent() {
    let mut f = udp();
    f[40..42].copy_from_slice(&[0, 0]);
    assert_eq!(checks(&f).l4, Checksum::Absent);
}

#[test]
fn fragments_are_not_checkable() {
    let mut f = udp();
    f[20] |= 0x20; // more fragments
    let h = &mut f[14..34];
    h[10..12].copy_from_slice(&[0, 0]);
    let c = finish(sum(h, 0));
    h[10..12].copy_from_slice(&c.to_be_bytes());
    assert_eq!(checks(&f), Checksums { ip: Checksum::Good, l4: Checksum::Fragment });
}

#[test]
fn udplite_coverage() {
    // The UDP datagram turned into UDP-Lite covering its 8-byte header only.
    let mut f = udp();
    f[23] = 136;
    let h = &mut f[14..34];
    h[10..12].copy_from_slice(&[0, 0]);
    let c = finish(sum(h, 0));
    h[10..12].copy_from_slice(&c.to_be_bytes());
    f[38..40].copy_from_slice(&8u16.to_be_bytes());
    f[40..42].copy_from_slice(&[0, 0]);
    let (mut src, mut dst) = ([0u8; 16], [0u8; 16]);
    src[..4].copy_from_slice(&[10, 66, 1, 2]);
    dst[..4].copy_from_slice(&[10, 66, 2, 2]);
    let c = finish(sum(&f[34..42], pseudo_header(Family::V4, &src, &dst, 136, 14)));
    f[40..42].copy_from_slice(&c.to_be_bytes());
    assert_eq!(checks(&f).l4, Checksum::Good);
    let m = PacketMeta::parse(LinkType::Ethernet, &f);
    assert_eq!(m.udp_len, 8);
    // Bytes past the coverage may change freely.
    f[45] ^= 0xff;
    assert_eq!(checks(&f).l4, Checksum::Good);
    // A coverage past the datagram is bad.
    f[38..40].copy_from_slice(&15u16.to_be_bytes());
    assert_eq!(checks(&f).l4, Checksum::Bad);
}

#[test]
fn quotes_of_errors() {
    let f = port_unreachable();
    let m = PacketMeta::parse(LinkType::Ethernet, &f);
    let q = m.icmp_quote(&f).unwrap();
    assert_eq!((q.proto, q.kind, q.sport, q.dport), (17, QuoteKind::Ports, 44838, 7777));
    assert_eq!((&q.src[..4], &q.dst[..4]), (&[10, 66, 1, 2][..], &[10, 66, 2, 2][..]));
    let f = port_unreachable6();
    let m = PacketMeta::parse(LinkType::Ethernet, &f);
    let q = m.icmp_quote(&f).unwrap();
    assert_eq!((q.proto, q.kind, q.sport, q.dport), (17, QuoteKind::Ports, 52503, 7777));
    assert_eq!(q.src[..2], [0xfd, 0x66]);
    // A quote cut before its ports, and packets that are no errors, have none.
    let cut = &f[..f.len() - 12];
    assert!(PacketMeta::parse(LinkType::Ethernet, cut).icmp_quote(cut).is_none());
    let s = syn();
    assert!(PacketMeta::parse(LinkType::Ethernet, &s).icmp_quote(&s).is_none());
}

#[test]
fn quote_of_an_echo_request() {
    // Time exceeded quoting an echo request with identifier 0x1234.
    let mut f = port_unreachable();
    f[34] = 11;
    f[35] = 0;
    f[51] = 1; // inner protocol ICMP
    f[62..70].copy_from_slice(&[8, 0, 0, 0, 0x12, 0x34, 0, 1]);
    let m = PacketMeta::parse(LinkType::Ethernet, &f);
    let q = m.icmp_quote(&f).unwrap();
    assert_eq!((q.proto, q.kind, q.icmp_type, q.id), (1, QuoteKind::Icmp, 8, 0x1234));
}

/// RFC 1071's definition, one big-endian 16-bit word at a time with end-around carries: the
/// oracle for the eight-bytes-at-a-time sum.
fn sum16(bytes: &[u8], start: u16) -> u16 {
    let mut acc = u32::from(start);
    for w in bytes.chunks(2) {
        acc += u32::from(u16::from_be_bytes([w[0], w.get(1).copied().unwrap_or(0)]));
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

proptest::proptest! {
    #[test]
    fn the_wide_sum_folds_to_rfc_1071s(
        bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
        split in 0usize..100,
        start in proptest::num::u16::ANY,
    ) {
        // Any even split point: a sum carried over from one part to the next.
        let cut = (split * 2).min(bytes.len() & !1);
        let wide = fold(sum(&bytes[cut..], sum(&bytes[..cut], u64::from(start))));
        let narrow = sum16(&bytes, start);
        // One's complement has two zeros; the wide sum is zero only when everything is.
        let same = wide == narrow || (wide == 0xffff && narrow == 0) || (wide == 0 && narrow == 0xffff);
        proptest::prop_assert!(same, "wide {:#x} narrow {:#x}", wide, narrow);
        proptest::prop_assert_eq!(wide == 0, start == 0 && bytes.iter().all(|&b| b == 0));
        // A checksum written with `finish` verifies.
        let mut msg = bytes.clone();
        if msg.len() >= 2 {
            msg[0] = 0;
            msg[1] = 0;
            let c = finish(sum(&msg, 0x1234));
            msg[..2].copy_from_slice(&c.to_be_bytes());
            proptest::prop_assert_eq!(fold(sum(&msg, 0x1234)), 0xffff);
        }
    }
}

proptest::proptest! {
    #[test]
    fn the_pseudo_header_sums_its_bytes(
        src in proptest::array::uniform16(proptest::num::u8::ANY),
        dst in proptest::array::uniform16(proptest::num::u8::ANY),
        proto in proptest::num::u8::ANY,
        len in proptest::num::u32::ANY,
        v6 in proptest::bool::ANY,
    ) {
        // RFC 8200 §8.1 and RFC 793's pseudo-headers, laid out as bytes.
        let n = if v6 { 16 } else { 4 };
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&src[..n]);
        bytes.extend_from_slice(&dst[..n]);
        if v6 {
            bytes.extend_from_slice(&len.to_be_bytes());
            bytes.extend_from_slice(&[0, 0, 0, proto]);
        } else {
            bytes.extend_from_slice(&[0, proto]);
            bytes.extend_from_slice(&(len as u16).to_be_bytes());
        }
        let len = if v6 { len } else { u32::from(len as u16) };
        let family = if v6 { Family::V6 } else { Family::V4 };
        proptest::prop_assert_eq!(fold(pseudo_header(family, &src, &dst, proto, len)), fold(sum(&bytes, 0)));
    }
}

/// Whether two 16-bit one's-complement sums are the same number (it has two zeros, 0 and
/// 0xffff).
fn same(got: u16, want: u16) -> bool {
    got == want || got | want == 0xffff && got & want == 0
}

proptest::proptest! {
    /// The vectorised sum folds to the reference's sum for any bytes (every length, so every
    /// block, word, half-word and odd-byte remainder) and any running sum before it, and stays
    /// zero only for zero input.
    #[test]
    fn sum_folds_like_rfc_1071(
        bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
        acc in proptest::prelude::any::<u16>(),
        ones in 0usize..2000,
    ) {
        let got = fold(sum(&bytes, u64::from(acc)));
        proptest::prop_assert!(same(got, sum16(&bytes, acc)), "{got:#x}");
        // `fold` gives 0 only for an all-zero input.
        proptest::prop_assert_eq!(got == 0, acc == 0 && bytes.iter().all(|&b| b == 0));
        // Long runs of 0xff (the largest words) for the lanes' sums.
        let big = vec![0xffu8; ones];
        proptest::prop_assert!(same(fold(sum(&big, 0)), sum16(&big, 0)));
        // Pieces of even length chain through the running sum.
        let (a, b) = bytes.split_at((bytes.len() / 2) & !1);
        proptest::prop_assert_eq!(fold(sum(b, sum(a, u64::from(acc)))), got);
    }
}

proptest::proptest! {
    #[test]
    fn the_avx2_blocks_sum_as_the_baselines(
        bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..2000),
        start in proptest::num::u16::ANY,
    ) {
        let base = sum_with(&bytes, u64::from(start), false);
        let folded = fold(base);
        let narrow = sum16(&bytes, start);
        proptest::prop_assert!(same(folded, narrow), "baseline {:#x} RFC 1071 {:#x}", folded, narrow);
        if avx2() {
            proptest::prop_assert_eq!(sum_with(&bytes, u64::from(start), true), base);
        }
    }
}

#[test]
fn says_which_block_sums_ran() {
    if avx2() {
        // Long runs of 0xff carry the most: the lanes must not lose a carry either way.
        let ff = vec![0xff; 65_536];
        assert_eq!(sum_with(&ff, 0, true), sum_with(&ff, 0, false));
        assert_eq!(fold(sum_with(&ff, 0, true)), 0xffff);
    } else {
        eprintln!("check: this CPU has no AVX2; only the baseline's block sums were tested");
    }
}
