//! Packet programs: NetKAT's dup-free policies (tests, assignments, union, sequence, star)
//! as decision diagrams over whole fields, with interval-labelled nodes.
//!
//! A program is a relation between input and output packets. A node looks at one field of
//! the input: its *pieces* split the field's values into intervals, and for an input in a
//! piece the node lists its *outputs*: either "keep the value" or "set it to `c`", each
//! followed by the program for the later fields (KATch's `TestMut`, with intervals in place
//! of single values). A field a path does not look at passes through unchanged. Filters
//! (packet sets) are the programs whose outputs all keep the value.
//!
//! The form is canonical, so two programs are equal exactly when their handles are: outputs
//! are sorted with no empty continuation and no value twice; every value `c` that some other
//! input is set to (the node's *constants*) is a piece of its own, where "keep" is written as
//! "set to `c`"; in any other one-value piece "set to its own value" is written as "keep";
//! neighbouring pieces that are not constants merge when their outputs are equal; a node
//! with one piece that keeps every value is its continuation.
//!
//! Values are `u32`; every field has the whole range. Fields are levels, tested in
//! increasing order along every path; a manager can take new fields at any time (they come
//! after the existing ones), since a diagram that never looks at a field leaves it alone.
//!
//! Written here for the same reason as [`crate::dd`]: no crate has transformer diagrams with
//! interval keys.

use std::rc::Rc;

use rustc_hash::FxHashMap as HashMap;

/// A program: a handle into its [`Programs`] manager.
pub type Prog = u32;

/// The program that drops every packet (the empty relation).
pub const DROP: Prog = 0;
/// The program that passes every packet unchanged (the identity).
pub const SKIP: Prog = 1;

/// An output: `None` keeps the input's value, `Some(c)` sets the field to `c`.
type Out = Option<u32>;
type Outs = Rc<[(Out, Prog)]>;
/// A piece being built: its start, its outputs, whether it is one of the node's constants.
type Piece = (u32, Vec<(Out, Prog)>, bool);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Node {
    Drop,
    Skip,
    Mut { level: u32, pieces: Rc<[(u32, Outs)]> },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Op {
    Union,
    Inter,
    Diff,
    Seq,
}

/// Nodes a manager holds at most unless told otherwise.
pub const DEFAULT_LIMIT: usize = 8_000_000;
const CACHE_MAX: usize = 1 << 22;

/// Owns the nodes of any number of programs.
#[derive(Debug)]
pub struct Programs {
    nodes: Vec<Node>,
    unique: HashMap<Node, Prog>,
    cache: HashMap<(Op, Prog, Prog), Prog>,
    unary: HashMap<(u8, u32, Prog), Prog>,
    limit: usize,
    exceeded: bool,
}

impl Default for Programs {
    fn default() -> Self {
        Self::new()
    }
}

/// The last value of piece `i`.
fn end(pieces: &[(u32, Outs)], i: usize) -> u32 {
    pieces.get(i + 1).map_or(u32::MAX, |p| p.0 - 1)
}

/// The piece holding value `v`.
fn find(pieces: &[(u32, Outs)], v: u32) -> usize {
    pieces.partition_point(|p| p.0 <= v) - 1
}

/// The segments where two piece lists overlap: `(start, end, piece of a, piece of b)`.
fn segments(a: &[(u32, Outs)], b: &[(u32, Outs)]) -> Vec<(u32, u32, usize, usize)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    let mut start = 0u32;
    loop {
        let ea = end(a, i);
        let eb = end(b, j);
        let e = ea.min(eb);
        out.push((start, e, i, j));
        if e == u32::MAX {
            return out;
        }
        if ea == e {
            i += 1;
        }
        if eb == e {
            j += 1;
        }
        start = e + 1;
    }
}

