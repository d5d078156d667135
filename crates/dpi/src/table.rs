//! Detection state for a whole flow table: [`DpiTable`], indexed by the table's slot numbers.
//!
//! A flow table reuses a slot as soon as its flow ends, so state is kept per slot and handed
//! back ([`DpiTable::retire`]) when the flow ends. Each slot costs 4 bytes; a [`FlowDpi`] is
//! taken from a pool at the flow's first payload and returned the moment the flow is decided,
//! so only undecided flows hold detection state. What a decided flow keeps until it ends is
//! its [`App`]: the label, how it was found and the metadata (boxed, and only when some was
//! found).

use rampart_flow::IpFamily;

use crate::{By, Config, FlowDpi, Label, Meta, inspected};

/// What a flow record says about the application: the label, how it was found, and the
/// metadata read on the way (`None` when there was none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct App {
    /// The label (`Unknown` when nothing was found).
    pub label: Label,
    /// How the label was found.
    pub by: By,
    /// Server names, hosts, query names and banners found.
    pub meta: Option<Box<Meta>>,
}

impl Default for App {
    fn default() -> Self {
        App { label: Label::UNKNOWN, by: By::None, meta: None }
    }
}

impl App {
    /// The metadata, or an empty set.
    pub fn meta(&self) -> &Meta {
        self.meta.as_deref().unwrap_or(Meta::EMPTY)
    }

    fn of(f: &mut FlowDpi) -> App {
        let meta = f.meta.take().filter(|m| **m != Meta::default());
        App { label: f.label, by: f.by, meta }
    }
}

/// The flow a packet belongs to, as [`DpiTable::feed`] needs it.
#[derive(Clone, Copy, Debug)]
pub struct FlowInfo<'a> {
    /// IP protocol number.
    pub l4: u8,
    /// The initiator's port, then the responder's.
    pub ports: [u16; 2],
    /// Address family.
    pub family: IpFamily,
    /// The responder's address (IPv4 in the first four bytes).
    pub responder: &'a [u8; 16],
}

/// Counters of a [`DpiTable`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DpiStats {
    /// Flows whose payload was inspected.
    pub inspected: u64,
    /// Flows labelled from their packets.
    pub by_dpi: u64,
    /// Flows labelled by a well-known port.
    pub by_port: u64,
    /// Flows labelled by the responder's address.
    pub by_address: u64,
    /// Flows left unknown.
    pub unknown: u64,
    /// Payload packets handed to detectors.
    pub packets: u64,
    /// Most flows under inspection at once.
    pub peak_inspecting: u64,
    /// Flows whose inspection stopped because the table held [`Config::max_total_bytes`].
    pub memory_capped: u64,
    /// Most bytes held at once by the flows under inspection (buffers and gathered hellos).
    pub peak_held: u64,
}

/// Slot states, in 32 bits: no payload seen yet, under inspection (index into the pool), or
/// decided (index into the decided list, or nothing worth keeping).
const FRESH: u32 = 0;
const DECIDED: u32 = 1 << 31;
const DECIDED_NOTHING: u32 = u32::MAX;

/// Per-flow detection state beside a flow table, indexed by the table's slot numbers.
#[derive(Debug)]
pub struct DpiTable {
    cfg: Config,
    slots: Vec<u32>,
    pool: Pool,
    free_pool: Vec<u32>,
    decided: Vec<App>,
    free_decided: Vec<u32>,
    inspecting: u64,
    /// Heap bytes the flows under inspection hold now.
    held: usize,
    stats: DpiStats,
}

impl DpiTable {
    /// An empty table inspecting flows within `cfg`'s budget.
    pub fn new(cfg: Config) -> Self {
        DpiTable {
            cfg,
            slots: Vec::new(),
            pool: Pool::default(),
            free_pool: Vec::new(),
            decided: Vec::new(),
            free_decided: Vec::new(),
            inspecting: 0,
            held: 0,
            stats: DpiStats::default(),
        }
    }

    /// Makes room for flow ids below `flows` (address space only; see
    /// [`SideStage::reserve`](rampart_flow::SideStage::reserve)): the per-slot states and the
    /// lists of free entries never grow again, and the pool's chunk list has room for every
    /// chunk.
    pub fn reserve(&mut self, flows: usize) {
        self.slots.reserve_exact(flows.saturating_sub(self.slots.len()));
        self.free_pool.reserve_exact(flows.saturating_sub(self.free_pool.len()));
        self.pool.chunks.reserve_exact(flows.div_ceil(POOL_CHUNK));
    }

