//! Connection tracking that decides as Linux's conntrack does, as a stage beside the flow
//! table.
//!
//! # What it answers
//! For each packet, the `ct state` a rule set sees ([`CtState`]: `new` until a reply has been
//! seen, `established`, `related` for ICMP errors about a tracked flow, `invalid` when no
//! entry can be attached, `untracked` for ICMPv6 neighbour discovery, MLD and router
//! messages), and for invalid packets Linux's reason ([`Reason`]). Behind it run Linux's
//! protocol trackers, written in Rust from their behaviour in Linux 6.12
//! (`net/netfilter/nf_conntrack_proto_{tcp,udp,icmp,icmpv6}.c`, checked against a live
//! 6.18 kernel by the oracle in the shared data):
//!
//! - **TCP**: the `tcp_valid_flags` whitelist; the transition table ([`tcp::TABLE`]) with
//!   the code around it (a SYN reopening a TIME_WAIT or CLOSE entry, IGNORE with re-sync when
//!   the SYN/ACK acknowledges an ignored SYN, simultaneous open, RFC 5961 challenge ACKs, the
//!   RST rules, an RST as the first answer deleting the entry); window tracking with scaling
//!   and SACK (checks I-IV, with Linux's split: "SEQ is over upper bound" and "ACK is over
//!   upper bound" are invalid, the other two are ignored); mid-stream pick-up (`tcp_loose`)
//!   with both directions liberal; ASSURED; the timeout choice with the max-retrans and
//!   unacknowledged caps.
//! - **UDP and UDP-Lite**: unreplied 30 s, replied 30 s, and 120 s with ASSURED for a flow
//!   still active more than 2 s after its first packet; length, coverage and checksum checks.
//! - **ICMP and ICMPv6**: only queries (echo, timestamp, information, address mask; ICMPv6
//!   echo and node information) open entries, 30 s, never ASSURED; errors quoting a tracked
//!   flow are `related` when their outer destination is that flow's endpoint (Linux's check),
//!   else invalid; ICMPv6 ND/MLD/router messages are untracked.
//! - **Other protocols**: Linux's generic tracker (600 s, `established` once answered).
//! - Checksums of the IPv4 header and of TCP, UDP, UDP-Lite, ICMP and ICMPv6 verified as with
//!   `nf_conntrack_checksum=1` (a packet cut by the snap length passes, counted).
//!
//! # How the engine calls it
//! State lives in a dense array indexed by the flow table's [`FlowId`], like the other side
//! stages: 64 bytes per flow ([`Entry`]). Linux creates an entry when the first packet arrives
//! but confirms it (makes it visible) only at the last hook, so a packet the rule set drops
//! leaves nothing; packets of existing entries update them at pre-routing, whatever the rule
//! set then does. Hence two steps per packet:
//!
//! 1. [`Conntrack::inspect`] with the flow the packet belongs to (looked up in the flow table
//!    **without** inserting), the packet's [`CtPacket`] and side, and a lookup for the flow an
//!    ICMP error quotes. It returns an [`Inspection`]: the `ct state` for the rule set, the
//!    reason if invalid, and what to do with the entry.
//! 2. [`Conntrack::commit`] once the verdict is known: a new entry is stored only when the
//!    packet was accepted (the engine inserts the flow then and passes its id). An existing
//!    entry was already updated by `inspect`, whatever the verdict, as Linux updates it
//!    before any rule runs; commit reports how its deadline moves. The [`Outcome`] says how the entry's
//!    deadline moves ([`Refresh`]) and whether the entry ended (an RST before any reply, a
//!    reopened connection).
//!
//! Around them: [`Conntrack::timeout`] (what the entry's state asks for, for the flow
//! table's per-record deadline), [`Conntrack::may_early_drop`] (not ASSURED: what a full
//! table should evict first), [`Conntrack::retire`] when the flow table ends a flow, and a
//! [`Summary`] for flow records. [`Stats`] count as `conntrack -S` prints, and add up across
//! workers.
//!
//! [`rampart_flow::SideStage`] is not implemented: its single `observe` step cannot hold the
//! rule set's verdict between looking at a packet and confirming its entry.
//!
//! # Where it differs from Linux
//! - RELATED comes from ICMP and ICMPv6 errors only: connection-tracking helpers and their
//!   expectations (FTP, SIP, TFTP, ...) are out of scope, so `ct status expected` never
//!   happens. There is no NAT, so tuples are never rewritten.
//! - SCTP, DCCP and GRE get the generic tracker, not Linux's state machines for them.
//! - Entries are keyed by the flow table's key: an ICMP query's flow is its echo identifier
//!   (both directions), and ICMP queries other than echo share the address pair's flow. A
//!   query whose type does not fit the entry of its flow (a second echo request the other
//!   way with the same identifier) is judged as Linux judges a new tuple, but its entry
//!   cannot be stored beside the first (counted in [`Stats::insert_failed`]).
//! - Linux reassembles fragments before tracking; here a first fragment is tracked by its
//!   header and later fragments are invalid ([`Reason::Fragment`]). Packets the IP layer
//!   would drop before any hook (bad IPv4 header checksum, malformed IP header) are reported
//!   invalid with their own reasons.
//! - An ICMPv6 redirect's redirected header is not followed ([`Reason::RedirectNotFollowed`]).
//! - Linux 6.12 verifies UDP-Lite checksums with UDP's protocol number in the
//!   pseudo-header, which makes every correct UDP-Lite packet "bad checksum"; rampart verifies
//!   them as RFC 3828 says.
//! - Timeouts are carried by the flow table, not here: entries do not expire on their own.
#![forbid(unsafe_code)]