impl Programs {
    /// An empty manager (just [`DROP`] and [`SKIP`]).
    pub fn new() -> Self {
        let mut m = Self {
            nodes: Vec::new(),
            unique: HashMap::default(),
            cache: HashMap::default(),
            unary: HashMap::default(),
            limit: DEFAULT_LIMIT,
            exceeded: false,
        };
        let d = m.intern(Node::Drop);
        let s = m.intern(Node::Skip);
        debug_assert_eq!((d, s), (DROP, SKIP));
        m
    }

    /// Sets how many nodes the manager may hold. Past it operations stop building, their
    /// results are meaningless and [`Programs::exceeded`] says so.
    pub fn set_limit(&mut self, nodes: usize) {
        self.limit = nodes.max(2);
    }

    /// Whether an operation ran past the node limit.
    pub fn exceeded(&self) -> bool {
        self.exceeded
    }

    /// Nodes held (the two constants included).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether only [`DROP`] and [`SKIP`] exist.
    pub fn is_empty(&self) -> bool {
        self.nodes.len() <= 2
    }

    fn intern(&mut self, n: Node) -> Prog {
        if let Some(&id) = self.unique.get(&n) {
            return id;
        }
        if self.nodes.len() >= self.limit {
            self.exceeded = true;
            return DROP;
        }
        let id = Prog::try_from(self.nodes.len()).expect("fewer than 2^32 nodes");
        self.nodes.push(n.clone());
        self.unique.insert(n, id);
        id
    }

    fn level(&self, p: Prog) -> u32 {
        match &self.nodes[p as usize] {
            Node::Mut { level, .. } => *level,
            _ => u32::MAX,
        }
    }

    /// `p`'s pieces if it looks at `level`, else one piece that keeps every value.
    fn pieces_at(&self, p: Prog, level: u32) -> Rc<[(u32, Outs)]> {
        match &self.nodes[p as usize] {
            Node::Mut { level: l, pieces } if *l == level => Rc::clone(pieces),
            _ if p == DROP => Rc::from([(0, Rc::from([]))]),
            _ => Rc::from([(0, Rc::from([(None, p)]))]),
        }
    }

    /// Sorts outputs, unites continuations of equal outputs and drops empty ones.
    fn norm_outs(&mut self, mut v: Vec<(Out, Prog)>) -> Vec<(Out, Prog)> {
        v.sort_unstable_by_key(|e| e.0);
        let mut out: Vec<(Out, Prog)> = Vec::with_capacity(v.len());
        for (k, c) in v {
            if c == DROP {
                continue;
            }
            match out.last_mut() {
                Some(last) if last.0 == k => last.1 = self.union(last.1, c),
                _ => out.push((k, c)),
            }
        }
        out
    }

