//! Packets for the tracker's tests, built as frames and parsed as the engine parses them.

#![allow(dead_code)]

use rampart_conntrack::CtPacket;
use rampart_flow::{FlowKey, Side};
use rampart_wire::check::{finish, pseudo_header, sum};
use rampart_wire::{Family, LinkType, PacketMeta};

pub(crate) const CLIENT: [u8; 4] = [10, 0, 0, 1];
pub(crate) const SERVER: [u8; 4] = [10, 0, 0, 2];

fn addr16(a: [u8; 4]) -> [u8; 16] {
    let mut x = [0; 16];
    x[..4].copy_from_slice(&a);
    x
}

/// An Ethernet + IPv4 + TCP frame with right checksums, from the client when `client`.
pub(crate) fn tcp_frame(
    client: bool,
    flags: u16,
    seq: u32,
    ack: u32,
    win: u16,
    len: usize,
) -> Vec<u8> {
    let (src, dst, sp, dp) =
        if client { (CLIENT, SERVER, 40000, 80) } else { (SERVER, CLIENT, 80, 40000) };
    let mut t = Vec::with_capacity(20 + len);
    t.extend_from_slice(&u16::to_be_bytes(sp));
    t.extend_from_slice(&u16::to_be_bytes(dp));
    t.extend_from_slice(&seq.to_be_bytes());
    t.extend_from_slice(&ack.to_be_bytes());
    t.extend_from_slice(&[5 << 4, flags as u8]);
    t.extend_from_slice(&win.to_be_bytes());
    t.extend_from_slice(&[0, 0, 0, 0]);
    t.resize(20 + len, 0x61);
    let c =
        finish(sum(&t, pseudo_header(Family::V4, &addr16(src), &addr16(dst), 6, t.len() as u32)));
    t[16..18].copy_from_slice(&c.to_be_bytes());
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let mut ip = vec![0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 6, 0, 0];
    ip[2..4].copy_from_slice(&((20 + t.len()) as u16).to_be_bytes());
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let c = finish(sum(&ip, 0));
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&t);
    f
}

/// A frame's tracker facts and the side of its flow key that sent it.
pub(crate) fn facts(frame: &[u8]) -> (CtPacket, Side, FlowKey) {
    let m = PacketMeta::parse(LinkType::Ethernet, frame);
    let (key, side) = FlowKey::from_meta(&m).unwrap();
    (CtPacket::from_meta(&m, frame, true), side, key)
}
