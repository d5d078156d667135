//! `--workers N`: the flow stage sharded over threads that share nothing.
//!
//! A flow belongs to one worker: a symmetric Toeplitz hash of the flow key (Woo and Park's
//! `0x6d5a` key, so both directions meet) through a round-robin RETA of 128 entries, exactly
//! what a NIC configured with that key would do. Jobs travel over single-producer
//! single-consumer rings (`rtrb`), one each way per worker; emptied vectors travel back for
//! reuse. The calling thread reads the capture and applies the filter and limits, then:
//!
//! - for input whose batches lie in bytes other threads can read (a file or standard input
//!   read into buffers handed out, [`FileAccess::Handed`](rampart_capture::FileAccess), a
//!   mapping, bytes in memory), it sends every worker the same list of frame
//!   positions in the bytes they lie in ([`SharedBytes`]; a job ends where a buffer does,
//!   so its frames lie in one). Worker k parses the k-th share of the list (consecutive
//!   shares, once per frame), and hands each parsed packet to the worker that owns its flow
//!   over a worker-to-worker ring; each worker then accounts what it was handed, share by
//!   share, so in capture order. Worker 0 runs on the calling thread, between its reads:
//!   N workers take N threads, not N + 1 sharing N cores; it owns the shard queue that
//!   carried the fewest packets of the first job ([`choose_owners`]). The shares are not
//!   equal: the packets a worker accounts are fixed by its flows, and a capture's heavy flows
//!   can load one worker far more than another, so the calling thread cuts each job from the
//!   workers' reported times ([`Balance`]; worker 0's include the reading), giving a worker
//!   with less to do more of the parsing, until their times per job are alike;
//! - for a live ring (or a stream read through a reused buffer), it parses each frame itself
//!   and sends each packet's owned summary ([`Packet`](crate::packet::Packet)) to the worker
//!   that owns its flow, with its payload copied beside it when application identification is
//!   on (shared bytes need no copy: the owner reads the payload from the job's bytes).
//!
//! Every batch reaches every worker, possibly empty, with the batch's capture time, so each
//! worker's table ends idle flows at the same batches one table would (the table's idle
//! timers are exact). Outputs carry their packet's position in the job; the calling thread
//! merges each batch's samples and records by position, idle-ended records by last packet,
//! first packet and key, and the records at the end of input by first packet and key: the same
//! orders one [`Pipeline`](crate::Pipeline) produces, so the output is byte for byte that of one worker.
//! When the sink prints each sample as a line of its own ([`Sink::sample_text`]), each worker
//! writes the lines of its samples as it makes them, and the calling thread merges and copies
//! lines instead of formatting every sample itself.
//! Limits that are global by nature are divided: each worker's table holds `max_flows / N`
//! flows and its RTT stage `max_tsvals / N` timestamps, so when a table is full, which flow is
//! evicted can differ from a single table's choice.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use std::thread::{self, Thread};
use std::time::Instant;

use rampart_capture::{Batch, Capture, Frame, LinkType, SharedBytes, Timestamp};
use rampart_flow::{FlowId, FlowKey, IpFamily, TableConfig};
use rampart_rss::{Key, Reta, Toeplitz};

use crate::driver::{Consumer, FINISH_CHUNK, SampleText, Sink, emit, read_batches, write_lines};
use crate::packet::{Packet, Payload, PayloadSource};
use crate::pipeline::{Events, Ordered, Pipeline};
use crate::{FlowsConfig, Outcome, Parser, Slot, Summary};

/// Jobs a worker may be behind the reader.
const IN_FLIGHT: usize = 4;
/// Packets per worker that fill a job: capture batches are grouped so that waking a thread
/// costs little next to the work it is woken for.
const JOB_PACKETS: usize = 4096;
/// Frames whose first bytes a worker asks for ahead of the one it parses.
const FRAME_AHEAD: usize = 4;
/// Entries in the steering RETA (more when there are more workers than that).
const RETA_SIZE: usize = 128;

/// Which worker owns a flow: the symmetric Toeplitz hash of its key through a round-robin RETA.
///
/// The symmetric key repeats every 16 bits, so its hash of any input equals its hash of the
/// XOR of the input's 16-bit words placed first: [`Shard::of`] folds the key into 16 bits and
/// looks the hash up in two 256-entry tables, which is exact (the tests compare it with the
/// full Toeplitz hash) and inlines into the reading loop.
#[derive(Clone, Debug)]
pub struct Shard {
    t: Toeplitz,
    reta: Reta,
    /// Hash contributions of the fold's high and low byte.
    fold: [[u32; 256]; 2],
}

impl Shard {
    /// Steering over `workers` queues.
    pub fn new(workers: usize) -> Self {
        let key = Key::symmetric(40).expect("40 is a key length");
        let size = RETA_SIZE.max(workers.next_power_of_two());
        let reta = Reta::round_robin(size, workers.max(1)).expect("valid RETA");
        let t =
            Toeplitz::with_kernel(key, rampart_rss::Kernel::Table).expect("tables run anywhere");
        let fold = [0, 1].map(|at| std::array::from_fn(|x| t.hash(&byte_at(at, x as u8))));
        Self { t, reta, fold }
    }

    /// The symmetric Toeplitz hash of the key's addresses and ports (both directions alike).
    #[inline]
    pub fn hash(&self, k: &FlowKey) -> u32 {
        let fold16 =
            |x: &[u8]| x.chunks_exact(2).fold(0u16, |f, c| f ^ u16::from_be_bytes([c[0], c[1]]));
        let len = if k.family() == IpFamily::V4 { 4 } else { 16 };
        let f = fold16(&k.addr_a_bytes()[..len])
            ^ fold16(&k.addr_b_bytes()[..len])
            ^ k.port_a()
            ^ k.port_b();
        let [hi, lo] = f.to_be_bytes();
        self.fold[0][usize::from(hi)] ^ self.fold[1][usize::from(lo)]
    }

    /// The worker for a flow key.
    #[inline]
    pub fn of(&self, k: &FlowKey) -> usize {
        self.reta.queue(self.hash(k))
    }

    /// The full Toeplitz hash of the key's input, the definition [`Shard::hash`] shortcuts.
    pub fn toeplitz(&self, k: &FlowKey) -> u32 {
        if k.family() == IpFamily::V4 {
            let (a, b) = (k.addr_a_bytes(), k.addr_b_bytes());
            self.t.hash_v4(
                [a[0], a[1], a[2], a[3]],
                [b[0], b[1], b[2], b[3]],
                k.port_a(),
                k.port_b(),
            )
        } else {
            self.t.hash_v6(*k.addr_a_bytes(), *k.addr_b_bytes(), k.port_a(), k.port_b())
        }
    }
}

/// A two-byte input with `x` at byte `at`.
fn byte_at(at: usize, x: u8) -> [u8; 2] {
    let mut b = [0; 2];
    b[at] = x;
    b
}

/// One capture batch within a job: its packets end at `end` in the job's work, its capture
/// time is `now`, and flows the idle timeout ends after it take position `tick`.
#[derive(Clone, Copy)]
struct Cut {
    end: usize,
    now: Timestamp,
    tick: u32,
}

