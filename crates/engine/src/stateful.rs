//! The stateful data plane: connection tracking beside the flow table, a rule set evaluated at
//! the hooks a router's packet passes, a verdict per packet (cached per flow), and the reject
//! replies Linux would send.
//!
//! Per packet, in Linux's order: the flow is looked up without being created; connection
//! tracking ([`rampart_conntrack::Conntrack`]) says what `ct state` the packet has (updating
//! an existing entry as Linux does before any rule); the rule set decides at each hook on the
//! packet's path (prerouting, then forward or input, then postrouting, each hook's base
//! chains in priority order; a drop or reject ends the walk, an accept goes on to the next
//! chain); only then is a new flow created, and only if the packet was accepted, so a dropped
//! first packet leaves no state (Linux confirms an entry at the last hook). The connection's
//! timeout becomes the flow's deadline in the flow table, and ASSURED connections are kept
//! when the table is full (the new flow is refused instead, Linux's early drop).
//!
//! A flow's decision is cached per direction with the rule set's generation, the packet's
//! `ct state` and whether its application is known, so later packets of an established flow
//! skip the rule set until one of those changes; the cache keeps the packet's path through
//! the chains so the per-rule counters still count every packet (as `nft list ruleset`
//! shows them). When rules test TCP flags, the cache also keys on the flags' class (flag
//! bytes that pass and fail the same tests), so an established flow's ACKs stay cached while
//! its FIN is judged again.

use std::net::IpAddr;
use std::sync::Arc;

use rampart_classify::firewall::{Firewall, FirewallError, Packet as FwPacket};
use rampart_classify::ipset::masked;
use rampart_classify::iptables::{CtState as RuleCt, RejectWith as ReadReject, Target};
use rampart_classify::nft::NftRuleset;
use rampart_conntrack::{Conntrack, CtState, Inspection, Summary as CtSummary};
use rampart_flow::{FlowId, FlowKey, IpFamily, KeyKind, Side};
use rampart_wire::Timestamp;

use crate::pipeline::Verdict;
use crate::reply::RejectWith;

/// The netfilter hooks a packet's filter chains run at (the nftables reader's).
pub use rampart_classify::nft::Hook;

/// A base chain: a lowered rule set entered at a hook, in priority order among the hook's
/// chains (lower first).
#[derive(Clone, Debug)]
pub struct BaseChain {
    /// Its name (table and chain, as a user finds it).
    pub name: String,
    /// The hook it is entered at.
    pub hook: Hook,
    /// Whether it is entered on every packet's path, forwarded or for the router (a rule set
    /// without hooks: rampart syntax, a chain picked by name, a capture filtered as one link).
    pub every_path: bool,
    /// Its priority at the hook.
    pub priority: i32,
    /// Its rules (and those of the chains it reaches), and its policy.
    pub rules: Firewall,
    /// How its `reject` rules answer, by entry (default: ICMP port unreachable).
    pub reject: Vec<RejectWith>,
    /// Each entry's name as records and logs show it.
    names: Vec<Arc<str>>,
    /// The address family whose packets traverse it (`None`: both), as an nftables `ip` or
    /// `ip6` table's chains see only their family.
    pub family: Option<IpFamily>,
}

impl BaseChain {
    /// A base chain of `rules` at `hook`, for packets of both families; entries are named as
    /// the rule set names them (the policy `policy`), and reject as their rules say.
    pub fn new(name: impl Into<String>, hook: Hook, priority: i32, rules: Firewall) -> Self {
        let last = rules.entries().len() - 1;
        let names = rules
            .entries()
            .iter()
            .enumerate()
            .map(|(i, e)| Arc::from(if i == last { "policy" } else { e.name.as_str() }))
            .collect();
        let reject = rules.entries().iter().map(|e| reply_for(e.reject)).collect();
        Self {
            name: name.into(),
            hook,
            every_path: false,
            priority,
            rules,
            reject,
            names,
            family: None,
        }
    }

    /// Entry `e`'s name.
    pub fn entry_name(&self, e: usize) -> &Arc<str> {
        &self.names[e]
    }
}

/// The reply a rule's reject kind sends, as Linux's `nf_reject` builds it (nftables' `icmpx`
/// codes mapped onto each family's as `nft_reject_inet` maps them).
pub fn reply_for(with: Option<ReadReject>) -> RejectWith {
    const V4: (u8, u8) = (3, 3);
    const V6: (u8, u8) = (1, 4);
    match with {
        None => RejectWith::default(),
        Some(ReadReject::TcpReset) => RejectWith::TcpReset,
        Some(ReadReject::Icmp(c)) => RejectWith::Icmp { v4: (3, c), v6: V6 },
        Some(ReadReject::Icmpv6(c)) => RejectWith::Icmp { v4: V4, v6: (1, c) },
        Some(ReadReject::Icmpx(c)) => {
            let (v4, v6) = match c {
                0 => (0, 0),
                2 => (1, 3),
                3 => (13, 1),
                _ => (3, 4),
            };
            RejectWith::Icmp { v4: (3, v4), v6: (1, v6) }
        }
    }
}