    /// The inspection budget.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Whether the flow in `slot` is still to be inspected: a test of 4 bytes, done for every
    /// packet with payload before [`DpiTable::feed`].
    #[inline]
    pub fn wants(&self, slot: u32) -> bool {
        self.slots.get(slot as usize).is_none_or(|&s| s & DECIDED == 0)
    }

    /// The label of the flow in `slot` once identification has decided it (`None` while it
    /// is still inspected or has carried no payload): what a firewall's `app` rules see.
    pub fn decided(&self, slot: u32) -> Option<Label> {
        match self.slots.get(slot as usize).copied()? {
            DECIDED_NOTHING => Some(Label::UNKNOWN),
            s if s & DECIDED != 0 => Some(self.decided[(s & !DECIDED) as usize].label),
            _ => None,
        }
    }

    /// Feeds one payload of the flow in `slot` (`forward`: sent by the initiator). The first
    /// payload starts the flow's inspection; the packet that decides it ends it.
    pub fn feed(&mut self, slot: u32, flow: &FlowInfo<'_>, forward: bool, payload: &[u8]) {
        if payload.is_empty() {
            return;
        }
        let i = slot as usize;
        if i >= self.slots.len() {
            self.slots.resize(i + 1, FRESH);
        }
        let at = match self.slots[i] {
            FRESH => {
                if !inspected(flow.l4) {
                    // Not TCP or UDP: decided by the header alone.
                    self.slots[i] = self.keep(App::of(&mut FlowDpi::new(flow.l4)));
                    return;
                }
                self.stats.inspected += 1;
                self.inspecting += 1;
                self.stats.peak_inspecting = self.stats.peak_inspecting.max(self.inspecting);
                // A state from the pool starts over in place (keeping its allocations).
                let at = match self.free_pool.pop() {
                    Some(at) => {
                        self.pool.get_mut(at).restart(flow.l4);
                        at
                    }
                    None => self.pool.push(FlowDpi::new(flow.l4)),
                };
                self.pool.get_mut(at).set_responder(flow.family, flow.responder);
                self.slots[i] = at + 1;
                at
            }
            s if s & DECIDED != 0 => return,
            s => s - 1,
        };
        self.stats.packets += 1;
        let f = self.pool.get_mut(at);
        let before = f.heap_bytes();
        let mut done = f.feed(&self.cfg, forward, flow.ports, payload);
        let after = f.heap_bytes();
        self.held = (self.held + after).saturating_sub(before);
        self.stats.peak_held = self.stats.peak_held.max(self.held as u64);
        if !done && after > before && self.held > self.cfg.max_total_bytes {
            // Over the table's budget: this flow, which just took more, stops here.
            f.give_up(flow.ports);
            self.stats.memory_capped += 1;
            done = true;
        }
        if done {
            let app = App::of(f);
            f.restart(0);
            self.held = self.held.saturating_sub(after);
            self.free_pool.push(at);
            self.inspecting -= 1;
            self.slots[i] = self.keep(app);
        }
    }

    /// What is known of the live flow in `slot` so far, as [`DpiTable::retire`] would give it
    /// now (a flow still under inspection labelled by its port or responder address), while
    /// the flow goes on being inspected: for an interim record. It allocates only for a flow
    /// still under inspection (a copy of its state).
    pub fn current(&self, slot: u32, flow: &FlowInfo<'_>) -> App {
        match self.slots.get(slot as usize).copied().unwrap_or(FRESH) {
            DECIDED_NOTHING => App::default(),
            s if s & DECIDED != 0 => self.decided[(s & !DECIDED) as usize].clone(),
            FRESH => never_inspected(flow),
            s => given_up(&mut self.pool.get(s - 1).clone(), flow),
        }
    }

    /// Ends the flow in `slot` and returns what was found; a flow still under inspection is
    /// labelled by its port or responder address (as when its budget runs out). The slot is
    /// fresh again afterwards.
    pub fn retire(&mut self, slot: u32, flow: &FlowInfo<'_>) -> App {
        let s = self.slots.get_mut(slot as usize).map_or(FRESH, |s| std::mem::replace(s, FRESH));
        let app = match s {
            DECIDED_NOTHING => App::default(),
            s if s & DECIDED != 0 => {
                let at = s & !DECIDED;
                self.free_decided.push(at);
                std::mem::take(&mut self.decided[at as usize])
            }
            FRESH => never_inspected(flow),
            s => {
                let at = s - 1;
                let f = self.pool.get_mut(at);
                self.held = self.held.saturating_sub(f.heap_bytes());
                let app = given_up(f, flow);
                f.restart(0);
                self.free_pool.push(at);
                self.inspecting -= 1;
                app
            }
        };
        match app.by {
            By::Dpi => self.stats.by_dpi += 1,
            By::Port => self.stats.by_port += 1,
            By::Address => self.stats.by_address += 1,
            By::None => self.stats.unknown += 1,
        }
        app
    }

