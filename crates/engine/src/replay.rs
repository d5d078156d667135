//! The firewall driver over captures: the packets of a router's ports, from captures taken on
//! them, merged by time and decided by the stateful data plane as the router would, with rule
//! set reloads at given capture times and, optionally, a second rule set judged beside the
//! first on the same traffic (what-if).

use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use rampart_capture::Frame;
use rampart_flow::{FlowKey, Side};
use rampart_wire::{PacketMeta, Timestamp};

use crate::driver::{Consumer, FINISH_CHUNK, Input, Limits, read_merged};
use crate::pipeline::{Events, FlowRecord, Pipeline, Verdict};
use crate::reply::reject_reply;
use crate::stateful::{Decided, RuleSet};
use crate::{Outcome, Summary};

/// A reload at a capture time: the new rule set, or why its file could not be used (then the
/// old one stays in force, as a failed `nft -f` changes nothing).
#[derive(Clone, Debug)]
pub struct Reload {
    /// Capture time: packets from then on see the new rules.
    pub at: Timestamp,
    /// The file.
    pub source: String,
    /// The rule set, or the error reading it.
    pub rules: Result<Arc<RuleSet>, String>,
}

/// A flow whose packets two rule sets judged differently.
#[derive(Clone, Debug)]
pub struct Difference {
    /// The flow, oriented as its first differing packet went.
    pub key: FlowKey,
    /// Which side of the key sent that packet.
    pub side: Side,
    /// Packets of the flow that got different verdicts.
    pub packets: u64,
    /// The first differing packet's verdict and rule under each rule set.
    pub a: (Verdict, Option<Arc<str>>),
    /// Under the second.
    pub b: (Verdict, Option<Arc<str>>),
    /// When that packet was captured.
    pub first: Timestamp,
}

/// Where the firewall driver's results go.
pub trait FirewallSink {
    /// A packet was decided: the frame, the decision (in the rule set `rules`), and the
    /// reply a reject sends back (out of the interface the packet came in on).
    fn packet(
        &mut self,
        frame: &Frame<'_>,
        decided: &Decided,
        rules: &RuleSet,
        reply: Option<&[u8]>,
    ) -> io::Result<()>;
    /// A batch of decided packets: `frames[i]` decided as `decided[i]` (in the rule set
    /// `rules`), and `replies` the replies rejects send back, each with its frame's index
    /// (in order). The same as [`FirewallSink::packet`] for each frame in turn, which is what
    /// it does unless a sink has something to do once per batch (take a lock).
    fn packets(
        &mut self,
        frames: &[Frame<'_>],
        decided: &[Decided],
        rules: &RuleSet,
        replies: &[(usize, Vec<u8>)],
    ) -> io::Result<()> {
        let mut replies = replies.iter().peekable();
        for (i, (f, d)) in frames.iter().zip(decided).enumerate() {
            let reply = replies.next_if(|(at, _)| *at == i).map(|(_, r)| r.as_slice());
            self.packet(f, d, rules, reply)?;
        }
        Ok(())
    }
    /// A flow ended.
    fn record(&mut self, r: &FlowRecord) -> io::Result<()>;
    /// A reload was applied (`Ok`) or refused (`Err` with the reason), at capture time `at`.
    fn reload(&mut self, at: Timestamp, source: &str, result: Result<(), &str>) -> io::Result<()>;
    /// With a second rule set: a flow whose fate differs (at the end, in order of the first
    /// difference).
    fn differs(&mut self, _d: &Difference) -> io::Result<()> {
        Ok(())
    }
    /// A batch has been decided: `main` is the data plane (its rule counters, its connection
    /// tracking) and `s` the run's counters so far (the pipeline's own are added by
    /// [`Pipeline::stats_into`]). Called between batches, never per packet: where a sink
    /// publishes counters for another thread (a metrics endpoint).
    fn batch_done(&mut self, _main: &Pipeline, _s: &Summary) -> io::Result<()> {
        Ok(())
    }
}

/// The reply frame `d`'s reject sends back for frame `f` (`None` when `d` is no reject, or
/// Linux would send none). An ICMP error about a forwarded packet comes from the router (its
/// first address of the family given); about a packet for the router, from the address it was
/// sent to, as Linux's `icmp_send` chooses.
pub(crate) fn reply_to(main: &Pipeline, f: &Frame<'_>, d: &Decided) -> Option<Vec<u8>> {
    let st = main.stateful()?;
    let r = d.rule.filter(|_| d.verdict == Verdict::Reject)?;
    let meta = PacketMeta::parse(f.link, f.data);
    let from = d.oif.and_then(|_| {
        st.routes().local.iter().find_map(|a| match (a, meta.family) {
            (std::net::IpAddr::V4(v4), rampart_wire::Family::V4) => {
                let mut b = [0u8; 16];
                b[..4].copy_from_slice(&v4.octets());
                Some(b)
            }
            (std::net::IpAddr::V6(v6), rampart_wire::Family::V6) => Some(v6.octets()),
            _ => None,
        })
    });
    reject_reply(f.link, f.data, &meta, st.rules().reject_with(r), from)
}

struct Run<'a, S: FirewallSink + ?Sized> {
    main: Pipeline,
    other: Option<Pipeline>,
    reloads: std::vec::IntoIter<Reload>,
    next: Option<Reload>,
    sink: &'a mut S,
    events: Events,
    spare: Events,
    verdicts: Vec<Verdict>,
    diffs: HashMap<FlowKey, Difference>,
}

