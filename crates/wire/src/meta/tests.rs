use super::*;
use crate::tcp::flags;

/// Ethernet + IPv4 (`proto`) header with `l4` after it; the IPv4 total length covers `l4`.
fn eth_ipv4(proto: u8, l4: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00];
    let total = (20 + l4.len()) as u16;
    f.extend_from_slice(&[0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, proto, 0, 0]);
    f[16..18].copy_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&[192, 0, 2, 1, 198, 51, 100, 2]);
    f.extend_from_slice(l4);
    f
}

/// A TCP header 40000 -> 443 with MSS, SACK-permitted, timestamps and window-scale options.
fn tcp_syn() -> Vec<u8> {
    vec![
        0x9c, 0x40, 0x01, 0xbb, 0, 0, 0, 100, 0, 0, 0, 0, 0xa0, 0x02, 0xfa, 0xf0, 0, 0, 0, 0, 2, 4,
        0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 7, 0, 0, 0, 0, 1, 3, 3, 7,
    ]
}

#[test]
fn ethernet_ipv4_tcp_with_options() {
    let f = eth_ipv4(6, &tcp_syn());
    let m = PacketMeta::parse(LinkType::Ethernet, &f);
    assert_eq!(m.status, Status::Ok);
    assert_eq!(m.family, Family::V4);
    assert_eq!(m.src_addr().unwrap().to_string(), "192.0.2.1");
    assert_eq!(m.dst_addr().unwrap().to_string(), "198.51.100.2");
    assert_eq!((m.proto, m.sport, m.dport, m.ttl), (6, 40000, 443, 64));
    assert_eq!((m.l3_offset, m.l4_offset, m.payload_offset), (14, 34, 74));
    assert_eq!((m.ip_wire_len, m.payload_wire_len), (60, 0));
    assert_eq!(m.tcp.seq, 100);
    assert_eq!(m.tcp.flags, flags::SYN);
    assert_eq!(m.tcp.window, 0xfaf0);
    assert_eq!(m.tcp.header_len, 40);
    assert_eq!(m.tcp.mss(), Some(1460));
    assert!(m.tcp.sack_permitted() && !m.tcp.has_sack());
    assert_eq!(m.tcp.timestamps(), Some((7, 0)));
    assert_eq!(m.tcp.window_scale(), Some(7));
    assert!(m.has_ports() && !m.is_fragment());
}

#[test]
fn snaplen_cut_keeps_what_is_there() {
    let f = eth_ipv4(6, &tcp_syn());
    let m = PacketMeta::parse(LinkType::Ethernet, &f[..14 + 20 + 37]);
    assert_eq!(m.status, Status::Truncated(Layer::TcpOptions));
    assert_eq!(m.tcp.timestamps(), Some((7, 0)));
    assert_eq!(m.tcp.window_scale(), None);
    assert_eq!(m.ip_wire_len, 60, "wire lengths come from the IP header");
    let m = PacketMeta::parse(LinkType::Ethernet, &f[..14 + 20 + 6]);
    assert_eq!(m.status, Status::Truncated(Layer::Tcp));
    assert_eq!((m.sport, m.dport), (40000, 443));
    assert!(m.has_ports());
    let m = PacketMeta::parse(LinkType::Ethernet, &f[..14 + 20 + 3]);
    assert!(!m.has_ports());
    let m = PacketMeta::parse(LinkType::Ethernet, &f[..14 + 10]);
    assert_eq!((m.status, m.family), (Status::Truncated(Layer::Ipv4), Family::None));
    let m = PacketMeta::parse(LinkType::Ethernet, &f[..10]);
    assert_eq!(m.status, Status::Truncated(Layer::Link));
}

#[test]
fn ethernet_padding_is_not_payload() {
    let mut f = eth_ipv4(17, &[0, 53, 0x30, 0x39, 0, 8, 0, 0]);
    f.resize(60, 0);
    let m = PacketMeta::parse(LinkType::Ethernet, &f);
    assert_eq!(m.status, Status::Ok);
    assert_eq!((m.sport, m.dport, m.payload_wire_len), (53, 12345, 0));
}

