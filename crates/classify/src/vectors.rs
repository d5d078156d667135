//! Small partitions looked up as bit vectors, with scalar, AVX2 and AVX-512 kernels.
//!
//! A partition whose rules are wide in both addresses (the firewall's "any to any" rules on
//! ports and protocols) is where random traffic, scans and floods end up: a tree over it
//! costs a walk of varying depth and a scan of varying length, each ending in a mispredicted
//! branch, several per header. Such partitions are small (a few hundred rules in every
//! ClassBench set), so they are looked up the way the bit-vector classifiers of Lakshman and
//! Stiliadis do: per field, the rank of the header's value among the field's rule
//! boundaries picks a bitmap of the rules covering that elementary interval; the AND of the
//! fields' bitmaps holds the matching rules, and its lowest bit the first of them. The work
//! per header is fixed (a few small-node searches and five 256-bit loads) and has no
//! data-dependent branch, so the CPU overlaps consecutive headers.
//!
//! The rank search is a direct table where the boundaries allow a small one, else an
//! implicit 8-way tree (eight keys per node, all compared at once): with AVX2 a level is one
//! compare and one population count, with AVX-512 one compare into a mask register. The
//! kernel is chosen at run time ([`Kernel::best`], overridable with
//! `RAMPART_CLASSIFY_KERNEL=scalar|avx2|avx512`), and every kernel the CPU runs is checked
//! against the linear scan by the same tests.
//!
//! Written here: bit vectors over a few hundred rules are a few lines, and no crate offers a
//! SIMD rank over small sorted arrays.

use std::sync::OnceLock;

use crate::rule::{Header, Rule};

/// The most 64-bit words in a rule bitmap (a multiple of 4, one AVX2 register each).
const MAX_WORDS: usize = 32;
/// A partition with no table and at most this many rules is looked up as bit vectors, when
/// its bitmaps fit [`VECTOR_BYTES`].
const VECTOR_RULES: usize = 64 * MAX_WORDS;
/// The most bytes a partition's bitmaps may take.
const VECTOR_BYTES: usize = 256 << 10;
/// A field's ranks are read from a direct table when it takes at most this many bytes, or,
/// when the search tree it replaces has two levels or more, [`DIRECT_PER_RULE`] bytes per rule
/// of the whole rule list, at least [`DIRECT_DEEP`] and at most [`DIRECT_MAX`]. A rank from
/// the tree is two to four dependent steps (fw1_100k's source addresses: 723 boundaries of wide
/// prefixes, four levels), from the table one load: uniform headers on fw1_100k 66-70 → 49-51
/// ns per lookup, fw1_10k 37 → 28, ipc1_10k 17.5 → 13.6 (`BENCHMARKS.md`); bounding the tables
/// by the rule count keeps a set of a thousand rules from paying 128 KiB per field.
const DIRECT_BYTES: usize = 4 << 10;
const DIRECT_DEEP: usize = 32 << 10;
const DIRECT_PER_RULE: usize = 16;
const DIRECT_MAX: usize = 128 << 10;

/// Which kernel looks up a compiled classifier's bit-vector partitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// Plain Rust, any CPU (the compiler vectorises the node compares with SSE2 on x86-64).
    Scalar,
    /// 256-bit compares, population counts and ANDs (x86-64 with AVX2 and POPCNT).
    Avx2,
    /// Unsigned compares into mask registers and 512-bit ANDs for bitmaps wider than one
    /// 256-bit register, AVX2 otherwise (x86-64 with AVX2, AVX-512 F and VL and POPCNT). Measured no faster than AVX2 on the project's AMD EPYC (`BENCHMARKS.md`),
    /// so it runs only when `RAMPART_CLASSIFY_KERNEL=avx512` or [`Compiled::set_kernel`]
    /// asks for it.
    ///
    /// [`Compiled::set_kernel`]: crate::Compiled::set_kernel
    Avx512,
}

impl Kernel {
    /// Every kernel.
    pub const ALL: [Kernel; 3] = [Kernel::Scalar, Kernel::Avx2, Kernel::Avx512];

