//! The compiled classifier: partitions of the rule list, each a table, a multi-way decision
//! tree or a set of bit vectors.
//!
//! Rules are split into four partitions by whether their source and destination address
//! ranges are small (a /16 or longer), so that a tree cutting one address field rarely has to
//! copy rules that are wide in it (CutSplit's observation). A partition whose rules are all
//! small in an address field starts with a table indexed by that field's top bits (about two
//! slots per rule, up to 2^17 slots while a rule reaches about two of them at most), each
//! slot with a 32-bit mask of the thirty-seconds of it some rule reaches, so a header that
//! matches nothing there costs one load and no branch it could mispredict. Below it, or from
//! the root otherwise, each partition is a tree over elementary-interval boundaries: a node
//! cuts one field at up to seven values placed so that its eight children share the rules'
//! weight about equally (HyperSplit's weighting, several cuts per node), and it fills one
//! cache line, so a step is one load and seven independent comparisons instead of three
//! dependent binary steps. A leaf lists at most a few rules, in priority order, tested without
//! branches per field. Within a node, a rule covering the node's whole box hides every later
//! rule, so those are dropped, which keeps wildcard-heavy firewall sets from multiplying.
//!
//! The partition wide in both addresses is where random traffic, scans and floods end up, and
//! there a tree walk of varying depth and a leaf scan of varying length cost several
//! mispredicted branches per header (measured: 38 ns of a 43 ns lookup on acl1_10k went to an
//! 84-rule partition that fits the L1 cache). When it holds more rules than one leaf and at
//! most a few thousand, it is looked up as bit vectors instead (`crate::vectors`): fixed
//! work, no data-dependent branch, a SIMD kernel chosen at run time
//! ([`Options::bit_vectors`]; the firewall's chains, 14 fields looked up with per-rule
//! checks, keep the tree). A lookup visits the partitions in order of their
//! best rule and stops once the match in hand beats the next partition's best.
//!
//! Written here rather than taken from a crate: no maintained Rust crate classifies on
//! ranges over several fields; the measured comparison with DPDK's `rte_acl`, the linear scan
//! and the binary tree this replaced is in `BENCHMARKS.md`.

use crate::rule::{FIELDS, Header, Rule};
use crate::vectors::Kernel;

/// Rules per leaf below which a node is not split further.
const BINTH: usize = 8;
/// The most slots a partition's root table may have, as bits of the field (2^17 slots of 8
/// bytes, 1 MiB: finer tables measured slower on uniform headers, their misses going to the
/// L3 cache, and no faster on traces).
const TABLE_BITS: u32 = 17;
/// Bits of a table slot's occupancy mask index (32 sub-slots).
const SUB_BITS: u32 = 5;
/// Deepest tree allowed.
const MAX_DEPTH: usize = 32;
/// An address range this small or smaller (a /16) is "small".
const SMALL: u32 = 1 << 16;
/// Cut values per node; a node has one more child than cuts.
const CUTS: usize = 7;
/// A child reference with this bit set names a leaf; otherwise it is a node's index shifted
/// left by `DIM_BITS` above the field the node compares, so that the walk can load that field
/// while it loads the node.
const LEAF_BIT: u32 = 1 << 31;
const DIM_BITS: u32 = 4;
const DIM_MASK: u32 = (1 << DIM_BITS) - 1;
/// Nodes a partition may hold (256 MiB of them): node references must stay below `LEAF_BIT`,
/// and leaves (at most eight per node) must fit an indirect leaf reference's 26 bits.
const MAX_NODES: usize = 1 << 22;
/// In a leaf reference: the leaf's last rule covers the leaf's box and hid the rules after it.
const HID_BIT: u32 = 1 << 30;
/// A leaf reference holds its length (bits 26-29) and the start of its rules in the entry
/// list (bits 0-25), so reaching a leaf's rules costs no further load; a leaf too long or
/// starting too far for that has length `INDIRECT` and names a [`Leaf`] instead.
const LEN_SHIFT: u32 = 26;
const START_MASK: u32 = (1 << LEN_SHIFT) - 1;
const INDIRECT: u32 = 15;
/// How many times its rule count a node's children may hold in all (rules copied into
/// several children count once per child) before fewer cuts are tried.
const SPREAD: usize = 2;
/// Headers walked together by [`Compiled::classify_batch`].
const LANES: usize = 16;