    /// The counters so far.
    pub fn stats(&self) -> DpiStats {
        self.stats
    }

    /// Flows under inspection now.
    pub fn inspecting(&self) -> usize {
        self.inspecting as usize
    }

    /// Bytes held now: the slot array, the pool of detection states (with what they buffer)
    /// and the decided flows' records.
    pub fn memory_bytes(&self) -> usize {
        self.fixed_bytes() + self.held
    }

    /// The most bytes held at once: the arrays (which do not shrink) and the peak of what
    /// the flows under inspection buffered.
    pub fn peak_bytes(&self) -> usize {
        self.fixed_bytes() + self.stats.peak_held as usize
    }

    fn fixed_bytes(&self) -> usize {
        self.slots.len() * 4
            + self.pool.bytes()
            + self.decided.capacity() * std::mem::size_of::<App>()
            + self.pool.len * 4
            + self.free_decided.capacity() * 4
    }

    /// Stores a decided flow's record; returns the slot state that points to it.
    fn keep(&mut self, app: App) -> u32 {
        if app == App::default() {
            return DECIDED_NOTHING;
        }
        match self.free_decided.pop() {
            Some(at) => {
                self.decided[at as usize] = app;
                at | DECIDED
            }
            None => {
                self.decided.push(app);
                (self.decided.len() - 1) as u32 | DECIDED
            }
        }
    }
}

/// Detection states in chunks of [`POOL_CHUNK`]: the pool grows a chunk at a time and never
/// moves what it holds, so a flood of new flows costs no copy of every state so far (a
/// doubling vector copies them all, a few hundred megabytes at a million flows, while
/// packets wait).
#[derive(Debug, Default)]
struct Pool {
    chunks: Vec<Vec<FlowDpi>>,
    len: usize,
}

/// States per pool chunk (a power of two).
const POOL_CHUNK: usize = 1024;

impl Pool {
    /// Adds a state; returns its index.
    fn push(&mut self, f: FlowDpi) -> u32 {
        if self.len.is_multiple_of(POOL_CHUNK) {
            self.chunks.push(Vec::with_capacity(POOL_CHUNK));
        }
        if let Some(c) = self.chunks.last_mut() {
            c.push(f);
        }
        self.len += 1;
        (self.len - 1) as u32
    }

    #[inline]
    fn get(&self, at: u32) -> &FlowDpi {
        &self.chunks[at as usize / POOL_CHUNK][at as usize % POOL_CHUNK]
    }

    #[inline]
    fn get_mut(&mut self, at: u32) -> &mut FlowDpi {
        &mut self.chunks[at as usize / POOL_CHUNK][at as usize % POOL_CHUNK]
    }

    /// Bytes of the chunks.
    fn bytes(&self) -> usize {
        self.chunks.len() * POOL_CHUNK * std::mem::size_of::<FlowDpi>()
    }
}

/// What a flow that never showed a payload is: labelled by its port or responder address.
fn never_inspected(flow: &FlowInfo<'_>) -> App {
    let mut f = FlowDpi::new(flow.l4);
    f.set_responder(flow.family, flow.responder);
    given_up(&mut f, flow)
}

