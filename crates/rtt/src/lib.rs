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
//! [`aggregate`] turns samples into per-prefix rows over fixed intervals of capture time
//! (ePPing's `-a`), with a log-linear histogram whose quantiles are within 1/128.
//!
//! Both key their TSval tables by one `u64` (flow slot, direction, TSval) in a
//! `hashbrown::HashTable`, hashed by a multiply-fold of that integer; flows are found once per
//! packet by the 40-byte packed key. Written by hand: the pping state machine (no crate does
//! it) and the bucketed sketch (a sparse log histogram is a few lines and bounded per flow).
//! Taken from crates: the hash tables (hashbrown) and key hashing (foldhash).
#![forbid(unsafe_code)]

pub mod aggregate;
pub mod compat;
pub mod seq;
pub mod sketch;
pub mod stage;

/// A TSval table key: flow (or connection) slot, direction, TSval.
#[inline]
pub(crate) fn ts_key(slot: u32, dir: usize, tsval: u32) -> u64 {
    (u64::from(slot) << 33) | ((dir as u64) << 32) | u64::from(tsval)
}

/// A multiply-fold hash of a TSval key: both halves of a 128-bit product, so high and low bits
/// are mixed (hashbrown uses both).
#[inline]
pub(crate) fn ts_hash(k: u64) -> u64 {
    let m = u128::from(k) * u128::from(0x9e37_79b9_7f4a_7c15_u64);
    (m as u64) ^ ((m >> 64) as u64)
}

pub use compat::{CompatConfig, CompatSample, CompatView, PpingCompat, compat_view};
pub use stage::{
    DirSummary, Method, Mode, RttConfig, RttInput, RttStage, RttStats, RttSummary, Sample,
};
