//! Decision-diagram operations against brute force over every packet of small domains
//! (three fields of 0..=5, 0..=3 and 0..=6: 140 packets).

use proptest::prelude::*;
use rampart_policy::dd::{FALSE, Id, Manager, TRUE};

const MAX: [u32; 3] = [5, 3, 6];

fn packets() -> Vec<[u32; 3]> {
    let mut v = Vec::new();
    for a in 0..=MAX[0] {
        for b in 0..=MAX[1] {
            for c in 0..=MAX[2] {
                v.push([a, b, c]);
            }
        }
    }
    v
}

/// A box: per field an inclusive range, possibly past the domain's end (which must behave
/// like the end).
fn boxes() -> impl Strategy<Value = Vec<[(u32, u32); 3]>> {
    let range = |max: u32| (0..=max + 2, 0..=max + 2).prop_map(|(a, b)| (a.min(b), a.max(b)));
    prop::collection::vec(
        (range(MAX[0]), range(MAX[1]), range(MAX[2])).prop_map(|(a, b, c)| [a, b, c]),
        0..6,
    )
}

/// Every order the three fields can be tested in.
fn orders() -> impl Strategy<Value = Vec<usize>> {
    prop::sample::select(vec![
        vec![0, 1, 2],
        vec![0, 2, 1],
        vec![1, 0, 2],
        vec![1, 2, 0],
        vec![2, 0, 1],
        vec![2, 1, 0],
    ])
}

fn inside(b: &[(u32, u32); 3], p: &[u32; 3]) -> bool {
    (0..3).all(|f| {
        let hi = if b[f].1 >= MAX[f] { u32::MAX } else { b[f].1 };
        b[f].0 <= p[f] && p[f] <= hi
    })
}

fn set(m: &mut Manager, bs: &[[(u32, u32); 3]]) -> Id {
    let mut d = FALSE;
    for b in bs {
        let c = m.cube(b, TRUE);
        d = m.or(d, c);
    }
    d
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn set_operations(a in boxes(), b in boxes(), order in orders()) {
        let mut m = Manager::with_order(MAX.to_vec(), order);
        let (x, y) = (set(&mut m, &a), set(&mut m, &b));
        let ops = [m.and(x, y), m.or(x, y), m.diff(x, y), m.not(x), m.neq(x, y)];
        let mut counts = [0f64; 5];
        for p in packets() {
            let (ia, ib) = (a.iter().any(|q| inside(q, &p)), b.iter().any(|q| inside(q, &p)));
            let want = [ia && ib, ia || ib, ia && !ib, !ia, ia != ib];
            for k in 0..5 {
                prop_assert_eq!(m.eval(ops[k], &p) == 1, want[k], "op {} at {:?}", k, p);
                counts[k] += f64::from(u8::from(want[k]));
            }
        }
        for k in 0..5 {
            prop_assert_eq!(m.count(ops[k], &|v| v == 1), counts[k], "count of op {}", k);
            match m.witness(ops[k], &|v| v == 1, &[2, 1, 3]) {
                Some(w) => prop_assert_eq!(m.eval(ops[k], &w), 1),
                None => prop_assert_eq!(counts[k], 0.0),
            }
        }
        // Canonical: equal sets are equal handles.
        let both = m.and(x, y);
        let via = {
            let nx = m.not(x);
            let ny = m.not(y);
            let u = m.or(nx, ny);
            m.not(u)
        };
        prop_assert_eq!(both, via);
    }

    #[test]
    fn first_match_lists(rules in boxes(), extra in boxes(), order in orders()) {
        // Rules in order, terminal = index + 1, default = 99; then an if-then-else over it.
        let mut m = Manager::with_order(MAX.to_vec(), order);
        let mut d = m.leaf(99);
        for (i, b) in rules.iter().enumerate().rev() {
            let t = m.leaf(i as u32 + 1);
            let c = m.cube(b, t);
            d = m.first(c, d);
        }
        let s = set(&mut m, &extra);
        let seven = m.leaf(7);
        let e = m.ite(s, seven, d);
        let mapped = m.map(d, &|v| v % 2);
        for p in packets() {
            let want = rules.iter().position(|b| inside(b, &p)).map_or(99, |i| i as u32 + 1);
            prop_assert_eq!(m.eval(d, &p), want);
            let in_s = extra.iter().any(|q| inside(q, &p));
            prop_assert_eq!(m.eval(e, &p), if in_s { 7 } else { want });
            prop_assert_eq!(m.eval(mapped, &p), want % 2);
        }
        let reached: Vec<u32> = m.terminals(d).into_iter().collect();
        let mut want: Vec<u32> = packets()
            .iter()
            .map(|p| rules.iter().position(|b| inside(b, p)).map_or(99, |i| i as u32 + 1))
            .collect();
        want.sort_unstable();
        want.dedup();
        prop_assert_eq!(reached, want);
    }
}
