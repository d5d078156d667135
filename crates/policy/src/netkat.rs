//! NetKAT with `dup`: expressions over [packet programs](crate::spp), their trace
//! semantics, and an equivalence check that returns a counterexample.
//!
//! An expression denotes, for each input packet, a set of traces: the packets recorded by
//! each `dup` on the way, then the output packet. Expressions without `dup` are packet
//! programs and are built straight into [`Programs`]; the rest are kept as hash-consed
//! terms (sums flattened and sorted, sequences to the right, programs merged), which keeps
//! the set of derivatives finite.
//!
//! Equivalence is decided as KATch does, by symbolic derivatives and a bisimulation:
//! - `ε(e)`, the program for the traces with no `dup`;
//! - `δ(e)`, pairs `(guard, continuation)` with pairwise disjoint guards (relations from the
//!   packet before to the packet recorded by the first `dup`), so that
//!   `e = ε(e) ∪ Σ guard⋅dup⋅continuation`.
//!
//! The check walks pairs of continuations together with the set of packets that can reach
//! them, pushing packet sets through the guards until nothing new arrives. A pair whose `ε`
//! parts differ on the packets that reach it is a counterexample: an input packet, the
//! packets recorded on the way, and an output one side has and the other lacks.

use std::collections::VecDeque;
use std::rc::Rc;

use rustc_hash::FxHashMap as HashMap;

use crate::spp::{DROP, Prog, Programs, SKIP};

/// An expression: a handle into its [`Netkat`] manager.
pub type Exp = u32;

/// Expressions a manager holds at most unless told otherwise.
pub const DEFAULT_LIMIT: usize = 8_000_000;

/// The expression that drops everything.
pub const ZERO: Exp = 0;
/// The expression that passes every packet unchanged.
pub const ONE: Exp = 1;
/// `dup`.
pub const DUP: Exp = 2;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Term {
    Prog(Prog),
    Dup,
    Seq(Exp, Exp),
    Sum(Rc<[Exp]>),
    Star(Exp),
    Inter(Exp, Exp),
    Diff(Exp, Exp),
    Xor(Exp, Exp),
}

type Delta = Rc<[(Prog, Exp)]>;

/// Expressions, their derivatives, and the programs they are made of.
#[derive(Debug)]
pub struct Netkat {
    /// The programs (dup-free parts), shared by all expressions.
    pub programs: Programs,
    terms: Vec<Term>,
    unique: HashMap<Term, Exp>,
    eps: HashMap<Exp, Prog>,
    delta: HashMap<Exp, Delta>,
    erased: HashMap<Exp, Prog>,
    limit: usize,
    exceeded: bool,
}

impl Default for Netkat {
    fn default() -> Self {
        Self::new()
    }
}

/// Why two expressions differ: traces one side has and the other lacks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counterexample {
    /// The input packet (one value per field).
    pub input: Vec<u32>,
    /// The packets recorded by `dup`, in order.
    pub trace: Vec<Vec<u32>>,
    /// An output packet only one side produces after that trace.
    pub output: Vec<u32>,
    /// Whether the left side is the one that produces it.
    pub left_has_it: bool,
}

/// Pairs walked and packet sets pushed by one check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Effort {
    /// Pairs of continuations visited (with new packets).
    pub steps: usize,
}

impl Netkat {
    /// An empty manager.
    pub fn new() -> Self {
        let mut n = Self {
            programs: Programs::new(),
            terms: Vec::new(),
            unique: HashMap::default(),
            eps: HashMap::default(),
            delta: HashMap::default(),
            erased: HashMap::default(),
            limit: DEFAULT_LIMIT,
            exceeded: false,
        };
        let z = n.intern(Term::Prog(DROP));
        let o = n.intern(Term::Prog(SKIP));
        let d = n.intern(Term::Dup);
        debug_assert_eq!((z, o, d), (ZERO, ONE, DUP));
        n
    }

