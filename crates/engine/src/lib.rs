//! The pipeline: capture batches in, parsed once into [`rampart_wire::PacketMeta`], tracked in
//! the [`rampart_flow::FlowTable`], ended flows out to a caller-supplied sink.
//!
//! Work happens in batches: each batch is parsed and hashed first, then accounted in a software
//! pipeline (packet i+2D's index line and packet i+D's record are prefetched while packet i is
//! accounted), the way DPDK's bulk lookups hide memory latency within the few misses a core can
//! have outstanding.
//!
//! The engine depends on the stages; no stage depends on the engine. It writes nothing itself:
//! ended flows go to the sink the caller passes, so output formats live in `rampart-export`.
#![forbid(unsafe_code)]

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rampart_capture::{Capture, CaptureError, Frame};
use rampart_flow::{EndedFlow, FlowKey, FlowTable, PacketInfo, TableConfig, TableStats};
use rampart_wire::{PacketMeta, Status};

/// Pipeline depth: packet i+D's record and packet i+2D's index line are prefetched while packet i
/// is accounted.
const LOOKAHEAD: usize = 8;

/// Settings for [`run_flows`].
#[derive(Clone, Copy, Debug)]
pub struct FlowsConfig {
    /// Flow table limits.
    pub table: TableConfig,
    /// Stop after this many packets.
    pub count: Option<u64>,
    /// Frames per batch.
    pub batch: usize,
}

impl Default for FlowsConfig {
    fn default() -> Self {
        Self { table: TableConfig::default(), count: None, batch: 256 }
    }
}

/// What a run saw.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Frames read.
    pub packets: u64,
    /// Sum of the frames' original lengths.
    pub wire_bytes: u64,
    /// Sum of the captured lengths.
    pub captured_bytes: u64,
    /// Frames that were not IP (ARP, LLDP, ...).
    pub non_ip: u64,
    /// IP frames accounted to a flow.
    pub tracked: u64,
    /// Flow records handed to the sink.
    pub flows: u64,
    /// Parse problems, indexed by [`Status::problem_index`].
    pub problems: [u64; Status::PROBLEMS],
    /// The flow table's counters.
    pub table: TableStats,
    /// Memory held by the flow table at the end (its high-water mark: it does not shrink).
    pub table_bytes: usize,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// The run was stopped by the caller's stop flag.
    pub interrupted: bool,
}

impl Summary {
    /// Parse problems with a non-zero count, by name.
    pub fn problems(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.problems
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(i, n)| (Status::problem_name(i), *n))
    }
}

/// How a run ended.
#[derive(Debug)]
pub struct Outcome {
    /// What the run saw; complete even when the capture went bad part-way.
    pub summary: Summary,
    /// The capture error that stopped the run, if any. Every flow seen before it was still
    /// handed to the sink.
    pub error: Option<CaptureError>,
}

/// The per-batch work of `rampart flows`: parse each frame once, key and hash it, and account
/// it in the flow table through a software pipeline of prefetches (see the crate docs).
pub struct FlowStage {
    table: FlowTable,
    infos: Vec<PacketInfo>,
    now: u64,
}

impl FlowStage {
    /// A stage with an empty table.
    pub fn new(cfg: TableConfig) -> Self {
        Self { table: FlowTable::new(cfg), infos: Vec::with_capacity(256), now: 0 }
    }

    /// Parses and accounts one batch of frames, counting into `s`. Flows that end are left in
    /// the table for [`FlowStage::take_ended`].
    #[inline]
    pub fn process<'a>(&mut self, frames: impl Iterator<Item = Frame<'a>>, s: &mut Summary) {
        self.infos.clear();
        for frame in frames {
            s.packets += 1;
            s.wire_bytes += u64::from(frame.origlen);
            s.captured_bytes += u64::from(frame.caplen());
            let meta = PacketMeta::parse(frame.link, frame.data);
            if let Some(i) = meta.status.problem_index() {
                s.problems[i] += 1;
            }
            let Some((key, side)) = FlowKey::from_meta(&meta) else {
                if meta.status == Status::NotIp {
                    s.non_ip += 1;
                }
                continue;
            };
            let hash = self.table.hash(&key);
            self.infos.push(PacketInfo {
                key,
                side,
                hash,
                ts: frame.ts.0,
                wire_len: frame.origlen,
                tcp_flags: meta.tcp.flags,
            });
            self.now = self.now.max(frame.ts.0);
        }
        // A software pipeline, as in DPDK's bulk lookups: packet i+2D's index line and packet
        // i+D's record are asked for while packet i is accounted. A core tracks only a handful
        // of outstanding misses, so asking for a whole batch at once would lose most of them.
        let n = self.infos.len();
        for i in 0..n + 2 * LOOKAHEAD {
            if let Some(p) = self.infos.get(i) {
                self.table.prefetch_index(p.hash);
            }
            if let Some(p) = i.checked_sub(LOOKAHEAD).and_then(|j| self.infos.get(j)) {
                self.table.prefetch_record(p.hash);
            }
            if let Some(p) = i.checked_sub(2 * LOOKAHEAD).and_then(|j| self.infos.get(j)) {
                self.table.track(p);
            }
        }
        s.tracked += self.infos.len() as u64;
        self.table.advance(self.now);
    }

    /// Flows that ended since the last call.
    pub fn take_ended(&mut self) -> std::vec::Drain<'_, EndedFlow> {
        self.table.take_ended()
    }

    /// Ends every live flow (end of input); they follow from [`FlowStage::take_ended`].
    pub fn finish(&mut self, s: &mut Summary) {
        s.table = self.table.stats();
        s.table_bytes = self.table.memory_bytes();
        self.table.finish();
    }

    /// The flow table.
    pub fn table(&self) -> &FlowTable {
        &self.table
    }
}

/// Reads `capture` to the end (or to `cfg.count` packets, or until `stop` is set) and hands
/// every flow record to `sink` when the flow ends. `progress` is called once per batch with the
/// input position in bytes. Only an error from the sink (such as a closed pipe) aborts the run
/// early; flows still in the table are then lost, as there is nowhere to write them.
pub fn run_flows(
    capture: &mut Capture,
    cfg: &FlowsConfig,
    stop: &AtomicBool,
    sink: &mut dyn FnMut(&EndedFlow) -> io::Result<()>,
    progress: &mut dyn FnMut(u64),
) -> io::Result<Outcome> {
    let started = Instant::now();
    let mut stage = FlowStage::new(cfg.table);
    let mut s = Summary::default();
    let mut error = None;
    loop {
        if stop.load(Ordering::Relaxed) {
            s.interrupted = true;
            break;
        }
        let remaining = cfg.count.map_or(u64::MAX, |c| c - s.packets);
        if remaining == 0 {
            break;
        }
        let batch = match capture.next_batch(cfg.batch.min(remaining as usize)) {
            Ok(b) if b.is_empty() => break,
            Ok(b) => b,
            Err(e) => {
                error = Some(e);
                break;
            }
        };
        stage.process(batch.iter(), &mut s);
        for e in stage.take_ended() {
            s.flows += 1;
            sink(&e)?;
        }
        progress(capture.position());
    }
    stage.finish(&mut s);
    for e in stage.take_ended() {
        s.flows += 1;
        sink(&e)?;
    }
    s.elapsed = started.elapsed();
    Ok(Outcome { summary: s, error })
}

#[cfg(test)]
mod tests;
