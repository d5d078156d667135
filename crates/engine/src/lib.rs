//! The data plane: capture batches in, parsed once, decided, tracked in the
//! [`rampart_flow::FlowTable`] with the side stages beside it, events out to a caller-supplied
//! [`Sink`].
//!
//! Two layers:
//! - [`Pipeline`] ([`pipeline`]): the per-worker core, deterministic and sans-IO. It takes a
//!   batch of frames (or packets parsed elsewhere) and the capture time, and gives a
//!   [`Verdict`] per packet and [`Events`]: flow records ([`FlowRecord`]: the flow, why it
//!   ended, its RTT summary, its application) and RTT samples. Its module docs give the
//!   order of work and how a side stage is added.
//! - Drivers around it, which own the I/O: [`read_batches`] (the one reading loop every
//!   capture command shares) with [`run`] (one pipeline on the calling thread, or sharded
//!   over worker threads by the `workers` module, with output byte for byte independent of
//!   their number), [`filter_capture`] (a rule set's verdicts written out), [`balance`] (a
//!   capture's RSS spread), [`inline`] (two ports, every frame forwarded or dropped), and
//!   [`run_pping`] (the `--compat pping` loop, which keeps pping's own state).
//!
//! The engine depends on the stages; no stage depends on the engine. It writes nothing
//! itself: events go to the sink the caller passes, so output formats live in
//! `rampart-export`.
#![forbid(unsafe_code)]

mod balance;
pub mod board;
pub mod breakdown;
pub mod driver;
mod filter;
pub mod inline;
pub mod packet;
pub mod pipeline;
mod pping;
pub mod replay;
pub mod reply;
pub mod stateful;
mod workers;

pub use balance::{Balance, QueueLoad, balance, nic_hash};
pub use board::{Board, Slot};
pub use driver::{
    Consumer, FlowFn, Input, Limits, SampleText, Sink, read_batches, read_merged, run, run_flows,
};
pub use filter::{FilterCounts, FilterOptions, filter_capture};
pub use packet::{Packet, Parser, Payload, PayloadSource, Place};
pub use pipeline::{Event, Events, FlowRecord, Ordered, Pipeline, Policy, Verdict};
pub use pping::{CompatEvent, run_pping};
pub use workers::Shard;

use std::net::IpAddr;
use std::time::Duration;

use rampart_capture::{CaptureError, FilterError, Frame};
use rampart_dpi::DpiStats;
use rampart_flow::{TableConfig, TableStats};
use rampart_rtt::{RttConfig, RttStats};
use rampart_wire::{PacketMeta, Status};

/// Settings for [`run`].
#[derive(Clone, Debug)]
pub struct FlowsConfig {
    /// Flow table limits.
    pub table: TableConfig,
    /// Stop after this many packets (after the filter).
    pub count: Option<u64>,
    /// Stop after this many seconds: of capture time from the first packet, or of wall time
    /// for a live capture.
    pub seconds: Option<f64>,
    /// Frames per batch.
    pub batch: usize,
    /// RTT matching; `None` turns it off.
    pub rtt: Option<RttConfig>,
    /// Hand every RTT sample to the sink (else only per-flow summaries are kept).
    pub samples: bool,
    /// Packets addressed to these are not timestamped (their replies include local processing).
    pub local: Vec<IpAddr>,
    /// Threads the flow stage is sharded over (see [`Shard`]); the output does not depend on it.
    pub workers: usize,
    /// Application identification and its budget per flow; `None` turns it off.
    pub dpi: Option<rampart_dpi::Config>,
    /// Track TCP only (RTT measurement needs nothing else): other IP packets are counted
    /// ([`Summary::not_tcp`]) and go no further.
    pub tcp_only: bool,
    /// Zeek's `conn_state` and `history` and the TCP health counters per flow
    /// ([`rampart_tcpstate::TcpStateStage`]).
    pub tcp_stats: bool,
    /// Where the run publishes its counters for another thread to read while it runs (the
    /// `--metrics` endpoint); `None` publishes nothing.
    pub metrics: Option<Board>,
    /// Flows of packets inside tunnels (IP in IP, GRE, VXLAN, GTP-U, CAPWAP) are the inner
    /// packets' flows, marked with the tunnel ([`PacketMeta::decapsulate`]); else the outer
    /// packets' flows.
    pub tunnels: bool,
    /// Active timeout (capture time): a live flow is reported every so often by an
    /// interim record ([`EndReason::Active`](rampart_flow::EndReason::Active)) carrying the
    /// interval's counters (see [`FlowTable::set_active_timeout`](rampart_flow::FlowTable::set_active_timeout)
    /// and [`FlowRecord`]); `None`: one record per flow.
    pub active_timeout: Option<rampart_wire::Span>,
    /// Make room at start for the table's bound in the table and every side stage
    /// ([`FlowTable::reserve`](rampart_flow::FlowTable::reserve),
    /// [`SideStage::reserve`](rampart_flow::SideStage::reserve)): address space only, so
    /// that a flood of new flows never waits for a store to be copied into a larger one.
    /// Live captures set it; files grow the stores as they go.
    pub reserve: bool,
}