    fn intern(&mut self, t: Term) -> Exp {
        if let Some(&e) = self.unique.get(&t) {
            return e;
        }
        if self.terms.len() >= self.limit {
            self.exceeded = true;
            return ZERO;
        }
        let e = Exp::try_from(self.terms.len()).expect("fewer than 2^32 expressions");
        self.terms.push(t.clone());
        self.unique.insert(t, e);
        e
    }

    /// Sets how many expressions (and, separately, program nodes) may be built. Past it,
    /// results are meaningless and [`Netkat::exceeded`] says so.
    pub fn set_limit(&mut self, n: usize) {
        self.limit = n.max(3);
        self.programs.set_limit(n);
    }

    /// Whether an operation ran past a limit.
    pub fn exceeded(&self) -> bool {
        self.exceeded || self.programs.exceeded()
    }

    /// Expressions held.
    pub fn len(&self) -> usize {
        self.terms.len()
    }

    /// Whether only the constants exist.
    pub fn is_empty(&self) -> bool {
        self.terms.len() <= 3
    }

    /// The expression for program `p`.
    pub fn prog(&mut self, p: Prog) -> Exp {
        self.intern(Term::Prog(p))
    }

    /// The program `e` is, if it has no `dup`.
    pub fn as_prog(&self, e: Exp) -> Option<Prog> {
        match self.terms[e as usize] {
            Term::Prog(p) => Some(p),
            _ => None,
        }
    }

    /// Sequence.
    pub fn seq(&mut self, a: Exp, b: Exp) -> Exp {
        if a == ZERO || b == ZERO {
            return ZERO;
        }
        if a == ONE {
            return b;
        }
        if b == ONE {
            return a;
        }
        match (self.terms[a as usize].clone(), self.terms[b as usize].clone()) {
            (Term::Prog(x), Term::Prog(y)) => {
                let p = self.programs.seq(x, y);
                self.prog(p)
            }
            (Term::Seq(x, y), _) => {
                let r = self.seq(y, b);
                self.seq(x, r)
            }
            (Term::Prog(x), Term::Seq(y, rest)) => match self.terms[y as usize] {
                Term::Prog(yp) => {
                    let p = self.programs.seq(x, yp);
                    let h = self.prog(p);
                    self.seq(h, rest)
                }
                _ => self.intern(Term::Seq(a, b)),
            },
            _ => self.intern(Term::Seq(a, b)),
        }
    }

    /// Union of any number of expressions.
    pub fn sum(&mut self, items: &[Exp]) -> Exp {
        let mut flat: Vec<Exp> = Vec::with_capacity(items.len());
        let mut progs: Vec<Prog> = Vec::new();
        let mut stack: Vec<Exp> = items.to_vec();
        while let Some(e) = stack.pop() {
            match &self.terms[e as usize] {
                Term::Prog(p) => progs.push(*p),
                Term::Sum(xs) => stack.extend(xs.iter().copied()),
                _ => flat.push(e),
            }
        }
        // A balanced merge: folding one at a time rebuilds an ever larger program per item.
        let prog = self.union_all(&progs);
        if prog != DROP {
            let p = self.prog(prog);
            flat.push(p);
        }
        flat.sort_unstable();
        flat.dedup();
        match flat.len() {
            0 => ZERO,
            1 => flat[0],
            _ => self.intern(Term::Sum(flat.into())),
        }
    }

    fn union_all(&mut self, ps: &[Prog]) -> Prog {
        match ps.len() {
            0 => DROP,
            1 => ps[0],
            k => {
                let a = self.union_all(&ps[..k / 2]);
                let b = self.union_all(&ps[k / 2..]);
                self.programs.union(a, b)
            }
        }
    }

    /// Union of two expressions.
    pub fn union(&mut self, a: Exp, b: Exp) -> Exp {
        self.sum(&[a, b])
    }

    /// Kleene star.
    pub fn star(&mut self, a: Exp) -> Exp {
        match self.terms[a as usize] {
            Term::Prog(p) => {
                let s = self.programs.star(p);
                self.prog(s)
            }
            Term::Star(_) => a,
            _ => self.intern(Term::Star(a)),
        }
    }

