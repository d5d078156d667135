//! Proving the updatable classifier after every change.
//!
//! A [`Classifier`]'s lookups see a snapshot: a compiled base, the base rules deleted since
//! (skipped by lookups), and the rules inserted since (a tuple space of buckets, see
//! [`rampart_classify::DeltaBucket`]). Its answer for a packet is the lowest priority among
//! the base's first live match and every probed bucket's first match. The rule list says the
//! answer is the priority of the first rule of the list (by priority) that matches.
//!
//! [`LiveProver::check`] proves the two equal for every packet:
//! - **in full** the first time, and whenever the base changed or an update went unseen: the
//!   base's structure against its own rule list ([`crate::validate::prove`]), the live base
//!   rules plus the inserted ones against the list (the same rules at the same priorities),
//!   then every pending change as below;
//! - **by region** after one update (the rule inserted or deleted): only packets in that
//!   rule's box can change answer, on either side. Inside it, the snapshot is lifted again
//!   (the base's structure walked where it meets the box, its leaves' live rules, the buckets
//!   that meet it) and compared with the list's first match there; outside, the last proof
//!   still holds.
//!
//! What the region argument assumes of the lookup code is what the lifting assumes anyway
//! (tree walk, first live rule of a leaf, buckets probed by masked addresses, lowest priority
//! wins); the prover checks that exactly one change happened (the classifier's version
//! counter and the pending counts) and falls back to a full proof when not.

use rampart_classify::linear::first_match;
use rampart_classify::{Classifier, Compiled, FIELDS, Header, Rule, Snapshot, Start, Step};
use rustc_hash::FxHashMap;

use crate::dd::{FALSE, Id, Manager, TRUE};
use crate::rules::{self, Layout};
use crate::validate::{ProofError, interval, join, prove, region_dd, restrict, vector_regions};

/// A packet where the snapshot and the rule list give different answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveMismatch {
    /// The packet (one value per field).
    pub packet: Vec<u32>,
    /// The priority the snapshot's lookup returns.
    pub classifier: Option<u64>,
    /// The priority of the list's first matching rule.
    pub list: Option<u64>,
}

/// Why the live classifier could not be proved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LiveError {
    /// The base failed its own proof.
    #[error(transparent)]
    Base(#[from] ProofError),
    /// The snapshot and the list disagree on a packet.
    #[error("the classifier differs from its rule list on packet {:?}: it returns priority {:?}, the list's first match is {:?}", .0.packet, .0.classifier, .0.list)]
    Mismatch(LiveMismatch),
    /// The base failed the proof run when it was compiled.
    #[error("the base failed its proof when compiled: {0}")]
    Compile(String),
    /// The snapshot's rules are not the list's.
    #[error("the classifier's rules are not its list's: {0}")]
    Rules(String),
    /// The diagrams grew past the manager's node limit.
    #[error("gave up: the decision diagrams passed the size limit")]
    TooLarge,
}

/// The rule list by ascending priority, as many times as asked.
type Rules<'a> = &'a dyn Fn() -> Box<dyn Iterator<Item = (u64, Rule)> + 'a>;

/// Proves a whole snapshot against a rule list (ascending priorities): the base, the rule
/// sets, then every change since the base by its box.
pub fn prove_snapshot(snap: &Snapshot, list: &[(u64, Rule)]) -> Result<Proof, LiveError> {
    full(snap, &|| Box::new(list.iter().copied()), false)
}

/// Proves a snapshot right inside the box of `changed` (a rule inserted or deleted): the
/// whole proof after one update of a snapshot proved before it.
pub fn prove_change(
    snap: &Snapshot,
    list: &[(u64, Rule)],
    changed: &Rule,
) -> Result<(), LiveError> {
    region(snap, &|| Box::new(list.iter().copied()), changed, None)
}

/// What a proof did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Proof {
    /// Whether it was a full proof (the base's structure included, unless the compiling
    /// thread proved it).
    pub full: bool,
    /// Rule boxes lifted and compared.
    pub regions: usize,
}

