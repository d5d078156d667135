//! The inline driver: a pair of ports, every frame received on one either sent out of the
//! other or dropped, by the stateful data plane's verdict; a reject's reply goes back out of
//! the port the packet came in on.
//!
//! A port pair is anything that implements [`Ports`]: AF_PACKET rings on two interfaces
//! ([`rampart_capture::PacketPair`]), or [`MemoryPorts`] in tests. Frames borrow the ports'
//! receive buffers and stay valid until the port has sent or released each one; the pipeline
//! decides them in between, so nothing is copied to decide. [`run_inline`] runs to completion
//! per batch: receive, decide, transmit, hand the results on, then (between batches) take a
//! new rule set if one was published in the [`RuleSlot`] and publish the worker's counters in
//! its [`WorkerBoard`].
//!
//! Each worker runs its own pipeline (its own share of the connection table) over its own
//! pair; the ports spread flows over workers so both directions of a flow meet on one (see
//! [`rampart_capture::inline`]).

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rampart_capture::{Frame, PacketPair, PairStats, Timestamp, XdpPair};
use rampart_wire::LinkType;

use crate::Summary;
use crate::driver::{FINISH_CHUNK, wall_clock};
use crate::pipeline::{Events, Pipeline, Verdict};
use crate::replay::{FirewallSink, reply_to};
use crate::stateful::RuleSet;

