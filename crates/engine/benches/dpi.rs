//! What application identification adds to the pipeline, measured on real traffic: every frame
//! of the shared nDPI captures (`../shared/data/pcaps/dpi/ndpi/pcap`, held in memory) through
//! [`Pipeline::process`] with identification on and off in the same run.
//!
//! - `new_flows`: a fresh stage each time, so every flow is new and inspected from its first
//!   payload; (on - off) / flows is what identification adds per new flow.
//! - `decided`: the same frames again through a stage that has seen them all, so every flow
//!   exists and is decided; (on - off) / packets is what it adds per packet then.
//!
//! `cargo bench -p rampart-engine --bench dpi` (prints one line and measures nothing without
//! the data).

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use rampart_capture::{Capture, Frame, LinkType, Timestamp};
use rampart_engine::{Events, FlowsConfig, Pipeline, Summary, Verdict};
use rampart_flow::TableConfig;

/// One captured frame, owned.
struct Owned {
    link: LinkType,
    ts: u64,
    origlen: u32,
    data: Vec<u8>,
}

fn load() -> Option<Vec<Owned>> {
    let dir = std::env::var_os("RAMPART_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data").into())
        .join("pcaps/dpi/ndpi/pcap");
    if !dir.is_dir() {
        println!("skipped: no nDPI captures at {}", dir.display());
        return None;
    }
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(&dir).ok()?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    let mut out = Vec::new();
    // Captures follow one another in time, a second apart, so no flow idles out between them.
    let mut clock = 1_700_000_000_000_000_000u64;
    for f in files {
        let Ok(mut cap) = Capture::open(&f) else { continue };
        let mut first = None;
        let mut last = clock;
        while let Ok(batch) = cap.next_batch(256)
            && !batch.is_empty()
        {
            for fr in batch.iter() {
                let t0 = *first.get_or_insert(fr.ts.as_nanos());
                let ts = clock + fr.ts.as_nanos().saturating_sub(t0).min(60_000_000_000);
                last = last.max(ts);
                out.push(Owned { link: fr.link, ts, origlen: fr.origlen, data: fr.data.to_vec() });
            }
        }
        clock = last + 1_000_000_000;
    }
    Some(out)
}

fn frames(owned: &[Owned]) -> Vec<Frame<'_>> {
    owned
        .iter()
        .map(|o| Frame {
            ts: Timestamp::from_nanos(o.ts),
            origlen: o.origlen,
            link: o.link,
            interface: 0,
            offset: 0,
            data: &o.data,
        })
        .collect()
}

fn stage(dpi: bool) -> Pipeline {
    let table = TableConfig {
        max_flows: 1 << 14,
        idle_timeout: rampart_wire::Span::from_secs(3_600),
        ..TableConfig::default()
    };
    let dpi = dpi.then(rampart_dpi::Config::default);
    Pipeline::new(&FlowsConfig { table, rtt: None, dpi, ..FlowsConfig::default() })
}

/// Runs every frame through `st` in batches of 256; returns the flows ended.
fn pass(st: &mut Pipeline, frames: &[Frame<'_>], s: &mut Summary) -> usize {
    let (mut n, mut verdicts, mut events) = (0, Vec::new(), Events::default());
    for batch in frames.chunks(256) {
        events.clear();
        st.process(batch, Verdict::Accept, &mut verdicts, &mut events, s);
        n += events.records.len();
    }
    n
}

/// Ends every flow; returns how many.
fn finish(st: &mut Pipeline) -> usize {
    let mut events = Events::default();
    st.finish(&mut events);
    events.records.len()
}

fn bench(c: &mut Criterion) {
    let Some(owned) = load() else { return };
    let frames = frames(&owned);
    let mut s = Summary::default();
    let mut probe = stage(true);
    pass(&mut probe, &frames, &mut s);
    let flows = finish(&mut probe);
    println!("{} frames, {flows} flows", frames.len());

    let mut g = c.benchmark_group("pipeline_dpi");
    g.sample_size(20);
    for on in [false, true] {
        let name = if on { "on" } else { "off" };
        g.bench_function(BenchmarkId::new("new_flows", name), |b| {
            b.iter(|| {
                let mut st = stage(on);
                let mut s = Summary::default();
                let n = pass(&mut st, &frames, &mut s);
                black_box(n + finish(&mut st))
            })
        });
    }
    for on in [false, true] {
        let name = if on { "on" } else { "off" };
        let mut st = stage(on);
        let mut s = Summary::default();
        // Twice, so that flows still undecided after one pass run out of budget.
        pass(&mut st, &frames, &mut s);
        pass(&mut st, &frames, &mut s);
        g.bench_function(BenchmarkId::new("decided", name), |b| {
            b.iter(|| black_box(pass(&mut st, &frames, &mut s)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