/// Which rule decided a packet: a base chain of the rule set and an entry of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RuleRef {
    /// The base chain (an index into [`RuleSet::chains`]).
    pub chain: u16,
    /// The entry of its [`Firewall::entries`].
    pub entry: u32,
}

/// A rule set for the data plane: base chains by hook and priority.
#[derive(Clone, Debug)]
pub struct RuleSet {
    /// Where it came from (a file name), for messages.
    pub source: String,
    chains: Vec<BaseChain>,
    /// When some rule looks at TCP flags: each flag byte's class (bytes of one class match
    /// the same flag tests, so a decision cached for one holds for all of them).
    flag_class: Option<Box<[u8; 256]>>,
    /// Whether some rule has a `-m limit` token bucket.
    limits: bool,
}

impl RuleSet {
    /// A rule set of these base chains (ordered by hook, then priority, then as given).
    pub fn new(source: impl Into<String>, mut chains: Vec<BaseChain>) -> Self {
        chains.sort_by_key(|c| (c.hook, c.priority));
        let mut tests: Vec<rampart_classify::iptables::ByteSet> = Vec::new();
        for c in &chains {
            for b in c.rules.boxes() {
                for t in b.tcp_flags {
                    if !tests.contains(t) {
                        tests.push(*t);
                    }
                }
            }
        }
        let flag_class = (!tests.is_empty()).then(|| {
            // A byte's class: which of the tests it passes; classes numbered as met.
            let mut seen: Vec<Vec<bool>> = Vec::new();
            let mut class = Box::new([0u8; 256]);
            for b in 0..=255u8 {
                let sig: Vec<bool> = tests.iter().map(|t| t.contains(b)).collect();
                let k = seen.iter().position(|x| *x == sig).unwrap_or_else(|| {
                    seen.push(sig);
                    seen.len() - 1
                });
                class[usize::from(b)] = k as u8;
            }
            class
        });
        let limits = chains.iter().any(|c| c.rules.has_limits());
        Self { source: source.into(), chains, flag_class, limits }
    }

    /// One rule set entered at one hook (an `iptables-save` or rampart-syntax file).
    pub fn single(source: impl Into<String>, name: &str, hook: Hook, rules: Firewall) -> Self {
        Self::new(source, vec![BaseChain::new(name, hook, 0, rules)])
    }

    /// One rule set every packet meets once, whatever its path (a rampart-syntax table, a
    /// chain picked by name, or `rampart filter` over a capture of one link).
    pub fn everywhere(source: impl Into<String>, name: &str, rules: Firewall) -> Self {
        Self::everywhere_for(source, name, None, rules)
    }

    /// [`RuleSet::everywhere`] for the packets of one family only, as an nftables
    /// `ip` or `ip6` table's chain sees them.
    pub fn everywhere_for(
        source: impl Into<String>,
        name: &str,
        family: Option<IpFamily>,
        rules: Firewall,
    ) -> Self {
        let mut c = BaseChain::new(name, Hook::Forward, 0, rules);
        c.every_path = true;
        c.family = family;
        Self::new(source, vec![c])
    }

    /// An nftables rule set: every base chain at its hook and priority, for its table's
    /// family, with its rules named `CHAIN:N COMMENT` as `nft -a list ruleset` lets a user
    /// find them.
    pub fn from_nft(source: impl Into<String>, nft: &NftRuleset) -> Result<Self, FirewallError> {
        let mut chains = Vec::with_capacity(nft.base.len());
        for b in &nft.base {
            let rules = Firewall::from_iptables(&nft.rules, &b.chain, &nft.sets)?;
            let mut c = BaseChain::new(b.chain.clone(), b.hook, b.priority, rules);
            c.family = b.family.version().and_then(IpFamily::from_version);
            chains.push(c);
        }
        Ok(Self::new(source, chains))
    }

    /// A rule set read for the data plane ([`rampart_classify::load::load_hooked`]): each
    /// chain at its hook and priority, for its family, on every path where it says so.
    pub fn from_hooked(hooked: rampart_classify::load::Hooked) -> Self {
        let chains = hooked
            .chains
            .into_iter()
            .map(|h| {
                let mut c = BaseChain::new(h.name, h.hook, h.priority, h.rules);
                c.every_path = h.every_path;
                c.family = h.family.and_then(IpFamily::from_version);
                c
            })
            .collect();
        Self::new(hooked.source, chains)
    }