/// Where a frame lies in the shared input, and what parsing it needs besides its bytes.
#[derive(Clone, Copy, Debug)]
struct FrameRef {
    ts: Timestamp,
    origlen: u32,
    caplen: u32,
    link: LinkType,
    start: usize,
    pos: u32,
}

impl FrameRef {
    #[inline]
    fn frame<'a>(&self, bytes: &'a [u8]) -> Frame<'a> {
        Frame {
            ts: self.ts,
            origlen: self.origlen,
            link: self.link,
            interface: 0,
            offset: self.start as u64,
            data: &bytes[self.start..self.start + self.caplen as usize],
        }
    }
}

enum Job {
    /// Parsed packets of this worker's flows, with their payloads copied out of the reader's
    /// buffer when application identification is on.
    Batch { work: Vec<Packet>, bytes: Vec<u8>, cuts: Vec<Cut>, events: Events },
    /// Every frame, to parse and keep those of this worker's flows (`Cut::end` indexes frames),
    /// and the bytes they lie in.
    Frames {
        frames: Arc<Vec<FrameRef>>,
        bytes: Option<SharedBytes>,
        /// The frames this worker parses: consecutive shares, in worker order.
        share: std::ops::Range<usize>,
        cuts: Vec<Cut>,
        events: Events,
    },
    /// The input has ended: the next part of the live flows' records, in finishing order.
    Finish { events: Events },
}

enum Done {
    Batch {
        work: Vec<Packet>,
        bytes: Vec<u8>,
        cuts: Vec<Cut>,
        events: Events,
        /// How long the worker spent on its last parse and on this accounting.
        busy: Busy,
    },
    /// Up to [`FINISH_CHUNK`] records of live flows, in finishing order; `last` when no more
    /// follow, with the worker's counters.
    Finished { events: Events, last: bool, s: Option<Box<Summary>> },
}

/// A worker's time on a job, for sizing its next parse shares: the frames it last parsed
/// and how long that took, and how long it took to account its flows' packets of a job of
/// `frames` frames.
#[derive(Clone, Copy, Debug, Default)]
struct Busy {
    parsed: u64,
    parse_ns: u64,
    frames: u64,
    account_ns: u64,
}

/// The reading thread's view of the workers' loads, from which it cuts each frames job into
/// parse shares. The packets a worker accounts are fixed by its flows (the shard), and a
/// capture's heavy flows can load one worker far more than another; the parse shares are
/// what can move, so a worker with less to account parses more, until the workers' times
/// per job are alike.
#[derive(Debug)]
struct Balance {
    /// Per worker, smoothed, in ns per frame of a job: its accounting, and its parsing per
    /// frame parsed.
    account_ns: Vec<Option<f64>>,
    parse_ns: Vec<Option<f64>>,
    /// The reading thread's own time per frame of a job (reading, listing, merging,
    /// output), which worker 0 shares.
    reading_ns: Option<f64>,
}

impl Balance {
    fn new(n: usize) -> Self {
        Self { account_ns: vec![None; n], parse_ns: vec![None; n], reading_ns: None }
    }

    /// Takes the reading thread's time on a job of `frames` frames.
    fn note_reading(&mut self, ns: u64, frames: usize) {
        if frames > 0 {
            ema(&mut self.reading_ns, ns as f64 / frames as f64);
        }
    }

    /// Worker `k`'s time besides parsing on a job of `frames` frames.
    fn fixed(&self, k: usize, frames: usize) -> f64 {
        let reading = if k == 0 { self.reading_ns.unwrap_or(0.0) } else { 0.0 };
        (self.account_ns[k].unwrap_or(0.0) + reading) * frames as f64
    }

    /// Takes a worker's report.
    fn note(&mut self, k: usize, b: &Busy) {
        if b.frames > 0 {
            ema(&mut self.account_ns[k], b.account_ns as f64 / b.frames as f64);
        }
        if b.parsed > 0 {
            ema(&mut self.parse_ns[k], b.parse_ns as f64 / b.parsed as f64);
        }
    }

    /// The parse shares of a job of `frames` frames: consecutive ranges, one per worker, that
    /// make the workers' times (accounting plus parsing) as alike as the loads allow; equal
    /// shares until every worker has reported.
    fn shares(&self, frames: usize) -> Vec<std::ops::Range<usize>> {
        let n = self.account_ns.len();
        let parse: Vec<f64> = self.parse_ns.iter().map(|p| p.unwrap_or(0.0)).collect();
        let known = parse.iter().all(|&p| p > 0.0);
        let mut want: Vec<f64> = vec![frames as f64 / n as f64; n];
        if known && frames > 0 {
            // Worker k's time with s frames: account[k] + s * parse[k]. Equal times T with
            // shares summing to the job: T = (frames + sum(account/parse)) / sum(1/parse).
            // A worker whose accounting alone passes T parses nothing, and T is found again
            // without it.
            let mut on = vec![true; n];
            loop {
                let inv: f64 = (0..n).filter(|&k| on[k]).map(|k| 1.0 / parse[k]).sum();
                let acc: f64 =
                    (0..n).filter(|&k| on[k]).map(|k| self.fixed(k, frames) / parse[k]).sum();
                let t = (frames as f64 + acc) / inv;
                let mut changed = false;
                for k in 0..n {
                    want[k] = if on[k] { (t - self.fixed(k, frames)) / parse[k] } else { 0.0 };
                    if on[k] && want[k] < 0.0 {
                        on[k] = false;
                        changed = true;
                    }
                }
                if !changed {
                    break;
                }
            }
        }
        let mut out = Vec::with_capacity(n);
        let mut at = 0usize;
        let mut sum = 0.0;
        for (k, w) in want.iter().enumerate() {
            sum += w.max(0.0);
            let end = if k + 1 == n { frames } else { (sum.round() as usize).clamp(at, frames) };
            out.push(at..end);
            at = end;
        }
        out
    }
}

/// Which worker owns each of the shard's queues, shared by the workers and set once.
type Owners = Arc<OnceLock<Arc<[usize]>>>;

/// The owner of each of the shard's queues, from a sample of the traffic (the first job's
/// frames, parsed here): the queue that carries the fewest packets goes to worker 0, which
/// runs on the reading thread and so has the reading to do besides, and worker 0's queue to
/// that queue's worker. A capture's heavy flows can load one queue far more than another;
/// which worker owns which queue changes nothing in the output (merged by position).
fn choose_owners(
    frames: &[FrameRef],
    bytes: &[u8],
    parser: &mut Parser,
    shard: &Shard,
    n: usize,
) -> Arc<[usize]> {
    let mut load = vec![0u64; n];
    let mut scratch = Summary::default();
    for f in frames {
        if let Some(p) = parser.prepare_if(&f.frame(bytes), 0, f.pos, &mut scratch, |_| true, true)
        {
            load[shard.of(&p.info.key)] += 1;
        }
    }
    let lightest = (0..n).min_by_key(|&k| (load[k], k)).unwrap_or(0);
    let mut owners: Vec<usize> = (0..n).collect();
    owners.swap(0, lightest);
    owners.into()
}

