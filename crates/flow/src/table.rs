use rampart_wire::{Span, Timestamp};

use crate::key::{Dir, FlowKey, Side};

/// Records per arena chunk; chunks are allocated as the number of live flows grows.
const CHUNK: usize = 4096;
/// Records looked at when choosing a flow to evict.
const EVICT_SAMPLE: usize = 8;
/// Records scanned at most to find [`EVICT_SAMPLE`] that may be evicted.
const EVICT_SCAN: usize = 256;
/// Index slots per allowed flow at full size (load factor at most 1/2).
const SLOTS_PER_FLOW: usize = 2;
const MIN_SLOTS: usize = 1024;
/// TCP flag bits the table looks at.
const SYN: u16 = rampart_wire::tcp::flags::SYN;
const ACK: u16 = rampart_wire::tcp::flags::ACK;
const FIN: u16 = rampart_wire::tcp::flags::FIN;
const RST: u16 = rampart_wire::tcp::flags::RST;
/// Idle timers count capture time in ticks of 2^26 ns (67 ms) since the epoch.
const TICK_SHIFT: u32 = 26;
/// Slots of the timer wheel: 4096 ticks, 4.6 minutes; later deadlines go round again.
const WHEEL: usize = 4096;

/// Table limits.
#[derive(Clone, Copy, Debug)]
pub struct TableConfig {
    /// Most flows tracked at once; a new flow beyond it evicts an old one.
    pub max_flows: usize,
    /// A flow idle for longer than this (capture time) has ended.
    pub idle_timeout: Span,
    /// A TCP flow that has been closed (a FIN each way, or a reset) ends once it has been
    /// quiet this long, so that retransmitted FINs and the last ACKs still join it.
    /// [`Span::MAX`] keeps closed flows until the idle timeout.
    pub close_linger: Span,
    /// Seed for the table hash (fixed seeds make runs reproducible; vary it per process to keep
    /// crafted traffic from colliding).
    pub seed: u64,
    /// When full, a new flow may push out any flow (a flow meter keeps counting), or only
    /// flows not marked protected ([`FlowTable::set_protected`]): a firewall's connection
    /// table keeps its established connections and refuses the new flow instead, as Linux's
    /// early drop does.
    pub evict_protected: bool,
}

impl Default for TableConfig {
    fn default() -> Self {
        Self {
            max_flows: 1_000_000,
            idle_timeout: Span::from_secs(300),
            close_linger: Span::from_secs(5),
            seed: 0x5eed_f10e,
            evict_protected: true,
        }
    }
}

/// Why a flow record was ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EndReason {
    /// No packet for longer than the idle timeout.
    Idle,
    /// A TCP connection closed by a FIN each way, then quiet for the close linger.
    Fin,
    /// A TCP connection reset, then quiet for the close linger.
    Rst,
    /// Pushed out to make room for a new flow when the table was full.
    Evicted,
    /// The input ended (or the run was stopped) with the flow still live.
    End,
    /// Not an end: an interim record of a flow that goes on, written because its active
    /// timeout passed ([`FlowTable::set_active_timeout`]). The flow stays live; the record
    /// covers one interval of it.
    Active,
}

impl EndReason {
    /// The name used in records: `idle`, `fin`, `rst`, `evicted`, `end` or `active`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Fin => "fin",
            Self::Rst => "rst",
            Self::Evicted => "evicted",
            Self::End => "end",
            Self::Active => "active",
        }
    }

    /// Whether the record ends its flow (every reason but [`EndReason::Active`]).
    pub fn is_final(self) -> bool {
        self != Self::Active
    }
}

/// A flow's record. Directions are relative to the initiator: `[0]` is initiator to responder
/// ([`Dir::Original`]), `[1]` the replies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flow {
    /// The flow's key.
    pub key: FlowKey,
    /// First packet's timestamp.
    pub first: Timestamp,
    /// Latest timestamp seen.
    pub last: Timestamp,
    /// Packets per direction.
    pub packets: [u64; 2],
    /// Bytes per direction: each frame's original length on the wire.
    pub bytes: [u64; 2],
    /// For a flow with a caller's timeout: how long before `last` its deadline was last set,
    /// in units of 2^20 ns (about 1 ms): the deadline is that moment plus the timeout.
    held: u32,
    /// Timer list links: the next record on the list (record + 1, 0 at the end), and the
    /// previous one (record + 1), or the list's slot with [`HEAD`] set for the first; 0 when
    /// the record is on no list.
    next: u32,
    prev: u32,
    /// TCP flags seen per direction (OR of every segment's `CEUAPRSF` bits).
    pub tcp_flags: [u8; 2],
    /// Which side of the key sent the first packet.
    pub initiator: Side,
    /// [`LIVE`], [`PROTECTED`], and the timeout class in the low six bits (0: the table's
    /// own choice, the idle timeout or the close linger).
    bits: u8,
}

/// The record holds a live flow.
const LIVE: u8 = 0x80;
/// The flow is not pushed out when the table is full (unless the table says it may be).
const PROTECTED: u8 = 0x40;
/// The timeout class bits.
const CLASS: u8 = 0x3f;
/// [`Flow::held`] counts in units of 2^20 ns.
const HELD_SHIFT: u32 = 20;

const _: () = assert!(std::mem::size_of::<Flow>() == 104);

/// Marks a timer link that names a wheel slot rather than a record.
const HEAD: u32 = 1 << 31;

/// A record's `prev` while it waits in the near heap (a slot number no wheel has).
const NEAR: u32 = HEAD | (2 * WHEEL) as u32;

impl Flow {
    /// A record for a flow whose first packet is `p`.
    pub fn start(p: &PacketInfo) -> Self {
        Self {
            key: p.key,
            first: p.ts,
            last: p.ts,
            packets: [1, 0],
            bytes: [u64::from(p.wire_len), 0],
            held: 0,
            next: 0,
            prev: 0,
            tcp_flags: [p.tcp_flags as u8, 0],
            initiator: p.side,
            bits: LIVE,
        }
    }

    #[inline]
    fn live(&self) -> bool {
        self.bits & LIVE != 0
    }

    /// The initiator's address, port, then the responder's.
    pub fn endpoints(&self) -> (std::net::IpAddr, u16, std::net::IpAddr, u16) {
        let k = &self.key;
        match self.initiator {
            Side::A => (k.addr_a(), k.port_a(), k.addr_b(), k.port_b()),
            Side::B => (k.addr_b(), k.port_b(), k.addr_a(), k.port_a()),
        }
    }

    /// The direction of a packet sent by `side`.
    #[inline]
    pub fn dir(&self, side: Side) -> Dir {
        if side == self.initiator { Dir::Original } else { Dir::Reply }
    }

