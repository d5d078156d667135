//! The per-worker core: one deterministic [`Pipeline`] that takes a batch of packets and the
//! capture time and gives back a verdict per packet and the events the batch caused.
//!
//! It reads no clock, opens nothing and starts no thread: drivers ([`crate::driver`],
//! the `workers` module, [`crate::inline`]) feed it. The order of work for each packet:
//!
//! 1. parse ([`Parser`], once per frame; with workers, the worker that parsed a frame hands
//!    the packet to the worker that owns its flow);
//! 2. policy: the rule set's verdict, when there is one ([`Policy`]);
//! 3. flow lookup and update in the [`FlowTable`] (creating the flow on its first packet;
//!    flows the packet ends, such as an idle flow whose key it reuses, are retired first);
//! 4. the side stages, each keeping per-flow state beside the table by flow id: RTT matching
//!    ([`RttStage`]), application identification ([`DpiTable`]) and Zeek's connection state,
//!    history and TCP health counters ([`TcpStateStage`]);
//! 5. events: RTT samples as they are made, flow records as flows end (by a packet, by
//!    capture time in [`Pipeline::advance`], or at the end in [`Pipeline::finish_flows`]),
//!    and with an active timeout interim records of live flows, made at step 3 by the
//!    packet that finds the flow's interval past the timeout, before that packet is
//!    accounted or seen by the side stages (so the records carry their facts so far).
//!
//! Steps 3 and 4 run as a software pipeline over the batch: packet i+2D's index line and
//! packet i+D's record are prefetched while packet i is accounted, the way DPDK's bulk
//! lookups hide memory latency within the few misses a core can have outstanding.
//!
//! Adding a side stage: implement [`rampart_flow::SideStage`] in the stage's crate, add one
//! field here, one `observe` call in [`Pipeline::account`], one `retire` in `retire_ended`,
//! and one field of [`FlowRecord`].

use std::sync::Arc;

use rampart_capture::Frame;
use rampart_classify::firewall::{Firewall, Packet as FwPacket};
use rampart_classify::iptables::Target;
use rampart_dpi::{App, DpiTable};
use rampart_flow::{
    EndReason, Flow, FlowCtx, FlowId, FlowKey, FlowTable, KeyKind, Looked, SideStage, TableConfig,
};
use rampart_rtt::{RttStage, RttSummary, Sample};
use rampart_tcpstate::{ConnSummary, TcpSeg, TcpStateStage};
use rampart_wire::{PacketMeta, Timestamp};

use crate::packet::{Packet, PayloadSource};
use crate::stateful::{Decided, Decision, Query, Stateful, Why};
use crate::{FlowsConfig, Parser, Summary};

/// Pipeline depth: packet i+D's record and packet i+2D's index line are prefetched while packet i
/// is accounted. Twelve packets (eight before): 64 K live flows 11.1-11.2 -> 10.5-10.8 µs per
/// batch of 256, a million 15.6-16.3 -> 15.0-15.3 (BENCHMARKS.md, parse + flow lookup).
const LOOKAHEAD: usize = 12;
/// The same for the stateful firewall, whose packets also prefetch their connection: at twelve
/// its established packet took 5-15 % longer than at eight (the lines asked for outrun what
/// the CPU keeps in flight).
const STATEFUL_LOOKAHEAD: usize = 8;
/// Frames whose first bytes are asked for ahead of the one being parsed. On a live link the
/// kernel wrote them, often from another CPU (on veth, the sender's), so each header's first
/// read is a miss that would otherwise come one after another.
const FRAME_AHEAD: usize = 4;

/// Asks for the first two cache lines of `frames[i]`'s bytes (where its link, network and
/// transport headers lie), if there is such a frame.
#[inline(always)]
fn prefetch_frame(frames: &[Frame<'_>], i: usize) {
    if let Some(f) = frames.get(i) {
        let p = f.data.as_ptr();
        rampart_flow::prefetch(p);
        rampart_flow::prefetch(p.wrapping_add(64));
    }
}

/// What becomes of a packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Passed on.
    #[default]
    Accept,
    /// Dropped silently.
    Drop,
    /// Dropped, and the sender told (a TCP reset or an ICMP error).
    Reject,
}

impl Verdict {
    /// `accept`, `drop` or `reject`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Accept => "accept",
            Self::Drop => "drop",
            Self::Reject => "reject",
        }
    }
}

