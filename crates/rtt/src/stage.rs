//! The default mode: RTT samples per flow, kept beside the flow table.
//!
//! TSval/TSecr matching follows ePPing's rules rather than pping's, so that a sample is the time
//! from a data segment to the segment that echoes it, not to whatever the application sends
//! next:
//!
//! * only segments that carry data (or SYN) are timestamped, never pure ACKs;
//! * a TSval is timestamped only if it is newer than the last one timestamped in that direction
//!   (RFC 7323 ordering), so the first segment carrying it wins;
//! * only a segment with the ACK flag can echo, and the entry it matches is deleted;
//! * an entry older than the maximum age is ignored.
//!
//! Flows without the timestamps option use SEQ/ACK matching ([`crate::seq`]); `--mode` picks
//! one method or both (hybrid: per packet, TS when the option is present).
//!
//! State is indexed by the flow table's [`FlowId`]; the caller resets it when the table starts
//! a new flow in a slot ([`RttStage::observe`] with `new`) and collects a flow's summary with
//! [`RttStage::retire`] when the table ends it.
//!
//! # Where outstanding TSvals are kept
//! Each direction of a flow keeps its latest timestamped TSval in its own state (a ring of
//! one), beside the counters the packet touches anyway; only when a newer one is timestamped
//! before the first was echoed does the older move to a table shared by all flows. An echo
//! looks in its flow's ring first and in the shared table only when that direction has entries
//! there (each direction counts its own). A request and its reply, the common case, so never
//! touch the shared table, which stays small and in cache; at a million flows that is two
//! cache misses fewer per packet (BENCHMARKS.md, "Where the time goes"). Matching is the same
//! as with every TSval in the shared table, which the tests check against: an entry is found
//! by its exact TSval wherever it lies, is removed when matched, and the periodic sweep drops
//! entries past the maximum age from the rings as from the table. Entries in the shared table
//! carry the flow's epoch, so an entry left by a flow that has ended never matches a later one
//! in the same slot. [`RttConfig::max_tsvals`] bounds the shared table; when it is full, the
//! entry that would move there is dropped (and counted).

use hashbrown::HashTable;
use rampart_flow::{Dir, Flow, FlowCtx, FlowId, FlowKey, PerFlow, Side, SideStage};
use rampart_wire::{PacketMeta, Span, Timestamp, proto, tcp::flags};

use crate::seq::SeqDir;
use crate::sketch::Sketch;
use crate::{ts_hash, ts_key};

/// Which matching methods run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// TSval/TSecr only.
    Ts,
    /// SEQ/ACK only.
    Seq,
    /// TSval/TSecr for packets with the timestamps option, SEQ/ACK for the others.
    #[default]
    Hybrid,
}

/// How a sample was matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// TSval/TSecr echo.
    Ts,
    /// SEQ/ACK.
    Seq,
}

impl Method {
    /// `"ts"` or `"seq"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ts => "ts",
            Self::Seq => "seq",
        }
    }
}

/// Settings for [`RttStage`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RttConfig {
    /// Matching methods.
    pub mode: Mode,
    /// TSval entries older than this (capture time) no longer match.
    pub tsval_max_age: Span,
    /// Most TSval entries held in the table shared by all flows (besides the one each flow's
    /// direction keeps itself); beyond it an entry that would move there is dropped (and
    /// counted).
    pub max_tsvals: usize,
    /// Count each direction's bytes for pping's fBytes, dBytes and pBytes columns
    /// ([`Sample::fbytes`] and the rest). Off, those fields are 0 and the stage keeps 80 bytes
    /// less per flow: only the machine format prints them.
    pub byte_counts: bool,
}

impl Default for RttConfig {
    fn default() -> Self {
        Self {
            mode: Mode::Hybrid,
            tsval_max_age: Span::from_secs(10),
            max_tsvals: 1 << 22,
            byte_counts: true,
        }
    }
}

/// What the stage needs from one TCP packet, taken from its [`PacketMeta`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RttInput {
    /// (TSval, TSecr) when the option is present.
    pub ts: Option<(u32, u32)>,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number.
    pub ack: u32,
    /// TCP flags.
    pub flags: u16,
    /// The window field, unscaled (for the TCP health counters).
    pub window: u16,
    /// Sequence space the segment uses: payload bytes, plus one each for SYN and FIN.
    pub seg_len: u32,
    /// Payload bytes.
    pub payload: u32,
    /// Frame length on the wire.
    pub wire_len: u32,
    /// The packet is addressed to this host: do not timestamp it (the reply would include
    /// local processing).
    pub to_local: bool,
}

