//! The updatable classifier against its own rule list, step by step.

use proptest::prelude::*;
use rampart_classify::{Classifier, Header, Rule};

fn rule(seed: u64) -> Rule {
    let a = (seed as u32) & 0xff00_0000;
    let len = [0u8, 4, 8, 8, 16][(seed >> 32) as usize % 5];
    let (slo, shi) = Rule::prefix(a, len);
    let p = ((seed >> 40) % 8) as u32;
    let (dplo, dphi) =
        if seed & (1 << 50) != 0 { (0, 65535) } else { (p, p + (seed >> 52) as u32 % 4) };
    // The destination: any, exactly the headers' 7, or a range around it (not a prefix).
    let (dlo, dhi) = [(0, u32::MAX), (7, 7), (5, 9), (8, 8)][(seed >> 56) as usize % 4];
    Rule { lo: [slo, dlo, 0, dplo, 0], hi: [shi, dhi, 65535, dphi, 255] }
}

fn header(seed: u64) -> Header {
    Header([(seed as u32) & 0xff00_0000 | 0x10, 7, 1, ((seed >> 32) % 12) as u32, 6])
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u64, u64),
    Delete(u64),
    Lookup(u64),
    Compile,
    Poll,
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            4 => (0u64..4000, any::<u64>()).prop_map(|(p, r)| Op::Insert(p, r)),
            // At the priority of an initial rule, which may have been deleted since.
            2 => (0u64..40, any::<u64>()).prop_map(|(i, r)| Op::Insert(Classifier::initial_priority(i as usize), r)),
            3 => any::<u64>().prop_map(Op::Delete),
            6 => any::<u64>().prop_map(Op::Lookup),
            1 => Just(Op::Compile),
            1 => Just(Op::Poll),
        ],
        1..300,
    )
}

fn model(c: &Classifier, h: &Header) -> Option<u64> {
    c.rules().find(|(_, r)| r.matches(h)).map(|(p, _)| p)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn every_step_agrees_with_the_list(initial in prop::collection::vec(any::<u64>(), 0..40), ops in ops()) {
        let rules: Vec<Rule> = initial.iter().map(|&s| rule(s)).collect();
        let mut c = Classifier::new(&rules);
        let reader = c.reader();
        for op in ops {
            match op {
                Op::Insert(p, r) => { let _ = c.insert(p, rule(r)); }
                Op::Delete(s) => {
                    let prios: Vec<u64> = c.rules().map(|(p, _)| p).collect();
                    if !prios.is_empty() {
                        c.delete(prios[s as usize % prios.len()]).unwrap();
                    }
                }
                Op::Lookup(s) => {
                    let h = header(s);
                    prop_assert_eq!(reader.classify(&h), model(&c, &h));
                }
                Op::Compile => c.compile(),
                Op::Poll => { c.poll(); }
            }
            for s in 0..8u64 {
                let h = header(s.wrapping_mul(0x9e37_79b9_7f4a_7c15));
                prop_assert_eq!(reader.classify(&h), model(&c, &h));
            }
        }
    }
}

#[test]
fn background_compile_installs_and_keeps_answers() {
    let rules: Vec<Rule> =
        (0..2000u64).map(|s| rule(s.wrapping_mul(0x2545_f491_4f6c_dd1d))).collect();
    let mut c = Classifier::new(&rules);
    let reader = c.reader();
    // Enough changes to start a background compile, then more while it runs.
    for i in 0..200u64 {
        let p = Classifier::initial_priority((i * 7 % 2000) as usize) + 1 + i;
        c.insert(p, rule(i.wrapping_mul(0x1234_5678_9abc_def1))).unwrap();
        if i % 3 == 0 {
            let victim = c.rules().nth((i * 13 % 1500) as usize).map(|(p, _)| p).unwrap();
            c.delete(victim).unwrap();
        }
    }
    while c.is_compiling() {
        std::thread::sleep(std::time::Duration::from_millis(1));
        c.poll();
    }
    for s in 0..5000u64 {
        let h = header(s.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        assert_eq!(reader.classify(&h), model(&c, &h), "{h:?}");
    }
}

#[test]
fn lookups_race_updates_without_wrong_answers() {
    let rules: Vec<Rule> =
        (0..500u64).map(|s| rule(s.wrapping_mul(0x2545_f491_4f6c_dd1d))).collect();
    let mut c = Classifier::new(&rules);
    // A rule at the very front that matches only this header: inserted and deleted over and
    // over; a reader must always see it or the answer without it, nothing else.
    let probe = Header([0xfe00_0010, 7, 1, 11, 6]);
    let front = Rule { lo: [0xfe00_0010, 7, 1, 11, 6], hi: [0xfe00_0010, 7, 1, 11, 6] };
    let without = c.reader().classify(&probe);
    let reader = c.reader();
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let seen = std::sync::Arc::new(AtomicUsize::new(0));
    let (flag, count) = (std::sync::Arc::clone(&stop), std::sync::Arc::clone(&seen));
    let t = std::thread::spawn(move || {
        while !flag.load(Ordering::Relaxed) {
            let got = reader.classify(&probe);
            assert!(got == Some(1) || got == without, "{got:?}");
            count.fetch_add(1, Ordering::Relaxed);
        }
    });
    let mut i = 0;
    while seen.load(Ordering::Relaxed) < 200_000 && i < 2_000_000 {
        c.insert(1, front).unwrap();
        c.delete(1).unwrap();
        if i % 5000 == 0 {
            c.compile();
        }
        c.poll();
        i += 1;
    }
    stop.store(true, Ordering::Relaxed);
    t.join().unwrap();
    assert!(seen.load(Ordering::Relaxed) >= 200_000, "the reader ran alongside the writer");
}

/// A base rule deleted, inserted again at its priority, and deleted again is gone.
#[test]
fn base_rule_deleted_reinserted_deleted() {
    let rules = [rule(0), rule(1 << 50)];
    let mut c = Classifier::new(&rules);
    let p = Classifier::initial_priority(0);
    let h = header(0);
    assert_eq!(c.reader().classify(&h), model(&c, &h));
    let r = c.delete(p).unwrap();
    c.insert(p, r).unwrap();
    assert_eq!(c.reader().classify(&h), Some(p));
    c.delete(p).unwrap();
    assert_eq!(c.reader().classify(&h), model(&c, &h));
    assert_ne!(model(&c, &h), Some(p));
}