/// Everything known about a flow when it ends: its record, why it ended, and what each side
/// stage learnt of it.
///
/// With an active timeout ([`FlowsConfig::active_timeout`]) a flow has one record per
/// interval: interim ones ([`EndReason::Active`]) while it lives, then its final one. Each
/// carries in `flow` the interval's first and last packet, its packets and bytes per
/// direction (deltas: a flow's records add up to its totals) and the TCP flags seen within
/// it; everything else (`start`, so the `uid`; the application; RTT; connection state,
/// history and TCP health counters; the firewall's connection and verdict) is the flow's as
/// known when the record was made, so the final record holds the final word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowRecord {
    /// Key, endpoints, times, counters and TCP flags per direction: of the whole flow, or
    /// with an active timeout of the interval the record covers.
    pub flow: Flow,
    /// The flow's first packet: `flow.first`, unless the record covers a later interval of
    /// the flow.
    pub start: Timestamp,
    /// Why the record was written.
    pub end: EndReason,
    /// Passive RTT towards each end (`None` when RTT matching is off).
    pub rtt: Option<RttSummary>,
    /// The application and its metadata (`None` when identification is off).
    pub app: Option<App>,
    /// Its connection as the stateful firewall tracked it (`ct state`, TCP state, ASSURED,
    /// reply seen), when it had an entry.
    pub ct: Option<rampart_conntrack::Summary>,
    /// The last verdict on the flow and the rule that gave it (stateful firewall only).
    pub verdict: Option<(Verdict, Option<Arc<str>>)>,
    /// Zeek's `conn_state` and `history`, and the TCP health counters per direction (`None`
    /// when the stage is off).
    pub conn: Option<ConnSummary>,
}

/// What a run hands to its [`crate::Sink`], in order.
#[derive(Clone, Copy, Debug)]
pub enum Event<'a> {
    /// A flow ended, or (with [`EndReason::Active`]) a live flow's interim record.
    Flow(&'a FlowRecord),
    /// An RTT sample was made (only when samples are asked for).
    Sample(&'a Sample),
}

/// A flow record with the place that orders it among a run's outputs: the position of the
/// packet that ended it (or, for an interim record, the packet that found the flow's active
/// timeout passed), or for flows ended by capture time (or at the end of input) the position
/// given for the end of their batch.
#[derive(Clone, Debug)]
pub struct Ordered {
    /// Position of the packet that ended the flow, or of its batch's end.
    pub pos: u32,
    /// Ended between packets (by capture time, or at the end of input).
    pub tick: bool,
    /// The record.
    pub record: FlowRecord,
}

impl Ordered {
    /// The output order: by position; flows ended at one tick by last packet, then the
    /// flow's first packet ([`FlowRecord::start`], so an active timeout does not reorder
    /// them), then key (a total order that does not depend on table layout); flows one
    /// packet ended in the order it ended them (sort stably).
    pub fn order(&self) -> (u32, Timestamp, Timestamp, FlowKey) {
        let f = &self.record.flow;
        if self.tick {
            (self.pos, f.last, self.record.start, f.key)
        } else {
            (self.pos, Timestamp::EPOCH, Timestamp::EPOCH, FlowKey::default())
        }
    }
}

/// The events of one or more batches: RTT samples with their packets' positions, and ended
/// flows with their order.
#[derive(Clone, Debug, Default)]
pub struct Events {
    /// Samples, in the order they were made.
    pub samples: Vec<(u32, Sample)>,
    /// Records, in the order flows ended.
    pub records: Vec<Ordered>,
    /// The lines of `samples`, one after another, when a worker writes them
    /// ([`crate::Sink::sample_text`]); else empty.
    pub text: Vec<u8>,
    /// Where each sample's line ends in `text`: one per sample when lines are written, else
    /// none.
    pub ends: Vec<u32>,
}

impl Events {
    /// Nothing is waiting.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty() && self.records.is_empty()
    }

    /// Forgets everything (keeping the allocations).
    pub fn clear(&mut self) {
        self.samples.clear();
        self.records.clear();
        self.text.clear();
        self.ends.clear();
    }
}

/// A rule set's verdict on each packet, with a hit counter per rule (as netfilter counts:
/// jumps and returns too). It sees addresses, ports, protocol and TCP flags; interfaces are
/// unknown for a capture, so interface rules only match negated, and connection state is not
/// tracked yet, so `--ctstate` rules do not match.
#[derive(Clone, Debug)]
pub struct Policy {
    rules: Arc<Firewall>,
    hits: Vec<u64>,
}