    /// Builds the canonical node at `level` from pieces covering every value in order
    /// (the first starting at 0), with outputs in any order.
    fn mk(&mut self, level: u32, raw: Vec<(u32, Vec<(Out, Prog)>)>) -> Prog {
        if self.exceeded {
            return DROP;
        }
        let mut pieces: Vec<(u32, Vec<(Out, Prog)>)> = Vec::with_capacity(raw.len());
        for (s, outs) in raw {
            let outs = self.norm_outs(outs);
            pieces.push((s, outs));
        }
        // The constants: values some other input is set to.
        let mut consts: Vec<u32> = Vec::new();
        for (i, (s, outs)) in pieces.iter().enumerate() {
            let e = pieces.get(i + 1).map_or(u32::MAX, |p| p.0 - 1);
            for (k, _) in outs {
                if let Some(c) = *k
                    && !(*s == c && e == c)
                {
                    consts.push(c);
                }
            }
        }
        consts.sort_unstable();
        consts.dedup();
        // Split out the constants; rewrite one-value pieces.
        let mut split: Vec<Piece> = Vec::with_capacity(pieces.len());
        for i in 0..pieces.len() {
            let s = pieces[i].0;
            let e = pieces.get(i + 1).map_or(u32::MAX, |p| p.0 - 1);
            let outs = std::mem::take(&mut pieces[i].1);
            let mut at = u64::from(s);
            let first = consts.partition_point(|&c| c < s);
            for &c in consts[first..].iter().take_while(|&&c| c <= e) {
                if u64::from(c) > at {
                    split.push((at as u32, outs.clone(), false));
                }
                split.push((c, outs.clone(), true));
                at = u64::from(c) + 1;
            }
            if at <= u64::from(e) {
                split.push((at as u32, outs, false));
            }
        }
        // One-value pieces: constants say "set", others say "keep".
        let mut fixed: Vec<Piece> = Vec::with_capacity(split.len());
        for i in 0..split.len() {
            let s = split[i].0;
            let e = split.get(i + 1).map_or(u32::MAX, |p| p.0 - 1);
            let is_const = split[i].2;
            let mut outs = std::mem::take(&mut split[i].1);
            if s == e {
                let from = if is_const { None } else { Some(s) };
                let to = if is_const { Some(s) } else { None };
                if outs.iter().any(|o| o.0 == from) {
                    for o in &mut outs {
                        if o.0 == from {
                            o.0 = to;
                        }
                    }
                    outs = self.norm_outs(outs);
                }
            }
            fixed.push((s, outs, is_const));
        }
        // Merge neighbours.
        let mut merged: Vec<(u32, Outs)> = Vec::with_capacity(fixed.len());
        let mut last_const = true;
        for (s, outs, is_const) in fixed {
            if !is_const && !last_const && merged.last().is_some_and(|l| *l.1 == *outs) {
                continue;
            }
            merged.push((s, outs.into()));
            last_const = is_const;
        }
        if merged.len() == 1 {
            let outs = &merged[0].1;
            if outs.is_empty() {
                return DROP;
            }
            if outs.len() == 1 && outs[0].0.is_none() {
                return outs[0].1;
            }
        }
        self.intern(Node::Mut { level, pieces: merged.into() })
    }

    /// The packets whose field `f` equals `v`.
    pub fn test(&mut self, f: u32, v: u32) -> Prog {
        self.range(f, v, v)
    }

    /// The packets whose field `f` lies in `lo..=hi`.
    pub fn range(&mut self, f: u32, lo: u32, hi: u32) -> Prog {
        if lo > hi {
            return DROP;
        }
        let mut raw = Vec::with_capacity(3);
        if lo > 0 {
            raw.push((0, vec![]));
        }
        raw.push((lo, vec![(None, SKIP)]));
        if hi < u32::MAX {
            raw.push((hi + 1, vec![]));
        }
        self.mk(f, raw)
    }

    /// Sets field `f` to `v`.
    pub fn assign(&mut self, f: u32, v: u32) -> Prog {
        self.mk(f, vec![(0, vec![(Some(v), SKIP)])])
    }

    fn cached(&self, op: Op, a: Prog, b: Prog) -> Option<Prog> {
        self.cache.get(&(op, a, b)).copied()
    }

    fn remember(&mut self, op: Op, a: Prog, b: Prog, r: Prog) {
        if self.cache.len() >= CACHE_MAX {
            self.cache.clear();
        }
        self.cache.insert((op, a, b), r);
    }

    /// Union: the outputs of either program.
    pub fn union(&mut self, a: Prog, b: Prog) -> Prog {
        if a == DROP || a == b {
            return b;
        }
        if b == DROP {
            return a;
        }
        let (a, b) = if a > b { (b, a) } else { (a, b) };
        if let Some(r) = self.cached(Op::Union, a, b) {
            return r;
        }
        if self.exceeded {
            return DROP;
        }
        let l = self.level(a).min(self.level(b));
        let (pa, pb) = (self.pieces_at(a, l), self.pieces_at(b, l));
        let raw = segments(&pa, &pb)
            .into_iter()
            .map(|(s, _, i, j)| (s, pa[i].1.iter().chain(pb[j].1.iter()).copied().collect()))
            .collect();
        let r = self.mk(l, raw);
        self.remember(Op::Union, a, b, r);
        r
    }