/// A node, one cache line: one header field (named by the reference to the node) is
/// compared with all seven cuts at once (sorted; unused ones are `u32::MAX`), and the number
/// of cuts at or below it picks the child. Children past the last real one repeat it, so a
/// field equal to `u32::MAX` needs no special case.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Node {
    cuts: [u32; CUTS],
    pad: u32,
    kids: [u32; CUTS + 1],
}

impl Node {
    /// The child for field value `v`: seven independent comparisons summed as a tree, no
    /// branches.
    #[inline(always)]
    fn child(&self, v: u32) -> u32 {
        let c = |i: usize| u32::from(v >= self.cuts[i]);
        let k = (c(0) + c(1)) + (c(2) + c(3)) + ((c(4) + c(5)) + c(6));
        self.kids[k as usize]
    }

    /// Follows reference `n` (a node) one step for header `h`.
    #[inline(always)]
    fn step<const N: usize>(nodes: &[Node], n: u32, h: &Header<N>) -> u32 {
        nodes[(n >> DIM_BITS) as usize].child(h.0[(n & DIM_MASK) as usize])
    }
}

/// A rule as the lookup tests it: a field matches when `value - lo <= span` in wrapping
/// arithmetic, one comparison instead of two, and the fields are tested without branches.
#[derive(Clone, Copy, Debug)]
struct Span<const N: usize> {
    lo: [u32; N],
    span: [u32; N],
}

impl<const N: usize> Span<N> {
    fn new(r: &Rule<N>) -> Self {
        Self { lo: r.lo, span: std::array::from_fn(|d| r.hi[d].wrapping_sub(r.lo[d])) }
    }

    #[inline(always)]
    fn matches(&self, h: &Header<N>) -> bool {
        let mut ok = true;
        for d in 0..N {
            ok &= h.0[d].wrapping_sub(self.lo[d]) <= self.span[d];
        }
        ok
    }

    fn rule(&self) -> Rule<N> {
        Rule { lo: self.lo, hi: std::array::from_fn(|d| self.lo[d].wrapping_add(self.span[d])) }
    }
}

/// A leaf too long or starting too far to be described in its reference: `len` rules from
/// `start` in the entry list, in priority order.
#[derive(Clone, Copy, Debug)]
struct Leaf {
    start: u32,
    len: u32,
}

impl<const N: usize> Part<N> {
    /// Where a header's walk of this partition starts.
    #[inline(always)]
    fn start(&self, h: &Header<N>) -> u32 {
        if self.table.is_empty() {
            self.root
        } else {
            let v = h.0[self.table_dim];
            let slot = (v >> self.table_shift) as usize;
            let sub = (v >> (self.table_shift - SUB_BITS)) & 31;
            // One load for the reference and the mask; a thirty-second of the slot no rule
            // reaches goes to the empty leaf, without a branch.
            let t = self.table[slot];
            if t >> (32 + sub) & 1 != 0 { t as u32 } else { LEAF_BIT }
        }
    }
}

#[derive(Clone, Debug)]
struct Part<const N: usize> {
    /// The best (lowest) rule index in the partition.
    min: u32,
    /// The root: a node, or a leaf when `LEAF_BIT` is set (when there is no table).
    root: u32,
    /// When the partition's rules are all small in one field: a root indexed directly by the
    /// top bits of that field. Each slot holds the reference of the subtree for that slice
    /// (low 32 bits; an empty leaf when no rule reaches it) and which thirty-seconds of the
    /// slice some rule reaches (high 32 bits: bit `k` for the values whose next five bits
    /// are `k`); the rest go to the empty leaf. So a header away from every rule costs one
    /// load and no scan.
    table: Vec<u64>,
    /// The field the table indexes, and the shift that leaves its top bits.
    table_dim: usize,
    table_shift: u32,
    nodes: Vec<Node>,
    leaves: Vec<Leaf>,
    entries: Vec<u32>,
    /// The rules of the partition, ascending (for checking the structure).
    members: Vec<u32>,
    /// Bit vectors instead of a tree (then `root`, `table` and the tree are empty).
    vectors: Option<Box<crate::vectors::Vectors<N>>>,
}