impl Policy {
    /// Evaluates `rules`.
    pub fn new(rules: Arc<Firewall>) -> Self {
        let hits = vec![0; rules.entries().len()];
        Self { rules, hits }
    }

    /// Packets that reached each entry of [`Firewall::entries`].
    pub fn hits(&self) -> &[u64] {
        &self.hits
    }

    /// The verdict on one packet.
    #[inline]
    pub fn decide(&mut self, p: &rampart_flow::PacketInfo) -> Verdict {
        let k = &p.key;
        let (src, dst, sport, dport) = match p.side {
            rampart_flow::Side::A => (k.addr_a(), k.addr_b(), k.port_a(), k.port_b()),
            rampart_flow::Side::B => (k.addr_b(), k.addr_a(), k.port_b(), k.port_a()),
        };
        let (sport, dport) = if k.kind() == KeyKind::Ports { (sport, dport) } else { (0, 0) };
        let packet = FwPacket {
            src,
            dst,
            sport,
            dport,
            proto: k.proto(),
            iif: "",
            oif: "",
            ct: None,
            tcp_flags: p.tcp_flags as u8,
            app: &[],
            time: 0,
        };
        match self.rules.evaluate_counting(&packet, &mut self.hits).verdict {
            Target::Accept => Verdict::Accept,
            Target::Reject => Verdict::Reject,
            _ => Verdict::Drop,
        }
    }
}

/// One worker's pipeline: the flow table, the policy and the side stages beside it.
pub struct Pipeline {
    parser: Parser,
    table: FlowTable,
    policy: Option<Policy>,
    /// The stateful firewall: connection tracking and a rule set per hook.
    stateful: Option<Box<Stateful>>,
    /// What the stateful firewall decided for each frame of the last batch.
    decisions: Vec<Decided>,
    /// The stateful firewall's batch, parsed before any packet of it is decided: each frame's
    /// headers and, when it has a flow, what the table needs (kept for their allocation).
    parsed: Vec<(PacketMeta, Option<rampart_flow::PacketInfo>)>,
    rtt: Option<RttStage>,
    dpi: Option<DpiTable>,
    tcp: Option<TcpStateStage>,
    /// Hand every RTT sample out (else only per-flow summaries are kept).
    samples: bool,
    /// The packets of the batch being processed (kept for its allocation).
    packets: Vec<Packet>,
    /// Whether the stores were sized for the table's bound at start.
    reserved: bool,
}

impl Pipeline {
    /// A pipeline with the table, RTT matching and identification `cfg` asks for.
    pub fn new(cfg: &FlowsConfig) -> Self {
        let mut table = FlowTable::new(cfg.table);
        table.set_active_timeout(cfg.active_timeout);
        let mut p = Self {
            parser: cfg.parser(),
            table,
            policy: None,
            stateful: None,
            decisions: Vec::new(),
            parsed: Vec::new(),
            rtt: cfg.rtt.map(RttStage::new),
            dpi: cfg.dpi.map(DpiTable::new),
            tcp: cfg.tcp_stats.then(TcpStateStage::new),
            samples: cfg.samples,
            packets: Vec::with_capacity(256),
            reserved: false,
        };
        if cfg.reserve {
            p.reserve();
        }
        p
    }

    /// Makes room at start for the table's bound (see [`FlowsConfig::reserve`]).
    fn reserve(&mut self) {
        self.reserved = true;
        self.table.reserve();
        let flows = self.table.config().max_flows;
        if let Some(r) = &mut self.rtt {
            SideStage::reserve(r, flows);
        }
        if let Some(d) = &mut self.dpi {
            SideStage::reserve(d, flows);
        }
        if let Some(t) = &mut self.tcp {
            SideStage::reserve(t, flows);
        }
    }

    /// A pipeline with only the flow table.
    pub fn table_only(cfg: TableConfig) -> Self {
        Self::new(&FlowsConfig {
            table: cfg,
            rtt: None,
            dpi: None,
            tcp_stats: false,
            ..FlowsConfig::default()
        })
    }

