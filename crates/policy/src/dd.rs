//! Interval decision diagrams: multi-way nodes over whole header fields, each edge labelled
//! with a half-open interval of the field's values, hash-consed so that equal diagrams are
//! equal handles.
//!
//! A node tests one field and lists `(start, child)` edges in ascending order of `start`, the
//! first at 0: edge k covers `start_k ..= start_{k+1} - 1` (the last, up to `u32::MAX`).
//! Prefixes and port ranges are one interval each, so they never expand into bits. Fields are
//! tested in increasing index order along every path; adjacent edges with the same child are
//! merged and a node whose edges all lead to one child is that child, so the form is canonical:
//! two diagrams mean the same function exactly when their handles are equal.
//!
//! Terminals carry a `u32`: 0 and 1 for packet sets (false, true), or a rule number for the
//! decision diagram of a rule list. Values above a field's domain maximum behave like the
//! maximum (cubes are normalised that way), so the domain's end never shows up as a spurious
//! difference.
//!
//! Written here: no Rust crate has interval or multi-way nodes (`oxidd` and
//! `biodivine-lib-bdd` are bit-level); the notes in `../shared/notes/netkat.md` §5c give the
//! reasoning.

use std::collections::BTreeSet;
use std::rc::Rc;

use rustc_hash::FxHashMap as HashMap;

/// A diagram: a handle into its [`Manager`].
pub type Id = u32;

/// The empty packet set (also "no decision").
pub const FALSE: Id = 0;
/// Every packet.
pub const TRUE: Id = 1;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Node {
    Leaf(u32),
    Test { field: u16, edges: Rc<[(u32, Id)]> },
}

/// A node's edges, or the single edge of a diagram that does not test the field (without
/// allocating).
enum Edges {
    Node(Rc<[(u32, Id)]>),
    One([(u32, Id); 1]),
}

impl std::ops::Deref for Edges {
    type Target = [(u32, Id)];

    fn deref(&self) -> &[(u32, Id)] {
        match self {
            Edges::Node(e) => e,
            Edges::One(e) => e,
        }
    }
}

/// Binary operations, by what they do to two terminals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Op {
    /// Both non-zero: 1.
    And,
    /// Either non-zero: 1.
    Or,
    /// First non-zero, second zero: 1.
    Diff,
    /// The first if it is non-zero, else the second (first match).
    First,
    /// The second where the first is non-zero, else 0.
    Mask,
    /// 1 where the two differ.
    Neq,
    /// The lower of two non-zero terminals (0 counts as none).
    Min,
}

impl Op {
    fn leaf(self, a: u32, b: u32) -> u32 {
        match self {
            Op::And => u32::from(a != 0 && b != 0),
            Op::Or => u32::from(a != 0 || b != 0),
            Op::Diff => u32::from(a != 0 && b == 0),
            Op::First => {
                if a != 0 {
                    a
                } else {
                    b
                }
            }
            Op::Mask => {
                if a != 0 {
                    b
                } else {
                    0
                }
            }
            Op::Neq => u32::from(a != b),
            Op::Min => match (a, b) {
                (0, x) | (x, 0) => x,
                (x, y) => x.min(y),
            },
        }
    }

    fn commutes(self) -> bool {
        matches!(self, Op::And | Op::Or | Op::Neq | Op::Min)
    }
}

/// Owns the nodes of any number of diagrams over one schema of fields.
#[derive(Debug)]
pub struct Manager {
    nodes: Vec<Node>,
    unique: HashMap<Node, Id>,
    cache: HashMap<(Op, Id, Id), Id>,
    /// The largest meaningful value at each level.
    max: Vec<u32>,
    /// The level (position along every path) of each field, and the field at each level.
    level: Vec<usize>,
    field_at: Vec<usize>,
    /// Nodes allowed; past it every new node is [`FALSE`] and `exceeded` is set.
    limit: usize,
    exceeded: bool,
    /// Edges held by all nodes (each costs 8 bytes, and the unique table holds them again).
    edges: usize,
}