    /// The kernel's name, as `RAMPART_CLASSIFY_KERNEL` and the benchmarks spell it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Scalar => "scalar",
            Self::Avx2 => "avx2",
            Self::Avx512 => "avx512",
        }
    }

    /// Whether this CPU runs the kernel.
    pub fn supported(self) -> bool {
        match self {
            Self::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Self::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("popcnt")
            }
            #[cfg(target_arch = "x86_64")]
            Self::Avx512 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512vl")
                    && std::arch::is_x86_feature_detected!("popcnt")
            }
            #[cfg(not(target_arch = "x86_64"))]
            Self::Avx2 | Self::Avx512 => false,
        }
    }

    /// The kernel new classifiers use: the one `RAMPART_CLASSIFY_KERNEL` names when this CPU
    /// runs it, else AVX2 where the CPU has it, else scalar. Decided once per process.
    pub fn best() -> Kernel {
        static BEST: OnceLock<Kernel> = OnceLock::new();
        *BEST.get_or_init(|| {
            let named = std::env::var("RAMPART_CLASSIFY_KERNEL").ok();
            let forced = Kernel::ALL.into_iter().find(|k| named.as_deref() == Some(k.name()));
            match forced {
                Some(k) if k.supported() => k,
                _ if Kernel::Avx2.supported() => Kernel::Avx2,
                _ => Kernel::Scalar,
            }
        })
    }
}

/// One field of a [`Vectors`] partition: the rank of a value among the field's sorted
/// boundaries (the rules' low ends, and high ends + 1) numbers the elementary interval it
/// falls in, and that interval's bitmap holds the partition's rules whose range covers it.
#[derive(Clone, Debug)]
pub(crate) struct FieldIndex {
    /// The boundaries as the levels of an implicit 8-way search tree: level `l` has `8^l`
    /// nodes of 8 keys; the last level is the sorted boundaries padded with `u32::MAX`, and
    /// each upper node holds the first key of each of its 8 children.
    keys: Vec<[u32; 8]>,
    levels: u32,
    /// Instead of the tree: the rank of every value, indexed by `min(value, limit) >> shift`
    /// (every boundary is a multiple of `1 << shift`, the last is `limit`). Prefixes of at
    /// most /16 and protocol numbers make small tables.
    direct: Vec<u16>,
    /// The same table in bytes, used instead when there are fewer than 256 boundaries.
    direct8: Vec<u8>,
    shift: u32,
    limit: u32,
    /// Real boundaries; a rank past it (a value of `u32::MAX` counts the padding) is clamped.
    count: u32,
    /// One bitmap of `regs` registers of 4 words per elementary interval (`count + 1` of
    /// them), bit `k` for the partition's `k`-th rule.
    bits: Vec<[u64; 4]>,
    /// Registers (4 words) per bitmap.
    regs: usize,
}

impl FieldIndex {
    /// The sorted boundaries of field `d` of rules `ids`.
    fn bounds<const N: usize>(rules: &[Rule<N>], ids: &[u32], d: usize) -> Vec<u32> {
        let mut b: Vec<u32> = Vec::with_capacity(ids.len() * 2);
        for &i in ids {
            let r = &rules[i as usize];
            if r.lo[d] > 0 {
                b.push(r.lo[d]);
            }
            if r.hi[d] < u32::MAX {
                b.push(r.hi[d] + 1);
            }
        }
        b.sort_unstable();
        b.dedup();
        b
    }

