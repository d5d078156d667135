//! The compiled classifier against the linear first-match oracle.

use std::path::PathBuf;
use std::process::Command;

use proptest::prelude::*;
use rampart_classify::bench::{near_miss_headers, uniform_headers};
use rampart_classify::classbench::{parse_rules, parse_trace};
use rampart_classify::linear::first_match;
use rampart_classify::{Compiled, Header, Kernel, Rule, Start};

/// The compiled classifier once per kernel this CPU runs (the scalar one always), so that
/// every lookup path is held to the oracle; prints which ran.
fn kernels(c: &Compiled) -> Vec<Compiled> {
    let run: Vec<Compiled> = Kernel::ALL
        .into_iter()
        .filter_map(|k| {
            let mut c = c.clone();
            c.set_kernel(k).then_some(c)
        })
        .collect();
    assert!(run.iter().any(|c| c.kernel() == Kernel::Scalar));
    run
}

/// Partitions looked up as bit vectors.
fn vector_partitions(c: &Compiled) -> usize {
    (0..c.partitions()).filter(|&p| matches!(c.start(p), Start::Vectors(_))).count()
}

fn data() -> Option<PathBuf> {
    rampart_testkit::shared("differential", "classbench")
}

/// A file's text, unpacking `NAME.gz` when only that exists.
fn read(dir: &std::path::Path, name: &str) -> String {
    let plain = dir.join(name);
    if plain.exists() {
        return std::fs::read_to_string(plain).unwrap();
    }
    let out = Command::new("gzip").arg("-dc").arg(dir.join(format!("{name}.gz"))).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// Headers at and just outside each field's ends of some rules, plus pseudo-random ones.
fn probes(rules: &[Rule], n: usize, seed: u64) -> Vec<Header> {
    let mut s = seed;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let max = Rule::ANY.hi;
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let r = &rules[next() as usize % rules.len()];
        let mut h = Header(std::array::from_fn(|d| {
            let span = u64::from(r.hi[d] - r.lo[d]) + 1;
            r.lo[d] + (next() % span) as u32
        }));
        let d = next() as usize % 5;
        h.0[d] = match next() % 5 {
            0 => r.lo[d],
            1 => r.hi[d],
            2 => r.lo[d].wrapping_sub(1).min(max[d]),
            3 => r.hi[d].saturating_add(1).min(max[d]),
            _ => (next() as u32) % (max[d].saturating_add(1).max(1)),
        };
        if next() % 8 == 0 {
            h = Header(std::array::from_fn(|d| (next() as u32) % max[d].saturating_add(1).max(1)));
            h.0[0] = next() as u32;
            h.0[1] = next() as u32;
        }
        out.push(h);
    }
    out
}

fn check(set: &str, stride: usize, extra: usize) {
    let Some(dir) = data() else { return };
    let rules = parse_rules(set, &read(&dir, set)).unwrap();
    let trace = parse_trace(set, &read(&dir, &format!("{set}_trace"))).unwrap();
    let c = Compiled::new(&rules);
    let headers: Vec<Header> = trace.iter().step_by(stride).map(|t| t.header).collect();
    let mut checked = 0;
    // Without the catch-all last rule too, so "no match" is exercised.
    for rules in [&rules[..], &rules[..rules.len() - 1]] {
        let c2;
        let c = if rules.len() == c.stats().rules {
            &c
        } else {
            c2 = Compiled::new(rules);
            &c2
        };
        let all: Vec<Header> = headers
            .iter()
            .copied()
            .chain(probes(rules, extra, 0x9e37_79b9_7f4a_7c15))
            .chain(uniform_headers(extra / 4))
            .chain(near_miss_headers(rules, extra / 4))
            .collect();
        let want: Vec<Option<usize>> = all.iter().map(|h| first_match(rules, h)).collect();
        for c in kernels(c) {
            let k = c.kernel().name();
            println!("{set}: kernel {k}, {} bit-vector partitions", vector_partitions(&c));
            let mut batch = vec![None; all.len()];
            c.classify_batch(&all, &mut batch);
            let mut lanes = vec![None; all.len()];
            c.classify_interleaved(&all, &mut lanes);
            for (((h, b), l), want) in all.iter().zip(&batch).zip(&lanes).zip(&want) {
                assert_eq!(c.classify(h), *want, "{set} {k}: {h:?}");
                assert_eq!(*b, *want, "{set} {k} batched: {h:?}");
                assert_eq!(*l, *want, "{set} {k} interleaved: {h:?}");
                checked += 1;
            }
        }
    }
    assert!(checked > 0);
    // Deletes (tombstones in the compiled base, including wide rules that hid others) and
    // inserts (the delta), against the oracle on the rule list as it then is.
    let mut live = rampart_classify::Classifier::new(&rules);
    let reader = live.reader();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for step in 0..60 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let prios: Vec<u64> = live.rules().map(|(p, _)| p).collect();
        if step % 3 == 2 {
            let p = prios[x as usize % prios.len()] + 1 + (x >> 40) % 1000;
            let _ = live.insert(p, rules[(x >> 20) as usize % rules.len()]);
        } else {
            // Wide rules first: they are the ones that hide others in the compiled trees.
            let wide = prios.iter().rev().take(20).copied().collect::<Vec<_>>();
            let victim = if step % 2 == 0 {
                wide[x as usize % wide.len()]
            } else {
                prios[x as usize % prios.len()]
            };
            live.delete(victim).unwrap();
        }
    }
    let list: Vec<(u64, Rule)> = live.rules().map(|(p, r)| (p, *r)).collect();
    let now: Vec<Rule> = list.iter().map(|(_, r)| *r).collect();
    for h in headers.iter().take(20_000).chain(&probes(&now, extra / 4, 7)) {
        let want = first_match(&now, h).map(|i| list[i].0);
        assert_eq!(reader.classify(h), want, "{set} after updates: {h:?}");
    }
}