impl<S: FirewallSink + ?Sized> Run<'_, S> {
    /// Applies the reloads due by capture time `ts`.
    fn reload_until(&mut self, ts: Timestamp) -> io::Result<()> {
        while let Some(r) = self.next.take_if(|r| r.at <= ts) {
            match &r.rules {
                Ok(rules) => {
                    if let Some(st) = self.main.stateful_mut() {
                        st.reload(Arc::clone(rules));
                    }
                    self.sink.reload(r.at, &r.source, Ok(()))?;
                }
                Err(e) => self.sink.reload(r.at, &r.source, Err(e))?,
            }
            self.next = self.reloads.next();
        }
        Ok(())
    }

    fn part(&mut self, frames: &[Frame<'_>], s: &mut Summary) -> io::Result<()> {
        self.events.clear();
        // Frames without a flow get each data plane's own verdict.
        let non_ip = Verdict::Accept;
        self.main.process(frames, non_ip, &mut self.verdicts, &mut self.events, s);
        if let Some(other) = &mut self.other {
            let mut ignored = Summary::default();
            self.spare.clear();
            other.process(frames, non_ip, &mut self.verdicts, &mut self.spare, &mut ignored);
            let (a, b) = (self.main.decisions(), other.decisions());
            let (ra, rb) = (
                self.main.stateful().map(|s| Arc::clone(s.rules())),
                other.stateful().map(|s| Arc::clone(s.rules())),
            );
            for ((f, da), db) in frames.iter().zip(a).zip(b) {
                if da.verdict == db.verdict {
                    continue;
                }
                let meta = PacketMeta::parse(f.link, f.data);
                let Some((key, side)) = FlowKey::from_meta(&meta) else { continue };
                let name = |d: &Decided, r: &Option<Arc<RuleSet>>| {
                    (d.verdict, d.rule.zip(r.as_ref()).map(|(x, rs)| Arc::clone(rs.rule_name(x))))
                };
                let e = self.diffs.entry(key).or_insert_with(|| Difference {
                    key,
                    side,
                    packets: 0,
                    a: name(da, &ra),
                    b: name(db, &rb),
                    first: f.ts,
                });
                e.packets += 1;
            }
        }
        let rules = self.main.stateful().map(|s| Arc::clone(s.rules()));
        for (f, d) in frames.iter().zip(self.main.decisions()) {
            let reply = reply_to(&self.main, f, d);
            if let Some(rs) = &rules {
                self.sink.packet(f, d, rs, reply.as_deref())?;
            }
        }
        for o in &self.events.records {
            s.count_record(&o.record);
            self.sink.record(&o.record)?;
        }
        Ok(())
    }
}

impl<S: FirewallSink + ?Sized> Consumer for Run<'_, S> {
    fn batch(&mut self, frames: &[Frame<'_>], s: &mut Summary) -> io::Result<()> {
        // Cut the batch where a reload falls, so each packet meets the rules in force then.
        let mut start = 0;
        while start < frames.len() {
            self.reload_until(frames[start].ts)?;
            let end = match &self.next {
                Some(r) => {
                    start
                        + frames[start..]
                            .iter()
                            .position(|f| f.ts >= r.at)
                            .unwrap_or(frames.len() - start)
                }
                None => frames.len(),
            };
            let end = end.max(start + 1);
            self.part(&frames[start..end], s)?;
            start = end;
        }
        self.sink.batch_done(&self.main, s)
    }
}

/// Replays the captures of a router's ports (`inputs`, merged by time) through `main`, a
/// pipeline with the stateful firewall; with `other`, a second pipeline (its own rule set and
/// connection state) judges the same packets, and the flows they treat differently go to
/// [`FirewallSink::differs`] at the end. `reloads` (sorted by time) swap `main`'s rule set as
/// capture time reaches them.
pub fn replay<S: FirewallSink + ?Sized>(
    inputs: &mut [Input],
    main: Pipeline,
    other: Option<Pipeline>,
    reloads: Vec<Reload>,
    limits: &Limits,
    stop: &AtomicBool,
    sink: &mut S,
) -> io::Result<(Outcome, Pipeline)> {
    let started = Instant::now();
    let mut reloads = reloads.into_iter();
    let next = reloads.next();
    let mut run = Run {
        main,
        other,
        reloads,
        next,
        sink,
        events: Events::default(),
        spare: Events::default(),
        verdicts: Vec::new(),
        diffs: HashMap::new(),
    };
    let mut s = Summary::default();
    let error = read_merged(inputs, limits, stop, &mut s, &mut run)?;
    if error.is_none() && !s.interrupted {
        // Reloads after the last packet still happen (and a file that fails still says so).
        run.reload_until(Timestamp::MAX)?;
    }
    let order = run.main.finish_order();
    for part in order.chunks(FINISH_CHUNK) {
        run.events.clear();
        run.main.finish_flows(part, &mut run.events);
        for o in &run.events.records {
            s.count_record(&o.record);
            run.sink.record(&o.record)?;
        }
    }
    run.main.stats_into(&mut s);
    let mut diffs: Vec<Difference> = run.diffs.into_values().collect();
    diffs.sort_by_key(|d| (d.first, d.key));
    for d in &diffs {
        run.sink.differs(d)?;
    }
    s.differing_flows = diffs.len() as u64;
    s.elapsed = started.elapsed();
    Ok((Outcome { summary: s, error }, run.main))
}