impl RttInput {
    /// The input for a TCP packet whose header was parsed, else `None`.
    #[inline]
    pub fn from_meta(meta: &PacketMeta, wire_len: u32) -> Option<Self> {
        if meta.proto != proto::TCP || meta.tcp.header_len == 0 || meta.is_later_fragment() {
            return None;
        }
        let t = &meta.tcp;
        let syn_fin = u32::from(t.flags & flags::SYN != 0) + u32::from(t.flags & flags::FIN != 0);
        Some(Self {
            ts: t.timestamps(),
            seq: t.seq,
            ack: t.ack,
            flags: t.flags,
            window: t.window,
            seg_len: meta.payload_wire_len + syn_fin,
            payload: meta.payload_wire_len,
            wire_len,
            to_local: false,
        })
    }
}

/// One RTT sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Capture time of the packet that completed it.
    pub ts: Timestamp,
    /// The round-trip time, capture point to `side`'s host and back.
    pub rtt: Span,
    /// The smallest sample so far for that direction.
    pub min: Span,
    /// How it was matched.
    pub method: Method,
    /// The flow.
    pub id: FlowId,
    /// The flow's key.
    pub key: FlowKey,
    /// The side that sent the packet carrying the echo or ACK.
    pub side: Side,
    /// The direction of that packet relative to the flow's initiator: [`Dir::Original`] when
    /// the initiator sent it (the sample measures the capture point to the initiator and
    /// back), [`Dir::Reply`] when the responder did (towards the responder).
    pub dir: Dir,
    /// Bytes the other side had sent when the timed segment passed (pping's fBytes; 0
    /// without [`RttConfig::byte_counts`]).
    pub fbytes: u64,
    /// The other side's byte count at its previous sample (pping's dBytes; 0 without
    /// [`RttConfig::byte_counts`]).
    pub dbytes: u64,
    /// Bytes `side` sent since its previous sample (pping's pBytes; 0 without
    /// [`RttConfig::byte_counts`]).
    pub pbytes: u64,
}

/// RTT statistics of one direction: samples measuring capture point to that side's host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirSummary {
    /// Samples.
    pub count: u64,
    /// Smallest sample.
    pub min: Span,
    /// Median from the sketch (within about 3 %, clamped to min..max).
    pub median: Span,
    /// Largest sample.
    pub max: Span,
}

/// A flow's RTT statistics, indexed by the [`Dir`]ection of the packets that completed the
/// samples: `[Dir::Original]` holds the samples the initiator's echoes and ACKs completed,
/// which measure the capture point to the initiator and back; `[Dir::Reply]` those towards
/// the responder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RttSummary {
    /// Per direction: RTT from the capture point to the host that sends that way, and back.
    pub dirs: [DirSummary; 2],
}

impl RttSummary {
    /// Samples towards the initiator (`src`), then towards the responder (`dst`).
    pub fn toward_src_dst(&self) -> (DirSummary, DirSummary) {
        (self.dirs[Dir::Original as usize], self.dirs[Dir::Reply as usize])
    }
}

/// Counters kept by the stage (those of several stages add up with `+=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RttStats {
    /// TCP packets seen.
    pub tcp_packets: u64,
    /// Samples produced, by TSval/TSecr.
    pub ts_samples: u64,
    /// Samples produced, by SEQ/ACK.
    pub seq_samples: u64,
    /// TSvals not timestamped because the table was full.
    pub table_full: u64,
    /// Echoes that found an entry older than the maximum age (before a sweep removed it).
    pub expired: u64,
    /// Echoes matched to an entry stamped later than themselves (capture time going back).
    pub backwards: u64,
}

impl std::ops::AddAssign for RttStats {
    fn add_assign(&mut self, o: Self) {
        self.tcp_packets += o.tcp_packets;
        self.ts_samples += o.ts_samples;
        self.seq_samples += o.seq_samples;
        self.table_full += o.table_full;
        self.expired += o.expired;
        self.backwards += o.backwards;
    }
}

/// One direction's samples: extremes and the sketch, which counts them (56 bytes).
#[derive(Clone, Debug, Default)]
struct DirStats {
    min: Span,
    max: Span,
    sketch: Sketch,
}