    /// How a TCP flow was closed, once it was: [`EndReason::Rst`] after a reset either way,
    /// [`EndReason::Fin`] after a FIN each way; `None` while it is open (and for other
    /// protocols, which carry no TCP flags).
    #[inline]
    pub fn closed(&self) -> Option<EndReason> {
        const FIN: u8 = rampart_wire::tcp::flags::FIN as u8;
        const RST: u8 = rampart_wire::tcp::flags::RST as u8;
        let [a, b] = self.tcp_flags;
        if (a | b) & RST != 0 {
            Some(EndReason::Rst)
        } else if a & b & FIN != 0 {
            Some(EndReason::Fin)
        } else {
            None
        }
    }
}

/// Where a flow's current reporting interval began, kept beside the table when it has an
/// active timeout ([`FlowTable::set_active_timeout`]): the interval's first packet, the
/// flow's counters before it, and the TCP flags seen since.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Interval {
    /// Capture time of the interval's first packet.
    pub start: Timestamp,
    /// The flow's packets per direction before the interval.
    pub packets: [u64; 2],
    /// The flow's bytes per direction before the interval.
    pub bytes: [u64; 2],
    /// TCP flags seen per direction within the interval.
    pub tcp_flags: [u8; 2],
}

impl Interval {
    /// The first interval of a flow whose first packet is `p` (the packet included).
    fn start(p: &PacketInfo) -> Self {
        Self { start: p.ts, tcp_flags: [p.tcp_flags as u8, 0], ..Self::default() }
    }
}

impl Flow {
    /// The record of one interval of this flow: the interval's first packet as `first`, the
    /// packets and bytes counted since the interval began, the TCP flags seen within it;
    /// the key, the initiator and the last packet as the flow's.
    pub fn since(&self, iv: &Interval) -> Flow {
        let sub = |a: [u64; 2], b: [u64; 2]| [a[0].saturating_sub(b[0]), a[1].saturating_sub(b[1])];
        Flow {
            first: iv.start,
            packets: sub(self.packets, iv.packets),
            bytes: sub(self.bytes, iv.bytes),
            tcp_flags: iv.tcp_flags,
            ..*self
        }
    }
}

/// What the table reports about a flow: that it has ended, and why; or, with
/// [`EndReason::Active`], an interim report of a flow that goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowReport {
    /// The record as it stood at the end (at an interim report: before the packet that
    /// triggered it), with the flow's totals.
    pub flow: Flow,
    /// Why it ended.
    pub reason: EndReason,
    /// The id the flow had; it may already belong to a newer flow.
    pub id: FlowId,
    /// With an active timeout: where the interval this record reports began (`None` when
    /// the table has no active timeout, and the record covers the whole flow).
    pub since: Option<Interval>,
}

impl FlowReport {
    /// What the record reports: the interval since the flow's previous record
    /// ([`Flow::since`]) with an active timeout, else the whole flow.
    pub fn reported(&self) -> Flow {
        match &self.since {
            Some(iv) => self.flow.since(iv),
            None => self.flow,
        }
    }
}

/// A flow's slot number: stable while the flow lives, reused afterwards. Stages that keep their
/// own per-flow state index it by this, and reset it when [`Tracked::new`] says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowId(pub u32);

/// One packet as the table needs it.
#[derive(Clone, Copy, Debug)]
pub struct PacketInfo {
    /// The flow key.
    pub key: FlowKey,
    /// Which side of the key sent the packet.
    pub side: Side,
    /// [`FlowTable::hash`] of the key.
    pub hash: u64,
    /// Capture timestamp.
    pub ts: Timestamp,
    /// Frame length on the wire.
    pub wire_len: u32,
    /// TCP flags (0 for other protocols).
    pub tcp_flags: u16,
}

/// What [`FlowTable::lookup_due`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Looked {
    /// The flow.
    pub id: FlowId,
    /// The packet's direction in it.
    pub dir: Dir,
    /// Its deadline has passed.
    pub due: bool,
}

/// What [`FlowTable::track`] did with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tracked {
    /// The flow's id.
    pub id: FlowId,
    /// The flow started with this packet (per-flow state kept elsewhere must be reset).
    pub new: bool,
    /// The packet's direction: from the initiator, or a reply.
    pub dir: Dir,
}

/// Counters kept by the table. Counters of several tables add up with `+=` (peaks too, which
/// then bound the true peak from above).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableStats {
    /// Flows created.
    pub created: u64,
    /// Flows ended by the idle timeout.
    pub idle: u64,
    /// TCP flows ended after a FIN each way.
    pub fin: u64,
    /// TCP flows ended after a reset.
    pub rst: u64,
    /// Flows evicted because the table was full.
    pub evicted: u64,
    /// Most flows live at once.
    pub peak: u64,
    /// New flows refused because the table was full of protected flows.
    pub refused: u64,
    /// Records the idle timers looked at (ended or put back on a later list).
    pub timer_checks: u64,
    /// Interim records of live flows whose active timeout passed.
    pub interim: u64,
}

impl std::ops::AddAssign for TableStats {
    fn add_assign(&mut self, o: Self) {
        self.created += o.created;
        self.idle += o.idle;
        self.fin += o.fin;
        self.rst += o.rst;
        self.evicted += o.evicted;
        self.peak += o.peak;
        self.refused += o.refused;
        self.timer_checks += o.timer_checks;
        self.interim += o.interim;
    }
}