mod config;
mod entry;
mod packet;
mod state;
mod stats;
pub mod tcp;

use rampart_flow::{Dir, FlowId, FlowKey, IpFamily, KeyKind, Side};
use rampart_wire::icmp::{self, QuoteKind};
use rampart_wire::{Checksum, Family, Span, Timestamp, proto};

pub use config::{Config, Timeouts};
pub use entry::Entry;
use entry::Kind;
pub use packet::CtPacket;
pub use state::{CtState, CtStates, TcpState};
pub use stats::{Counter, Reason, Stats};
pub use tcp::Detail;

/// How an entry's deadline moves after a packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Refresh {
    /// Leave it (a retransmitted SYN, an ignored or invalid packet).
    #[default]
    Keep,
    /// The entry now expires this long after the packet.
    Set(Span),
    /// If the entry has at least 120 s left and more than this, it now expires this long
    /// after the packet (Linux shortens an ASSURED entry whose close went out of window).
    Lower(Span),
}

impl Refresh {
    /// The timeout (from the packet at `now`) the entry takes now, if it changes: given by
    /// `Set`; for `Lower`, only when the deadline the entry has (`current`, asked only then;
    /// `None`: no deadline yet) leaves at least 120 s and more than the new timeout.
    pub fn timeout(
        self,
        now: Timestamp,
        current: impl FnOnce() -> Option<Timestamp>,
    ) -> Option<Span> {
        match self {
            Refresh::Keep => None,
            Refresh::Set(t) => Some(t),
            Refresh::Lower(t) => {
                let left = current().map_or(Span::MAX, |d| d.since(now));
                (left >= Span::from_secs(120) && left > t).then_some(t)
            }
        }
    }
}

/// What [`Conntrack::inspect`] found, for the rule set and for [`Conntrack::commit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inspection {
    /// The `ct state` the rule set sees.
    pub state: CtState,
    /// The packet's direction in its entry (ORIGINAL for a packet that opens one; for
    /// `related`, the direction in the quoted flow's entry).
    pub dir: Dir,
    /// Why the packet is invalid.
    pub reason: Option<Reason>,
    /// The values Linux's message for the reason carries.
    pub detail: Detail,
    /// For `related`, the flow the error is about.
    pub related_to: Option<FlowId>,
    action: Action,
}

/// What committing an inspection does. Updates of existing entries (and their ends) are made
/// by [`Conntrack::inspect`] itself, as Linux makes them before any rule runs; only a new
/// entry waits for the verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    /// Nothing to store.
    None,
    /// The existing entry of `id` was updated (a copy waits in the pending slot under
    /// `serial`, in case the flow table retires the record before the commit); `ended` when
    /// the packet ended it.
    Update { id: FlowId, refresh: Refresh, ended: Option<Summary>, serial: u32 },
    /// A new entry waits in the tracker's pending slot (`serial` tells it is this packet's),
    /// stored if the packet is accepted; `replaces` is an entry that ended whatever the
    /// verdict (a reopened connection).
    Create { refresh: Refresh, replaces: Option<(FlowId, Summary)>, serial: u32 },
    /// The entry of `id` ended whatever the verdict (a reopening SYN that is itself invalid).
    Kill { ended: Option<(FlowId, Summary)> },
}