    fn binary(&mut self, op: u8, a: Exp, b: Exp) -> Exp {
        if let (Term::Prog(x), Term::Prog(y)) =
            (self.terms[a as usize].clone(), self.terms[b as usize].clone())
        {
            let p = match op {
                0 => self.programs.inter(x, y),
                1 => self.programs.diff(x, y),
                _ => self.programs.xor(x, y),
            };
            return self.prog(p);
        }
        match op {
            0 if a == b || b == ZERO => b,
            0 if a == ZERO => ZERO,
            0 => {
                let (a, b) = if a > b { (b, a) } else { (a, b) };
                self.intern(Term::Inter(a, b))
            }
            1 if a == b || a == ZERO => ZERO,
            1 if b == ZERO => a,
            1 => self.intern(Term::Diff(a, b)),
            _ if a == b => ZERO,
            _ if a == ZERO => b,
            _ if b == ZERO => a,
            _ => {
                let (a, b) = if a > b { (b, a) } else { (a, b) };
                self.intern(Term::Xor(a, b))
            }
        }
    }

    /// Intersection of trace sets.
    pub fn inter(&mut self, a: Exp, b: Exp) -> Exp {
        self.binary(0, a, b)
    }

    /// The traces of `a` that `b` lacks.
    pub fn diff(&mut self, a: Exp, b: Exp) -> Exp {
        self.binary(1, a, b)
    }

    /// The traces exactly one side has.
    pub fn xor(&mut self, a: Exp, b: Exp) -> Exp {
        self.binary(2, a, b)
    }

    /// `e` with every `dup` replaced by `skip`: what it does to the first and last packets.
    pub fn erase(&mut self, e: Exp) -> Prog {
        if let Some(&p) = self.erased.get(&e) {
            return p;
        }
        let p = match self.terms[e as usize].clone() {
            Term::Prog(p) => p,
            Term::Dup => SKIP,
            Term::Seq(a, b) => {
                let (x, y) = (self.erase(a), self.erase(b));
                self.programs.seq(x, y)
            }
            Term::Sum(xs) => {
                let mut u = DROP;
                for &x in xs.iter() {
                    let p = self.erase(x);
                    u = self.programs.union(u, p);
                }
                u
            }
            Term::Star(a) => {
                let x = self.erase(a);
                self.programs.star(x)
            }
            // Intersection, difference and xor of traces are not determined by the erased
            // sides; walk the traces instead.
            Term::Inter(..) | Term::Diff(..) | Term::Xor(..) => self.collapse(e),
        };
        self.erased.insert(e, p);
        p
    }

    /// The first-to-last relation of `e`, by walking its derivatives.
    fn collapse(&mut self, e: Exp) -> Prog {
        // Relation from inputs to the packet entering each continuation.
        let mut seen: HashMap<Exp, Prog> = HashMap::default();
        let mut queue = VecDeque::new();
        seen.insert(e, SKIP);
        queue.push_back((e, SKIP));
        let mut out = DROP;
        while let Some((x, rel)) = queue.pop_front() {
            let eps = self.eps(x);
            let done = self.programs.seq(rel, eps);
            out = self.programs.union(out, done);
            let d = self.delta(x);
            for &(g, next) in d.iter() {
                let r = self.programs.seq(rel, g);
                let old = seen.get(&next).copied().unwrap_or(DROP);
                let new = self.programs.diff(r, old);
                if new != DROP {
                    let all = self.programs.union(old, new);
                    seen.insert(next, all);
                    queue.push_back((next, new));
                }
                if self.programs.exceeded() {
                    return DROP;
                }
            }
        }
        out
    }

    /// The packets `e` can end with, from any input (a filter).
    pub fn forward(&mut self, e: Exp) -> Prog {
        let p = self.erase(e);
        self.programs.range_of(p)
    }

