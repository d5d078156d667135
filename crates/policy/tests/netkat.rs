//! NetKAT expressions against a direct reference evaluator of their trace semantics, the
//! KAT and NetKAT axioms, and counterexamples replayed on the reference.

use std::collections::{BTreeSet, HashMap};

use proptest::prelude::*;
use rampart_policy::netkat::{DUP, Exp, Netkat, ONE, ZERO};
use rampart_policy::spp::{Programs, SKIP};

/// Fields and values the random expressions use; value 3 stands for every other value.
const FIELDS: usize = 2;
const VALUES: u32 = 3;
/// Recorded packets the reference keeps per trace.
const BOUND: usize = 3;

#[derive(Clone, Debug)]
enum Ast {
    Zero,
    One,
    Dup,
    Test(u32, u32),
    NotTest(u32, u32),
    Assign(u32, u32),
    Union(Box<Ast>, Box<Ast>),
    Seq(Box<Ast>, Box<Ast>),
    Star(Box<Ast>),
    Inter(Box<Ast>, Box<Ast>),
    Diff(Box<Ast>, Box<Ast>),
    Xor(Box<Ast>, Box<Ast>),
}

fn leaf() -> impl Strategy<Value = Ast> {
    prop_oneof![1 => Just(Ast::Dup), 5 => dup_free_leaf()]
}

/// A leaf other than `dup`.
fn dup_free_leaf() -> impl Strategy<Value = Ast> {
    let f = 0..FIELDS as u32;
    let v = 0..VALUES;
    prop_oneof![
        Just(Ast::Zero),
        Just(Ast::One),
        (f.clone(), v.clone()).prop_map(|(f, v)| Ast::Test(f, v)),
        (f.clone(), v.clone()).prop_map(|(f, v)| Ast::NotTest(f, v)),
        (f, v).prop_map(|(f, v)| Ast::Assign(f, v)),
    ]
}

fn ast(with_sets: bool) -> impl Strategy<Value = Ast> {
    sized(with_sets, 4, 24)
}

/// Random expressions at most `depth` deep with about `size` nodes.
fn sized(with_sets: bool, depth: u32, size: u32) -> impl Strategy<Value = Ast> {
    grown(leaf().boxed(), with_sets, depth, size)
}

/// Random expressions without `dup`, as [`ast`] (generated so, not filtered: most random
/// expressions of this size hold a `dup`, and rejecting them ran into proptest's limit of
/// rejects now and then).
fn dup_free() -> impl Strategy<Value = Ast> {
    grown(dup_free_leaf().boxed(), false, 4, 24)
}

/// Expressions grown from `leaf`.
fn grown(
    leaf: BoxedStrategy<Ast>,
    with_sets: bool,
    depth: u32,
    size: u32,
) -> impl Strategy<Value = Ast> {
    leaf.prop_recursive(depth, size, 2, move |inner| {
        let b = |x: Ast| Box::new(x);
        let mut options = vec![
            (inner.clone(), inner.clone()).prop_map(move |(x, y)| Ast::Union(b(x), b(y))).boxed(),
            (inner.clone(), inner.clone()).prop_map(move |(x, y)| Ast::Seq(b(x), b(y))).boxed(),
            inner.clone().prop_map(move |x| Ast::Star(b(x))).boxed(),
        ];
        if with_sets {
            options.push(
                (inner.clone(), inner.clone())
                    .prop_map(move |(x, y)| Ast::Inter(b(x), b(y)))
                    .boxed(),
            );
            options.push(
                (inner.clone(), inner.clone())
                    .prop_map(move |(x, y)| Ast::Diff(b(x), b(y)))
                    .boxed(),
            );
            options
                .push((inner.clone(), inner).prop_map(move |(x, y)| Ast::Xor(b(x), b(y))).boxed());
        }
        proptest::strategy::Union::new(options)
    })
}

