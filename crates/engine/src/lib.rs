//! The pipeline: capture batches in, parsed once into [`rampart_wire::PacketMeta`], tracked in
//! the [`rampart_flow::FlowTable`], RTT matched beside it ([`rampart_rtt::RttStage`]), each
//! flow's application identified beside it ([`rampart_dpi::DpiTable`], fed payloads the
//! [`Work`] items point at, never copied on one thread), ended flows and RTT samples out to a
//! caller-supplied [`Sink`]. [`run_pping`] is the separate loop
//! of `--compat pping`, which keeps pping's own flow state.
//!
//! Work happens in batches: each batch is parsed and hashed first, then accounted in a software
//! pipeline (packet i+2D's index line and packet i+D's record are prefetched while packet i is
//! accounted), the way DPDK's bulk lookups hide memory latency within the few misses a core can
//! have outstanding.
//!
//! The engine depends on the stages; no stage depends on the engine. It writes nothing itself:
//! ended flows and samples go to the sink the caller passes, so output formats live in
//! `rampart-export`.
//!
//! A stage that keeps per-flow state beside the table (RTT and identification here) indexes it
//! by [`rampart_flow::FlowId`]. The table reuses a slot as soon as a flow ends, so the engine
//! collects the ending flow's RTT summary and application right after the `track` call that
//! ended it, before any later packet can take the slot.
#![forbid(unsafe_code)]

mod balance;
mod filter;
mod workers;

pub use balance::{Balance, QueueLoad, balance, nic_hash};
pub use filter::{FilterCounts, filter_capture};
pub use workers::Shard;

use std::io;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rampart_capture::{Capture, CaptureError, Filter, FilterError, Frame};
use rampart_dpi::{App, DpiStats, DpiTable, FlowInfo};
use rampart_flow::{EndedFlow, FlowKey, FlowTable, PacketInfo, TableConfig, TableStats};
use rampart_rtt::compat::{CompatCounters, CompatSample};
use rampart_rtt::{
    CompatConfig, PpingCompat, RttConfig, RttInput, RttStage, RttStats, RttSummary, Sample,
    compat_view,
};
use rampart_wire::{PacketMeta, Status};

/// Pipeline depth: packet i+D's record and packet i+2D's index line are prefetched while packet i
/// is accounted.
const LOOKAHEAD: usize = 8;

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
    /// Hand every RTT sample to [`Sink::sample`] (else only per-flow summaries are kept).
    pub samples: bool,
    /// Packets addressed to these are not timestamped (their replies include local processing).
    pub local: Vec<IpAddr>,
    /// Threads the flow stage is sharded over (see [`Shard`]); the output does not depend on it.
    pub workers: usize,
    /// Application identification and its budget per flow; `None` turns it off.
    pub dpi: Option<rampart_dpi::Config>,
}

impl Default for FlowsConfig {
    fn default() -> Self {
        Self {
            table: TableConfig::default(),
            count: None,
            seconds: None,
            batch: 256,
            rtt: Some(RttConfig::default()),
            samples: false,
            local: Vec::new(),
            workers: 1,
            dpi: Some(rampart_dpi::Config::default()),
        }
    }
}