    /// The packets `e` produces some trace for (a filter).
    pub fn backward(&mut self, e: Exp) -> Prog {
        let p = self.erase(e);
        self.programs.domain(p)
    }

    /// The traces of `e` without `dup`, as a program.
    pub fn eps(&mut self, e: Exp) -> Prog {
        if let Some(&p) = self.eps.get(&e) {
            return p;
        }
        let p = match self.terms[e as usize].clone() {
            Term::Prog(p) => p,
            Term::Dup => DROP,
            Term::Seq(a, b) => {
                let (x, y) = (self.eps(a), self.eps(b));
                self.programs.seq(x, y)
            }
            Term::Sum(xs) => {
                let mut u = DROP;
                for &x in xs.iter() {
                    let p = self.eps(x);
                    u = self.programs.union(u, p);
                }
                u
            }
            Term::Star(a) => {
                let x = self.eps(a);
                self.programs.star(x)
            }
            Term::Inter(a, b) => {
                let (x, y) = (self.eps(a), self.eps(b));
                self.programs.inter(x, y)
            }
            Term::Diff(a, b) => {
                let (x, y) = (self.eps(a), self.eps(b));
                self.programs.diff(x, y)
            }
            Term::Xor(a, b) => {
                let (x, y) = (self.eps(a), self.eps(b));
                self.programs.xor(x, y)
            }
        };
        self.eps.insert(e, p);
        p
    }

    /// Entries with equal continuations merged (guards united), empty guards dropped.
    fn merge(&mut self, mut v: Vec<(Prog, Exp)>) -> Delta {
        v.retain(|e| e.0 != DROP && e.1 != ZERO);
        v.sort_unstable_by_key(|e| e.1);
        let mut out: Vec<(Prog, Exp)> = Vec::with_capacity(v.len());
        for (g, c) in v {
            match out.last_mut() {
                Some(last) if last.1 == c => last.0 = self.programs.union(last.0, g),
                _ => out.push((g, c)),
            }
        }
        out.into()
    }

    /// The union of two derivative maps, made disjoint again.
    fn union_delta(&mut self, a: &[(Prog, Exp)], b: &[(Prog, Exp)]) -> Delta {
        if a.is_empty() {
            return b.into();
        }
        if b.is_empty() {
            return a.into();
        }
        let mut out = Vec::with_capacity(a.len() + b.len());
        for &(g, e) in a {
            let mut rest = g;
            for &(h, f) in b {
                let k = self.programs.inter(g, h);
                if k != DROP {
                    let u = self.union(e, f);
                    out.push((k, u));
                    rest = self.programs.diff(rest, h);
                }
            }
            out.push((rest, e));
        }
        for &(h, f) in b {
            let mut rest = h;
            for &(g, _) in a {
                rest = self.programs.diff(rest, g);
            }
            out.push((rest, f));
        }
        self.merge(out)
    }

    /// Adds entries that may overlap each other and `acc`.
    fn add_all(&mut self, acc: Delta, items: Vec<(Prog, Exp)>) -> Delta {
        let mut acc = acc;
        for it in items {
            if it.0 == DROP || it.1 == ZERO {
                continue;
            }
            acc = self.union_delta(&acc, &[it]);
        }
        acc
    }