    /// Tells every chain the host's own addresses (for `-m addrtype LOCAL` rules).
    pub fn set_local(&mut self, local: &[IpAddr]) {
        for c in &mut self.chains {
            c.rules.set_local(local);
        }
    }

    /// Whether some rule matches an application (then flows need identification).
    pub fn uses_app(&self) -> bool {
        self.chains.iter().any(|c| c.rules.boxes().any(|b| !b.apps.is_empty()))
    }

    /// Its base chains, by hook and priority.
    pub fn chains(&self) -> &[BaseChain] {
        &self.chains
    }

    /// The name of a rule.
    pub fn rule_name(&self, r: RuleRef) -> &Arc<str> {
        self.chains[usize::from(r.chain)].entry_name(r.entry as usize)
    }

    /// How a rule's reject answers.
    pub fn reject_with(&self, r: RuleRef) -> RejectWith {
        self.chains[usize::from(r.chain)].reject.get(r.entry as usize).copied().unwrap_or_default()
    }

    /// Decides a packet at the hooks of its path: each hook's base chains in order, a drop or
    /// reject ending the walk. The deciding rule is the one that dropped or rejected it, else
    /// the last chain's (an accept, or the policy). `paths` receives every chain's path
    /// (entry, times), chain by chain.
    fn decide(
        &self,
        hooks: &[Hook],
        p: &FwPacket<'_>,
        paths: &mut Vec<Hit>,
        scratch: &mut Vec<(u32, u64)>,
    ) -> (Verdict, Option<RuleRef>) {
        paths.clear();
        let mut last = None;
        let family = IpFamily::of(&p.src);
        for (k, c) in self.chains.iter().enumerate() {
            if !(c.every_path || hooks.contains(&c.hook)) || c.family.is_some_and(|f| f != family) {
                continue;
            }
            let d = c.rules.evaluate_path(p, scratch);
            paths.extend(scratch.iter().map(|&(e, n)| (k as u16, e, n)));
            let rule = RuleRef { chain: k as u16, entry: d.entry as u32 };
            match d.verdict {
                Target::Accept => last = Some(rule),
                Target::Reject => return (Verdict::Reject, Some(rule)),
                _ => return (Verdict::Drop, Some(rule)),
            }
        }
        (Verdict::Accept, last)
    }
}

/// A verdict and the rule that gave it, packed in one word (the verdict in the low byte, the
/// rule's chain in the next two, its entry in the high four; [`NO_RULE`] there for none), so
/// that it travels in a register rather than through memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Decision(u64);

impl Decision {
    pub(crate) fn new(verdict: Verdict, rule: Option<RuleRef>) -> Self {
        let rule = rule.map_or(u64::from(NO_RULE) << 32, |r| {
            u64::from(r.chain) << 8 | u64::from(r.entry) << 32
        });
        Self(verdict as u64 | rule)
    }

    /// The verdict.
    #[inline]
    pub(crate) fn verdict(self) -> Verdict {
        match self.0 as u8 {
            0 => Verdict::Accept,
            1 => Verdict::Drop,
            _ => Verdict::Reject,
        }
    }

    /// The rule.
    #[inline]
    pub(crate) fn rule(self) -> Option<RuleRef> {
        let entry = (self.0 >> 32) as u32;
        (entry != NO_RULE).then_some(RuleRef { chain: (self.0 >> 8) as u16, entry })
    }
}

/// Interfaces, routes and the router's own addresses: where a packet goes.
#[derive(Clone, Debug, Default)]
pub struct Routes {
    /// Interface names; a frame's `interface` indexes them.
    pub names: Vec<String>,
    /// `(prefix, length, interface)`: the longest match on the destination picks the output.
    pub routes: Vec<(IpAddr, u8, u32)>,
    /// The router's own addresses: packets to them take the input hook.
    pub local: Vec<IpAddr>,
    /// Transparent bridges between pairs of ports (`rampart run`: ports 0 and 1, 2 and 3,
    /// ...): every packet takes the forward hook out of the other port of its pair, multicast
    /// and broadcast included, since no host stack sits between the ports to receive them.
    pub bridge: bool,
}

impl Routes {
    /// The output interface of a packet that came in on `iif` for `dst`: the longest route,
    /// else (with two interfaces) the other one; `None` when the packet is for the router
    /// itself (one of its addresses, or a multicast, broadcast or link-local destination).
    pub fn route(&self, iif: u32, dst: IpAddr) -> Option<u32> {
        if self.bridge {
            return Some(iif ^ 1);
        }
        let for_router = self.local.contains(&dst)
            || match dst {
                IpAddr::V4(a) => a.is_multicast() || a.is_broadcast() || a.is_link_local(),
                IpAddr::V6(a) => a.is_multicast() || a.segments()[0] & 0xffc0 == 0xfe80,
            };
        if for_router {
            return None;
        }
        let best = self
            .routes
            .iter()
            .filter(|(net, len, _)| prefix_contains(*net, *len, dst))
            .max_by_key(|(_, len, _)| *len);
        match best {
            Some(&(_, _, i)) => Some(i),
            None if self.names.len() == 2 => Some(1 - iif.min(1)),
            None => None,
        }
    }