/// Where a run's results go.
pub trait Sink {
    /// A flow ended, with its RTT summary (empty when RTT is off or the flow is not TCP) and
    /// its application (`None` when identification is off).
    fn flow(&mut self, e: &EndedFlow, rtt: &RttSummary, app: Option<&App>) -> io::Result<()>;
    /// An RTT sample (only with [`FlowsConfig::samples`]).
    fn sample(&mut self, _s: &Sample) -> io::Result<()> {
        Ok(())
    }
    /// Called once per batch, and about every 100 ms while a live capture is quiet (a place to
    /// flush output by time).
    fn tick(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A [`Sink`] from a closure over ended flows.
pub struct FlowFn<F>(pub F);

impl<F: FnMut(&EndedFlow, &RttSummary, Option<&App>) -> io::Result<()>> Sink for FlowFn<F> {
    fn flow(&mut self, e: &EndedFlow, rtt: &RttSummary, app: Option<&App>) -> io::Result<()> {
        (self.0)(e, rtt, app)
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
    /// Flow records handed to the sink.
    pub flows: u64,
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
    /// Memory held by the flow table at the end (its high-water mark: it does not shrink).
    pub table_bytes: usize,
    /// Live capture: packets the kernel passed to the ring, and packets it dropped.
    pub kernel: Option<(u64, u64)>,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// The run was stopped by the caller's stop flag.
    pub interrupted: bool,
}

impl Summary {
    /// Parses a frame, counting it, its bytes and its parse problem if any.
    #[inline]
    fn parse(&mut self, frame: &Frame<'_>) -> PacketMeta {
        self.count(frame);
        let meta = PacketMeta::parse(frame.link, frame.data);
        self.problem(&meta);
        meta
    }

    /// Counts a frame and its bytes.
    #[inline]
    fn count(&mut self, frame: &Frame<'_>) {
        self.packets += 1;
        self.wire_bytes += u64::from(frame.origlen);
        self.captured_bytes += u64::from(frame.caplen());
    }

    /// Counts a parsed frame's problem, if any.
    #[inline]
    fn problem(&mut self, meta: &PacketMeta) {
        if let Some(i) = meta.status.problem_index() {
            self.problems[i] += 1;
        }
    }

    /// Adds the per-frame counts another summary made of other frames.
    fn add_frames(&mut self, o: &Summary) {
        self.non_ip += o.non_ip;
        self.tracked += o.tracked;
        for (a, b) in self.problems.iter_mut().zip(o.problems) {
            *a += b;
        }
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

/// One packet as the flow stage needs it: an owned summary of its headers, where its payload
/// lies (not the bytes), and its position in the batch it came in.
#[derive(Clone, Copy, Debug)]
pub struct Work {
    /// Key, direction, time, length and flags (the hash is filled in by the flow stage).
    pub info: PacketInfo,
    /// What RTT matching needs, for a TCP packet when RTT is on.
    pub tcp: Option<RttInput>,
    /// Position in the batch (after the filter), which orders the outputs.
    pub pos: u32,
    /// Where the transport payload starts: the parser gives its offset in the frame; a stage
    /// that moves packets elsewhere rebases it (see [`Payloads`]).
    pub payload_at: u64,
    /// Captured payload bytes (0 when application identification is off, and for later
    /// fragments, which carry no transport header).
    pub payload_len: u32,
}

/// Where the payloads of [`Work`] items are, for application identification.
pub trait Payloads {
    /// The captured payload of `w` (empty if it does not lie where `w` says).
    fn payload(&self, w: &Work) -> &[u8];
}

/// The frames of the batch the items were parsed from: `pos` indexes the frame, `payload_at`
/// is the offset within it.
impl Payloads for [Frame<'_>] {
    #[inline]
    fn payload(&self, w: &Work) -> &[u8] {
        let Some(f) = self.get(w.pos as usize) else { return &[] };
        span(f.data, w.payload_at, w.payload_len)
    }
}

/// Bytes that hold every payload: `payload_at` is the offset in them.
impl Payloads for [u8] {
    #[inline]
    fn payload(&self, w: &Work) -> &[u8] {
        span(self, w.payload_at, w.payload_len)
    }
}

/// `len` bytes of `b` from `at`, or nothing if they are not all there.
#[inline]
pub(crate) fn span(b: &[u8], at: u64, len: u32) -> &[u8] {
    usize::try_from(at).ok().and_then(|at| b.get(at..at.checked_add(len as usize)?)).unwrap_or(&[])
}

/// A flow record ready for the sink, with its RTT summary and the position that orders it: the
/// position of the packet that ended it, or for flows ended by capture time (or the end of
/// input) the position given for the end of their batch.
#[derive(Clone, Debug)]
pub struct Ended {
    /// Position of the packet that ended the flow, or of its batch's end.
    pub pos: u32,
    /// Ended between packets (by the idle timeout, or at the end of input).
    pub tick: bool,
    /// The record.
    pub flow: EndedFlow,
    /// Its RTT summary.
    pub rtt: RttSummary,
    /// Its application, when identification is on.
    pub app: Option<App>,
}

impl Ended {
    /// The output order: by position; flows ended at one tick by last packet, then first
    /// packet, then key (a total order that does not depend on table layout); flows one packet
    /// ended in the order it ended them (sort stably).
    pub fn order(&self) -> (u32, u64, u64, FlowKey) {
        if self.tick {
            (self.pos, self.flow.flow.last, self.flow.flow.first, self.flow.flow.key)
        } else {
            (self.pos, 0, 0, FlowKey::default())
        }
    }
}

/// The parsing half of the pipeline: each frame parsed once into a [`Work`] item.
#[derive(Clone, Debug)]
pub struct Parser {
    rtt: bool,
    payloads: bool,
    local: Vec<(u8, [u8; 16])>,
    now: u64,
}

impl Parser {
    /// A parser; `rtt` keeps what RTT matching needs, and packets to `local` addresses are
    /// marked so they are not timestamped.
    pub fn new(rtt: bool, local: &[IpAddr]) -> Self {
        let local = local
            .iter()
            .map(|a| match a {
                IpAddr::V4(v) => {
                    let mut s = [0; 16];
                    s[..4].copy_from_slice(&v.octets());
                    (4, s)
                }
                IpAddr::V6(v) => (6, v.octets()),
            })
            .collect();
        Self { rtt, payloads: false, local, now: 0 }
    }

    /// Also notes where each packet's payload lies ([`Work::payload_at`]), for application
    /// identification.
    pub fn with_payloads(mut self, on: bool) -> Self {
        self.payloads = on;
        self
    }

    /// Parses one frame, counting it into `s`; `None` when it has no flow (not IP).
    #[inline]
    pub fn prepare(&mut self, frame: &Frame<'_>, pos: u32, s: &mut Summary) -> Option<Work> {
        s.count(frame);
        self.prepare_if(frame, pos, s, |_| true, true)
    }

    /// Parses one frame that was counted elsewhere and keeps it only if `keep` accepts its flow
    /// key. Capture time follows every frame, kept or not. Parse problems are counted for kept frames, and for
    /// frames without a flow when `unkeyed` (so that one worker counts those).
    #[inline]
    pub fn prepare_if(
        &mut self,
        frame: &Frame<'_>,
        pos: u32,
        s: &mut Summary,
        keep: impl FnOnce(&FlowKey) -> bool,
        unkeyed: bool,
    ) -> Option<Work> {
        self.now = frame.ts.0;
        let meta = PacketMeta::parse(frame.link, frame.data);
        let Some((key, side)) = FlowKey::from_meta(&meta) else {
            if unkeyed {
                s.problem(&meta);
                if meta.status == Status::NotIp {
                    s.non_ip += 1;
                }
            }
            return None;
        };
        if !keep(&key) {
            return None;
        }
        s.problem(&meta);
        let info = PacketInfo {
            key,
            side,
            hash: 0,
            ts: frame.ts.0,
            wire_len: frame.origlen,
            tcp_flags: meta.tcp.flags,
        };
        let mut tcp = None;
        if self.rtt {
            tcp = RttInput::from_meta(&meta, frame.origlen);
            if let Some(i) = &mut tcp
                && !self.local.is_empty()
            {
                let fam = key.family;
                i.to_local = self.local.iter().any(|(f, a)| *f == fam && *a == meta.dst);
            }
        }
        let (mut payload_at, mut payload_len) = (0, 0);
        if self.payloads && !meta.is_later_fragment() {
            let start = usize::from(meta.payload_offset);
            let captured = frame.data.len().saturating_sub(start);
            payload_len = (meta.payload_wire_len as usize).min(captured) as u32;
            payload_at = start as u64;
        }
        s.tracked += 1;
        Some(Work { info, tcp, pos, payload_at, payload_len })
    }

    /// Capture time: the timestamp of the last frame parsed (it follows the capture when its
    /// time steps back, see [`rampart_flow::FlowTable::advance`]).
    pub fn now(&self) -> u64 {
        self.now
    }
}

/// The per-batch work: parse each frame once ([`Parser`]), then account it in the flow table
/// through a software pipeline of prefetches (see the crate docs) and match RTT beside it
/// ([`FlowStage::account`], which is also what each worker runs).
pub struct FlowStage {
    table: FlowTable,
    parser: Parser,
    work: Vec<Work>,
    rtt: Option<RttStage>,
    dpi: Option<DpiTable>,
    emit: bool,
    samples: Vec<(u32, Sample)>,
    summaries: Vec<RttSummary>,
    out: Vec<Ended>,
}

impl FlowStage {
    /// A stage with an empty table and no RTT matching.
    pub fn new(cfg: TableConfig) -> Self {
        Self::with_rtt(cfg, None, false, &[])
    }

    /// A stage with RTT matching (`samples`: keep every sample for [`FlowStage::take_samples`]);
    /// packets to `local` addresses are not timestamped.
    pub fn with_rtt(
        cfg: TableConfig,
        rtt: Option<RttConfig>,
        samples: bool,
        local: &[IpAddr],
    ) -> Self {
        Self {
            table: FlowTable::new(cfg),
            parser: Parser::new(rtt.is_some(), local),
            work: Vec::with_capacity(256),
            rtt: rtt.map(RttStage::new),
            dpi: None,
            emit: samples,
            samples: Vec::new(),
            summaries: Vec::new(),
            out: Vec::new(),
        }
    }

    /// Identifies each flow's application within `cfg`'s budget (`None`: not at all).
    pub fn with_dpi(mut self, cfg: Option<rampart_dpi::Config>) -> Self {
        self.dpi = cfg.map(DpiTable::new);
        self.parser = self.parser.with_payloads(cfg.is_some());
        self
    }

    /// Parses and accounts one batch of frames, counting into `s`. Flows that end wait for
    /// [`FlowStage::take_ended`], samples for [`FlowStage::take_samples`].
    #[inline]
    pub fn process(&mut self, frames: &[Frame<'_>], s: &mut Summary) {
        let mut work = std::mem::take(&mut self.work);
        work.clear();
        for (i, frame) in frames.iter().enumerate() {
            if let Some(w) = self.parser.prepare(frame, i as u32, s) {
                work.push(w);
            }
        }
        let now = self.parser.now();
        self.account(&mut work, frames, now, u32::MAX);
        self.work = work;
    }

    /// Accounts parsed packets (hashing their keys for this table), then lets capture time run
    /// to `now`, ending the flows idle past the timeout at position `tick`. Payloads are read
    /// from `payloads` when application identification is on.
    #[inline]
    pub fn account<P: Payloads + ?Sized>(
        &mut self,
        work: &mut [Work],
        payloads: &P,
        now: u64,
        tick: u32,
    ) {
        self.packets(work, payloads);
        self.advance(now, tick);
    }

    /// Lets capture time run to `now`, ending the flows idle past the timeout at position
    /// `tick`.
    pub fn advance(&mut self, now: u64, tick: u32) {
        self.table.advance(now);
        let start = self.out.len();
        self.collect(tick, true);
        self.out[start..].sort_unstable_by_key(Ended::order);
    }

    /// Accounts parsed packets (hashing their keys for this table), reading payloads from
    /// `payloads` when application identification is on.
    #[inline]
    pub fn packets<P: Payloads + ?Sized>(&mut self, work: &mut [Work], payloads: &P) {
        for w in work.iter_mut() {
            w.info.hash = self.table.hash(&w.info.key);
        }
        // A software pipeline, as in DPDK's bulk lookups: packet i+2D's index line and packet
        // i+D's record are asked for while packet i is accounted. A core tracks only a handful
        // of outstanding misses, so asking for a whole batch at once would lose most of them.
        let n = work.len();
        for i in 0..n + 2 * LOOKAHEAD {
            if let Some(w) = work.get(i) {
                self.table.prefetch_index(w.info.hash);
            }
            if let Some(w) = i.checked_sub(LOOKAHEAD).and_then(|j| work.get(j)) {
                self.table.prefetch_record(w.info.hash);
            }
            if let Some(j) = i.checked_sub(2 * LOOKAHEAD)
                && let Some(w) = work.get(j)
            {
                let p = &w.info;
                let t = self.table.track(p);
                if !self.table.ended().is_empty() {
                    self.collect(w.pos, false);
                }
                if let Some(rtt) = &mut self.rtt
                    && let Some(input) = &w.tcp
                    && let Some(sample) = rtt.observe(t.id, t.new, &p.key, p.side, p.ts, input)
                    && self.emit
                {
                    self.samples.push((w.pos, sample));
                }
                // A decided flow costs one 4-byte test per payload packet.
                if let Some(dpi) = &mut self.dpi
                    && w.payload_len > 0
                    && dpi.wants(t.id.0)
                    && let Some(flow) = self.table.get(t.id)
                {
                    dpi.feed(t.id.0, &flow_info(flow), t.forward, payloads.payload(w));
                }
            }
        }
    }

    /// Moves the flows the table ended into the output, with their RTT summaries (taken before
    /// any later packet can reuse their slots).
    fn collect(&mut self, pos: u32, tick: bool) {
        match &mut self.rtt {
            Some(rtt) => retire(&self.table, rtt, &mut self.summaries),
            None => self.summaries.resize(self.table.ended().len(), RttSummary::default()),
        }
        let ended = self.table.take_ended().zip(self.summaries.drain(..));
        let dpi = &mut self.dpi;
        self.out.extend(ended.map(|(flow, rtt)| {
            let app = dpi.as_mut().map(|d| d.retire(flow.id.0, &flow_info(&flow.flow)));
            Ended { pos, tick, flow, rtt, app }
        }));
    }

    /// Flows that ended since the last call, in output order: those a packet ended in packet
    /// order, then those the idle timeout ended by last packet (then first packet, then key),
    /// then, after [`FlowStage::finish`], the rest by first packet (then key).
    pub fn take_ended(&mut self) -> std::vec::Drain<'_, Ended> {
        self.out.drain(..)
    }

    /// RTT samples produced since the last call, each with its packet's position in the batch.
    pub fn take_samples(&mut self) -> std::vec::Drain<'_, (u32, Sample)> {
        self.samples.drain(..)
    }

    /// Ends every live flow (end of input); they follow from [`FlowStage::take_ended`].
    pub fn finish(&mut self, s: &mut Summary) {
        s.table = self.table.stats();
        s.table_bytes = self.table.memory_bytes();
        if let Some(rtt) = &self.rtt {
            s.rtt = rtt.counters();
        }
        self.table.finish();
        self.collect(u32::MAX, true);
        if let Some(dpi) = &self.dpi {
            s.dpi = dpi.stats();
            s.dpi_bytes = dpi.memory_bytes();
        }
    }

    /// The flow table.
    pub fn table(&self) -> &FlowTable {
        &self.table
    }
}

/// What application identification needs of a flow's record.
#[inline]
fn flow_info(f: &rampart_flow::Flow) -> FlowInfo<'_> {
    let k = &f.key;
    let (ports, responder) = match f.initiator {
        rampart_flow::Side::A => ([k.port_a, k.port_b], &k.addr_b),
        rampart_flow::Side::B => ([k.port_b, k.port_a], &k.addr_a),
    };
    FlowInfo { l4: k.proto, ports, family: k.family, responder }
}

/// Takes the RTT summaries of flows that ended since the summaries list was last in step.
fn retire(table: &FlowTable, rtt: &mut RttStage, out: &mut Vec<RttSummary>) {
    let ended = table.ended();
    while out.len() < ended.len() {
        out.push(rtt.retire(ended[out.len()].id));
    }
}

/// An empty vector with `v`'s allocation, for frames of another batch (the in-place collect
/// keeps the buffer, as the element type's size does not change).
fn recycle<'b>(mut v: Vec<Frame<'_>>) -> Vec<Frame<'b>> {
    v.clear();
    v.into_iter().map(|_| unreachable!("the vector is empty")).collect()
}

/// Applies the filter to a batch, remembering the first error.
fn filtered<'a, 'f>(
    frames: impl Iterator<Item = Frame<'a>> + 'f,
    filter: Option<&'f mut Filter>,
    rejected: &'f mut u64,
    error: &'f mut Option<FilterError>,
) -> impl Iterator<Item = Frame<'a>> + 'f {
    let mut filter = filter;
    frames.filter(move |f| {
        let Some(flt) = filter.as_deref_mut() else { return true };
        if error.is_some() {
            return false;
        }
        match flt.matches(f.link, f.data) {
            Ok(true) => true,
            Ok(false) => {
                *rejected += 1;
                false
            }
            Err(e) => {
                *error = Some(e);
                false
            }
        }
    })
}

/// How many of the frames (given by their times) to take so that the run stops after `count` packets or `seconds` of
/// capture time from `first` (the packet reaching the limit is included, as tcpdump and pping
/// do); `true` when the limit was reached.
fn limit(
    times: impl IntoIterator<Item = u64>,
    count_left: u64,
    seconds: Option<f64>,
    first: &mut Option<u64>,
) -> (usize, bool) {
    let mut n = 0;
    for ts in times {
        if n as u64 == count_left {
            return (n, true);
        }
        n += 1;
        let start = *first.get_or_insert(ts);
        if let Some(s) = seconds
            && ts.saturating_sub(start) as f64 >= s * 1e9
        {
            return (n, true);
        }
    }
    (n, n as u64 == count_left)
}

/// What the reading loop hands each batch to: one [`FlowStage`], or the workers; either
/// passes results on to the run's sink.
trait Batches {
    /// Frames that passed the filter and limits, and the run's counts.
    fn batch(&mut self, frames: &[Frame<'_>], s: &mut Summary) -> io::Result<()>;
    /// A live capture was quiet for about 100 ms.
    fn quiet(&mut self, _s: &mut Summary) -> io::Result<()> {
        Ok(())
    }
    /// The sink.
    fn sink(&mut self) -> &mut dyn Sink;
}

/// The reading loop of [`run`], with or without workers: batches from the capture through the
/// filter and the count and time limits to `to`, until the input ends, a limit is reached, the
/// stop flag is set or the capture or filter fails (the error is returned, the counts so far
/// are in `s`). The sink's tick follows every batch and every quiet spell.
fn read_batches(
    capture: &mut Capture,
    cfg: &FlowsConfig,
    mut filter: Option<&mut Filter>,
    stop: &AtomicBool,
    s: &mut Summary,
    to: &mut dyn Batches,
    progress: &mut dyn FnMut(u64),
) -> io::Result<Option<RunError>> {
    let started = Instant::now();
    let mut error: Option<RunError> = None;
    let mut filter_error = None;
    let mut first = None;
    let live = capture.is_live();
    let mut spare: Vec<Frame<'static>> = Vec::with_capacity(cfg.batch);
    let mut passed = 0u64;
    loop {
        if stop.load(Ordering::Relaxed) {
            s.interrupted = true;
            break;
        }
        if live && cfg.seconds.is_some_and(|sec| started.elapsed().as_secs_f64() >= sec) {
            break;
        }
        let left = cfg.count.map_or(u64::MAX, |c| c - passed);
        if left == 0 {
            break;
        }
        let batch = match capture.next_batch(cfg.batch) {
            Ok(b) if b.is_empty() && live => {
                to.quiet(s)?;
                progress(capture.position());
                to.sink().tick()?;
                continue;
            }
            Ok(b) if b.is_empty() => break,
            Ok(b) => b,
            Err(e) => {
                error = Some(e.into());
                break;
            }
        };
        let mut frames = recycle(std::mem::take(&mut spare));
        frames.extend(filtered(
            batch.iter(),
            filter.as_deref_mut(),
            &mut s.filtered,
            &mut filter_error,
        ));
        let (take, done) = limit(frames.iter().map(|f| f.ts.0), left, cfg.seconds, &mut first);
        passed += take as u64;
        to.batch(&frames[..take], s)?;
        spare = recycle(frames);
        progress(capture.position());
        to.sink().tick()?;
        if let Some(e) = filter_error.take() {
            error = Some(e.into());
            break;
        }
        if done {
            break;
        }
    }
    s.kernel = capture.kernel_stats();
    Ok(error)
}

/// One stage on the calling thread.
struct One<'a> {
    stage: FlowStage,
    sink: &'a mut dyn Sink,
}

impl Batches for One<'_> {
    fn batch(&mut self, frames: &[Frame<'_>], s: &mut Summary) -> io::Result<()> {
        self.stage.process(frames, s);
        for (_, x) in self.stage.take_samples() {
            s.samples += 1;
            self.sink.sample(&x)?;
        }
        for e in self.stage.take_ended() {
            s.flows += 1;
            self.sink.flow(&e.flow, &e.rtt, e.app.as_ref())?;
        }
        Ok(())
    }

    fn sink(&mut self) -> &mut dyn Sink {
        self.sink
    }
}

/// Reads `capture` to the end (or to the configured count or seconds, or until `stop` is set),
/// handing every flow record to `sink` when the flow ends and, with [`FlowsConfig::samples`],
/// every RTT sample as it is made. `progress` is called once per batch with the input position
/// in bytes. Only an error from the sink (such as a closed pipe) aborts the run early; flows
/// still in the table are then lost, as there is nowhere to write them.
pub fn run(
    capture: &mut Capture,
    cfg: &FlowsConfig,
    filter: Option<&mut Filter>,
    stop: &AtomicBool,
    sink: &mut dyn Sink,
    progress: &mut dyn FnMut(u64),
) -> io::Result<Outcome> {
    if cfg.workers > 1 {
        return workers::run(capture, cfg, filter, stop, sink, progress);
    }
    let started = Instant::now();
    let stage = FlowStage::with_rtt(cfg.table, cfg.rtt, cfg.samples, &cfg.local).with_dpi(cfg.dpi);
    let mut one = One { stage, sink };
    let mut s = Summary::default();
    let error = read_batches(capture, cfg, filter, stop, &mut s, &mut one, progress)?;
    one.stage.finish(&mut s);
    for e in one.stage.take_ended() {
        s.flows += 1;
        one.sink.flow(&e.flow, &e.rtt, e.app.as_ref())?;
    }
    s.elapsed = started.elapsed();
    Ok(Outcome { summary: s, error })
}

/// A closure over flow records: the flow, its RTT summary and its application.
pub type RecordFn<'a> = dyn FnMut(&EndedFlow, &RttSummary, Option<&App>) -> io::Result<()> + 'a;

/// [`run`] without RTT samples or a filter: flow records only.
pub fn run_flows(
    capture: &mut Capture,
    cfg: &FlowsConfig,
    stop: &AtomicBool,
    sink: &mut RecordFn<'_>,
    progress: &mut dyn FnMut(u64),
) -> io::Result<Outcome> {
    let cfg = FlowsConfig { samples: false, ..cfg.clone() };
    run(capture, &cfg, None, stop, &mut FlowFn(sink), progress)
}

/// What `--compat pping` reports besides samples, in pping's order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CompatEvent<'a> {
    /// A sample.
    Sample(&'a CompatSample),
    /// The first usable packet, at these whole seconds (pping's "First packet at").
    First(i64),
    /// An interval summary.
    Summary(CompatCounters),
    /// `-c` or `-s` was reached: the counters and the capture seconds covered.
    Stop(CompatCounters, f64),
    /// A batch was processed, or a live capture was quiet for about 100 ms.
    Tick,
}

/// The `--compat pping` loop: every frame goes through pping's filter and parser model
/// ([`compat_view`]), then an extra filter expression if given (pping's `tcp and (EXPR)`), then
/// pping's algorithm. Samples and pping's other reports go to `on` in the order pping prints
/// them. The summary counts frames as [`run`] does; flows are pping's directions.
pub fn run_pping(
    capture: &mut Capture,
    cfg: &CompatConfig,
    mut filter: Option<&mut Filter>,
    stop: &AtomicBool,
    on: &mut dyn FnMut(CompatEvent<'_>) -> io::Result<()>,
    progress: &mut dyn FnMut(u64),
) -> io::Result<Outcome> {
    let started = Instant::now();
    let mut pping = PpingCompat::new(*cfg);
    let live = capture.is_live();
    let mut s = Summary::default();
    let mut error: Option<RunError> = None;
    'run: loop {
        if stop.load(Ordering::Relaxed) {
            s.interrupted = true;
            break;
        }
        if live && cfg.seconds > 0.0 && started.elapsed().as_secs_f64() >= cfg.seconds {
            break;
        }
        let batch = match capture.next_batch(256) {
            Ok(b) if b.is_empty() && live => {
                progress(capture.position());
                on(CompatEvent::Tick)?;
                continue;
            }
            Ok(b) if b.is_empty() => break,
            Ok(b) => b,
            Err(e) => {
                error = Some(e.into());
                break;
            }
        };
        for frame in batch.iter() {
            let meta = s.parse(&frame);
            let view = compat_view(frame.link, frame.data, &meta);
            if view == rampart_rtt::CompatView::Filtered {
                s.filtered += 1;
                continue;
            }
            if let Some(f) = filter.as_deref_mut() {
                match f.matches(frame.link, frame.data) {
                    Ok(true) => {}
                    Ok(false) => {
                        s.filtered += 1;
                        continue;
                    }
                    Err(e) => {
                        error = Some(e.into());
                        break 'run;
                    }
                }
            }
            s.tracked += 1;
            let step = pping.packet(frame.ts.secs() as i64, frame.ts.subsec_micros(), &view);
            if step.first
                && let Some(secs) = pping.first_secs()
            {
                on(CompatEvent::First(secs))?;
            }
            if step.sample
                && let Some(x) = pping.sample()
            {
                s.samples += 1;
                on(CompatEvent::Sample(x))?;
            }
            if step.stop {
                on(CompatEvent::Stop(pping.reported(), pping.elapsed()))?;
                break 'run;
            }
            if step.summary {
                on(CompatEvent::Summary(pping.reported()))?;
            }
        }
        progress(capture.position());
        on(CompatEvent::Tick)?;
    }
    s.kernel = capture.kernel_stats();
    s.flows = pping.counters().flows.max(0) as u64;
    s.elapsed = started.elapsed();
    Ok(Outcome { summary: s, error })
}

#[cfg(test)]
mod tests;