    /// Outputs of a one-value segment `v`, with "keep" written as "set to `v`".
    fn at_point(&mut self, outs: &[(Out, Prog)], v: u32) -> Vec<(Out, Prog)> {
        let o = outs.iter().map(|&(k, c)| (Some(k.unwrap_or(v)), c)).collect();
        self.norm_outs(o)
    }

    /// Intersection (`inter = true`) or difference of two relations, segment by segment.
    fn inter_or_diff(&mut self, op: Op, a: Prog, b: Prog) -> Prog {
        if let Some(r) = self.cached(op, a, b) {
            return r;
        }
        if self.exceeded {
            return DROP;
        }
        let l = self.level(a).min(self.level(b));
        let (pa, pb) = (self.pieces_at(a, l), self.pieces_at(b, l));
        let mut raw = Vec::new();
        for (s, e, i, j) in segments(&pa, &pb) {
            let (oa, ob) = if s == e {
                (self.at_point(&pa[i].1, s), self.at_point(&pb[j].1, s))
            } else {
                (pa[i].1.to_vec(), pb[j].1.to_vec())
            };
            let mut outs = Vec::with_capacity(oa.len());
            for (k, ca) in oa {
                let cb = ob.iter().find(|o| o.0 == k).map_or(DROP, |o| o.1);
                let c = if op == Op::Inter { self.inter(ca, cb) } else { self.diff(ca, cb) };
                outs.push((k, c));
            }
            raw.push((s, outs));
        }
        let r = self.mk(l, raw);
        self.remember(op, a, b, r);
        r
    }

    /// Intersection: the input-output pairs of both programs.
    pub fn inter(&mut self, a: Prog, b: Prog) -> Prog {
        if a == DROP || b == DROP {
            return DROP;
        }
        if a == b {
            return a;
        }
        let (a, b) = if a > b { (b, a) } else { (a, b) };
        self.inter_or_diff(Op::Inter, a, b)
    }

    /// Difference: the input-output pairs of `a` that `b` lacks.
    pub fn diff(&mut self, a: Prog, b: Prog) -> Prog {
        if a == DROP || a == b {
            return DROP;
        }
        if b == DROP {
            return a;
        }
        self.inter_or_diff(Op::Diff, a, b)
    }

    /// Symmetric difference.
    pub fn xor(&mut self, a: Prog, b: Prog) -> Prog {
        let x = self.diff(a, b);
        let y = self.diff(b, a);
        self.union(x, y)
    }

    /// The complement of a filter (the packets it drops). `a` must be a filter.
    pub fn not(&mut self, a: Prog) -> Prog {
        self.diff(SKIP, a)
    }

    /// Sequence: `a`, then `b` on each of its outputs.
    pub fn seq(&mut self, a: Prog, b: Prog) -> Prog {
        if a == DROP || b == DROP {
            return DROP;
        }
        if a == SKIP {
            return b;
        }
        if b == SKIP {
            return a;
        }
        if let Some(r) = self.cached(Op::Seq, a, b) {
            return r;
        }
        if self.exceeded {
            return DROP;
        }
        let l = self.level(a).min(self.level(b));
        let (pa, pb) = (self.pieces_at(a, l), self.pieces_at(b, l));
        let mut raw = Vec::new();
        for (s, _, i, j) in segments(&pa, &pb) {
            let mut outs = Vec::new();
            for &(k, ca) in pa[i].1.iter() {
                match k {
                    None => {
                        for &(kb, cb) in pb[j].1.iter() {
                            let c = self.seq(ca, cb);
                            outs.push((kb, c));
                        }
                    }
                    Some(v) => {
                        let jb = find(&pb, v);
                        for &(kb, cb) in pb[jb].1.iter() {
                            let c = self.seq(ca, cb);
                            outs.push((Some(kb.unwrap_or(v)), c));
                        }
                    }
                }
            }
            raw.push((s, outs));
        }
        let r = self.mk(l, raw);
        self.remember(Op::Seq, a, b, r);
        r
    }