/// Nodes a manager holds at most unless told otherwise; edges are limited to eight times as
/// many. About 1 GiB with the tables and the cache.
pub const DEFAULT_LIMIT: usize = 4_000_000;
/// Operation-cache entries kept before the cache is emptied.
const CACHE_MAX: usize = 1 << 22;

/// A field's domain: its values `0..=max`.
fn size(max: u32) -> f64 {
    f64::from(max) + 1.0
}

impl Manager {
    /// A manager for fields `0..max.len()`, field `f` taking values `0..=max[f]`, tested in
    /// field order.
    pub fn new(max: Vec<u32>) -> Self {
        let order = (0..max.len()).collect();
        Self::with_order(max, order)
    }

    /// A manager whose diagrams test field `f` at position `order[f]` along every path
    /// (`order` is a permutation). The order decides the diagrams' sizes: tests of fields
    /// with few distinct ranges (protocol, ports) before the addresses keep rule-set
    /// diagrams orders of magnitude smaller (BENCHMARKS.md).
    pub fn with_order(max: Vec<u32>, order: Vec<usize>) -> Self {
        assert!(max.len() < usize::from(u16::MAX), "too many fields");
        assert_eq!(order.len(), max.len(), "one level per field");
        let mut field_at = vec![usize::MAX; max.len()];
        for (f, &l) in order.iter().enumerate() {
            field_at[l] = f;
        }
        assert!(field_at.iter().all(|&f| f != usize::MAX), "the order is a permutation");
        let by_level = field_at.iter().map(|&f| max[f]).collect();
        let mut m = Self {
            nodes: Vec::new(),
            unique: HashMap::default(),
            cache: HashMap::default(),
            max: by_level,
            level: order,
            field_at,
            limit: DEFAULT_LIMIT,
            exceeded: false,
            edges: 0,
        };
        let f = m.leaf(0);
        let t = m.leaf(1);
        debug_assert_eq!((f, t), (FALSE, TRUE));
        m
    }

    /// Sets how many nodes the manager may hold (and eight times as many edges). Past it,
    /// operations stop building: their results are meaningless and [`Manager::exceeded`]
    /// says so.
    pub fn set_limit(&mut self, nodes: usize) {
        self.limit = nodes.max(2);
    }

    /// Whether an operation ran past the node limit (every result since is meaningless).
    pub fn exceeded(&self) -> bool {
        self.exceeded
    }

    /// Fields in the schema.
    pub fn fields(&self) -> usize {
        self.max.len()
    }

    /// The largest meaningful value of field `f`.
    pub fn max(&self, f: usize) -> u32 {
        self.max[self.level[f]]
    }

    /// Nodes held (terminals included).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether only the two set terminals exist.
    pub fn is_empty(&self) -> bool {
        self.nodes.len() <= 2
    }

    fn intern(&mut self, n: Node) -> Id {
        if let Some(&id) = self.unique.get(&n) {
            return id;
        }
        let width = match &n {
            Node::Leaf(_) => 0,
            Node::Test { edges, .. } => edges.len(),
        };
        if self.nodes.len() >= self.limit || self.edges + width > 8 * self.limit {
            self.exceeded = true;
            return FALSE;
        }
        self.edges += width;
        let id = Id::try_from(self.nodes.len()).expect("fewer than 2^32 nodes");
        self.nodes.push(n.clone());
        self.unique.insert(n, id);
        id
    }

    /// The terminal carrying `v`.
    pub fn leaf(&mut self, v: u32) -> Id {
        self.intern(Node::Leaf(v))
    }

    /// The value of terminal `d`, or `None` when `d` is a test.
    pub fn value(&self, d: Id) -> Option<u32> {
        match &self.nodes[d as usize] {
            Node::Leaf(v) => Some(*v),
            Node::Test { .. } => None,
        }
    }

    /// The level `d` tests (the number of fields for a terminal).
    fn field(&self, d: Id) -> usize {
        match &self.nodes[d as usize] {
            Node::Leaf(_) => self.max.len(),
            Node::Test { field, .. } => usize::from(*field),
        }
    }