/// A bounded flow table: open addressing with linear probing over 8-byte index entries,
/// records in a chunked arena, backward-shift deletion (no tombstones).
///
/// Flows end exactly: [`FlowTable::advance`] ends every flow whose last packet lies more than
/// its timeout before the time it is given (the idle timeout, or the close linger once a TCP
/// flow is closed), whatever else the table holds, so which flows end at which call depends
/// only on each flow's own packets (tables that share a capture between them end the same flows
/// at the same calls as one table would). A timer wheel finds them: 4096 list heads, each list
/// doubly linked through the records, one entry per record, looked at about once per turn and
/// never per packet, except when a flow's deadline moves earlier (it closes), which moves its
/// entry. It costs no memory beyond the record.
pub struct FlowTable {
    index: Vec<u64>,
    mask: usize,
    max_slots: usize,
    chunks: Vec<Box<[Flow; CHUNK]>>,
    allocated: usize,
    free: Vec<u32>,
    live: usize,
    cfg: TableConfig,
    /// The hash's keys, from the configured seed.
    keys: [u64; 7],
    hand: usize,
    /// The flow the next eviction takes, chosen by the previous one (with its last packet's
    /// time then, to see that it has stayed quiet), so that the lines its removal touches
    /// were asked for a packet earlier.
    next_victim: Option<(u32, Timestamp)>,
    /// Timer wheels, the main one then the back one: per slot, the head of a list of records
    /// (record + 1, 0 when empty) whose deadline tick falls on the slot. A deadline is rounded
    /// down to its tick, so an entry never comes due after its flow's deadline; an entry whose
    /// deadline had passed when it was linked waits on the cursor's slot. After capture time
    /// steps back, the main wheel waits for time to come back to `high`, and flows met in
    /// between are filed on the back wheel.
    wheel: Vec<u32>,
    /// The tick [`FlowTable::advance`] got to (its slot is looked at again next time).
    cursor: u64,
    /// Where the main wheel stopped when time stepped back (meaningful while `cursor < high`).
    high: u64,
    ended: Vec<FlowReport>,
    stats: TableStats,
    /// Timeouts of the classes a caller gave flows ([`FlowTable::set_timeout`]); class `i`
    /// lasts `timeouts[i - 1]`.
    timeouts: Vec<Span>,
    /// Records whose deadline falls in the tick the cursor is in, by deadline (earliest
    /// first): each comes off when its deadline passes, so the tick's slot is not looked
    /// through again at every call to [`FlowTable::advance`] within the tick. An entry is
    /// current while its record's `prev` is [`NEAR`]; a record taken off its timer list
    /// leaves its entry behind, which is skipped when it comes up.
    near: std::collections::BinaryHeap<std::cmp::Reverse<(Timestamp, u32)>>,
    /// The active timeout (zero: none): a live flow's next packet more than this after the
    /// start of its current interval first reports the interval ([`EndReason::Active`]).
    active: Span,
    /// With an active timeout, each record's current interval (indexed like the records,
    /// grown a chunk at a time); empty otherwise.
    intervals: Vec<Interval>,
}

/// Both halves of the 128-bit product, folded.
#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// Keys from a seed (splitmix64's sequence: distinct, well mixed, never zero in practice).
fn hash_keys(seed: u64) -> [u64; 7] {
    let mut x = seed;
    std::array::from_fn(|_| {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    })
}

#[inline]
fn entry(hash: u32, rec: u32) -> u64 {
    (u64::from(hash) << 32) | u64::from(rec + 1)
}

impl FlowTable {
    /// An empty table. Memory grows with the number of live flows, up to the bound.
    pub fn new(cfg: TableConfig) -> Self {
        let max_flows = cfg.max_flows.clamp(1, (HEAD - 2) as usize);
        let max_slots = (max_flows * SLOTS_PER_FLOW).next_power_of_two().max(MIN_SLOTS);
        let slots = MIN_SLOTS.min(max_slots);
        Self {
            index: vec![0; slots],
            mask: slots - 1,
            max_slots,
            chunks: Vec::new(),
            allocated: 0,
            free: Vec::new(),
            live: 0,
            cfg: TableConfig { max_flows, ..cfg },
            keys: hash_keys(cfg.seed),
            hand: 0,
            next_victim: None,
            wheel: vec![0; 2 * WHEEL],
            cursor: 0,
            high: 0,
            ended: Vec::new(),
            stats: TableStats::default(),
            timeouts: Vec::new(),
            near: std::collections::BinaryHeap::new(),
            active: Span::ZERO,
            intervals: Vec::new(),
        }
    }

    /// Makes room for the table's bound at once (address space; pages are touched as flows
    /// come): the index at its full size, so it is never rehashed while packets wait, and
    /// room for every chunk of records and every free entry. A live capture calls it at
    /// start; a file grows the table as it goes.
    pub fn reserve(&mut self) {
        if self.index.len() < self.max_slots {
            self.resize_index(self.max_slots);
        }
        let max = self.cfg.max_flows;
        self.chunks.reserve_exact(max.div_ceil(CHUNK).saturating_sub(self.chunks.len()));
        self.free.reserve_exact(max.saturating_sub(self.free.len()));
    }

    /// Reports live flows in intervals (`None`, the default: one record per flow): a flow
    /// whose next packet comes more than `timeout` of capture time after the first packet
    /// of its current interval is reported first, as a [`FlowReport`] with
    /// [`EndReason::Active`] and the interval's counters ([`FlowReport::since`]); the flow stays
    /// live, and that packet begins its next interval. Its records (the interim ones and the
    /// final one) add up to its totals, and their intervals do not overlap. The check is made
    /// at packets only: a flow that goes quiet is reported when it ends (idle timeout, close,
    /// eviction or the end of input), its last record covering everything since the previous
    /// one. Set it before the first packet (flows live then start their interval at their
    /// first packet); a zero timeout is none.
    pub fn set_active_timeout(&mut self, timeout: Option<Span>) {
        self.active = timeout.unwrap_or(Span::ZERO);
        self.intervals = Vec::new();
        if !self.active.is_zero() {
            self.intervals.resize(self.chunks.len() * CHUNK, Interval::default());
            for r in 0..self.allocated {
                let f = &self.chunks[r / CHUNK][r % CHUNK];
                if f.live() {
                    self.intervals[r] =
                        Interval { start: f.first, tcp_flags: f.tcp_flags, ..Interval::default() };
                }
            }
        }
    }

    /// The active timeout ([`FlowTable::set_active_timeout`]), if any.
    pub fn active_timeout(&self) -> Option<Span> {
        (!self.active.is_zero()).then_some(self.active)
    }

    /// Where record `rec`'s current interval began, with an active timeout.
    #[inline]
    fn since(&self, rec: u32) -> Option<Interval> {
        self.intervals.get(rec as usize).copied().filter(|_| !self.active.is_zero())
    }

    /// The table's limits.
    pub fn config(&self) -> &TableConfig {
        &self.cfg
    }

    /// The table hash of a key; compute it once per packet and pass it in [`PacketInfo`].
    ///
    /// Folded multiplies (both halves of a 64 x 64 -> 128-bit product, as foldhash and wyhash
    /// mix) of the key's words with the seed's keys, in two rounds: each address and the
    /// ports word are folded side by side, then together, so every word goes through two
    /// multiplies (one alone leaves a word that varies in few bits poorly mixed). Keys that
    /// differ in one port alone fill the index's slots as random values do, where foldhash
    /// over the five words filled 59 % of them against 63 % (the test
    /// `keys_that_differ_in_one_field_spread_over_the_index`), at the same speed.
    #[inline]
    pub fn hash(&self, key: &FlowKey) -> u64 {
        let [w0, w1, w2, w3, w4] = key.words();
        let k = &self.keys;
        let a = fold(w0 ^ k[0], w1 ^ k[1]);
        let b = fold(w2 ^ k[2], w3 ^ k[3]);
        let c = fold(w4 ^ k[4], k[5]);
        fold(a ^ c, b ^ k[6])
    }

    /// Hints the CPU to load the index line a lookup for `hash` will probe first.
    #[inline]
    pub fn prefetch_index(&self, hash: u64) {
        prefetch(&self.index[hash as u32 as usize & self.mask] as *const u64);
    }

