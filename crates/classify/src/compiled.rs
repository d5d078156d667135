//! The compiled classifier: partitions of the rule list, each a binary decision tree.
//!
//! Rules are split into four partitions by whether their source and destination address
//! ranges are small (a /16 or longer), so that a tree cutting one address field rarely has to
//! copy rules that are wide in it (CutSplit's observation). Each partition is compiled into a
//! binary tree over elementary-interval boundaries (HyperSplit): a node compares one field
//! with one value; a leaf lists at most a few rules, in priority order. Within a node, a rule
//! covering the node's whole box hides every later rule, so those are dropped, which keeps
//! wildcard-heavy firewall sets from multiplying. A lookup visits the partitions in order of
//! their best rule and stops once the match in hand beats the next partition's best.

use crate::rule::{FIELDS, Header, Rule};

/// Rules per leaf below which a node is not split further.
const BINTH: usize = 8;
/// Deepest tree allowed.
const MAX_DEPTH: usize = 64;
/// An address range this small or smaller (a /16) is "small".
const SMALL: u32 = 1 << 16;
const LEAF: u32 = u32::MAX;
/// Headers walked together by [`Compiled::classify_batch`].
const LANES: usize = 16;
/// Structures larger than this (bytes) are walked by several headers at once.
const INTERLEAVE_ABOVE: usize = 1 << 20;

/// A node: `dim == LEAF` for a leaf of `b` rules from `a` in the leaf list (`at == 1` when its
/// last rule covers the leaf's whole box and hid the rules after it); otherwise go to `b` when
/// the header's field `dim` is at least `at`, else to `a`.
#[derive(Clone, Copy, Debug)]
struct Node {
    dim: u32,
    at: u32,
    a: u32,
    b: u32,
}

#[derive(Clone, Debug)]
struct Part {
    /// The best (lowest) rule index in the partition.
    min: u32,
    nodes: Vec<Node>,
    leaves: Vec<u32>,
}

/// What compiling produced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompiledStats {
    /// Rules compiled.
    pub rules: usize,
    /// Non-empty partitions.
    pub partitions: usize,
    /// Tree nodes over all partitions.
    pub nodes: usize,
    /// Rule references in leaves (rules copied into several leaves count once per leaf).
    pub leaf_entries: usize,
    /// Deepest leaf.
    pub depth: usize,
    /// Bytes held: rules, nodes and leaf lists.
    pub bytes: usize,
}

/// How to compile.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The two fields whose small or large ranges split the rules into partitions.
    pub partition: [usize; 2],
    /// Rules with conditions besides their ranges (sets, connection state, ...), checked by the
    /// `live` closure of [`Compiled::classify_live`]: such a rule never hides later ones.
    pub opaque: Vec<bool>,
}

/// A compiled rule list: `classify` returns what [`crate::linear::first_match`] returns.
#[derive(Clone, Debug)]
pub struct Compiled<const N: usize = FIELDS> {
    rules: Vec<Rule<N>>,
    /// Larger than the L2 cache: batches walk interleaved.
    large: bool,
    parts: Vec<Part>,
    depth: usize,
}

impl<const N: usize> Compiled<N> {
    /// Compiles a rule list (first rule = highest priority), partitioned by fields 0 and 1
    /// (the addresses of a 5-tuple).
    pub fn new(rules: &[Rule<N>]) -> Self {
        Self::with_options(rules, &Options { partition: [0, 1.min(N - 1)], opaque: Vec::new() })
    }

    /// Compiles with the given [`Options`].
    pub fn with_options(rules: &[Rule<N>], opts: &Options) -> Self {
        let mut groups: [Vec<u32>; 4] = Default::default();
        let [d0, d1] = opts.partition;
        for (i, r) in rules.iter().enumerate() {
            let small = |d: usize| r.hi[d] - r.lo[d] < SMALL;
            groups[usize::from(small(d0)) * 2 + usize::from(small(d1))].push(i as u32);
        }
        let mut depth = 0;
        let mut parts: Vec<Part> = groups
            .into_iter()
            .filter(|g| !g.is_empty())
            .map(|g| {
                let mut b = Builder {
                    rules,
                    opaque: &opts.opaque,
                    nodes: Vec::new(),
                    leaves: Vec::new(),
                    depth: 0,
                };
                // The union of the rules' ranges: a header outside it matches no rule anyway.
                let bounds = std::array::from_fn(|d| {
                    let lo = rules.iter().map(|r| r.lo[d]).min().unwrap_or(0);
                    (lo, rules.iter().map(|r| r.hi[d]).max().unwrap_or(u32::MAX))
                });
                b.build(g.clone(), bounds, 0, false);
                depth = depth.max(b.depth);
                Part { min: g[0], nodes: b.nodes, leaves: b.leaves }
            })
            .collect();
        parts.sort_by_key(|p| p.min);
        let mut c = Self { rules: rules.to_vec(), large: false, parts, depth };
        c.large = c.stats().bytes >= INTERLEAVE_ABOVE;
        c
    }

