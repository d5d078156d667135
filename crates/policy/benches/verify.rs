//! The verifier's questions on the ClassBench sets: shadowed rules, the proof that the
//! compiled classifier equals its list, and a comparison of two lists that differ by one
//! rule. `cargo bench -p rampart-policy --bench verify` (needs `../shared/data/classbench`
//! or `RAMPART_DATA`; prints one line and measures nothing without it). The baseline in the
//! same run: the proof against the whole list at once rather than partition by partition.

use std::hint::black_box;

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use rampart_classify::classbench::parse_rules;
use rampart_classify::{Compiled, Rule};
use rampart_policy::questions;
use rampart_policy::rules::{self, Layout};
use rampart_policy::validate::{first_match_dd, lift, prove};

fn bench(c: &mut Criterion) {
    let Some(dir) = common::data() else { return };
    let mut g = c.benchmark_group("verify");
    g.sample_size(10);
    for set in ["acl1_1k", "fw1_1k", "ipc1_1k", "acl1_10k", "fw1_10k", "ipc1_10k"] {
        let Some(text) = common::read_if_there(&dir, set) else { continue };
        let list: Vec<Rule> = parse_rules(set, &text).expect("rules");
        let compiled = Compiled::new(&list);
        g.bench_function(format!("{set}/shadowed"), |b| {
            b.iter(|| {
                let mut m = rules::manager(Layout::ClassBench);
                let model = rules::classbench(&mut m, &list);
                black_box(questions::shadowed(&mut m, &model).len())
            })
        });
        g.bench_function(format!("{set}/prove-by-partition"), |b| {
            b.iter(|| {
                let mut m = rules::manager(Layout::ClassBench);
                black_box(prove(&mut m, &list, &compiled).is_ok())
            })
        });
        if set.ends_with("1k") {
            g.bench_function(format!("{set}/prove-whole-lookup"), |b| {
                b.iter(|| {
                    let mut m = rules::manager(Layout::ClassBench);
                    let policy = first_match_dd(&mut m, &list);
                    let lifted = lift(&mut m, &compiled);
                    black_box(policy == lifted)
                })
            });
        }
        // Two lists differing by their middle rule (catch-alls left out: under them every
        // list accepts everything alike).
        let a: Vec<Rule> = list
            .iter()
            .filter(|r| r.hi[0] - r.lo[0] < 1 << 24 || r.hi[1] - r.lo[1] < 1 << 24)
            .copied()
            .collect();
        let mut b2 = a.clone();
        b2.remove(b2.len() / 2);
        g.bench_function(format!("{set}/compare"), |b| {
            b.iter(|| {
                let mut m = rules::manager(Layout::ClassBench);
                let mut ma = rules::classbench(&mut m, &a);
                let mut mb = rules::classbench(&mut m, &b2);
                black_box(matches!(
                    questions::compare(&mut m, &mut ma, &mut mb),
                    questions::Comparison::Equivalent
                ))
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
