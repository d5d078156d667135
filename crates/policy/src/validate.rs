//! Translation validation: the compiled classifier lifted back into a decision diagram and
//! proved equal to the rule list it was compiled from.
//!
//! Every step of the compiled structure becomes a diagram: a table slot or a node's interval
//! restricts its field, a leaf is the first match over its rules' boxes, and the partitions
//! combine by taking the best (lowest) rule, which is what a lookup returns. The rule list
//! becomes the first-match diagram of its boxes. Both live in one manager, where equal
//! functions are equal handles, so equality is a comparison; otherwise a packet where they
//! differ is replayed through the compiled classifier and the linear scan.
//!
//! A lookup also stops early, where that cannot change its answer: before the next partition
//! once its best rule is at or below that partition's bound, and within a leaf once the next
//! rule listed is not below its best. Those stops are checked on the structure: no later
//! partition holds a rule below a bound, and every leaf lists its rules in ascending order.
//!
//! What is proved: `Compiled::classify` (every rule live) returns the first matching rule for
//! every packet of the fields' domains. How a bit-vector partition ranks a field (direct
//! tables, search trees, SIMD kernels), lookups that skip deleted rules, and the firewall's
//! checks and jumps around the structure, are tested, not proved.

use rampart_classify::linear::first_match;
use rampart_classify::{Compiled, Header, Rule, Start, Step, Vectors};
use rustc_hash::FxHashMap;

use crate::dd::{FALSE, Id, Manager};

/// A packet on which the compiled classifier and the rule list disagree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The packet (one value per field).
    pub packet: Vec<u32>,
    /// The first matching rule by the list's diagram.
    pub policy: Option<usize>,
    /// The rule the lifted structure gives.
    pub lifted: Option<usize>,
    /// What the compiled classifier returns when run on the packet.
    pub classifier: Option<usize>,
    /// What the linear scan returns.
    pub linear: Option<usize>,
}

/// Why a proof did not succeed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    /// The classifier and the rules disagree on a packet.
    #[error("the compiled classifier differs from its rules on packet {:?}: it returns {:?}, the rules' first match is {:?}", .0.packet, .0.classifier, .0.linear)]
    Mismatch(Mismatch),
    /// The partitions' rules are not the rules, each once.
    #[error("the compiled classifier's partitions do not hold every rule exactly once (rule {0})")]
    Partition(usize),
    /// A lookup could stop before partition `partition` while it or a later one holds a rule
    /// below its bound.
    #[error(
        "the compiled classifier's lookup stops before partition {partition} at rule {bound}, but rule {rule} lies there or later"
    )]
    Stop {
        /// The partition the lookup stops before.
        partition: usize,
        /// Its bound.
        bound: u32,
        /// The lowest rule at or after it.
        rule: u32,
    },
    /// A leaf lists a rule after a higher one, so a scan that stops at the higher one can miss
    /// it.
    #[error(
        "a leaf of the compiled classifier's partition {partition} lists rule {rule} after rule {after}"
    )]
    LeafOrder {
        /// The leaf's partition.
        partition: usize,
        /// The rule listed out of order.
        rule: u32,
        /// The rule listed before it.
        after: u32,
    },
    /// The diagrams grew past the manager's node limit; nothing was shown either way.
    #[error("gave up: the decision diagrams passed the size limit ({0} nodes)")]
    TooLarge(usize),
}

/// The first-match diagram of a rule list (terminal = index + 1, 0 = no match), as a
/// balanced merge.
pub fn first_match_dd<const N: usize>(m: &mut Manager, rules: &[Rule<N>]) -> Id {
    merge(m, rules, 0, rules.len())
}

fn merge<const N: usize>(m: &mut Manager, rules: &[Rule<N>], a: usize, b: usize) -> Id {
    match b - a {
        0 => FALSE,
        1 => cube(m, &rules[a], a),
        k => {
            let mid = a + k / 2;
            let x = merge(m, rules, a, mid);
            let y = merge(m, rules, mid, b);
            m.first(x, y)
        }
    }
}

fn cube<const N: usize>(m: &mut Manager, r: &Rule<N>, i: usize) -> Id {
    let t = m.leaf(i as u32 + 1);
    let ranges: Vec<(u32, u32)> = (0..N).map(|d| (r.lo[d], r.hi[d])).collect();
    m.cube(&ranges, t)
}

