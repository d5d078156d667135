//! Passive TCP round-trip times, measured where the packets are captured.
//!
//! Two engines share this crate:
//!
//! * [`compat::PpingCompat`] reproduces upstream pping (pollere/pping) exactly, quirks
//!   included, for `rampart rtt --compat pping`: same samples, same digits.
//! * [`stage::RttStage`] is the default. It sits beside the flow table (state indexed by
//!   [`rampart_flow::FlowId`]) and matches TSval/TSecr by ePPing's rules, falls back to SEQ/ACK
//!   matching with Karn's rule ([`seq`]) for flows without timestamps, and keeps per-direction
//!   minimum, median ([`sketch`]) and maximum for each flow.
//!
//! Both key their TSval tables by one `u64` (flow slot, direction, TSval) in a
//! `hashbrown::HashTable`, hashed by a multiply-fold of that integer; flows are found once per
//! packet by the 40-byte packed key. Written by hand: the pping state machine (no crate does
//! it) and the bucketed sketch (a sparse log histogram is a few lines and bounded per flow).
//! Taken from crates: the hash tables (hashbrown) and key hashing (foldhash).
#![forbid(unsafe_code)]

pub mod compat;
pub mod seq;
pub mod sketch;
pub mod stage;

pub use compat::{CompatConfig, CompatSample, CompatView, PpingCompat, compat_view};
pub use stage::{
    DirSummary, Method, Mode, RttConfig, RttInput, RttStage, RttStats, RttSummary, Sample,
};