/// Random predicates (tests, negations, unions and sequences of them).
fn pred() -> impl Strategy<Value = Ast> {
    let f = 0..FIELDS as u32;
    let v = 0..VALUES;
    let leaf = prop_oneof![
        Just(Ast::Zero),
        Just(Ast::One),
        (f.clone(), v.clone()).prop_map(|(f, v)| Ast::Test(f, v)),
        (f, v).prop_map(|(f, v)| Ast::NotTest(f, v)),
    ];
    leaf.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(x, y)| Ast::Union(Box::new(x), Box::new(y))),
            (inner.clone(), inner).prop_map(|(x, y)| Ast::Seq(Box::new(x), Box::new(y))),
        ]
    })
}

fn build(n: &mut Netkat, a: &Ast) -> Exp {
    match a {
        Ast::Zero => ZERO,
        Ast::One => ONE,
        Ast::Dup => DUP,
        Ast::Test(f, v) => {
            let p = n.programs.test(*f, *v);
            n.prog(p)
        }
        Ast::NotTest(f, v) => {
            let t = n.programs.test(*f, *v);
            let p = n.programs.not(t);
            n.prog(p)
        }
        Ast::Assign(f, v) => {
            let p = n.programs.assign(*f, *v);
            n.prog(p)
        }
        Ast::Union(x, y) => {
            let (x, y) = (build(n, x), build(n, y));
            n.union(x, y)
        }
        Ast::Seq(x, y) => {
            let (x, y) = (build(n, x), build(n, y));
            n.seq(x, y)
        }
        Ast::Star(x) => {
            let x = build(n, x);
            n.star(x)
        }
        Ast::Inter(x, y) => {
            let (x, y) = (build(n, x), build(n, y));
            n.inter(x, y)
        }
        Ast::Diff(x, y) => {
            let (x, y) = (build(n, x), build(n, y));
            n.diff(x, y)
        }
        Ast::Xor(x, y) => {
            let (x, y) = (build(n, x), build(n, y));
            n.xor(x, y)
        }
    }
}

type Packet = Vec<u32>;
/// Recorded packets, then the output.
type Trace = Vec<Packet>;

fn dups(t: &Trace) -> usize {
    t.len() - 1
}

/// The reference: traces of `a` from `p` with at most [`BOUND`] recorded packets.
fn eval(a: &Ast, p: &Packet) -> BTreeSet<Trace> {
    Reference::default().eval(a, p)
}

/// The reference evaluator, remembering each subexpression's traces from each packet: a star
/// continues every trace of its frontier from its output, and without the memo nested stars
/// would evaluate their body again for each trace, exponentially in the nesting.
#[derive(Default)]
struct Reference {
    memo: HashMap<(*const Ast, Packet), BTreeSet<Trace>>,
}

impl Reference {
    fn eval(&mut self, a: &Ast, p: &Packet) -> BTreeSet<Trace> {
        let key = (a as *const Ast, p.clone());
        if let Some(hit) = self.memo.get(&key) {
            return hit.clone();
        }
        let one = |q: Packet| BTreeSet::from([vec![q]]);
        let out = match a {
            Ast::Zero => BTreeSet::new(),
            Ast::One => one(p.clone()),
            Ast::Dup => BTreeSet::from([vec![p.clone(), p.clone()]]),
            Ast::Test(f, v) if p[*f as usize] == *v => one(p.clone()),
            Ast::NotTest(f, v) if p[*f as usize] != *v => one(p.clone()),
            Ast::Test(..) | Ast::NotTest(..) => BTreeSet::new(),
            Ast::Assign(f, v) => {
                let mut q = p.clone();
                q[*f as usize] = *v;
                one(q)
            }
            Ast::Union(x, y) => self.eval(x, p).union(&self.eval(y, p)).cloned().collect(),
            Ast::Seq(x, y) => {
                let first = self.eval(x, p);
                self.then(&first, y)
            }
            Ast::Star(x) => {
                let mut all = one(p.clone());
                let mut frontier = all.clone();
                while !frontier.is_empty() {
                    let next = self.then(&frontier, x);
                    frontier = next.difference(&all).cloned().collect();
                    all.extend(frontier.iter().cloned());
                }
                all
            }
            Ast::Inter(x, y) => self.eval(x, p).intersection(&self.eval(y, p)).cloned().collect(),
            Ast::Diff(x, y) => self.eval(x, p).difference(&self.eval(y, p)).cloned().collect(),
            Ast::Xor(x, y) => {
                self.eval(x, p).symmetric_difference(&self.eval(y, p)).cloned().collect()
            }
        };
        self.memo.insert(key, out.clone());
        out
    }