/// The calling thread's CPU time in nanoseconds (0 where the kernel does not tell it).
fn thread_cpu_ns() -> u64 {
    crate::breakdown::thread_cpu_ns().unwrap_or(0)
}

/// Smooths `x` into `old` over about eight values; the first is taken as it is.
fn ema(old: &mut Option<f64>, x: f64) {
    *old = Some(old.map_or(x, |o| o + (x - o) / 8.0));
}

/// Waits for the ring to yield (see [`ready`]); `None` once the producer is gone and the
/// ring is empty.
fn wait<T>(ring: &mut rtrb::Consumer<T>) -> Option<T> {
    if ready(ring) { ring.pop().ok() } else { None }
}

/// One worker's state.
struct Worker {
    pipeline: Pipeline,
    shard: Shard,
    parser: Parser,
    /// Counts of the frames this worker parsed.
    s: Summary,
    /// Rings to and from the other workers (`None` at this worker's own index).
    to: Vec<Option<rtrb::Producer<Vec<Packet>>>>,
    from: Vec<Option<rtrb::Consumer<Vec<Packet>>>>,
    /// Every worker's thread, set before the first job.
    threads: Arc<OnceLock<Vec<Thread>>>,
    /// Parsed packets per owner, and the lists handed in, per sender.
    out: Vec<Vec<Packet>>,
    got: Vec<Vec<Packet>>,
    pool: Vec<Vec<Packet>>,
    /// This worker's own packets of parsed jobs not yet accounted.
    mine: VecDeque<Vec<Packet>>,
    /// At the end of input: the live flows still to finish, in order, and how far.
    finishing: Option<(Vec<FlowId>, usize)>,
    /// Where this worker's counters are published, if anywhere.
    slot: Option<Slot>,
    /// Its last parse: frames and nanoseconds (reported with its next answer).
    parsed: (u64, u64),
    /// Which worker owns the flows of each of the shard's queues (set before the first job).
    owners: Owners,
    /// The frames job parsed last, waiting to be accounted.
    pending: Option<Pending>,
    /// Writes the lines of this worker's samples, when the sink asks for them.
    text: Option<Box<dyn SampleText>>,
}

/// A worker's ends of its rings to the reading thread, and that thread.
struct Rings {
    jobs: rtrb::Consumer<Job>,
    done: rtrb::Producer<Done>,
    main: Thread,
}

/// What a worker's [`Worker::step`] did.
enum Step {
    /// Took a job (or accounted one).
    Worked,
    /// Nothing waited.
    Idle,
    /// The reading thread is gone.
    Stop,
}

/// Waits until the ring has an item, parking between tries (the other side unparks after
/// each push); false once the producer is gone and the ring is empty.
fn ready<T>(ring: &rtrb::Consumer<T>) -> bool {
    let mut spins = 0;
    loop {
        if !ring.is_empty() {
            return true;
        }
        if ring.is_abandoned() {
            return !ring.is_empty();
        }
        if spins < 64 {
            spins += 1;
            std::hint::spin_loop();
        } else {
            thread::park();
        }
    }
}

impl Worker {
    /// Publishes this worker's counters and its pipeline's, when its slot is due (between
    /// jobs, never on the packet path).
    fn publish(&mut self) {
        if let Some(slot) = &mut self.slot
            && slot.due()
        {
            let (s, pipeline) = (&self.s, &self.pipeline);
            slot.publish(|p| {
                p.clone_from(s);
                pipeline.stats_into(p);
            });
        }
    }

    /// Answers jobs in order, waiting for each: a worker on a thread of its own.
    fn run(mut self, mut rings: Rings) {
        loop {
            match self.step(&mut rings, true) {
                Step::Worked => {}
                Step::Stop => return,
                Step::Idle => {
                    if !ready(&rings.jobs) {
                        return;
                    }
                }
            }
        }
    }

    /// Takes the next job waiting, if any; with none waiting and `eager`, accounts the frames
    /// job parsed last instead. A frames job is parsed and handed out at once but accounted
    /// only after the next job is parsed (or when no job is waiting), so a worker does not
    /// stand idle waiting for the others' packets of the job it just parsed. Never waits for
    /// a job.
    fn step(&mut self, rings: &mut Rings, eager: bool) -> Step {
        let Rings { jobs, done, main } = rings;
        let job = match jobs.pop() {
            Ok(job) => job,
            Err(_) => {
                let Some(p) = self.pending.take().filter(|_| eager) else {
                    return if jobs.is_abandoned() { Step::Stop } else { Step::Idle };
                };
                let out = self.account_frames(p);
                if !answer(done, main, out) {
                    return Step::Stop;
                }
                self.publish();
                return Step::Worked;
            }
        };
        let out = match job {
            Job::Frames { frames, bytes, share, cuts, events } => {
                let started = Instant::now();
                let n = share.len() as u64;
                self.parse_share(&frames[share], bytes.as_deref().unwrap_or_default());
                self.parsed = (n, started.elapsed().as_nanos() as u64);
                // The reading thread reuses the list once every worker has let go of it.
                drop(frames);
                self.hand_out();
                match self.pending.replace(Pending { cuts, events, bytes }) {
                    Some(p) => self.account_frames(p),
                    None => return Step::Worked,
                }
            }
            job => {
                if let Some(p) = self.pending.take() {
                    let out = self.account_frames(p);
                    if !answer(done, main, out) {
                        return Step::Stop;
                    }
                }
                self.job(job)
            }
        };
        if !answer(done, main, out) {
            return Step::Stop;
        }
        if self.finishing.is_none() {
            self.publish();
        }
        Step::Worked
    }

    /// Takes this worker's packets of the oldest parsed job from every worker, in worker order
    /// (which is capture order: shares are consecutive), and accounts them batch by batch.
    fn account_frames(&mut self, p: Pending) -> Done {
        let Pending { cuts, mut events, bytes } = p;
        for j in 0..self.from.len() {
            let list = match &mut self.from[j] {
                Some(ring) => wait(ring).expect("a worker ended early (it panicked)"),
                None => self.mine.pop_front().expect("this worker's own share"),
            };
            self.got.push(list);
        }
        // Timed from here: the waits for the other workers' lists are not this worker's load.
        let started = Instant::now();
        let mut next = vec![0; self.got.len()];
        // The job's bytes, where the payloads lie; the reading thread reuses a buffer once
        // every worker has let go of it.
        let shared: &[u8] = bytes.as_deref().unwrap_or_default();
        let src = PayloadSource { shared, ..PayloadSource::default() };
        for c in &cuts {
            for (list, i) in self.got.iter_mut().zip(&mut next) {
                let end = *i + list[*i..].partition_point(|w| w.pos < c.tick);
                self.pipeline.account(&mut list[*i..end], &src, None, &mut events);
                *i = end;
            }
            self.pipeline.advance(c.now, c.tick, &mut events);
        }
        write_lines(&mut self.text, &mut events);
        for mut list in self.got.drain(..) {
            list.clear();
            self.pool.push(list);
        }
        let busy = Busy {
            parsed: self.parsed.0,
            parse_ns: self.parsed.1,
            frames: cuts.last().map_or(0, |c| c.end as u64),
            account_ns: started.elapsed().as_nanos() as u64,
        };
        Done::Batch { work: Vec::new(), bytes: Vec::new(), cuts, events, busy }
    }