    /// The name of interface `i`, or "" when it has none.
    pub fn name(&self, i: Option<u32>) -> &str {
        i.and_then(|i| self.names.get(i as usize)).map_or("", String::as_str)
    }
}

fn prefix_contains(net: IpAddr, len: u8, a: IpAddr) -> bool {
    net.is_ipv4() == a.is_ipv4() && masked(net, len) == masked(a, len)
}

/// Settings of the stateful data plane.
#[derive(Clone, Debug)]
pub struct StatefulConfig {
    /// Connection tracking's knobs and timeouts (Linux's defaults).
    pub ct: rampart_conntrack::Config,
    /// Where packets go.
    pub routes: Arc<Routes>,
    /// Cache each flow's decision (off only to check the cache against the rule set).
    pub cache: bool,
    /// The verdict for frames that are not IP (ARP, other EtherTypes and link types):
    /// dropped by default, as a router does not forward them; a bridge passes them. Frames
    /// whose IP header does not parse are dropped either way.
    pub non_ip: Verdict,
    /// Fail open when the connection table is full: a new connection's packet that finds no
    /// room is accepted untracked (its decision says [`Why::TableFull`]) instead of dropped,
    /// as NFQUEUE's `fail-open` and Suricata's `pass-packet` exception policy choose.
    pub fail_open: bool,
}

impl Default for StatefulConfig {
    fn default() -> Self {
        Self {
            ct: rampart_conntrack::Config::default(),
            routes: Arc::default(),
            cache: true,
            non_ip: Verdict::Drop,
            fail_open: false,
        }
    }
}

/// Why a packet was dropped whatever the rule set said, or why conntrack found it invalid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// Connection tracking found it invalid: Linux's reason, with the values its log message
    /// carries.
    Invalid(rampart_conntrack::Reason, rampart_conntrack::Detail),
    /// A new connection's packet that found the table full of connections that may not be
    /// pushed out: dropped, or accepted untracked when failing open.
    TableFull,
}

impl Why {
    /// Linux's wording (`SEQ is over upper bound 3560820216 (over the window of the
    /// receiver)`, `nf_conntrack: table full, dropping packet`).
    pub fn message(&self) -> std::borrow::Cow<'static, str> {
        match self {
            Why::Invalid(r, d) => r.message(d).into(),
            Why::TableFull => "table full, dropping packet".into(),
        }
    }
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}

/// What the data plane decided for one packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Decided {
    /// The verdict.
    pub verdict: Verdict,
    /// The rule that decided it (`None`: no rule set hook on its path, accepted).
    pub rule: Option<RuleRef>,
    /// Its `ct state` as the rules saw it (`None` for frames without a flow).
    pub ct: Option<CtState>,
    /// Linux's reason when conntrack found it invalid, with its values.
    pub reason: Option<Why>,
    /// The interface it came in on, and the one it goes out of (`None`: to the router).
    pub iif: u32,
    /// The output interface.
    pub oif: Option<u32>,
}

/// What the rule set is asked about one packet.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Query<'a> {
    /// The packet's flow key.
    pub(crate) key: &'a FlowKey,
    /// Which endpoint of the key sent it.
    pub(crate) side: Side,
    /// Its `ct state`.
    pub(crate) ct: CtState,
    /// Its TCP flags (0 for other protocols).
    pub(crate) tcp_flags: u8,
    /// ICMP type and code, for ICMP.
    pub(crate) icmp: Option<(u8, u8)>,
    /// The interface it came in on.
    pub(crate) iif: u32,
    /// The interface it goes out of (`None`: to the router).
    pub(crate) oif: Option<u32>,
    /// The flow's application, once decided.
    pub(crate) app: Option<rampart_dpi::Label>,
    /// Capture time, for rate limits.
    pub(crate) now: Timestamp,
}

/// A step of a packet's path: base chain, entry, and how many times it matched.
type Hit = (u16, u32, u64);

/// One direction's cached decision, and the packet's route (24 bytes, two per flow id).
#[derive(Clone, Copy, Debug)]
struct Cached {
    /// The verdict and the deciding rule.
    decision: Decision,
    /// The rule set generation it was made under (0: nothing cached).
    generation: u32,
    /// The packet's path through the chains: an index into the path table.
    path: u32,
    ct: u8,
    /// The TCP flags' class (see `RuleSet::flag_class`).
    flags: u8,
    /// ICMP type and code: rules see them in the port fields, and one address pair's flow
    /// carries every ICMP message that is not an echo.
    icmp: [u8; 2],
    /// [`HAS_ICMP`] and [`APP_KNOWN`].
    bits: u8,
    /// The input interface the route below was found for ([`NO_ROUTE`]: none found yet).
    route_iif: u8,
    /// That route's output interface ([`FOR_ROUTER`]: the packet is for the router).
    route_oif: u16,
}