    /// A test at level `field` with these edges (ascending starts, the first 0), reduced.
    fn test(&mut self, field: usize, edges: Vec<(u32, Id)>) -> Id {
        let mut merged: Vec<(u32, Id)> = Vec::with_capacity(edges.len());
        for (s, c) in edges {
            if merged.last().is_none_or(|&(_, last)| last != c) {
                merged.push((s, c));
            }
        }
        if merged.len() == 1 {
            return merged[0].1;
        }
        self.intern(Node::Test { field: field as u16, edges: merged.into() })
    }

    /// The packets whose field `f` is in `lo..=hi` (a value at or above the field's maximum
    /// counts as the maximum), leading to `then` there and to `otherwise` elsewhere; `then`
    /// and `otherwise` must test only fields after `f` in the manager's order.
    pub fn range(&mut self, f: usize, lo: u32, hi: u32, then: Id, otherwise: Id) -> Id {
        let l = self.level[f];
        if lo > hi || lo > self.max[l] {
            return otherwise;
        }
        let hi = if hi >= self.max[l] { u32::MAX } else { hi };
        let mut edges = Vec::with_capacity(3);
        if lo > 0 {
            edges.push((0, otherwise));
        }
        edges.push((lo, then));
        if hi < u32::MAX {
            edges.push((hi + 1, otherwise));
        }
        self.test(l, edges)
    }

    /// The box of packets with every field `f` in `ranges[f]` (fields past the slice's end are
    /// free), leading to terminal `then`; everything else leads to [`FALSE`].
    pub fn cube(&mut self, ranges: &[(u32, u32)], then: Id) -> Id {
        let mut d = then;
        for l in (0..self.max.len()).rev() {
            let f = self.field_at[l];
            if let Some(&(lo, hi)) = ranges.get(f) {
                d = self.range(f, lo, hi, d, FALSE);
            }
        }
        d
    }

    /// The packets whose field `f` lies in any of `ranges`.
    pub fn ranges(&mut self, f: usize, ranges: &[(u32, u32)]) -> Id {
        let mut d = FALSE;
        for &(lo, hi) in ranges {
            let r = self.range(f, lo, hi, TRUE, FALSE);
            d = self.or(d, r);
        }
        d
    }

    fn apply(&mut self, op: Op, a: Id, b: Id) -> Id {
        // Terminal and identity shortcuts.
        match op {
            Op::And => {
                if a == FALSE || b == FALSE {
                    return FALSE;
                }
                if a == TRUE || a == b {
                    return b;
                }
                if b == TRUE {
                    return a;
                }
            }
            Op::Or => {
                if a == TRUE || b == TRUE {
                    return TRUE;
                }
                if a == FALSE || a == b {
                    return b;
                }
                if b == FALSE {
                    return a;
                }
            }
            Op::Diff => {
                if a == FALSE || b == TRUE || a == b {
                    return FALSE;
                }
                if b == FALSE {
                    return a;
                }
            }
            Op::First => {
                if a == FALSE {
                    return b;
                }
                if self.value(a).is_some() {
                    return a;
                }
            }
            Op::Mask => {
                if a == FALSE {
                    return FALSE;
                }
                if a == TRUE {
                    return b;
                }
            }
            Op::Neq => {
                if a == b {
                    return FALSE;
                }
            }
            Op::Min => {
                if a == FALSE || a == b {
                    return b;
                }
                if b == FALSE {
                    return a;
                }
            }
        }
        if self.exceeded {
            return FALSE;
        }
        if let (Some(x), Some(y)) = (self.value(a), self.value(b)) {
            let v = op.leaf(x, y);
            return self.leaf(v);
        }
        let (a, b) = if op.commutes() && a > b { (b, a) } else { (a, b) };
        if let Some(&r) = self.cache.get(&(op, a, b)) {
            return r;
        }
        let (fa, fb) = (self.field(a), self.field(b));
        let f = fa.min(fb);
        let ea = self.edges_at(a, f);
        let eb = self.edges_at(b, f);
        let mut out = Vec::with_capacity(ea.len() + eb.len());
        let (mut i, mut j) = (0, 0);
        let mut start = 0u32;
        loop {
            let c = self.apply(op, ea[i].1, eb[j].1);
            out.push((start, c));
            let na = ea.get(i + 1).map_or(u64::MAX, |e| u64::from(e.0));
            let nb = eb.get(j + 1).map_or(u64::MAX, |e| u64::from(e.0));
            let next = na.min(nb);
            if next == u64::MAX {
                break;
            }
            if na == next {
                i += 1;
            }
            if nb == next {
                j += 1;
            }
            start = next as u32;
        }
        let r = self.test(f, out);
        if self.cache.len() >= CACHE_MAX {
            self.cache.clear();
        }
        self.cache.insert((op, a, b), r);
        r
    }