    fn job(&mut self, job: Job) -> Done {
        match job {
            Job::Batch { mut work, bytes, cuts, mut events } => {
                let src = PayloadSource { copied: &bytes, ..PayloadSource::default() };
                let mut start = 0;
                for c in &cuts {
                    self.pipeline.account(&mut work[start..c.end], &src, None, &mut events);
                    self.pipeline.advance(c.now, c.tick, &mut events);
                    start = c.end;
                }
                write_lines(&mut self.text, &mut events);
                Done::Batch { work, bytes, cuts, events, busy: Busy::default() }
            }
            Job::Frames { .. } => unreachable!("run handles frames jobs"),
            Job::Finish { mut events } => {
                let (order, at) =
                    self.finishing.get_or_insert_with(|| (self.pipeline.finish_order(), 0));
                let end = (*at + FINISH_CHUNK).min(order.len());
                let part = &order[*at..end];
                *at = end;
                let last = end == order.len();
                self.pipeline.finish_flows(part, &mut events);
                // With the last part, once every flow is retired (identification counts its
                // labels then).
                let s = last.then(|| {
                    let mut s = std::mem::take(&mut self.s);
                    self.pipeline.stats_into(&mut s);
                    Box::new(s)
                });
                Done::Finished { events, last, s }
            }
        }
    }

    /// Parses this worker's share of the frames, sorting the packets by owner.
    fn parse_share(&mut self, share: &[FrameRef], bytes: &[u8]) {
        let owners = self.owners.get().cloned();
        let owners = owners.as_deref();
        for o in &mut self.out {
            if o.capacity() == 0 {
                *o = self.pool.pop().unwrap_or_default();
            }
            o.reserve(share.len());
        }
        // The reading thread just wrote these bytes, on another CPU: each frame's first
        // read is a transfer from that CPU's cache, asked for a few frames ahead.
        let ahead = |k: usize| {
            if let Some(f) = share.get(k) {
                let p = bytes.as_ptr().wrapping_add(f.start);
                rampart_flow::prefetch(p);
                rampart_flow::prefetch(p.wrapping_add(64));
            }
        };
        (0..FRAME_AHEAD).for_each(ahead);
        let (shard, out) = (&self.shard, &mut self.out);
        for (k, f) in share.iter().enumerate() {
            ahead(k + FRAME_AHEAD);
            let frame = f.frame(bytes);
            // Built in its owner's list, its payload located in the shared input, where the
            // owner will read it.
            self.parser.prepare_to(&frame, f.start as u64, f.pos, &mut self.s, |key| {
                let q = shard.of(key);
                &mut out[owners.map_or(q, |o| o[q])]
            });
        }
    }

    /// Hands each other worker its packets of the job just parsed; keeps its own.
    fn hand_out(&mut self) {
        let threads = self.threads.get().expect("threads are known before the first job");
        for (j, ring) in self.to.iter_mut().enumerate() {
            let list = std::mem::take(&mut self.out[j]);
            match ring {
                Some(ring) => {
                    if ring.push(list).is_err() {
                        unreachable!("a worker is at most IN_FLIGHT jobs ahead of another");
                    }
                    threads[j].unpark();
                }
                None => self.mine.push_back(list),
            }
        }
    }
}

/// A parsed frames job waiting to be accounted.
struct Pending {
    cuts: Vec<Cut>,
    events: Events,
    bytes: Option<SharedBytes>,
}

/// Sends an answer to the reading thread; false once it is gone.
fn answer(done: &mut rtrb::Producer<Done>, main: &Thread, out: Done) -> bool {
    // The ring holds more than the jobs in flight, so it is never full.
    if done.push(out).is_err() {
        return false;
    }
    main.unpark();
    true
}

/// The calling thread's ends of one worker's rings.
struct Lane {
    jobs: rtrb::Producer<Job>,
    done: rtrb::Consumer<Done>,
    thread: Thread,
    work: Vec<Packet>,
    /// Payloads of `work`, copied when the reader parses (its buffer is reused).
    bytes: Vec<u8>,
    cuts: Vec<Cut>,
}

/// Reusable vectors.
#[derive(Default)]
struct Spares {
    frames: Vec<Vec<FrameRef>>,
    work: Vec<Vec<Packet>>,
    bytes: Vec<Vec<u8>>,
    cuts: Vec<Vec<Cut>>,
    events: Vec<Events>,
}