    /// The index of field `d` of rules `ids`, whose boundaries are `b` ([`Self::bounds`]),
    /// with bitmaps of `words` words.
    fn new<const N: usize>(
        rules: &[Rule<N>],
        ids: &[u32],
        d: usize,
        mut b: Vec<u32>,
        words: usize,
    ) -> Self {
        let deep = (rules.len() * DIRECT_PER_RULE).clamp(DIRECT_DEEP, DIRECT_MAX);
        let count = b.len();
        let mut levels = u32::from(count > 0);
        while 8usize.pow(levels) < count {
            levels += 1;
        }
        let shift = b.iter().map(|x| x.trailing_zeros()).min().unwrap_or(0);
        let limit = b.last().copied().unwrap_or(0);
        let entries = (limit >> shift) as usize + 1;
        let width = if count < 256 { 1 } else { 2 };
        let (mut direct, mut direct8) = (Vec::new(), Vec::new());
        if count > 0
            && (entries * width <= DIRECT_BYTES || (levels >= 2 && entries * width <= deep))
        {
            // No boundary falls strictly inside a slot, so the slot's first value ranks it.
            let ranks = (0..entries).map(|i| b.partition_point(|&x| x <= (i as u32) << shift));
            if width == 1 {
                direct8 = ranks.map(|r| r as u8).collect();
            } else {
                direct = ranks.map(|r| r as u16).collect();
            }
            levels = 0;
        }
        let regs = words / 4;
        let mut bits = vec![[0u64; 4]; (count + 1) * regs];
        for (k, &i) in ids.iter().enumerate() {
            let r = &rules[i as usize];
            let first = b.partition_point(|&x| x <= r.lo[d]);
            let last = b.partition_point(|&x| x <= r.hi[d]);
            for row in bits[first * regs..(last + 1) * regs].chunks_exact_mut(regs) {
                row[k / 256][k / 64 % 4] |= 1 << (k % 64);
            }
        }
        b.resize(8usize.pow(levels).max(1), u32::MAX);
        let mut keys = Vec::new();
        for l in 0..levels {
            // Node c of level l starts at key c * 8^(levels - l); its key j is the first key
            // of its child j.
            let step = 8usize.pow(levels - l - 1);
            for c in 0..8usize.pow(l) {
                keys.push(std::array::from_fn(|j| b[(8 * c + j) * step]));
            }
        }
        Self { keys, levels, direct, direct8, shift, limit, count: count as u32, bits, regs }
    }

    /// The bitmap of interval `r`.
    #[inline(always)]
    fn row(&self, r: usize) -> &[[u64; 4]] {
        &self.bits[r * self.regs..(r + 1) * self.regs]
    }

    /// The elementary interval `v` falls in: the number of boundaries at or below it.
    #[inline(always)]
    fn rank(&self, v: u32) -> usize {
        // The keys ascend, so those at or below v are a prefix: its length is the number of
        // trailing ones.
        self.descend(v, |k| {
            let below = (0..8).fold(0u32, |m, j| m | u32::from(k[j] <= v) << j);
            (!below).trailing_zeros() as usize
        })
    }

    /// The rank of `v`: from the direct table, or down the search tree with `count` giving
    /// how many keys of a node are at or below `v` (each kernel counts its own way).
    #[inline(always)]
    fn descend(&self, v: u32, count: impl Fn(&[u32; 8]) -> usize) -> usize {
        if let Some(r) = self.direct(v) {
            return r;
        }
        let (mut node, mut base, mut width) = (0usize, 0usize, 1usize);
        for l in 0..self.levels {
            let n = count(&self.keys[base + node]);
            base += width;
            width *= 8;
            // An upper node's first key is its first child's: the child is the last whose
            // first key is at or below v (the first when none is).
            node = 8 * node + if l + 1 == self.levels { n } else { n.saturating_sub(1) };
        }
        node.min(self.count as usize)
    }

    /// The rank from the direct table, if the field has one.
    #[inline(always)]
    fn direct(&self, v: u32) -> Option<usize> {
        let slot = (v.min(self.limit) >> self.shift) as usize;
        if !self.direct8.is_empty() {
            Some(usize::from(self.direct8[slot]))
        } else if !self.direct.is_empty() {
            Some(usize::from(self.direct[slot]))
        } else {
            None
        }
    }

    /// Bytes held.
    fn bytes(&self) -> usize {
        self.keys.len() * 32 + self.direct.len() * 2 + self.direct8.len() + self.bits.len() * 32
    }