/// Proves a [`Classifier`] after each update; keeps what it needs to prove only the change
/// next time.
#[derive(Debug, Default)]
pub struct LiveProver {
    /// The snapshot last proved: its base, the classifier's version, its pending counts.
    proved: Option<(u64, u64, usize, usize)>,
    /// Whether this prover installed its proof as the classifier's base check.
    attached: bool,
}

impl LiveProver {
    /// A prover that has proved nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes `c` prove each base it compiles on the thread that compiles it, before the base
    /// is installed (see [`rampart_classify::BaseCheck`]); [`LiveProver::check`] then has only
    /// the changes since the compile left to prove on a new base, and the writer's share of
    /// the work per update drops to proving one rule's box. Bases compiled before (the one in
    /// use now) are still proved in full.
    pub fn attach(&mut self, c: &mut Classifier) {
        c.set_base_check(std::sync::Arc::new(|compiled: &Compiled, rules: &[Rule]| {
            let mut m = rules::manager(Layout::ClassBench);
            prove(&mut m, rules, compiled).map_err(|e| e.to_string())
        }));
        self.attached = true;
    }

    /// Forgets the last proof (the next check is a full one).
    pub fn reset(&mut self) {
        self.proved = None;
    }

    /// Proves that `c`'s current snapshot answers every packet as its rule list does. Call
    /// it after every update and every compile: after exactly one update since the last
    /// proof it lifts only that update's rule box; otherwise it proves the whole snapshot.
    pub fn check(&mut self, c: &Classifier) -> Result<Proof, LiveError> {
        let snap = c.snapshot();
        let now = (snap.base_generation(), c.version(), snap.dead_len(), snap.delta_len());
        let one_step = match self.proved {
            Some((g, v, dead, delta)) => {
                g == now.0 && v + 1 == now.1 && (dead + delta).abs_diff(now.2 + now.3) == 1
            }
            None => false,
        };
        self.proved = None;
        let rules: Rules<'_> = &|| Box::new(c.rules().map(|(p, r)| (p, *r)));
        let proof = match c.last_update() {
            Some((prio, rule, _)) if one_step => {
                region(&snap, rules, &rule, Some(prio))?;
                Proof { full: false, regions: 1 }
            }
            _ => full(&snap, rules, self.attached)?,
        };
        self.proved = Some(now);
        Ok(proof)
    }
}

/// The whole snapshot: the base, the rule sets, each pending change's box.
/// `trust_check`: take a passed base check (this prover's own proof) as the base's proof.
fn full(snap: &Snapshot, rules: Rules<'_>, trust_check: bool) -> Result<Proof, LiveError> {
    let list: Vec<(u64, Rule)> = rules().collect();
    let base = snap.base();
    let base_rules: Vec<Rule> = (0..base.len()).filter_map(|i| base.rule(i)).collect();
    if base_rules.len() != base.len() {
        return Err(LiveError::Rules("the base lost a rule".into()));
    }
    if (1..base.len()).any(|i| snap.base_priority(i - 1) >= snap.base_priority(i)) {
        return Err(LiveError::Rules("the base's rules are not in priority order".into()));
    }
    match snap.base_checked() {
        Some(Ok(())) if trust_check => {}
        Some(Err(why)) if trust_check => return Err(LiveError::Compile(why.clone())),
        _ => {
            let mut m = rules::manager(Layout::ClassBench);
            prove(&mut m, &base_rules, base)?;
        }
    }
    // The live base rules and the inserted ones are the list's rules.
    let mut held: Vec<(u64, Rule)> = (0..base.len())
        .filter(|&i| !snap.is_dead(i))
        .map(|i| (snap.base_priority(i), base_rules[i]))
        .collect();
    for b in snap.delta_buckets() {
        check_bucket(&b)?;
        held.extend(b.rules.iter().copied());
    }
    held.sort_unstable_by_key(|e| e.0);
    if held.len() != list.len() {
        return Err(LiveError::Rules(format!(
            "it holds {} rules, the list {}",
            held.len(),
            list.len()
        )));
    }
    if let Some(k) = (0..held.len()).find(|&k| held[k] != list[k]) {
        return Err(LiveError::Rules(format!(
            "priority {} holds a different rule (or none)",
            held[k].0.min(list[k].0)
        )));
    }
    // Each change since the base, by its box, in the groups it can touch: the base's
    // partitions were each proved against their own rules with every rule live, and a
    // deleted or inserted rule changes only its own group, inside its own box.
    let mut regions = 0;
    let dead: Vec<usize> = snap.dead().collect();
    for i in dead {
        region(snap, rules, &base_rules[i], Some(snap.base_priority(i)))?;
        regions += 1;
    }
    let inserted: Vec<(u64, Rule)> =
        snap.delta_buckets().flat_map(|b| b.rules.iter().copied()).collect();
    for (p, r) in &inserted {
        region(snap, rules, r, Some(*p))?;
        regions += 1;
    }
    Ok(Proof { full: true, regions })
}