/// [`crate::run`] with `cfg.workers` workers.
pub(crate) fn run(
    capture: &mut Capture,
    cfg: &FlowsConfig,
    filter: Option<&mut rampart_capture::Filter>,
    stop: &AtomicBool,
    sink: &mut dyn Sink,
    progress: &mut dyn FnMut(u64),
) -> io::Result<Outcome> {
    let started = Instant::now();
    let n = cfg.workers.max(1);
    let shard = Shard::new(n);
    let table = TableConfig { max_flows: cfg.table.max_flows.div_ceil(n), ..cfg.table };
    let rtt = cfg.rtt.map(|r| rampart_rtt::RttConfig { max_tsvals: r.max_tsvals.div_ceil(n), ..r });
    // Each worker's pipeline: its share of the global limits; the local-address marks are
    // made by whoever parses.
    let worker_cfg = FlowsConfig { table, rtt, local: Vec::new(), ..cfg.clone() };
    let mut parser = cfg.parser();
    // Workers parse when the frames lie in bytes they can read (a mapping, memory, buffers
    // handed out); else the reading thread parses and sends packets.
    let handed = capture.shares_batches();
    // Worker-to-worker rings: pairs[j][k] carries packets parsed by j for k.
    let mut to: Vec<Vec<Option<rtrb::Producer<Vec<Packet>>>>> =
        (0..n).map(|_| Vec::new()).collect();
    let mut from: Vec<Vec<Option<rtrb::Consumer<Vec<Packet>>>>> =
        (0..n).map(|_| Vec::new()).collect();
    for (j, to_j) in to.iter_mut().enumerate() {
        for (k, from_k) in from.iter_mut().enumerate() {
            let (p, c) = if j == k {
                (None, None)
            } else {
                let (p, c) = rtrb::RingBuffer::new(IN_FLIGHT + 2);
                (Some(p), Some(c))
            };
            to_j.push(p);
            from_k.push(c);
        }
    }
    let threads: Arc<OnceLock<Vec<Thread>>> = Arc::default();
    // Which worker owns the flows of each of the shard's queues: set from the first job, before
    // any worker parses it.
    let owners: Owners = Arc::default();
    let mut local = None;
    thread::scope(|scope| {
        let mut lanes: Vec<Lane> = to
            .into_iter()
            .zip(from)
            .enumerate()
            .map(|(me, (to, from))| {
                let (jobs, jobs_rx) = rtrb::RingBuffer::new(IN_FLIGHT + 1);
                let (done_tx, done) = rtrb::RingBuffer::new(IN_FLIGHT + 2);
                let w = Worker {
                    pipeline: Pipeline::new(&worker_cfg),
                    shard: shard.clone(),
                    owners: Arc::clone(&owners),
                    parser: cfg.parser(),
                    s: Summary::default(),
                    to,
                    from,
                    threads: Arc::clone(&threads),
                    out: (0..n).map(|_| Vec::new()).collect(),
                    got: Vec::with_capacity(n),
                    pool: Vec::new(),
                    mine: VecDeque::new(),
                    finishing: None,
                    slot: cfg.metrics.as_ref().map(crate::Board::slot),
                    parsed: (0, 0),
                    pending: None,
                    text: sink.sample_text(),
                };
                let rings = Rings { jobs: jobs_rx, done: done_tx, main: thread::current() };
                // Where the workers parse, worker 0 runs on the reading thread between reads
                // (the reading thread then only reads and lists frames, and a third thread
                // would share the cores with the workers); the others, and every worker when
                // the reading thread parses, on threads of their own.
                let thread = if me == 0 && handed {
                    local = Some((w, rings));
                    thread::current()
                } else {
                    let handle = thread::Builder::new()
                        .name("rampart-worker".into())
                        .spawn_scoped(scope, move || w.run(rings))
                        .expect("spawning a worker thread");
                    handle.thread().clone()
                };
                Lane { jobs, done, thread, work: Vec::new(), bytes: Vec::new(), cuts: Vec::new() }
            })
            .collect();
        let _ = threads.set(lanes.iter().map(|l| l.thread.clone()).collect());
        let mut m = Merger {
            owners: handed.then(|| (Arc::clone(&owners), cfg.parser(), shard.clone())),
            local: local.take(),
            cpu_mark: thread_cpu_ns(),
            local_cpu: 0,
            balance: Balance::new(n),
            spares: Spares::default(),
            in_flight: VecDeque::new(),
            pos: 0,
            handed,
            bytes: None,
            frames: Vec::new(),
            now: Timestamp::EPOCH,
            merged: Events::default(),
            parts: Vec::with_capacity(n),
            heads: Vec::with_capacity(n),
        };
        let mut s = Summary::default();
        let result = (|| {
            let mut reader = Reader {
                m: &mut m,
                parser: &mut parser,
                shard: &shard,
                lanes: &mut lanes,
                sink: &mut *sink,
                slot: cfg.metrics.as_ref().map(crate::Board::slot),
            };
            let error =
                read_batches(capture, &cfg.limits(), filter, stop, &mut s, &mut reader, progress)?;
            m.send(&mut lanes, &mut s, sink)?;
            while !m.in_flight.is_empty() {
                m.merge_one(&mut lanes, &mut s, sink)?;
            }
            m.finish(&mut lanes, &mut s, sink)?;
            Ok::<_, io::Error>(error)
        })();
        // Dropping the producers tells the workers to stop once their rings are empty.
        let threads: Vec<Thread> = lanes.iter().map(|l| l.thread.clone()).collect();
        drop(lanes);
        threads.iter().for_each(Thread::unpark);
        let error = result?;
        s.elapsed = started.elapsed();
        if let Some(b) = &cfg.metrics {
            b.finish(&s);
        }
        Ok(Outcome { summary: s, error })
    })
}

struct Merger {
    /// Where the workers parse: the owners of the shard's queues, set from the first job, and
    /// what it takes to parse that job here.
    owners: Option<(Owners, Parser, Shard)>,
    /// Worker 0 and its rings: it runs on the reading thread, taking its jobs right after
    /// they are sent and whenever the reading thread waits for its answer.
    local: Option<(Worker, Rings)>,
    /// The reading thread's CPU time at the last send, and what worker 0's steps took of it
    /// since (ns).
    cpu_mark: u64,
    local_cpu: u64,
    /// The workers' loads, for cutting frames jobs into parse shares.
    balance: Balance,
    spares: Spares,
    /// Jobs sent and not yet merged (with the frame list of a frames job, to reuse).
    in_flight: VecDeque<Option<Arc<Vec<FrameRef>>>>,
    /// The workers parse (the frames lie in bytes they can read).
    handed: bool,
    /// The bytes the frames listed since the last job lie in (when the workers parse).
    bytes: Option<SharedBytes>,
    /// Frames read since the last job (when the workers parse).
    frames: Vec<FrameRef>,
    /// The latest capture time read (when the workers parse).
    now: Timestamp,
    /// Next position in the current job: each capture batch takes one position per packet and
    /// one for its tick.
    pos: u32,
    /// The merged events of a job, the workers' events being merged, and where each one's
    /// samples are merged up to. Kept for their allocations: each keeps its own size (the
    /// merged list is the sum of the others), so none grows again once the run has settled,
    /// and no fresh memory is faulted in job after job.
    merged: Events,
    parts: Vec<Events>,
    heads: Vec<usize>,
}

/// Appends the samples of `parts`, each list in position order, to `out` in position order
/// (a packet makes at most one sample, so positions differ): a merge of sorted lists, without
/// the scratch buffer a sort of their concatenation allocates every time. Lines written with
/// the samples go with them.
fn merge_samples(out: &mut Events, parts: &[Events], heads: &mut Vec<usize>) {
    debug_assert!(parts.iter().all(|p| p.samples.is_sorted_by_key(|(pos, _)| *pos)));
    // Every worker's writer comes from the same sink: all write lines, or none does.
    let lines = parts.iter().any(|p| !p.ends.is_empty());
    debug_assert!(!lines || parts.iter().all(|p| p.ends.len() == p.samples.len()));
    out.samples.reserve(parts.iter().map(|p| p.samples.len()).sum());
    if lines {
        out.ends.reserve(parts.iter().map(|p| p.ends.len()).sum());
        out.text.reserve(parts.iter().map(|p| p.text.len()).sum());
    }
    heads.clear();
    heads.resize(parts.len(), 0);
    let head = |heads: &[usize]| {
        let next = parts.iter().zip(heads).enumerate();
        next.filter_map(|(k, (p, &at))| p.samples.get(at).map(|(pos, _)| (*pos, k))).min()
    };
    while let Some((_, k)) = head(heads) {
        let (p, at) = (&parts[k], heads[k]);
        out.samples.push(p.samples[at]);
        if lines {
            let from = if at == 0 { 0 } else { p.ends[at - 1] as usize };
            out.text.extend_from_slice(&p.text[from..p.ends[at] as usize]);
            out.ends.push(out.text.len() as u32);
        }
        heads[k] += 1;
    }
}

/// The reading thread's side of one run: the merger and the workers' lanes.
struct Reader<'a> {
    m: &'a mut Merger,
    parser: &'a mut Parser,
    shard: &'a Shard,
    lanes: &'a mut [Lane],
    sink: &'a mut dyn Sink,
    /// Where the reading thread's counters are published, if anywhere.
    slot: Option<Slot>,
}

impl Reader<'_> {
    /// Publishes the reading thread's counters when its slot is due.
    fn publish(&mut self, s: &Summary) {
        if let Some(slot) = &mut self.slot
            && slot.due()
        {
            slot.publish(|p| p.clone_from(s));
        }
    }
}