    /// The values where the rank changes, found by evaluating [`FieldIndex::rank`] itself
    /// (the ranks are constant between the tree's keys and between the table's slots), and
    /// the rank of each interval they make: what the lookup does, for checking it.
    fn steps(&self) -> (Vec<u32>, Vec<usize>) {
        let mut points: Vec<u32> = self.keys.iter().flatten().copied().collect();
        let slots = self.direct.len().max(self.direct8.len()) as u32;
        points.extend((1..slots).map(|i| i << self.shift));
        points.retain(|&p| p > 0);
        points.sort_unstable();
        points.dedup();
        let bounds: Vec<u32> =
            points.into_iter().filter(|&p| self.rank(p) != self.rank(p - 1)).collect();
        let ranks = std::iter::once(self.rank(0)).chain(bounds.iter().map(|&p| self.rank(p)));
        let ranks = ranks.collect();
        (bounds, ranks)
    }
}

/// A partition of at most [`VECTOR_RULES`] rules looked up as bit vectors.
#[derive(Clone, Debug)]
pub(crate) struct Vectors<const N: usize> {
    fields: [FieldIndex; N],
    /// Words per bitmap: the rules' count in 64-bit words, rounded up to a multiple of 4.
    words: usize,
}

impl<const N: usize> Vectors<N> {
    /// The bit vectors of rules `ids` (ascending), or `None` when there are more than
    /// [`VECTOR_RULES`] or their bitmaps would take more than [`VECTOR_BYTES`].
    pub(crate) fn new(rules: &[Rule<N>], ids: &[u32]) -> Option<Self> {
        if ids.len() > VECTOR_RULES {
            return None;
        }
        let words = ids.len().div_ceil(256).max(1) * 4;
        let bounds: [Vec<u32>; N] = std::array::from_fn(|d| FieldIndex::bounds(rules, ids, d));
        let intervals: usize = bounds.iter().map(|b| b.len() + 1).sum();
        if intervals * words * 8 > VECTOR_BYTES {
            return None;
        }
        let mut bounds = bounds.into_iter();
        let fields = std::array::from_fn(|d| {
            let b = bounds.next().expect("one per field");
            FieldIndex::new(rules, ids, d, b, words)
        });
        Some(Self { fields, words })
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.fields.iter().map(FieldIndex::bytes).sum()
    }

    /// The rules matching `h`, as a bitmap over positions in the partition's rule list (the
    /// first `self.words` words).
    #[inline(always)]
    fn matching(&self, h: &Header<N>) -> [u64; MAX_WORDS] {
        let mut acc = [!0u64; MAX_WORDS];
        for d in 0..N {
            let f = &self.fields[d];
            let row = f.row(f.rank(h.0[d]));
            for (a, w) in acc.iter_mut().zip(row.iter().flatten()) {
                *a &= w;
            }
        }
        acc
    }

