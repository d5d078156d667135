//! A classifier that takes updates while lookups go on: a compiled base, rebuilt in the
//! background, plus the changes made since it was built.
//!
//! Readers see an immutable [`Snapshot`] through an [`ArcSwap`]: the compiled base (shared),
//! the base rules deleted since (tombstones, a persistent set), and the rules inserted since
//! (the delta: a tuple space over persistent maps, see `delta.rs`). An update makes a new
//! snapshot that shares the base, copies one path of one persistent map, and swaps it in:
//! visible to the next lookup, never blocking one, at a cost that does not grow with the
//! number of changes pending. Once the changes pass a threshold, the classifier's compiling
//! thread (started at the first need, ended with the classifier) compiles the whole rule list
//! from a constant-time copy of the persistent list; installing its result replays the changes
//! made while it ran onto fresh structures, and the snapshot it replaces is dropped on that
//! thread, so freeing an old base never costs the writer.

use std::sync::Arc;
use std::sync::mpsc;
use std::thread::JoinHandle;

use arc_swap::ArcSwap;

use crate::compiled::Compiled;
use crate::delta::{Delta, DeltaBucket, KeyHasher};
use crate::rule::{Header, Rule};

type Tombstones = imbl::GenericHashSet<
    u32,
    std::hash::BuildHasherDefault<KeyHasher>,
    imbl::shared_ptr::DefaultSharedPtr,
>;

/// Changes since the base that start a background compile.
const COMPILE_AFTER: usize = 64;

/// A check run on every base compiled after it is set, on the thread that compiled it and
/// before the base is installed: given the structure and the rules it was compiled from (in
/// priority order), `Ok` or why not. The policy verifier proves the structure here, so that
/// the writer only has the changes since left to prove.
pub type BaseCheck = Arc<dyn Fn(&Compiled, &[Rule]) -> Result<(), String> + Send + Sync>;

/// A compiled base and the priority of each of its rules.
struct Base {
    compiled: Compiled,
    prio: Vec<u64>,
    /// Distinct for every base ever built in the process.
    generation: u64,
    /// What the base check said, if one ran.
    checked: Option<Result<(), String>>,
}

impl std::fmt::Debug for Base {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Base")
            .field("rules", &self.prio.len())
            .field("generation", &self.generation)
            .field("checked", &self.checked)
            .finish()
    }
}

/// Bases built so far (for [`Snapshot::base_generation`]).
static GENERATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Base {
    fn new(list: &[(u64, Rule)], check: Option<&BaseCheck>) -> Self {
        let rules: Vec<Rule> = list.iter().map(|(_, r)| *r).collect();
        let compiled = Compiled::new(&rules);
        let checked = check.map(|f| f(&compiled, &rules));
        Self {
            compiled,
            prio: list.iter().map(|(p, _)| *p).collect(),
            generation: GENERATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            checked,
        }
    }
}

/// What lookups see: never changed once published.
#[derive(Debug, Clone)]
pub struct Snapshot {
    base: Arc<Base>,
    /// Base indices deleted since the base was built.
    dead: Tombstones,
    /// Rules inserted since.
    delta: Delta,
}

impl Snapshot {
    /// The priority of the first live rule matching `h`.
    #[inline]
    pub fn classify(&self, h: &Header) -> Option<u64> {
        let dead = &self.dead;
        let base = if dead.is_empty() {
            self.base.compiled.classify(h)
        } else {
            self.base.compiled.classify_live(h, |i| !dead.contains(&i))
        };
        let best = base.map(|i| self.base.prio[i]);
        if self.delta.len() == 0 { best } else { self.delta.classify(h, best) }
    }

    /// The compiled base (read-only, for the verifier): base rule `i` is `base().rule(i)`.
    pub fn base(&self) -> &Compiled {
        &self.base.compiled
    }

    /// The priority of base rule `i`.
    pub fn base_priority(&self, i: usize) -> u64 {
        self.base.prio[i]
    }

    /// What the base check said of this snapshot's base (`None`: no check ran on it).
    pub fn base_checked(&self) -> Option<&Result<(), String>> {
        self.base.checked.as_ref()
    }

    /// Which base this snapshot has: distinct for every base built in the process.
    pub fn base_generation(&self) -> u64 {
        self.base.generation
    }