impl Consumer for Reader<'_> {
    /// Takes the bytes the batch's frames lie in (when the workers parse). Bytes other than
    /// those of the frames listed so far (a buffer handed out after the one before) end the
    /// job: a job's frames lie in one piece of bytes.
    fn input(&mut self, batch: &Batch<'_>, s: &mut Summary) -> io::Result<()> {
        if !self.m.handed {
            return Ok(());
        }
        let next = batch.shared();
        let same = match (&self.m.bytes, &next) {
            (Some(a), Some(b)) => a.as_ptr() == b.as_ptr() && a.len() == b.len(),
            _ => false,
        };
        if !same {
            if self.lanes.iter().any(|l| !l.cuts.is_empty()) {
                self.m.send(self.lanes, s, self.sink)?;
            }
            self.m.bytes = next;
        }
        Ok(())
    }

    /// Lists the frames for the workers to parse (input they can read), or parses
    /// them here and sends the packets to their owners (a stream or a live ring); sends a job
    /// once enough have gathered.
    fn batch(&mut self, frames: &[Frame<'_>], s: &mut Summary) -> io::Result<()> {
        let m = &mut *self.m;
        let base = m.pos;
        let tick = base + frames.len() as u32;
        if m.handed {
            let bytes = m.bytes.as_ref().expect("`input` took the batch's bytes");
            for (i, frame) in frames.iter().enumerate() {
                s.count(frame);
                m.now = frame.ts;
                let start = bytes.offset_of(frame.data).expect("frames lie in the input");
                m.frames.push(FrameRef {
                    ts: frame.ts,
                    origlen: frame.origlen,
                    caplen: frame.caplen(),
                    link: frame.link,
                    start,
                    pos: base + i as u32,
                });
            }
            let (end, now) = (m.frames.len(), m.now);
            for l in self.lanes.iter_mut() {
                l.cuts.push(Cut { end, now, tick });
            }
        } else {
            let src = PayloadSource { frames, ..PayloadSource::default() };
            for (i, frame) in frames.iter().enumerate() {
                if let Some(mut w) = self.parser.prepare(frame, i as u32, base + i as u32, s) {
                    let lane = &mut self.lanes[self.shard.of(&w.info.key)];
                    if !w.payload.is_empty() {
                        // The reader's buffer is reused: the owner gets a copy.
                        let payload = src.get(w.payload);
                        let at = lane.bytes.len() as u32;
                        w.payload = Payload::copied(at, payload.len() as u32);
                        lane.bytes.extend_from_slice(payload);
                    }
                    lane.work.push(w);
                }
            }
            let now = self.parser.now();
            for l in self.lanes.iter_mut() {
                l.cuts.push(Cut { end: l.work.len(), now, tick });
            }
        }
        m.pos = tick + 1;
        let queued = m.frames.len() + self.lanes.iter().map(|l| l.work.len()).sum::<usize>();
        if queued >= JOB_PACKETS * self.lanes.len() || m.pos > u32::MAX - (1 << 20) {
            m.send(self.lanes, s, self.sink)?;
        }
        self.publish(s);
        Ok(())
    }

    /// Lets capture time follow the wall clock in every worker (so idle flows end while the
    /// link is quiet), sends what has gathered and waits for every answer, so output keeps up
    /// with a quiet live capture.
    fn quiet(&mut self, now: Timestamp, s: &mut Summary) -> io::Result<()> {
        let m = &mut *self.m;
        let tick = m.pos;
        m.pos = tick + 1;
        let end = m.frames.len();
        for l in self.lanes.iter_mut() {
            let end = if m.handed { end } else { l.work.len() };
            l.cuts.push(Cut { end, now, tick });
        }
        self.m.send(self.lanes, s, self.sink)?;
        while !self.m.in_flight.is_empty() {
            self.m.merge_one(self.lanes, s, self.sink)?;
        }
        self.publish(s);
        Ok(())
    }

    fn tick(&mut self) -> io::Result<()> {
        self.sink.tick()
    }
}

impl Merger {
    /// Sends each worker its share of the capture batches read since the last job, then merges
    /// whatever has come back (waiting when too many jobs are in flight).
    fn send(&mut self, lanes: &mut [Lane], s: &mut Summary, sink: &mut dyn Sink) -> io::Result<()> {
        if lanes.iter().all(|l| l.cuts.is_empty()) {
            return Ok(());
        }
        if let Some((owners, parser, shard)) = &mut self.owners
            && owners.get().is_none()
        {
            let bytes = self.bytes.as_deref().unwrap_or_default();
            let _ = owners.set(choose_owners(&self.frames, bytes, parser, shard, lanes.len()));
        }
        let frames = self.handed.then(|| {
            let next = self.spares.frames.pop().unwrap_or_default();
            Arc::new(std::mem::replace(&mut self.frames, next))
        });
        // What the reading thread spent since its last send besides worker 0's steps
        // (reading, listing, merging, writing the output) weighs on worker 0: it runs there.
        if self.local.is_some() {
            let now = thread_cpu_ns();
            let own = now.saturating_sub(self.cpu_mark).saturating_sub(self.local_cpu);
            self.balance.note_reading(own, frames.as_ref().map_or(0, |f| f.len()));
            (self.cpu_mark, self.local_cpu) = (now, 0);
        }
        let shares = frames.as_ref().map(|f| self.balance.shares(f.len())).unwrap_or_default();
        for (k, l) in lanes.iter_mut().enumerate() {
            let cuts = std::mem::replace(&mut l.cuts, self.spares.cuts.pop().unwrap_or_default());
            let events = self.spares.events.pop().unwrap_or_default();
            let job = match &frames {
                Some(f) => Job::Frames {
                    frames: Arc::clone(f),
                    bytes: self.bytes.clone(),
                    share: shares[k].clone(),
                    cuts,
                    events,
                },
                None => {
                    let next = self.spares.work.pop().unwrap_or_default();
                    let work = std::mem::replace(&mut l.work, next);
                    let next = self.spares.bytes.pop().unwrap_or_default();
                    let bytes = std::mem::replace(&mut l.bytes, next);
                    Job::Batch { work, bytes, cuts, events }
                }
            };
            l.work.clear();
            l.bytes.clear();
            l.cuts.clear();
            if l.jobs.push(job).is_err() {
                unreachable!("at most IN_FLIGHT jobs are queued");
            }
            l.thread.unpark();
        }
        self.pos = 0;
        self.in_flight.push_back(frames);
        // Worker 0 parses its share now (the others wait for its packets) and accounts the
        // job before; the job it just parsed waits until its answer is wanted.
        if let Some((w, rings)) = &mut self.local {
            let started = thread_cpu_ns();
            while !rings.jobs.is_empty() {
                w.step(rings, false);
            }
            self.local_cpu += thread_cpu_ns().saturating_sub(started);
        }
        while self.in_flight.len() >= IN_FLIGHT
            || (!self.in_flight.is_empty() && lanes.iter().all(|l| l.done.slots() > 0))
        {
            self.merge_one(lanes, s, sink)?;
        }
        Ok(())
    }