/// The compiled structure as a diagram from packets to rule index + 1 (0 = no match).
pub fn lift<const N: usize>(m: &mut Manager, c: &Compiled<N>) -> Id {
    let rules: Vec<Rule<N>> = (0..c.len()).filter_map(|i| c.rule(i)).collect();
    let mut out = FALSE;
    for p in 0..c.partitions() {
        let d = lift_partition(m, c, &rules, p);
        out = m.min(out, d);
    }
    out
}

/// Partition `p` of the structure as a diagram (`rules`: the compiled rules).
fn lift_partition<const N: usize>(
    m: &mut Manager,
    c: &Compiled<N>,
    rules: &[Rule<N>],
    p: usize,
) -> Id {
    let mut memo = FxHashMap::default();
    match c.start(p) {
        Start::Root(r) => lift_step(m, c, rules, p, r, &mut memo),
        start @ Start::Table { field, slots, .. } => {
            // Slot by slot, the values each slot's mask lets through, joined as a balanced
            // merge: joining them one at a time would rebuild an ever wider node per slot.
            let mut parts = Vec::new();
            for (s, &slot) in slots.iter().enumerate() {
                let sub = lift_step(m, c, rules, p, slot as u32, &mut memo);
                for (lo, hi) in start.slot_ranges(s) {
                    let piece = restrict(m, field, lo, hi, sub, FALSE);
                    if piece != FALSE {
                        parts.push(piece);
                    }
                }
            }
            join(m, &parts)
        }
        Start::Vectors(v) => {
            let members = c.members(p);
            let regions = vector_regions(&v, N, members.len());
            let mut d = FALSE;
            for (k, region) in regions.iter().enumerate().rev() {
                let then = m.leaf(members[k] + 1);
                let here = region_dd::<N>(m, region, None, then);
                d = m.first(here, d);
            }
            d
        }
    }
}

/// For each member of a bit-vector partition (by position in its member list), per field the
/// values where the lookup takes it as matching: the intervals whose sets hold it, adjacent
/// ones merged.
pub(crate) fn vector_regions(
    v: &Vectors<'_>,
    fields: usize,
    members: usize,
) -> Vec<Vec<Vec<(u32, u32)>>> {
    let mut out = vec![vec![Vec::new(); fields]; members];
    for (d, (bounds, sets)) in (0..fields).map(|d| v.field(d)).enumerate() {
        for (r, set) in sets.iter().enumerate() {
            let lo = if r == 0 { 0 } else { bounds[r - 1] };
            let hi = bounds.get(r).map_or(u32::MAX, |&b| b - 1);
            // A position past the member list answers nothing in the lookup either.
            for &k in set.iter().filter(|&&k| k < members) {
                let ranges: &mut Vec<(u32, u32)> = &mut out[k][d];
                match ranges.last_mut() {
                    Some((_, h)) if h.checked_add(1) == Some(lo) => *h = hi,
                    _ => ranges.push((lo, hi)),
                }
            }
        }
    }
    out
}

/// The packets with every field in one of its `ranges` (clipped to `area`'s box when given),
/// leading to `then`.
pub(crate) fn region_dd<const N: usize>(
    m: &mut Manager,
    ranges: &[Vec<(u32, u32)>],
    area: Option<&Rule<N>>,
    then: Id,
) -> Id {
    let mut d = then;
    for (f, rs) in ranges.iter().enumerate() {
        let clipped: Vec<(u32, u32)> = rs
            .iter()
            .filter_map(|&(lo, hi)| {
                let (lo, hi) = area.map_or((lo, hi), |a| (lo.max(a.lo[f]), hi.min(a.hi[f])));
                (lo <= hi).then_some((lo, hi))
            })
            .collect();
        let set = m.ranges(f, &clipped);
        d = m.mask(set, d);
    }
    d
}

/// The first match over diagrams in order (for disjoint ones, their union), as a balanced
/// merge.
pub(crate) fn join(m: &mut Manager, parts: &[Id]) -> Id {
    match parts.len() {
        0 => FALSE,
        1 => parts[0],
        k => {
            let a = join(m, &parts[..k / 2]);
            let b = join(m, &parts[k / 2..]);
            m.first(a, b)
        }
    }
}

/// `d` joined with `sub` on field values `lo..=hi` (clamped to the field's domain; `d` holds
/// nothing there yet).
pub(crate) fn restrict(m: &mut Manager, field: usize, lo: u32, hi: u32, sub: Id, d: Id) -> Id {
    let max = m.max(field);
    if lo > hi || lo > max || sub == FALSE {
        return d;
    }
    let set = m.range(field, lo, hi.min(max), crate::dd::TRUE, FALSE);
    let part = m.mask(set, sub);
    m.first(part, d)
}