    /// Whether base rule `i` has been deleted since the base was built (lookups skip it).
    pub fn is_dead(&self, i: usize) -> bool {
        u32::try_from(i).is_ok_and(|i| self.dead.contains(&i))
    }

    /// The base rules deleted since the base was built.
    pub fn dead(&self) -> impl Iterator<Item = usize> + '_ {
        self.dead.iter().map(|&i| i as usize)
    }

    /// Base rules deleted since the base was built.
    pub fn dead_len(&self) -> usize {
        self.dead.len()
    }

    /// Rules inserted since the base was built.
    pub fn delta_len(&self) -> usize {
        self.delta.len()
    }

    /// The inserted rules' buckets (see [`DeltaBucket`] for what a lookup does with them).
    pub fn delta_buckets(&self) -> impl Iterator<Item = DeltaBucket<'_>> {
        self.delta.buckets()
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
    /// A persistent ordered map: a background compile takes a copy in constant time.
    list: imbl::OrdMap<u64, Rule>,
    /// The compiling thread, started at the first background compile.
    worker: Option<Worker>,
    /// A compile has been asked of the worker and not installed yet.
    compiling: bool,
    /// Changes made since the running compile took its copy of the list.
    log: Vec<Change>,
    /// Pending changes that start a background compile.
    compile_after: usize,
    /// Updates made so far.
    version: u64,
    /// The last update: its priority, its rule, and whether it was an insert.
    last: Option<(u64, Rule, bool)>,
    /// Run on each base compiled.
    check: Option<BaseCheck>,
}

impl Classifier {
    /// Compiles `rules` (priority = position) and publishes them.
    pub fn new(rules: &[Rule]) -> Self {
        let list: Vec<(u64, Rule)> =
            rules.iter().enumerate().map(|(i, r)| ((i as u64) << 20, *r)).collect();
        let base = Arc::new(Base::new(&list, None));
        let snap = Snapshot { base, dead: Tombstones::default(), delta: Delta::default() };
        Self {
            shared: Arc::new(ArcSwap::from_pointee(snap)),
            list: list.into_iter().collect(),
            worker: None,
            compiling: false,
            log: Vec::new(),
            compile_after: COMPILE_AFTER,
            version: 0,
            last: None,
            check: None,
        }
    }

    /// The priority `new` gave rule `i` (rules are spaced so others fit between them).
    pub fn initial_priority(i: usize) -> u64 {
        (i as u64) << 20
    }

    /// Sets how many changes (tombstones plus inserted rules) may pend before a background
    /// compile starts (default 64; `usize::MAX`: only [`Classifier::compile`] compiles).
    pub fn set_compile_after(&mut self, changes: usize) {
        self.compile_after = changes.max(1);
    }