/// Where a partition's walk starts, for tools that check the structure (the policy
/// verifier lifts it back into a decision diagram).
#[derive(Clone, Copy, Debug)]
pub enum Start<'a> {
    /// At one reference.
    Root(u32),
    /// At `slots[field value >> shift]`.
    Table {
        /// The field indexed.
        field: usize,
        /// The shift that turns a value into a slot.
        shift: u32,
        /// Each slot: its reference (low 32 bits) and its occupancy (high 32 bits): a value
        /// whose bit `(value >> (shift - 5)) & 31` there is clear goes to the empty leaf
        /// instead of the reference ([`Start::slot_ranges`]).
        slots: &'a [u64],
    },
    /// No walk: the partition's rules are looked up as bit vectors, and the answer is the
    /// first member (see [`Compiled::members`]) whose position is in every field's set for
    /// the header's value.
    Vectors(Vectors<'a>),
}

impl Start<'_> {
    /// For a table: the values of its field that go to slot `slot`'s reference (its
    /// occupied thirty-seconds, adjacent ones merged); the slot's other values go to the empty
    /// leaf. Empty for other starts. For tools that check the structure.
    pub fn slot_ranges(&self, slot: usize) -> Vec<(u32, u32)> {
        let Start::Table { shift, slots, .. } = *self else { return Vec::new() };
        let (mask, base) = (slots.get(slot).map_or(0, |s| s >> 32), (slot as u32) << shift);
        let width = 1u32 << (shift - SUB_BITS);
        let mut out: Vec<(u32, u32)> = Vec::new();
        for k in (0..32u32).filter(|&k| mask >> k & 1 != 0) {
            let lo = base + k * width;
            let hi = lo + (width - 1);
            match out.last_mut() {
                Some((_, h)) if h.checked_add(1) == Some(lo) => *h = hi,
                _ => out.push((lo, hi)),
            }
        }
        out
    }
}

/// A bit-vector partition as the lookup sees it, for tools that check the structure.
#[derive(Clone, Copy, Debug)]
pub struct Vectors<'a> {
    inner: &'a dyn VectorFields,
}

impl Vectors<'_> {
    /// Field `d`'s boundaries (ascending) and, for each of the intervals they cut the field
    /// into (the first below the first boundary, each later one from a boundary up to the
    /// next), the positions in the partition's member list of the rules the lookup takes as
    /// matching there.
    pub fn field(&self, d: usize) -> (Vec<u32>, Vec<Vec<usize>>) {
        self.inner.field(d)
    }
}

/// The field view of a bit-vector partition, whatever its field count.
trait VectorFields: std::fmt::Debug {
    fn field(&self, d: usize) -> (Vec<u32>, Vec<Vec<usize>>);
}

impl<const N: usize> VectorFields for crate::vectors::Vectors<N> {
    fn field(&self, d: usize) -> (Vec<u32>, Vec<Vec<usize>>) {
        crate::vectors::Vectors::field(self, d)
    }
}

/// One step of a walk, for tools that check the structure.
#[derive(Clone, Copy, Debug)]
pub enum Step<'a> {
    /// Compare `field` with the cuts (ascending; unused ones are `u32::MAX`): a value with
    /// k cuts at or below it goes to `kids[k]`.
    Test {
        /// The field.
        field: usize,
        /// The cuts.
        cuts: &'a [u32],
        /// The children's references.
        kids: &'a [u32],
    },
    /// A leaf: these rules, in priority order; the first whose ranges match wins.
    Leaf(&'a [u32]),
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
    /// Look up the partition wide in both addresses as bit vectors when it has more rules
    /// than one leaf holds (and at most 2,048): fixed work per header, no data-dependent
    /// branch, which is what random 5-tuples need. Off, it is a tree like the others; a
    /// lookup through [`Compiled::classify_live`] over many fields (the firewall's 14) ranks
    /// every field on the scalar path and measured slower than the tree (`BENCHMARKS.md`).
    pub bit_vectors: bool,
}

/// A compiled rule list: `classify` returns what [`crate::linear::first_match`] returns.
#[derive(Clone, Debug)]
pub struct Compiled<const N: usize = FIELDS> {
    rules: Vec<Span<N>>,
    parts: Vec<Part<N>>,
    depth: usize,
    /// The kernel of the bit-vector partitions.
    kernel: Kernel,
}

impl<const N: usize> Compiled<N> {
    /// Compiles a rule list (first rule = highest priority), partitioned by fields 0 and 1
    /// (the addresses of a 5-tuple).
    pub fn new(rules: &[Rule<N>]) -> Self {
        Self::with_options(
            rules,
            &Options { partition: [0, 1.min(N - 1)], opaque: Vec::new(), bit_vectors: true },
        )
    }