    /// Hints the CPU to load the record of [`FlowTable::candidate`]. Call it after
    /// [`FlowTable::prefetch_index`] on the same batch, once that line has had time to arrive.
    #[inline]
    pub fn prefetch_record(&self, hash: u64) {
        if let Some(FlowId(rec)) = self.candidate(hash) {
            // A record is 104 bytes: it touches two cache lines, or three when it starts past
            // byte 24 of a line (half of them, with the key in the middle one). Ask for all.
            let p = (self.record(rec) as *const Flow).cast::<u8>();
            prefetch(p);
            prefetch(p.wrapping_add(64));
            prefetch(p.wrapping_add(std::mem::size_of::<Flow>() - 1));
            if let Some(iv) = self.intervals.get(rec as usize) {
                // With an active timeout the packet also reads its interval's start.
                prefetch(iv as *const Interval);
            }
        }
    }

    /// The likely flow of a packet with `hash` (its key is not compared): the first record
    /// whose index slot carries the hash, among the slots up to the end of the probe's first
    /// index line, so that the state kept by flow id can be prefetched with
    /// [`FlowTable::prefetch_record`]. At the table's load factor (at most 1/2) about a third
    /// of the flows sit past their home slot, almost always in the same line.
    #[inline]
    pub fn candidate(&self, hash: u64) -> Option<FlowId> {
        let h = hash as u32;
        let home = h as usize & self.mask;
        // Slots from home to the end of its 64-byte line (8 slots of 8 bytes), at least 2.
        let end = (home | 7).max(home + 1).min(self.mask);
        for slot in home..=end {
            let e = self.index[slot];
            if e == 0 {
                return None;
            }
            if (e >> 32) as u32 == h {
                return Some(FlowId(e as u32 - 1));
            }
        }
        None
    }

    /// How long a flow may stay quiet before it ends: the timeout its caller gave it, else
    /// the close linger once it is closed, else the idle timeout.
    #[inline]
    fn timeout(&self, f: &Flow) -> Span {
        Self::timeout_in(&self.cfg, &self.timeouts, f)
    }

    /// [`FlowTable::timeout`] from the table's parts (for a caller holding a record mutably).
    #[inline]
    fn timeout_in(cfg: &TableConfig, timeouts: &[Span], f: &Flow) -> Span {
        match f.bits & CLASS {
            0 if f.closed().is_some() => cfg.close_linger,
            0 => cfg.idle_timeout,
            c => timeouts[usize::from(c) - 1],
        }
    }

    /// When a flow ends if no packet comes: its timeout after its last packet, or, for a flow
    /// with a caller's timeout, after the moment the caller last set it.
    #[inline]
    fn deadline_of(&self, f: &Flow) -> Timestamp {
        Self::from_of(f).saturating_add(self.timeout(f))
    }

    /// The moment a flow's timeout counts from: its last packet, or the caller's moment.
    #[inline]
    fn from_of(f: &Flow) -> Timestamp {
        if f.bits & CLASS == 0 {
            f.last
        } else {
            // A caller's moment, kept in whole 2^20 ns units so that later packets, which move
            // `last` and `held` together, cannot move it.
            let units = (f.last.as_nanos() >> HELD_SHIFT).saturating_sub(u64::from(f.held));
            Timestamp::from_nanos(units << HELD_SHIFT)
        }
    }

    /// The capture time the live flow `id` ends at if no packet comes first.
    pub fn deadline(&self, id: FlowId) -> Option<Timestamp> {
        self.get(id).map(|f| self.deadline_of(f))
    }

    /// Gives a live flow its own timeout, counted from `from` (at most its last packet):
    /// it ends once that long has passed since `from` without the caller setting it again,
    /// whatever packets come meanwhile (as a connection tracker's timer, which some packets
    /// refresh and others do not). The deadline moves at once, either way. Moments are kept
    /// to about a millisecond (2^20 ns). At most 63 distinct timeouts are kept; a 64th is
    /// rounded to the nearest kept one.
    #[inline(never)]
    pub fn set_deadline(&mut self, id: FlowId, timeout: Span, from: Timestamp) {
        if self.get(id).is_none() {
            return;
        }
        let class = self.class_of(timeout);
        let before = self.deadline_of(self.record(id.0));
        let f = self.record_mut(id.0);
        let held = (f.last.as_nanos() >> HELD_SHIFT).saturating_sub(from.as_nanos() >> HELD_SHIFT);
        f.held = u32::try_from(held).unwrap_or(u32::MAX);
        f.bits = (f.bits & !CLASS) | class;
        let linked = f.prev != 0;
        let deadline = self.deadline_of(self.record(id.0));
        // A record waits on a tick no later than its deadline's, and is filed again when
        // that tick comes if it is not due: a deadline that moves later needs no move now
        // (a connection's timer renewed by each packet costs nothing on the wheel).
        if linked && deadline >= before {
            return;
        }
        self.unlink(id.0);
        self.link(id.0, Self::tick(deadline));
    }

    /// The class of a caller's timeout (registering it if new).
    fn class_of(&mut self, timeout: Span) -> u8 {
        match self.timeouts.iter().position(|&t| t == timeout) {
            Some(i) => i as u8 + 1,
            None if self.timeouts.len() < usize::from(CLASS) => {
                self.timeouts.push(timeout);
                self.timeouts.len() as u8
            }
            None => {
                let near = (0..self.timeouts.len())
                    .min_by_key(|&i| self.timeouts[i].as_nanos().abs_diff(timeout.as_nanos()))
                    .unwrap_or(0);
                near as u8 + 1
            }
        }
    }

    /// Gives a live flow its own timeout, counted from its last packet (`None`: the table's
    /// own choice again, the idle timeout or the close linger, which every packet renews):
    /// [`FlowTable::set_deadline`] from the flow's last packet.
    pub fn set_timeout(&mut self, id: FlowId, timeout: Option<Span>) {
        let Some(f) = self.get(id) else { return };
        match timeout {
            Some(t) => {
                let last = f.last;
                self.set_deadline(id, t, last);
            }
            None => {
                let f = self.record_mut(id.0);
                if f.bits & CLASS == 0 {
                    return;
                }
                f.bits &= !CLASS;
                f.held = 0;
                let deadline = self.deadline_of(self.record(id.0));
                self.unlink(id.0);
                self.link(id.0, Self::tick(deadline));
            }
        }
    }

    /// Marks a live flow as one a full table keeps (see [`TableConfig::evict_protected`]).
    pub fn set_protected(&mut self, id: FlowId, protected: bool) {
        if self.get(id).is_some() {
            let f = self.record_mut(id.0);
            f.bits = if protected { f.bits | PROTECTED } else { f.bits & !PROTECTED };
        }
    }