impl DirStats {
    fn add(&mut self, rtt: Span) {
        if self.sketch.count() == 0 || rtt < self.min {
            self.min = rtt;
        }
        self.max = self.max.max(rtt);
        self.sketch.insert(rtt.as_nanos());
    }

    fn summary(&self) -> DirSummary {
        let count = self.sketch.count();
        if count == 0 {
            return DirSummary::default();
        }
        let median =
            self.sketch.quantile(0.5).map_or(self.min, Span::from_nanos).clamp(self.min, self.max);
        DirSummary { count, min: self.min, median, max: self.max }
    }
}

/// Per-direction flag: a TSval was timestamped in this direction.
const TS_SEEN: u8 = 1;
/// Per-direction flag: the direction's ring holds an outstanding TSval.
const RING: u8 = 2;

/// An outstanding TSval: when it was timestamped and the byte counts a sample reports.
#[derive(Clone, Copy, Debug, Default)]
struct Pending {
    tsval: u32,
    t: Timestamp,
    fbytes: u64,
    dbytes: u64,
}

/// A direction's count of entries in the shared table that no longer counts: from here on
/// an echo always looks there (until the flow ends).
const MANY: u8 = u8::MAX;

/// Per-flow state, indexed by flow id (48 bytes, 24 of them outstanding TSvals). SEQ/ACK
/// timing (96 bytes) lives apart, only for flows that send data without the timestamps
/// option; so do statistics, only for flows with samples, and byte counts
/// ([`FlowBytes`]), only when the output prints them.
#[derive(Clone, Copy, Debug, Default)]
struct FlowRtt {
    /// Told apart from the flows before it in the same slot (entries in the shared table
    /// carry it).
    epoch: u32,
    /// The flow's statistics in the stage's pool, plus one (0: none yet).
    stats: u32,
    /// The flow's SEQ/ACK timing in the stage's pool, plus one (0: none yet).
    seq: u32,
    flags: [u8; 2],
    /// Entries of each direction in the shared table, this epoch, up to [`MANY`], which
    /// sticks.
    spilled: [u8; 2],
    /// Each direction's last timestamped TSval (valid when its flags hold [`TS_SEEN`]).
    ts_last: [u32; 2],
    /// Each direction's latest outstanding TSval and when it was timestamped (valid when its
    /// flags hold [`RING`]).
    ring_tsval: [u32; 2],
    ring_t: [Timestamp; 2],
}

/// Per-flow byte counts for pping's columns, indexed by flow id (80 bytes), kept only with
/// [`RttConfig::byte_counts`].
#[derive(Clone, Copy, Debug, Default)]
struct FlowBytes {
    /// Wire bytes sent each way.
    sent: [u64; 2],
    /// `sent` at the direction's previous sample.
    at_sample: [u64; 2],
    /// The other side's `sent` when the segment timed by the direction's previous sample
    /// passed.
    dep: [u64; 2],
    /// Each ring entry's (fbytes, dbytes).
    ring: [(u64, u64); 2],
}

#[derive(Clone, Copy, Debug)]
struct TsEntry {
    key: u64,
    epoch: u32,
    t: Timestamp,
    fbytes: u64,
    dbytes: u64,
}

/// Places for state only some flows need (statistics, SEQ/ACK timing), in chunks that never
/// move: a place is taken cleared and given back, cleared, when its flow ends.
#[derive(Default)]
struct Pool<T> {
    items: PerFlow<T>,
    free: Vec<u32>,
    made: u32,
}

impl<T: Default + Clone> Pool<T> {
    /// A free place (its state is `T::default()`).
    fn take(&mut self) -> u32 {
        let at = self.free.pop().unwrap_or_else(|| {
            self.made += 1;
            self.made - 1
        });
        self.items.get_or_grow(at);
        at
    }

    /// Clears place `at` (what it holds on the heap is freed now) for the next flow.
    fn give(&mut self, at: u32) {
        if let Some(v) = self.items.get_mut(at) {
            *v = T::default();
        }
        self.free.push(at);
    }

    fn get(&self, at: u32) -> Option<&T> {
        self.items.get(at)
    }

    fn get_mut(&mut self, at: u32) -> &mut T {
        self.items.get_or_grow(at)
    }

    fn memory_bytes(&self) -> usize {
        self.items.memory_bytes() + self.free.capacity() * 4
    }
}