    /// Decides every packet by `policy`.
    pub fn with_policy(mut self, policy: Policy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Decides every packet as a stateful firewall: connection tracking and `st`'s rule set
    /// (see [`crate::stateful`]). A full table keeps established connections and refuses new
    /// flows instead.
    pub fn with_stateful(mut self, st: Stateful) -> Self {
        let cfg = TableConfig { evict_protected: false, ..*self.table.config() };
        let active = self.table.active_timeout();
        self.table = FlowTable::new(cfg);
        self.table.set_active_timeout(active);
        if self.reserved {
            self.table.reserve();
        }
        self.stateful = Some(Box::new(st));
        self
    }

    /// The stateful firewall, if any.
    pub fn stateful(&self) -> Option<&Stateful> {
        self.stateful.as_deref()
    }

    /// The stateful firewall, to reload its rules.
    pub fn stateful_mut(&mut self) -> Option<&mut Stateful> {
        self.stateful.as_deref_mut()
    }

    /// What the stateful firewall decided for each frame of the last batch.
    pub fn decisions(&self) -> &[Decided] {
        &self.decisions
    }

    /// The flow table.
    pub fn table(&self) -> &FlowTable {
        &self.table
    }

    /// The policy, if any.
    pub fn policy(&self) -> Option<&Policy> {
        self.policy.as_ref()
    }

    /// Parses a batch of frames, decides and accounts each packet, then lets capture time run
    /// to `now` (the last frame's time, for a capture). Afterwards `verdicts[i]` is frame i's
    /// verdict (for frames without a flow `non_ip`, or with the stateful firewall its
    /// [`StatefulConfig::non_ip`](crate::stateful::StatefulConfig::non_ip)); events are appended to `events` with
    /// positions that are the frames' indices.
    pub fn process(
        &mut self,
        frames: &[Frame<'_>],
        non_ip: Verdict,
        verdicts: &mut Vec<Verdict>,
        events: &mut Events,
        s: &mut Summary,
    ) {
        if let Some(st) = &self.stateful {
            // The data plane's own setting decides frames without a flow.
            let non_ip = st.non_ip();
            self.process_stateful(frames, non_ip, verdicts, events, s);
            return;
        }
        let mut packets = std::mem::take(&mut self.packets);
        packets.clear();
        (0..FRAME_AHEAD).for_each(|i| prefetch_frame(frames, i));
        for (i, frame) in frames.iter().enumerate() {
            prefetch_frame(frames, i + FRAME_AHEAD);
            self.parser.prepare_onto(frame, i as u32, i as u32, s, &mut packets);
        }
        let now = self.parser.now();
        verdicts.clear();
        verdicts.resize(frames.len(), non_ip);
        let src = PayloadSource { frames, ..PayloadSource::default() };
        self.account(&mut packets, &src, Some(verdicts), events);
        self.advance(now, u32::MAX, events);
        self.packets = packets;
    }

    /// Decides and accounts packets already parsed (hashing their keys for this table),
    /// reading payloads from `payloads` when identification is on. With `verdicts`, packet
    /// `p`'s verdict goes to `verdicts[p.pos]`.
    #[inline]
    pub fn account(
        &mut self,
        packets: &mut [Packet],
        payloads: &PayloadSource<'_>,
        mut verdicts: Option<&mut Vec<Verdict>>,
        events: &mut Events,
    ) {
        // The first 2D packets' index lines are asked for as their keys are hashed, so they
        // arrive while the rest of the batch is hashed; then the first D packets' records.
        for (j, p) in packets.iter_mut().enumerate() {
            p.info.hash = self.table.hash(&p.info.key);
            if j < 2 * LOOKAHEAD {
                self.table.prefetch_index(p.info.hash);
            }
        }
        for p in packets.iter().take(LOOKAHEAD) {
            self.table.prefetch_record(p.info.hash);
        }
        for i in 0..packets.len() {
            if let Some(p) = packets.get(i + 2 * LOOKAHEAD) {
                self.table.prefetch_index(p.info.hash);
            }
            if let Some(p) = packets.get(i + LOOKAHEAD) {
                self.table.prefetch_record(p.info.hash);
            }
            let p = &packets[i];
            if let Some(policy) = &mut self.policy {
                let v = policy.decide(&p.info);
                if let Some(slot) = verdicts.as_deref_mut().and_then(|v| v.get_mut(p.pos as usize))
                {
                    *slot = v;
                }
            }
            let t = self.table.track(&p.info);
            if !self.table.ended().is_empty() {
                self.retire_ended(p.pos, false, events);
            }
            self.observe(t, p, payloads, events);
        }
    }

    /// [`Pipeline::process`] for the stateful firewall, packet by packet in Linux's order:
    /// look the flow up, track the connection, decide at each hook, create the flow only if
    /// the packet was accepted, move the flow's deadline to what the connection asks for.
    fn process_stateful(
        &mut self,
        frames: &[Frame<'_>],
        non_ip: Verdict,
        verdicts: &mut Vec<Verdict>,
        events: &mut Events,
        s: &mut Summary,
    ) {
        verdicts.clear();
        self.decisions.clear();
        let src = PayloadSource { frames, ..PayloadSource::default() };
        // First the whole batch is parsed and its keys hashed (a key's hash is not computed
        // while the stores that built it are still in flight, and lookups can be prefetched).
        let mut parsed = std::mem::take(&mut self.parsed);
        parsed.resize_with(frames.len(), Default::default);
        (0..FRAME_AHEAD).for_each(|i| prefetch_frame(frames, i));
        for (i, (frame, (meta, info))) in frames.iter().zip(parsed.iter_mut()).enumerate() {
            prefetch_frame(frames, i + FRAME_AHEAD);
            s.count(frame);
            meta.parse_into(frame.link, frame.data);
            *info = self.parser.keyed(frame, meta, s, |_| true, true);
        }
        // As in `account`, the first 2D packets' index lines are asked for as they are hashed,
        // and the first D packets' records (and connections) once the batch is.
        for (j, info) in parsed.iter_mut().filter_map(|(_, info)| info.as_mut()).enumerate() {
            info.hash = self.table.hash(&info.key);
            if j < 2 * STATEFUL_LOOKAHEAD {
                self.table.prefetch_index(info.hash);
            }
        }
        let parsed_batch = &parsed[..frames.len()];
        for (_, info) in parsed_batch.iter().take(STATEFUL_LOOKAHEAD) {
            if let Some(ahead) = info {
                self.table.prefetch_record(ahead.hash);
                if let (Some(id), Some(st)) = (self.table.candidate(ahead.hash), &self.stateful) {
                    st.prefetch(id);
                }
            }
        }
        for (i, frame) in frames.iter().enumerate() {
            let (meta, info) = &parsed_batch[i];
            // As in `account`: packet i+2D's index line, then packet i+D's record and the
            // state kept beside it, ahead of packet i.
            if let Some((_, Some(ahead))) = parsed_batch.get(i + 2 * STATEFUL_LOOKAHEAD) {
                self.table.prefetch_index(ahead.hash);
            }
            if let Some((_, Some(ahead))) = parsed_batch.get(i + STATEFUL_LOOKAHEAD) {
                self.table.prefetch_record(ahead.hash);
                if let (Some(id), Some(st)) = (self.table.candidate(ahead.hash), &self.stateful) {
                    st.prefetch(id);
                }
            }
            let ts = frame.ts;
            let iif = frame.interface;
            use rampart_wire::{Malformed, Status};
            let broken_ip = matches!(
                meta.status,
                Status::Malformed(
                    Malformed::IpVersion | Malformed::Ipv4HeaderLen | Malformed::Ipv4TotalLen
                )
            );
            let (Some(info), false) = (info, broken_ip) else {
                // Not IP (ARP, LLDP): the data plane's setting. An IP header that contradicts
                // itself never reaches a hook (Linux's ip_rcv drops it, and br_netfilter on a
                // bridge): dropped whatever that setting.
                let v = if broken_ip { Verdict::Drop } else { non_ip };
                verdicts.push(v);
                self.decisions.push(Decided { verdict: v, iif, ..Decided::default() });
                continue;
            };
            let (key, side) = (&info.key, info.side);
            let looked = self.table.lookup_due(key, info.hash, side, ts);
            if let Some(Looked { id, due: true, .. }) = looked {
                // Its connection timed out before this packet: it ends first, for the reason
                // the table's own timer would give (a closed connection's, or idle).
                let why = self.table.flow(id).closed().unwrap_or(EndReason::Idle);
                self.table.end(id, why);
            }
            // The live flow and the packet's direction in it.
            let dir = looked.filter(|l| !l.due).map(|l| (l.id, l.dir));
            let found = dir.map(|(id, _)| id);
            if !self.table.ended().is_empty() {
                self.retire_ended(i as u32, false, events);
            }
            let st = self.stateful.as_deref_mut().expect("the stateful path has its state");
            let table = &self.table;
            let insp = st
                .inspect(found, side, meta, frame.data, ts, |k, _| table.lookup(k, table.hash(k)));
            let oif = st.route(dir, iif, || meta.dst_addr());
            let icmp = matches!(key.proto(), 1 | 58).then_some((meta.icmp_type, meta.icmp_code));
            let app = found.and_then(|id| self.dpi.as_ref().and_then(|d| d.decided(id.0)));
            let q = Query {
                key,
                side,
                ct: insp.state,
                tcp_flags: meta.tcp.flags as u8,
                icmp,
                iif,
                oif,
                app,
                now: ts,
            };
            let decision = st.verdict(dir, &q);
            let (mut verdict, rule) = (decision.verdict(), decision.rule());
            let mut reason = insp.reason.map(|r| Why::Invalid(r, insp.detail));
            let accepted = verdict == Verdict::Accept;
            let tracked = if accepted || found.is_some() {
                let t = self.table.try_track_looked_up(info, found, insp.new_timeout());
                if t.is_none() {
                    // The table is full of connections that may not be pushed out: the
                    // packet is dropped, or passes untracked when failing open.
                    st.conntrack_mut().table_full();
                    if !st.fail_open() {
                        verdict = Verdict::Drop;
                    }
                    reason = Some(Why::TableFull);
                }
                t
            } else {
                None
            };
            if !self.table.ended().is_empty() {
                // Flows the new one pushed out end before its connection is stored (the
                // record may reuse an evicted flow's id).
                self.retire_ended(i as u32, false, events);
            }
            let st = self.stateful.as_deref_mut().expect("the stateful path has its state");
            let out =
                st.conntrack_mut().commit(&insp, verdict == Verdict::Accept, tracked.map(|t| t.id));
            if let Some(t) = tracked {
                let noted = if verdict == decision.verdict() {
                    decision
                } else {
                    Decision::new(verdict, rule)
                };
                st.note(t.id, noted);
            }
            if let Some((ended, summary)) = out.ended
                && out.id.is_none()
                && tracked.is_some_and(|t| t.id == ended)
            {
                // The connection is gone (a reset answered it first): so is its flow, and
                // its record keeps the connection's last state.
                st.closed(ended, summary);
                self.table.end(ended, EndReason::Rst);
            }
            if let Some(t) = tracked
                && t.new
                && out.id.is_none()
                && insp.new_timeout().is_some()
            {
                // Its connection was not stored after all: the flow keeps the table's own
                // timeout.
                self.table.set_timeout(t.id, None);
            }
            if let Some(id) = out.id {
                let timeout = out.refresh.timeout(ts, || self.table.deadline(id));
                let keep = !st.conntrack().may_early_drop(id, false);
                self.table.refresh(id, timeout, ts, keep);
            }
            if !self.table.ended().is_empty() {
                self.retire_ended(i as u32, false, events);
            }
            if let Some(t) = tracked
                && (self.rtt.is_some() || self.dpi.is_some() || self.tcp.is_some())
                && self.table.get(t.id).is_some()
            {
                let p = self.parser.complete(*info, frame, meta, i as u32, i as u32, None);
                self.observe(t, &p, &src, events);
            }
            verdicts.push(verdict);
            self.decisions.push(Decided { verdict, rule, ct: Some(insp.state), reason, iif, oif });
        }
        self.parsed = parsed;
        let now = self.parser.now();
        self.advance(now, u32::MAX, events);
    }

    /// The side stages' look at a packet of a live flow.
    #[inline]
    fn observe(
        &mut self,
        t: rampart_flow::Tracked,
        p: &Packet,
        payloads: &PayloadSource<'_>,
        events: &mut Events,
    ) {
        if self.rtt.is_none() && self.dpi.is_none() && self.tcp.is_none() {
            return;
        }
        let flow = self.table.flow(t.id);
        let ctx =
            FlowCtx { id: t.id, new: t.new, dir: t.dir, side: p.info.side, flow, ts: p.info.ts };
        if let Some(rtt) = &mut self.rtt
            && let Some(input) = &p.tcp
            && let Some(sample) = rtt.observe(&ctx, input)
            && self.samples
        {
            events.samples.push((p.pos, sample));
        }
        if let Some(tcp) = &mut self.tcp
            && let Some(i) = &p.tcp
        {
            let seg = TcpSeg {
                seq: i.seq,
                ack: i.ack,
                flags: i.flags,
                window: i.window,
                payload: i.payload,
            };
            tcp.observe(&ctx, &seg);
        }
        if let Some(dpi) = &mut self.dpi
            && !p.payload.is_empty()
        {
            dpi.observe(&ctx, payloads.get(p.payload));
        }
    }

    /// Lets capture time run to `now`, ending the flows quiet past their timeout at position
    /// `tick` (sorted in output order among themselves).
    pub fn advance(&mut self, now: Timestamp, tick: u32, events: &mut Events) {
        self.table.advance(now);
        let start = events.records.len();
        self.retire_ended(tick, true, events);
        events.records[start..].sort_unstable_by_key(Ordered::order);
    }

    /// The live flows in the order [`Pipeline::finish_flows`] ends them at the end of input:
    /// by first packet, then key.
    pub fn finish_order(&self) -> Vec<FlowId> {
        self.table.live_in_order()
    }

    /// Ends these live flows (end of input, in the order given) into `events`.
    pub fn finish_flows(&mut self, ids: &[FlowId], events: &mut Events) {
        self.table.end_many(ids, EndReason::End);
        self.retire_ended(u32::MAX, true, events);
    }

    /// Ends every live flow (end of input) into `events`; [`Pipeline::finish_order`] and
    /// [`Pipeline::finish_flows`] do the same a part at a time, holding fewer records at once.
    pub fn finish(&mut self, events: &mut Events) {
        let order = self.finish_order();
        self.finish_flows(&order, events);
    }

    /// Adds the stages' counters and memory to `s`.
    pub fn stats_into(&self, s: &mut Summary) {
        s.table += self.table.stats();
        s.table_bytes += self.table.memory_bytes();
        if let Some(rtt) = &self.rtt {
            s.rtt += SideStage::stats(rtt);
            s.rtt_bytes += SideStage::memory_bytes(rtt);
        }
        if let Some(dpi) = &self.dpi {
            s.dpi += SideStage::stats(dpi);
            s.dpi_bytes += SideStage::memory_bytes(dpi);
        }
        if let Some(tcp) = &self.tcp {
            s.tcp_bytes += SideStage::memory_bytes(tcp);
        }
        if let Some(p) = &self.policy {
            if s.rule_hits.len() < p.hits.len() {
                s.rule_hits.resize(p.hits.len(), 0);
            }
            for (a, b) in s.rule_hits.iter_mut().zip(&p.hits) {
                *a += b;
            }
        }
    }

    /// Turns the flows the table ended into records, each side stage's summary retired before
    /// any later packet can reuse their ids; interim records of live flows take each stage's
    /// summary so far and leave its state alone.
    fn retire_ended(&mut self, pos: u32, tick: bool, events: &mut Events) {
        for e in self.table.take_ended() {
            let (flow, start) = (e.reported(), e.flow.first);
            if e.reason == EndReason::Active {
                let f = &e.flow;
                let rtt = self.rtt.as_ref().map(|r| r.summary(e.id));
                let app = self.dpi.as_ref().map(|d| d.current(e.id.0, &rampart_dpi::flow_info(f)));
                let conn = self.tcp.as_ref().map(|t| t.current(e.id, f));
                let (ct, verdict) = match &self.stateful {
                    Some(st) => {
                        let r = st.current(e.id);
                        (r.ct, r.decided)
                    }
                    None => (None, None),
                };
                let end = e.reason;
                let record = FlowRecord { flow, start, end, rtt, app, ct, verdict, conn };
                events.records.push(Ordered { pos, tick, record });
                continue;
            }
            let rtt = self.rtt.as_mut().map(|r| SideStage::retire(r, e.id, &e.flow));
            let app = self.dpi.as_mut().map(|d| SideStage::retire(d, e.id, &e.flow));
            let conn = self.tcp.as_mut().map(|t| SideStage::retire(t, e.id, &e.flow));
            let (ct, verdict) = match &mut self.stateful {
                Some(st) => {
                    let r = st.retire(e.id, e.reason == EndReason::Evicted);
                    (r.ct, r.decided)
                }
                None => (None, None),
            };
            let end = e.reason;
            let record = FlowRecord { flow, start, end, rtt, app, ct, verdict, conn };
            events.records.push(Ordered { pos, tick, record });
        }
    }
}