    /// `d`'s edges if it tests field `f`, else one edge to `d` covering everything.
    fn edges_at(&self, d: Id, f: usize) -> Edges {
        match &self.nodes[d as usize] {
            Node::Test { field, edges } if usize::from(*field) == f => {
                Edges::Node(Rc::clone(edges))
            }
            _ => Edges::One([(0, d)]),
        }
    }

    /// Intersection of two packet sets.
    pub fn and(&mut self, a: Id, b: Id) -> Id {
        self.apply(Op::And, a, b)
    }

    /// Union of two packet sets.
    pub fn or(&mut self, a: Id, b: Id) -> Id {
        self.apply(Op::Or, a, b)
    }

    /// The packets of `a` not in `b`.
    pub fn diff(&mut self, a: Id, b: Id) -> Id {
        self.apply(Op::Diff, a, b)
    }

    /// The complement of a packet set.
    pub fn not(&mut self, a: Id) -> Id {
        self.apply(Op::Diff, TRUE, a)
    }

    /// First match: `a`'s terminal where it is non-zero, else `b`'s.
    pub fn first(&mut self, a: Id, b: Id) -> Id {
        self.apply(Op::First, a, b)
    }

    /// `then` restricted to packet set `set` (0 elsewhere).
    pub fn mask(&mut self, set: Id, then: Id) -> Id {
        self.apply(Op::Mask, set, then)
    }

    /// If-then-else: `then` on packet set `set`, `otherwise` elsewhere.
    pub fn ite(&mut self, set: Id, then: Id, otherwise: Id) -> Id {
        let m = self.mask(set, then);
        let rest = self.not(set);
        let o = self.mask(rest, otherwise);
        // `m` and `o` are disjoint in support; where `then` is 0 on `set`, 0 stays.
        self.apply(Op::First, m, o)
    }

    /// The lower non-zero terminal of the two (0 where both are 0): the best of two partial
    /// first-match answers.
    pub fn min(&mut self, a: Id, b: Id) -> Id {
        self.apply(Op::Min, a, b)
    }

    /// The packet set where two diagrams lead to different terminals.
    pub fn neq(&mut self, a: Id, b: Id) -> Id {
        self.apply(Op::Neq, a, b)
    }

    /// Replaces each terminal `v` of `d` by `f(v)`.
    pub fn map(&mut self, d: Id, f: &impl Fn(u32) -> u32) -> Id {
        let mut memo = HashMap::default();
        self.map_in(d, f, &mut memo)
    }

    fn map_in(&mut self, d: Id, f: &impl Fn(u32) -> u32, memo: &mut HashMap<Id, Id>) -> Id {
        if let Some(&r) = memo.get(&d) {
            return r;
        }
        let r = match self.nodes[d as usize].clone() {
            Node::Leaf(v) => self.leaf(f(v)),
            Node::Test { field, edges } => {
                let out: Vec<(u32, Id)> =
                    edges.iter().map(|&(s, c)| (s, self.map_in(c, f, memo))).collect();
                self.test(usize::from(field), out)
            }
        };
        memo.insert(d, r);
        r
    }

    /// The terminal `d` gives packet `p` (one value per field).
    pub fn eval(&self, mut d: Id, p: &[u32]) -> u32 {
        loop {
            match &self.nodes[d as usize] {
                Node::Leaf(v) => return *v,
                Node::Test { field, edges } => {
                    let v = p[self.field_at[usize::from(*field)]];
                    let k = edges.partition_point(|&(s, _)| s <= v) - 1;
                    d = edges[k].1;
                }
            }
        }
    }