    /// Kleene star: zero or more runs of `a`, by repeated squaring of `skip ∪ a`.
    pub fn star(&mut self, a: Prog) -> Prog {
        if let Some(&r) = self.unary.get(&(0, 0, a)) {
            return r;
        }
        let mut r = self.union(SKIP, a);
        loop {
            let r2 = self.seq(r, r);
            if r2 == r || self.exceeded {
                break;
            }
            r = r2;
        }
        self.unary.insert((0, 0, a), r);
        r
    }

    /// The packets some input is sent to (a filter).
    pub fn range_of(&mut self, a: Prog) -> Prog {
        if a == DROP || a == SKIP {
            return a;
        }
        if let Some(&r) = self.unary.get(&(1, 0, a)) {
            return r;
        }
        let Node::Mut { level, pieces } = self.nodes[a as usize].clone() else {
            unreachable!("constants handled above")
        };
        // What each piece's outputs cover: (first, last, packets after this field).
        let mut parts: Vec<(u32, u32, Prog)> = Vec::new();
        for (i, (s, outs)) in pieces.iter().enumerate() {
            let e = end(&pieces, i);
            for &(k, c) in outs.iter() {
                let rest = self.range_of(c);
                match k {
                    None => parts.push((*s, e, rest)),
                    Some(v) => parts.push((v, v, rest)),
                }
            }
        }
        let r = self.cover(level, &parts);
        self.unary.insert((1, 0, a), r);
        r
    }

    /// The filter whose field at `level` in `first..=last` leads to the union of the
    /// parts covering it.
    fn cover(&mut self, level: u32, parts: &[(u32, u32, Prog)]) -> Prog {
        let mut cuts: Vec<u32> = Vec::with_capacity(2 * parts.len() + 1);
        cuts.push(0);
        for &(s, e, _) in parts {
            cuts.push(s);
            if e < u32::MAX {
                cuts.push(e + 1);
            }
        }
        cuts.sort_unstable();
        cuts.dedup();
        let mut order: Vec<usize> = (0..parts.len()).collect();
        order.sort_unstable_by_key(|&i| parts[i].0);
        let mut active: Vec<usize> = Vec::new();
        let mut next = 0;
        let mut raw = Vec::with_capacity(cuts.len());
        for (ci, &s) in cuts.iter().enumerate() {
            let e = cuts.get(ci + 1).map_or(u32::MAX, |&n| n - 1);
            while next < order.len() && parts[order[next]].0 <= s {
                active.push(order[next]);
                next += 1;
            }
            active.retain(|&i| parts[i].1 >= s);
            let mut u = DROP;
            for &i in &active {
                u = self.union(u, parts[i].2);
            }
            debug_assert!(active.iter().all(|&i| parts[i].1 >= e));
            raw.push((s, vec![(None, u)]));
        }
        self.mk(level, raw)
    }

    /// The packets `a` sends somewhere (a filter).
    pub fn domain(&mut self, a: Prog) -> Prog {
        if a == DROP || a == SKIP {
            return a;
        }
        if let Some(&r) = self.unary.get(&(2, 0, a)) {
            return r;
        }
        let Node::Mut { level, pieces } = self.nodes[a as usize].clone() else {
            unreachable!("constants handled above")
        };
        let mut raw = Vec::with_capacity(pieces.len());
        for (s, outs) in pieces.iter() {
            let mut u = DROP;
            for &(_, c) in outs.iter() {
                let d = self.domain(c);
                u = self.union(u, d);
            }
            raw.push((*s, vec![(None, u)]));
        }
        let r = self.mk(level, raw);
        self.unary.insert((2, 0, a), r);
        r
    }

    /// The image of packet set `set` (a filter) under `a`.
    pub fn push(&mut self, set: Prog, a: Prog) -> Prog {
        let s = self.seq(set, a);
        self.range_of(s)
    }

    /// The packets `a` sends into packet set `set` (a filter).
    pub fn pull(&mut self, a: Prog, set: Prog) -> Prog {
        let s = self.seq(a, set);
        self.domain(s)
    }

