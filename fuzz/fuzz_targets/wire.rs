//! One frame: the first byte picks the link type, the rest is the frame. The parser must not
//! panic, and what it reports must lie inside the frame.
#![no_main]

use rampart_flow::FlowKey;
use rampart_wire::{Family, LinkType, PacketMeta, Status};

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
    if let Some(i) = m.status.problem_index() {
        assert!(i < Status::PROBLEMS);
        assert_ne!(Status::problem_name(i), "unknown");
    }
});
