//! Drivers: the loops that feed a [`Pipeline`] from a capture (a file, a stream or a live
//! ring) and hand what it produces to a [`Sink`].
//!
//! [`read_batches`] is the one reading loop every capture command shares (flows, RTT, filter,
//! identification, RSS balance): it takes batches from the capture, applies the filter
//! expression and the count and time limits, stops on the stop flag, keeps going through quiet
//! spells of a live capture, and returns the capture's error after everything read before it
//! was handed on. What is done with each batch is a [`Consumer`]'s business: one
//! [`Pipeline`] on the calling thread ([`run`]), the worker threads (the `workers` module), or a
//! command's own step ([`crate::balance`]).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rampart_capture::{Batch, Capture, Filter, FilterError, Frame, Timestamp};
use rampart_flow::FlowId;
use rampart_rtt::Sample;

use crate::pipeline::{Event, Events, FlowRecord, Pipeline, Verdict};
use crate::{FlowsConfig, Outcome, RunError, Slot, Summary};

/// Where a run's results go.
pub trait Sink {
    /// The next event, in the run's output order.
    fn event(&mut self, e: Event<'_>) -> io::Result<()>;
    /// A writer of sample lines for one worker thread, for a sink that prints each RTT sample
    /// as a line depending only on the sample (and the writer's own state, such as a cache).
    /// With `--workers`, each worker then writes the lines of the samples it makes, and the
    /// reading thread hands them to [`Sink::lines`] in output order instead of handing the
    /// samples to [`Sink::event`]: it copies lines rather than formatting every sample. `None`
    /// (the default): samples reach `event`. One run alone always hands samples to `event`.
    fn sample_text(&self) -> Option<Box<dyn SampleText>> {
        None
    }
    /// The lines of consecutive samples, written by [`Sink::sample_text`]'s writers. A sink
    /// whose `sample_text` is `None` never gets them (the default fails).
    fn lines(&mut self, text: &[u8]) -> io::Result<()> {
        let _ = text;
        Err(io::Error::other("sample lines for a sink that does not write them"))
    }
    /// Called once per batch, and about every 100 ms while a live capture is quiet (a place to
    /// flush output by time).
    fn tick(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Writes the line of each RTT sample a worker makes ([`Sink::sample_text`]).
pub trait SampleText: Send {
    /// Appends the line of `s` (its newline included) to `out`.
    fn line(&mut self, out: &mut Vec<u8>, s: &Sample);
}

/// Writes the lines of `events`' samples not yet written, when there is a writer.
pub(crate) fn write_lines(text: &mut Option<Box<dyn SampleText>>, events: &mut Events) {
    let Some(t) = text else { return };
    let Events { samples, text, ends, .. } = events;
    for (_, s) in &samples[ends.len()..] {
        t.line(text, s);
        ends.push(text.len() as u32);
    }
}

/// A [`Sink`] from a closure over flow records (samples are dropped).
pub struct FlowFn<F>(pub F);

impl<F: FnMut(&FlowRecord) -> io::Result<()>> Sink for FlowFn<F> {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        match e {
            Event::Flow(r) => (self.0)(r),
            Event::Sample(_) => Ok(()),
        }
    }
}

/// Hands a batch's events to the sink in output order (they are already sorted): for each
/// batch ending at position `tick`, the samples before it, then the records up to it.
pub(crate) fn emit(
    s: &mut Summary,
    events: &Events,
    ticks: &[u32],
    sink: &mut dyn Sink,
) -> io::Result<()> {
    let (mut i, mut j) = (0, 0);
    // The samples' lines, when workers wrote them: one per sample.
    let lines = !events.ends.is_empty();
    debug_assert!(!lines || events.ends.len() == events.samples.len());
    for &t in ticks.iter().chain(&[u32::MAX]) {
        if lines {
            let end = i + events.samples[i..].partition_point(|(pos, _)| *pos < t);
            if end > i {
                let from = if i == 0 { 0 } else { events.ends[i - 1] as usize };
                sink.lines(&events.text[from..events.ends[end - 1] as usize])?;
                s.samples += (end - i) as u64;
                i = end;
            }
        }
        while let Some((pos, x)) = events.samples.get(i)
            && *pos < t
        {
            s.samples += 1;
            sink.event(Event::Sample(x))?;
            i += 1;
        }
        while let Some(e) = events.records.get(j)
            && e.pos <= t
        {
            s.count_record(&e.record);
            sink.event(Event::Flow(&e.record))?;
            j += 1;
        }
    }
    Ok(())
}

/// What the reading loop hands each batch to.
pub trait Consumer {
    /// The batch about to be filtered and handed to [`Consumer::batch`] (its bytes can be
    /// taken: [`Batch::shared`]). Nothing by default.
    fn input(&mut self, batch: &Batch<'_>, s: &mut Summary) -> io::Result<()> {
        let _ = (batch, s);
        Ok(())
    }
    /// Frames that passed the filter and limits, and the run's counts.
    fn batch(&mut self, frames: &[Frame<'_>], s: &mut Summary) -> io::Result<()>;
    /// A live capture was quiet for about 100 ms; `now` is the wall clock, the time a live
    /// capture's packets are stamped with, so flows can end by it.
    fn quiet(&mut self, _now: Timestamp, _s: &mut Summary) -> io::Result<()> {
        Ok(())
    }
    /// After every batch and quiet spell (where a sink flushes by time).
    fn tick(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Limits of a reading loop.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Stop after this many packets (after the filter).
    pub count: Option<u64>,
    /// Stop after this many seconds: of capture time from the first packet, or of wall time
    /// for a live capture.
    pub seconds: Option<f64>,
    /// Frames per batch.
    pub batch: usize,
}

impl Limits {
    /// No limit, batches of `batch` frames.
    pub fn none(batch: usize) -> Self {
        Self { count: None, seconds: None, batch }
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

/// How many of the frames (given by their times) to take so that the run stops after `count`
/// packets or `seconds` of capture time from `first` (the packet reaching the limit is
/// included, as tcpdump and pping do); `true` when the limit was reached.
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

/// The reading loop: batches from the capture through the filter and the limits to `to`,
/// until the input ends, a limit is reached, the stop flag is set or the capture or filter
/// fails (the error is returned, the counts so far are in `s`). `progress` is called once per
/// batch with the input position in bytes.
pub fn read_batches(
    capture: &mut Capture,
    limits: &Limits,
    mut filter: Option<&mut Filter>,
    stop: &AtomicBool,
    s: &mut Summary,
    to: &mut dyn Consumer,
    progress: &mut dyn FnMut(u64),
) -> io::Result<Option<RunError>> {
    let started = Instant::now();
    let mut error: Option<RunError> = None;
    let mut filter_error = None;
    let mut first = None;
    let live = capture.is_live();
    let mut spare: Vec<Frame<'static>> = Vec::with_capacity(limits.batch);
    let mut passed = 0u64;
    loop {
        if stop.load(Ordering::Relaxed) {
            s.interrupted = true;
            break;
        }
        if live && limits.seconds.is_some_and(|sec| started.elapsed().as_secs_f64() >= sec) {
            break;
        }
        let left = limits.count.map_or(u64::MAX, |c| c - passed);
        if left == 0 {
            break;
        }
        let batch = match capture.next_batch(limits.batch) {
            Ok(b) if b.is_empty() && live => {
                to.quiet(wall_clock(), s)?;
                progress(capture.position());
                to.tick()?;
                continue;
            }
            Ok(b) if b.is_empty() => break,
            Ok(b) => {
                to.input(&b, s)?;
                b
            }
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
        let (take, done) =
            limit(frames.iter().map(|f| f.ts.as_nanos()), left, limits.seconds, &mut first);
        passed += take as u64;
        to.batch(&frames[..take], s)?;
        spare = recycle(frames);
        progress(capture.position());
        to.tick()?;
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

/// The wall clock (a driver's clock; the pipeline reads none).
pub fn wall_clock() -> Timestamp {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map_or(Timestamp::EPOCH, |d| {
        Timestamp::from_nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    })
}

/// Records ended at the end of input handed on at a time: the records of live flows are made
/// a part at a time, so the end of a run holds no more than this many at once.
pub(crate) const FINISH_CHUNK: usize = 4096;

/// One pipeline on the calling thread, feeding a sink.
pub(crate) struct One<'a> {
    pub(crate) pipeline: Pipeline,
    pub(crate) sink: &'a mut dyn Sink,
    pub(crate) events: Events,
    pub(crate) verdicts: Vec<Verdict>,
    /// Where the counters are published, if anywhere.
    pub(crate) slot: Option<Slot>,
}

impl Consumer for One<'_> {
    fn batch(&mut self, frames: &[Frame<'_>], s: &mut Summary) -> io::Result<()> {
        self.events.clear();
        self.pipeline.process(frames, Verdict::Accept, &mut self.verdicts, &mut self.events, s);
        let r = emit(s, &self.events, &[], self.sink);
        self.publish(s);
        r
    }

    /// Capture time follows the wall clock while the link is quiet, so idle flows end (and
    /// are written) without waiting for the next packet.
    fn quiet(&mut self, now: Timestamp, s: &mut Summary) -> io::Result<()> {
        self.events.clear();
        self.pipeline.advance(now, u32::MAX, &mut self.events);
        let r = emit(s, &self.events, &[], self.sink);
        self.publish(s);
        r
    }

    fn tick(&mut self) -> io::Result<()> {
        self.sink.tick()
    }
}

impl One<'_> {
    /// Publishes the run's counters and the pipeline's, when the slot is due.
    fn publish(&mut self, s: &Summary) {
        if let Some(slot) = &mut self.slot
            && slot.due()
        {
            let pipeline = &self.pipeline;
            slot.publish(|p| {
                p.clone_from(s);
                pipeline.stats_into(p);
            });
        }
    }

    /// Ends every live flow, handing the records on a part at a time, and adds the pipeline's
    /// counters to `s`.
    pub(crate) fn finish(&mut self, s: &mut Summary) -> io::Result<()> {
        let order: Vec<FlowId> = self.pipeline.finish_order();
        for part in order.chunks(FINISH_CHUNK) {
            self.events.clear();
            self.pipeline.finish_flows(part, &mut self.events);
            emit(s, &self.events, &[], self.sink)?;
        }
        // After the last flow is retired: identification counts its labels then.
        self.pipeline.stats_into(s);
        Ok(())
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
        return crate::workers::run(capture, cfg, filter, stop, sink, progress);
    }
    let started = Instant::now();
    let slot = cfg.metrics.as_ref().map(crate::Board::slot);
    let mut one = One {
        pipeline: Pipeline::new(cfg),
        sink,
        events: Events::default(),
        verdicts: Vec::new(),
        slot,
    };
    let mut s = Summary::default();
    let error = read_batches(capture, &cfg.limits(), filter, stop, &mut s, &mut one, progress)?;
    one.finish(&mut s)?;
    s.elapsed = started.elapsed();
    if let Some(b) = &cfg.metrics {
        b.finish(&s);
    }
    Ok(Outcome { summary: s, error })
}

/// [`run`] without RTT samples or a filter: flow records only, to a closure.
pub fn run_flows(
    capture: &mut Capture,
    cfg: &FlowsConfig,
    stop: &AtomicBool,
    sink: &mut dyn FnMut(&FlowRecord) -> io::Result<()>,
    progress: &mut dyn FnMut(u64),
) -> io::Result<Outcome> {
    let cfg = FlowsConfig { samples: false, ..cfg.clone() };
    run(capture, &cfg, None, stop, &mut FlowFn(sink), progress)
}

/// One capture among several read as one ([`read_merged`]): the capture, and the source
/// address of frames the port itself sent (a capture taken on a router's port holds them too;
/// they are not ingress packets and are skipped).
pub struct Input {
    /// The capture.
    pub capture: Capture,
    /// The port's own MAC address, if frames from it are to be skipped.
    pub own_mac: Option<[u8; 6]>,
}

/// A frame copied out of an input's batch: time, original length, link type, record offset,
/// and where its bytes lie in the queue's buffer.
type Queued =
    (rampart_capture::Timestamp, u32, rampart_wire::LinkType, u64, std::ops::Range<usize>);

/// Frames copied out of one input's batch, waiting to be merged.
#[derive(Default)]
struct Queue {
    frames: std::collections::VecDeque<Queued>,
    bytes: Vec<u8>,
    done: bool,
}

/// Whether an Ethernet frame's source address is `mac` (a frame the capturing port sent).
fn sent_by(f: &Frame<'_>, mac: Option<[u8; 6]>) -> bool {
    mac.is_some_and(|m| {
        f.link == rampart_wire::LinkType::Ethernet && f.data.get(6..12) == Some(&m[..])
    })
}

/// One input's batches handed on as they are, its port's own frames left out and every
/// frame's interface the input's (0).
struct OwnFrames<'c> {
    to: &'c mut dyn Consumer,
    own_mac: Option<[u8; 6]>,
    /// The frames kept of a batch (its allocation reused).
    kept: Vec<Frame<'static>>,
}

impl Consumer for OwnFrames<'_> {
    fn batch(&mut self, frames: &[Frame<'_>], s: &mut Summary) -> io::Result<()> {
        let own = |f: &Frame<'_>| sent_by(f, self.own_mac);
        if frames.iter().all(|f| f.interface == 0 && !own(f)) {
            return self.to.batch(frames, s);
        }
        let mut kept: Vec<Frame<'_>> = recycle(std::mem::take(&mut self.kept));
        for f in frames {
            if own(f) {
                s.filtered += 1;
            } else {
                kept.push(Frame { interface: 0, ..*f });
            }
        }
        let r = self.to.batch(&kept, s);
        self.kept = recycle(kept);
        r
    }

    fn quiet(&mut self, now: Timestamp, s: &mut Summary) -> io::Result<()> {
        self.to.quiet(now, s)
    }

    fn tick(&mut self) -> io::Result<()> {
        self.to.tick()
    }
}

/// Reads several captures as one, merged by timestamp (on a tie, the earlier input first):
/// each frame's `interface` is its input's index, and frames an input's port sent itself are
/// skipped (and counted in [`Summary::filtered`]). The reading loop is [`read_batches`]'s:
/// limits, the stop flag, and an input's error after every frame before it was handed on.
pub fn read_merged(
    inputs: &mut [Input],
    limits: &Limits,
    stop: &AtomicBool,
    s: &mut Summary,
    to: &mut dyn Consumer,
) -> io::Result<Option<RunError>> {
    if let [one] = inputs {
        // Nothing to merge: the capture's own batches, without copying a frame.
        let mut own = OwnFrames { to, own_mac: one.own_mac, kept: Vec::new() };
        return read_batches(&mut one.capture, limits, None, stop, s, &mut own, &mut |_| {});
    }
    let mut queues: Vec<Queue> = inputs.iter().map(|_| Queue::default()).collect();
    let mut error = None;
    let mut first = None;
    let mut passed = 0u64;
    // Frames picked for the next batch: (input, queue position).
    let mut picked: Vec<(usize, usize)> = Vec::with_capacity(limits.batch);
    'run: loop {
        if stop.load(Ordering::Relaxed) {
            s.interrupted = true;
            break;
        }
        // Refill every empty queue that has more to give.
        for (input, q) in inputs.iter_mut().zip(&mut queues) {
            while q.frames.is_empty() && !q.done {
                q.bytes.clear();
                match input.capture.next_batch(limits.batch) {
                    Ok(b) if b.is_empty() => q.done = true,
                    Ok(b) => {
                        for f in b.iter() {
                            if sent_by(&f, input.own_mac) {
                                s.filtered += 1;
                                continue;
                            }
                            let start = q.bytes.len();
                            q.bytes.extend_from_slice(f.data);
                            q.frames.push_back((
                                f.ts,
                                f.origlen,
                                f.link,
                                f.offset,
                                start..q.bytes.len(),
                            ));
                        }
                    }
                    Err(e) => {
                        q.done = true;
                        // The first input to fail is the one reported.
                        error.get_or_insert(RunError::from(e));
                    }
                }
            }
        }
        // Take frames in time order while every input that is not done still has one (the
        // next frame of an input with an empty queue could come first).
        picked.clear();
        let mut at: Vec<usize> = vec![0; queues.len()];
        while picked.len() < limits.batch {
            let mut best: Option<(rampart_capture::Timestamp, usize)> = None;
            let mut blocked = false;
            for (k, q) in queues.iter().enumerate() {
                match q.frames.get(at[k]) {
                    Some(f) if best.is_none_or(|(t, _)| f.0 < t) => best = Some((f.0, k)),
                    Some(_) => {}
                    None if !q.done => blocked = true,
                    None => {}
                }
            }
            if blocked {
                break;
            }
            let Some((_, k)) = best else { break };
            picked.push((k, at[k]));
            at[k] += 1;
        }
        if picked.is_empty() {
            if queues.iter().all(|q| q.done && q.frames.is_empty()) {
                break;
            }
            continue;
        }
        let frames: Vec<Frame<'_>> = picked
            .iter()
            .map(|&(k, i)| {
                let q = &queues[k];
                let (ts, origlen, link, offset, ref r) = q.frames[i];
                Frame { ts, origlen, link, interface: k as u32, offset, data: &q.bytes[r.clone()] }
            })
            .collect();
        let left = limits.count.map_or(u64::MAX, |c| c - passed);
        let (take, done) =
            limit(frames.iter().map(|f| f.ts.as_nanos()), left, limits.seconds, &mut first);
        passed += take as u64;
        to.batch(&frames[..take], s)?;
        to.tick()?;
        drop(frames);
        for (k, q) in queues.iter_mut().enumerate() {
            q.frames.drain(..at[k]);
        }
        if done {
            break 'run;
        }
    }
    Ok(error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rampart_flow::{Dir, FlowKey, Side};
    use rampart_wire::Span;

    /// Writes what it is handed: a sample as `S<rtt>` on a line of its own, lines as they are.
    #[derive(Default)]
    struct Transcript {
        text: Vec<u8>,
        calls: usize,
    }

    impl Sink for Transcript {
        fn event(&mut self, e: Event<'_>) -> io::Result<()> {
            if let Event::Sample(s) = e {
                self.text.extend_from_slice(format!("S{}\n", s.rtt.as_nanos()).as_bytes());
            }
            Ok(())
        }

        fn lines(&mut self, text: &[u8]) -> io::Result<()> {
            self.calls += 1;
            self.text.extend_from_slice(text);
            Ok(())
        }
    }

    fn sample(pos: u32) -> (u32, Sample) {
        let s = Sample {
            ts: Timestamp::from_nanos(u64::from(pos)),
            rtt: Span::from_nanos(u64::from(pos)),
            min: Span::from_nanos(1),
            method: rampart_rtt::Method::Ts,
            id: FlowId(0),
            key: FlowKey::default(),
            side: Side::A,
            dir: Dir::Original,
            fbytes: 0,
            dbytes: 0,
            pbytes: 0,
        };
        (pos, s)
    }

    /// Lines written with the samples reach the sink in the order the samples would, one call
    /// per batch that has samples, and count as samples.
    #[test]
    fn lines_stand_in_for_their_samples() {
        let positions = [0, 2, 3, 5, 9, 10, 14];
        let ticks = [3, 4, 8, 12];
        let mut events =
            Events { samples: positions.iter().map(|&p| sample(p)).collect(), ..Events::default() };
        let (mut by_event, mut s1) = (Transcript::default(), Summary::default());
        emit(&mut s1, &events, &ticks, &mut by_event).unwrap();
        assert_eq!(by_event.calls, 0);
        for (_, s) in &events.samples {
            events.text.extend_from_slice(format!("S{}\n", s.rtt.as_nanos()).as_bytes());
            events.ends.push(events.text.len() as u32);
        }
        let (mut by_line, mut s2) = (Transcript::default(), Summary::default());
        emit(&mut s2, &events, &ticks, &mut by_line).unwrap();
        assert_eq!(by_line.text, by_event.text);
        assert_eq!(String::from_utf8(by_line.text).unwrap(), "S0\nS2\nS3\nS5\nS9\nS10\nS14\n");
        // Before 3 (0, 2), 4 (3), 8 (5), 12 (9, 10) and after the last batch (14).
        assert_eq!(by_line.calls, 5);
        assert_eq!((s1.samples, s2.samples), (7, 7));
    }
}
