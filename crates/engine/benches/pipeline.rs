//! Parse + flow tracking per packet with a warmed table of 64 K and 1 M live flows, packets
//! picked at random among the flows (a busy link), against a peer baseline measured in the same
//! run: the same parser feeding a `hashbrown::HashMap` with foldhash, one lookup per packet
//! (what the project's ingest notes measured at 148 ns/packet for 64 K flows).
//!
//! `time_jump`: the whole pipeline (every stage on, as `rampart flows` runs it) over the same
//! packets of 12 K, 24 K and 47 K flows with plain timestamps, with the first packet dated 1970,
//! and with one packet in the middle dated 1970: a jump in capture time must cost the timers
//! nothing beyond the flows it ends.
//!
//! Run: `cargo bench -p rampart-engine --bench pipeline`

use std::hint::black_box;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rampart_capture::{Frame, LinkType, Timestamp};
use rampart_engine::{Events, FlowsConfig, Pipeline, Summary, Verdict};
use rampart_flow::{FlowKey, TableConfig};
use rampart_wire::PacketMeta;

const STRIDE: usize = 72;
const SEQUENCE: usize = 1 << 20;
const BATCH: usize = 256;

/// Ethernet + IPv4 + TCP with the timestamps option: flow `i`, client or server side.
fn write_frame(out: &mut [u8], i: u32, reverse: bool) {
    let client = [10, (i >> 16) as u8, (i >> 8) as u8, i as u8];
    let server = [192, 0, 2, 1];
    let cport = 1024 + (i % 50_000) as u16;
    let (src, dst, sp, dp) =
        if reverse { (server, client, 443, cport) } else { (client, server, cport, 443) };
    let f = &mut out[..66];
    f[..14].copy_from_slice(&[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00]);
    f[14..26].copy_from_slice(&[0x45, 0, 0, 52, 0, 0, 0x40, 0, 64, 6, 0, 0]);
    f[26..30].copy_from_slice(&src);
    f[30..34].copy_from_slice(&dst);
    f[34..36].copy_from_slice(&sp.to_be_bytes());
    f[36..38].copy_from_slice(&dp.to_be_bytes());
    f[38..46].copy_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1]);
    f[46..48].copy_from_slice(&[0x80, 0x10]);
    f[48..54].copy_from_slice(&[0xff, 0xff, 0, 0, 0, 0]);
    f[54..66].copy_from_slice(&[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
}

/// A capture in memory: `SEQUENCE` frames laid out one after another in arrival order, each of
/// a uniformly random flow and direction, as a page-cached capture of a busy link would be.
struct Workload {
    stream: Vec<u8>,
    flows: u32,
}

impl Workload {
    fn new(flows: u32) -> Self {
        let mut stream = vec![0u8; SEQUENCE * STRIDE];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for n in 0..SEQUENCE {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let pick = (x % (u64::from(flows) * 2)) as u32;
            write_frame(&mut stream[n * STRIDE..(n + 1) * STRIDE], pick / 2, pick % 2 == 1);
        }
        Self { stream, flows }
    }

    /// Frame `n` of the stream.
    fn frame(&self, n: usize) -> Frame<'_> {
        frame_at(&self.stream, n, n)
    }
}

fn frame_at(buf: &[u8], i: usize, n: usize) -> Frame<'_> {
    let at = i * STRIDE;
    Frame {
        ts: Timestamp::from_nanos(1_700_000_000_000_000_000 + n as u64),
        origlen: 66,
        link: LinkType::Ethernet,
        interface: 0,
        offset: at as u64,
        data: &buf[at..at + 66],
    }
}

/// One frame of each flow, to fill a table before measuring.
fn warm_frames(flows: u32) -> Vec<u8> {
    let mut buf = vec![0u8; flows as usize * STRIDE];
    for i in 0..flows {
        write_frame(&mut buf[i as usize * STRIDE..(i as usize + 1) * STRIDE], i, false);
    }
    buf
}

