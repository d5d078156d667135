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

/// A side stage's state indexed by [`FlowId`](crate::FlowId), grown a chunk of 4,096 ids at a
/// time. A chunk is never moved once made, so a store that grows to a million flows never
/// copies what it holds (a vector growing by doubling copies it all, into memory the kernel
/// must first fault in and zero, while packets wait).
#[derive(Clone, Debug, Default)]
pub struct PerFlow<T> {
    chunks: Vec<Box<[T; PER_FLOW_CHUNK]>>,
}

impl<T: Default + Clone> PerFlow<T> {
    /// An empty store.
    pub fn new() -> Self {
        Self { chunks: Vec::new() }
    }

    /// The state of flow `id`, if its chunk was made.
    #[inline]
    pub fn get(&self, id: u32) -> Option<&T> {
        let i = id as usize;
        self.chunks.get(i / PER_FLOW_CHUNK).map(|c| &c[i % PER_FLOW_CHUNK])
    }

    /// The state of flow `id`, if its chunk was made.
    #[inline]
    pub fn get_mut(&mut self, id: u32) -> Option<&mut T> {
        let i = id as usize;
        self.chunks.get_mut(i / PER_FLOW_CHUNK).map(|c| &mut c[i % PER_FLOW_CHUNK])
    }

    /// The state of flow `id`, making the chunks up to its own (their states `T::default()`).
    #[inline]
    pub fn get_or_grow(&mut self, id: u32) -> &mut T {
        let i = id as usize;
        let c = i / PER_FLOW_CHUNK;
        if c >= self.chunks.len() {
            self.grow(c);
        }
        &mut self.chunks[c][i % PER_FLOW_CHUNK]
    }

    #[cold]
    fn grow(&mut self, c: usize) {
        while self.chunks.len() <= c {
            let chunk = vec![T::default(); PER_FLOW_CHUNK].into_boxed_slice();
            self.chunks.push(chunk.try_into().unwrap_or_else(|_| unreachable!("a whole chunk")));
        }
    }

    /// Ids the made chunks cover.
    pub fn capacity(&self) -> usize {
        self.chunks.len() * PER_FLOW_CHUNK
    }

    /// Bytes held by the made chunks.
    pub fn memory_bytes(&self) -> usize {
        self.capacity() * std::mem::size_of::<T>()
            + self.chunks.capacity() * std::mem::size_of::<Box<[T; PER_FLOW_CHUNK]>>()
    }

    /// Makes room for the chunk list of ids below `flows` (the chunks themselves are made as
    /// ids reach them).
    pub fn reserve(&mut self, flows: usize) {
        self.chunks.reserve_exact(flows.div_ceil(PER_FLOW_CHUNK).saturating_sub(self.chunks.len()));
    }

    /// Every made state, in id order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flat_map(|c| c.iter())
    }

    /// Every made state, in id order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.chunks.iter_mut().flat_map(|c| c.iter_mut())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_flow_state_grows_by_chunks_without_moving() {
        let mut s: PerFlow<u64> = PerFlow::new();
        assert_eq!(s.get(0), None);
        *s.get_or_grow(5) = 7;
        assert_eq!(s.capacity(), PER_FLOW_CHUNK);
        let first: *const u64 = s.get(5).unwrap();
        *s.get_or_grow(3 * PER_FLOW_CHUNK as u32 + 1) = 9;
        assert_eq!(s.capacity(), 4 * PER_FLOW_CHUNK);
        // The first chunk stayed where it was, with its value.
        assert_eq!(s.get(5).unwrap() as *const u64, first);
        assert_eq!(s.get(5), Some(&7));
        assert_eq!(s.get(3 * PER_FLOW_CHUNK as u32 + 1), Some(&9));
        assert_eq!(s.get(PER_FLOW_CHUNK as u32), Some(&0));
        assert_eq!(s.get(4 * PER_FLOW_CHUNK as u32), None);
        assert_eq!(s.get_mut(4 * PER_FLOW_CHUNK as u32), None);
        assert_eq!(s.iter_mut().filter(|v| **v != 0).count(), 2);
        assert!(s.memory_bytes() >= 4 * PER_FLOW_CHUNK * 8);
    }
}