    /// The index of the first rule matching `h`, if any.
    #[inline]
    pub fn classify(&self, h: &Header<N>) -> Option<usize> {
        self.classify_live(h, |_| true)
    }

    /// The index of the first rule matching `h` for which `live` holds (rules deleted since
    /// compiling are skipped this way).
    #[inline]
    pub fn classify_live(&self, h: &Header<N>, live: impl Fn(u32) -> bool) -> Option<usize> {
        let mut best = u32::MAX;
        for p in &self.parts {
            if p.min >= best {
                break;
            }
            let mut n = 0usize;
            loop {
                let node = p.nodes[n];
                if node.dim == LEAF {
                    best = self.scan(p, node, h, best, &live);
                    break;
                }
                n = if h.0[node.dim as usize] >= node.at { node.b } else { node.a } as usize;
            }
        }
        (best != u32::MAX).then_some(best as usize)
    }

    /// Classifies a batch: `out[i]` is what [`Compiled::classify`] gives for `headers[i]`.
    /// When the structure is larger than the L2 cache, sixteen headers walk their trees in
    /// turn, one node each per round, so the loads of different headers overlap instead of
    /// each waiting for the last; smaller structures are walked one header at a time, which
    /// measured faster there (no misses to overlap, less bookkeeping).
    pub fn classify_batch(&self, headers: &[Header<N>], out: &mut [Option<usize>]) {
        if !self.large {
            for (h, o) in headers.iter().zip(out) {
                *o = self.classify(h);
            }
            return;
        }
        self.classify_interleaved(headers, out);
    }

    /// [`Compiled::classify_batch`]'s interleaved walk, whatever the structure's size.
    pub fn classify_interleaved(&self, headers: &[Header<N>], out: &mut [Option<usize>]) {
        for (hs, os) in headers.chunks(LANES).zip(out.chunks_mut(LANES)) {
            self.lanes(hs, os);
        }
    }

    fn lanes(&self, hs: &[Header<N>], os: &mut [Option<usize>]) {
        #[derive(Clone, Copy)]
        struct Lane {
            best: u32,
            part: u32,
            node: u32,
        }
        let parts = self.parts.len() as u32;
        let mut lanes = [Lane { best: u32::MAX, part: 0, node: 0 }; LANES];
        let mut active = if parts == 0 { 0 } else { hs.len() };
        let lanes = &mut lanes[..hs.len()];
        if active == 0 {
            lanes.iter_mut().for_each(|l| l.part = parts);
        }
        while active > 0 {
            for (l, h) in lanes.iter_mut().zip(hs) {
                if l.part == parts {
                    continue;
                }
                let p = &self.parts[l.part as usize];
                let node = p.nodes[l.node as usize];
                if node.dim != LEAF {
                    l.node = if h.0[node.dim as usize] >= node.at { node.b } else { node.a };
                    continue;
                }
                l.best = self.scan(p, node, h, l.best, &|_| true);
                l.part += 1;
                while l.part < parts && self.parts[l.part as usize].min >= l.best {
                    l.part += 1;
                }
                l.node = 0;
                if l.part == parts {
                    active -= 1;
                }
            }
        }
        for (l, o) in lanes.iter().zip(os) {
            *o = (l.best != u32::MAX).then_some(l.best as usize);
        }
    }

    /// Scans a leaf for a rule better than `best`; returns the new best.
    #[inline]
    fn scan(
        &self,
        p: &Part,
        node: Node,
        h: &Header<N>,
        mut best: u32,
        live: &impl Fn(u32) -> bool,
    ) -> u32 {
        let leaf = &p.leaves[node.a as usize..(node.a + node.b) as usize];
        for (k, &r) in leaf.iter().enumerate() {
            if r >= best {
                break;
            }
            if self.rules[r as usize].matches(h) {
                if live(r) {
                    best = r;
                    break;
                }
                if node.at == 1 && k + 1 == leaf.len() {
                    // A deleted rule that hid the rest of this box: the rules it hid were not
                    // kept here, so look for them in the whole list.
                    let end = (best as usize).min(self.rules.len());
                    if let Some(i) =
                        (r as usize + 1..end).find(|&i| self.rules[i].matches(h) && live(i as u32))
                    {
                        best = i as u32;
                    }
                }
            }
        }
        best
    }

    /// The rules compiled, in priority order.
    pub fn rules(&self) -> &[Rule<N>] {
        &self.rules
    }