    /// The terminal values `d` can reach.
    pub fn terminals(&self, d: Id) -> BTreeSet<u32> {
        let mut seen = rustc_hash::FxHashSet::default();
        let mut out = BTreeSet::new();
        let mut stack = vec![d];
        while let Some(n) = stack.pop() {
            if !seen.insert(n) {
                continue;
            }
            match &self.nodes[n as usize] {
                Node::Leaf(v) => {
                    out.insert(*v);
                }
                Node::Test { field, edges } => {
                    let max = self.max[usize::from(*field)];
                    stack.extend(edges.iter().filter(|e| e.0 <= max).map(|&(_, c)| c));
                }
            }
        }
        out
    }

    /// One packet leading to a terminal that satisfies `want`, if any. At each test the
    /// packet keeps `free[f]` if its interval leads somewhere wanted, else takes the lowest
    /// value (1 rather than 0) of the first interval that does; a field the path does not test
    /// keeps `free[f]`.
    pub fn witness(&self, d: Id, want: &impl Fn(u32) -> bool, free: &[u32]) -> Option<Vec<u32>> {
        let mut memo = HashMap::default();
        if !self.reaches(d, want, &mut memo) {
            return None;
        }
        let mut p = free.to_vec();
        p.resize(self.max.len(), 0);
        let mut n = d;
        loop {
            match &self.nodes[n as usize] {
                Node::Leaf(_) => return Some(p),
                Node::Test { field, edges } => {
                    let level = usize::from(*field);
                    let f = self.field_at[level];
                    // The edge holding the free value if it leads somewhere wanted, else the
                    // first that does, at its lowest value.
                    let k = edges.partition_point(|&(s, _)| s <= p[f]) - 1;
                    if self.reaches(edges[k].1, want, &mut memo) {
                        n = edges[k].1;
                        continue;
                    }
                    let max = self.max[level];
                    let at = edges
                        .iter()
                        .take_while(|e| e.0 <= max)
                        .position(|&(_, c)| self.reaches(c, want, &mut memo))
                        .expect("a reaching edge");
                    let (s, c) = edges[at];
                    // The interval's lowest value, but 1 rather than 0 (address 0.0.0.0 or
                    // port 0 reads as "unset") when the interval holds both.
                    let end = edges.get(at + 1).map_or(max, |e| e.0 - 1);
                    p[f] = if s == 0 && end >= 1 { 1 } else { s };
                    n = c;
                }
            }
        }
    }

    fn reaches(&self, d: Id, want: &impl Fn(u32) -> bool, memo: &mut HashMap<Id, bool>) -> bool {
        if let Some(&r) = memo.get(&d) {
            return r;
        }
        let r = match &self.nodes[d as usize] {
            Node::Leaf(v) => want(*v),
            Node::Test { field, edges } => {
                let max = self.max[usize::from(*field)];
                edges.iter().take_while(|e| e.0 <= max).any(|&(_, c)| self.reaches(c, want, memo))
            }
        };
        memo.insert(d, r);
        r
    }

    /// How many packets (over the fields' domains) lead to a terminal satisfying `want`.
    pub fn count(&self, d: Id, want: &impl Fn(u32) -> bool) -> f64 {
        let mut memo = HashMap::default();
        let below = self.count_from(d, want, &mut memo);
        let above: f64 = self.max[..self.field(d)].iter().map(|&m| size(m)).product();
        above * below
    }