const NO_RULE: u32 = u32::MAX;
const HAS_ICMP: u8 = 1;
const APP_KNOWN: u8 = 2;
const NO_ROUTE: u8 = u8::MAX;
const FOR_ROUTER: u16 = u16::MAX;

impl Default for Cached {
    fn default() -> Self {
        Self {
            decision: Decision::new(Verdict::Accept, None),
            generation: 0,
            path: 0,
            ct: 0,
            flags: 0,
            icmp: [0; 2],
            bits: 0,
            route_iif: NO_ROUTE,
            route_oif: FOR_ROUTER,
        }
    }
}

const _: () = assert!(std::mem::size_of::<Cached>() == 24);

impl Cached {
    /// What the cache key of a decision is, besides the generation and the ct state.
    fn key_bits(icmp: Option<(u8, u8)>, app_known: bool) -> ([u8; 2], u8) {
        let (icmp, has) = match icmp {
            Some((t, c)) => ([t, c], HAS_ICMP),
            None => ([0; 2], 0),
        };
        (icmp, has | if app_known { APP_KNOWN } else { 0 })
    }
}

/// The state of the stateful data plane beside one flow table.
pub struct Stateful {
    ct: Conntrack,
    rules: Arc<RuleSet>,
    generation: u32,
    cfg: StatefulConfig,
    /// Per flow id, per direction.
    cache: Vec<[Cached; 2]>,
    /// Distinct paths through the chains; cached decisions name one.
    paths: Vec<Vec<Hit>>,
    /// The path table's index (a fixed, fast hash: paths are few and not chosen by senders).
    path_index: std::collections::HashMap<Vec<Hit>, u32, foldhash::fast::FixedState>,
    /// Counters per base chain, per entry, of the packets the rule set was walked for.
    hits: Vec<Vec<u64>>,
    /// Per path: packets decided from a cached decision that took it (added to `hits` when
    /// the counters are read, so a cached packet costs one increment).
    path_packets: Vec<u64>,
    /// Per flow id: the last decision on the flow (for its record), with the generation of
    /// the rule set that made it.
    last: Vec<(Decision, u32)>,
    /// Rule sets replaced by reloads, by generation, to name the rules of older decisions.
    history: Vec<(u32, Arc<RuleSet>)>,
    scratch: (Vec<Hit>, Vec<(u32, u64)>),
    /// Connections that ended while their flow was being ended, for the flow's record.
    closed: Vec<(FlowId, CtSummary)>,
    /// The packet being inspected, as connection tracking sees it (kept, not built anew per
    /// packet).
    packet: rampart_conntrack::CtPacket,
    /// Packets decided from the cache, and by the rule set.
    pub(crate) cached: u64,
    pub(crate) evaluated: u64,
}

impl Stateful {
    /// A data plane deciding by `rules`.
    pub fn new(cfg: StatefulConfig, rules: Arc<RuleSet>) -> Self {
        let hits = rules.chains.iter().map(|c| vec![0; c.rules.entries().len()]).collect();
        Self {
            ct: Conntrack::new(cfg.ct),
            rules,
            generation: 1,
            cfg,
            cache: Vec::new(),
            paths: Vec::new(),
            path_index: Default::default(),
            hits,
            path_packets: Vec::new(),
            last: Vec::new(),
            history: Vec::new(),
            scratch: (Vec::new(), Vec::new()),
            closed: Vec::new(),
            packet: rampart_conntrack::CtPacket::default(),
            cached: 0,
            evaluated: 0,
        }
    }

    /// Replaces the rule set at once, keeping every connection (as `nft -f` does): each flow's
    /// next packet is decided by the new rules. The counters start again from zero.
    pub fn reload(&mut self, rules: Arc<RuleSet>) {
        self.hits = rules.chains.iter().map(|c| vec![0; c.rules.entries().len()]).collect();
        let old = std::mem::replace(&mut self.rules, rules);
        self.history.push((self.generation, old));
        // Older rule sets are kept only while a live flow's last decision names one of their
        // rules: a daemon reloaded a thousand times does not hold a thousand rule sets.
        let mut used: Vec<u32> = Vec::new();
        for &(_, g) in &self.last {
            if g != 0 && !used.contains(&g) {
                used.push(g);
            }
        }
        self.history.retain(|(g, _)| used.contains(g));
        self.generation = self.generation.wrapping_add(1).max(1);
        self.paths.clear();
        self.path_index.clear();
        self.path_packets.clear();
    }