fn pipeline(c: &mut Criterion) {
    let mut g = c.benchmark_group("parse_and_track");
    g.throughput(Throughput::Elements(BATCH as u64));
    for flows in [65_536u32, 1_000_000] {
        let w = Workload::new(flows);
        let warm = warm_frames(flows);
        let cfg = TableConfig { max_flows: flows as usize, ..TableConfig::default() };
        let mut stage = Pipeline::table_only(cfg);
        let mut s = Summary::default();
        let (mut verdicts, mut events) = (Vec::new(), Events::default());
        for chunk in (0..flows as usize).collect::<Vec<_>>().chunks(BATCH) {
            let frames: Vec<_> = chunk.iter().map(|&i| frame_at(&warm, i, 0)).collect();
            stage.process(&frames, Verdict::Accept, &mut verdicts, &mut events, &mut s);
        }
        assert_eq!(stage.table().len(), flows as usize);
        eprintln!(
            "{} flows: table {} bytes = {} bytes per flow",
            flows,
            stage.table().memory_bytes(),
            stage.table().memory_bytes() / flows as usize
        );
        let mut at = 0;
        let mut frames = Vec::with_capacity(BATCH);
        g.bench_function(BenchmarkId::new("rampart", w.flows), |b| {
            b.iter(|| {
                frames.clear();
                frames.extend((at..at + BATCH).map(|n| w.frame(n)));
                events.clear();
                stage.process(&frames, Verdict::Accept, &mut verdicts, &mut events, &mut s);
                at = (at + BATCH) % SEQUENCE;
                black_box(events.records.len());
            })
        });
        assert_eq!(stage.table().len(), flows as usize, "no flow ended while measuring");

        type Map = hashbrown::HashMap<FlowKey, [u64; 4], foldhash::fast::RandomState>;
        let mut map: Map = Map::with_capacity_and_hasher(flows as usize, Default::default());
        for i in 0..flows as usize {
            track_in_map(&mut map, frame_at(&warm, i, 0));
        }
        let mut at = 0;
        g.bench_function(BenchmarkId::new("hashbrown_foldhash", w.flows), |b| {
            b.iter(|| {
                for n in at..at + BATCH {
                    track_in_map(&mut map, w.frame(n));
                }
                at = (at + BATCH) % SEQUENCE;
            })
        });
    }
    g.finish();
}

/// Flows live at once in a [`jump_frames`] capture, and packets each flow sends.
const LIVE: usize = 600;
const PER_FLOW: usize = 8;

/// The frames of `flows` flows, `LIVE` of them at a time taking turns (client, then server,
/// and so on) for `PER_FLOW` packets each, 1 ns apart in 2023 (as [`frame_at`] dates them),
/// like the nDPI captures copied with new addresses and packed in time; with `jump`, packet
/// `jump` is dated 1970.
fn jump_frames(buf: &[u8], jump: Option<usize>) -> Vec<Frame<'_>> {
    let n = buf.len() / STRIDE;
    (0..n)
        .map(|i| {
            let mut f = frame_at(buf, i, i);
            if Some(i) == jump {
                f.ts = Timestamp::from_nanos(0);
            }
            f
        })
        .collect()
}

fn time_jump(c: &mut Criterion) {
    let mut g = c.benchmark_group("time_jump");
    g.sample_size(10);
    for flows in [12_000usize, 24_000, 47_000] {
        let packets = flows * PER_FLOW;
        let mut buf = vec![0u8; packets * STRIDE];
        for n in 0..packets {
            let (block, j) = (n / (LIVE * PER_FLOW), n % (LIVE * PER_FLOW));
            let flow = (block * LIVE + j % LIVE) as u32;
            write_frame(&mut buf[n * STRIDE..(n + 1) * STRIDE], flow, (j / LIVE) % 2 == 1);
        }
        g.throughput(Throughput::Elements(packets as u64));
        for (name, jump) in
            [("plain", None), ("first_1970", Some(0)), ("middle_1970", Some(packets / 2))]
        {
            let frames = jump_frames(&buf, jump);
            g.bench_function(BenchmarkId::new(name, flows), |b| {
                b.iter_batched(
                    || Pipeline::new(&FlowsConfig::default()),
                    |mut stage| {
                        let (mut verdicts, mut events, mut s) =
                            (Vec::new(), Events::default(), Summary::default());
                        for batch in frames.chunks(BATCH) {
                            events.clear();
                            stage.process(
                                batch,
                                Verdict::Accept,
                                &mut verdicts,
                                &mut events,
                                &mut s,
                            );
                        }
                        black_box(stage.table().len())
                    },
                    BatchSize::PerIteration,
                )
            });
        }
    }
    g.finish();
}

#[inline]
fn track_in_map<S: std::hash::BuildHasher>(
    map: &mut hashbrown::HashMap<FlowKey, [u64; 4], S>,
    f: Frame<'_>,
) {
    let m = PacketMeta::parse(f.link, f.data);
    if let Some((key, side)) = FlowKey::from_meta(&m) {
        let e = map.entry(key).or_default();
        let d = if side == rampart_flow::Side::A { 0 } else { 2 };
        e[d] += 1;
        e[d + 1] += u64::from(f.origlen);
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(4));
    targets = pipeline, time_jump
}
criterion_main!(benches);