    /// The live flow of `key` (whose [`FlowTable::hash`] is `hash`), without creating it.
    #[inline]
    pub fn lookup(&self, key: &FlowKey, hash: u64) -> Option<FlowId> {
        self.find(key, hash as u32).1.map(FlowId)
    }

    /// [`FlowTable::lookup`] for a packet sent by `side` at capture time `now`: the flow, the
    /// packet's direction in it, and whether the flow's deadline ([`FlowTable::deadline`]) has
    /// passed (the table ends such a flow when it meets a packet).
    #[inline]
    pub fn lookup_due(
        &self,
        key: &FlowKey,
        hash: u64,
        side: Side,
        now: Timestamp,
    ) -> Option<Looked> {
        let (_, found) = self.find(key, hash as u32);
        let rec = found?;
        let f = self.record(rec);
        Some(Looked { id: FlowId(rec), dir: f.dir(side), due: now > self.deadline_of(f) })
    }

    /// After a packet: gives the live flow `id` its own timeout counted from `from` when
    /// `timeout` is given ([`FlowTable::set_deadline`]), and marks whether a full table
    /// keeps it ([`FlowTable::set_protected`]), in one step.
    #[inline]
    pub fn refresh(&mut self, id: FlowId, timeout: Option<Span>, from: Timestamp, protected: bool) {
        if id.0 as usize >= self.allocated {
            return;
        }
        let r = id.0 as usize;
        let f = &mut self.chunks[r / CHUNK][r % CHUNK];
        if !f.live() {
            return;
        }
        f.bits = if protected { f.bits | PROTECTED } else { f.bits & !PROTECTED };
        let Some(timeout) = timeout else { return };
        let class = f.bits & CLASS;
        if class != 0 && f.prev != 0 && self.timeouts[usize::from(class) - 1] == timeout {
            // The same timeout as before, from a moment no earlier: the deadline moves later
            // (or stays), so the record stays where it waits on the wheel (as in
            // `set_deadline`).
            let (last, held) = (f.last.as_nanos() >> HELD_SHIFT, u64::from(f.held));
            let from_units = from.as_nanos() >> HELD_SHIFT;
            if from_units >= last.saturating_sub(held) {
                let held = last.saturating_sub(from_units);
                f.held = u32::try_from(held).unwrap_or(u32::MAX);
                return;
            }
        }
        self.set_deadline(id, timeout, from);
    }

    /// Why a flow that has been quiet past its timeout ends.
    #[inline]
    fn quiet_reason(f: &Flow) -> EndReason {
        f.closed().unwrap_or(EndReason::Idle)
    }

    /// Accounts one packet to its flow, creating the flow if needed. A flow found quiet past
    /// its timeout is ended first and a new one starts, as is a closed TCP flow that sees a
    /// new SYN (the port is reused); a new flow in a full table evicts one.
    #[inline]
    pub fn track(&mut self, p: &PacketInfo) -> Tracked {
        self.try_track(p).expect("a table that may evict any flow always has room")
    }

    /// [`FlowTable::track`] for a table that may refuse: `None` when the packet starts a new
    /// flow, the table is full and no flow may be pushed out (see
    /// [`TableConfig::evict_protected`]); nothing is changed then.
    #[inline]
    pub fn try_track(&mut self, p: &PacketInfo) -> Option<Tracked> {
        let (slot, found) = self.find(&p.key, p.hash as u32);
        self.track_found(p, slot, found, None)
    }

    /// [`FlowTable::try_track`] for a packet whose flow the caller has just looked up
    /// ([`FlowTable::lookup`], with nothing tracked or ended since): a live flow is not
    /// searched for again.
    #[inline]
    ///
    /// `new_timeout`: if the packet starts a flow, the flow's own timeout from this packet on
    /// (as [`FlowTable::set_deadline`] would give it at once; a connection tracker knows it
    /// before the flow exists), so the record is filed on the timer wheel once.
    pub fn try_track_looked_up(
        &mut self,
        p: &PacketInfo,
        found: Option<FlowId>,
        new_timeout: Option<Span>,
    ) -> Option<Tracked> {
        match found {
            Some(id) if self.get(id).is_some() => {
                debug_assert!(self.record(id.0).key == p.key, "the flow looked up is the packet's");
                self.track_found(p, usize::MAX, Some(id.0), new_timeout)
            }
            _ => {
                let (slot, found) = self.find(&p.key, p.hash as u32);
                self.track_found(p, slot, found, new_timeout)
            }
        }
    }

    /// Accounts a packet to the record `found` (or, with none, to a new one whose index slot is
    /// `slot`).
    #[inline]
    fn track_found(
        &mut self,
        p: &PacketInfo,
        slot: usize,
        found: Option<u32>,
        new_timeout: Option<Span>,
    ) -> Option<Tracked> {
        let rec = match found {
            Some(rec) => {
                let r = rec as usize;
                let f = &mut self.chunks[r / CHUNK][r % CHUNK];
                let timeout = Self::timeout_in(&self.cfg, &self.timeouts, f);
                let deadline = Self::from_of(f).saturating_add(timeout);
                let own = f.bits & CLASS == 0;
                let closed = if own { f.closed() } else { None };
                let quiet = p.ts > deadline;
                // A SYN without ACK on a closed connection's ports: the port is reused (only
                // TCP flows are ever closed).
                let reopen = closed.is_some() && p.tcp_flags & (SYN | ACK) == SYN;
                if !quiet && !reopen {
                    let dir = f.dir(p.side);
                    let d = dir as usize;
                    if !self.active.is_zero() {
                        let iv = &mut self.intervals[r];
                        if p.ts.since(iv.start) > self.active {
                            // Reported on for longer than the active timeout: the interval
                            // so far is reported, and this packet begins the next one.
                            self.stats.interim += 1;
                            let id = FlowId(rec);
                            let reason = EndReason::Active;
                            self.ended.push(FlowReport { flow: *f, reason, id, since: Some(*iv) });
                            *iv = Interval {
                                start: p.ts,
                                packets: f.packets,
                                bytes: f.bytes,
                                tcp_flags: [0; 2],
                            };
                        }
                        iv.tcp_flags[d] |= p.tcp_flags as u8;
                    }
                    f.packets[d] += 1;
                    f.bytes[d] += u64::from(p.wire_len);
                    f.tcp_flags[d] |= p.tcp_flags as u8;
                    if !own && p.ts > f.last {
                        // A caller's deadline stays where the caller put it.
                        let moved =
                            (p.ts.as_nanos() >> HELD_SHIFT) - (f.last.as_nanos() >> HELD_SHIFT);
                        f.held = u32::try_from(u64::from(f.held) + moved).unwrap_or(u32::MAX);
                    }
                    f.last = f.last.max(p.ts);
                    if own
                        && closed.is_none()
                        && p.tcp_flags & (FIN | RST) != 0
                        && f.closed().is_some()
                    {
                        // Closed by this packet: its deadline moves to the close linger.
                        let deadline = f.last.saturating_add(self.cfg.close_linger);
                        self.unlink(rec);
                        self.link(rec, Self::tick(deadline));
                    }
                    return Some(Tracked { id: FlowId(rec), new: false, dir });
                }
                // Quiet past its timeout, or a closed connection's port reused: end it and
                // start over in the same record.
                let reason = if quiet {
                    f.closed().unwrap_or(EndReason::Idle)
                } else {
                    closed.unwrap_or(EndReason::Idle)
                };
                let old = *f;
                self.count_end(reason);
                let since = self.since(rec);
                self.ended.push(FlowReport { flow: old, reason, id: FlowId(rec), since });
                self.unlink(rec);
                rec
            }
            None => self.insert(slot, p)?,
        };
        if !self.active.is_zero() {
            self.intervals[rec as usize] = Interval::start(p);
        }
        let class = new_timeout.map_or(0, |t| self.class_of(t));
        let f = self.record_mut(rec);
        *f = Flow::start(p);
        // A caller's timeout counts from this packet (`held` 0).
        f.bits |= class;
        self.stats.created += 1;
        let deadline = self.deadline_of(self.record(rec));
        self.link(rec, Self::tick(deadline));
        Some(Tracked { id: FlowId(rec), new: true, dir: Dir::Original })
    }