#[test]
fn acl1_100k_sampled() {
    check("acl1_100k", 97, 2_000);
}

#[test]
fn fw1_100k_sampled() {
    check("fw1_100k", 97, 2_000);
}

#[test]
fn ipc1_100k_sampled() {
    check("ipc1_100k", 97, 2_000);
}

#[test]
fn acl1_1k() {
    check("acl1_1k", 1, 50_000);
}

#[test]
fn fw1_1k() {
    check("fw1_1k", 1, 50_000);
}

#[test]
fn ipc1_1k() {
    check("ipc1_1k", 1, 50_000);
}

#[test]
fn acl1_10k() {
    check("acl1_10k", 1, 20_000);
}

#[test]
fn fw1_10k() {
    check("fw1_10k", 1, 20_000);
}

#[test]
fn ipc1_10k() {
    check("ipc1_10k", 1, 20_000);
}

fn rule_strategy() -> impl Strategy<Value = Rule> {
    let addr =
        (any::<u32>(), prop_oneof![Just(0u8), Just(8), Just(16), Just(24), Just(32), 0u8..=32])
            .prop_map(|(a, l)| Rule::prefix(a & 0xff00_ff0f, l));
    let port = prop_oneof![
        Just((0u32, 65535u32)),
        Just((0, 1023)),
        Just((1024, 65535)),
        (0u32..70).prop_map(|p| (p, p)),
        (0u32..70, 0u32..70).prop_map(|(a, b)| (a.min(b), a.max(b))),
    ];
    let proto = prop_oneof![Just((0u32, 255u32)), Just((6, 6)), Just((17, 17))];
    (addr.clone(), addr, port.clone(), port, proto).prop_map(|(s, d, sp, dp, p)| Rule {
        lo: [s.0, d.0, sp.0, dp.0, p.0],
        hi: [s.1, d.1, sp.1, dp.1, p.1],
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn small_random_rule_lists(rules in prop::collection::vec(rule_strategy(), 1..64), seed in any::<u64>()) {
        let c = Compiled::new(&rules);
        for c in kernels(&c) {
            let hs = probes(&rules, 400, seed | 1);
            let mut lanes = vec![None; hs.len()];
            c.classify_interleaved(&hs, &mut lanes);
            for (h, l) in hs.iter().zip(&lanes) {
                let want = first_match(&rules, h);
                prop_assert_eq!(c.classify(h), want, "{} {:?}", c.kernel().name(), h);
                prop_assert_eq!(*l, want, "{} interleaved {:?}", c.kernel().name(), h);
                prop_assert_eq!(
                    c.classify_live(h, |_| true), want, "{} live {:?}", c.kernel().name(), h
                );
            }
        }
    }
}