    /// Whether `a` only tests (every output keeps the input).
    pub fn is_filter(&self, a: Prog) -> bool {
        let mut seen = rustc_hash::FxHashSet::default();
        let mut stack = vec![a];
        while let Some(p) = stack.pop() {
            if !seen.insert(p) {
                continue;
            }
            if let Node::Mut { pieces, .. } = &self.nodes[p as usize] {
                for (_, outs) in pieces.iter() {
                    for &(k, c) in outs.iter() {
                        if k.is_some() {
                            return false;
                        }
                        stack.push(c);
                    }
                }
            }
        }
        true
    }

    /// The filter of packets for which some value of field `f` is in filter `a`
    /// (`forall = false`), or every value is (`forall = true`).
    pub fn quantify(&mut self, f: u32, a: Prog, forall: bool) -> Prog {
        let tag = if forall { 4 } else { 3 };
        if let Some(&r) = self.unary.get(&(tag, f, a)) {
            return r;
        }
        let r = match self.nodes[a as usize].clone() {
            Node::Drop | Node::Skip => a,
            Node::Mut { level, .. } if level > f => a,
            Node::Mut { level, pieces } if level == f => {
                let mut u = if forall { SKIP } else { DROP };
                for (_, outs) in pieces.iter() {
                    let c = outs.first().map_or(DROP, |o| o.1);
                    u = if forall { self.inter(u, c) } else { self.union(u, c) };
                }
                u
            }
            Node::Mut { level, pieces } => {
                let mut raw = Vec::with_capacity(pieces.len());
                for (s, outs) in pieces.iter() {
                    let mut o = Vec::with_capacity(outs.len());
                    for &(k, c) in outs.iter() {
                        let q = self.quantify(f, c, forall);
                        o.push((k, q));
                    }
                    raw.push((*s, o));
                }
                self.mk(level, raw)
            }
        };
        self.unary.insert((tag, f, a), r);
        r
    }

    /// The outputs of `a` on packet `p` (one value per field; missing fields count as 0).
    pub fn run(&self, a: Prog, p: &[u32]) -> Vec<Vec<u32>> {
        let mut out = Vec::new();
        let mut cur = p.to_vec();
        self.run_in(a, &mut cur, &mut out);
        out.sort();
        out.dedup();
        out
    }

    fn run_in(&self, a: Prog, cur: &mut Vec<u32>, out: &mut Vec<Vec<u32>>) {
        match &self.nodes[a as usize] {
            Node::Drop => {}
            Node::Skip => out.push(cur.clone()),
            Node::Mut { level, pieces } => {
                let f = *level as usize;
                if cur.len() <= f {
                    cur.resize(f + 1, 0);
                }
                let v = cur[f];
                let i = find(pieces, v);
                for &(k, c) in pieces[i].1.iter() {
                    cur[f] = k.unwrap_or(v);
                    self.run_in(c, cur, out);
                }
                cur[f] = v;
            }
        }
    }

    /// The filter holding exactly packet `p` on fields `0..p.len()`.
    pub fn point(&mut self, p: &[u32]) -> Prog {
        let mut d = SKIP;
        for (f, &v) in p.iter().enumerate().rev() {
            let t = self.test(f as u32, v);
            d = self.seq(t, d);
        }
        d
    }

    /// One input-output pair of `a` over `fields` fields, if `a` is not [`DROP`]. Each value
    /// is `pick(first, last)` of the interval it comes from; fields no path looks at are
    /// `pick(0, u32::MAX)` in both.
    pub fn pick(
        &self,
        a: Prog,
        fields: usize,
        pick: &impl Fn(u32, u32) -> u32,
    ) -> Option<(Vec<u32>, Vec<u32>)> {
        if a == DROP {
            return None;
        }
        let free = pick(0, u32::MAX);
        let mut input = vec![free; fields];
        let mut output = vec![free; fields];
        let mut d = a;
        loop {
            match &self.nodes[d as usize] {
                Node::Drop => unreachable!("canonical programs have no empty continuations"),
                Node::Skip => return Some((input, output)),
                Node::Mut { level, pieces } => {
                    let f = *level as usize;
                    if input.len() <= f {
                        input.resize(f + 1, free);
                        output.resize(f + 1, free);
                    }
                    let i = (0..pieces.len()).find(|&i| !pieces[i].1.is_empty())?;
                    let v = pick(pieces[i].0, end(pieces, i));
                    let (k, c) = pieces[i].1[0];
                    input[f] = v;
                    output[f] = k.unwrap_or(v);
                    d = c;
                }
            }
        }
    }

