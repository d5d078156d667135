//! The updatable classifier proved after every update and compile, and stale snapshots (a
//! change not published) caught with a packet that really tells them apart.

mod common;

use std::time::{Duration, Instant};

use common::{data, read};
use proptest::prelude::*;
use rampart_classify::classbench::parse_rules;
use rampart_classify::{Classifier, Header, Rule};
use rampart_policy::live::{LiveError, LiveProver, prove_change, prove_snapshot};

fn rule() -> impl Strategy<Value = Rule> {
    let addr = (any::<u32>(), prop_oneof![Just(0u8), Just(8), Just(16), Just(24), 0u8..=32])
        .prop_map(|(a, l)| Rule::prefix(a & 0x0f00_0f0f, l));
    let port = prop_oneof![
        Just((0u32, 65535u32)),
        Just((1024, 65535)),
        (0u32..40).prop_map(|p| (p, p)),
        (0u32..40, 0u32..40).prop_map(|(a, b)| (a.min(b), a.max(b))),
    ];
    let proto = prop_oneof![Just((0u32, 255u32)), Just((6, 6)), Just((17, 17))];
    (addr.clone(), addr, port.clone(), port, proto).prop_map(|(s, d, sp, dp, p)| Rule {
        lo: [s.0, d.0, sp.0, dp.0, p.0],
        hi: [s.1, d.1, sp.1, dp.1, p.1],
    })
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u64, Rule),
    /// Delete the k-th rule (mod the count).
    Delete(usize),
    Compile,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u64..5_000_000, rule()).prop_map(|(p, r)| Op::Insert(p, r)),
        4 => any::<usize>().prop_map(Op::Delete),
        1 => Just(Op::Compile),
    ]
}

/// The list's first match, by scan.
fn scan(c: &Classifier, h: &Header) -> Option<u64> {
    c.rules().find(|(_, r)| r.matches(h)).map(|(p, _)| p)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every update proved, by region after one update, in full after a compile.
    #[test]
    fn every_update_proved(
        rules in prop::collection::vec(rule(), 0..60),
        ops in prop::collection::vec(op(), 1..60),
        after in 1usize..12,
    ) {
        let mut c = Classifier::new(&rules);
        c.set_compile_after(after);
        let mut prover = LiveProver::new();
        prop_assert!(prover.check(&c).unwrap().full);
        for op in ops {
            let before = c.snapshot();
            let base_before = before.base_generation();
            let list_before: Vec<(u64, Rule)> = c.rules().map(|(p, r)| (p, *r)).collect();
            match op {
                Op::Insert(p, r) => {
                    if c.insert(p, r).is_err() {
                        continue;
                    }
                }
                Op::Delete(k) => {
                    let n = c.rules().count();
                    if n == 0 {
                        continue;
                    }
                    let p = c.rules().nth(k % n).unwrap().0;
                    c.delete(p).unwrap();
                }
                Op::Compile => c.compile(),
            }
            let proof = prover.check(&c).map_err(|e| TestCaseError::fail(e.to_string()))?;
            // A new base is proved in full; one update on the same base, by its region only.
            let new_base = c.snapshot().base_generation() != base_before;
            prop_assert_eq!(proof.full, new_base);
            // The snapshot from before the update against the list after it: caught when
            // the change decides some packet, with a packet where they really differ.
            if let Some((_, changed, _)) = c.last_update() {
                let list: Vec<(u64, Rule)> = c.rules().map(|(p, r)| (p, *r)).collect();
                if list != list_before {
                    match prove_change(&before, &list, &changed) {
                        Ok(()) => {}
                        Err(LiveError::Mismatch(m)) => {
                            let h = Header(std::array::from_fn(|d| m.packet[d]));
                            prop_assert_eq!(m.classifier, before.classify(&h));
                            prop_assert_eq!(m.list, scan(&c, &h));
                            prop_assert_ne!(m.classifier, m.list);
                        }
                        Err(e) => return Err(TestCaseError::fail(e.to_string())),
                    }
                }
            }
        }
        prop_assert!(prove_snapshot(&c.snapshot(), &c.rules().map(|(p, r)| (p, *r)).collect::<Vec<_>>()).is_ok());
    }
}