    /// The first of `members` (the partition's rules, ascending) matching `h`, or
    /// `u32::MAX`.
    #[inline(always)]
    pub(crate) fn first(&self, h: &Header<N>, members: &[u32], kernel: Kernel) -> u32 {
        match kernel {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a classifier holds `Avx2` only after `Kernel::supported` said this CPU
            // runs it.
            #[allow(unsafe_code)]
            Kernel::Avx2 => unsafe { avx2::first(&self.fields, &h.0, members, self.words) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above, for AVX-512 F and VL.
            #[allow(unsafe_code)]
            Kernel::Avx512 => unsafe { avx512::first(&self.fields, &h.0, members, self.words) },
            _ if self.words == 4 => {
                // One register's worth (at most 256 rules), kept in registers.
                let mut acc = [!0u64; 4];
                for (f, &v) in self.fields.iter().zip(&h.0) {
                    let w = &f.bits[f.rank(v)];
                    for k in 0..4 {
                        acc[k] &= w[k];
                    }
                }
                first_set(&acc, members)
            }
            _ => {
                let rows: [&[[u64; 4]]; N] =
                    std::array::from_fn(|d| self.fields[d].row(self.fields[d].rank(h.0[d])));
                let mut pos = usize::MAX;
                for k in (0..self.words).rev() {
                    let w = rows.iter().fold(!0u64, |a, r| a & r[k / 4][k % 4]);
                    let t = k * 64 + w.trailing_zeros() as usize;
                    pos = if w != 0 { t } else { pos };
                }
                members.get(pos).copied().unwrap_or(u32::MAX)
            }
        }
    }

    /// The first of `members` matching `h` below `best` for which `live` holds, or
    /// `u32::MAX` (the scalar kernel: this path serves rule sets with deleted or opaque
    /// rules).
    #[inline]
    pub(crate) fn first_live(
        &self,
        h: &Header<N>,
        members: &[u32],
        best: u32,
        live: &impl Fn(u32) -> bool,
    ) -> u32 {
        for (k, &word) in self.matching(h)[..self.words].iter().enumerate() {
            let mut w = word;
            while w != 0 {
                let r = members[k * 64 + w.trailing_zeros() as usize];
                if r >= best {
                    return u32::MAX;
                }
                if live(r) {
                    return r;
                }
                w &= w - 1;
            }
        }
        u32::MAX
    }

    /// Field `d`'s boundaries (ascending) and, for each elementary interval they make, the
    /// positions (in the member list) of the rules covering it: for tools that check the
    /// structure.
    pub(crate) fn field(&self, d: usize) -> (Vec<u32>, Vec<Vec<usize>>) {
        let f = &self.fields[d];
        let (bounds, ranks) = f.steps();
        let sets = ranks
            .into_iter()
            .map(|r| {
                let w = f.row(r);
                (0..f.regs * 256).filter(|&k| w[k / 256][k / 64 % 4] >> (k % 64) & 1 != 0).collect()
            })
            .collect();
        (bounds, sets)
    }
}

/// A field's rank: a direct table's read in line, the tree's through `tree` (a kernel's
/// search, which the compiler does not inline into the kernel's loop; reading the table
/// first measured 20 % faster on acl1_10k, whose fields all have one).
#[inline(always)]
fn ranked(f: &FieldIndex, v: u32, tree: impl Fn(&FieldIndex, u32) -> usize) -> usize {
    f.direct(v).unwrap_or_else(|| tree(f, v))
}

/// The member at the lowest set bit of `acc`, or `u32::MAX`, without a data-dependent
/// branch.
#[inline(always)]
fn first_set(acc: &[u64], members: &[u32]) -> u32 {
    let mut pos = usize::MAX;
    for (k, &w) in acc.iter().enumerate().rev() {
        let t = k * 64 + w.trailing_zeros() as usize;
        pos = if w != 0 { t } else { pos };
    }
    members.get(pos).copied().unwrap_or(u32::MAX)
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{FieldIndex, MAX_WORDS, ranked};

    /// [`super::FieldIndex::rank`] with one 256-bit compare per level (keys and value biased
    /// by 2^31 so that the signed compare orders them as unsigned).
    #[inline]
    #[target_feature(enable = "avx2,popcnt")]
    pub(super) fn rank(f: &FieldIndex, v: u32) -> usize {
        let bias = _mm256_set1_epi32(i32::MIN);
        let value = _mm256_xor_si256(_mm256_set1_epi32(v as i32), bias);
        f.descend(v, |k| {
            // SAFETY: `k` is 32 readable bytes; the load has no alignment requirement.
            let k = unsafe { _mm256_loadu_si256(k.as_ptr().cast()) };
            let above = _mm256_cmpgt_epi32(_mm256_xor_si256(k, bias), value);
            8 - (_mm256_movemask_ps(_mm256_castsi256_ps(above)) as u32).count_ones() as usize
        })
    }

    /// [`super::Vectors::first`]: the ranks, 256-bit ANDs of the fields' bitmaps, and the
    /// first set bit.
    #[target_feature(enable = "avx2,popcnt")]
    pub(super) fn first(fields: &[FieldIndex], h: &[u32], members: &[u32], words: usize) -> u32 {
        let ranked = |f: &FieldIndex, v: u32| ranked(f, v, |f, v| rank(f, v));
        if words == 4 {
            // One register: the common case (at most 256 rules), kept in registers.
            let mut a = _mm256_set1_epi64x(-1);
            for (f, &v) in fields.iter().zip(h) {
                let w: &[u64; 4] = &f.bits[ranked(f, v)];
                // SAFETY: `w` is 32 readable bytes; the load has no alignment requirement.
                a = _mm256_and_si256(a, unsafe { _mm256_loadu_si256(w.as_ptr().cast()) });
            }
            let zero = _mm256_cmpeq_epi64(a, _mm256_setzero_si256());
            let nonzero = !(_mm256_movemask_pd(_mm256_castsi256_pd(zero)) as u32) & 0xf;
            let mut out = [0u64; 4];
            // SAFETY: `out` is 32 writable bytes; the store has no alignment requirement.
            unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), a) };
            let k = nonzero.trailing_zeros() as usize;
            let pos = k * 64 + out[k % 4].trailing_zeros() as usize;
            return members.get(pos).copied().unwrap_or(u32::MAX);
        }
        let mut acc = [_mm256_set1_epi64x(-1); MAX_WORDS / 4];
        for (f, &v) in fields.iter().zip(h) {
            let row = f.row(ranked(f, v));
            for (a, w) in acc.iter_mut().zip(row) {
                // SAFETY: `w` is 32 readable bytes; the load has no alignment requirement.
                *a = _mm256_and_si256(*a, unsafe { _mm256_loadu_si256(w.as_ptr().cast()) });
            }
        }
        let mut out = [0u64; MAX_WORDS];
        for (a, o) in acc.iter().zip(out.chunks_exact_mut(4)).take(words / 4) {
            // SAFETY: `o` is 32 writable bytes; the store has no alignment requirement.
            unsafe { _mm256_storeu_si256(o.as_mut_ptr().cast(), *a) };
        }
        super::first_set(&out[..words], members)
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx512 {
    use std::arch::x86_64::*;

    use super::{FieldIndex, MAX_WORDS, ranked};

    /// [`super::FieldIndex::rank`] with one unsigned compare into a mask register per level.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,popcnt")]
    pub(super) fn rank(f: &FieldIndex, v: u32) -> usize {
        let value = _mm256_set1_epi32(v as i32);
        f.descend(v, |k| {
            // SAFETY: `k` is 32 readable bytes; the load has no alignment requirement.
            let k = unsafe { _mm256_loadu_si256(k.as_ptr().cast()) };
            _mm256_cmple_epu32_mask(k, value).count_ones() as usize
        })
    }

    /// [`super::Vectors::first`]: the ranks, 512-bit ANDs of the fields' bitmaps, and the
    /// first set bit. A bitmap of one 256-bit register goes through the AVX2 kernel.
    #[target_feature(enable = "avx2,avx512f,avx512vl,popcnt")]
    pub(super) fn first(fields: &[FieldIndex], h: &[u32], members: &[u32], words: usize) -> u32 {
        if words == 4 {
            return super::avx2::first(fields, h, members, words);
        }
        let ranked = |f: &FieldIndex, v: u32| ranked(f, v, |f, v| rank(f, v));
        let mut acc = [_mm512_set1_epi64(-1); MAX_WORDS / 8];
        for (f, &v) in fields.iter().zip(h) {
            let row = f.row(ranked(f, v));
            for (c, a) in acc.iter_mut().enumerate().take(words.div_ceil(8)) {
                // Two registers of the row, or the last one alone (the upper half masked).
                let (ptr, mask) = match row.get(2 * c..2 * c + 2) {
                    Some(pair) => (pair.as_ptr(), 0xff),
                    None => (row[2 * c..].as_ptr(), 0x0f),
                };
                // SAFETY: the unmasked words lie in `row`; masked-out ones are not read.
                let w = unsafe { _mm512_maskz_loadu_epi64(mask, ptr.cast()) };
                *a = _mm512_and_si512(*a, w);
            }
        }
        let mut out = [0u64; MAX_WORDS];
        for (a, o) in acc.iter().zip(out.chunks_exact_mut(8)).take(words.div_ceil(8)) {
            // SAFETY: `o` is 64 writable bytes; the store has no alignment requirement.
            unsafe { _mm512_storeu_si512(o.as_mut_ptr().cast(), *a) };
        }
        super::first_set(&out[..words], members)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linear::first_match;

    /// Ranks against a plain count, at boundaries, next to them and at the ends of the field,
    /// for search trees of one to three levels and for direct tables (boundaries on /16
    /// multiples); and the boundaries the checking view finds are the true ones.
    #[test]
    fn ranks_match_a_count() {
        for aligned in [false, true] {
            for n in [0usize, 1, 2, 7, 8, 9, 63, 64, 65, 200] {
                let unit = if aligned { 1 << 16 } else { 1000 };
                let rules: Vec<Rule<1>> = (0..n as u32)
                    .map(|i| {
                        let lo = (i + 1) * unit + u32::from(!aligned);
                        Rule { lo: [lo], hi: [lo + (i % 5 + 1) * unit / 2 - 1] }
                    })
                    .collect();
                let ids: Vec<u32> = (0..n as u32).collect();
                let bounds = FieldIndex::bounds(&rules, &ids, 0);
                let f = FieldIndex::new(&rules, &ids, 0, bounds.clone(), 4);
                assert_eq!(f.steps().0, bounds, "{n} boundaries, aligned {aligned}");
                if aligned && n > 0 {
                    assert!(!f.direct8.is_empty() || !f.direct.is_empty(), "{n}: a table");
                }
                let mut probes = vec![0, 1, 2, u32::MAX, u32::MAX - 1];
                for &b in &bounds {
                    probes.extend([b - 1, b, b + 1]);
                }
                for v in probes {
                    let want = bounds.iter().filter(|&&b| b <= v).count();
                    assert_eq!(f.rank(v), want, "{n} boundaries, value {v}");
                    #[cfg(target_arch = "x86_64")]
                    if Kernel::Avx2.supported() {
                        // SAFETY: the CPU runs AVX2, checked above.
                        #[allow(unsafe_code)]
                        let r = unsafe { avx2::rank(&f, v) };
                        assert_eq!(r, want, "avx2: {n} boundaries, value {v}");
                    }
                    #[cfg(target_arch = "x86_64")]
                    if Kernel::Avx512.supported() {
                        // SAFETY: the CPU runs AVX-512 F and VL, checked above.
                        #[allow(unsafe_code)]
                        let r = unsafe { avx512::rank(&f, v) };
                        assert_eq!(r, want, "avx512: {n} boundaries, value {v}");
                    }
                }
            }
        }
    }

    /// Every kernel this CPU runs gives the first match of the linear scan, including rules
    /// that end at `u32::MAX` and start at 0, and headers matching nothing.
    #[test]
    fn kernels_give_the_first_match() {
        let mut rules: Vec<Rule<3>> = Vec::new();
        for i in 0..VECTOR_RULES as u32 {
            let a = i.wrapping_mul(2_654_435_761);
            let lo = [a % 50, (a >> 8) % 60, if i % 7 == 0 { u32::MAX - 3 } else { 0 }];
            let wide = i % 5 == 0 || i % 7 == 0;
            let hi = [lo[0] + a % 9, lo[1] + (a >> 4) % 11, if wide { u32::MAX } else { 40 }];
            rules.push(Rule { lo, hi });
        }
        let kernels: Vec<Kernel> = Kernel::ALL.into_iter().filter(|k| k.supported()).collect();
        println!("kernels run: {:?}", kernels.iter().map(|k| k.name()).collect::<Vec<_>>());
        // One register of bitmap, three (an odd count: a half-used 512-bit one) and eight.
        for n in [100, 600, VECTOR_RULES] {
            let rules = &rules[..n];
            let ids: Vec<u32> = (0..n as u32).collect();
            let v = Vectors::new(rules, &ids).expect("within the limits");
            for x in 0..65u32 {
                for y in 0..75u32 {
                    for z in [0, 1, 40, 41, u32::MAX - 4, u32::MAX - 3, u32::MAX] {
                        let h = Header([x, y, z]);
                        let want = first_match(rules, &h).map_or(u32::MAX, |i| i as u32);
                        for &k in &kernels {
                            assert_eq!(v.first(&h, &ids, k), want, "{n}: {} {h:?}", k.name());
                        }
                        assert_eq!(v.first_live(&h, &ids, u32::MAX, &|_| true), want);
                    }
                }
            }
        }
    }
}