    /// The rule set in force.
    pub fn rules(&self) -> &Arc<RuleSet> {
        &self.rules
    }

    /// Per base chain, per entry: packets that matched it (as netfilter counts).
    pub fn hits(&self) -> Vec<Vec<u64>> {
        let mut hits = self.hits.clone();
        for (path, &n) in self.paths.iter().zip(&self.path_packets) {
            for &(chain, e, times) in path {
                let h = &mut hits[usize::from(chain)][e as usize];
                *h = h.saturating_add(times.saturating_mul(n));
            }
        }
        hits
    }

    /// Connection tracking.
    pub fn conntrack(&self) -> &Conntrack {
        &self.ct
    }

    /// Connection tracking, to change.
    pub fn conntrack_mut(&mut self) -> &mut Conntrack {
        &mut self.ct
    }

    /// Hints the CPU to load flow `id`'s connection and cached decisions.
    #[inline]
    pub(crate) fn prefetch(&self, id: FlowId) {
        self.ct.prefetch(id);
        if let Some(c) = self.cache.get(id.0 as usize) {
            rampart_flow::prefetch(c);
        }
    }

    /// Whether a new connection that finds the table full is accepted untracked.
    pub fn fail_open(&self) -> bool {
        self.cfg.fail_open
    }

    /// The verdict for frames without a flow.
    pub fn non_ip(&self) -> Verdict {
        self.cfg.non_ip
    }

    /// Where packets go.
    pub fn routes(&self) -> &Routes {
        &self.cfg.routes
    }

    /// Packets decided from a flow's cached decision, and by walking the rule set.
    pub fn decided_counts(&self) -> (u64, u64) {
        (self.cached, self.evaluated)
    }

    /// The output interface of a packet of `flow` (its id and direction, `None` for a packet
    /// without an existing flow) that came in on `iif`, for the destination `dst` gives: the
    /// route is looked up once per flow direction and input interface, then remembered.
    #[inline]
    pub(crate) fn route(
        &mut self,
        flow: Option<(FlowId, rampart_flow::Dir)>,
        iif: u32,
        dst: impl FnOnce() -> Option<IpAddr>,
    ) -> Option<u32> {
        let slot = flow.map(|(id, dir)| {
            let i = id.0 as usize;
            if i >= self.cache.len() {
                self.cache.resize(i + 1, [Cached::default(); 2]);
            }
            &mut self.cache[i][dir as usize]
        });
        if let Some(c) = &slot
            && u32::from(c.route_iif) == iif
        {
            return (c.route_oif != FOR_ROUTER).then_some(u32::from(c.route_oif));
        }
        let oif = dst().and_then(|dst| self.cfg.routes.route(iif, dst));
        if let Some(c) = slot
            && let Ok(i) = u8::try_from(iif)
            && i != NO_ROUTE
            && oif.is_none_or(|o| o < u32::from(FOR_ROUTER))
        {
            c.route_iif = i;
            c.route_oif = oif.map_or(FOR_ROUTER, |o| o as u16);
        }
        oif
    }

    /// A query's cache key besides the generation and the `ct state`: the TCP flags' class,
    /// the ICMP type and code, and the [`HAS_ICMP`] and [`APP_KNOWN`] bits.
    #[inline]
    fn cache_key(&self, q: &Query<'_>) -> (u8, [u8; 2], u8) {
        let flags = match &self.rules.flag_class {
            Some(class) if q.key.proto() == 6 => class[usize::from(q.tcp_flags)],
            _ => 0,
        };
        let (icmp, bits) = Cached::key_bits(q.icmp, q.app.is_some());
        (flags, icmp, bits)
    }

    /// The verdict for a packet whose `ct state` is known: from the flow's cache when it is
    /// still good, else by the rule set (and cached). `flow` names the cache slot (the flow
    /// and the packet's direction in it; `None` for a packet without an existing flow).
    #[inline]
    pub(crate) fn verdict(
        &mut self,
        flow: Option<(FlowId, rampart_flow::Dir)>,
        q: &Query<'_>,
    ) -> Decision {
        let (flags, icmp, bits) = self.cache_key(q);
        // A `-m limit` rule's answer changes with time: such rule sets are walked every time.
        let cacheable = self.cfg.cache && !self.rules.limits;
        if let Some((id, dir)) = flow
            && cacheable
            && let Some(c) = self.cache.get(id.0 as usize).map(|c| &c[dir as usize])
            && c.generation == self.generation
            && c.ct == q.ct as u8
            && c.flags == flags
            && c.icmp == icmp
            && c.bits & (HAS_ICMP | APP_KNOWN) == bits
        {
            self.path_packets[c.path as usize] += 1;
            self.cached += 1;
            return c.decision;
        }
        self.walk(flow.filter(|_| cacheable), q)
    }