/// A bucket's rules are in priority order and its tuple's bound is below them.
fn check_bucket(b: &rampart_classify::DeltaBucket<'_>) -> Result<(), LiveError> {
    let sorted = b.rules.windows(2).all(|w| w[0].0 < w[1].0);
    let bounded = b.rules.first().is_none_or(|e| b.bound <= e.0);
    if sorted && bounded {
        Ok(())
    } else {
        Err(LiveError::Rules(format!("a delta bucket (key {:#x}) is out of order", b.key)))
    }
}

fn overlaps(a: &Rule, b: &Rule) -> bool {
    (0..a.lo.len()).all(|d| a.lo[d] <= b.hi[d] && b.lo[d] <= a.hi[d])
}

/// `a ∩ b`, if not empty.
fn meet(a: &Rule, b: &Rule) -> Option<Rule> {
    let mut r = *a;
    for d in 0..a.lo.len() {
        r.lo[d] = a.lo[d].max(b.lo[d]);
        r.hi[d] = a.hi[d].min(b.hi[d]);
        if r.lo[d] > r.hi[d] {
            return None;
        }
    }
    Some(r)
}

/// The box `b` leading to terminal `t`.
fn cube(m: &mut Manager, b: &Rule, t: u32) -> Id {
    let leaf = m.leaf(t);
    let ranges: Vec<(u32, u32)> = (0..b.lo.len()).map(|d| (b.lo[d], b.hi[d])).collect();
    m.cube(&ranges, leaf)
}