#[test]
fn stacked_vlans_pppoe_and_mpls() {
    let base = eth_ipv4(17, &[0, 1, 0, 2, 0, 8, 0, 0]);
    let mut f = base[..12].to_vec();
    f.extend_from_slice(&[0x88, 0xa8, 0x00, 0x64, 0x81, 0x00, 0x20, 0xc8, 0x08, 0x00]);
    f.extend_from_slice(&base[14..]);
    let m = PacketMeta::parse(LinkType::Ethernet, &f);
    assert_eq!((m.status, m.vlan_count, m.vlan), (Status::Ok, 2, [100, 200]));
    assert_eq!((m.l3_offset, m.sport), (22, 1));
    assert_eq!(
        PacketMeta::parse(LinkType::Ethernet, &f[..16]).status,
        Status::Truncated(Layer::Vlan)
    );

    let mut p = base[..12].to_vec();
    p.extend_from_slice(&[0x88, 0x64, 0x11, 0x00, 0x12, 0x34, 0x00, 0x30, 0x00, 0x21]);
    p.extend_from_slice(&base[14..]);
    let m = PacketMeta::parse(LinkType::Ethernet, &p);
    assert_eq!((m.status, m.l3_offset, m.dport), (Status::Ok, 22, 2));

    let mut l = base[..12].to_vec();
    l.extend_from_slice(&[0x88, 0x47, 0x00, 0x01, 0x00, 0x40, 0x00, 0x02, 0x01, 0x40]);
    l.extend_from_slice(&base[14..]);
    let m = PacketMeta::parse(LinkType::Ethernet, &l);
    assert_eq!((m.status, m.l3_offset, m.dport), (Status::Ok, 22, 2));
}

#[test]
fn not_ip_and_unsupported_links() {
    let mut arp = vec![0xff; 12];
    arp.extend_from_slice(&[0x08, 0x06]);
    arp.extend_from_slice(&[0; 28]);
    let m = PacketMeta::parse(LinkType::Ethernet, &arp);
    assert_eq!((m.status, m.ethertype, m.family), (Status::NotIp, 0x0806, Family::None));
    assert_eq!(m.status.problem_index(), None);
    let m = PacketMeta::parse(LinkType::Other(147), &arp);
    assert_eq!(m.status, Status::UnsupportedLink);
    assert_eq!(Status::problem_name(m.status.problem_index().unwrap()), "unsupported-link-type");
}

#[test]
fn cooked_raw_and_loopback_links() {
    let ip = eth_ipv4(17, &[0, 1, 0, 2, 0, 8, 0, 0])[14..].to_vec();
    let mut sll = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, 0x08, 0x00];
    sll.extend_from_slice(&ip);
    let mut sll2 = vec![0x08, 0x00, 0, 0, 0, 0, 0, 2, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0];
    sll2.extend_from_slice(&ip);
    let mut null_le = vec![2, 0, 0, 0];
    null_le.extend_from_slice(&ip);
    let mut null_be = vec![0, 0, 0, 2];
    null_be.extend_from_slice(&ip);
    for (link, f) in [
        (LinkType::LinuxSll, &sll),
        (LinkType::LinuxSll2, &sll2),
        (LinkType::Null, &null_le),
        (LinkType::Null, &null_be),
        (LinkType::Loop, &null_be),
        (LinkType::Raw, &ip),
        (LinkType::Ipv4, &ip),
    ] {
        let m = PacketMeta::parse(link, f);
        assert_eq!((m.status, m.sport, m.dport), (Status::Ok, 1, 2), "{link:?}");
    }
    assert_eq!(PacketMeta::parse(LinkType::Loop, &null_le).status, Status::NotIp);
    assert_eq!(
        PacketMeta::parse(LinkType::Raw, &[0x50; 30]).status,
        Status::Malformed(Malformed::IpVersion)
    );
}

