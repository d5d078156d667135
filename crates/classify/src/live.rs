//! A classifier that takes updates while lookups go on: a compiled base, rebuilt in the
//! background, plus the changes made since it was built.
//!
//! Readers see an immutable [`Snapshot`] through an [`ArcSwap`]: the compiled base (shared),
//! the base rules deleted since (tombstones), and the rules inserted since (the delta, kept in
//! priority order). An update makes a new snapshot that shares the base and copies the two
//! short lists, and swaps it in: visible to the next lookup, never blocking one. Once the
//! lists grow past a threshold, a background thread compiles the whole rule list; installing
//! its result replays the changes made while it ran onto fresh lists.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread::JoinHandle;

use arc_swap::ArcSwap;

use crate::compiled::Compiled;
use crate::rule::{Header, Rule};

/// Changes since the base that start a background compile.
const COMPILE_AFTER: usize = 64;

/// A compiled base and the priority of each of its rules.
#[derive(Debug)]
struct Base {
    compiled: Compiled,
    prio: Vec<u64>,
}

impl Base {
    fn new(list: &[(u64, Rule)]) -> Self {
        let rules: Vec<Rule> = list.iter().map(|(_, r)| *r).collect();
        Self { compiled: Compiled::new(&rules), prio: list.iter().map(|(p, _)| *p).collect() }
    }
}

/// What lookups see: never changed once published.
#[derive(Debug, Clone)]
pub struct Snapshot {
    base: Arc<Base>,
    /// Base indices deleted since the base was built, ascending.
    dead: Vec<u32>,
    /// Rules inserted since, by priority.
    delta: Vec<(u64, Rule)>,
}

impl Snapshot {
    /// The priority of the first live rule matching `h`.
    #[inline]
    pub fn classify(&self, h: &Header) -> Option<u64> {
        let dead = &self.dead;
        let base = if dead.is_empty() {
            self.base.compiled.classify(h)
        } else {
            self.base.compiled.classify_live(h, |i| dead.binary_search(&i).is_err())
        };
        let mut best = base.map(|i| self.base.prio[i]);
        for (p, r) in &self.delta {
            if best.is_some_and(|b| *p >= b) {
                break;
            }
            if r.matches(h) {
                best = Some(*p);
                break;
            }
        }
        best
    }

    /// Classifies a batch (one snapshot for all of it).
    pub fn classify_batch(&self, headers: &[Header], out: &mut [Option<u64>]) {
        for (h, o) in headers.iter().zip(out) {
            *o = self.classify(h);
        }
    }
}

/// A lookup handle for any thread.
#[derive(Clone, Debug)]
pub struct Reader {
    shared: Arc<ArcSwap<Snapshot>>,
}

impl Reader {
    /// The current snapshot (take one per batch).
    pub fn snapshot(&self) -> arc_swap::Guard<Arc<Snapshot>> {
        self.shared.load()
    }

    /// The priority of the first rule matching `h` now.
    pub fn classify(&self, h: &Header) -> Option<u64> {
        self.shared.load().classify(h)
    }
}

/// An update logged while a compile runs (only the priority matters: see `install`).
#[derive(Clone, Copy, Debug)]
enum Change {
    Insert(u64),
    Delete(u64),
}

/// Why an update was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpdateError {
    /// Priorities are unique.
    #[error("a rule with priority {0} already exists")]
    Exists(u64),
    /// Deleting what is not there.
    #[error("no rule with priority {0}")]
    Missing(u64),
}

/// The writer: owns the rule list, publishes snapshots. One per rule set.
pub struct Classifier {
    shared: Arc<ArcSwap<Snapshot>>,
    list: BTreeMap<u64, Rule>,
    compiling: Option<JoinHandle<Base>>,
    /// Changes made since the running compile took its copy of the list.
    log: Vec<Change>,
}

impl Classifier {
    /// Compiles `rules` (priority = position) and publishes them.
    pub fn new(rules: &[Rule]) -> Self {
        let list: Vec<(u64, Rule)> =
            rules.iter().enumerate().map(|(i, r)| ((i as u64) << 20, *r)).collect();
        let base = Arc::new(Base::new(&list));
        let snap = Snapshot { base, dead: Vec::new(), delta: Vec::new() };
        Self {
            shared: Arc::new(ArcSwap::from_pointee(snap)),
            list: list.into_iter().collect(),
            compiling: None,
            log: Vec::new(),
        }
    }