    /// Compiles with the given [`Options`].
    pub fn with_options(rules: &[Rule<N>], opts: &Options) -> Self {
        const { assert!(N <= 1 << DIM_BITS, "a node reference names the field in 4 bits") };
        let mut groups: [Vec<u32>; 4] = Default::default();
        let [d0, d1] = opts.partition;
        for (i, r) in rules.iter().enumerate() {
            let small = |d: usize| r.hi[d].wrapping_sub(r.lo[d]) < SMALL;
            groups[usize::from(small(d0)) * 2 + usize::from(small(d1))].push(i as u32);
        }
        let mut depth = 0;
        let mut parts: Vec<Part<N>> = groups
            .into_iter()
            .filter(|g| !g.is_empty())
            .map(|g| {
                let mut b = Builder {
                    rules,
                    opaque: &opts.opaque,
                    nodes: Vec::new(),
                    leaves: Vec::new(),
                    entries: Vec::new(),
                    depth: 0,
                };
                // The union of the group's ranges: a header outside it matches none of them.
                let bounds = std::array::from_fn(|d| {
                    let lo = g.iter().map(|&i| rules[i as usize].lo[d]).min().unwrap_or(0);
                    (lo, g.iter().map(|&i| rules[i as usize].hi[d]).max().unwrap_or(u32::MAX))
                });
                let min = g[0];
                let members = g.clone();
                // The field all the group's ranges are small in, if any.
                let small = |d: usize| {
                    g.iter().all(|&i| {
                        rules[i as usize].hi[d].wrapping_sub(rules[i as usize].lo[d]) < SMALL
                    })
                };
                let table_dim = [d0, d1].into_iter().find(|&d| small(d));
                let vectors = (opts.bit_vectors && table_dim.is_none() && g.len() > BINTH)
                    .then(|| crate::vectors::Vectors::new(rules, &g))
                    .flatten()
                    .map(Box::new);
                let (root, (table, table_shift), table_dim) = match table_dim {
                    Some(d) => (LEAF_BIT, b.table(g, bounds, d), d),
                    None if vectors.is_some() => (LEAF_BIT, Default::default(), 0),
                    None => (b.build(g, bounds, 0, false), Default::default(), 0),
                };
                depth = depth.max(b.depth);
                Part {
                    min,
                    root,
                    table,
                    table_dim,
                    table_shift,
                    nodes: b.nodes,
                    leaves: b.leaves,
                    entries: b.entries,
                    members,
                    vectors,
                }
            })
            .collect();
        parts.sort_by_key(|p| p.min);
        let rules = rules.iter().map(Span::new).collect();
        Self { rules, parts, depth, kernel: Kernel::best() }
    }

    /// The kernel that looks up the bit-vector partitions ([`Kernel::best`] unless set).
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Looks up the bit-vector partitions with `kernel` from now on; false (and no change)
    /// when this CPU does not run it. Tests and benchmarks compare kernels with this.
    pub fn set_kernel(&mut self, kernel: Kernel) -> bool {
        if kernel.supported() {
            self.kernel = kernel;
        }
        self.kernel == kernel
    }

    /// The index of the first rule matching `h`, if any.
    #[inline]
    pub fn classify(&self, h: &Header<N>) -> Option<usize> {
        self.lookup(h, &|_| true, |v, members, _| v.first(h, members, self.kernel))
    }

    /// The index of the first rule matching `h` for which `live` holds (rules deleted since
    /// compiling are skipped this way).
    #[inline]
    pub fn classify_live(&self, h: &Header<N>, live: impl Fn(u32) -> bool) -> Option<usize> {
        self.lookup(h, &live, |v, members, best| v.first_live(h, members, best, &live))
    }

    /// The partitions visited best-first for `h`: the trees and tables walked and their leaves
    /// scanned for rules `live` keeps, the bit-vector partitions asked through `vectors`
    /// (given the partition's members and the best rule so far).
    #[inline(always)]
    fn lookup(
        &self,
        h: &Header<N>,
        live: &impl Fn(u32) -> bool,
        vectors: impl Fn(&crate::vectors::Vectors<N>, &[u32], u32) -> u32,
    ) -> Option<usize> {
        let mut best = u32::MAX;
        for p in &self.parts {
            if p.min >= best {
                break;
            }
            if let Some(v) = &p.vectors {
                best = best.min(vectors(v, &p.members, best));
                continue;
            }
            let mut n = p.start(h);
            while n & LEAF_BIT == 0 {
                n = Node::step(&p.nodes, n, h);
            }
            best = self.scan(p, n, h, best, live);
        }
        (best != u32::MAX).then_some(best as usize)
    }