/// Proves the snapshot right on the packets of `area`'s box.
///
/// Group by group, as the full proof does: each partition of the base (its live rules) and
/// the delta must give, inside the box, the first match among their own rules of the list;
/// the lookup's lowest answer over the groups is then the list's first match. A partition's
/// leaf whose hiding last rule is deleted scans the whole base after it; here that scan is
/// taken over the partition's own rules, which leaves the lowest answer over the groups
/// unchanged (a rule of another partition found by the scan is matched by that partition
/// too, at or below it).
///
/// With `changed` (the priority of a change to a snapshot whose groups each held), only the
/// groups that change can touch are lifted: the partition holding a base rule at that
/// priority, the delta, and the list's rules the snapshot lacks; the other groups neither
/// changed nor lost their proof.
fn region(
    snap: &Snapshot,
    rules: Rules<'_>,
    area: &Rule,
    changed: Option<u64>,
) -> Result<(), LiveError> {
    let base = snap.base();
    let parts = base.partitions();
    let (delta_group, missing_group) = (parts, parts + 1);
    let partition_of =
        |i: usize| (0..parts).find(|&p| base.members(p).binary_search(&(i as u32)).is_ok());
    let touched: Vec<usize> = match changed {
        None => (0..parts + 2).collect(),
        Some(prio) => {
            let mut t: Vec<usize> =
                bsearch_base(snap, prio).and_then(partition_of).into_iter().collect();
            t.extend([delta_group, missing_group]);
            t
        }
    };
    // The list's rules meeting the box (no other can answer there).
    let list: Vec<(u64, Rule)> = rules().filter_map(|(p, r)| Some((p, meet(&r, area)?))).collect();
    // The base rules the box reaches, and the deleted hiding rules whose scans it reaches.
    let mut from_base = Vec::new();
    let mut fallback_rules: FxHashMap<usize, Vec<usize>> = FxHashMap::default();
    for p in (0..parts).filter(|p| touched.contains(p)) {
        let mut hiding = Vec::new();
        walk(base, p, area, &mut |leaf, hides| {
            from_base.extend(leaf.iter().map(|&i| i as usize));
            if let (true, Some(&last)) = (hides, leaf.last())
                && snap.is_dead(last as usize)
            {
                hiding.push(last as usize);
            }
        });
        hiding.sort_unstable();
        hiding.dedup();
        for l in hiding {
            let Some(hidden) = base.rule(l).and_then(|r| meet(&r, area)) else { continue };
            let members = base.members(p);
            let after: Vec<usize> = members[members.partition_point(|&i| i as usize <= l)..]
                .iter()
                .map(|&i| i as usize)
                .filter(|&i| {
                    !snap.is_dead(i) && base.rule(i).is_some_and(|r| overlaps(&r, &hidden))
                })
                .collect();
            from_base.extend(after.iter().copied());
            fallback_rules.insert(l, after);
        }
    }
    from_base.sort_unstable();
    from_base.dedup();
    from_base.retain(|&i| !snap.is_dead(i));
    let buckets: Vec<_> = snap.delta_buckets().filter(|b| bucket_box(b, area).is_some()).collect();
    let in_delta: rustc_hash::FxHashSet<u64> =
        snap.delta_buckets().flat_map(|b| b.rules.iter().map(|e| e.0)).collect();
    // Every rule that can answer inside the box, on either side, ranked by priority.
    let mut prios: Vec<u64> = list.iter().map(|(p, _)| *p).collect();
    prios.extend(from_base.iter().map(|&i| snap.base_priority(i)));
    for b in &buckets {
        check_bucket(b)?;
        prios.extend(b.rules.iter().filter(|(_, r)| overlaps(r, area)).map(|e| e.0));
    }
    prios.sort_unstable();
    prios.dedup();
    let rank: FxHashMap<u64, u32> =
        prios.iter().enumerate().map(|(k, &p)| (p, k as u32 + 1)).collect();
    // The group a list rule belongs to in the snapshot.
    let group = |prio: u64| -> usize {
        if in_delta.contains(&prio) {
            return delta_group;
        }
        match bsearch_base(snap, prio) {
            Some(i) if !snap.is_dead(i) => partition_of(i).unwrap_or(missing_group),
            _ => missing_group,
        }
    };
    let groups: Vec<usize> = list.iter().map(|(p, _)| group(*p)).collect();

    let mut m = rules::manager(Layout::ClassBench);
    let lift = Lift { snap, area, rank: &rank, fallback: &fallback_rules };
    let mut lifted_parts = Vec::with_capacity(parts + 2);
    let mut policy_parts = Vec::with_capacity(parts + 2);
    let mut agree = true;
    for &g in &touched {
        let lifted = if g < parts {
            lift.partition(&mut m, g)
        } else if g == delta_group {
            lift_buckets(&mut m, &buckets, area, &rank)
        } else {
            FALSE
        };
        let mut cubes = Vec::new();
        for (k, (p, b)) in list.iter().enumerate() {
            if groups[k] == g {
                cubes.push(cube(&mut m, b, rank[p]));
            }
        }
        let policy = join(&mut m, &cubes);
        if m.exceeded() {
            return Err(LiveError::TooLarge);
        }
        agree &= lifted == policy;
        lifted_parts.push(lifted);
        policy_parts.push(policy);
    }
    if agree {
        return Ok(());
    }
    // Some group differs: compare whole lookups, which is exact.
    let mut lifted = FALSE;
    let mut policy = FALSE;
    for k in 0..touched.len() {
        lifted = m.min(lifted, lifted_parts[k]);
        policy = m.min(policy, policy_parts[k]);
    }
    if m.exceeded() {
        return Err(LiveError::TooLarge);
    }
    if lifted == policy {
        return Ok(());
    }
    let diff = m.neq(lifted, policy);
    let free: Vec<u32> = area.lo.to_vec();
    let packet = m.witness(diff, &|v| v == TRUE, &free).expect("the diagrams differ somewhere");
    let h = Header(std::array::from_fn(|d| packet[d]));
    let all: Vec<(u64, Rule)> = rules().collect();
    let linear: Vec<Rule> = all.iter().map(|e| e.1).collect();
    Err(LiveError::Mismatch(LiveMismatch {
        classifier: snap.classify(&h),
        list: first_match(&linear, &h).map(|k| all[k].0),
        packet,
    }))
}