#[test]
fn a_change_that_decides_packets_is_caught() {
    let wide = Rule::ANY;
    let mut narrow = Rule::ANY;
    narrow.lo[3] = 22;
    narrow.hi[3] = 22;
    let mut c = Classifier::new(&[]);
    let mut prover = LiveProver::new();
    prover.check(&c).unwrap();
    c.insert(100, wide).unwrap();
    assert!(!prover.check(&c).unwrap().full);
    let before = c.snapshot();
    c.insert(50, narrow).unwrap();
    assert!(!prover.check(&c).unwrap().full);
    let list: Vec<(u64, Rule)> = c.rules().map(|(p, r)| (p, *r)).collect();
    let Err(LiveError::Mismatch(m)) = prove_change(&before, &list, &narrow) else {
        panic!("the old snapshot lacks the new rule")
    };
    assert_eq!(m.packet[3], 22);
    assert_eq!((m.classifier, m.list), (Some(100), Some(50)));
    // The full proof of the stale snapshot fails too (its rules are not the list's).
    assert!(prove_snapshot(&before, &list).is_err());
}

/// Deletes a rule and inserts it back at a fresh priority, `n` times, proving each update;
/// returns the time per proof.
fn churn(set: &str, n: usize) -> Option<Duration> {
    let dir = data()?;
    let rules = parse_rules(set, &read(&dir, set)).unwrap();
    let mut c = Classifier::new(&rules);
    let mut prover = LiveProver::new();
    prover.check(&c).unwrap();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let started = Instant::now();
    let mut fulls = 0;
    let mut taken = None;
    for k in 0..n {
        if k % 50 == 49 {
            // A compile now and then, whatever the background thread is doing.
            c.compile();
        }
        match taken.take() {
            None => {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let count = c.rules().count();
                let (p, r) = c.rules().nth(x as usize % count).map(|(p, r)| (p, *r)).unwrap();
                c.delete(p).unwrap();
                taken = Some((p, r));
            }
            Some((p, r)) => c.insert(p, r).unwrap(),
        }
        c.poll();
        let proof = prover.check(&c).unwrap_or_else(|e| panic!("{set}: {e}"));
        fulls += usize::from(proof.full);
    }
    assert!(fulls >= n / 50, "{set}: every compile is proved in full");
    Some(started.elapsed() / n as u32)
}

#[test]
fn classbench_1k_churn_proved() {
    for set in ["acl1_1k", "fw1_1k", "ipc1_1k"] {
        if let Some(t) = churn(set, 300) {
            eprintln!("{set}: {t:?} per proved update");
        }
    }
}

#[test]
fn attached_bases_are_proved_when_compiled() {
    let Some(dir) = data() else { return };
    let rules = parse_rules("fw1_1k", &read(&dir, "fw1_1k")).unwrap();
    let mut c = Classifier::new(&rules);
    c.set_compile_after(16);
    let mut prover = LiveProver::new();
    prover.attach(&mut c);
    prover.check(&c).unwrap();
    let mut installed = 0;
    for k in 0..200u64 {
        let (p, _) =
            c.rules().nth((k as usize * 7919) % c.rules().count()).map(|(p, r)| (p, *r)).unwrap();
        c.delete(p).unwrap();
        if c.poll() {
            installed += 1;
        }
        prover.check(&c).unwrap();
    }
    // Let the last compile finish (bounded): the base it installs is proved on its thread.
    for _ in 0..10_000 {
        if c.poll() {
            installed += 1;
            prover.check(&c).unwrap();
        }
        if installed > 0 && c.pending() < 16 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(installed > 0, "200 deletes with a compile every 16 install a compiled base");
    c.compile();
    assert_eq!(c.snapshot().base_checked(), Some(&Ok(())), "the compiling side proved it");
    assert!(prover.check(&c).unwrap().full);
    // A base check that fails is reported, not trusted away.
    c.set_base_check(std::sync::Arc::new(|_: &rampart_classify::Compiled, _: &[Rule]| {
        Err("refused".to_string())
    }));
    c.compile();
    let Err(LiveError::Compile(why)) = prover.check(&c) else { panic!("a failed base check") };
    assert_eq!(why, "refused");
}
