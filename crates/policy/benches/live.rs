//! Proving the updatable classifier after one update, on the ClassBench 10K sets: a rule
//! deleted then inserted back, each followed by `LiveProver::check` (a proof by the rule's
//! box), with a compile and its full proof every 64 updates left out of the timing (the
//! compiling thread proves bases when the prover is attached). The baseline in the same run:
//! the whole snapshot proved from scratch (`prove_snapshot`).
//! `cargo bench -p rampart-policy --bench live` (needs `../shared/data/classbench` or
//! `RAMPART_DATA`; prints one line and measures nothing without it).

use std::time::{Duration, Instant};

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use rampart_classify::Classifier;
use rampart_classify::classbench::parse_rules;
use rampart_policy::live::{LiveProver, prove_snapshot};

fn bench(c: &mut Criterion) {
    let Some(dir) = common::data() else { return };
    let mut g = c.benchmark_group("live");
    g.sample_size(10);
    for set in ["acl1_10k", "fw1_10k", "ipc1_10k"] {
        let Some(text) = common::read_if_there(&dir, set) else { continue };
        let rules = parse_rules(set, &text).expect("rules");
        let mut cl = Classifier::new(&rules);
        cl.set_compile_after(usize::MAX);
        let mut prover = LiveProver::new();
        prover.check(&cl).expect("proved");
        let mut k = 0usize;
        g.bench_function(format!("{set}/update_proof"), |b| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    k = (k + 7919) % rules.len();
                    let (p, r) =
                        cl.rules().nth(k % cl.rules().count()).map(|(p, r)| (p, *r)).unwrap();
                    let t = Instant::now();
                    cl.delete(p).unwrap();
                    prover.check(&cl).expect("proved");
                    cl.insert(p, r).unwrap();
                    prover.check(&cl).expect("proved");
                    spent += t.elapsed() / 2;
                    if cl.pending() >= 64 {
                        cl.compile();
                        prover.check(&cl).expect("proved");
                    }
                }
                spent
            })
        });
        g.bench_function(format!("{set}/whole_snapshot"), |b| {
            let list: Vec<_> = cl.rules().map(|(p, r)| (p, *r)).collect();
            let snap = cl.snapshot();
            b.iter(|| prove_snapshot(&snap, &list).expect("proved"))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