    /// The record of a flow [`FlowTable::track`] just returned (or any id below the table's
    /// high-water mark; the record may be a freed one).
    #[inline]
    pub fn flow(&self, id: FlowId) -> &Flow {
        self.record(id.0)
    }

    fn count_end(&mut self, reason: EndReason) {
        match reason {
            EndReason::Idle => self.stats.idle += 1,
            EndReason::Fin => self.stats.fin += 1,
            EndReason::Rst => self.stats.rst += 1,
            EndReason::Evicted => self.stats.evicted += 1,
            EndReason::End | EndReason::Active => {}
        }
    }

    /// Ends flows quiet past their timeout at `now`, looking at up to `budget` records from
    /// where the last sweep stopped. The table itself does not need it ([`FlowTable::advance`]
    /// ends exactly the flows that are due, and a full table advances to a new flow's time
    /// before it evicts); it is for callers that hold records past their time on purpose.
    pub fn sweep(&mut self, now: Timestamp, budget: usize) {
        for _ in 0..budget.min(self.allocated) {
            self.hand = if self.hand + 1 >= self.allocated { 0 } else { self.hand + 1 };
            let f = self.record(self.hand as u32);
            if f.live() && now > self.deadline_of(f) {
                let reason = Self::quiet_reason(f);
                self.remove(self.hand as u32, reason);
            }
        }
    }

    /// Sets capture time to `now`, ending every flow whose last packet is more than its timeout
    /// before it (a flow is also ended on its next packet after the timeout).
    ///
    /// Capture time may jump either way (a packet dated 1970, captures merged out of order, a
    /// clock step on a live link). The clock follows it: after a step back, flows whose last
    /// packet lies after `now` are not idle, and flows from before the step end when time
    /// passes their deadline again. The work stays in proportion to the flows that end, plus
    /// the usual look at each live flow once per turn of the wheel (4.6 minutes of capture
    /// time): a jump forward looks at each slot at most once; a step back looks at one slot
    /// and sets the main wheel aside, untouched, until time comes back to where it was, while
    /// the flows met in between keep their timers on a wheel of their own.
    pub fn advance(&mut self, now: Timestamp) {
        let due = Self::tick(now);
        if due < self.cursor {
            // A step back. Entries that were already due when linked wait on the cursor's
            // slot (or in the near heap); look at them now so that each is filed under its own
            // deadline again.
            let back = self.cursor < self.high;
            if !back {
                self.high = self.cursor;
            }
            let slot = Self::slot(self.cursor, back);
            self.near_into(slot);
            self.cursor = due;
            self.expire_slot(slot, now, due);
            return;
        }
        let from = self.cursor;
        self.cursor = due;
        if from < self.high && due < self.high {
            // Still behind where time had got to: only the back wheel can hold due entries.
            self.expire_range(from, due, true, now);
        } else if from < self.high {
            // Back past where time had got to: every entry of the back wheel is looked at once
            // and what is not due goes to the main wheel; then the main wheel goes on from
            // where it stopped.
            let high = std::mem::replace(&mut self.high, 0);
            self.expire_range(from, from + WHEEL as u64 - 1, true, now);
            self.expire_range(high, due, false, now);
        } else if due > from {
            // The cursor's own slot was looked through when the cursor came to its tick;
            // what was filed under that tick since waits in the near heap.
            self.expire_range(from + 1, due, false, now);
        }
        self.expire_near(now);
    }

    /// Ends the flows of the near heap whose deadline has passed at `now` (a record whose
    /// deadline moved since it was filed is filed again under the new one).
    fn expire_near(&mut self, now: Timestamp) {
        while let Some(&std::cmp::Reverse((filed, rec))) = self.near.peek() {
            if now <= filed {
                break;
            }
            self.near.pop();
            if self.record(rec).prev != NEAR {
                continue;
            }
            let f = self.record_mut(rec);
            f.prev = 0;
            f.next = 0;
            self.expire_or_refile(rec, now, 0);
        }
    }

    /// A record taken off its timer list: ends it if quiet past its deadline at `now`, else
    /// files it again under its deadline (not before tick `due`).
    #[inline]
    fn expire_or_refile(&mut self, rec: u32, now: Timestamp, due: u64) {
        self.stats.timer_checks += 1;
        let f = self.record(rec);
        let deadline = self.deadline_of(f);
        if now > deadline {
            let reason = Self::quiet_reason(f);
            self.remove(rec, reason);
        } else {
            self.link(rec, Self::tick(deadline).max(due));
        }
    }

    /// Moves the records of the near heap onto the list of wheel slot `slot` (before time
    /// steps back).
    fn near_into(&mut self, slot: usize) {
        for std::cmp::Reverse((_, rec)) in std::mem::take(&mut self.near) {
            if self.record(rec).prev == NEAR {
                self.record_mut(rec).prev = 0;
                self.push_slot(rec, slot);
            }
        }
    }

    /// Looks at the slots of ticks `from..=to` (each slot once when that is more than a turn)
    /// of the main or the back wheel.
    fn expire_range(&mut self, from: u64, to: u64, back: bool, now: Timestamp) {
        let due = self.cursor;
        let end = from + to.saturating_sub(from).min(WHEEL as u64 - 1);
        for t in from..=end {
            self.expire_slot(Self::slot(t, back), now, due);
        }
    }