impl Default for FlowsConfig {
    fn default() -> Self {
        Self {
            table: TableConfig::default(),
            count: None,
            seconds: None,
            batch: 256,
            // Flow records carry RTT statistics, not pping's per-sample byte columns.
            rtt: Some(RttConfig { byte_counts: false, ..RttConfig::default() }),
            samples: false,
            local: Vec::new(),
            workers: 1,
            dpi: Some(rampart_dpi::Config::default()),
            tcp_only: false,
            tcp_stats: true,
            metrics: None,
            tunnels: true,
            active_timeout: None,
            reserve: false,
        }
    }
}

impl FlowsConfig {
    /// The reading loop's limits.
    pub fn limits(&self) -> Limits {
        Limits { count: self.count, seconds: self.seconds, batch: self.batch }
    }

    /// The parser this configuration asks for.
    pub(crate) fn parser(&self) -> Parser {
        Parser::new(self.rtt.is_some() || self.tcp_stats, &self.local)
            .with_payloads(self.dpi.is_some())
            .tcp_only(self.tcp_only)
            .tunnels(self.tunnels)
    }
}

/// What a run saw.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Frames read.
    pub packets: u64,
    /// Frames the filter rejected (not counted anywhere else).
    pub filtered: u64,
    /// Sum of the frames' original lengths.
    pub wire_bytes: u64,
    /// Sum of the captured lengths.
    pub captured_bytes: u64,
    /// Frames that were not IP (ARP, LLDP, ...).
    pub non_ip: u64,
    /// IP frames accounted to a flow.
    pub tracked: u64,
    /// IP frames not tracked because only TCP was asked for.
    pub not_tcp: u64,
    /// Flow records handed to the sink that ended their flow.
    pub flows: u64,
    /// Interim records of live flows handed to the sink (active timeout).
    pub interim: u64,
    /// RTT samples handed to the sink.
    pub samples: u64,
    /// Parse problems, indexed by [`Status::problem_index`].
    pub problems: [u64; Status::PROBLEMS],
    /// The flow table's counters.
    pub table: TableStats,
    /// The RTT stage's counters.
    pub rtt: RttStats,
    /// Application identification's counters.
    pub dpi: DpiStats,
    /// Memory held by application identification at the end (its high-water mark).
    pub dpi_bytes: usize,
    /// Memory held by RTT matching at the end.
    pub rtt_bytes: usize,
    /// Memory held by the TCP state stage at the end.
    pub tcp_bytes: usize,
    /// Packets that reached each entry of the policy's rule set (as netfilter counts).
    pub rule_hits: Vec<u64>,
    /// Memory held by the flow table at the end (its high-water mark: it does not shrink).
    pub table_bytes: usize,
    /// Live capture: packets the kernel passed to the ring, and packets it dropped.
    pub kernel: Option<(u64, u64)>,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// The run was stopped by the caller's stop flag.
    pub interrupted: bool,
    /// With two rule sets judging the same traffic: flows whose fate differed.
    pub differing_flows: u64,
}

