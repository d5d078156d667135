//! Counters published for a reader on another thread (the `--metrics` endpoint), without
//! sharing anything on the packet path.
//!
//! Every thread that counts (the reading thread, each worker) keeps its own plain
//! [`Summary`] as it always does and holds a [`Slot`] of the run's [`Board`]. At batch
//! boundaries it asks [`Slot::due`] (one clock read per batch) and, at most once per the
//! board's interval, copies its counters into the slot under the slot's own lock (a
//! `clone_from`, which reuses the slot's allocation). A reader calls [`Board::total`], which
//! sums the slots at that moment. When the run ends, [`Board::finish`] replaces every slot
//! with the run's final summary at once, so a reader never sees a counter go back or count
//! twice.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::Summary;

/// Locks a mutex whatever a panicking holder left (counters are plain numbers: a partly
/// updated copy is still a copy of counters).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[derive(Default)]
struct Slots {
    each: Vec<Arc<Mutex<Summary>>>,
    /// The run's final summary, once it has ended.
    done: Option<Summary>,
}

/// A run's published counters: one slot per counting thread, summed when read. Cloning gives
/// another handle on the same board.
#[derive(Clone)]
pub struct Board {
    slots: Arc<Mutex<Slots>>,
    every: Duration,
}

impl fmt::Debug for Board {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Board").field("every", &self.every).finish_non_exhaustive()
    }
}

impl Board {
    /// A board whose slots are refreshed at most once per `every`.
    pub fn new(every: Duration) -> Self {
        Self { slots: Arc::default(), every }
    }

    /// A new slot for one counting thread, empty until it publishes.
    pub fn slot(&self) -> Slot {
        let shared = Arc::new(Mutex::new(Summary::default()));
        lock(&self.slots).each.push(Arc::clone(&shared));
        Slot { shared, next: Instant::now(), every: self.every }
    }

    /// The sum of what every slot holds now, or the final summary once the run has ended.
    pub fn total(&self) -> Summary {
        let slots = lock(&self.slots);
        if let Some(done) = &slots.done {
            return done.clone();
        }
        let mut t = Summary::default();
        for s in &slots.each {
            t.add(&lock(s));
        }
        t
    }

    /// The run has ended with `total`: readers see it from now on, whatever the slots hold.
    pub fn finish(&self, total: &Summary) {
        lock(&self.slots).done = Some(total.clone());
    }

    /// Whether [`Board::finish`] was called.
    pub fn finished(&self) -> bool {
        lock(&self.slots).done.is_some()
    }
}

/// One counting thread's place on a [`Board`].
pub struct Slot {
    shared: Arc<Mutex<Summary>>,
    next: Instant,
    every: Duration,
}

impl Slot {
    /// Whether the board's interval has passed since the last publication.
    #[inline]
    pub fn due(&self) -> bool {
        Instant::now() >= self.next
    }

    /// Publishes: `fill` writes the thread's counters into the slot's copy (which holds the
    /// previous publication).
    pub fn publish(&mut self, fill: impl FnOnce(&mut Summary)) {
        fill(&mut lock(&self.shared));
        self.next = Instant::now() + self.every;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_sum_and_the_final_summary_replaces_them() {
        let board = Board::new(Duration::ZERO);
        let (mut a, mut b) = (board.slot(), board.slot());
        assert!(a.due());
        a.publish(|s| s.packets = 3);
        b.publish(|s| {
            s.packets = 4;
            s.problems[0] = 1;
        });
        let t = board.total();
        assert_eq!((t.packets, t.problems[0]), (7, 1));
        let end = Summary { packets: 9, ..Summary::default() };
        board.finish(&end);
        b.publish(|s| s.packets = 100);
        assert_eq!(board.total().packets, 9);
        assert!(board.finished());
    }

    #[test]
    fn a_slot_is_not_due_within_the_interval() {
        let board = Board::new(Duration::from_secs(3600));
        let mut a = board.slot();
        a.publish(|s| s.packets = 1);
        assert!(!a.due());
    }
}