/// A flow's application once its inspection ends (by its port or responder address if its
/// packets said nothing).
fn given_up(f: &mut FlowDpi, flow: &FlowInfo<'_>) -> App {
    f.give_up(flow.ports);
    App::of(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Proto;

    const SERVER: [u8; 16] = [10, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];

    fn udp(ports: [u16; 2]) -> FlowInfo<'static> {
        FlowInfo { l4: 17, ports, family: IpFamily::V4, responder: &SERVER }
    }

    fn tcp(ports: [u16; 2]) -> FlowInfo<'static> {
        FlowInfo { l4: 6, ports, family: IpFamily::V4, responder: &SERVER }
    }

    /// A DNS query for `www.example.com`.
    const QUERY: &[u8] = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\
        \x03www\x07example\x03com\x00\x00\x01\x00\x01";

    #[test]
    fn decided_flows_keep_their_label_and_free_their_state() {
        let mut t = DpiTable::new(Config::default());
        let f = udp([40000, 53]);
        assert!(t.wants(7));
        assert_eq!(t.decided(7), None);
        t.feed(7, &f, true, QUERY);
        assert!(!t.wants(7), "a DNS query decides the flow");
        assert_eq!(t.decided(7).map(|l| l.to_string()).as_deref(), Some("DNS"));
        assert_eq!(t.inspecting(), 0);
        // Later packets change nothing.
        t.feed(7, &f, false, b"garbage");
        let app = t.retire(7, &f);
        assert_eq!(app.label.to_string(), "DNS");
        assert_eq!(app.by, By::Dpi);
        assert_eq!(app.meta().dns_query.as_deref(), Some("www.example.com"));
        assert!(t.wants(7), "the slot is fresh again");
        assert_eq!(t.stats().by_dpi, 1);
    }

    #[test]
    fn slots_are_reused_without_leaking_state() {
        let mut t = DpiTable::new(Config::default());
        let f = tcp([40000, 22]);
        for round in 0..100 {
            t.feed(3, &f, true, b"SSH-2.0-OpenSSH_9.6\r\n");
            t.feed(4, &f, true, b"\x00\x01 not yet anything");
            assert_eq!(t.inspecting(), 1, "round {round}");
            let ssh = t.retire(3, &f);
            assert_eq!(ssh.label.master, Proto::Ssh);
            assert_eq!(ssh.meta().ssh_banner.as_deref(), Some("SSH-2.0-OpenSSH_9.6"));
            // Still undecided at its end: labelled by its port.
            let other = t.retire(4, &f);
            assert_eq!((other.label.master, other.by), (Proto::Ssh, By::Port));
            assert_eq!(t.inspecting(), 0);
        }
        assert_eq!(t.pool.len, 1, "one state reused");
        assert_eq!(t.decided.len(), 1, "one record reused");
    }

    /// A state taken from the pool keeps the room of its evidence list: a flood of flows
    /// whose payloads fit a heuristic allocates nothing per flow once the pool is warm.
    #[test]
    fn pooled_states_keep_their_evidence_room() {
        let mut t = DpiTable::new(Config::default());
        let f = udp([40000, 40001]);
        // Random datagrams until one fits some heuristic (about one in six does).
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut payload = [0u8; 18];
        let mut fits = || {
            for b in payload.iter_mut() {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                *b = s as u8;
            }
            let mut probe = FlowDpi::new(17);
            probe.feed(&Config::default(), true, [40000, 40001], &payload);
            (!probe.candidates.is_empty()).then_some(payload)
        };
        let p = std::iter::repeat_with(&mut fits).flatten().next().unwrap();
        t.feed(3, &f, true, &p);
        let room = t.pool.get(0).candidates.as_ptr();
        assert!(t.pool.get(0).candidates.capacity() > 0);
        for _ in 0..10 {
            t.retire(3, &f);
            let kept = &t.pool.get(0).candidates;
            assert!(kept.is_empty() && kept.capacity() > 0, "the evidence is gone, its room kept");
            t.feed(3, &f, true, &p);
            assert_eq!(t.pool.get(0).candidates.as_ptr(), room, "the same room is used");
        }
        assert_eq!(t.pool.len, 1);
        assert_eq!(t.memory_bytes(), t.fixed_bytes() + t.pool.get(0).heap_bytes());
    }

    #[test]
    fn flows_without_payload_are_labelled_at_their_end() {
        let mut t = DpiTable::new(Config::default());
        let tls = t.retire(9, &tcp([50000, 443]));
        assert_eq!((tls.label.master, tls.by), (Proto::Tls, By::Port));
        let none = t.retire(9, &tcp([50000, 50001]));
        assert_eq!((none.label, none.by), (Label::UNKNOWN, By::None));
        let icmp = FlowInfo { l4: 1, ports: [0, 0], family: IpFamily::V4, responder: &SERVER };
        t.feed(1, &icmp, true, b"ping");
        assert!(!t.wants(1));
        assert_eq!(t.retire(1, &icmp).label.master, Proto::Icmp);
        assert_eq!(t.retire(2, &icmp).label.master, Proto::Icmp);
        assert_eq!(t.stats().inspected, 0, "only TCP and UDP payloads are inspected");
    }

    #[test]
    fn the_budget_ends_inspection() {
        let cfg = Config { udp_packets: 2, ..Config::default() };
        let mut t = DpiTable::new(cfg);
        let f = udp([40000, 40001]);
        t.feed(0, &f, true, b"\x00\x01zzzzzz");
        assert!(t.wants(0));
        t.feed(0, &f, false, b"\x00\x01zzzzzz");
        assert!(!t.wants(0), "two packets are the budget");
        assert_eq!(t.inspecting(), 0);
        assert_eq!(t.retire(0, &f), App::default());
        assert_eq!(t.stats().unknown, 1);
    }
}