    /// The priority `new` gave rule `i` (rules are spaced so others fit between them).
    pub fn initial_priority(i: usize) -> u64 {
        (i as u64) << 20
    }

    /// A lookup handle.
    pub fn reader(&self) -> Reader {
        Reader { shared: Arc::clone(&self.shared) }
    }

    /// The rules, by priority (the model every lookup must agree with).
    pub fn rules(&self) -> impl Iterator<Item = (u64, &Rule)> {
        self.list.iter().map(|(p, r)| (*p, r))
    }

    /// Adds a rule at priority `prio` (lower = earlier); visible to the next lookup.
    pub fn insert(&mut self, prio: u64, rule: Rule) -> Result<(), UpdateError> {
        if self.list.contains_key(&prio) {
            return Err(UpdateError::Exists(prio));
        }
        self.list.insert(prio, rule);
        let mut s = Snapshot::clone(&self.shared.load());
        let at = s.delta.partition_point(|(p, _)| *p < prio);
        s.delta.insert(at, (prio, rule));
        self.publish(s, Change::Insert(prio));
        Ok(())
    }

    /// Removes the rule at priority `prio`; visible to the next lookup.
    pub fn delete(&mut self, prio: u64) -> Result<Rule, UpdateError> {
        let rule = self.list.remove(&prio).ok_or(UpdateError::Missing(prio))?;
        let mut s = Snapshot::clone(&self.shared.load());
        remove(&mut s, prio);
        self.publish(s, Change::Delete(prio));
        Ok(rule)
    }

    fn publish(&mut self, s: Snapshot, change: Change) {
        let pending = s.dead.len() + s.delta.len();
        self.shared.store(Arc::new(s));
        if self.compiling.is_some() {
            self.log.push(change);
        }
        self.poll();
        if pending >= COMPILE_AFTER && self.compiling.is_none() {
            let list: Vec<(u64, Rule)> = self.list.iter().map(|(p, r)| (*p, *r)).collect();
            self.compiling = Some(std::thread::spawn(move || Base::new(&list)));
        }
    }

    /// Installs a finished background compile, if there is one; true if it did.
    pub fn poll(&mut self) -> bool {
        if !self.compiling.as_ref().is_some_and(JoinHandle::is_finished) {
            return false;
        }
        let base = self.compiling.take().expect("checked").join().expect("compiling panicked");
        self.install(base);
        true
    }

    /// Compiles the whole list now (on this thread; lookups go on meanwhile) and installs it.
    pub fn compile(&mut self) {
        if let Some(h) = self.compiling.take() {
            let _ = h.join();
        }
        self.log.clear();
        let list: Vec<(u64, Rule)> = self.list.iter().map(|(p, r)| (*p, *r)).collect();
        self.install(Base::new(&list));
    }

    /// Publishes `base` with the rules changed since its list was taken brought up to date:
    /// each touched priority is compared between the base and the list now.
    fn install(&mut self, base: Base) {
        let mut s = Snapshot { base: Arc::new(base), dead: Vec::new(), delta: Vec::new() };
        let mut touched: Vec<u64> = std::mem::take(&mut self.log)
            .into_iter()
            .map(|c| match c {
                Change::Insert(p) | Change::Delete(p) => p,
            })
            .collect();
        touched.sort_unstable();
        touched.dedup();
        for p in touched {
            let old = s.base.prio.binary_search(&p).ok();
            let now = self.list.get(&p);
            let same = match (old, now) {
                (Some(i), Some(r)) => s.base.compiled.rule(i) == Some(*r),
                _ => false,
            };
            if same {
                continue;
            }
            if let Some(i) = old {
                s.dead.push(i as u32);
            }
            if let Some(r) = now {
                s.delta.push((p, *r));
            }
        }
        s.dead.sort_unstable();
        self.shared.store(Arc::new(s));
    }

    /// Whether a background compile is running.
    pub fn is_compiling(&self) -> bool {
        self.compiling.is_some()
    }
}

/// Takes the rule at `prio` out of a snapshot: a tombstone if it is in the base, else out of
/// the delta.
fn remove(s: &mut Snapshot, prio: u64) {
    if let Ok(i) = s.base.prio.binary_search(&prio) {
        let i = i as u32;
        if let Err(at) = s.dead.binary_search(&i) {
            s.dead.insert(at, i);
        }
    } else if let Ok(at) = s.delta.binary_search_by_key(&prio, |(p, _)| *p) {
        s.delta.remove(at);
    }
}
