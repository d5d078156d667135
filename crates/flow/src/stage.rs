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
