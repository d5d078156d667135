//! Per-packet cost of RTT matching on the bundled sample (3,226 real packets, replayed with
//! shifted timestamps so tables stay warm), against parsing alone in the same run:
//! `cargo bench -p rampart-engine --bench rtt`.

use std::hint::black_box;
use std::sync::atomic::AtomicBool;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rampart_capture::Capture;
use rampart_engine::{FlowFn, FlowsConfig, run};
use rampart_rtt::{CompatConfig, PpingCompat, compat_view};
use rampart_wire::{LinkType, PacketMeta};

fn frames() -> Vec<(u64, Vec<u8>)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../samples/mixed.pcap");
    let mut cap = Capture::open(std::path::Path::new(path)).unwrap();
    let mut out = Vec::new();
    loop {
        let b = cap.next_batch(256).unwrap();
        if b.is_empty() {
            break;
        }
        out.extend(b.iter().map(|f| (f.ts.as_nanos(), f.data.to_vec())));
    }
    out
}

fn bench(c: &mut Criterion) {
    let frames = frames();
    let mut g = c.benchmark_group("rtt");
    g.throughput(Throughput::Elements(frames.len() as u64));
    g.bench_function("parse only (baseline)", |b| {
        b.iter(|| {
            for (_, f) in &frames {
                black_box(PacketMeta::parse(LinkType::Ethernet, f));
            }
        })
    });
    g.bench_function("compat pping", |b| {
        let mut p = PpingCompat::new(CompatConfig { sum_int: 0.0, ..CompatConfig::default() });
        let mut shift = 0u64;
        b.iter(|| {
            shift += 10_000_000_000;
            for (ts, f) in &frames {
                let meta = PacketMeta::parse(LinkType::Ethernet, f);
                let v = compat_view(LinkType::Ethernet, f, &meta);
                let t = ts + shift;
                black_box(p.packet(rampart_wire::Timestamp::from_nanos(t), &v));
            }
        })
    });
    let mut pcap = Vec::new();
    {
        let mut w =
            rampart_capture::PcapWriter::new(&mut pcap, LinkType::Ethernet, 262_144, true).unwrap();
        for (ts, f) in &frames {
            w.write(rampart_capture::Timestamp::from_nanos(*ts), f.len() as u32, f).unwrap();
        }
        w.flush().unwrap();
    }
    for (name, rtt) in
        [("flows without rtt", None), ("flows with rtt (default mode)", FlowsConfig::default().rtt)]
    {
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut cap = Capture::from_bytes("bench", pcap.clone()).unwrap();
                let cfg = FlowsConfig { rtt, samples: true, ..FlowsConfig::default() };
                let stop = AtomicBool::new(false);
                let mut n = 0u64;
                let mut sink = FlowFn(|_: &_| {
                    n += 1;
                    Ok(())
                });
                black_box(run(&mut cap, &cfg, None, &stop, &mut sink, &mut |_| {}).unwrap());
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