    /// Worker `k`'s next answer, waiting for it; worker 0's is worked out here, on this
    /// thread (its CPU time added to `spent`).
    fn pop(
        local: &mut Option<(Worker, Rings)>,
        spent: &mut u64,
        k: usize,
        lane: &mut Lane,
    ) -> Done {
        match local {
            Some((w, rings)) if k == 0 => loop {
                if let Ok(d) = lane.done.pop() {
                    return d;
                }
                let started = thread_cpu_ns();
                let step = w.step(rings, true);
                *spent += thread_cpu_ns().saturating_sub(started);
                if !matches!(step, Step::Worked) {
                    unreachable!("worker 0 owes an answer and has what it needs");
                }
            },
            _ => wait(&mut lane.done).expect("a worker ended without answering (it panicked)"),
        }
    }

    /// Merges the oldest job's outputs from every worker and hands them to the sink, capture
    /// batch by capture batch: a batch's samples, then its records (as one pipeline does).
    fn merge_one(
        &mut self,
        lanes: &mut [Lane],
        s: &mut Summary,
        sink: &mut dyn Sink,
    ) -> io::Result<()> {
        let frames = self.in_flight.pop_front().flatten();
        let mut all = std::mem::take(&mut self.merged);
        let mut parts = std::mem::take(&mut self.parts);
        let mut ticks = Vec::new();
        for (k, lane) in lanes.iter_mut().enumerate() {
            let Done::Batch { work, mut bytes, cuts, events: mut ev, busy } =
                Self::pop(&mut self.local, &mut self.local_cpu, k, lane)
            else {
                unreachable!("a batch answers a batch")
            };
            self.balance.note(k, &busy);
            if ticks.is_empty() {
                ticks.extend(cuts.iter().map(|c| c.tick));
            }
            self.spares.work.push(work);
            bytes.clear();
            self.spares.bytes.push(bytes);
            self.spares.cuts.push(cuts);
            all.records.append(&mut ev.records);
            parts.push(ev);
        }
        // Every worker has answered, so it has dropped its handle on the frame list.
        if let Some(mut f) = frames.and_then(|f| Arc::try_unwrap(f).ok()) {
            f.clear();
            self.spares.frames.push(f);
        }
        // One packet's outputs all come from one worker, already in order: the samples are
        // merged, the records (few) sorted stably.
        merge_samples(&mut all, &parts, &mut self.heads);
        all.records.sort_by_key(Ordered::order);
        for mut ev in parts.drain(..) {
            ev.clear();
            self.spares.events.push(ev);
        }
        self.parts = parts;
        let result = emit(s, &all, &ticks, sink);
        all.clear();
        self.merged = all;
        result
    }

    /// Ends every worker's live flows and hands their records on merged by first packet and
    /// key: each worker sends its own in that order, a part at a time, and the parts are
    /// merged as they come, so no more than a part per worker is held at once.
    fn finish(
        &mut self,
        lanes: &mut [Lane],
        s: &mut Summary,
        sink: &mut dyn Sink,
    ) -> io::Result<()> {
        let ask = |l: &mut Lane, events: Events| {
            if l.jobs.push(Job::Finish { events }).is_err() {
                unreachable!("the rings are empty");
            }
            l.thread.unpark();
        };
        // Per worker: its current part, how far it has been merged, and whether more follow.
        let mut parts: Vec<(Events, usize, bool)> = Vec::with_capacity(lanes.len());
        for l in lanes.iter_mut() {
            ask(l, Events::default());
        }
        for (k, lane) in lanes.iter_mut().enumerate() {
            let Done::Finished { events, last, s: w } =
                Self::pop(&mut self.local, &mut self.local_cpu, k, lane)
            else {
                unreachable!("a finish answers a finish")
            };
            if let Some(w) = w {
                s.add_worker(&w);
            }
            parts.push((events, 0, !last));
        }
        // The flow's first packet: a record's own `first` is its interval's with an active
        // timeout, while the table orders live flows by the flow's.
        let key = |o: &Ordered| (o.record.start, o.record.flow.key);
        loop {
            // Refill every worker whose part is used up and that has more.
            for (k, lane) in lanes.iter_mut().enumerate() {
                let (events, at, more) = &mut parts[k];
                if *at == events.records.len() && *more {
                    let mut spent = std::mem::take(events);
                    spent.clear();
                    ask(lane, spent);
                    let Done::Finished { events: next, last, s: w } =
                        Self::pop(&mut self.local, &mut self.local_cpu, k, lane)
                    else {
                        unreachable!("a finish answers a finish")
                    };
                    if let Some(w) = w {
                        s.add_worker(&w);
                    }
                    *events = next;
                    *at = 0;
                    *more = !last;
                }
            }
            let next = parts
                .iter()
                .enumerate()
                .filter_map(|(k, (e, at, _))| e.records.get(*at).map(|o| (key(o), k)))
                .min();
            let Some((_, k)) = next else { break };
            let (events, at, _) = &mut parts[k];
            s.count_record(&events.records[*at].record);
            sink.event(crate::Event::Flow(&events.records[*at].record))?;
            *at += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rampart_rtt::Sample;

    /// Worker lists in position order merge into one list in position order, each sample
    /// once, whatever their lengths (empty lists too).
    #[test]
    fn samples_merge_in_position_order() {
        let sample = |pos: u32| {
            let ts = Timestamp::from_nanos(u64::from(pos));
            let rtt = rampart_wire::Span::from_nanos(u64::from(pos) * 7);
            let s = Sample {
                ts,
                rtt,
                min: rtt,
                method: rampart_rtt::Method::Ts,
                id: FlowId(pos),
                key: FlowKey::default(),
                side: rampart_flow::Side::A,
                dir: rampart_flow::Dir::Original,
                fbytes: 0,
                dbytes: 0,
                pbytes: 0,
            };
            (pos, s)
        };
        let lists: [&[u32]; 4] = [&[0, 3, 4, 9, 10], &[], &[1, 2, 11], &[5, 6, 7, 8, 12, 13]];
        let parts: Vec<Events> = lists
            .iter()
            .map(|l| Events {
                samples: l.iter().map(|&p| sample(p)).collect(),
                ..Events::default()
            })
            .collect();
        let mut out = Events { samples: vec![sample(99)], ..Events::default() };
        let mut heads = Vec::new();
        merge_samples(&mut out, &parts, &mut heads);
        let want: Vec<_> = std::iter::once(99).chain(0..14).map(sample).collect();
        assert_eq!(out.samples, want);
        assert!(out.text.is_empty() && out.ends.is_empty(), "no lines were written");
        // Again, with the heads left over from the first merge.
        out.clear();
        merge_samples(&mut out, &parts[2..], &mut heads);
        let got: Vec<u32> = out.samples.iter().map(|(p, _)| *p).collect();
        assert_eq!(got, [1, 2, 5, 6, 7, 8, 11, 12, 13]);
        // With lines of varying length: each goes with its sample.
        let parts: Vec<Events> = lists
            .iter()
            .map(|l| {
                let mut e = Events::default();
                for &p in *l {
                    e.samples.push(sample(p));
                    e.text.extend_from_slice(format!("{}\n", "x".repeat(p as usize)).as_bytes());
                    e.ends.push(e.text.len() as u32);
                }
                e
            })
            .collect();
        out.clear();
        merge_samples(&mut out, &parts, &mut heads);
        assert_eq!(out.samples, (0..14).map(sample).collect::<Vec<_>>());
        let want: String = (0..14).map(|p| format!("{}\n", "x".repeat(p))).collect();
        assert_eq!(String::from_utf8(out.text.clone()).unwrap(), want);
        let mut ends = Vec::new();
        let mut at = 0;
        for p in 0..14u32 {
            at += p + 1;
            ends.push(at);
        }
        assert_eq!(out.ends, ends);
    }

    /// The shares are consecutive and cover the job.
    fn covers(shares: &[std::ops::Range<usize>], frames: usize) {
        assert_eq!(shares.first().map(|r| r.start), Some(0));
        assert_eq!(shares.last().map(|r| r.end), Some(frames));
        assert!(shares.windows(2).all(|w| w[0].end == w[1].start));
        assert!(shares.iter().all(|r| r.start <= r.end));
    }

    #[test]
    fn parse_shares_even_out_the_workers_times() {
        // A report on a job of 9,000 frames.
        let busy =
            |account_ns, parsed, parse_ns| Busy { parsed, parse_ns, frames: 9_000, account_ns };
        // Before any report: equal shares.
        let mut b = Balance::new(3);
        let s = b.shares(9_000);
        covers(&s, 9_000);
        assert_eq!(s.iter().map(|r| r.len()).collect::<Vec<_>>(), [3_000, 3_000, 3_000]);
        // Worker 0 accounts 300 us of its flows per job and reads 100 us; worker 1 accounts
        // 100 us, worker 2 none; every worker parses a frame in 20 ns. Equal times T:
        // 400 + 0.02 s0 = 100 + 0.02 s1 = 0.02 s2 (us), s0 + s1 + s2 = 9,000.
        b.note_reading(100_000, 9_000);
        b.note(0, &busy(300_000, 1_000, 20_000));
        b.note(1, &busy(100_000, 1_000, 20_000));
        b.note(2, &busy(0, 1_000, 20_000));
        let s = b.shares(9_000);
        covers(&s, 9_000);
        let len: Vec<usize> = s.iter().map(|r| r.len()).collect();
        // T = (180 + 500) / 3 us: s0 = -3,333 is cut to nothing, then T = (180 + 100) / 2 =
        // 140 us: s1 = 2,000 and s2 = 7,000.
        assert_eq!(len, [0, 2_000, 7_000]);
        let parse = |k: usize| b.parse_ns[k].unwrap();
        let times: Vec<f64> =
            (0..3).map(|k| b.fixed(k, 9_000) + len[k] as f64 * parse(k)).collect();
        assert!((times[1] - times[2]).abs() < 1.0, "{times:?}");
        assert!(times[0] >= times[1], "worker 0 parses nothing only when it is the busiest");
        // The loads scale with the job: half the frames, half of each fixed time, and the
        // same cut in proportion.
        let half: Vec<usize> = b.shares(4_500).iter().map(|r| r.len()).collect();
        assert_eq!(half, [0, 1_000, 3_500]);
        // Alike workers: alike shares, whatever the job's size; a worker with nothing to
        // account (a zero report) counts as such.
        let mut b = Balance::new(2);
        b.note(0, &busy(0, 100, 3_000));
        b.note(1, &busy(0, 100, 3_000));
        for frames in [0, 1, 7, 7_424] {
            let s = b.shares(frames);
            covers(&s, frames);
            assert!(s[0].len().abs_diff(s[1].len()) <= 1);
        }
    }

    /// Ethernet, IPv4 and UDP from 10.0.0.1:`sport` to 10.0.0.2:53.
    fn udp(sport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 42];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14..24].copy_from_slice(&[0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17]);
        f[26..34].copy_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        f[34..36].copy_from_slice(&sport.to_be_bytes());
        f[36..38].copy_from_slice(&53u16.to_be_bytes());
        f[38..40].copy_from_slice(&8u16.to_be_bytes());
        f
    }

