//! One frame: the first byte picks the link type, the rest is the frame. The parser must not
//! panic, and what it reports must lie inside the frame; nor may checksum verification or
//! reading an ICMP error's quote, and a frame cut short can never verify as good or bad. The
//! packet a tunnel carries is held to the same.
#![no_main]

use rampart_flow::FlowKey;
use rampart_wire::{Checksum, Family, LinkType, PacketMeta, Status};

const LINKS: [LinkType; 9] = [
    LinkType::Ethernet,
    LinkType::LinuxSll,
    LinkType::LinuxSll2,
    LinkType::Raw,
    LinkType::Ipv4,
    LinkType::Ipv6,
    LinkType::Null,
    LinkType::Loop,
    LinkType::Other(147),
];

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&sel, frame)) = data.split_first() else { return };
    let link = LINKS[usize::from(sel) % LINKS.len()];
    let m = PacketMeta::parse(link, frame);
    let len = frame.len();
    assert!(usize::from(m.l3_offset) <= len);
    assert!(usize::from(m.l4_offset) <= len);
    if m.status == Status::Ok && m.payload_offset != 0 {
        assert!(usize::from(m.payload_offset) <= len);
    }
    if m.family == Family::None {
        assert!(FlowKey::from_meta(&m).is_none());
    } else {
        assert!(FlowKey::from_meta(&m).is_some());
    }
    let sums = m.checksums(frame);
    let wire_end = usize::from(m.l3_offset) + m.ip_wire_len as usize;
    if matches!(sums.l4, Checksum::Good | Checksum::Bad) && m.proto != rampart_wire::proto::UDPLITE
    {
        assert!(wire_end <= len, "a verified checksum covers captured bytes only");
    }
    if m.family == Family::None {
        assert_eq!(sums.ip, Checksum::Absent);
    }
    if let Some(q) = m.icmp_quote(frame) {
        assert!(m.proto == rampart_wire::proto::ICMP || m.proto == rampart_wire::proto::ICMPV6);
        assert!(rampart_wire::icmp::is_error(m.icmp_type, m.family == Family::V6));
        let _ = q.kind;
    }
    if let Some(i) = m.status.problem_index() {
        assert!(i < Status::PROBLEMS);
        assert_ne!(Status::problem_name(i), "unknown");
    }
    // The packet inside a tunnel: its offsets lie inside the frame too, and past the outer
    // packet's transport header.
    let mut inner = m;
    inner.decapsulate(frame);
    if inner.tunnel != rampart_wire::Tunnel::None {
        assert_ne!(inner.family, Family::None);
        assert!(usize::from(inner.l3_offset) <= len);
        assert!(usize::from(inner.l3_offset) > usize::from(m.l3_offset));
        assert!(usize::from(inner.l4_offset) <= len);
        assert!(FlowKey::from_meta(&inner).is_some());
    } else {
        assert_eq!(inner, m);
    }
});