    /// Takes one slot's list: flows quiet past their timeout at `now` end, the others are
    /// filed again under their deadline (not before tick `due`).
    fn expire_slot(&mut self, slot: usize, now: Timestamp, due: u64) {
        let mut cur = std::mem::take(&mut self.wheel[slot]);
        while cur != 0 {
            let rec = cur - 1;
            let f = self.record_mut(rec);
            cur = f.next;
            f.next = 0;
            f.prev = 0;
            self.expire_or_refile(rec, now, due);
        }
    }

    /// The tick an instant falls in.
    #[inline(always)]
    fn tick(t: Timestamp) -> u64 {
        t.as_nanos() >> TICK_SHIFT
    }

    /// The slot of tick `t` in the main wheel, or in the back wheel.
    fn slot(t: u64, back: bool) -> usize {
        t as usize % WHEEL + if back { WHEEL } else { 0 }
    }

    /// Puts a record (on no list) on the list of tick `t` (not before the cursor): on the back
    /// wheel while the cursor is behind where time had got to and `t` is too, else on the main
    /// wheel.
    fn link(&mut self, rec: u32, t: u64) {
        let t = t.max(self.cursor);
        if t == self.cursor && self.cursor >= self.high {
            // Due within the tick the cursor is in: the near heap, by deadline.
            let deadline = self.deadline_of(self.record(rec));
            let f = self.record_mut(rec);
            f.prev = NEAR;
            f.next = 0;
            self.near.push(std::cmp::Reverse((deadline, rec)));
            return;
        }
        self.push_slot(rec, Self::slot(t, t < self.high));
    }

    /// Puts a record (on no list) at the head of wheel slot `slot`'s list.
    fn push_slot(&mut self, rec: u32, slot: usize) {
        let head = self.wheel[slot];
        if head != 0 {
            self.record_mut(head - 1).prev = rec + 1;
        }
        let f = self.record_mut(rec);
        f.next = head;
        f.prev = HEAD | slot as u32;
        self.wheel[slot] = rec + 1;
    }

    /// Takes a record off its timer list, if it is on one.
    fn unlink(&mut self, rec: u32) {
        let f = self.record_mut(rec);
        let (prev, next) = (f.prev, f.next);
        if prev == 0 {
            return;
        }
        f.prev = 0;
        f.next = 0;
        if prev == NEAR {
            // Its entry in the near heap is left behind and skipped when it comes up.
            return;
        }
        if prev & HEAD != 0 {
            self.wheel[(prev & !HEAD) as usize] = next;
        } else {
            self.record_mut(prev - 1).next = next;
        }
        if next != 0 {
            self.record_mut(next - 1).prev = prev;
        }
    }

    /// Ends every live flow with [`EndReason::End`], in order of first packet (then key).
    pub fn finish(&mut self) {
        let order = self.live_in_order();
        self.end_many(&order, EndReason::End);
    }

    /// Ends these flows now for `reason`, in the order given ([`FlowTable::end`] for each),
    /// loading each one's record, then its index slot and timer-list neighbours, a few flows
    /// ahead: ending a million flows at the end of input waits for memory about once per flow
    /// instead of three times.
    pub fn end_many(&mut self, ids: &[FlowId], reason: EndReason) {
        const AHEAD: usize = 8;
        for (k, &id) in ids.iter().enumerate() {
            if let Some(&far) = ids.get(k + 2 * AHEAD)
                && (far.0 as usize) < self.allocated
            {
                prefetch(self.record(far.0) as *const Flow);
            }
            if let Some(&near) = ids.get(k + AHEAD)
                && let Some(f) = self.get(near)
            {
                let h = self.hash(&f.key) as u32;
                prefetch(&self.index[h as usize & self.mask] as *const u64);
                for n in [f.prev, f.next] {
                    if n != 0 && n & HEAD == 0 {
                        prefetch(self.record(n - 1) as *const Flow);
                    }
                }
            }
            self.end(id, reason);
        }
    }

    /// The live flows in the order [`FlowTable::finish`] ends them: by first packet (of the
    /// whole flow, also with an active timeout), then key. A caller that ends them itself, a
    /// few at a time ([`FlowTable::end`]), never holds more than this list (4 bytes a flow)
    /// besides the table.
    pub fn live_in_order(&self) -> Vec<FlowId> {
        let mut order: Vec<(Timestamp, u32)> = (0..self.allocated as u32)
            .filter(|&r| self.record(r).live())
            .map(|r| (self.record(r).first, r))
            .collect();
        order.sort_unstable_by(|&(fa, a), &(fb, b)| {
            fa.cmp(&fb).then_with(|| self.record(a).key.cmp(&self.record(b).key))
        });
        order.into_iter().map(|(_, r)| FlowId(r)).collect()
    }

    /// Ends a live flow now for `reason` (it follows in [`FlowTable::ended`]); nothing
    /// happens if `id` is not live.
    pub fn end(&mut self, id: FlowId, reason: EndReason) {
        if self.get(id).is_some() {
            self.remove(id.0, reason);
        }
    }

    /// The flows that ended since the last [`FlowTable::take_ended`], without taking them (a
    /// stage keeping per-flow state collects it from here before the slot is reused).
    pub fn ended(&self) -> &[FlowReport] {
        &self.ended
    }