/// The base rule at priority `prio`, if any (base priorities ascend).
fn bsearch_base(snap: &Snapshot, prio: u64) -> Option<usize> {
    let n = snap.base().len();
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        match snap.base_priority(mid).cmp(&prio) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Some(mid),
        }
    }
    None
}

/// The delta inside the box: each bucket's first match where it is probed, lowest wins.
fn lift_buckets(
    m: &mut Manager,
    buckets: &[rampart_classify::DeltaBucket<'_>],
    area: &Rule,
    rank: &FxHashMap<u64, u32>,
) -> Id {
    let mut lifted = FALSE;
    for b in buckets {
        let Some(bbox) = bucket_box(b, area) else { continue };
        let mut d = FALSE;
        for (p, r) in b.rules.iter().rev() {
            if let Some(x) = meet(r, &bbox) {
                let c = cube(m, &x, rank[p]);
                d = m.first(c, d);
            }
        }
        lifted = m.min(lifted, d);
    }
    lifted
}

/// The packets of `area` a bucket is probed for: its key's addresses, in the box.
fn bucket_box(b: &rampart_classify::DeltaBucket<'_>, area: &Rule) -> Option<Rule> {
    let mut r = Rule::ANY;
    let keys = [(b.key >> 32) as u32, b.key as u32];
    for (d, (key, bits)) in keys.into_iter().zip(b.bits).enumerate() {
        r.lo[d] = key;
        r.hi[d] = key | u32::MAX.checked_shr(bits).unwrap_or(0);
    }
    meet(&r, area)
}

/// Calls `leaf` with the rules of every leaf of partition `p` whose region meets `area`,
/// and whether the leaf's last rule hides the rest of its box.
fn walk(c: &Compiled, p: usize, area: &Rule, leaf: &mut impl FnMut(&[u32], bool)) {
    let mut seen = rustc_hash::FxHashSet::default();
    let mut stack: Vec<u32> = Vec::new();
    match c.start(p) {
        Start::Root(r) => stack.push(r),
        Start::Table { field, shift, slots, .. } => {
            let (lo, hi) = (area.lo[field], area.hi[field]);
            let (first, last) = (slot_of(lo, shift), slot_of(hi, shift));
            stack.extend(slots.iter().take(last + 1).skip(first).map(|&s| s as u32));
        }
        // One region holding every member, in order: the lookup takes the first live member
        // its bitmaps hold.
        Start::Vectors(_) => return leaf(c.members(p), false),
    }
    while let Some(r) = stack.pop() {
        if !seen.insert(r) {
            continue;
        }
        match c.step(p, r) {
            Step::Leaf(list) => leaf(list, c.hides(p, r)),
            Step::Test { field, cuts, kids } => {
                for (k, &kid) in kids.iter().enumerate() {
                    if let Some((lo, hi)) = interval(cuts, k)
                        && lo <= area.hi[field]
                        && area.lo[field] <= hi
                    {
                        stack.push(kid);
                    }
                }
            }
        }
    }
}

fn slot_of(v: u32, shift: u32) -> usize {
    if shift >= 32 { 0 } else { (v >> shift) as usize }
}

/// What lifting a snapshot's base inside one box needs.
struct Lift<'a> {
    snap: &'a Snapshot,
    area: &'a Rule,
    rank: &'a FxHashMap<u64, u32>,
    /// For each deleted rule that hid the rest of a leaf: the live base rules after it that
    /// meet its box (in the area).
    fallback: &'a FxHashMap<usize, Vec<usize>>,
}