/// RTT matching for every flow of a flow table.
pub struct RttStage {
    cfg: RttConfig,
    flows: PerFlow<FlowRtt>,
    /// Byte counts, with [`RttConfig::byte_counts`] (without, empty: every read of it finds
    /// nothing and counts 0).
    bytes: PerFlow<FlowBytes>,
    /// The reference the tests compare with: every outstanding TSval in the shared table, and
    /// SEQ/ACK timing made for every flow at its first packet without timestamps.
    reference: bool,
    /// Statistics of the flows that have samples.
    stats: Pool<[DirStats; 2]>,
    /// SEQ/ACK timing of the flows that have some.
    seq: Pool<[SeqDir; 2]>,
    ts: HashTable<TsEntry>,
    next_sweep: Timestamp,
    counters: RttStats,
}

impl RttStage {
    /// A stage with no flows.
    pub fn new(cfg: RttConfig) -> Self {
        Self {
            cfg,
            flows: PerFlow::new(),
            bytes: PerFlow::new(),
            reference: false,
            stats: Pool::default(),
            seq: Pool::default(),
            ts: HashTable::with_capacity(1 << 12),
            next_sweep: Timestamp::EPOCH,
            counters: RttStats::default(),
        }
    }

    /// The stage's counters.
    pub fn counters(&self) -> RttStats {
        self.counters
    }

    /// TSval entries held: in the shared table and in the flows' rings.
    pub fn ts_entries(&self) -> usize {
        let ringed = self.flows.iter().map(|f| f.flags.iter().filter(|&&x| x & RING != 0).count());
        self.ts.len() + ringed.sum::<usize>()
    }

