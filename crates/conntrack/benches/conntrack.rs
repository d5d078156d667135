//! The tracker's per-packet cost: an established flow's packet, a new flow's first packet,
//! and making the packet's facts (with and without checksum verification), each against a
//! baseline measured in the same run: the flow table's `track` of the same packets and
//! `PacketMeta::parse` of the same frames.
//!
//! Run: `cargo bench -p rampart-conntrack --bench conntrack`

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rampart_conntrack::{Config, Conntrack, CtPacket};
use rampart_flow::{FlowId, FlowKey, FlowTable, PacketInfo, Side, TableConfig};
use rampart_wire::check::{finish, pseudo_header, sum};
use rampart_wire::tcp::flags::{ACK, PSH, SYN};
use rampart_wire::{Family, LinkType, PacketMeta};

const FLOWS: u32 = 4096;

/// An Ethernet/IPv4/TCP frame of flow `i` with 100 bytes of payload (`len`), checksums right.
fn frame(i: u32, client: bool, flags: u16, seq: u32, ack: u32, len: usize) -> Vec<u8> {
    let c = [10, 1, (i >> 8) as u8, i as u8];
    let s = [10, 2, 0, 1];
    let (src, dst, sp, dp) = if client { (c, s, 40000u16, 443u16) } else { (s, c, 443, 40000) };
    let mut t = Vec::new();
    t.extend_from_slice(&sp.to_be_bytes());
    t.extend_from_slice(&dp.to_be_bytes());
    t.extend_from_slice(&seq.to_be_bytes());
    t.extend_from_slice(&ack.to_be_bytes());
    t.extend_from_slice(&[0x50, flags as u8, 0xfa, 0xf0, 0, 0, 0, 0]);
    t.resize(20 + len, 0x61);
    let (mut a, mut z) = ([0u8; 16], [0u8; 16]);
    a[..4].copy_from_slice(&src);
    z[..4].copy_from_slice(&dst);
    let ck = finish(sum(&t, pseudo_header(Family::V4, &a, &z, 6, t.len() as u32)));
    t[16..18].copy_from_slice(&ck.to_be_bytes());
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let mut ip = vec![0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 6, 0, 0];
    ip[2..4].copy_from_slice(&((20 + t.len()) as u16).to_be_bytes());
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let ck = finish(sum(&ip, 0));
    ip[10..12].copy_from_slice(&ck.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&t);
    f
}

struct Pkt {
    frame: Vec<u8>,
    facts: CtPacket,
    key: FlowKey,
    side: Side,
}

fn pkt(frame: Vec<u8>) -> Pkt {
    let m = PacketMeta::parse(LinkType::Ethernet, &frame);
    let (key, side) = FlowKey::from_meta(&m).unwrap();
    let facts = CtPacket::from_meta(&m, &frame, true);
    Pkt { frame, facts, key, side }
}

fn run(ct: &mut Conntrack, id: FlowId, p: &Pkt, now: u64, found: bool) {
    let now = rampart_wire::Timestamp::from_nanos(now);
    let insp = ct.inspect(found.then_some(id), p.side, &p.facts, now, |_, _| None);
    black_box(ct.commit(&insp, true, Some(id)));
}

fn bench(c: &mut Criterion) {
    // Established flows: handshake, then data both ways; the measured packets are the data
    // segment and its ACK, repeated (a repeated segment is a retransmission to the tracker,
    // which takes the same path).
    let mut ct = Conntrack::new(Config::default());
    let mut table = FlowTable::new(TableConfig::default());
    let mut steady = Vec::new();
    for i in 0..FLOWS {
        let id = FlowId(i);
        let hs = [
            pkt(frame(i, true, SYN, 1000, 0, 0)),
            pkt(frame(i, false, SYN | ACK, 5000, 1001, 0)),
            pkt(frame(i, true, ACK, 1001, 5001, 0)),
        ];
        for (n, p) in hs.iter().enumerate() {
            run(&mut ct, id, p, 1_000 + n as u64, n > 0);
        }
        steady.push((id, pkt(frame(i, true, ACK | PSH, 1001, 5001, 100))));
        steady.push((id, pkt(frame(i, false, ACK, 5001, 1101, 0))));
    }
    let infos: Vec<PacketInfo> = steady
        .iter()
        .map(|(_, p)| PacketInfo {
            key: p.key,
            side: p.side,
            hash: table.hash(&p.key),
            ts: rampart_wire::Timestamp::from_nanos(5_000),
            wire_len: p.frame.len() as u32,
            tcp_flags: ACK,
        })
        .collect();
    for i in &infos {
        table.track(i);
    }

    let mut g = c.benchmark_group("conntrack_per_packet");
    g.throughput(Throughput::Elements(steady.len() as u64));
    g.bench_function("flow_table_track (baseline)", |b| {
        b.iter(|| {
            for i in &infos {
                black_box(table.track(i));
            }
        })
    });
    g.bench_function("established", |b| {
        b.iter(|| {
            for (id, p) in &steady {
                run(&mut ct, *id, p, 10_000, true);
            }
        })
    });
    // New flows: a SYN into an empty slot (the slot is retired after, as the flow table
    // would when the flow ends; retiring is a 64-byte store).
    let syns: Vec<(FlowId, Pkt)> = (0..FLOWS)
        .map(|i| (FlowId(FLOWS + i), pkt(frame(i + 20_000, true, SYN, 1000, 0, 0))))
        .collect();
    let mut fresh = Conntrack::new(Config::default());
    g.throughput(Throughput::Elements(syns.len() as u64));
    g.bench_function("new_syn", |b| {
        b.iter(|| {
            for (id, p) in &syns {
                run(&mut fresh, *id, p, 10_000, false);
                fresh.retire(*id);
            }
        })
    });
    g.finish();

    let mut g = c.benchmark_group("conntrack_facts");
    g.throughput(Throughput::Elements(steady.len() as u64));
    g.bench_function("parse (baseline)", |b| {
        b.iter(|| {
            for (_, p) in &steady {
                black_box(PacketMeta::parse(LinkType::Ethernet, &p.frame));
            }
        })
    });
    for verify in [false, true] {
        let name = if verify { "parse+facts, checksums" } else { "parse+facts, no checksums" };
        g.bench_function(name, |b| {
            b.iter(|| {
                for (_, p) in &steady {
                    let m = PacketMeta::parse(LinkType::Ethernet, &p.frame);
                    black_box(CtPacket::from_meta(&m, &p.frame, verify));
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