impl Lift<'_> {
    /// Partition `p` inside the box, its leaves' live rules ranked.
    fn partition(&self, m: &mut Manager, p: usize) -> Id {
        let c = self.snap.base();
        let mut memo = FxHashMap::default();
        match c.start(p) {
            Start::Root(r) => self.step(m, p, r, &mut memo),
            start @ Start::Table { field, shift, slots, .. } => {
                let area = self.area;
                let (first, last) =
                    (slot_of(area.lo[field], shift), slot_of(area.hi[field], shift));
                // Slot by slot, the values each slot's mask lets through, joined as a
                // balanced merge (one at a time would rebuild an ever wider node per slot).
                let mut pieces = Vec::new();
                for (s, &slot) in slots.iter().enumerate().take(last + 1).skip(first) {
                    let sub = self.step(m, p, slot as u32, &mut memo);
                    for (lo, hi) in start.slot_ranges(s) {
                        let piece = restrict(m, field, lo, hi, sub, FALSE);
                        if piece != FALSE {
                            pieces.push(piece);
                        }
                    }
                }
                join(m, &pieces)
            }
            Start::Vectors(v) => {
                let members = c.members(p);
                let regions = vector_regions(&v, FIELDS, members.len());
                let mut d = FALSE;
                for (k, region) in regions.iter().enumerate().rev() {
                    let i = members[k] as usize;
                    if self.snap.is_dead(i) {
                        continue;
                    }
                    let then = m.leaf(self.rank[&self.snap.base_priority(i)]);
                    let here = region_dd(m, region, Some(self.area), then);
                    d = m.first(here, d);
                }
                d
            }
        }
    }

    /// Base rule `i` inside the box, ranked (FALSE when it misses the box).
    fn rule(&self, m: &mut Manager, i: usize) -> Id {
        let rule = self.snap.base().rule(i).expect("a leaf names base rules");
        match meet(&rule, self.area) {
            Some(b) => cube(m, &b, self.rank[&self.snap.base_priority(i)]),
            None => FALSE,
        }
    }

    fn step(&self, m: &mut Manager, p: usize, r: u32, memo: &mut FxHashMap<u32, Id>) -> Id {
        if let Some(&d) = memo.get(&r) {
            return d;
        }
        let c = self.snap.base();
        let d = match c.step(p, r) {
            Step::Leaf(list) => {
                // A lookup takes the first live rule of the leaf that matches; where the last
                // rule hid the rest of its box and is deleted, it scans the base after it.
                let mut d = FALSE;
                if let (true, Some(&last)) = (c.hides(p, r), list.last())
                    && self.snap.is_dead(last as usize)
                {
                    let hidden = self.rule_box(m, last as usize);
                    let mut rest = FALSE;
                    let after = self.fallback.get(&(last as usize)).map_or(&[][..], |v| v);
                    for &i in after.iter().rev() {
                        let x = self.rule(m, i);
                        rest = m.first(x, rest);
                    }
                    d = m.mask(hidden, rest);
                }
                for &i in list.iter().rev() {
                    if self.snap.is_dead(i as usize) {
                        continue;
                    }
                    let here = self.rule(m, i as usize);
                    d = m.first(here, d);
                }
                d
            }
            Step::Test { field, cuts, kids } => {
                let mut d = FALSE;
                for (k, &kid) in kids.iter().enumerate() {
                    let Some((lo, hi)) = interval(cuts, k) else { continue };
                    if hi < self.area.lo[field] || lo > self.area.hi[field] {
                        continue;
                    }
                    let sub = self.step(m, p, kid, memo);
                    d = restrict(m, field, lo, hi, sub, d);
                }
                d
            }
        };
        memo.insert(r, d);
        d
    }

    /// The packets of base rule `i`'s box (as a set: TRUE inside).
    fn rule_box(&self, m: &mut Manager, i: usize) -> Id {
        let rule = self.snap.base().rule(i).expect("a leaf names base rules");
        cube(m, &rule, 1)
    }
}

/// A [`LiveProver`] as the check after each update of
/// [`rampart_classify::bench::updates`]: attached to the classifier's compiles, and whole
/// proofs told apart from proofs by one rule's box.
impl rampart_classify::bench::UpdateCheck for LiveProver {
    type Error = LiveError;

    fn attach(&mut self, c: &mut Classifier) {
        LiveProver::attach(self, c);
    }

    fn check(&mut self, c: &Classifier) -> Result<bool, LiveError> {
        LiveProver::check(self, c).map(|p| p.full)
    }
}