    /// Classifies a batch: `out[i]` is what [`Compiled::classify`] gives for `headers[i]`,
    /// one header after another. With the tables' masks and the bit vectors, a lookup has
    /// few data-dependent branches, so the CPU already overlaps consecutive headers' loads:
    /// walking sixteen in turn ([`Compiled::classify_interleaved`]) measured slower on every
    /// ClassBench set, traces and uniform headers alike (`BENCHMARKS.md`).
    pub fn classify_batch(&self, headers: &[Header<N>], out: &mut [Option<usize>]) {
        for (h, o) in headers.iter().zip(out) {
            *o = self.classify(h);
        }
    }

    /// Classifies a batch sixteen headers at a time, each taking one step of its walk per
    /// round, so that the loads of different headers overlap even where the CPU would not
    /// overlap them by itself. Gives what [`Compiled::classify_batch`] gives; measured slower
    /// than it on this design, kept for CPUs and structures where it is not.
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
        let start = |p: u32, h: &Header<N>| self.parts.get(p as usize).map_or(0, |p| p.start(h));
        let mut lanes = [Lane { best: u32::MAX, part: 0, node: 0 }; LANES];
        for (l, h) in lanes.iter_mut().zip(hs) {
            l.node = start(0, h);
        }
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
                if let Some(v) = &p.vectors {
                    l.best = l.best.min(v.first(h, &p.members, self.kernel));
                } else if l.node & LEAF_BIT == 0 {
                    l.node = Node::step(&p.nodes, l.node, h);
                    continue;
                } else {
                    l.best = self.scan(p, l.node, h, l.best, &|_| true);
                }
                l.part += 1;
                while l.part < parts && self.parts[l.part as usize].min >= l.best {
                    l.part += 1;
                }
                l.node = start(l.part, h);
                if l.part == parts {
                    active -= 1;
                }
            }
        }
        for (l, o) in lanes.iter().zip(os) {
            *o = (l.best != u32::MAX).then_some(l.best as usize);
        }
    }

    /// The rules of leaf reference `leaf` in `p`, and whether the last hid later ones.
    #[inline(always)]
    fn leaf<'a>(&self, p: &'a Part<N>, leaf: u32) -> (&'a [u32], bool) {
        let hid = leaf & HID_BIT != 0;
        let mut start = leaf & START_MASK;
        let mut len = (leaf >> LEN_SHIFT) & 0xf;
        if len == INDIRECT {
            Leaf { start, len } = p.leaves[start as usize];
        }
        (&p.entries[start as usize..(start + len) as usize], hid)
    }

    /// Scans leaf reference `leaf` of `p` for a rule better than `best`; returns the new best.
    #[inline]
    fn scan(
        &self,
        p: &Part<N>,
        leaf: u32,
        h: &Header<N>,
        mut best: u32,
        live: &impl Fn(u32) -> bool,
    ) -> u32 {
        let (list, hid) = self.leaf(p, leaf);
        for (k, &r) in list.iter().enumerate() {
            if r >= best {
                break;
            }
            if self.rules[r as usize].matches(h) {
                if live(r) {
                    best = r;
                    break;
                }
                if hid && k + 1 == list.len() {
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

    /// Partitions in the structure; a lookup's answer is the best (lowest) rule any of them
    /// gives.
    pub fn partitions(&self) -> usize {
        self.parts.len()
    }

    /// The bound a lookup stops at before partition `p`: once the best rule it has found is at
    /// or below this, it visits neither `p` nor any partition after it (they are in ascending
    /// order of their bounds), so the bound must not exceed a rule of `p` or of a later
    /// partition. It is the partition's lowest rule.
    pub fn bound(&self, p: usize) -> u32 {
        self.parts[p].min
    }

    /// The rules partition `p` was built from, ascending; the partitions' rules are disjoint
    /// and together all the rules.
    pub fn members(&self, p: usize) -> &[u32] {
        &self.parts[p].members
    }

    /// Where partition `p`'s walk starts.
    pub fn start(&self, p: usize) -> Start<'_> {
        let part = &self.parts[p];
        if let Some(v) = &part.vectors {
            Start::Vectors(Vectors { inner: &**v })
        } else if part.table.is_empty() {
            Start::Root(part.root)
        } else {
            Start::Table { field: part.table_dim, shift: part.table_shift, slots: &part.table }
        }
    }

    /// The step reference `r` of partition `p` names.
    pub fn step(&self, p: usize, r: u32) -> Step<'_> {
        let part = &self.parts[p];
        if r & LEAF_BIT != 0 {
            return Step::Leaf(self.leaf(part, r).0);
        }
        let node = &part.nodes[(r >> DIM_BITS) as usize];
        Step::Test { field: (r & DIM_MASK) as usize, cuts: &node.cuts, kids: &node.kids }
    }

    /// Whether leaf `r` of partition `p` ends with a rule that covers the rest of the leaf's
    /// box: rules after it that match there were left out of the leaf, so a lookup that
    /// finds that last rule deleted scans the whole rule list after it instead.
    pub fn hides(&self, p: usize, r: u32) -> bool {
        r & LEAF_BIT != 0 && self.leaf(&self.parts[p], r).1
    }

    /// The number of rules compiled.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether no rules were compiled.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Rule `i` as compiled (`i` in priority order), if there is one.
    pub fn rule(&self, i: usize) -> Option<Rule<N>> {
        self.rules.get(i).map(Span::rule)
    }

    /// Sizes of the compiled structure.
    pub fn stats(&self) -> CompiledStats {
        let nodes: usize = self.parts.iter().map(|p| p.nodes.len()).sum();
        let leaves: usize = self.parts.iter().map(|p| p.leaves.len()).sum();
        let leaf_entries: usize = self.parts.iter().map(|p| p.entries.len()).sum();
        let tables: usize = self.parts.iter().map(|p| 2 * p.table.len() + p.members.len()).sum();
        let vectors: usize =
            self.parts.iter().filter_map(|p| p.vectors.as_ref()).map(|v| v.bytes()).sum();
        CompiledStats {
            rules: self.rules.len(),
            partitions: self.parts.len(),
            nodes,
            leaf_entries,
            depth: self.depth,
            bytes: self.rules.len() * size_of::<Rule<N>>()
                + nodes * size_of::<Node>()
                + leaves * size_of::<Leaf>()
                + leaf_entries * 4
                + tables * 4
                + vectors,
        }
    }
}

struct Builder<'a, const N: usize> {
    rules: &'a [Rule<N>],
    opaque: &'a [bool],
    nodes: Vec<Node>,
    leaves: Vec<Leaf>,
    entries: Vec<u32>,
    depth: usize,
}