    /// [`Stateful::verdict`] by the rule set, cached in `flow`'s slot when given.
    #[cold]
    #[inline(never)]
    fn walk(&mut self, flow: Option<(FlowId, rampart_flow::Dir)>, q: &Query<'_>) -> Decision {
        self.evaluated += 1;
        let (flags, icmp_key, bits) = self.cache_key(q);
        let Query { key: k, side, ct, tcp_flags, icmp, iif, oif, app, now } = *q;
        let (src, dst, sport, dport) = match side {
            Side::A => (k.addr_a(), k.addr_b(), k.port_a(), k.port_b()),
            Side::B => (k.addr_b(), k.addr_a(), k.port_b(), k.port_a()),
        };
        // ICMP type and code take the port fields, as the rule model lowers them.
        let (sport, dport) = match (k.kind(), icmp) {
            (KeyKind::Ports, _) => (sport, dport),
            (_, Some((t, c))) => (u16::from(t), u16::from(c)),
            _ => (0, 0),
        };
        let routes = &self.cfg.routes;
        // The names the application answers to: its protocol and, when known, the
        // application (`TLS` and `YouTube`).
        let mut names = [""; 2];
        let mut n = 0;
        if let Some(l) = app {
            if l.master != rampart_dpi::Proto::Unknown {
                names[n] = l.master.name();
                n += 1;
            }
            if let Some(a) = l.app {
                names[n] = a;
                n += 1;
            }
        }
        let app = &names[..n];
        let p = FwPacket {
            src,
            dst,
            sport,
            dport,
            proto: k.proto(),
            iif: routes.name(Some(iif)),
            oif: routes.name(oif),
            ct: Some(rule_ct(ct)),
            tcp_flags,
            app,
            time: now.as_nanos(),
        };
        let hooks: &[Hook] = if oif.is_some() {
            &[Hook::Prerouting, Hook::Forward, Hook::Postrouting]
        } else {
            &[Hook::Prerouting, Hook::Input]
        };
        let (paths, scratch) = (&mut self.scratch.0, &mut self.scratch.1);
        let (verdict, rule) = self.rules.decide(hooks, &p, paths, scratch);
        for &(chain, e, n) in paths.iter() {
            let h = &mut self.hits[usize::from(chain)][e as usize];
            *h = h.saturating_add(n);
        }
        if let Some((id, dir)) = flow {
            let path = match self.path_index.get(paths.as_slice()) {
                Some(&i) => i,
                None => {
                    let i = self.paths.len() as u32;
                    self.paths.push(paths.clone());
                    self.path_packets.push(0);
                    self.path_index.insert(paths.clone(), i);
                    i
                }
            };
            let i = id.0 as usize;
            if i >= self.cache.len() {
                self.cache.resize(i + 1, [Cached::default(); 2]);
            }
            let c = &mut self.cache[i][dir as usize];
            *c = Cached {
                decision: Decision::new(verdict, rule),
                generation: self.generation,
                path,
                ct: ct as u8,
                flags,
                icmp: icmp_key,
                bits,
                ..*c
            };
        }
        Decision::new(verdict, rule)
    }

    /// Looks at a packet, parsed into `meta` from `frame`, with connection tracking (see
    /// [`Conntrack::inspect`]).
    #[inline]
    pub(crate) fn inspect(
        &mut self,
        found: Option<FlowId>,
        side: Side,
        meta: &rampart_wire::PacketMeta,
        frame: &[u8],
        now: Timestamp,
        quoted: impl FnOnce(&FlowKey, Side) -> Option<FlowId>,
    ) -> Inspection {
        self.packet.fill(meta, frame, self.ct.config().checksum);
        self.ct.inspect(found, side, &self.packet, now, quoted)
    }

    /// Notes the last decision on flow `id`, for its record.
    pub(crate) fn note(&mut self, id: FlowId, decision: Decision) {
        let i = id.0 as usize;
        if i >= self.last.len() {
            self.last.resize(i + 1, (Decision::new(Verdict::Accept, None), 0));
        }
        self.last[i] = (decision, self.generation);
    }

    /// The connection of flow `id` ended (its summary given) and the flow is being ended.
    pub(crate) fn closed(&mut self, id: FlowId, summary: CtSummary) {
        self.closed.push((id, summary));
    }

    /// The flow `id` ended in the flow table: its cache is cleared, and its connection's
    /// summary (an evicted flow counts as an early drop) and its last decision returned.
    pub(crate) fn retire(&mut self, id: FlowId, evicted: bool) -> Retired {
        if let Some(c) = self.cache.get_mut(id.0 as usize) {
            *c = Default::default();
        }
        let ct = if evicted { self.ct.early_drop(id) } else { self.ct.retire(id) };
        let ct = ct.or_else(|| {
            let at = self.closed.iter().position(|c| c.0 == id)?;
            Some(self.closed.swap_remove(at).1)
        });
        let last = self
            .last
            .get_mut(id.0 as usize)
            .map(|l| std::mem::replace(l, (Decision::new(Verdict::Accept, None), 0)));
        Retired { ct, decided: self.named(last) }
    }