/// Two ports of a link the engine sits on.
pub trait Ports {
    /// Receives up to `max` frames from either port (each frame's `interface` is the port it
    /// came in on, 0 or 1) and hands them to `decide`, which pushes one verdict per frame.
    /// Then each accepted frame goes out of the other port and every frame's buffer is given
    /// back. Returns how many frames were received (0 when none came within the port's poll
    /// interval).
    fn exchange(
        &mut self,
        max: usize,
        decide: &mut dyn FnMut(&[Frame<'_>], &mut Vec<Verdict>),
    ) -> io::Result<usize>;

    /// Sends `data`, a whole frame built by the engine (a reject's reply), out of port
    /// `port`. Returns whether it went.
    fn inject(&mut self, port: u32, data: &[u8]) -> io::Result<bool>;

    /// The name of a port whose interface went away, if one did.
    fn gone(&self) -> Option<String> {
        None
    }

    /// The ports' counters (the kernel's drops read now).
    fn stats(&mut self) -> PairStats {
        PairStats::default()
    }

    /// Whether the ports' receive buffers are filling faster than they are read (for
    /// failing open under overload).
    fn backlogged(&self) -> bool {
        false
    }
}

thread_local! {
    /// The verdicts of a worker's batch, kept from batch to batch (no allocation per batch).
    static VERDICTS: std::cell::RefCell<Vec<Verdict>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs a port pair's exchange (which takes one `bool` per frame: send it on) with the
/// pipeline's `decide` (one verdict per frame): accepted frames go on, the rest are dropped.
fn forward_accepted(
    decide: &mut dyn FnMut(&[Frame<'_>], &mut Vec<Verdict>),
    exchange: impl FnOnce(&mut dyn FnMut(&[Frame<'_>], &mut Vec<bool>)) -> io::Result<usize>,
) -> io::Result<usize> {
    VERDICTS.with_borrow_mut(|verdicts| {
        exchange(&mut |frames, out| {
            verdicts.clear();
            decide(frames, verdicts);
            out.extend(verdicts.iter().map(|v| *v == Verdict::Accept));
        })
    })
}

/// How long a quiet link waits for a frame before the driver looks at the clock, the rule
/// slot and the stop flag.
pub const POLL_MS: i32 = 10;

impl Ports for PacketPair {
    fn exchange(
        &mut self,
        max: usize,
        decide: &mut dyn FnMut(&[Frame<'_>], &mut Vec<Verdict>),
    ) -> io::Result<usize> {
        forward_accepted(decide, |d| PacketPair::exchange(self, max, POLL_MS, d))
    }

    fn inject(&mut self, port: u32, data: &[u8]) -> io::Result<bool> {
        PacketPair::inject(self, port, data)
    }

    fn gone(&self) -> Option<String> {
        PacketPair::gone(self).map(str::to_string)
    }

    fn stats(&mut self) -> PairStats {
        PacketPair::stats(self)
    }

    fn backlogged(&self) -> bool {
        PacketPair::backlogged(self)
    }
}

impl Ports for XdpPair {
    fn exchange(
        &mut self,
        max: usize,
        decide: &mut dyn FnMut(&[Frame<'_>], &mut Vec<Verdict>),
    ) -> io::Result<usize> {
        forward_accepted(decide, |d| XdpPair::exchange(self, max, POLL_MS, d))
    }

    fn inject(&mut self, port: u32, data: &[u8]) -> io::Result<bool> {
        XdpPair::inject(self, port, data)
    }

    fn stats(&mut self) -> PairStats {
        let x = XdpPair::stats(self);
        let mut s = PairStats::default();
        for (i, p) in x.ports.iter().enumerate() {
            s.received[i] = p.received;
            s.sent[i] = p.sent;
            // A frame accepted on one interface that found the other's TX ring full was
            // lost on the way out of the other.
            s.tx_dropped[1 - i] += p.tx_full;
            s.kernel_dropped[i] = p.kernel.rx_dropped + p.kernel.rx_ring_full;
            s.fill_depth[i] = p.fill_depth;
        }
        s
    }
}

/// The rule set in force for every worker, and where a reload publishes the next one.
/// Workers look at the generation between batches (one relaxed load) and take the new rule
/// set when it changed: a swap is atomic per worker, and no packet sees half a rule set.
#[derive(Debug)]
pub struct RuleSlot {
    generation: AtomicU64,
    current: Mutex<(u64, Arc<RuleSet>)>,
}

impl RuleSlot {
    /// A slot holding `rules` as generation 1.
    pub fn new(rules: Arc<RuleSet>) -> Self {
        Self { generation: AtomicU64::new(1), current: Mutex::new((1, rules)) }
    }

    /// Publishes `rules` for every worker; returns its generation.
    pub fn publish(&self, rules: Arc<RuleSet>) -> u64 {
        let mut c = self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        c.0 += 1;
        c.1 = rules;
        self.generation.store(c.0, Ordering::Release);
        c.0
    }

    /// The generation published last.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The rule set published last, with its generation.
    pub fn current(&self) -> (u64, Arc<RuleSet>) {
        let c = self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        (c.0, Arc::clone(&c.1))
    }
}

/// A worker's counters, published between batches for `rampart status` and the metrics
/// endpoint (relaxed stores of the worker's own totals; readers see a recent batch's).
#[derive(Debug, Default)]
pub struct WorkerBoard {
    /// Frames received.
    pub received: AtomicU64,
    /// Bytes received.
    pub bytes: AtomicU64,
    /// Frames sent out of the other port.
    pub forwarded: AtomicU64,
    /// Frames dropped by a verdict.
    pub dropped: AtomicU64,
    /// Frames rejected (dropped, with a reply where Linux sends one).
    pub rejected: AtomicU64,
    /// Replies sent for rejected frames.
    pub replies: AtomicU64,
    /// New connections accepted untracked because the table was full (failing open).
    pub fail_open: AtomicU64,
    /// Frames forwarded undecided while the worker was overloaded (failing open).
    pub bypassed: AtomicU64,
    /// Frames the ports could not send (the driver kept refusing them).
    pub tx_dropped: AtomicU64,
    /// Frames the kernel dropped because a receive ring was full.
    pub kernel_dropped: AtomicU64,
    /// Frames too large for a receive slot, dropped.
    pub oversize: AtomicU64,
    /// Live flows in the worker's table.
    pub flows: AtomicU64,
    /// Connections tracked.
    pub connections: AtomicU64,
    /// The rule set generation the worker runs.
    pub generation: AtomicU64,
    /// AF_XDP: the frames each port's fill ring is kept at (0 for AF_PACKET).
    pub fill_depth: [AtomicU64; 2],
}

/// What an inline run counted besides the pipeline's summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InlineCounts {
    /// Frames sent out of the other port.
    pub forwarded: u64,
    /// Frames dropped by a verdict.
    pub dropped: u64,
    /// Frames rejected.
    pub rejected: u64,
    /// Replies sent for rejected frames.
    pub replies: u64,
    /// New connections accepted untracked because the table was full.
    pub fail_open: u64,
    /// Frames forwarded undecided while the worker was overloaded.
    pub bypassed: u64,
    /// Reloads taken.
    pub reloads: u64,
    /// The ports' counters at the end.
    pub ports: PairStats,
}

/// How an inline run ended.
#[derive(Debug)]
pub struct InlineEnd {
    /// What the pipeline saw.
    pub summary: Summary,
    /// What the driver counted.
    pub counts: InlineCounts,
    /// The port failure that ended the run (an interface that went away, a socket error);
    /// `None` when the stop flag ended it. Every flow's record was handed on either way.
    pub error: Option<io::Error>,
}

/// Options of [`run_inline`].
#[derive(Debug, Clone, Copy)]
pub struct InlineConfig {
    /// Frames taken per exchange.
    pub batch: usize,
    /// How often the sink's [`FirewallSink::batch_done`] is called while traffic flows (it
    /// is called at least this often, and after every quiet poll).
    pub publish_every: Duration,
    /// Fail open under overload: while the ports' receive buffers are at least half full
    /// ([`Ports::backlogged`]), frames are forwarded undecided (and counted) rather than left
    /// to overflow the buffers and be lost, as NFQUEUE's fail-open passes what its full
    /// queue cannot take. Connection tracking does not see them.
    pub fail_open_overload: bool,
}

impl Default for InlineConfig {
    fn default() -> Self {
        Self { batch: 256, publish_every: Duration::from_millis(100), fail_open_overload: false }
    }
}

/// Forwards between the two ports of `ports` until `stop` is set (or a port fails), deciding
/// every frame with `pipeline`, which must have the stateful data plane. While the link is
/// quiet, capture time follows the wall clock so idle connections still end. With `rules`, a
/// rule set published there replaces the pipeline's between batches (connection state is
/// kept). At the end every live flow's record is handed to `sink`. Errors are the sink's
/// (output failures); a port's failure ends the run and is returned in [`InlineEnd::error`].
pub fn run_inline(
    ports: &mut dyn Ports,
    pipeline: &mut Pipeline,
    cfg: &InlineConfig,
    rules: Option<&RuleSlot>,
    board: Option<&WorkerBoard>,
    stop: &AtomicBool,
    sink: &mut dyn FirewallSink,
) -> io::Result<InlineEnd> {
    let started = Instant::now();
    let mut s = Summary::default();
    let mut counts = InlineCounts::default();
    let mut events = Events::default();
    let mut verdicts = Vec::new();
    // A batch's replies: the frame's index and the port it came in on, and the reply.
    let mut replies: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut reply_ports: Vec<u32> = Vec::new();
    // The slot's generation if the pipeline already runs its rule set; else the first batch
    // takes it.
    let mut generation = match (rules, pipeline.stateful()) {
        (Some(slot), Some(st)) => {
            let (g, r) = slot.current();
            if Arc::ptr_eq(&r, st.rules()) { g } else { 0 }
        }
        _ => 0,
    };
    let mut published = Instant::now();
    let mut failure = None;
    let mut sink_error = None;
    while !stop.load(Ordering::Relaxed) {
        if let Some(slot) = rules
            && slot.generation() != generation
        {
            let (g, new) = slot.current();
            generation = g;
            let source = new.source.clone();
            if let Some(st) = pipeline.stateful_mut() {
                st.reload(new);
            }
            counts.reloads += 1;
            sink.reload(wall_clock(), &source, Ok(()))?;
        }
        events.clear();
        replies.clear();
        reply_ports.clear();
        if cfg.fail_open_overload && ports.backlogged() {
            // Behind: pass a batch undecided, so the buffers drain instead of overflowing.
            match ports.exchange(cfg.batch, &mut |frames, out| {
                out.clear();
                out.resize(frames.len(), Verdict::Accept);
            }) {
                Ok(n) => {
                    counts.bypassed += n as u64;
                    counts.forwarded += n as u64;
                    if published.elapsed() >= cfg.publish_every {
                        published = Instant::now();
                        counts.ports = ports.stats();
                        publish(board, pipeline, &s, &counts, generation);
                        sink.batch_done(pipeline, &s)?;
                    }
                    continue;
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        let exchanged = ports.exchange(cfg.batch, &mut |frames, out| {
            pipeline.process(frames, Verdict::Drop, &mut verdicts, &mut events, &mut s);
            out.clear();
            out.extend_from_slice(&verdicts);
            let Some(rs) = pipeline.stateful().map(|st| Arc::clone(st.rules())) else {
                return;
            };
            for (i, (f, d)) in frames.iter().zip(pipeline.decisions()).enumerate() {
                match d.verdict {
                    Verdict::Accept => counts.forwarded += 1,
                    Verdict::Drop => counts.dropped += 1,
                    Verdict::Reject => counts.rejected += 1,
                }
                if d.verdict == Verdict::Accept && d.reason == Some(crate::stateful::Why::TableFull)
                {
                    counts.fail_open += 1;
                }
                if let Some(r) = reply_to(pipeline, f, d) {
                    replies.push((i, r));
                    reply_ports.push(f.interface);
                }
            }
            // The sink sees the batch at once (a shared sink locks once per batch).
            if let Err(e) = sink.packets(frames, pipeline.decisions(), &rs, &replies) {
                sink_error = Some(e);
            }
        });
        let n = match exchanged {
            Ok(n) => n,
            Err(e) => {
                failure = Some(e);
                break;
            }
        };
        if let Some(e) = sink_error.take() {
            return Err(e);
        }
        for (&port, (_, r)) in reply_ports.iter().zip(&replies) {
            match ports.inject(port, r) {
                Ok(true) => counts.replies += 1,
                Ok(false) => {}
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        if n == 0 {
            pipeline.advance(wall_clock(), u32::MAX, &mut events);
            if let Some(name) = ports.gone() {
                failure = Some(io::Error::new(
                    io::ErrorKind::NotConnected,
                    format!("{name}: the interface disappeared"),
                ));
            }
        }
        for o in &events.records {
            s.count_record(&o.record);
            sink.record(&o.record)?;
        }
        if n == 0 || published.elapsed() >= cfg.publish_every {
            published = Instant::now();
            counts.ports = ports.stats();
            publish(board, pipeline, &s, &counts, generation);
            sink.batch_done(pipeline, &s)?;
        }
        if failure.is_some() {
            break;
        }
    }
    s.interrupted = failure.is_none();
    let order = pipeline.finish_order();
    for part in order.chunks(FINISH_CHUNK) {
        events.clear();
        pipeline.finish_flows(part, &mut events);
        for o in &events.records {
            s.count_record(&o.record);
            sink.record(&o.record)?;
        }
    }
    pipeline.stats_into(&mut s);
    counts.ports = ports.stats();
    publish(board, pipeline, &s, &counts, generation);
    sink.batch_done(pipeline, &s)?;
    s.elapsed = started.elapsed();
    Ok(InlineEnd { summary: s, counts, error: failure })
}

fn publish(
    board: Option<&WorkerBoard>,
    pipeline: &Pipeline,
    s: &Summary,
    c: &InlineCounts,
    generation: u64,
) {
    let Some(b) = board else { return };
    let sum = |a: [u64; 2]| a[0] + a[1];
    let put = |a: &AtomicU64, v: u64| a.store(v, Ordering::Relaxed);
    put(&b.received, s.packets);
    put(&b.bytes, s.wire_bytes);
    put(&b.forwarded, c.forwarded);
    put(&b.dropped, c.dropped);
    put(&b.rejected, c.rejected);
    put(&b.replies, c.replies);
    put(&b.fail_open, c.fail_open);
    put(&b.bypassed, c.bypassed);
    put(&b.tx_dropped, sum(c.ports.tx_dropped));
    put(&b.kernel_dropped, sum(c.ports.kernel_dropped));
    put(&b.oversize, sum(c.ports.oversize));
    put(&b.flows, pipeline.table().len() as u64);
    put(&b.connections, pipeline.stateful().map_or(0, |st| st.conntrack().entries()));
    put(&b.generation, generation);
    for (a, &d) in b.fill_depth.iter().zip(&c.ports.fill_depth) {
        put(a, u64::from(d));
    }
}

/// A frame queued on a [`MemoryPorts`] port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryFrame {
    /// Capture time.
    pub ts: Timestamp,
    /// The bytes.
    pub data: Vec<u8>,
}

/// Two ports in memory: frames queued on a port's receive side come out of
/// [`Ports::exchange`] in time order, and what is forwarded (or injected) lands on the
/// transmit side of the port it leaves by. For tests of the inline path without interfaces.
#[derive(Debug, Default)]
pub struct MemoryPorts {
    /// Per port: frames waiting to be received.
    pub rx: [VecDeque<MemoryFrame>; 2],
    /// Per port: frames sent out of it.
    pub tx: [Vec<MemoryFrame>; 2],
    /// The link type of both ports.
    pub link: Option<LinkType>,
}

impl Ports for MemoryPorts {
    fn exchange(
        &mut self,
        max: usize,
        decide: &mut dyn FnMut(&[Frame<'_>], &mut Vec<Verdict>),
    ) -> io::Result<usize> {
        // Take up to `max` frames from both ports, oldest first.
        let mut taken: Vec<(u32, MemoryFrame)> = Vec::new();
        while taken.len() < max {
            let next = match (self.rx[0].front(), self.rx[1].front()) {
                (Some(a), Some(b)) => usize::from(b.ts < a.ts),
                (Some(_), None) => 0,
                (None, Some(_)) => 1,
                (None, None) => break,
            };
            let f = self.rx[next].pop_front().expect("the port has a frame");
            taken.push((next as u32, f));
        }
        let n = taken.len();
        let link = self.link.unwrap_or(LinkType::Ethernet);
        let frames: Vec<Frame<'_>> = taken
            .iter()
            .map(|(port, f)| Frame {
                ts: f.ts,
                origlen: f.data.len() as u32,
                link,
                interface: *port,
                offset: 0,
                data: &f.data,
            })
            .collect();
        let mut verdicts = Vec::with_capacity(frames.len());
        decide(&frames, &mut verdicts);
        drop(frames);
        for (i, (port, f)) in taken.into_iter().enumerate() {
            if verdicts.get(i) == Some(&Verdict::Accept) {
                self.tx[1 - port as usize].push(f);
            }
        }
        Ok(n)
    }

    fn inject(&mut self, port: u32, data: &[u8]) -> io::Result<bool> {
        let ts = self.tx.iter().flatten().map(|f| f.ts).max().unwrap_or_default();
        self.tx[(port as usize).min(1)].push(MemoryFrame { ts, data: data.to_vec() });
        Ok(true)
    }
}