    #[test]
    fn the_reading_thread_takes_the_lightest_queue() {
        let shard = Shard::new(2);
        let mut parser = FlowsConfig::default().parser();
        let queue = |sport: u16, parser: &mut Parser| {
            let f = udp(sport);
            let frame = Frame {
                ts: Timestamp::EPOCH,
                origlen: 42,
                link: LinkType::Ethernet,
                interface: 0,
                offset: 0,
                data: &f,
            };
            let p = parser.prepare_if(&frame, 0, 0, &mut Summary::default(), |_| true, true);
            shard.of(&p.expect("a UDP packet").info.key)
        };
        // A source port whose flow the shard gives to each queue.
        let port = |q: usize, parser: &mut Parser| {
            (1024..2048).find(|&p| queue(p, parser) == q).expect("both queues get flows")
        };
        let (a, b) = (port(0, &mut parser), port(1, &mut parser));
        for (heavy, light, want) in [(a, b, [1, 0]), (b, a, [0, 1])] {
            // Ten packets of the heavy flow, two of the light one, in one buffer.
            let mut bytes = Vec::new();
            let mut frames = Vec::new();
            for (i, sport) in [heavy; 10].into_iter().chain([light; 2]).enumerate() {
                let f = udp(sport);
                let ts = Timestamp::EPOCH;
                let link = LinkType::Ethernet;
                frames.push(FrameRef {
                    ts,
                    origlen: 42,
                    caplen: 42,
                    link,
                    start: bytes.len(),
                    pos: i as u32,
                });
                bytes.extend_from_slice(&f);
            }
            let owners = choose_owners(&frames, &bytes, &mut parser, &shard, 2);
            assert_eq!(&owners[..], &want[..], "the light flow's queue goes to worker 0");
        }
        // No sample: each queue keeps its own worker.
        assert_eq!(&choose_owners(&[], &[], &mut parser, &shard, 3)[..], &[0, 1, 2][..]);
    }

    #[test]
    fn shard_fold_equals_the_toeplitz_hash_both_ways() {
        let shard = Shard::new(3);
        let mut x = 0x1234_5678_9abc_def1u64;
        for i in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let a: [u8; 16] = std::array::from_fn(|j| (x >> (j % 8 * 8)) as u8 ^ j as u8);
            let b: [u8; 16] = std::array::from_fn(|j| (x >> (j % 8 * 8)) as u8 ^ 0x5a ^ i as u8);
            let fam = if i % 2 == 0 { IpFamily::V4 } else { IpFamily::V6 };
            let trim = |mut v: [u8; 16]| {
                if fam == IpFamily::V4 {
                    v[4..].fill(0);
                }
                v
            };
            let (pa, pb) = ((x >> 16) as u16, (x >> 40) as u16);
            let k = FlowKey::new(trim(a), pa, trim(b), pb, 6, fam, rampart_flow::KeyKind::Ports);
            let r = FlowKey::new(trim(b), pb, trim(a), pa, 6, fam, rampart_flow::KeyKind::Ports);
            assert_eq!(shard.hash(&k.0), shard.toeplitz(&k.0));
            assert_eq!(shard.of(&k.0), shard.of(&r.0));
            assert!(shard.of(&k.0) < 3);
        }
    }
}