fn lift_step<const N: usize>(
    m: &mut Manager,
    c: &Compiled<N>,
    rules: &[Rule<N>],
    p: usize,
    r: u32,
    memo: &mut FxHashMap<u32, Id>,
) -> Id {
    if let Some(&d) = memo.get(&r) {
        return d;
    }
    let d = match c.step(p, r) {
        Step::Leaf(list) => {
            let mut d = FALSE;
            for &i in list.iter().rev() {
                let here = cube(m, &rules[i as usize], i as usize);
                d = m.first(here, d);
            }
            d
        }
        Step::Test { field, cuts, kids } => {
            let mut d = FALSE;
            for (k, &kid) in kids.iter().enumerate() {
                let Some((lo, hi)) = interval(cuts, k) else { continue };
                let sub = lift_step(m, c, rules, p, kid, memo);
                d = restrict(m, field, lo, hi, sub, d);
            }
            d
        }
    };
    memo.insert(r, d);
    d
}

/// Proves that `c` returns the first matching rule of `rules` (the list it was compiled
/// from) for every packet, or finds a packet where it does not. `m` must have `N` fields.
pub fn prove<const N: usize>(
    m: &mut Manager,
    rules: &[Rule<N>],
    c: &Compiled<N>,
) -> Result<(), ProofError> {
    assert_eq!(m.fields(), N, "a manager over the rules' fields");
    // A lookup is the best answer over the partitions, and the partitions' rules are the
    // rules, each once: so the structure is right when each partition gives the first match
    // among its own rules. Proving that partition by partition keeps the diagrams small.
    let mut seen = vec![false; rules.len().max(c.len())];
    for p in 0..c.partitions() {
        for &i in c.members(p) {
            let i = i as usize;
            if i >= rules.len() || std::mem::replace(&mut seen[i], true) {
                return Err(ProofError::Partition(i));
            }
        }
    }
    if let Some(i) = seen.iter().position(|s| !s) {
        return Err(ProofError::Partition(i));
    }
    check_stops(c)?;
    let compiled: Vec<Rule<N>> = (0..c.len()).filter_map(|i| c.rule(i)).collect();
    let mut wrong = false;
    for p in 0..c.partitions() {
        let members: Vec<usize> = c.members(p).iter().map(|&i| i as usize).collect();
        let policy = first_of(m, rules, &members);
        let lifted = lift_partition(m, c, &compiled, p);
        if m.exceeded() {
            return Err(ProofError::TooLarge(m.len()));
        }
        if policy != lifted {
            wrong = true;
            break;
        }
    }
    if !wrong {
        return Ok(());
    }
    // A partition differs from the first match among its rules: compare whole lookups,
    // which is exact (the other partitions may mask the difference everywhere).
    let policy = first_match_dd(m, rules);
    let lifted = lift(m, c);
    if m.exceeded() {
        return Err(ProofError::TooLarge(m.len()));
    }
    if policy == lifted {
        return Ok(());
    }
    let diff = m.neq(policy, lifted);
    let free = vec![0; N];
    let packet = m.witness(diff, &|v| v == 1, &free).expect("the diagrams differ somewhere");
    let h = Header(std::array::from_fn(|d| packet[d]));
    let some = |v: u32| v.checked_sub(1).map(|i| i as usize);
    Err(ProofError::Mismatch(Mismatch {
        policy: some(m.eval(policy, &packet)),
        lifted: some(m.eval(lifted, &packet)),
        classifier: c.classify(&h),
        linear: first_match(rules, &h),
        packet,
    }))
}

