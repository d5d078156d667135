//! The compiled classifier against the linear first-match scan, in the same run, on the
//! ClassBench sets (trace headers and uniformly random headers), and the cost of one update.
//! `cargo bench -p rampart-classify --bench classify` (needs `../shared/data/classbench`, or
//! `RAMPART_DATA`; prints one line and measures nothing without it).

use std::hint::black_box;
use std::path::PathBuf;
use std::process::Command;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rampart_classify::bench::uniform_headers;
use rampart_classify::classbench::{parse_rules, parse_trace};
use rampart_classify::linear::first_match;
use rampart_classify::{Classifier, Compiled, Header, Kernel, Rule};

fn read(dir: &std::path::Path, name: &str) -> Option<String> {
    let plain = dir.join(name);
    if plain.exists() {
        return std::fs::read_to_string(plain).ok();
    }
    let out = Command::new("gzip").arg("-dc").arg(dir.join(format!("{name}.gz"))).output().ok()?;
    String::from_utf8(out.stdout).ok()
}

fn bench(c: &mut Criterion) {
    let dir = std::env::var_os("RAMPART_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data").into())
        .join("classbench");
    if !dir.is_dir() {
        println!("skipped: no ClassBench data at {}", dir.display());
        return;
    }
    let mut g = c.benchmark_group("classify");
    for set in [
        "acl1_1k",
        "fw1_1k",
        "ipc1_1k",
        "acl1_10k",
        "fw1_10k",
        "ipc1_10k",
        "acl1_100k",
        "fw1_100k",
        "ipc1_100k",
    ] {
        let (Some(r), Some(t)) = (read(&dir, set), read(&dir, &format!("{set}_trace"))) else {
            continue;
        };
        let rules: Vec<Rule> = parse_rules(set, &r).expect("rules");
        let trace: Vec<Header> =
            parse_trace(set, &t).expect("trace").iter().map(|e| e.header).collect();
        let compiled = Compiled::new(&rules);
        let mut out = vec![None; trace.len()];
        g.throughput(Throughput::Elements(trace.len() as u64));
        g.bench_function(format!("{set}/trace/compiled"), |b| {
            b.iter(|| compiled.classify_batch(black_box(&trace), &mut out))
        });
        // Uniform headers, 100,000 of them (a few thousand repeated let the branch
        // predictor learn the sequence), with every kernel this CPU runs.
        let random = uniform_headers(100_000);
        let mut out = vec![None; random.len()];
        g.throughput(Throughput::Elements(random.len() as u64));
        for kernel in Kernel::ALL {
            let mut c = compiled.clone();
            if !c.set_kernel(kernel) {
                continue;
            }
            g.bench_function(format!("{set}/uniform/compiled-{}", kernel.name()), |b| {
                b.iter(|| c.classify_batch(black_box(&random), &mut out))
            });
        }
        // The baseline: the linear scan, on a sample (it is slow at 100K).
        let sample: Vec<Header> =
            trace.iter().step_by((trace.len() / 512).max(1)).copied().collect();
        g.throughput(Throughput::Elements(sample.len() as u64));
        g.bench_function(format!("{set}/trace/linear"), |b| {
            b.iter(|| {
                sample.iter().map(|h| first_match(&rules, black_box(h)).unwrap_or(0)).sum::<usize>()
            })
        });
        if set.ends_with("10k") {
            // Lookups while changes pend: every 16th rule deleted and inserted again (so it
            // sits in the delta, a tuple space), against the same rules scanned as a sorted
            // list (the delta's previous form), on the trace.
            let mut live = Classifier::new(&rules);
            live.set_compile_after(usize::MAX);
            let moved: Vec<(u64, Rule)> = (0..rules.len())
                .step_by(16)
                .map(|i| (Classifier::initial_priority(i), rules[i]))
                .collect();
            for (p, r) in &moved {
                live.delete(*p).expect("present");
                live.insert(*p, *r).expect("free");
            }
            let reader = live.reader();
            let snap = reader.snapshot();
            // The baseline: the same tombstones, the moved rules in a list.
            let mut dead = Classifier::new(&rules);
            dead.set_compile_after(usize::MAX);
            for (p, _) in &moved {
                dead.delete(*p).expect("present");
            }
            let dead_reader = dead.reader();
            let dead_snap = dead_reader.snapshot();
            let mut out = vec![None; trace.len()];
            g.throughput(Throughput::Elements(trace.len() as u64));
            g.bench_function(format!("{set}/trace/pending-{}/tuples", moved.len()), |b| {
                b.iter(|| snap.classify_batch(black_box(&trace), &mut out))
            });
            g.bench_function(format!("{set}/trace/pending-{}/sorted-list", moved.len()), |b| {
                b.iter(|| {
                    trace
                        .iter()
                        .map(|h| {
                            let base = dead_snap.classify(black_box(h));
                            let d = moved
                                .iter()
                                .take_while(|(p, _)| base.is_none_or(|b| *p < b))
                                .find(|(_, r)| r.matches(h));
                            d.map_or(base, |(p, _)| Some(*p)).unwrap_or(0)
                        })
                        .fold(0u64, |a, b| a ^ b)
                })
            });
        }
        if set.ends_with("10k") || set.ends_with("100k") {
            g.throughput(Throughput::Elements(2));
            let mut live = Classifier::new(&rules);
            let mut i = 0u64;
            g.bench_function(format!("{set}/insert+delete"), |b| {
                b.iter(|| {
                    i += 1;
                    let p = Classifier::initial_priority((i as usize * 7919) % rules.len()) + 1;
                    live.insert(p, rules[i as usize % rules.len()]).expect("free priority");
                    live.delete(p).expect("just inserted");
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
