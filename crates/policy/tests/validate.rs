//! The compiled classifier proved equal to its rule list, and a wrong list caught with a
//! packet that the classifier and the list's linear scan really disagree on.

mod common;

use common::{data, read};
use proptest::prelude::*;
use rampart_classify::classbench::parse_rules;
use rampart_classify::{Compiled, Header, Rule};
use rampart_policy::rules::{Layout, manager};
use rampart_policy::validate::{ProofError, prove};

fn check(set: &str) {
    let Some(dir) = data() else { return };
    let rules = parse_rules(set, &read(&dir, set)).unwrap();
    let c = Compiled::new(&rules);
    let mut m = manager(Layout::ClassBench);
    assert_eq!(prove(&mut m, &rules, &c), Ok(()), "{set}");
    // The same structure against a list with one rule changed: caught, and the packet shows
    // the classifier and the changed list's scan disagreeing.
    let mut wrong = rules.clone();
    let k = wrong.len() / 3;
    wrong[k].lo[3] = 7;
    wrong[k].hi[3] = 7;
    if wrong[k] == rules[k] {
        wrong[k].lo[2] = 1;
        wrong[k].hi[2] = 1;
    }
    let mut m = manager(Layout::ClassBench);
    let Err(ProofError::Mismatch(e)) = prove(&mut m, &wrong, &c) else {
        panic!("{set}: a different list must be caught")
    };
    assert_ne!(e.classifier, e.linear, "{set}: {e:?}");
    assert_eq!(e.policy, e.linear, "{set}: {e:?}");
    assert_eq!(e.lifted, e.classifier, "{set}: {e:?}");
}

#[test]
fn acl1_1k_proved() {
    check("acl1_1k");
}

#[test]
fn fw1_1k_proved() {
    check("fw1_1k");
}

#[test]
fn ipc1_1k_proved() {
    check("ipc1_1k");
}

fn rule() -> impl Strategy<Value = Rule> {
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
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Random lists, including ones large enough for tables and seven-cut nodes.
    #[test]
    fn random_lists_proved(rules in prop::collection::vec(rule(), 1..120)) {
        let c = Compiled::new(&rules);
        let mut m = manager(Layout::ClassBench);
        prop_assert_eq!(prove(&mut m, &rules, &c), Ok(()));
        // The structure against the list with rule 0's destination ports changed: any
        // packet told apart is one where the compiled classifier and the changed list's scan
        // really disagree (same positions, so the same rule numbers).
        let mut wrong = rules.clone();
        wrong[0].lo[3] = if rules[0].lo[3] == 7 { 9 } else { 7 };
        wrong[0].hi[3] = wrong[0].lo[3];
        let mut m = manager(Layout::ClassBench);
        if let Err(ProofError::Mismatch(e)) = prove(&mut m, &wrong, &c) {
            prop_assert_ne!(e.classifier, e.linear, "{:?}", e);
            prop_assert_eq!(e.classifier, e.lifted, "{:?}", e);
            prop_assert_eq!(e.linear, e.policy, "{:?}", e);
            let h = Header(std::array::from_fn(|d| e.packet[d]));
            prop_assert_eq!(c.classify(&h), rampart_classify::linear::first_match(&rules, &h));
        }
    }
}