    /// The live flow `id`'s connection and last decision so far, kept (for an interim
    /// record).
    pub(crate) fn current(&self, id: FlowId) -> Retired {
        let ct =
            self.ct.summary(id).or_else(|| self.closed.iter().find(|c| c.0 == id).map(|c| c.1));
        Retired { ct, decided: self.named(self.last.get(id.0 as usize).copied()) }
    }

    /// A flow's last decision (and the generation of the rules that made it; 0 for none),
    /// with the rule's name.
    fn named(&self, last: Option<(Decision, u32)>) -> Option<(Verdict, Option<Arc<str>>)> {
        last.filter(|l| l.1 != 0).map(|(decision, generation)| {
            let (verdict, rule) = (decision.verdict(), decision.rule());
            let rules = if generation == self.generation {
                Some(&self.rules)
            } else {
                self.history.iter().find(|(g, _)| *g == generation).map(|(_, r)| r)
            };
            let name = rule.zip(rules).map(|(r, rs)| Arc::clone(rs.rule_name(r)));
            (verdict, name)
        })
    }

    /// Bytes held: connection state and the cache.
    pub fn memory_bytes(&self) -> usize {
        self.ct.memory_bytes() + self.cache.capacity() * std::mem::size_of::<[Cached; 2]>()
    }
}

/// What the data plane knew of a flow when it ended.
#[derive(Clone, Debug, Default)]
pub(crate) struct Retired {
    /// Its connection, if it had an entry.
    pub(crate) ct: Option<CtSummary>,
    /// The last decision on it and the rule that made it.
    pub(crate) decided: Option<(Verdict, Option<Arc<str>>)>,
}

/// The rule model's name for a `ct state`.
fn rule_ct(s: CtState) -> RuleCt {
    match s {
        CtState::New => RuleCt::New,
        CtState::Established => RuleCt::Established,
        CtState::Related => RuleCt::Related,
        CtState::Invalid => RuleCt::Invalid,
        CtState::Untracked => RuleCt::Untracked,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rampart_conntrack::Refresh;
    use rampart_wire::Span;

    #[test]
    fn routes_pick_the_longest_prefix_or_the_other_port() {
        let two = Routes { names: vec!["r0".into(), "r1".into()], ..Routes::default() };
        let a: IpAddr = "10.66.2.2".parse().unwrap();
        assert_eq!((two.route(0, a), two.route(1, a)), (Some(1), Some(0)));
        assert_eq!(two.route(0, "224.0.0.1".parse().unwrap()), None, "multicast: the router's");
        assert_eq!(two.route(0, "ff02::1".parse().unwrap()), None);
        assert_eq!(two.route(0, "fe80::1".parse().unwrap()), None);
        let three = Routes {
            names: vec!["a".into(), "b".into(), "c".into()],
            routes: vec![
                ("10.0.0.0".parse().unwrap(), 8, 1),
                ("10.66.0.0".parse().unwrap(), 16, 2),
            ],
            local: vec!["10.66.1.1".parse().unwrap()],
            bridge: false,
        };
        assert_eq!(three.route(0, "10.66.9.9".parse().unwrap()), Some(2));
        assert_eq!(three.route(0, "10.1.2.3".parse().unwrap()), Some(1));
        assert_eq!(three.route(0, "192.0.2.1".parse().unwrap()), None, "no route, three ports");
        assert_eq!(three.route(1, "10.66.1.1".parse().unwrap()), None, "the router's address");
        // A bridge has no stack of its own: everything crosses, multicast too.
        let bridge = Routes { bridge: true, ..two };
        for d in ["224.0.0.1", "ff02::1", "fe80::1", "10.66.2.2", "255.255.255.255"] {
            let d: IpAddr = d.parse().unwrap();
            assert_eq!((bridge.route(0, d), bridge.route(1, d)), (Some(1), Some(0)), "{d}");
        }
    }

    #[test]
    fn a_lowered_deadline_moves_only_a_long_one() {
        let s = Span::from_secs;
        let at = |n| Timestamp::EPOCH + s(n);
        let zero = Timestamp::EPOCH;
        assert_eq!(Refresh::Set(s(30)).timeout(zero, || Some(at(5))), Some(s(30)));
        assert_eq!(Refresh::Keep.timeout(zero, || Some(at(5))), None);
        assert_eq!(Refresh::Lower(s(120)).timeout(zero, || Some(at(432_000))), Some(s(120)));
        assert_eq!(Refresh::Lower(s(120)).timeout(zero, || Some(at(60))), None);
    }
}