    /// Sizes of the compiled structure.
    pub fn stats(&self) -> CompiledStats {
        let nodes: usize = self.parts.iter().map(|p| p.nodes.len()).sum();
        let leaf_entries: usize = self.parts.iter().map(|p| p.leaves.len()).sum();
        CompiledStats {
            rules: self.rules.len(),
            partitions: self.parts.len(),
            nodes,
            leaf_entries,
            depth: self.depth,
            bytes: self.rules.len() * size_of::<Rule>()
                + nodes * size_of::<Node>()
                + leaf_entries * 4,
        }
    }
}

struct Builder<'a, const N: usize> {
    rules: &'a [Rule<N>],
    opaque: &'a [bool],
    nodes: Vec<Node>,
    leaves: Vec<u32>,
    depth: usize,
}

impl<const N: usize> Builder<'_, N> {
    /// Builds the subtree for `ids` (ascending, all overlapping `bounds`); returns its node.
    /// `hid`: an ancestor dropped rules after the last of `ids`, which covers `bounds`.
    fn build(
        &mut self,
        mut ids: Vec<u32>,
        bounds: [(u32, u32); N],
        depth: usize,
        mut hid: bool,
    ) -> u32 {
        self.depth = self.depth.max(depth);
        // A rule covering the whole box hides every later one.
        let opaque = |i: u32| self.opaque.get(i as usize).copied().unwrap_or(false);
        if let Some(k) =
            ids.iter().position(|&i| !opaque(i) && covers(&self.rules[i as usize], &bounds))
        {
            hid |= k + 1 < ids.len();
            ids.truncate(k + 1);
        }
        let me = self.nodes.len() as u32;
        self.nodes.push(Node { dim: LEAF, at: 0, a: 0, b: 0 });
        let split = if ids.len() <= BINTH || depth >= MAX_DEPTH {
            None
        } else {
            self.choose(&ids, &bounds)
        };
        let Some((dim, at)) = split else {
            let at = u32::from(hid);
            self.nodes[me as usize] =
                Node { dim: LEAF, at, a: self.leaves.len() as u32, b: ids.len() as u32 };
            self.leaves.extend_from_slice(&ids);
            return me;
        };
        let (left, right): (Vec<u32>, Vec<u32>) = {
            let r = self.rules;
            let l = ids.iter().copied().filter(|&i| r[i as usize].lo[dim] < at).collect();
            let g = ids.iter().copied().filter(|&i| r[i as usize].hi[dim] >= at).collect();
            (l, g)
        };
        let mut lb = bounds;
        lb[dim].1 = at - 1;
        let mut rb = bounds;
        rb[dim].0 = at;
        let a = self.build(left, lb, depth + 1, hid);
        let b = self.build(right, rb, depth + 1, hid);
        self.nodes[me as usize] = Node { dim: dim as u32, at, a, b };
        me
    }

    /// The field and value to split at: among a few quantiles of each field's rule boundaries
    /// inside the box, the one leaving the fewest rules on the larger side (ties: fewest
    /// copies). `None` when no split makes progress.
    fn choose(&self, ids: &[u32], bounds: &[(u32, u32); N]) -> Option<(usize, u32)> {
        let n = ids.len();
        let mut best: Option<(usize, usize, usize, u32)> = None;
        let mut points = Vec::with_capacity(2 * n);
        for (dim, &(blo, bhi)) in bounds.iter().enumerate() {
            points.clear();
            for &i in ids {
                let r = &self.rules[i as usize];
                if r.lo[dim] > blo {
                    points.push(r.lo[dim]);
                }
                if r.hi[dim] < bhi {
                    points.push(r.hi[dim] + 1);
                }
            }
            if points.is_empty() {
                continue;
            }
            points.sort_unstable();
            points.dedup();
            for q in [1, 2, 3] {
                let at = points[(points.len() * q / 4).min(points.len() - 1)];
                let (mut l, mut g) = (0, 0);
                for &i in ids {
                    let r = &self.rules[i as usize];
                    l += usize::from(r.lo[dim] < at);
                    g += usize::from(r.hi[dim] >= at);
                }
                let key = (l.max(g), l + g);
                if best.is_none_or(|(m, s, _, _)| key < (m, s)) {
                    best = Some((key.0, key.1, dim, at));
                }
            }
        }
        best.filter(|&(m, _, _, _)| m < n).map(|(_, _, d, at)| (d, at))
    }
}

fn covers<const N: usize>(r: &Rule<N>, b: &[(u32, u32); N]) -> bool {
    (0..N).all(|d| r.lo[d] <= b[d].0 && b[d].1 <= r.hi[d])
}