    /// The derivative of `e`: disjoint guards, each with what follows its `dup`.
    pub fn delta(&mut self, e: Exp) -> Rc<[(Prog, Exp)]> {
        if let Some(d) = self.delta.get(&e) {
            return Rc::clone(d);
        }
        let d: Delta = match self.terms[e as usize].clone() {
            Term::Prog(_) => Rc::from([]),
            Term::Dup => Rc::from([(SKIP, ONE)]),
            Term::Sum(xs) => {
                let mut acc: Delta = Rc::from([]);
                for &x in xs.iter() {
                    let dx = self.delta(x);
                    acc = self.union_delta(&acc, &dx);
                }
                acc
            }
            Term::Seq(a, b) => {
                let da = self.delta(a);
                let mut first = Vec::with_capacity(da.len());
                for &(g, x) in da.iter() {
                    let c = self.seq(x, b);
                    first.push((g, c));
                }
                let first = self.merge(first);
                let ea = self.eps(a);
                let db = self.delta(b);
                let mut second = Vec::with_capacity(db.len());
                for &(h, y) in db.iter() {
                    let g = self.programs.seq(ea, h);
                    second.push((g, y));
                }
                self.add_all(first, second)
            }
            Term::Star(a) => {
                let ea = self.eps(a);
                let s = self.programs.star(ea);
                let da = self.delta(a);
                let mut items = Vec::with_capacity(da.len());
                for &(g, x) in da.iter() {
                    let guard = self.programs.seq(s, g);
                    let c = self.seq(x, e);
                    items.push((guard, c));
                }
                self.add_all(Rc::from([]), items)
            }
            Term::Inter(a, b) | Term::Diff(a, b) | Term::Xor(a, b) => {
                let kind = match self.terms[e as usize] {
                    Term::Inter(..) => 0,
                    Term::Diff(..) => 1,
                    _ => 2,
                };
                let (da, db) = (self.delta(a), self.delta(b));
                let mut out = Vec::new();
                for &(g, x) in da.iter() {
                    let mut rest = g;
                    for &(h, y) in db.iter() {
                        let k = self.programs.inter(g, h);
                        if k != DROP {
                            let c = self.binary(kind, x, y);
                            out.push((k, c));
                            rest = self.programs.diff(rest, h);
                        }
                    }
                    if kind != 0 {
                        out.push((rest, x));
                    }
                }
                if kind == 2 {
                    for &(h, y) in db.iter() {
                        let mut rest = h;
                        for &(g, _) in da.iter() {
                            rest = self.programs.diff(rest, g);
                        }
                        out.push((rest, y));
                    }
                }
                self.merge(out)
            }
        };
        self.delta.insert(e, Rc::clone(&d));
        d
    }

    /// Whether `a` and `b` have the same traces from every input; otherwise a
    /// counterexample. `fields` is how many fields packets have; `pick` chooses a value
    /// from an interval for the counterexample. Returns `Err(None)` if the node limit was
    /// reached before an answer.
    pub fn equiv(
        &mut self,
        a: Exp,
        b: Exp,
        fields: usize,
        pick: &impl Fn(u32, u32) -> u32,
    ) -> Result<Effort, Option<Counterexample>> {
        // (left, right, packets that arrive, parent item, guard taken from the parent)
        struct Item {
            pair: (Exp, Exp),
            set: Prog,
            parent: usize,
            guard: Prog,
        }
        let mut items: Vec<Item> = Vec::new();
        let mut seen: HashMap<(Exp, Exp), Prog> = HashMap::default();
        let mut queue = VecDeque::new();
        if a != b {
            seen.insert((a, b), SKIP);
            items.push(Item { pair: (a, b), set: SKIP, parent: usize::MAX, guard: SKIP });
            queue.push_back(0);
        }
        let mut effort = Effort::default();
        while let Some(i) = queue.pop_front() {
            effort.steps += 1;
            let (x, y) = items[i].pair;
            let set = items[i].set;
            let (ex, ey) = (self.eps(x), self.eps(y));
            let l = self.programs.seq(set, ex);
            let r = self.programs.seq(set, ey);
            if self.exceeded() {
                return Err(None);
            }
            if l != r {
                let d = self.programs.xor(l, r);
                return Err(Some(self.explain(&items_view(&items), i, d, l, fields, pick)));
            }
            let (dx, dy) = (self.delta(x), self.delta(y));
            let mut next: Vec<((Exp, Exp), Prog)> = Vec::new();
            for &(g, cx) in dx.iter() {
                let mut rest = g;
                for &(h, cy) in dy.iter() {
                    let k = self.programs.inter(g, h);
                    if k != DROP {
                        next.push(((cx, cy), k));
                        rest = self.programs.diff(rest, h);
                    }
                }
                next.push(((cx, ZERO), rest));
            }
            for &(h, cy) in dy.iter() {
                let mut rest = h;
                for &(g, _) in dx.iter() {
                    rest = self.programs.diff(rest, g);
                }
                next.push(((ZERO, cy), rest));
            }
            for (pair, k) in next {
                if k == DROP || pair.0 == pair.1 {
                    continue;
                }
                let arrive = self.programs.push(set, k);
                let old = seen.get(&pair).copied().unwrap_or(DROP);
                let new = self.programs.diff(arrive, old);
                if self.exceeded() {
                    return Err(None);
                }
                if new != DROP {
                    let all = self.programs.union(old, new);
                    seen.insert(pair, all);
                    items.push(Item { pair, set: new, parent: i, guard: k });
                    queue.push_back(items.len() - 1);
                }
            }
        }
        return Ok(effort);

        fn items_view(items: &[Item]) -> Vec<(Prog, usize, Prog)> {
            items.iter().map(|it| (it.set, it.parent, it.guard)).collect()
        }
    }