/// A candidate split: the field, its cuts (ascending), the largest child and the sum of the
/// children's sizes.
struct Split {
    dim: usize,
    cuts: Vec<u32>,
    max: usize,
    sum: usize,
}

impl<const N: usize> Builder<'_, N> {
    /// Builds the subtree for `ids` (ascending, all overlapping `bounds`); returns its
    /// reference (a node, or a leaf with `LEAF_BIT`). `hid`: an ancestor dropped rules after
    /// the last of `ids`, which covers `bounds`.
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
        let full = self.nodes.len() >= MAX_NODES;
        let split = if ids.len() <= BINTH || depth >= MAX_DEPTH || full {
            None
        } else {
            self.choose(&ids, &bounds)
        };
        let Some(Split { dim, cuts, .. }) = split else {
            let (start, len) = (self.entries.len() as u32, ids.len() as u32);
            self.entries.extend_from_slice(&ids);
            let hid = if hid { HID_BIT } else { 0 };
            if len < INDIRECT && start <= START_MASK {
                return LEAF_BIT | hid | len << LEN_SHIFT | start;
            }
            self.leaves.push(Leaf { start, len });
            return LEAF_BIT | hid | INDIRECT << LEN_SHIFT | (self.leaves.len() - 1) as u32;
        };
        let me = self.nodes.len();
        self.nodes.push(Node { cuts: [u32::MAX; CUTS], pad: 0, kids: [0; CUTS + 1] });
        let mut kids = [0u32; CUTS + 1];
        let (blo, bhi) = bounds[dim];
        for k in 0..=cuts.len() {
            let lo = if k == 0 { blo } else { cuts[k - 1] };
            let hi = if k == cuts.len() { bhi } else { cuts[k] - 1 };
            let r = self.rules;
            let sub: Vec<u32> = ids
                .iter()
                .copied()
                .filter(|&i| r[i as usize].lo[dim] <= hi && r[i as usize].hi[dim] >= lo)
                .collect();
            let mut b = bounds;
            b[dim] = (lo, hi);
            kids[k] = self.build(sub, b, depth + 1, hid);
        }
        for k in cuts.len() + 1..=CUTS {
            kids[k] = kids[cuts.len()];
        }
        let node = &mut self.nodes[me];
        node.cuts[..cuts.len()].copy_from_slice(&cuts);
        node.kids = kids;
        (me as u32) << DIM_BITS | dim as u32
    }

    /// A directly indexed root over field `dim` (every rule's range in it is under
    /// [`SMALL`], so it reaches at most two slots): about two slots per rule, more for large
    /// partitions (up to `2^TABLE_BITS`) while a rule reaches about two; each slot holds the
    /// subtree for the rules reaching it, and a mask of the thirty-seconds of it they reach.
    /// Returns the table and the shift that turns a field value into a slot.
    fn table(&mut self, ids: Vec<u32>, bounds: [(u32, u32); N], dim: usize) -> (Vec<u64>, u32) {
        let mut bits = (usize::BITS - ids.len().leading_zeros() + 1).clamp(4, 16);
        // Large partitions get finer slots while the rules still reach few of them.
        let reach = |bits: u32| -> usize {
            let shift = 32 - bits;
            ids.iter()
                .map(|&i| {
                    let r = &self.rules[i as usize];
                    ((r.hi[dim] >> shift) - (r.lo[dim] >> shift)) as usize + 1
                })
                .sum()
        };
        while bits < TABLE_BITS && ids.len() >= 1 << 14 && reach(bits + 1) <= 2 * ids.len() {
            bits += 1;
        }
        let shift = 32 - bits;
        let mut table = vec![u64::from(LEAF_BIT); 1 << bits];
        let mut pairs: Vec<(u32, u32)> = Vec::with_capacity(ids.len() * 2);
        for &i in &ids {
            let r = &self.rules[i as usize];
            for slot in r.lo[dim] >> shift..=r.hi[dim] >> shift {
                pairs.push((slot, i));
            }
        }
        pairs.sort_unstable();
        let mut k = 0;
        while k < pairs.len() {
            let slot = pairs[k].0;
            let end = k + pairs[k..].partition_point(|&(s, _)| s == slot);
            let sub: Vec<u32> = pairs[k..end].iter().map(|&(_, i)| i).collect();
            let mut b = bounds;
            let (lo, hi) = (slot << shift, (slot << shift) | ((1u32 << shift) - 1));
            let mut mask = 0u64;
            for &i in &sub {
                let r = &self.rules[i as usize];
                let sub_of = |v: u32| (v.clamp(lo, hi) - lo) >> (shift - SUB_BITS);
                for k in sub_of(r.lo[dim])..=sub_of(r.hi[dim]) {
                    mask |= 1 << k;
                }
            }
            b[dim] = (b[dim].0.max(lo), b[dim].1.min(hi));
            table[slot as usize] = mask << 32 | u64::from(self.build(sub, b, 1, false));
            k = end;
        }
        (table, shift)
    }

    /// The field and cuts to split at. For each field, up to seven cuts are placed so that
    /// the children hold about equal shares of the rules' overlaps with the field's elementary
    /// intervals (HyperSplit's weighting, several cuts at once); seven, three or one cut is
    /// kept, the most whose children hold at most `SPREAD` times the node's rules in all. The
    /// field whose largest child is smallest wins (ties: fewest copies). `None` when no split
    /// makes progress.
    fn choose(&self, ids: &[u32], bounds: &[(u32, u32); N]) -> Option<Split> {
        let n = ids.len();
        let mut best: Option<Split> = None;
        let mut points = Vec::with_capacity(2 * n);
        let mut weight = Vec::new();
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
            // Segment j is [points[j-1], points[j]) (segment 0 starts at the box's low end);
            // weight[j] = rules overlapping it, through a difference array.
            weight.clear();
            weight.resize(points.len() + 2, 0i64);
            for &i in ids {
                let r = &self.rules[i as usize];
                let a = points.partition_point(|&p| p <= r.lo[dim]);
                let b = points.partition_point(|&p| p <= r.hi[dim]);
                weight[a] += 1;
                weight[b + 1] -= 1;
            }
            let mut run = 0;
            for w in weight.iter_mut() {
                run += *w;
                *w = run;
            }
            let total: i64 = weight[..=points.len()].iter().sum();
            let mut chosen: Option<Split> = None;
            for k in [CUTS, 3, 1] {
                let mut cuts = Vec::with_capacity(k);
                let mut acc = 0;
                let mut next = 1;
                for (j, &w) in weight[..points.len()].iter().enumerate() {
                    acc += w;
                    while next <= k && acc * (k as i64 + 1) >= total * next as i64 {
                        if cuts.last() != Some(&points[j]) {
                            cuts.push(points[j]);
                        }
                        next += 1;
                    }
                }
                if cuts.is_empty() {
                    cuts.push(points[points.len() / 2]);
                }
                let (max, sum) = self.sizes(ids, dim, &cuts);
                let cand = Split { dim, cuts, max, sum };
                let fits = cand.sum <= SPREAD * n;
                if chosen.as_ref().is_none_or(|c| (cand.max, cand.sum) < (c.max, c.sum)) {
                    chosen = Some(cand);
                }
                if fits {
                    break;
                }
            }
            if let Some(c) = chosen
                && best.as_ref().is_none_or(|b| (c.max, c.sum) < (b.max, b.sum))
            {
                best = Some(c);
            }
        }
        best.filter(|s| s.max < n)
    }

    /// The largest child and the children's total size when `ids` are cut at `cuts` on `dim`.
    fn sizes(&self, ids: &[u32], dim: usize, cuts: &[u32]) -> (usize, usize) {
        let mut count = [0i64; CUTS + 2];
        for &i in ids {
            let r = &self.rules[i as usize];
            let a = cuts.partition_point(|&c| c <= r.lo[dim]);
            let b = cuts.partition_point(|&c| c <= r.hi[dim]);
            count[a] += 1;
            count[b + 1] -= 1;
        }
        let (mut run, mut max, mut sum) = (0, 0, 0);
        for c in &count[..=cuts.len()] {
            run += c;
            max = max.max(run as usize);
            sum += run as usize;
        }
        (max, sum)
    }
}