    /// Assignments to the fields from `d`'s own onwards.
    fn count_from(&self, d: Id, want: &impl Fn(u32) -> bool, memo: &mut HashMap<Id, f64>) -> f64 {
        if let Some(&r) = memo.get(&d) {
            return r;
        }
        let r = match &self.nodes[d as usize] {
            Node::Leaf(v) => f64::from(u8::from(want(*v))),
            Node::Test { field, edges } => {
                let f = usize::from(*field);
                let max = u64::from(self.max[f]);
                let mut total = 0.0;
                for (k, &(s, c)) in edges.iter().enumerate() {
                    let s = u64::from(s);
                    if s > max {
                        break;
                    }
                    let end = edges.get(k + 1).map_or(max, |e| (u64::from(e.0) - 1).min(max));
                    let gap: f64 =
                        self.max[f + 1..self.field(c)].iter().map(|&m| size(m)).product();
                    total += (end - s + 1) as f64 * gap * self.count_from(c, want, memo);
                }
                total
            }
        };
        memo.insert(d, r);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(m: &Manager, d: Id, widths: &[u32]) -> Vec<u32> {
        let mut out = Vec::new();
        let mut p = vec![0u32; widths.len()];
        loop {
            out.push(m.eval(d, &p));
            let mut f = 0;
            loop {
                if f == widths.len() {
                    return out;
                }
                if p[f] < widths[f] {
                    p[f] += 1;
                    break;
                }
                p[f] = 0;
                f += 1;
            }
        }
    }

    #[test]
    fn canonical_and_counted() {
        let mut m = Manager::new(vec![15, 7]);
        let a = m.cube(&[(2, 9), (0, 7)], TRUE);
        let b = m.cube(&[(2, 5), (0, 7)], TRUE);
        let c = m.cube(&[(6, 9), (0, 7)], TRUE);
        let bc = m.or(b, c);
        assert_eq!(a, bc, "the same set is the same handle");
        assert_eq!(m.count(a, &|v| v == 1), 8.0 * 8.0);
        let na = m.not(a);
        assert_eq!(m.count(na, &|v| v == 1), 8.0 * 8.0);
        assert_eq!(m.and(a, na), FALSE);
        assert_eq!(m.or(a, na), TRUE);
        let w = m.witness(na, &|v| v == 1, &[3, 3]).unwrap();
        assert_eq!(m.eval(na, &w), 1);
        assert_eq!(w, vec![1, 3], "the free value kept where allowed, else the lowest (1, not 0)");
    }

    #[test]
    fn first_match_and_ite() {
        let mut m = Manager::new(vec![15, 15]);
        let r1 = m.leaf(2);
        let r1 = m.cube(&[(0, 3), (4, 4)], r1);
        let r2 = m.leaf(3);
        let r2 = m.cube(&[(2, 8)], r2);
        let dflt = m.leaf(9);
        let d = m.first(r2, dflt);
        let d = m.first(r1, d);
        for x in 0..16 {
            for y in 0..16 {
                let want = if x <= 3 && y == 4 {
                    2
                } else if (2..=8).contains(&x) {
                    3
                } else {
                    9
                };
                assert_eq!(m.eval(d, &[x, y]), want);
            }
        }
        assert_eq!(m.terminals(d).into_iter().collect::<Vec<_>>(), vec![2, 3, 9]);
        let set = m.cube(&[(0, 7)], TRUE);
        let seven = m.leaf(7);
        let e = m.ite(set, seven, d);
        let v = brute(&m, e, &[15, 15]);
        let expect = brute(&m, d, &[15, 15]);
        for (k, (got, old)) in v.iter().zip(&expect).enumerate() {
            let x = k % 16;
            assert_eq!(*got, if x <= 7 { 7 } else { *old });
        }
    }

    #[test]
    fn values_past_the_domain_act_as_its_maximum() {
        let mut m = Manager::new(vec![65535]);
        let any = m.cube(&[(0, 65535)], TRUE);
        assert_eq!(any, TRUE);
        let hi = m.cube(&[(1024, 65535)], TRUE);
        assert_eq!(m.eval(hi, &[70000]), 1);
        assert_eq!(m.count(hi, &|v| v == 1), 64512.0);
    }
}

#[cfg(test)]
mod limit_tests {
    use super::*;

    #[test]
    fn a_limit_stops_building_and_says_so() {
        let mut m = Manager::new(vec![1000, 1000]);
        m.set_limit(50);
        let mut d = FALSE;
        for i in 0..100 {
            let c = m.cube(&[(i * 7, i * 7 + 3), (i, i)], TRUE);
            d = m.or(d, c);
        }
        assert!(m.exceeded());
        assert!(m.len() <= 50);
    }
}