    /// A concrete counterexample at item `at` (sets, parents, guards), where the outputs
    /// `diff` differ and `left` is the left side's.
    fn explain(
        &mut self,
        items: &[(Prog, usize, Prog)],
        at: usize,
        diff: Prog,
        left: Prog,
        fields: usize,
        pick: &impl Fn(u32, u32) -> u32,
    ) -> Counterexample {
        let (mut p, output) = self.programs.pick(diff, fields, pick).expect("the sides differ");
        let left_has_it = self.programs.run(left, &p).contains(&output);
        // Walk back: at each step find a packet in the parent's set the guard sends to `p`.
        let mut trace = Vec::new();
        let mut i = at;
        while items[i].1 != usize::MAX {
            let (_, parent, guard) = items[i];
            trace.push(p.clone());
            let here = self.programs.point(&p);
            let from = self.programs.pull(guard, here);
            let from = self.programs.inter(from, items[parent].0);
            let (q, _) = self.programs.pick(from, fields, pick).expect("a packet got here");
            p = q;
            i = parent;
        }
        trace.reverse();
        let width = fields.max(p.len());
        let fix = |mut v: Vec<u32>| {
            v.resize(width, pick(0, u32::MAX));
            v
        };
        Counterexample {
            input: fix(p),
            trace: trace.into_iter().map(fix).collect(),
            output: fix(output),
            left_has_it,
        }
    }