#[test]
fn ipv6_extension_headers_and_icmpv6_echo() {
    let mut f = vec![0x60, 0, 0, 0, 0, 0, 0, 64];
    let echo = [128, 0, 0, 0, 0x12, 0x34, 0, 1];
    f[4..6].copy_from_slice(&((8 + echo.len()) as u16).to_be_bytes());
    f[6] = 0; // hop-by-hop
    f.extend_from_slice(&"fd77::1".parse::<std::net::Ipv6Addr>().unwrap().octets());
    f.extend_from_slice(&"fd77::2".parse::<std::net::Ipv6Addr>().unwrap().octets());
    f.extend_from_slice(&[58, 0, 1, 4, 0, 0, 0, 0]);
    f.extend_from_slice(&echo);
    let m = PacketMeta::parse(LinkType::Ipv6, &f);
    assert_eq!(m.status, Status::Ok);
    assert_eq!((m.family, m.proto, m.l4_offset), (Family::V6, 58, 48));
    assert!(m.is_icmp_echo());
    assert_eq!((m.icmp_type, m.icmp_id), (128, 0x1234));
    assert_eq!(m.src_addr().unwrap().to_string(), "fd77::1");
}

#[test]
fn fragments() {
    let mut f = eth_ipv4(17, &[0, 1, 0, 2, 0, 8, 0, 0]);
    f[14 + 6] = 0x20; // more fragments, offset 0: the first fragment has ports
    let m = PacketMeta::parse(LinkType::Ethernet, &f);
    assert!(m.is_fragment() && !m.is_later_fragment() && m.has_ports());
    f[14 + 7] = 0x10; // offset 128: no transport header here
    let m = PacketMeta::parse(LinkType::Ethernet, &f);
    assert!(m.is_later_fragment() && !m.has_ports());
    assert_eq!((m.status, m.proto, m.family), (Status::Ok, 17, Family::V4));
}

#[test]
fn malformed_headers() {
    let mut f = eth_ipv4(6, &tcp_syn());
    f[14] = 0x44;
    assert_eq!(
        PacketMeta::parse(LinkType::Ethernet, &f).status,
        Status::Malformed(Malformed::Ipv4HeaderLen)
    );
    let mut f = eth_ipv4(6, &tcp_syn());
    f[16..18].copy_from_slice(&10u16.to_be_bytes());
    assert_eq!(
        PacketMeta::parse(LinkType::Ethernet, &f).status,
        Status::Malformed(Malformed::Ipv4TotalLen)
    );
    let mut f = eth_ipv4(6, &tcp_syn());
    f[14 + 20 + 12] = 0x40;
    let m = PacketMeta::parse(LinkType::Ethernet, &f);
    assert_eq!(m.status, Status::Malformed(Malformed::TcpDataOffset));
    assert_eq!(m.sport, 40000, "ports are read before the bad field");
    let mut f = eth_ipv4(6, &tcp_syn());
    f[14 + 20 + 20 + 1] = 1; // MSS option length 1
    assert_eq!(
        PacketMeta::parse(LinkType::Ethernet, &f).status,
        Status::Malformed(Malformed::TcpOption)
    );
    let mut f = eth_ipv4(6, &tcp_syn());
    f[14] = 0x65;
    assert_eq!(
        PacketMeta::parse(LinkType::Ethernet, &f).status,
        Status::Malformed(Malformed::IpVersion)
    );
}

#[test]
fn problem_names_are_distinct() {
    let names: std::collections::HashSet<_> =
        (0..Status::PROBLEMS).map(Status::problem_name).collect();
    assert_eq!(names.len(), Status::PROBLEMS);
    assert!(!names.contains("unknown"));
}

mod against_etherparse {
    //! Frames built by etherparse, cut at any length, parsed by both: wherever etherparse
    //! (in lax mode, which accepts snaplen cuts) reports a field, ours must agree.
    use super::*;
    use etherparse::{
        LaxNetSlice, LaxSlicedPacket, PacketBuilder, TcpOptionElement, TransportSlice,
    };
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    struct Spec {
        vlans: u8,
        v6: bool,
        l4: u8,
        src: [u8; 16],
        dst: [u8; 16],
        sport: u16,
        dport: u16,
        seq: u32,
        ack: Option<u32>,
        ts: Option<(u32, u32)>,
        payload: usize,
        cut: usize,
    }

