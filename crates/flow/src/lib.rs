//! Flow keys and the flow table.
//!
//! [`FlowKey`] is one packed, fixed-size key for both directions of a conversation: the two
//! endpoints in canonical order (lower address and port first), the protocol, the family, and
//! what the ports mean. [`FlowTable`] maps keys to [`Flow`] records with a hard bound on live
//! flows, an idle timeout measured in capture time, and eviction when full; everything it drops
//! is handed back as a [`FlowReport`] with its [`EndReason`], never lost.
//!
//! The table is sans-IO: callers pass capture timestamps in, nothing reads a clock.
//!
//! # Why hand-written
//! A `hashbrown::HashMap<Key, Record>` sized for 1 M flows grows its buckets past 2 M and costs
//! about 190 bytes per flow; hashbrown's `HashTable` would still store whole records in its
//! buckets. This table keeps an 8-byte index entry per slot (32 hash bits and a record number)
//! and the records in a chunked arena, so one slot probe touches one cache line, a lookup can be
//! prefetched in two steps, and memory stays under 128 bytes per live flow (see BENCHMARKS.md).
#![deny(unsafe_code)]

mod key;
pub mod stage;
mod table;

pub use key::{Dir, FlowKey, KeyKind, Side};
/// The address family of a [`FlowKey`] (re-exported from `rampart-wire`).
pub use rampart_wire::IpFamily;
pub use stage::{FlowCtx, PerFlow, SideStage};
pub use table::{
    EndReason, Flow, FlowId, FlowReport, FlowTable, Interval, Looked, PacketInfo, TableConfig,
    TableStats, Tracked, prefetch,
};