    /// A readable listing of `a`: one line per path, at most `max` lines. `name` names a
    /// field and `value` a value.
    pub fn describe(
        &self,
        a: Prog,
        max: usize,
        name: &impl Fn(u32) -> String,
        value: &impl Fn(u32) -> String,
    ) -> Vec<String> {
        let mut lines = Vec::new();
        let mut path = Vec::new();
        self.describe_in(a, max, name, value, &mut path, &mut lines);
        lines
    }

    fn describe_in(
        &self,
        a: Prog,
        max: usize,
        name: &impl Fn(u32) -> String,
        value: &impl Fn(u32) -> String,
        path: &mut Vec<String>,
        lines: &mut Vec<String>,
    ) {
        if lines.len() >= max {
            return;
        }
        match &self.nodes[a as usize] {
            Node::Drop => {}
            Node::Skip => {
                lines.push(if path.is_empty() { "ε".to_string() } else { path.join(" ⋅ ") });
            }
            Node::Mut { level, pieces } => {
                let n = name(*level);
                for (i, (s, outs)) in pieces.iter().enumerate() {
                    let e = end(pieces, i);
                    let test = if *s == e {
                        format!("@{n}={}", value(*s))
                    } else if *s == 0 && e == u32::MAX {
                        String::new()
                    } else {
                        format!("@{n}∈{}..{}", value(*s), value(e))
                    };
                    for &(k, c) in outs.iter() {
                        let depth = path.len();
                        if !test.is_empty() {
                            path.push(test.clone());
                        }
                        if let Some(v) = k {
                            path.push(format!("@{n}←{}", value(v)));
                        }
                        self.describe_in(c, max, name, value, path, lines);
                        path.truncate(depth);
                    }
                }
            }
        }
    }