    fn spec() -> impl Strategy<Value = Spec> {
        (
            (0u8..3, any::<bool>(), 0u8..3, any::<[u8; 16]>(), any::<[u8; 16]>()),
            (any::<u16>(), any::<u16>(), any::<u32>(), proptest::option::of(any::<u32>())),
            (proptest::option::of(any::<(u32, u32)>()), 0usize..64, 0usize..200),
        )
            .prop_map(
                |((vlans, v6, l4, src, dst), (sport, dport, seq, ack), (ts, payload, cut))| Spec {
                    vlans,
                    v6,
                    l4,
                    src,
                    dst,
                    sport,
                    dport,
                    seq,
                    ack,
                    ts,
                    payload,
                    cut,
                },
            )
    }

    fn build(s: &Spec) -> Vec<u8> {
        let eth = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
        let s4: [u8; 4] = s.src[..4].try_into().unwrap();
        let d4: [u8; 4] = s.dst[..4].try_into().unwrap();
        let ip = match (s.vlans, s.v6) {
            (0, false) => eth.ipv4(s4, d4, 64),
            (0, true) => eth.ipv6(s.src, s.dst, 64),
            (1, false) => eth.single_vlan(7.try_into().unwrap()).ipv4(s4, d4, 64),
            (1, true) => eth.single_vlan(7.try_into().unwrap()).ipv6(s.src, s.dst, 64),
            (_, false) => {
                eth.double_vlan(5.try_into().unwrap(), 6.try_into().unwrap()).ipv4(s4, d4, 64)
            }
            (_, true) => {
                eth.double_vlan(5.try_into().unwrap(), 6.try_into().unwrap()).ipv6(s.src, s.dst, 64)
            }
        };
        let payload = vec![0xab; s.payload];
        let mut out = Vec::new();
        match s.l4 {
            0 => {
                let mut t = ip.tcp(s.sport, s.dport, s.seq, 1000);
                if let Some(a) = s.ack {
                    t = t.ack(a);
                }
                if let Some((v, e)) = s.ts {
                    t = t
                        .options(&[
                            TcpOptionElement::Noop,
                            TcpOptionElement::Noop,
                            TcpOptionElement::Timestamp(v, e),
                        ])
                        .unwrap();
                }
                t.write(&mut out, &payload).unwrap();
            }
            1 => ip.udp(s.sport, s.dport).write(&mut out, &payload).unwrap(),
            _ if s.v6 => ip.icmpv6_echo_request(s.sport, 1).write(&mut out, &payload).unwrap(),
            _ => ip.icmpv4_echo_request(s.sport, 1).write(&mut out, &payload).unwrap(),
        }
        out.truncate(s.cut.min(out.len()));
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn agrees_with_etherparse(s in spec()) {
            let frame = build(&s);
            let m = PacketMeta::parse(LinkType::Ethernet, &frame);
            let Ok(p) = LaxSlicedPacket::from_ethernet(&frame) else {
                prop_assert!(m.family == Family::None);
                return Ok(());
            };
            match &p.net {
                Some(LaxNetSlice::Ipv4(ip)) => {
                    prop_assert_eq!(m.family, Family::V4);
                    prop_assert_eq!(&m.src[..4], &ip.header().source()[..]);
                    prop_assert_eq!(&m.dst[..4], &ip.header().destination()[..]);
                    prop_assert_eq!(m.proto, ip.header().protocol().0);
                }
                Some(LaxNetSlice::Ipv6(ip)) => {
                    prop_assert_eq!(m.family, Family::V6);
                    prop_assert_eq!(m.src, ip.header().source());
                    prop_assert_eq!(m.dst, ip.header().destination());
                }
                _ => prop_assert_eq!(m.family, Family::None),
            }
            prop_assert_eq!(usize::from(m.vlan_count), p.link_exts.len());
            match &p.transport {
                Some(TransportSlice::Tcp(t)) => {
                    prop_assert_eq!((m.sport, m.dport), (t.source_port(), t.destination_port()));
                    prop_assert_eq!(m.tcp.seq, t.sequence_number());
                    prop_assert_eq!(m.tcp.ack, t.acknowledgment_number());
                    prop_assert_eq!(m.tcp.flags & flags::ACK != 0, t.ack());
                    let ts = t.options_iterator().find_map(|o| match o {
                        Ok(TcpOptionElement::Timestamp(v, e)) => Some((v, e)),
                        _ => None,
                    });
                    prop_assert_eq!(m.tcp.timestamps(), ts);
                    prop_assert_eq!(usize::from(m.payload_offset), frame.len() - t.payload().len());
                }
                Some(TransportSlice::Udp(u)) => {
                    prop_assert_eq!((m.sport, m.dport), (u.source_port(), u.destination_port()));
                }
                Some(TransportSlice::Icmpv4(_)) | Some(TransportSlice::Icmpv6(_)) => {
                    prop_assert!(m.is_icmp_echo());
                    prop_assert_eq!(m.icmp_id, s.sport);
                }
                _ => {
                    // etherparse stops at a cut transport header; we only report it as cut.
                    if m.family != Family::None && s.l4 < 2 && m.status == Status::Ok {
                        prop_assert!(m.has_ports());
                    }
                }
            }
            if frame.len() == build(&Spec { cut: usize::MAX, ..s.clone() }).len() {
                prop_assert_eq!(m.status, Status::Ok, "a whole frame parses cleanly");
            }
        }
    }
}