    /// The traces of `e` on packet `p` with at most `max_dups` recorded packets, by direct
    /// evaluation of the term (a slow reference, for tests): each trace is the recorded
    /// packets followed by the output.
    pub fn traces(&mut self, e: Exp, p: &[u32], max_dups: usize) -> Vec<Vec<Vec<u32>>> {
        let mut out = Vec::new();
        let mut seen = rustc_hash::FxHashSet::default();
        let mut queue = VecDeque::new();
        queue.push_back((e, p.to_vec(), Vec::<Vec<u32>>::new()));
        while let Some((x, pk, rec)) = queue.pop_front() {
            if !seen.insert((x, pk.clone(), rec.clone())) {
                continue;
            }
            let eps = self.eps(x);
            for o in self.programs.run(eps, &pk) {
                let mut t = rec.clone();
                t.push(o);
                out.push(t);
            }
            if rec.len() >= max_dups {
                continue;
            }
            let d = self.delta(x);
            for &(g, next) in d.iter() {
                for q in self.programs.run(g, &pk) {
                    let mut r = rec.clone();
                    r.push(q.clone());
                    queue.push_back((next, q, r));
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn near_zero(lo: u32, _hi: u32) -> u32 {
        lo
    }

    fn t(n: &mut Netkat, f: u32, v: u32) -> Exp {
        let p = n.programs.test(f, v);
        n.prog(p)
    }

    fn a(n: &mut Netkat, f: u32, v: u32) -> Exp {
        let p = n.programs.assign(f, v);
        n.prog(p)
    }

    #[test]
    fn tutorial_checks() {
        let mut n = Netkat::new();
        let pick = near_zero;
        // (δ⋅δ)⋆ ≢ (δ⋆⋅δ)⋆
        let dd = n.seq(DUP, DUP);
        let l = n.star(dd);
        let ds = n.star(DUP);
        let dsd = n.seq(ds, DUP);
        let r = n.star(dsd);
        assert!(n.equiv(l, r, 1, &pick).is_err());
        // (δ⋅δ⋆)⋆ ≡ (δ⋆⋅δ)⋆
        let dds = n.seq(DUP, ds);
        let l2 = n.star(dds);
        assert!(n.equiv(l2, r, 1, &pick).is_ok());
        // δ⋅@d=3 ≡ @d=3⋅δ
        let d3 = t(&mut n, 0, 3);
        let x = n.seq(DUP, d3);
        let y = n.seq(d3, DUP);
        assert!(n.equiv(x, y, 1, &pick).is_ok());
        // δ⋅@d←3 ≢ @d←3⋅δ, and the counterexample shows it.
        let s3 = a(&mut n, 0, 3);
        let x = n.seq(DUP, s3);
        let y = n.seq(s3, DUP);
        let c = n.equiv(x, y, 1, &pick).unwrap_err().unwrap();
        assert_eq!(c.trace.len(), 1);
        let lt = n.traces(x, &c.input, 3);
        let rt = n.traces(y, &c.input, 3);
        let mut want = c.trace.clone();
        want.push(c.output.clone());
        assert_eq!(lt.contains(&want), c.left_has_it);
        assert_eq!(rt.contains(&want), !c.left_has_it);
    }

    #[test]
    fn emptiness_through_a_loop() {
        // A line of switches 0→1→2→3, one hop per dup; reachable 0→3, never 0→9.
        let mut n = Netkat::new();
        let mut hop = DROP;
        for i in 0..3 {
            let tt = n.programs.test(0, i);
            let aa = n.programs.assign(0, i + 1);
            let s = n.programs.seq(tt, aa);
            hop = n.programs.union(hop, s);
        }
        let h = n.prog(hop);
        let step = n.seq(h, DUP);
        let walk = n.star(step);
        let start = t(&mut n, 0, 0);
        let to3 = t(&mut n, 0, 3);
        let to9 = t(&mut n, 0, 9);
        let w = n.seq(start, walk);
        let reach = n.seq(w, to3);
        let c = n.equiv(reach, ZERO, 1, &near_zero).unwrap_err().unwrap();
        assert_eq!(c.input, vec![0]);
        assert_eq!(c.trace, vec![vec![1], vec![2], vec![3]]);
        assert_eq!(c.output, vec![3]);
        let never = n.seq(w, to9);
        assert!(n.equiv(never, ZERO, 1, &near_zero).is_ok());
        assert_eq!(n.forward(w), n.programs.range(0, 0, 3));
    }

    #[test]
    fn intersection_and_difference_of_traces() {
        let mut n = Netkat::new();
        let ds = n.star(DUP);
        let dd = n.seq(DUP, DUP);
        let even = n.star(dd);
        // δ⋆ ∩ (δδ)⋆ ≡ (δδ)⋆ ; δ⋆ ∖ (δδ)⋆ ≡ δ⋅(δδ)⋆
        let i = n.inter(ds, even);
        assert!(n.equiv(i, even, 0, &near_zero).is_ok());
        let d = n.diff(ds, even);
        let odd = n.seq(DUP, even);
        assert!(n.equiv(d, odd, 0, &near_zero).is_ok());
        let x = n.xor(ds, odd);
        assert!(n.equiv(x, even, 0, &near_zero).is_ok());
        assert!(n.equiv(x, odd, 0, &near_zero).is_err());
        assert_eq!(n.erase(d), SKIP);
    }
}