impl Inspection {
    fn of(state: CtState, dir: Dir, action: Action) -> Self {
        Self { state, dir, reason: None, detail: Detail::default(), related_to: None, action }
    }

    fn invalid(reason: Reason, action: Action) -> Self {
        Self { reason: Some(reason), ..Self::of(CtState::Invalid, Dir::Original, action) }
    }

    /// Whether accepting the packet would store a new entry.
    pub fn creates(&self) -> bool {
        matches!(self.action, Action::Create { .. })
    }

    /// The timeout the new entry asks for from this packet on, when accepting the packet
    /// would store one (the flow's deadline can be set before the commit).
    pub fn new_timeout(&self) -> Option<Span> {
        match self.action {
            Action::Create { refresh: Refresh::Set(t), .. } => Some(t),
            _ => None,
        }
    }

    /// The flow whose existing entry this packet belongs to (and updates on commit).
    pub fn entry_of(&self) -> Option<FlowId> {
        match self.action {
            Action::Update { id, .. } => Some(id),
            Action::Kill { ended } | Action::Create { replaces: ended, .. } => ended.map(|e| e.0),
            Action::None => None,
        }
    }

    /// Linux's log message for an invalid packet, with its values where Linux prints them
    /// (`SEQ is over upper bound 3560820216 (over the window of the receiver)`); `None` for
    /// a packet that is not invalid.
    pub fn message(&self) -> Option<String> {
        Some(self.reason?.message(&self.detail))
    }
}

impl Reason {
    /// Linux's log message for a packet invalid for this reason, with the values Linux prints
    /// (`SEQ is over upper bound 3560820216 (over the window of the receiver)`) from `d`.
    pub fn message(self, d: &Detail) -> String {
        match self {
            Reason::SeqOver => {
                format!("SEQ is over upper bound {} (over the window of the receiver)", d.value)
            }
            Reason::AckOver => {
                format!("ACK is over upper bound {} (ACKed data not seen yet)", d.value)
            }
            Reason::TcpTransition => format!(
                "packet (index {}) in dir {} invalid, state {}",
                d.index,
                d.dir,
                TcpState::from_u8(d.state).name()
            ),
            _ => self.name().to_string(),
        }
    }
}

/// What [`Conntrack::commit`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The flow whose entry the packet now belongs to (`None`: no entry, or it ended).
    pub id: Option<FlowId>,
    /// How that entry's deadline moves.
    pub refresh: Refresh,
    /// An entry ended, with the state it ended in: the one the packet belonged to (an RST
    /// answering before any reply) or one a new connection replaced. The flow table may end
    /// the flow's record.
    pub ended: Option<(FlowId, Summary)>,
}

/// What a flow record carries of its connection: the state its next packet from the
/// initiator would see, the TCP state, and the flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Summary {
    /// `established` once a reply has been seen, else `new`.
    pub ct_state: CtState,
    /// The TCP state, for TCP.
    pub tcp_state: Option<TcpState>,
    /// ASSURED.
    pub assured: bool,
    /// A reply was seen.
    pub seen_reply: bool,
}

/// The tracker: configuration, one [`Entry`] per flow id, counters.
#[derive(Clone, Debug, Default)]
pub struct Conntrack {
    cfg: Config,
    entries: Vec<Entry>,
    stats: Stats,
    /// The new entry the last inspection made, with its serial; or a copy of the entry the
    /// last inspection updated, taken when that entry is cleared before its commit.
    pending: (Entry, u32),
    /// The entry the last inspection updated, with its serial (copied into `pending` only
    /// if it is cleared before the commit, so an update costs no copy).
    updated: (u32, u32),
    serial: u32,
    /// Entries that exist now (kept as entries are stored and cleared).
    live: u64,
}

/// ICMP types that open an entry (`valid_new`).
fn icmp_valid_new(t: u8, v6: bool) -> bool {
    if v6 { matches!(t, 128 | 139) } else { matches!(t, 8 | 13 | 15 | 17) }
}