    /// Takes the flows that ended since the last call, in the order they ended.
    pub fn take_ended(&mut self) -> std::vec::Drain<'_, FlowReport> {
        self.ended.drain(..)
    }

    /// The live flow with this id, if any.
    #[inline]
    pub fn get(&self, id: FlowId) -> Option<&Flow> {
        if id.0 as usize >= self.allocated {
            return None;
        }
        let f = self.record(id.0);
        f.live().then_some(f)
    }

    /// Number of live flows.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no flow is live.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The table's counters.
    pub fn stats(&self) -> TableStats {
        self.stats
    }

    /// Bytes held by the index and the record arena.
    pub fn memory_bytes(&self) -> usize {
        self.index.len() * 8
            + self.chunks.len() * CHUNK * std::mem::size_of::<Flow>()
            + self.free.capacity() * 4
            + self.wheel.len() * 4
            + self.near.capacity() * std::mem::size_of::<(Timestamp, u32)>()
            + self.intervals.capacity() * std::mem::size_of::<Interval>()
    }

    #[inline]
    fn record(&self, rec: u32) -> &Flow {
        let r = rec as usize;
        &self.chunks[r / CHUNK][r % CHUNK]
    }

    #[inline]
    fn record_mut(&mut self, rec: u32) -> &mut Flow {
        let r = rec as usize;
        &mut self.chunks[r / CHUNK][r % CHUNK]
    }

    /// Probes for `key`: the record if found, else the empty slot where it would go.
    #[inline]
    fn find(&self, key: &FlowKey, h: u32) -> (usize, Option<u32>) {
        let mut slot = h as usize & self.mask;
        loop {
            let e = self.index[slot];
            if e == 0 {
                return (slot, None);
            }
            if (e >> 32) as u32 == h {
                let rec = e as u32 - 1;
                if self.record(rec).key == *key {
                    return (slot, Some(rec));
                }
            }
            slot = (slot + 1) & self.mask;
        }
    }

    fn insert(&mut self, mut slot: usize, p: &PacketInfo) -> Option<u32> {
        if self.live >= self.cfg.max_flows {
            // Flows quiet past their timeout by this packet's time end first, exactly as the
            // caller's next `advance` would end them: the timer wheel finds them, so the
            // work is in proportion to the flows that end (nothing, most of the time), not
            // a scan of records. Time is not moved back here.
            if Self::tick(p.ts) >= self.cursor {
                self.advance(p.ts);
            }
            if self.live >= self.cfg.max_flows && !self.evict() {
                self.stats.refused += 1;
                return None;
            }
            slot = self.find(&p.key, p.hash as u32).0;
        }
        if (self.live + 1) * 2 > self.index.len() && self.index.len() < self.max_slots {
            self.grow_index();
            slot = self.find(&p.key, p.hash as u32).0;
        }
        let rec = match self.free.pop() {
            Some(r) => r,
            None => {
                if self.allocated == self.chunks.len() * CHUNK {
                    let chunk = vec![Flow::default(); CHUNK].into_boxed_slice();
                    self.chunks.push(chunk.try_into().expect("a chunk holds CHUNK records"));
                    if !self.active.is_zero() {
                        self.intervals.resize(self.chunks.len() * CHUNK, Interval::default());
                    }
                }
                self.allocated += 1;
                (self.allocated - 1) as u32
            }
        };
        self.index[slot] = entry(p.hash as u32, rec);
        self.live += 1;
        self.stats.peak = self.stats.peak.max(self.live as u64);
        Some(rec)
    }

    /// Evicts the least recently seen of a few live records after the sweep hand (records
    /// that may be pushed out: any, or only unprotected ones); `false` when none could go.
    /// At most [`EVICT_SCAN`] records are looked at, so a table full of protected flows costs
    /// a bounded scan per refused flow.
    ///
    /// The choice is made one eviction ahead: the victim chosen last time goes if it has had
    /// no packet since (else one is chosen now), and the next victim is chosen at once, with
    /// the index slot and timer-list neighbours its removal will touch prefetched, so a flood
    /// of new flows does not wait on those misses at every packet.
    fn evict(&mut self) -> bool {
        let ahead = self.next_victim.take().filter(|&(rec, last)| {
            (rec as usize) < self.allocated && {
                let f = self.record(rec);
                self.evictable(f) && f.last == last
            }
        });
        let Some((rec, _)) = ahead.or_else(|| self.sample()) else {
            return false;
        };
        self.remove(rec, EndReason::Evicted);
        self.next_victim = self.sample();
        if let Some((next, _)) = self.next_victim {
            let f = self.record(next);
            let h = self.hash(&f.key) as u32;
            prefetch(&self.index[h as usize & self.mask] as *const u64);
            for link in [f.prev, f.next] {
                if link != 0 && link != NEAR && link & HEAD == 0 {
                    prefetch(self.record(link - 1) as *const Flow);
                }
            }
        }
        true
    }

    /// Whether a record may be pushed out: live, and unprotected unless the table may push
    /// out any flow.
    #[inline]
    fn evictable(&self, f: &Flow) -> bool {
        f.live() && (self.cfg.evict_protected || f.bits & PROTECTED == 0)
    }

    /// The least recently seen of up to [`EVICT_SAMPLE`] live records after the sweep hand
    /// that may be pushed out, and its last packet's time; moves the hand past them.
    fn sample(&mut self) -> Option<(u32, Timestamp)> {
        let mut victim: Option<(Timestamp, u32)> = None;
        let mut seen = 0;
        let mut r = self.hand;
        for _ in 0..self.allocated.min(EVICT_SCAN) {
            r = if r + 1 >= self.allocated { 0 } else { r + 1 };
            let f = self.record(r as u32);
            if self.evictable(f) {
                if victim.is_none_or(|(last, _)| f.last < last) {
                    victim = Some((f.last, r as u32));
                }
                seen += 1;
                if seen == EVICT_SAMPLE {
                    break;
                }
            }
        }
        self.hand = r;
        victim.map(|(last, rec)| (rec, last))
    }

    /// Ends a live record: reports it, frees it and closes its index slot.
    fn remove(&mut self, rec: u32, reason: EndReason) {
        self.unlink(rec);
        let flow = *self.record(rec);
        self.record_mut(rec).bits = 0;
        self.count_end(reason);
        let since = self.since(rec);
        self.ended.push(FlowReport { flow, reason, id: FlowId(rec), since });
        self.free.push(rec);
        self.live -= 1;
        let h = self.hash(&flow.key) as u32;
        let mut hole = h as usize & self.mask;
        while self.index[hole] != entry(h, rec) {
            hole = (hole + 1) & self.mask;
        }
        // Backward-shift deletion: pull later entries of the cluster into the hole when their
        // home slot allows it.
        let mut j = hole;
        loop {
            j = (j + 1) & self.mask;
            let e = self.index[j];
            if e == 0 {
                break;
            }
            let home = (e >> 32) as usize & self.mask;
            let stays = if hole <= j { hole < home && home <= j } else { hole < home || home <= j };
            if !stays {
                self.index[hole] = e;
                hole = j;
            }
        }
        self.index[hole] = 0;
    }

    fn grow_index(&mut self) {
        self.resize_index(self.index.len() * 2);
    }

    /// Moves the index to `slots` slots (a larger power of two), filing every entry again.
    fn resize_index(&mut self, slots: usize) {
        let old = std::mem::replace(&mut self.index, vec![0; slots]);
        self.mask = slots - 1;
        for e in old.into_iter().filter(|&e| e != 0) {
            let mut s = (e >> 32) as usize & self.mask;
            while self.index[s] != 0 {
                s = (s + 1) & self.mask;
            }
            self.index[s] = e;
        }
    }
}

/// Hints the CPU to bring the cache line holding `p` into L1 (any address: a prefetch never
/// faults), for the table's own lookups and for per-flow state kept beside the table that a
/// batch will touch soon.
#[inline(always)]
#[allow(unsafe_code)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of the x86_64 baseline, so the instruction exists on every CPU this
    // code runs on. A prefetch is only a hint: it never faults and never dereferences in the
    // language's sense, whatever the address.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests;