impl Summary {
    /// Parses a frame into `meta`, counting it, its bytes and its parse problem if any.
    #[inline]
    pub(crate) fn parse(&mut self, frame: &Frame<'_>, meta: &mut PacketMeta) {
        self.count(frame);
        // In place: see `Parser::prepare_onto`.
        meta.parse_into(frame.link, frame.data);
        self.problem(meta);
    }

    /// Counts a flow record handed to the sink: an ended flow, or an interim record.
    #[inline]
    pub(crate) fn count_record(&mut self, r: &FlowRecord) {
        if r.end.is_final() {
            self.flows += 1;
        } else {
            self.interim += 1;
        }
    }

    /// Counts a frame and its bytes.
    #[inline]
    pub(crate) fn count(&mut self, frame: &Frame<'_>) {
        self.packets += 1;
        self.wire_bytes += u64::from(frame.origlen);
        self.captured_bytes += u64::from(frame.caplen());
    }

    /// Counts a parsed frame's problem, if any.
    #[inline]
    pub(crate) fn problem(&mut self, meta: &PacketMeta) {
        if let Some(i) = meta.status.problem_index() {
            self.problems[i] += 1;
        }
    }

    /// Adds the per-frame counts another summary made of other frames.
    pub(crate) fn add_frames(&mut self, o: &Summary) {
        self.non_ip += o.non_ip;
        self.tracked += o.tracked;
        self.not_tcp += o.not_tcp;
        for (a, b) in self.problems.iter_mut().zip(o.problems) {
            *a += b;
        }
    }

    /// Adds what a worker counted: its frames' counts and its stages' counters and memory.
    pub(crate) fn add_worker(&mut self, w: &Summary) {
        self.add_frames(w);
        self.table += w.table;
        self.table_bytes += w.table_bytes;
        self.rtt += w.rtt;
        self.rtt_bytes += w.rtt_bytes;
        self.tcp_bytes += w.tcp_bytes;
        self.dpi += w.dpi;
        self.dpi_bytes += w.dpi_bytes;
    }

    /// Adds every counter of another summary (what different threads counted of one run):
    /// counts and memory add up, the kernel's counts add, the wall time is the longer one.
    pub fn add(&mut self, o: &Summary) {
        self.packets += o.packets;
        self.filtered += o.filtered;
        self.wire_bytes += o.wire_bytes;
        self.captured_bytes += o.captured_bytes;
        self.flows += o.flows;
        self.interim += o.interim;
        self.samples += o.samples;
        self.add_worker(o);
        if self.rule_hits.len() < o.rule_hits.len() {
            self.rule_hits.resize(o.rule_hits.len(), 0);
        }
        for (a, b) in self.rule_hits.iter_mut().zip(&o.rule_hits) {
            *a += b;
        }
        self.kernel = match (self.kernel, o.kernel) {
            (Some((a, b)), Some((c, d))) => Some((a + c, b + d)),
            (x, None) | (None, x) => x,
        };
        self.elapsed = self.elapsed.max(o.elapsed);
        self.interrupted |= o.interrupted;
        self.differing_flows += o.differing_flows;
    }

    /// Parse problems with a non-zero count, by name.
    pub fn problems(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.problems
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(i, n)| (Status::problem_name(i), *n))
    }
}

/// Why a run stopped early.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The capture went bad.
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// libpcap refused the filter for a link type met part-way.
    #[error(transparent)]
    Filter(#[from] FilterError),
}

impl RunError {
    /// The input was not a capture at all, or the filter was refused (exit status 2).
    pub fn is_usage(&self) -> bool {
        match self {
            Self::Capture(e) => e.is_not_a_capture(),
            Self::Filter(_) => true,
        }
    }
}

/// How a run ended.
#[derive(Debug)]
pub struct Outcome {
    /// What the run saw; complete even when the capture went bad part-way.
    pub summary: Summary,
    /// The error that stopped the run, if any. Every flow and sample seen before it was still
    /// handed to the sink.
    pub error: Option<RunError>,
}

#[cfg(test)]
mod tests;