/// An ACK 40000 -> 443 (ack `ack`) with NOP NOP and a SACK option holding `blocks`.
fn tcp_sack(ack: u32, blocks: &[(u32, u32)]) -> Vec<u8> {
    let opt_len = 2 + 8 * blocks.len();
    let hl = (20 + 2 + opt_len).div_ceil(4) * 4;
    let mut t = vec![0x9c, 0x40, 0x01, 0xbb, 0, 0, 0, 1];
    t.extend_from_slice(&ack.to_be_bytes());
    t.extend_from_slice(&[((hl / 4) as u8) << 4, 0x10, 0xff, 0xff, 0, 0, 0, 0]);
    t.extend_from_slice(&[1, 1, 5, opt_len as u8]);
    for (l, r) in blocks {
        t.extend_from_slice(&l.to_be_bytes());
        t.extend_from_slice(&r.to_be_bytes());
    }
    t.resize(hl, 0);
    t
}

#[test]
fn highest_sack_edge() {
    let sack = |ack, blocks: &[(u32, u32)]| {
        let f = eth_ipv4(6, &tcp_sack(ack, blocks));
        let m = PacketMeta::parse(LinkType::Ethernet, &f);
        assert_eq!(m.status, Status::Ok);
        assert_eq!(usize::from(m.tcp.sack_blocks), blocks.len());
        m.tcp.highest_sack()
    };
    assert_eq!(sack(1000, &[(2000, 3000), (1500, 2500)]), 3000);
    assert_eq!(sack(1000, &[(1500, 2500), (2000, 3000), (1100, 1200)]), 3000);
    // Blocks below the ACK (a D-SACK) acknowledge nothing new.
    assert_eq!(sack(1000, &[(500, 900)]), 1000);
    // Sequence numbers wrap: 0x100 comes after 0xffff_ff00.
    assert_eq!(sack(0xffff_ff00, &[(0xffff_ff80, 0x100)]), 0x100);
    // Without a SACK option it is the ACK itself (the parser's fast path included).
    let f = eth_ipv4(6, &tcp_syn());
    assert_eq!(PacketMeta::parse(LinkType::Ethernet, &f).tcp.highest_sack(), 0);
}