    /// Graphviz text for `a`; `name` and `value` as in [`Programs::describe`].
    pub fn dot(
        &self,
        a: Prog,
        name: &impl Fn(u32) -> String,
        value: &impl Fn(u32) -> String,
    ) -> String {
        use std::fmt::Write as _;
        let mut s = String::from("digraph program {\n  node [shape=box];\n");
        let mut seen = rustc_hash::FxHashSet::default();
        let mut stack = vec![a];
        while let Some(p) = stack.pop() {
            if !seen.insert(p) {
                continue;
            }
            match &self.nodes[p as usize] {
                Node::Drop => {
                    let _ = writeln!(s, "  n{p} [label=\"⊥\"];");
                }
                Node::Skip => {
                    let _ = writeln!(s, "  n{p} [label=\"ε\"];");
                }
                Node::Mut { level, pieces } => {
                    let n = name(*level);
                    let _ = writeln!(s, "  n{p} [label=\"@{n}\", shape=ellipse];");
                    for (i, (st, outs)) in pieces.iter().enumerate() {
                        let e = end(pieces, i);
                        let range = if *st == e {
                            value(*st)
                        } else {
                            format!("{}..{}", value(*st), value(e))
                        };
                        for &(k, c) in outs.iter() {
                            let label = match k {
                                None => range.clone(),
                                Some(v) => format!("{range} ←{}", value(v)),
                            };
                            let _ = writeln!(s, "  n{p} -> n{c} [label=\"{label}\"];");
                            stack.push(c);
                        }
                    }
                }
            }
        }
        s.push_str("}\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outs(m: &Programs, a: Prog, p: &[u32]) -> Vec<Vec<u32>> {
        m.run(a, p)
    }

    #[test]
    fn tests_and_assignments() {
        let mut m = Programs::new();
        let t = m.test(0, 5);
        let a = m.assign(0, 5);
        // @a=5 ≡ @a=5⋅@a←5
        let ta = m.seq(t, a);
        assert_eq!(t, ta);
        // @a=5 ≢ @a←5⋅@a=5 (the latter is @a←5)
        let at = m.seq(a, t);
        assert_eq!(at, a);
        assert_ne!(t, a);
        assert_eq!(outs(&m, a, &[3]), vec![vec![5]]);
        assert_eq!(outs(&m, t, &[3]), Vec::<Vec<u32>>::new());
        assert_eq!(outs(&m, t, &[5]), vec![vec![5]]);
        // assignments in either order on different fields commute
        let b = m.assign(1, 7);
        let ab = m.seq(a, b);
        let ba = m.seq(b, a);
        assert_eq!(ab, ba);
        // the last assignment wins
        let a6 = m.assign(0, 6);
        let aa = m.seq(a, a6);
        assert_eq!(aa, a6);
    }

    #[test]
    fn canonical_keep_versus_set() {
        let mut m = Programs::new();
        // On value 5 alone, keeping and setting to 5 are the same program.
        let t = m.test(0, 5);
        let a = m.assign(0, 5);
        let set_on_5 = m.seq(t, a);
        assert_eq!(set_on_5, t);
        // skip ∪ @a←5 and @a≠5⋅skip ∪ @a←5 are equal.
        let u1 = m.union(SKIP, a);
        let n5 = m.not(t);
        let u2 = m.union(n5, a);
        assert_eq!(u1, u2);
        // (skip ∪ @a←5) ∩ @a←5 is @a←5; minus it leaves @a≠5.
        let i = m.inter(u1, a);
        assert_eq!(i, a);
        let d = m.diff(u1, a);
        assert_eq!(d, n5);
    }

    #[test]
    fn star_and_images() {
        let mut m = Programs::new();
        // A counter on field 0 from 0 to 3: @x=i ⋅ @x←i+1.
        let mut step = DROP;
        for i in 0..3 {
            let t = m.test(0, i);
            let a = m.assign(0, i + 1);
            let s = m.seq(t, a);
            step = m.union(step, s);
        }
        let s = m.star(step);
        assert_eq!(outs(&m, s, &[0]), vec![vec![0], vec![1], vec![2], vec![3]]);
        assert_eq!(outs(&m, s, &[9]), vec![vec![9]]);
        let zero = m.test(0, 0);
        let img = m.push(zero, s);
        assert_eq!(img, m.range(0, 0, 3));
        let three = m.test(0, 3);
        let pre = m.pull(s, three);
        assert_eq!(pre, m.range(0, 0, 3));
        assert!(m.is_filter(pre));
        assert!(!m.is_filter(s));
    }

    #[test]
    fn quantifiers() {
        let mut m = Programs::new();
        let a = m.test(0, 1);
        let b = m.test(1, 2);
        let ab = m.seq(a, b);
        assert_eq!(m.quantify(0, ab, false), b);
        assert_eq!(m.quantify(0, ab, true), DROP);
        let na = m.not(a);
        let both = m.union(ab, na);
        // for every x: x≠1 or y=2  ⇔  y=2
        assert_eq!(m.quantify(0, both, true), b);
    }

    #[test]
    fn constants_at_the_domain_end() {
        let mut m = Programs::new();
        let a = m.assign(0, u32::MAX);
        assert_eq!(outs(&m, a, &[0]), vec![vec![u32::MAX]]);
        assert_eq!(outs(&m, a, &[u32::MAX]), vec![vec![u32::MAX]]);
        let z = m.assign(0, 0);
        let u = m.union(a, z);
        assert_eq!(outs(&m, u, &[7]), vec![vec![0], vec![u32::MAX]]);
        let t = m.test(0, u32::MAX);
        assert_eq!(m.seq(t, a), t);
    }
}