/// Checks that the lookup's early stops lose nothing: no partition's bound exceeds a rule of it
/// or of a later partition, and every leaf a walk can reach lists its rules in ascending
/// order. With both, the lookup returns the best answer over all partitions, which is what
/// [`lift`] models.
fn check_stops<const N: usize>(c: &Compiled<N>) -> Result<(), ProofError> {
    let bounds: Vec<u32> = (0..c.partitions()).map(|p| c.bound(p)).collect();
    let lows: Vec<Option<u32>> =
        (0..c.partitions()).map(|p| c.members(p).iter().min().copied()).collect();
    if let Some((partition, rule)) = unsound_stop(&bounds, &lows) {
        return Err(ProofError::Stop { partition, bound: bounds[partition], rule });
    }
    for p in 0..c.partitions() {
        let mut todo: Vec<u32> = match c.start(p) {
            Start::Root(r) => vec![r],
            Start::Table { slots, .. } => slots.iter().map(|&s| s as u32).collect(),
            Start::Vectors(_) => Vec::new(),
        };
        let mut seen = rustc_hash::FxHashSet::default();
        while let Some(r) = todo.pop() {
            if !seen.insert(r) {
                continue;
            }
            match c.step(p, r) {
                Step::Leaf(list) => {
                    if let Some((after, rule)) = out_of_order(list) {
                        return Err(ProofError::LeafOrder { partition: p, rule, after });
                    }
                }
                Step::Test { kids, .. } => todo.extend_from_slice(kids),
            }
        }
    }
    Ok(())
}

/// The first partition (and the rule) where a lookup stopping at `bounds[p]` could miss a rule:
/// `lows[q]` is partition `q`'s lowest rule (`None` when it has none).
pub(crate) fn unsound_stop(bounds: &[u32], lows: &[Option<u32>]) -> Option<(usize, u32)> {
    let mut below = u32::MAX;
    let mut found = None;
    for p in (0..bounds.len()).rev() {
        below = below.min(lows[p].unwrap_or(u32::MAX));
        if bounds[p] > below {
            found = Some((p, below));
        }
    }
    found
}

/// The first pair of a list not in strictly ascending order.
pub(crate) fn out_of_order(list: &[u32]) -> Option<(u32, u32)> {
    list.windows(2).find(|w| w[0] >= w[1]).map(|w| (w[0], w[1]))
}

/// The first-match diagram of some of the rules (ascending indices), labelled with their
/// indices in the whole list.
fn first_of<const N: usize>(m: &mut Manager, rules: &[Rule<N>], which: &[usize]) -> Id {
    match which.len() {
        0 => FALSE,
        1 => cube(m, &rules[which[0]], which[0]),
        k => {
            let x = first_of(m, rules, &which[..k / 2]);
            let y = first_of(m, rules, &which[k / 2..]);
            m.first(x, y)
        }
    }
}

/// The values child `k` of a test takes: `cuts[k-1] ..= cuts[k] - 1`. Padding cuts are
/// `u32::MAX`, so only `u32::MAX` itself reaches the padding children (which repeat the last
/// real one); empty intervals are `None`.
pub(crate) fn interval(cuts: &[u32], k: usize) -> Option<(u32, u32)> {
    let lo = if k == 0 { 0 } else { cuts[k - 1] };
    let hi = match cuts.get(k) {
        Some(0) => return None,
        Some(&c) => c - 1,
        None => u32::MAX,
    };
    (lo <= hi).then_some((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_is_sound_only_below_every_later_rule() {
        // Partitions with lowest rules 0, 3 and 7, each bound its own lowest rule: sound.
        assert_eq!(unsound_stop(&[0, 3, 7], &[Some(0), Some(3), Some(7)]), None);
        // A bound below its rules is sound too (the lookup only visits more).
        assert_eq!(unsound_stop(&[0, 1, 2], &[Some(0), Some(3), Some(7)]), None);
        // A bound above the partition's own lowest rule: a best of 4 skips rule 3.
        assert_eq!(unsound_stop(&[0, 5, 7], &[Some(0), Some(3), Some(7)]), Some((1, 3)));
        // Partitions out of order: stopping before partition 1 at 6 skips rule 2 of partition 2.
        assert_eq!(unsound_stop(&[0, 6, 2], &[Some(0), Some(6), Some(2)]), Some((1, 2)));
        // An empty partition constrains nothing after it.
        assert_eq!(unsound_stop(&[0, 9, 4], &[Some(0), None, Some(4)]), Some((1, 4)));
        assert_eq!(unsound_stop(&[0, 4], &[Some(0), None]), None);
    }

    #[test]
    fn a_leaf_out_of_order_is_named() {
        assert_eq!(out_of_order(&[]), None);
        assert_eq!(out_of_order(&[4]), None);
        assert_eq!(out_of_order(&[1, 4, 9]), None);
        assert_eq!(out_of_order(&[1, 9, 4]), Some((9, 4)));
        assert_eq!(out_of_order(&[1, 1]), Some((1, 1)));
    }
}