fn covers<const N: usize>(r: &Rule<N>, b: &[(u32, u32); N]) -> bool {
    (0..N).all(|d| r.lo[d] <= b[d].0 && b[d].1 <= r.hi[d])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linear::first_match;

    /// Many rules over one field so that nodes with all seven cuts are built, and headers at
    /// both ends of the field (a value of `u32::MAX` counts every padding cut).
    #[test]
    fn wide_nodes_and_extreme_values() {
        let mut rules: Vec<Rule<2>> = (0..200u32)
            .map(|i| Rule { lo: [i * 1000, 0], hi: [i * 1000 + 499, u32::MAX] })
            .collect();
        rules.push(Rule { lo: [u32::MAX - 5, 7], hi: [u32::MAX, 7] });
        rules.push(Rule { lo: [0, 0], hi: [u32::MAX, u32::MAX] });
        let c = Compiled::new(&rules);
        let st = c.stats();
        assert!(st.nodes > 1 && st.depth >= 2, "{st:?}");
        let mut values: Vec<u32> = vec![0, 1, u32::MAX, u32::MAX - 1, u32::MAX - 5, u32::MAX - 6];
        values.extend((0..210u32).flat_map(|i| [i * 1000, i * 1000 + 499, i * 1000 + 500]));
        let mut headers = Vec::new();
        for &v in &values {
            for w in [0, 7, 8, u32::MAX] {
                headers.push(Header([v, w]));
            }
        }
        let mut out = vec![None; headers.len()];
        c.classify_interleaved(&headers, &mut out);
        for (h, o) in headers.iter().zip(&out) {
            assert_eq!(c.classify(h), first_match(&rules, h), "{h:?}");
            assert_eq!(*o, first_match(&rules, h), "{h:?}");
        }
        assert_eq!(c.classify(&Header([u32::MAX, 7])), Some(200));
        assert_eq!(c.rule(200), Some(rules[200]));
        assert_eq!(c.len(), rules.len());
    }

    /// Staircase rules share a region and none covers the others' box, so no cut makes
    /// progress: one leaf holds them all, too many to describe in its reference.
    #[test]
    fn long_leaves() {
        let rules: Vec<Rule<2>> =
            (0..30u32).map(|i| Rule { lo: [i, 50 - i], hi: [i + 50, 100 - i] }).collect();
        let c = Compiled::new(&rules);
        assert_eq!(c.stats().leaf_entries, 30, "{:?}", c.stats());
        for a in 0..110 {
            for b in 0..110 {
                let h = Header([a, b]);
                assert_eq!(c.classify(&h), first_match(&rules, &h), "{h:?}");
                assert_eq!(c.classify_live(&h, |i| i % 3 != 0), {
                    rules.iter().enumerate().position(|(i, r)| i % 3 != 0 && r.matches(&h))
                });
            }
        }
    }
}