    /// The snapshot lookups see now.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.shared.load_full()
    }

    /// Updates made so far (inserts and deletes; compiles do not count).
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The last update: its priority, the rule inserted or deleted, and whether it was an
    /// insert.
    pub fn last_update(&self) -> Option<(u64, Rule, bool)> {
        self.last
    }

    /// Changes pending in the current snapshot: base rules deleted plus rules inserted since
    /// the base was compiled.
    pub fn pending(&self) -> usize {
        let s = self.shared.load();
        s.dead.len() + s.delta.len()
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
        self.last = Some((prio, rule, true));
        let mut s = Snapshot::clone(&self.shared.load());
        s.delta.insert(prio, rule);
        self.publish(s, Change::Insert(prio));
        Ok(())
    }

    /// Removes the rule at priority `prio`; visible to the next lookup.
    pub fn delete(&mut self, prio: u64) -> Result<Rule, UpdateError> {
        let rule = self.list.remove(&prio).ok_or(UpdateError::Missing(prio))?;
        self.last = Some((prio, rule, false));
        let mut s = Snapshot::clone(&self.shared.load());
        remove(&mut s, prio, &rule);
        self.publish(s, Change::Delete(prio));
        Ok(rule)
    }

    fn publish(&mut self, s: Snapshot, change: Change) {
        self.version += 1;
        let pending = s.dead.len() + s.delta.len();
        // The replaced snapshot shares this one's base: dropping it is cheap.
        self.shared.store(Arc::new(s));
        if self.compiling {
            self.log.push(change);
        }
        self.poll();
        if pending >= self.compile_after && !self.compiling {
            // A copy of the persistent list costs a pointer; the worker turns it into rules.
            if self.worker.is_none() {
                self.worker = Worker::start();
            }
            match &self.worker {
                Some(w) => {
                    w.send(Job::Compile(self.list.clone(), self.check.clone()));
                    self.compiling = true;
                }
                // No thread to be had: compile here, lookups go on meanwhile.
                None => self.compile(),
            }
        }
    }

    /// Drops a snapshot replaced by a new base on the worker when there is one: if it held
    /// the last reference to the old base, freeing that is the worker's time, not the
    /// writer's.
    fn retire(&mut self, old: Arc<Snapshot>) {
        match &self.worker {
            Some(w) => w.send(Job::Drop(old)),
            None => drop(old),
        }
    }

    /// Installs a finished background compile, if there is one; true if it did.
    pub fn poll(&mut self) -> bool {
        if !self.compiling {
            return false;
        }
        let Some(base) = self.worker.as_ref().and_then(|w| w.done.try_recv().ok()) else {
            return false;
        };
        self.compiling = false;
        self.install(base);
        true
    }

    /// Compiles the whole list now (on this thread; lookups go on meanwhile) and installs it.
    pub fn compile(&mut self) {
        if self.compiling {
            // Wait for the running compile and throw it away: it is older than the list.
            let _ = self.worker.as_ref().map(|w| w.done.recv());
            self.compiling = false;
        }
        self.log.clear();
        let list: Vec<(u64, Rule)> = self.list.iter().map(|(p, r)| (*p, *r)).collect();
        let base = Base::new(&list, self.check.as_ref());
        self.install(base);
    }

    /// Runs `check` on every base compiled from now on, before it is installed (see
    /// [`BaseCheck`]); the base in use now is not checked.
    pub fn set_base_check(&mut self, check: BaseCheck) {
        self.check = Some(check);
    }

    /// Publishes `base` with the rules changed since its list was taken brought up to date:
    /// each touched priority is compared between the base and the list now.
    fn install(&mut self, base: Base) {
        let mut s =
            Snapshot { base: Arc::new(base), dead: Tombstones::default(), delta: Delta::default() };
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
                s.dead.insert(i as u32);
            }
            if let Some(r) = now {
                s.delta.insert(p, *r);
            }
        }
        let old = self.shared.swap(Arc::new(s));
        self.retire(old);
    }

    /// Whether a background compile is running.
    pub fn is_compiling(&self) -> bool {
        self.compiling
    }
}

/// Work for the compiling thread.
enum Job {
    /// Compile this list (and check the result).
    Compile(imbl::OrdMap<u64, Rule>, Option<BaseCheck>),
    /// Drop this (a replaced snapshot).
    Drop(Arc<Snapshot>),
}

/// The compiling thread of one classifier: jobs in order, bases back. It ends when the
/// classifier is dropped.
struct Worker {
    jobs: Option<mpsc::Sender<Job>>,
    done: mpsc::Receiver<Base>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// The thread, or `None` when the system will not start one.
    fn start() -> Option<Self> {
        let (jobs, rx) = mpsc::channel::<Job>();
        let (tx, done) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("rampart-compile".into())
            .spawn(move || {
                for job in rx {
                    match job {
                        Job::Compile(list, check) => {
                            let list: Vec<(u64, Rule)> =
                                list.iter().map(|(p, r)| (*p, *r)).collect();
                            if tx.send(Base::new(&list, check.as_ref())).is_err() {
                                return;
                            }
                        }
                        Job::Drop(old) => drop(old),
                    }
                }
            })
            .ok()?;
        Some(Self { jobs: Some(jobs), done, thread: Some(thread) })
    }

    fn send(&self, job: Job) {
        // The thread only ends once `jobs` is dropped, so the send cannot fail.
        if let Some(j) = &self.jobs {
            let _ = j.send(job);
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Takes the rule at `prio` (which is `rule`) out of a snapshot: out of the delta if it was
/// inserted since the base (it may also be a base rule deleted and inserted again), else a
/// tombstone for the base rule.
fn remove(s: &mut Snapshot, prio: u64, rule: &Rule) {
    if s.delta.remove(prio, rule) {
        return;
    }
    if let Ok(i) = s.base.prio.binary_search(&prio) {
        s.dead.insert(i as u32);
    }
}
