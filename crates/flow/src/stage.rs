//! The one shape of a stage that keeps per-flow state beside the [`FlowTable`](crate::FlowTable).
//!
//! RTT matching, application identification and (next) connection tracking each keep state
//! per flow, indexed by the table's [`FlowId`]. They all see a packet the same way (its flow's
//! id, whether the packet started the flow, its [`Dir`]ection, the record after the packet was
//! counted), give back what the packet produced, hand over a summary when the flow ends, and
//! count into statistics that add up across workers. The pipeline that strings them together
//! calls each one by name (a struct of stages, not a list of trait objects), so the hot loop
//! inlines; the trait is the contract each stage is written and tested against.

use std::ops::AddAssign;

use crate::{Dir, Flow, FlowId, Side};

/// What a per-flow stage is told about the flow of the packet it observes.
#[derive(Clone, Copy, Debug)]
pub struct FlowCtx<'a> {
    /// The flow's id: the stage's index for its state.
    pub id: FlowId,
    /// This packet started the flow (in a slot that may have held another one: reset it).
    pub new: bool,
    /// The packet's direction relative to the initiator.
    pub dir: Dir,
    /// Which endpoint of the key sent it.
    pub side: Side,
    /// The flow's record, with this packet counted.
    pub flow: &'a Flow,
    /// The packet's capture time.
    pub ts: rampart_wire::Timestamp,
}

/// A stage that keeps state per flow beside the flow table.
pub trait SideStage {
    /// The stage's part of one packet (made once by the parser).
    type Input<'a>;
    /// What a packet can produce at once (an RTT sample, a state change).
    type Output;
    /// What the stage adds to a flow's record when the flow ends.
    type Summary;
    /// The stage's counters; those of several workers add up.
    type Stats: Default + Copy + AddAssign;

    /// One packet of a live flow.
    fn observe(&mut self, f: &FlowCtx<'_>, input: Self::Input<'_>) -> Option<Self::Output>;

    /// The flow `id` has ended (its record as it stood is `flow`): its summary, and its state
    /// released before the id can start another flow.
    fn retire(&mut self, id: FlowId, flow: &Flow) -> Self::Summary;

    /// The counters so far.
    fn stats(&self) -> Self::Stats;

    /// Bytes the stage holds now.
    fn memory_bytes(&self) -> usize;

    /// Makes room for the state of flow ids below `flows` at once (address space, not
    /// memory: nothing is touched), so that no store is grown and copied later while
    /// packets wait; a live capture asks for its table's bound at start. Nothing by default.
    fn reserve(&mut self, flows: usize) {
        let _ = flows;
    }
}

/// Flow ids per chunk of a [`PerFlow`] store.
const PER_FLOW_CHUNK: usize = 4096;

/// A side stage's state indexed by [`FlowId`], in chunks of 4,096 ids. Each
/// chunk reserves room for all its ids when made and is filled only as far as the highest id
/// seen, so a state never moves once made: a store that grows to a million flows never copies
/// what it holds (a vector growing by doubling copies it all, into memory the kernel must
/// first fault in and zero, while packets wait), and a run of a few flows touches only their
/// states.
#[derive(Clone, Debug, Default)]
pub struct PerFlow<T> {
    chunks: Vec<Vec<T>>,
}

impl<T: Default + Clone> PerFlow<T> {
    /// An empty store.
    pub fn new() -> Self {
        Self { chunks: Vec::new() }
    }

    /// The state of flow `id`, if it was made.
    #[inline]
    pub fn get(&self, id: u32) -> Option<&T> {
        let i = id as usize;
        self.chunks.get(i / PER_FLOW_CHUNK)?.get(i % PER_FLOW_CHUNK)
    }

    /// The state of flow `id`, if it was made.
    #[inline]
    pub fn get_mut(&mut self, id: u32) -> Option<&mut T> {
        let i = id as usize;
        self.chunks.get_mut(i / PER_FLOW_CHUNK)?.get_mut(i % PER_FLOW_CHUNK)
    }

    /// The state of flow `id`, making those up to it (`T::default()`) first.
    #[inline]
    pub fn get_or_grow(&mut self, id: u32) -> &mut T {
        let (c, j) = (id as usize / PER_FLOW_CHUNK, id as usize % PER_FLOW_CHUNK);
        if self.chunks.get(c).is_some_and(|chunk| j < chunk.len()) {
            return &mut self.chunks[c][j];
        }
        self.grow(c, j)
    }

    #[cold]
    fn grow(&mut self, c: usize, j: usize) -> &mut T {
        while self.chunks.len() <= c {
            if let Some(last) = self.chunks.last_mut() {
                last.resize(PER_FLOW_CHUNK, T::default());
            }
            self.chunks.push(Vec::with_capacity(PER_FLOW_CHUNK));
        }
        let chunk = &mut self.chunks[c];
        if chunk.len() <= j {
            // Within the room reserved when the chunk was made: nothing moves.
            chunk.resize(j + 1, T::default());
        }
        &mut chunk[j]
    }

    /// Ids whose state was made.
    pub fn len(&self) -> usize {
        self.chunks.last().map_or(0, |last| (self.chunks.len() - 1) * PER_FLOW_CHUNK + last.len())
    }

    /// Whether no state was made.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of the states made (a chunk's room beyond them is address space, untouched).
    pub fn memory_bytes(&self) -> usize {
        self.len() * std::mem::size_of::<T>()
            + self.chunks.capacity() * std::mem::size_of::<Vec<T>>()
    }

    /// Makes room for the chunk list of ids below `flows` (the chunks themselves are made as
    /// ids reach them).
    pub fn reserve(&mut self, flows: usize) {
        self.chunks.reserve_exact(flows.div_ceil(PER_FLOW_CHUNK).saturating_sub(self.chunks.len()));
    }

    /// Every made state, in id order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flatten()
    }

    /// Every made state, in id order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.chunks.iter_mut().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_flow_state_grows_by_chunks_without_moving() {
        let mut s: PerFlow<u64> = PerFlow::new();
        assert_eq!((s.get(0), s.len(), s.is_empty()), (None, 0, true));
        *s.get_or_grow(5) = 7;
        assert_eq!(s.len(), 6, "only the ids up to the highest are made");
        let first: *const u64 = s.get(5).unwrap();
        *s.get_or_grow(100) = 8;
        let last = 3 * PER_FLOW_CHUNK as u32 + 1;
        *s.get_or_grow(last) = 9;
        assert_eq!(s.len(), last as usize + 1);
        // Nothing moved, nothing was lost.
        assert_eq!(s.get(5).unwrap() as *const u64, first);
        assert_eq!((s.get(5), s.get(100), s.get(last)), (Some(&7), Some(&8), Some(&9)));
        assert_eq!(s.get(PER_FLOW_CHUNK as u32), Some(&0));
        assert_eq!(s.get(last + 1), None);
        assert_eq!(s.get_mut(4 * PER_FLOW_CHUNK as u32), None);
        assert_eq!(s.iter_mut().filter(|v| **v != 0).count(), 3);
        assert_eq!(s.iter().count(), s.len());
        assert!(s.memory_bytes() >= s.len() * 8);
    }
}