    /// Each trace continued by `y` from its output.
    fn then(&mut self, ts: &BTreeSet<Trace>, y: &Ast) -> BTreeSet<Trace> {
        let mut out = BTreeSet::new();
        for t in ts {
            let last = t.last().expect("a trace has an output");
            for u in self.eval(y, last) {
                let mut w = t[..t.len() - 1].to_vec();
                w.extend(u);
                if dups(&w) <= BOUND {
                    out.insert(w);
                }
            }
        }
        out
    }
}

fn packets() -> Vec<Packet> {
    let mut out = Vec::new();
    for a in 0..=VALUES {
        for b in 0..=VALUES {
            out.push(vec![a, b]);
        }
    }
    out
}

fn lowest(lo: u32, _hi: u32) -> u32 {
    lo
}

/// Checks `equiv` on two expressions against the reference, both ways.
fn agree(x: &Ast, y: &Ast) -> Result<bool, TestCaseError> {
    let mut n = Netkat::new();
    let (ex, ey) = (build(&mut n, x), build(&mut n, y));
    match n.equiv(ex, ey, FIELDS, &lowest) {
        Ok(_) => {
            for p in packets() {
                prop_assert_eq!(eval(x, &p), eval(y, &p), "equivalent, yet differ on {:?}", p);
            }
            Ok(true)
        }
        Err(None) => Err(TestCaseError::fail("gave up on a tiny expression")),
        Err(Some(cx)) => {
            let mut t = cx.trace.clone();
            t.push(cx.output.clone());
            if dups(&t) <= BOUND {
                let (l, r) = (eval(x, &cx.input), eval(y, &cx.input));
                prop_assert_eq!(l.contains(&t), cx.left_has_it, "left side and {:?}", cx);
                prop_assert_eq!(r.contains(&t), !cx.left_has_it, "right side and {:?}", cx);
            }
            Ok(false)
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// The derivatives give the reference's traces.
    #[test]
    fn derivatives_match_the_reference(a in ast(true)) {
        let mut n = Netkat::new();
        let e = build(&mut n, &a);
        for p in packets() {
            let want: Vec<Trace> = eval(&a, &p).into_iter().collect();
            let got = n.traces(e, &p, BOUND);
            prop_assert_eq!(got, want, "on {:?}", p);
        }
    }

    /// `equiv` agrees with the reference, and every counterexample replays on it.
    #[test]
    fn equivalence_matches_the_reference(x in ast(true), y in ast(true)) {
        agree(&x, &y)?;
    }

    /// Dup-free expressions are equivalent exactly when their programs are the same handle.
    #[test]
    fn programs_are_canonical(x in dup_free(), y in dup_free()) {
        let has_dup = |a: &Ast| -> bool { format!("{a:?}").contains("Dup") };
        prop_assert!(!has_dup(&x) && !has_dup(&y));
        let mut n = Netkat::new();
        let (ex, ey) = (build(&mut n, &x), build(&mut n, &y));
        let same = packets().iter().all(|p| eval(&x, p) == eval(&y, p));
        prop_assert_eq!(ex == ey, same);
        prop_assert_eq!(n.equiv(ex, ey, FIELDS, &lowest).is_ok(), same);
    }

    /// The Boolean algebra of predicates, and tests commuting with dup.
    #[test]
    fn boolean_algebra(x in pred(), y in pred()) {
        let mut n = Netkat::new();
        let (a, b) = (build(&mut n, &x), build(&mut n, &y));
        let (pa, pb) = (n.as_prog(a).unwrap(), n.as_prog(b).unwrap());
        let p = &mut n.programs;
        let (ab, ba) = (p.seq(pa, pb), p.seq(pb, pa));
        prop_assert_eq!(ab, ba);
        prop_assert_eq!(p.seq(pa, pa), pa);
        let na = p.not(pa);
        prop_assert_eq!(p.seq(pa, na), rampart_policy::spp::DROP);
        prop_assert_eq!(p.union(pa, na), SKIP);
        prop_assert_eq!(p.not(na), pa);
        prop_assert_eq!(p.inter(pa, pb), ab);
        let nab = p.not(ab);
        let nb = p.not(pb);
        prop_assert_eq!(nab, p.union(na, nb));
        let l = n.seq(a, DUP);
        let r = n.seq(DUP, a);
        prop_assert!(n.equiv(l, r, FIELDS, &lowest).is_ok());
    }
}

/// NetKAT's packet axioms, for every pair of fields and values in range.
#[test]
fn packet_axioms() {
    let mut m = Programs::new();
    for f in 0..FIELDS as u32 {
        for v in 0..VALUES {
            let (t, a) = (m.test(f, v), m.assign(f, v));
            assert_eq!(m.seq(a, t), a, "f←n⋅f=n ≡ f←n");
            assert_eq!(m.seq(t, a), t, "f=n⋅f←n ≡ f=n");
            for w in 0..VALUES {
                let (tw, aw) = (m.test(f, w), m.assign(f, w));
                assert_eq!(m.seq(a, aw), aw, "f←n⋅f←m ≡ f←m");
                if v != w {
                    assert_eq!(m.seq(t, tw), rampart_policy::spp::DROP, "f=n⋅f=m ≡ 0");
                }
                for g in (0..FIELDS as u32).filter(|&g| g != f) {
                    let (tg, ag) = (m.test(g, w), m.assign(g, w));
                    assert_eq!(m.seq(a, ag), m.seq(ag, a), "assignments to two fields commute");
                    assert_eq!(m.seq(a, tg), m.seq(tg, a), "f←n⋅g=m ≡ g=m⋅f←n");
                }
            }
        }
    }
}

// The axioms nest three expressions two stars deep (denesting, sliding), so deciding them costs
// far more than one equivalence: smaller expressions and fewer cases keep the test's time bounded
// whatever the seed, while every law is still checked on expressions with dup, star and tests.
proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// The Kleene algebra axioms.
    #[test]
    fn kleene_algebra(e in sized(false, 3, 12), f in sized(false, 3, 12), g in sized(false, 3, 12)) {
        let b = |x: &Ast| Box::new(x.clone());
        let u = |x: &Ast, y: &Ast| Ast::Union(b(x), b(y));
        let s = |x: &Ast, y: &Ast| Ast::Seq(b(x), b(y));
        let st = |x: &Ast| Ast::Star(b(x));
        let laws = [
            (u(&e, &u(&f, &g)), u(&u(&e, &f), &g)),
            (u(&e, &f), u(&f, &e)),
            (u(&e, &Ast::Zero), e.clone()),
            (u(&e, &e), e.clone()),
            (s(&e, &s(&f, &g)), s(&s(&e, &f), &g)),
            (s(&Ast::One, &e), e.clone()),
            (s(&e, &Ast::One), e.clone()),
            (s(&Ast::Zero, &e), Ast::Zero),
            (s(&e, &Ast::Zero), Ast::Zero),
            (s(&e, &u(&f, &g)), u(&s(&e, &f), &s(&e, &g))),
            (s(&u(&e, &f), &g), u(&s(&e, &g), &s(&f, &g))),
            (u(&Ast::One, &s(&e, &st(&e))), st(&e)),
            (u(&Ast::One, &s(&st(&e), &e)), st(&e)),
            (st(&st(&e)), st(&e)),
            (s(&st(&e), &st(&e)), st(&e)),
            // Sliding and denesting.
            (s(&st(&s(&e, &f)), &e), s(&e, &st(&s(&f, &e)))),
            (st(&u(&e, &f)), s(&st(&e), &st(&s(&f, &st(&e))))),
        ];
        for (i, (l, r)) in laws.iter().enumerate() {
            prop_assert!(agree(l, r)?, "law {} fails", i);
        }
    }
}