    /// One TCP packet of flow `id` (`new`: the table just started this flow in that slot),
    /// going `dir` (sent by `side` of `key`) at `now`. Returns the sample it completes,
    /// if any. [`SideStage::observe`] is the same call with the flow's context.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn observe_packet(
        &mut self,
        id: FlowId,
        new: bool,
        key: &FlowKey,
        side: Side,
        dir: Dir,
        now: Timestamp,
        p: &RttInput,
    ) -> Option<Sample> {
        self.counters.tcp_packets += 1;
        let i = id.0;
        if new {
            self.reset(i);
        }
        if now >= self.next_sweep {
            self.sweep(now);
        }
        let d = dir as usize;
        if self.cfg.byte_counts {
            // Made for every flow here, so a flow has byte counts exactly when they are kept.
            self.bytes.get_or_grow(i).sent[d] += u64::from(p.wire_len);
        }
        let f = self.flows.get_or_grow(i);
        let mode = self.cfg.mode;
        let (start, method) = match p.ts {
            Some((tsval, tsecr)) if mode != Mode::Seq => {
                let epoch = f.epoch;
                if tsval != 0
                    && (p.payload > 0 || p.flags & flags::SYN != 0)
                    && !p.to_local
                    && (f.flags[d] & TS_SEEN == 0 || (tsval.wrapping_sub(f.ts_last[d]) as i32) > 0)
                {
                    f.ts_last[d] = tsval;
                    f.flags[d] |= TS_SEEN;
                    let counts = self.bytes.get(i).map_or((0, 0), |b| (b.sent[d], b.dep[d]));
                    let new = Pending { tsval, t: now, fbytes: counts.0, dbytes: counts.1 };
                    // The newest stays in the ring; an older one still waiting moves out.
                    let out = if self.reference {
                        Some(new)
                    } else {
                        let mut old = (f.flags[d] & RING != 0).then(|| Pending {
                            tsval: f.ring_tsval[d],
                            t: f.ring_t[d],
                            fbytes: 0,
                            dbytes: 0,
                        });
                        f.ring_tsval[d] = tsval;
                        f.ring_t[d] = now;
                        f.flags[d] |= RING;
                        if let Some(b) = self.bytes.get_mut(i) {
                            let was = std::mem::replace(&mut b.ring[d], counts);
                            if let Some(o) = old.as_mut() {
                                (o.fbytes, o.dbytes) = was;
                            }
                        }
                        old
                    };
                    if let Some(o) = out {
                        self.spill(i, d, epoch, o, now);
                    }
                }
                if p.flags & flags::ACK == 0 || tsecr == 0 {
                    return None;
                }
                let e = self.take(i, d ^ 1, epoch, tsecr)?;
                if now < e.t {
                    self.counters.backwards += 1;
                    return None;
                }
                if now - e.t > self.cfg.tsval_max_age {
                    self.counters.expired += 1;
                    return None;
                }
                ((e.t, e.fbytes, e.dbytes), Method::Ts)
            }
            None if mode == Mode::Ts => return None,
            _ => {
                let mut at = f.seq;
                if at == 0 {
                    // Nothing timed yet: only a segment that uses sequence space starts timing
                    // (a reset or a bare ACK would find nothing to act on).
                    if (p.seg_len == 0 || p.flags & flags::RST != 0) && !self.reference {
                        return None;
                    }
                    at = self.seq.take() + 1;
                    self.flows.get_or_grow(i).seq = at;
                }
                let sd = self.seq.get_mut(at - 1);
                if p.flags & flags::RST != 0 {
                    sd[0].abort();
                    sd[1].abort();
                    return None;
                }
                sd[d].on_send(p.seq, p.seg_len, now);
                if p.flags & flags::ACK == 0 {
                    return None;
                }
                let t = sd[d ^ 1].on_ack(p.ack)?;
                if now < t {
                    self.counters.backwards += 1;
                    return None;
                }
                let counts = self.bytes.get(i).map_or((0, 0), |b| (b.sent[d ^ 1], b.dep[d ^ 1]));
                ((t, counts.0, counts.1), Method::Seq)
            }
        };
        let (t, fbytes, dbytes) = start;
        let rtt = now - t;
        match method {
            Method::Ts => self.counters.ts_samples += 1,
            Method::Seq => self.counters.seq_samples += 1,
        }
        let pbytes = self.bytes.get_mut(i).map_or(0, |b| {
            let pbytes = b.sent[d] - b.at_sample[d];
            b.at_sample[d] = b.sent[d];
            b.dep[d ^ 1] = fbytes;
            pbytes
        });
        let s = self.stats_of(i);
        let st = &mut self.stats.get_mut(s)[d];
        st.add(rtt);
        Some(Sample {
            ts: now,
            rtt,
            min: st.min,
            method,
            id,
            key: *key,
            side,
            dir,
            fbytes,
            dbytes,
            pbytes,
        })
    }

    /// The summary of the live flow `id` so far, its statistics kept (for an interim record).
    pub fn summary(&self, id: FlowId) -> RttSummary {
        let s = self.flows.get(id.0).map_or(0, |f| f.stats);
        match s.checked_sub(1).and_then(|s| self.stats.get(s)) {
            Some(st) => RttSummary { dirs: [st[0].summary(), st[1].summary()] },
            None => RttSummary::default(),
        }
    }

    /// The summary of flow `id`, which has ended; its statistics and SEQ/ACK timing are
    /// released.
    pub fn retire(&mut self, id: FlowId) -> RttSummary {
        let out = self.summary(id);
        if let Some(f) = self.flows.get_mut(id.0) {
            let s = std::mem::take(&mut f.stats);
            let q = std::mem::take(&mut f.seq);
            self.release(s, q);
        }
        out
    }

    /// Gives back a flow's statistics and SEQ/ACK places (plus one; 0: none).
    fn release(&mut self, stats: u32, seq: u32) {
        if let Some(s) = stats.checked_sub(1) {
            self.stats.give(s);
        }
        if let Some(q) = seq.checked_sub(1) {
            self.seq.give(q);
        }
    }

    /// Bytes held: per-flow state, statistics and the TSval table.
    pub fn memory_bytes(&self) -> usize {
        self.flows.memory_bytes()
            + self.bytes.memory_bytes()
            + self.stats.memory_bytes()
            + self.seq.memory_bytes()
            + self.ts.capacity() * (std::mem::size_of::<TsEntry>() + 1)
    }

    fn reset(&mut self, i: u32) {
        let f = self.flows.get_or_grow(i);
        let old =
            std::mem::replace(f, FlowRtt { epoch: f.epoch.wrapping_add(1), ..FlowRtt::default() });
        self.release(old.stats, old.seq);
        if self.cfg.byte_counts {
            *self.bytes.get_or_grow(i) = FlowBytes::default();
        }
    }

    /// Flow `i`'s statistics' place in the pool, taken on its first sample.
    fn stats_of(&mut self, i: u32) -> u32 {
        let f = self.flows.get_or_grow(i);
        if f.stats == 0 {
            f.stats = self.stats.take() + 1;
        }
        f.stats - 1
    }

    /// Moves an outstanding TSval of flow `i`'s direction `d` into the shared table (replacing
    /// a stale entry with the same key).
    fn spill(&mut self, i: u32, d: usize, epoch: u32, p: Pending, now: Timestamp) {
        if self.ts.len() >= self.cfg.max_tsvals {
            self.sweep(now);
            if now.since(p.t) > self.cfg.tsval_max_age {
                // Out of its ring during the sweep, which would have dropped it there.
                return;
            }
            if self.ts.len() >= self.cfg.max_tsvals {
                self.counters.table_full += 1;
                return;
            }
        }
        let entry = TsEntry {
            key: ts_key(i, d, p.tsval),
            epoch,
            t: p.t,
            fbytes: p.fbytes,
            dbytes: p.dbytes,
        };
        let h = ts_hash(entry.key);
        let counted = match self.ts.entry(h, |e| e.key == entry.key, |e| ts_hash(e.key)) {
            hashbrown::hash_table::Entry::Occupied(mut o) => {
                std::mem::replace(o.get_mut(), entry).epoch == epoch
            }
            hashbrown::hash_table::Entry::Vacant(v) => {
                v.insert(entry);
                false
            }
        };
        let n = &mut self.flows.get_or_grow(i).spilled[d];
        if !counted && *n != MANY {
            *n += 1;
        }
    }

    /// Takes the outstanding TSval `tsval` of flow `i`'s direction `d` (this epoch), from its
    /// ring or the shared table.
    #[inline]
    fn take(&mut self, i: u32, d: usize, epoch: u32, tsval: u32) -> Option<Pending> {
        let f = self.flows.get_or_grow(i);
        if f.flags[d] & RING != 0 && f.ring_tsval[d] == tsval {
            f.flags[d] &= !RING;
            let t = f.ring_t[d];
            let (fbytes, dbytes) = self.bytes.get(i).map_or((0, 0), |b| b.ring[d]);
            return Some(Pending { tsval, t, fbytes, dbytes });
        }
        if f.spilled[d] == 0 && !self.reference {
            return None;
        }
        let k = ts_key(i, d, tsval);
        let (e, _) = self.ts.find_entry(ts_hash(k), |e| e.key == k).ok()?.remove();
        if e.epoch != epoch {
            return None;
        }
        let n = &mut self.flows.get_or_grow(i).spilled[d];
        if *n != MANY {
            *n -= 1;
        }
        Some(Pending { tsval, t: e.t, fbytes: e.fbytes, dbytes: e.dbytes })
    }

    /// Drops entries past the maximum age, from the shared table and the rings, and those
    /// the shared table holds for ended flows; runs once per maximum age of capture time (and
    /// when the shared table is full).
    fn sweep(&mut self, now: Timestamp) {
        let max_age = self.cfg.tsval_max_age;
        let flows = &mut self.flows;
        self.ts.retain(|e| {
            let d = (e.key >> 32) as usize & 1;
            match flows.get_mut((e.key >> 33) as u32) {
                Some(f) if f.epoch == e.epoch => {
                    let keep = now.since(e.t) <= max_age;
                    if !keep && f.spilled[d] != MANY {
                        f.spilled[d] -= 1;
                    }
                    keep
                }
                _ => false,
            }
        });
        for f in flows.iter_mut() {
            for d in 0..2 {
                if f.flags[d] & RING != 0 && now.since(f.ring_t[d]) > max_age {
                    f.flags[d] &= !RING;
                }
            }
        }
        self.next_sweep = now.saturating_add(max_age.max(Span::from_nanos(1)));
    }
}

impl SideStage for RttStage {
    type Input<'a> = &'a RttInput;
    type Output = Sample;
    type Summary = RttSummary;
    type Stats = RttStats;

    #[inline]
    fn observe(&mut self, f: &FlowCtx<'_>, p: &RttInput) -> Option<Sample> {
        self.observe_packet(f.id, f.new, &f.flow.key, f.side, f.dir, f.ts, p)
    }

    fn retire(&mut self, id: FlowId, _flow: &Flow) -> RttSummary {
        RttStage::retire(self, id)
    }

    fn stats(&self) -> RttStats {
        self.counters
    }

    fn memory_bytes(&self) -> usize {
        RttStage::memory_bytes(self)
    }

    fn reserve(&mut self, flows: usize) {
        self.flows.reserve(flows);
        if self.cfg.byte_counts {
            self.bytes.reserve(flows);
        }
    }
}

#[cfg(test)]
mod tests;