/// ICMPv6 types that are never tracked: MLD, router and neighbour discovery, multicast
/// router discovery (`noct_valid_new`).
fn icmpv6_untracked(t: u8) -> bool {
    matches!(t, 130..=136 | 143 | 151 | 152)
}

/// What a packet of direction `d` sees of an entry with these flags.
#[inline]
fn ct_state(seen_reply: bool, d: Dir) -> CtState {
    if d == Dir::Reply || seen_reply { CtState::Established } else { CtState::New }
}

impl Conntrack {
    /// A tracker with `cfg`.
    pub fn new(cfg: Config) -> Self {
        Self {
            cfg,
            entries: Vec::new(),
            stats: Stats::default(),
            pending: (Entry::default(), 0),
            updated: (u32::MAX, 0),
            serial: 0,
            live: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Hints the CPU to load the entry of flow `id` (see [`rampart_flow::prefetch`]).
    #[inline]
    pub fn prefetch(&self, id: FlowId) {
        if let Some(e) = self.entries.get(id.0 as usize) {
            rampart_flow::prefetch(e);
        }
    }

    /// The entry of flow `id`, if it has one.
    #[inline]
    pub fn entry(&self, id: FlowId) -> Option<&Entry> {
        self.entries.get(id.0 as usize).filter(|e| e.exists())
    }

    /// Looks at one packet: `found` is the flow it belongs to in the flow table (looked up
    /// without inserting), `side` which endpoint of the flow key sent it, `now` its capture
    /// time (ns). `quoted` finds the flow an ICMP error is about: it is given the key and the
    /// side of the sender of the error's direction in that flow, and returns the flow's id
    /// if the table has it.
    pub fn inspect(
        &mut self,
        found: Option<FlowId>,
        side: Side,
        p: &CtPacket,
        now: Timestamp,
        quoted: impl FnOnce(&FlowKey, Side) -> Option<FlowId>,
    ) -> Inspection {
        if let Some(r) = p.problem {
            return self.invalid(r, Action::None);
        }
        if self.cfg.checksum {
            if p.ip_checksum == Checksum::Bad {
                return self.invalid(Reason::IpChecksum, Action::None);
            }
            if matches!(p.l4_checksum, Checksum::Cut | Checksum::Fragment) {
                self.stats.unchecked += 1;
            }
        }
        let existing = found.filter(|&id| self.entry(id).is_some());
        if p.is_icmp() {
            let v6 = p.family == Family::V6;
            if let Some(insp) = self.icmp_error(p, v6, quoted) {
                return insp;
            }
            return self.icmp(existing, side, p, v6, now);
        }
        match p.proto {
            proto::TCP => self.tcp(existing, side, p, now),
            proto::UDP | proto::UDPLITE => {
                if let Some(r) = self.udp_error(p) {
                    return self.invalid(r, Action::None);
                }
                self.simple(existing, side, now, Kind::Udp)
            }
            _ => self.simple(existing, side, now, Kind::Generic),
        }
    }

    /// Applies an inspection once the rule set has decided: a new entry is stored only when
    /// `accepted`, under `id` (the id the flow table gave the flow when the engine inserted
    /// it; for a packet whose flow already existed, its id). An existing entry was already
    /// updated by [`Conntrack::inspect`], whatever the verdict: commit then reports how its
    /// deadline moves (and if the flow table retired the record in between, ending the flow
    /// and starting it again, the entry goes on under `id`, as Linux's entry outlives a flow
    /// record). Commit each inspection before inspecting the next packet (the entry waits in a
    /// single pending slot).
    pub fn commit(&mut self, insp: &Inspection, accepted: bool, id: Option<FlowId>) -> Outcome {
        match insp.action {
            Action::None => Outcome::default(),
            Action::Update { id: was, refresh, ended: None, serial } => {
                if self.entry(was).is_some() {
                    return Outcome { id: Some(was), refresh, ended: None };
                }
                // The flow table retired the record between inspect and commit (it ended
                // the flow and started it again): the connection goes on, in the record the
                // packet was counted in.
                match id {
                    Some(t) if self.pending.1 == serial && self.entry(t).is_none() => {
                        let e = self.pending.0;
                        self.store(t, e);
                        Outcome { id: Some(t), refresh, ended: None }
                    }
                    _ => Outcome::default(),
                }
            }
            Action::Update { id, ended: Some(s), .. } => {
                Outcome { id: None, refresh: Refresh::Keep, ended: Some((id, s)) }
            }
            Action::Kill { ended } => Outcome { id: None, refresh: Refresh::Keep, ended },
            Action::Create { refresh, replaces, serial } => {
                let target = id.or(replaces.map(|r| r.0));
                let stored = match target {
                    Some(t) if accepted && self.pending.1 == serial => {
                        if self.entry(t).is_some() {
                            self.stats.insert_failed += 1;
                            None
                        } else {
                            let e = self.pending.0;
                            self.store(t, e);
                            self.stats.insert += 1;
                            Some(t)
                        }
                    }
                    Some(_) if accepted => {
                        // Another packet was inspected in between: this entry is gone.
                        self.stats.insert_failed += 1;
                        None
                    }
                    _ => None,
                };
                let refresh = if stored.is_some() { refresh } else { Refresh::Keep };
                Outcome { id: stored, refresh, ended: replaces }
            }
        }
    }

    /// The timeout the entry of `id` asks for in its current state, with the caps that do not
    /// depend on a packet: what the flow table's deadline for the record should be after its
    /// last packet.
    pub fn timeout(&self, id: FlowId) -> Option<Span> {
        let e = self.entry(id)?;
        let t = &self.cfg.timeouts;
        Some(match e.kind() {
            Kind::Tcp => tcp::timeout(e, &self.cfg),
            Kind::Udp if e.assured() => t.udp_stream,
            Kind::Udp => t.udp,
            Kind::Icmp if e.pstate >= 128 => t.icmpv6,
            Kind::Icmp => t.icmp,
            Kind::Generic => t.generic,
        })
    }

    /// Whether a full table may evict the entry of `id` to make room: it is not ASSURED (Linux's
    /// `early_drop`), or `closing` is set and it is a TCP connection that is closing (what the
    /// garbage collector's early-drop mode also takes). Flows without an entry may always go.
    pub fn may_early_drop(&self, id: FlowId, closing: bool) -> bool {
        match self.entry(id) {
            None => true,
            Some(e) if !e.assured() => true,
            Some(e) => closing && e.tcp_state().is_some_and(tcp::closing),
        }
    }

    /// Counts an entry evicted to make room, and forgets it.
    pub fn early_drop(&mut self, id: FlowId) -> Option<Summary> {
        let s = self.retire(id);
        if s.is_some() {
            self.stats.early_drop += 1;
        }
        s
    }

    /// Counts a new packet dropped because the table was full and nothing could be evicted
    /// ("nf_conntrack: table full, dropping packet").
    pub fn table_full(&mut self) {
        self.stats.drop += 1;
    }

    /// The summary of the entry of `id`, if it has one.
    pub fn summary(&self, id: FlowId) -> Option<Summary> {
        self.entry(id).map(summary)
    }

    /// The flow `id` has ended in the flow table: its summary, and its entry forgotten before
    /// the id can start another flow.
    pub fn retire(&mut self, id: FlowId) -> Option<Summary> {
        let s = self.summary(id);
        self.clear(id);
        s
    }

    /// Connections tracked now (`conntrack -C`; the table's `nf_conntrack_count`).
    pub fn entries(&self) -> u64 {
        self.live
    }

    /// The counters so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Bytes held (the entry array).
    pub fn memory_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<Entry>()
    }

    fn store(&mut self, id: FlowId, e: Entry) {
        let i = id.0 as usize;
        if i >= self.entries.len() {
            self.entries.resize(i + 1, Entry::default());
        }
        self.live =
            (self.live + u64::from(e.exists())).saturating_sub(u64::from(self.entries[i].exists()));
        self.entries[i] = e;
    }

    fn clear(&mut self, id: FlowId) {
        if let Some(e) = self.entries.get_mut(id.0 as usize) {
            if self.updated == (id.0, self.serial) {
                // Updated by the inspection waiting for its commit: keep the update for it.
                self.pending = (*e, self.serial);
            }
            self.live = self.live.saturating_sub(u64::from(e.exists()));
            *e = Entry::default();
        }
    }

    /// Writes an existing entry's update (or ends it) now, as Linux does before any rule.
    fn update(&mut self, id: FlowId, e: Entry, refresh: Refresh, kill: bool) -> Action {
        let old = &mut self.entries[id.0 as usize];
        self.live = (self.live + u64::from(e.exists())).saturating_sub(u64::from(old.exists()));
        *old = e;
        self.updated_in_place(id, refresh, kill)
    }

    /// [`Conntrack::update`] for an entry already changed in place.
    #[inline]
    fn updated_in_place(&mut self, id: FlowId, refresh: Refresh, kill: bool) -> Action {
        self.serial = self.serial.wrapping_add(1);
        let serial = self.serial;
        if kill {
            let ended = summary(&self.entries[id.0 as usize]);
            self.clear(id);
            Action::Update { id, refresh: Refresh::Keep, ended: Some(ended), serial }
        } else {
            self.updated = (id.0, serial);
            Action::Update { id, refresh, ended: None, serial }
        }
    }

    /// Puts a new entry in the pending slot until the verdict.
    fn create(
        &mut self,
        e: Entry,
        refresh: Refresh,
        replaces: Option<(FlowId, Summary)>,
    ) -> Action {
        self.serial = self.serial.wrapping_add(1);
        self.pending = (e, self.serial);
        Action::Create { refresh, replaces, serial: self.serial }
    }

    fn invalid(&mut self, r: Reason, action: Action) -> Inspection {
        self.stats.count_invalid(r);
        Inspection::invalid(r, action)
    }

    fn tcp(
        &mut self,
        existing: Option<FlowId>,
        side: Side,
        p: &CtPacket,
        now: Timestamp,
    ) -> Inspection {
        if let Some(r) = tcp::error(p, &self.cfg) {
            return self.invalid(r, Action::None);
        }
        let Some(id) = existing else {
            return self.tcp_new(side, p, now, None);
        };
        self.stats.found += 1;
        // Changed in place, as Linux changes its entry under the lock.
        let e = &mut self.entries[id.0 as usize];
        let dir = e.dir(side);
        let seen_reply = e.seen_reply();
        match tcp::packet(e, dir as usize, p, &self.cfg) {
            tcp::Verdict::Accept { refresh, kill } => {
                // A killed entry reports its end before the reply could mark it.
                if dir == Dir::Reply && !kill {
                    e.set_seen_reply();
                }
                let action = self.updated_in_place(id, refresh, kill);
                Inspection::of(ct_state(seen_reply, dir), dir, action)
            }
            tcp::Verdict::Ignore => {
                self.stats.ignored += 1;
                if dir == Dir::Reply {
                    e.set_seen_reply();
                }
                let action = self.updated_in_place(id, Refresh::Keep, false);
                Inspection::of(ct_state(seen_reply, dir), dir, action)
            }
            tcp::Verdict::Invalid { reason, detail, refresh } => {
                let action = self.updated_in_place(id, refresh, false);
                Inspection { detail, dir, ..self.invalid(reason, action) }
            }
            tcp::Verdict::Reopen => {
                // Linux kills the old entry, then looks the packet up again as a new one.
                let ended = self.retire(id).map(|s| (id, s));
                self.tcp_new(side, p, now, ended)
            }
        }
    }

    fn tcp_new(
        &mut self,
        side: Side,
        p: &CtPacket,
        now: Timestamp,
        replaces: Option<(FlowId, Summary)>,
    ) -> Inspection {
        let kill = if replaces.is_some() { Action::Kill { ended: replaces } } else { Action::None };
        let mut e = Entry::open(Kind::Tcp, side, now);
        if let Err(r) = tcp::new(&mut e, p, &self.cfg) {
            return self.invalid(r, kill);
        }
        match tcp::packet(&mut e, 0, p, &self.cfg) {
            tcp::Verdict::Accept { refresh, .. } => {
                let action = self.create(e, refresh, replaces);
                Inspection::of(CtState::New, Dir::Original, action)
            }
            tcp::Verdict::Ignore => {
                self.stats.ignored += 1;
                let refresh = Refresh::Set(tcp::timeout(&e, &self.cfg));
                let action = self.create(e, refresh, replaces);
                Inspection::of(CtState::New, Dir::Original, action)
            }
            tcp::Verdict::Invalid { reason, detail, .. } => {
                Inspection { detail, ..self.invalid(reason, kill) }
            }
            tcp::Verdict::Reopen => self.invalid(Reason::TcpInvalidNew, kill),
        }
    }

    /// `udp_error` / `udplite_error`.
    fn udp_error(&self, p: &CtPacket) -> Option<Reason> {
        if !p.udp_header {
            return Some(Reason::ShortPacket);
        }
        let len = u32::from(p.udp_len);
        if p.proto == proto::UDP {
            if len > p.l4_len || len < 8 {
                return Some(Reason::UdpMalformed);
            }
        } else {
            if len != 0 && (len < 8 || len > p.l4_len) {
                return Some(Reason::UdpliteCoverage);
            }
            if p.l4_checksum == Checksum::Absent {
                return Some(Reason::UdpliteNoChecksum);
            }
        }
        (self.cfg.checksum && p.l4_checksum == Checksum::Bad).then_some(Reason::BadChecksum)
    }

    /// UDP's and the generic tracker's pseudo-state: no checks beyond the header's, a
    /// timeout per state.
    fn simple(
        &mut self,
        existing: Option<FlowId>,
        side: Side,
        now: Timestamp,
        kind: Kind,
    ) -> Inspection {
        let t = self.cfg.timeouts;
        let (mut e, id) = match existing {
            Some(id) => {
                self.stats.found += 1;
                (self.entries[id.0 as usize], Some(id))
            }
            None => (Entry::open(kind, side, now), None),
        };
        let dir = e.dir(side);
        let seen_reply = e.seen_reply();
        let refresh = match kind {
            Kind::Udp if seen_reply => {
                // Still active more than 2 s after the first packet: a stream.
                if now > e.start.saturating_add(Span::from_secs(2)) {
                    e.set_assured();
                    t.udp_stream
                } else {
                    t.udp
                }
            }
            Kind::Udp => t.udp,
            _ => t.generic,
        };
        if dir == Dir::Reply {
            e.set_seen_reply();
        }
        let refresh = Refresh::Set(refresh);
        let action = match id {
            Some(id) => self.update(id, e, refresh, false),
            None => self.create(e, refresh, None),
        };
        Inspection::of(ct_state(seen_reply, dir), dir, action)
    }

    /// The ICMP and ICMPv6 error path (`nf_conntrack_icmpv4_error`, `..._icmpv6_error`):
    /// `Some` when it decided the packet (invalid, untracked, related), `None` for a query to
    /// track normally.
    fn icmp_error(
        &mut self,
        p: &CtPacket,
        v6: bool,
        quoted: impl FnOnce(&FlowKey, Side) -> Option<FlowId>,
    ) -> Option<Inspection> {
        if !p.icmp_header {
            return Some(self.invalid(Reason::ShortPacket, Action::None));
        }
        if self.cfg.checksum && p.l4_checksum == Checksum::Bad {
            let r = if v6 { Reason::Icmpv6Checksum } else { Reason::IcmpChecksum };
            return Some(self.invalid(r, Action::None));
        }
        let t = p.icmp_type;
        if !v6 && t > 18 {
            return Some(self.invalid(Reason::IcmpType, Action::None));
        }
        if v6 && icmpv6_untracked(t) {
            return Some(Inspection::of(CtState::Untracked, Dir::Original, Action::None));
        }
        if v6 && t == 137 {
            if p.icmp_code != 0 {
                return None;
            }
            let link_local = p.src[0] == 0xfe && p.src[1] & 0xc0 == 0x80;
            let r = if p.hop_limit != 255 || !link_local {
                Reason::RedirectSource
            } else {
                Reason::RedirectNotFollowed
            };
            return Some(self.invalid(r, Action::None));
        }
        if !icmp::is_error(t, v6) {
            return None;
        }
        Some(self.related(p, v6, quoted))
    }

    /// `nf_conntrack_inet_error`: the error is `related` to the flow its quote belongs to, if
    /// that flow has an entry and the error goes to the flow's endpoint.
    fn related(
        &mut self,
        p: &CtPacket,
        v6: bool,
        quoted: impl FnOnce(&FlowKey, Side) -> Option<FlowId>,
    ) -> Inspection {
        let Some(q) = p.quote else {
            return self.invalid(Reason::IcmpOrphan, Action::None);
        };
        let family = if v6 { IpFamily::V6 } else { IpFamily::V4 };
        // The quoted packet went q.src -> q.dst; the error travels back, so Linux looks up
        // the inverted tuple.
        let (key, quoted_side) = match q.kind {
            QuoteKind::Ports => {
                FlowKey::new(q.src, q.sport, q.dst, q.dport, q.proto, family, KeyKind::Ports)
            }
            QuoteKind::Icmp => {
                let inner_v6 = q.proto == proto::ICMPV6;
                if icmp::inverse(q.icmp_type, inner_v6).is_none() {
                    return self.invalid(Reason::IcmpOrphan, Action::None);
                }
                let kind = if icmp::is_echo(q.icmp_type, inner_v6) {
                    KeyKind::Echo
                } else {
                    KeyKind::Pair
                };
                let id = if kind == KeyKind::Echo { q.id } else { 0 };
                FlowKey::new(q.src, id, q.dst, id, q.proto, family, kind)
            }
            QuoteKind::Other => FlowKey::new(q.src, 0, q.dst, 0, q.proto, family, KeyKind::Pair),
        };
        let error_side = if quoted_side == Side::A { Side::B } else { Side::A };
        let found = quoted(&key, error_side).and_then(|id| Some((id, *self.entry(id)?)));
        let Some((id, e)) = found else {
            return self.invalid(Reason::IcmpOrphan, Action::None);
        };
        let dir = e.dir(error_side);
        if q.kind == QuoteKind::Icmp {
            // The quoted query must be the entry's own (its type for that direction).
            let inner_v6 = q.proto == proto::ICMPV6;
            let quoted_dir = dir.reverse();
            if !icmp_type_fits(&e, quoted_dir, q.icmp_type, inner_v6) {
                return self.invalid(Reason::IcmpOrphan, Action::None);
            }
        }
        // The entry's tuple for `dir` ends at the quoted packet's source.
        if p.dst != q.src {
            return self.invalid(Reason::IcmpOuterDaddr, Action::None);
        }
        Inspection { related_to: Some(id), ..Inspection::of(CtState::Related, dir, Action::None) }
    }

    /// An ICMP query (`nf_conntrack_icmp_packet`, `..._icmpv6_packet`).
    fn icmp(
        &mut self,
        existing: Option<FlowId>,
        side: Side,
        p: &CtPacket,
        v6: bool,
        now: Timestamp,
    ) -> Inspection {
        let timeout = if v6 { self.cfg.timeouts.icmpv6 } else { self.cfg.timeouts.icmp };
        let refresh = Refresh::Set(timeout);
        if let Some(id) = existing {
            let mut e = self.entries[id.0 as usize];
            let dir = e.dir(side);
            if icmp_type_fits(&e, dir, p.icmp_type, v6) {
                self.stats.found += 1;
                let seen_reply = e.seen_reply();
                if dir == Dir::Reply {
                    e.set_seen_reply();
                }
                let action = self.update(id, e, refresh, false);
                return Inspection::of(ct_state(seen_reply, dir), dir, action);
            }
        }
        if !icmp_valid_new(p.icmp_type, v6) {
            return self.invalid(Reason::IcmpNotNew, Action::None);
        }
        let mut e = Entry::open(Kind::Icmp, side, now);
        e.pstate = p.icmp_type;
        let action = self.create(e, refresh, None);
        Inspection::of(CtState::New, Dir::Original, action)
    }
}

fn summary(e: &Entry) -> Summary {
    Summary {
        ct_state: ct_state(e.seen_reply(), Dir::Original),
        tcp_state: e.tcp_state(),
        assured: e.assured(),
        seen_reply: e.seen_reply(),
    }
}

/// Whether an ICMP message of type `t` travelling in direction `dir` belongs to entry `e`
/// (its tuple for that direction carries the opening type, or its answer).
fn icmp_type_fits(e: &Entry, dir: Dir, t: u8, v6: bool) -> bool {
    if e.kind() != Kind::Icmp {
        return false;
    }
    match dir {
        Dir::Original => t == e.pstate,
        Dir::Reply => icmp::inverse(e.pstate, v6) == Some(t),
    }
}

#[cfg(test)]
mod tests;
