//! Parsing the bundled sample (3,226 frames, snap length 144: IPv4/IPv6 TCP, ICMP) into
//! `PacketMeta`, against etherparse's lax slicer extracting the same key fields in the same
//! run; and the one's-complement sum behind every checksum verified, over an IPv4 header, a
//! TCP header, a 576-byte and a full 1,480-byte segment, against RFC 1071's word-at-a-time loop.
//!
//! Run: `cargo bench -p rampart-wire --bench parse`

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use etherparse::{LaxNetSlice, LaxSlicedPacket, TransportSlice};
use rampart_wire::{LinkType, PacketMeta};

fn frames() -> Vec<Vec<u8>> {
    let b =
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../samples/mixed.pcap")).unwrap();
    let mut out = Vec::new();
    let mut off = 24;
    while off + 16 <= b.len() {
        let cap = u32::from_le_bytes(b[off + 8..off + 12].try_into().unwrap()) as usize;
        out.push(b[off + 16..off + 16 + cap].to_vec());
        off += 16 + cap;
    }
    out
}

fn parse(c: &mut Criterion) {
    let frames = frames();
    let mut g = c.benchmark_group("parse_sample");
    g.throughput(Throughput::Elements(frames.len() as u64));
    g.bench_function("rampart", |b| {
        b.iter(|| {
            let mut acc = 0u64;
            for f in &frames {
                let m = PacketMeta::parse(LinkType::Ethernet, f);
                acc ^= u64::from(m.sport) ^ u64::from(m.src[3]) ^ u64::from(m.tcp.seq);
            }
            black_box(acc)
        })
    });
    g.bench_function("etherparse_lax", |b| {
        b.iter(|| {
            let mut acc = 0u64;
            for f in &frames {
                if let Ok(p) = LaxSlicedPacket::from_ethernet(f) {
                    if let Some(LaxNetSlice::Ipv4(ip)) = &p.net {
                        acc ^= u64::from(ip.header().source()[3]);
                    }
                    if let Some(LaxNetSlice::Ipv6(ip)) = &p.net {
                        acc ^= u64::from(ip.header().source()[3]);
                    }
                    if let Some(TransportSlice::Tcp(t)) = &p.transport {
                        acc ^= u64::from(t.source_port()) ^ u64::from(t.sequence_number());
                    }
                }
            }
            black_box(acc)
        })
    });
    g.finish();
}

/// RFC 1071's loop: big-endian 16-bit words one at a time, carries folded back at the end.
fn rfc1071(bytes: &[u8]) -> u16 {
    let mut s = 0u64;
    for w in bytes.chunks(2) {
        s += u64::from(w[0]) << 8 | u64::from(w.get(1).copied().unwrap_or(0));
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

fn checksum(c: &mut Criterion) {
    let mut g = c.benchmark_group("checksum");
    for len in [20usize, 40, 576, 1480] {
        let bytes: Vec<u8> = (0..len).map(|i| (i * 131 + 7) as u8).collect();
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_function(BenchmarkId::new("rampart", len), |b| {
            b.iter(|| rampart_wire::check::fold(rampart_wire::check::sum(black_box(&bytes), 0)))
        });
        g.bench_function(BenchmarkId::new("rfc1071_words", len), |b| {
            b.iter(|| rfc1071(black_box(&bytes)))
        });
    }
    g.finish();
}

criterion_group!(benches, parse, checksum);
criterion_main!(benches);
