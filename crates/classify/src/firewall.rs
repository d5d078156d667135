//! Firewall rule sets (`iptables-save`, rampart syntax) lowered onto the compiled classifier.
//!
//! Chains stay chains: each chain a packet can reach is compiled once, on its own rules'
//! conditions, and a jump is a reference to that compiled body. Lowering therefore costs what
//! the file holds, however many jump paths lead to a chain. Each rule becomes one or more
//! boxes over [`FW`] fields (family, source and destination address as four 32-bit words
//! each, ports, protocol, input and output interface): negations and port lists are unions,
//! so a rule can need several boxes, all pointing back to it. Conditions that are not ranges
//! (IP sets, connection state, TCP flags) are checked when a box matches.
//!
//! A packet walks the chains as netfilter does (first matching rule; a jump enters the
//! chain and comes back after its end or a `RETURN`; a goto does not come back; the entered
//! chain's policy when it falls off the end), except that a chain entered a second time by
//! the same packet is not walked again: its outcome is the same, so it is remembered, and the
//! counters it would add are added by multiplying. A packet's cost is bounded by the rules,
//! not by the paths through the chains.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::compiled::{Compiled, Options};
use crate::ipset::IpSet;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::iptables::{
    AddrType, ByteSet, ChainError, CtState, IptRule, Key, Limit, Net, RejectWith, Ruleset, Target,
    Value,
};
use crate::rule::{Header, Rule};

/// Fields of a firewall header: family, source words 0-3, destination words 0-3, source port,
/// destination port, protocol, input interface, output interface.
pub const FW: usize = 14;
/// Field: address family (4 or 6).
pub const FAMILY: usize = 0;
/// Field: the source address's first 32-bit word (words 1-3 follow; zero for IPv4).
pub const SRC: usize = 1;
/// Field: the destination address's first word.
pub const DST: usize = 5;
/// Field: source port.
pub const SPORT: usize = 9;
/// Field: destination port.
pub const DPORT: usize = 10;
/// Field: IP protocol.
pub const PROTO: usize = 11;
/// Field: input interface, as its rank among the rule set's names ([`Firewall::iface`]).
pub const IIF: usize = 12;
/// Field: output interface, ranked the same way.
pub const OIF: usize = 13;

/// One box of a lowered rule set with the conditions checked beside it, for tools that
/// reason about the rules rather than run them (the policy verifier).
#[derive(Clone, Debug)]
pub struct LoweredBox<'a> {
    /// The entry (in [`Firewall::entries`]) the box belongs to.
    pub entry: usize,
    /// The ranges over the [`FW`] fields.
    pub bounds: Rule<FW>,
    /// Sets the source address must be in (all of them), or with `true` must not be in.
    pub src_sets: Vec<(&'a IpSet, bool)>,
    /// Sets the destination address must be in, or not be in.
    pub dst_sets: Vec<(&'a IpSet, bool)>,
    /// Connection states: the state must be in each list.
    pub ct: &'a [Vec<CtState>],
    /// Applications: the flow's application must be in each list.
    pub apps: Vec<&'a [String]>,
    /// Flag bytes the TCP flags must be among (each of them).
    pub tcp_flags: &'a [ByteSet],
    /// `-m limit`: the box matches only while its rule's bucket has a token.
    pub limit: Option<Limit>,
    /// `-m addrtype`: the source and destination address types allowed (negated with
    /// `true`).
    pub addr_types: [Option<&'a (Vec<AddrType>, bool)>; 2],
}

/// A packet as the firewall sees it.
#[derive(Clone, Debug)]
pub struct Packet<'a> {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Source port (0 when the protocol has none); for ICMP and ICMPv6, the type.
    pub sport: u16,
    /// Destination port; for ICMP and ICMPv6, the code.
    pub dport: u16,
    /// IP protocol.
    pub proto: u8,
    /// Input interface (empty when unknown, as for a capture file).
    pub iif: &'a str,
    /// Output interface.
    pub oif: &'a str,
    /// Connection state, once connection tracking provides it.
    pub ct: Option<CtState>,
    /// TCP flags (0 for other protocols).
    pub tcp_flags: u8,
    /// The names the flow's application answers to (a label `TLS.YouTube` answers to `TLS`
    /// and `YouTube`), once identification has decided it; empty before, so an `app` rule
    /// matches no packet of an undecided flow.
    pub app: &'a [&'a str],
    /// Capture time (ns), for `-m limit` rules' token buckets.
    pub time: u64,
}

/// What decided a packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The verdict.
    pub verdict: Target,
    /// Index of the deciding entry in [`Firewall::entries`] (the last entry is the policy).
    pub entry: usize,
}

/// Why a rule set could not be lowered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FirewallError {
    /// No such chain, or jumps loop.
    #[error("{0}")]
    Chain(#[from] ChainError),
    /// A rule names a set that was not given.
    #[error("rule {rule} uses set {set}, which is not defined")]
    Set {
        /// The rule.
        rule: String,
        /// The set.
        set: String,
    },
}

/// What a rule of a lowered rule set does when it matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// A verdict: `Accept`, `Drop` or `Reject`.
    Verdict(Target),
    /// Enter chain k (an index into [`Firewall::chains`]) and come back after it.
    Jump(usize),
    /// Go to chain k in place of this one.
    Goto(usize),
    /// Leave this chain (back to where it was jumped from).
    Return,
    /// Count only, and go on.
    Continue,
}

/// A rule of a lowered rule set (or, last, the entered chain's policy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// `CHAIN:N`, or `CHAIN:policy` for the last entry.
    pub name: String,
    /// Its line in the rule file (0 for the policy).
    pub line: usize,
    /// The chain it belongs to (an index into [`Firewall::chains`]).
    pub chain: usize,
    /// What it does.
    pub action: Action,
    /// For a `Reject`: how the sender is told.
    pub reject: Option<RejectWith>,
    /// Whether it logs (it then also counts and goes on, unless it decides).
    pub log: bool,
    /// Its comment.
    pub comment: Option<String>,
}

/// One chain of a lowered rule set: its rules and their compiled boxes.
#[derive(Clone, Debug)]
pub struct LoweredChain {
    /// Its name.
    pub name: String,
    /// Its rules: a range of [`Firewall::entries`].
    pub entries: std::ops::Range<usize>,
    compiled: Compiled<FW>,
    /// Per box: its entry, and its extra conditions.
    entry_of: Vec<u32>,
    checks: Vec<Checks>,
}

impl LoweredChain {
    /// The compiled structure over this chain's boxes.
    pub fn compiled(&self) -> &Compiled<FW> {
        &self.compiled
    }

    /// The boxes, in the order they were compiled (box `i` is rule `i` of
    /// [`LoweredChain::compiled`]).
    pub fn boxes(&self) -> Vec<Rule<FW>> {
        (0..self.entry_of.len())
            .map(|i| self.compiled.rule(i).unwrap_or(Rule { lo: [0; FW], hi: [0; FW] }))
            .collect()
    }
}

/// Interface names mapped to numbers in name order, so that a `+` wildcard is a range.
#[derive(Clone, Debug, Default)]
struct Names(Vec<String>);

impl Names {
    fn rank(&self, s: &str) -> u32 {
        match self.0.binary_search_by(|k| k.as_str().cmp(s)) {
            Ok(i) => 2 * i as u32 + 1,
            Err(i) => 2 * i as u32,
        }
    }

    /// The ranks a name (a trailing `+` matches any suffix) covers.
    fn range(&self, name: &str) -> (u32, u32) {
        match name.strip_suffix('+') {
            Some("") => (0, u32::MAX),
            Some(prefix) => (self.rank(prefix), self.rank(&successor(prefix)) - 1),
            None => (self.rank(name), self.rank(name)),
        }
    }

    /// The ranges an `-i`/`-o` match (any of its names, with negation) covers.
    fn ranges(&self, names: &[String], not: bool) -> Vec<(u32, u32)> {
        let any = union(names.iter().map(|n| self.range(n)).collect());
        if not { complement_all(&any, u32::MAX) } else { any }
    }
}

/// The smallest string above every string starting with `p`.
fn successor(p: &str) -> String {
    let mut s: Vec<char> = p.chars().collect();
    while let Some(c) = s.pop() {
        if let Some(n) = char::from_u32(c as u32 + 1) {
            s.push(n);
            return s.into_iter().collect();
        }
    }
    "\u{10ffff}\u{10ffff}".into()
}

fn complement((lo, hi): (u32, u32), max: u32) -> Vec<(u32, u32)> {
    let mut v = Vec::new();
    if lo > 0 {
        v.push((0, lo - 1));
    }
    if hi < max {
        v.push((hi + 1, max));
    }
    v
}

/// Ranges sorted and merged where they touch or overlap.
fn union(mut v: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    v.sort_unstable();
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(v.len());
    for (lo, hi) in v {
        match out.last_mut() {
            Some(last) if u64::from(lo) <= u64::from(last.1) + 1 => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// The values of `0..=max` in none of the ranges.
fn complement_all(v: &[(u32, u32)], max: u32) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut next = 0u64;
    for &(lo, hi) in &union(v.to_vec()) {
        if u64::from(lo) > next {
            out.push((next as u32, lo - 1));
        }
        next = next.max(u64::from(hi) + 1);
    }
    if next <= u64::from(max) {
        out.push((next as u32, max));
    }
    out
}

/// Ranges over an address's four 32-bit words.
type AddrBox = [(u32, u32); 4];

/// The boxes over the eight address words one address match allows (family decided by the
/// caller): a prefix is one box, its complement up to two per constrained word.
fn address_boxes(n: &Net) -> Vec<AddrBox> {
    let (words, len): ([u32; 4], u32) = match n.addr {
        IpAddr::V4(v) => ([u32::from(v), 0, 0, 0], u32::from(n.len)),
        IpAddr::V6(v) => {
            let x = u128::from(v);
            ([(x >> 96) as u32, (x >> 64) as u32, (x >> 32) as u32, x as u32], u32::from(n.len))
        }
    };
    let v4 = n.addr.is_ipv4();
    let word_range = |i: usize| -> (u32, u32) {
        let bits = len.saturating_sub(32 * i as u32).min(32);
        if v4 && i > 0 {
            return (0, 0);
        }
        if bits == 0 {
            (0, u32::MAX)
        } else {
            let m = u32::MAX << (32 - bits);
            (words[i] & m, (words[i] & m) | !m)
        }
    };
    let full: [(u32, u32); 4] = std::array::from_fn(word_range);
    if !n.not {
        return vec![full];
    }
    // Not in the prefix: equal on the words before i, outside the prefix's range on word i.
    let mut out = Vec::new();
    let used = if v4 { 1 } else { 4 };
    for i in 0..used {
        if full[i] == (0, u32::MAX) {
            break;
        }
        for r in complement(full[i], u32::MAX) {
            let mut b: [(u32, u32); 4] =
                std::array::from_fn(|k| if v4 && k > 0 { (0, 0) } else { (0, u32::MAX) });
            b[..i].copy_from_slice(&full[..i]);
            b[i] = r;
            out.push(b);
        }
    }
    out
}

/// Non-range conditions of one box.
#[derive(Clone, Debug, Default)]
struct Checks {
    /// Sets the address must be in (or, with `true`, not be in).
    src_sets: Vec<(usize, bool)>,
    dst_sets: Vec<(usize, bool)>,
    ct: Vec<Vec<CtState>>,
    /// Application names (one must match the flow's application, ignoring case).
    apps: Vec<String>,
    /// The flag bytes allowed.
    flags: Vec<ByteSet>,
    /// The rule's token bucket (an index into the firewall's buckets).
    limit: Option<u32>,
    /// Address types allowed for the source and destination, negated with `true`.
    types: [Option<(Vec<AddrType>, bool)>; 2],
}

impl Checks {
    fn is_empty(&self) -> bool {
        self.src_sets.is_empty()
            && self.dst_sets.is_empty()
            && self.ct.is_empty()
            && self.apps.is_empty()
            && self.flags.is_empty()
            && self.limit.is_none()
            && self.types.iter().all(Option::is_none)
    }
}

/// A rule set ready to evaluate packets.
#[derive(Clone, Debug)]
pub struct Firewall {
    /// Every rule of every chain the entered chain reaches, chain by chain, then the policy.
    entries: Vec<Entry>,
    /// Those chains, the entered one first.
    chains: Vec<LoweredChain>,
    sets: Vec<IpSet>,
    names: Names,
    /// The `-m limit` rules' token buckets, one per rule.
    buckets: Vec<Bucket>,
    /// The host's addresses, for `-m addrtype LOCAL`.
    local: Vec<IpAddr>,
}

/// A `-m limit` rule's token bucket, in nanoseconds of credit and capture time. Atomics, so a
/// rule set shared between threads stays `Sync`; the data plane that takes tokens runs a
/// rule set on one thread.
#[derive(Debug)]
struct Bucket {
    spec: Limit,
    /// Credit (ns): a packet takes `interval_ns` of it.
    credit: AtomicU64,
    /// The capture time credit was last added at (0: never).
    prev: AtomicU64,
}

impl Bucket {
    fn new(spec: Limit) -> Self {
        let cap = spec.interval_ns.saturating_mul(u64::from(spec.burst));
        Bucket { spec, credit: AtomicU64::new(cap), prev: AtomicU64::new(0) }
    }

    /// Whether a packet at `now` finds a token (and takes it): credit grows with the time
    /// since the last packet, up to the burst, as xt_limit's does.
    fn take(&self, now: u64) -> bool {
        let cap = self.spec.interval_ns.saturating_mul(u64::from(self.spec.burst));
        let prev = self.prev.swap(now, Ordering::Relaxed);
        let gained = if prev == 0 { 0 } else { now.saturating_sub(prev) };
        let mut credit = self.credit.load(Ordering::Relaxed).saturating_add(gained).min(cap);
        let ok = credit >= self.spec.interval_ns;
        if ok {
            credit -= self.spec.interval_ns;
        }
        self.credit.store(credit, Ordering::Relaxed);
        ok
    }
}

impl Clone for Bucket {
    /// A copy with its own state, as it is now.
    fn clone(&self) -> Self {
        Bucket {
            spec: self.spec,
            credit: AtomicU64::new(self.credit.load(Ordering::Relaxed)),
            prev: AtomicU64::new(self.prev.load(Ordering::Relaxed)),
        }
    }
}

/// A chain being walked.
#[derive(Clone, Copy)]
struct Frame {
    /// Its walk (the run its matches are counted in).
    run: u32,
    chain: usize,
    /// The next entry to consider.
    pos: usize,
    /// Where its chains (the first, then each goto's) start in [`Walk::chains`].
    chains: usize,
}

/// The working memory of a walk, kept per thread so a packet's walk allocates nothing once
/// it has grown.
#[derive(Default)]
struct Walk {
    stack: Vec<Frame>,
    /// The chains of the frames on the stack, frame after frame.
    chains: Vec<usize>,
    /// Chains known to return for this packet, and the walk that found it out.
    returns: Vec<(usize, u32)>,
    /// Walks in the order they completed.
    done: Vec<u32>,
    /// Walks started.
    runs: u32,
    /// (walk, entry) for each entry a walk matched itself.
    hits: Vec<(u32, u32)>,
    /// (walk, walk it jumped into), new or remembered from an earlier jump.
    calls: Vec<(u32, u32)>,
    times: Vec<u64>,
}

impl Walk {
    fn clear(&mut self) {
        self.stack.clear();
        self.chains.clear();
        self.returns.clear();
        self.done.clear();
        self.runs = 0;
        self.hits.clear();
        self.calls.clear();
    }
}

thread_local! {
    static WALK: std::cell::RefCell<Walk> = std::cell::RefCell::new(Walk::default());
}

impl Firewall {
    /// Lowers chain `chain` of a rule set and every chain it reaches; `sets` are the IP sets
    /// its rules may name.
    pub fn from_iptables(
        rs: &Ruleset,
        chain: &str,
        sets: &HashMap<String, IpSet>,
    ) -> Result<Self, FirewallError> {
        Self::from_iptables_with_names(rs, chain, sets, &[])
    }

    /// The interface names the chains reachable from `chain` mention (a `+` wildcard as its
    /// prefix and the prefix's successor), sorted: what interface ranks are made of.
    pub fn interface_names(rs: &Ruleset, chain: &str) -> Result<Vec<String>, FirewallError> {
        let order = rs.reachable(chain)?;
        let mut names: Vec<String> = Vec::new();
        for r in order.iter().flat_map(|&c| &rs.chains[c].rules) {
            let in_tuples = r.tuples.iter().flat_map(|t| {
                t.elems.iter().flat_map(|e| {
                    e.iter().filter_map(|v| match v {
                        Value::Iface(n) => Some(n),
                        _ => None,
                    })
                })
            });
            for n in r.iif.iter().chain(&r.oif).flat_map(|(v, _)| v).chain(in_tuples) {
                match n.strip_suffix('+') {
                    Some(p) => {
                        names.push(p.to_string());
                        names.push(successor(p));
                    }
                    None => names.push(n.clone()),
                }
            }
        }
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// [`Firewall::from_iptables`] with interface ranks over these names too, so that two
    /// rule sets lowered with each other's names rank interfaces alike.
    pub fn from_iptables_with_names(
        rs: &Ruleset,
        chain: &str,
        sets: &HashMap<String, IpSet>,
        extra_names: &[String],
    ) -> Result<Self, FirewallError> {
        let order = rs.reachable(chain)?;
        let mut names = Self::interface_names(rs, chain)?;
        names.extend_from_slice(extra_names);
        names.sort();
        names.dedup();
        let names = Names(names);
        let position: HashMap<&str, usize> =
            order.iter().enumerate().map(|(k, &c)| (rs.chains[c].name.as_str(), k)).collect();
        let mut entries = Vec::new();
        for (k, &c) in order.iter().enumerate() {
            for r in &rs.chains[c].rules {
                let action = match &r.target {
                    None => Action::Continue,
                    Some(Target::Return) => Action::Return,
                    Some(Target::Jump(j)) => Action::Jump(position[j.as_str()]),
                    Some(Target::Goto(j)) => Action::Goto(position[j.as_str()]),
                    Some(t) => Action::Verdict(t.clone()),
                };
                entries.push(Entry {
                    name: r.name.clone(),
                    line: r.line,
                    chain: k,
                    action,
                    reject: r.reject.filter(|_| r.target == Some(Target::Reject)),
                    log: r.log.is_some(),
                    comment: r.comment.clone(),
                });
            }
        }
        let policy = rs.chains[order[0]].policy.clone().unwrap_or(Target::Accept);
        entries.push(Entry {
            name: format!("{chain}:policy"),
            line: 0,
            chain: 0,
            action: Action::Verdict(policy),
            reject: None,
            log: false,
            comment: None,
        });
        let mut set_index: HashMap<&str, usize> = HashMap::new();
        let mut set_list = Vec::new();
        let mut buckets = Vec::new();
        let mut chains = Vec::new();
        let mut next = 0usize;
        for (k, &c) in order.iter().enumerate() {
            let rules = &rs.chains[c].rules;
            let range = next..next + rules.len();
            next = range.end;
            let mut boxes: Vec<Rule<FW>> = Vec::new();
            let mut entry_of = Vec::new();
            let mut checks = Vec::new();
            for (ei, r) in range.clone().zip(rules) {
                let mut ch = Checks::default();
                for (set, list) in [(&r.src_set, &mut ch.src_sets), (&r.dst_set, &mut ch.dst_sets)]
                {
                    if let Some((name, not)) = set {
                        let s = sets.get(name).ok_or_else(|| FirewallError::Set {
                            rule: r.name.clone(),
                            set: name.clone(),
                        })?;
                        let fresh = set_list.len();
                        let i = *set_index.entry(name.as_str()).or_insert(fresh);
                        if i == fresh {
                            set_list.push(s.clone());
                        }
                        list.push((i, *not));
                    }
                }
                ch.ct.extend(r.ct.clone());
                ch.apps.clone_from(&r.app);
                ch.flags.extend(r.tcp_flags);
                if let Some(l) = r.limit {
                    ch.limit = Some(buckets.len() as u32);
                    buckets.push(Bucket::new(l));
                }
                ch.types = [r.src_type.clone(), r.dst_type.clone()];
                for b in lower(r, &names) {
                    boxes.push(b);
                    entry_of.push(ei as u32);
                    checks.push(ch.clone());
                }
            }
            // Boxes with conditions, and boxes that do not decide, never hide later ones.
            let opaque = (0..boxes.len())
                .map(|i| {
                    !checks[i].is_empty()
                        || !matches!(entries[entry_of[i] as usize].action, Action::Verdict(_))
                })
                .collect();
            // A tree for every partition: bit vectors over these 14 fields, each ranked on the
            // scalar path of `classify_live`, cost a new connection 40-60 ns more than the tree
            // behind 3, 40 or 200 rules wide in both addresses (`BENCHMARKS.md`).
            let options = Options { partition: [SRC, DST], opaque, bit_vectors: false };
            let compiled = Compiled::with_options(&boxes, &options);
            chains.push(LoweredChain {
                name: rs.chains[c].name.clone(),
                entries: range,
                compiled,
                entry_of,
                checks,
            });
            debug_assert_eq!(chains.len(), k + 1);
        }
        Ok(Self { entries, chains, sets: set_list, names, buckets, local: Vec::new() })
    }

    /// The host's own addresses, for `-m addrtype` rules (`LOCAL`); none by default.
    pub fn set_local(&mut self, local: &[IpAddr]) {
        self.local = local.to_vec();
    }

    /// Whether some rule has a `-m limit` bucket (its decisions then depend on time).
    pub fn has_limits(&self) -> bool {
        !self.buckets.is_empty()
    }

    /// The chains, the entered one first, then the others it reaches in file order.
    pub fn chains(&self) -> &[LoweredChain] {
        &self.chains
    }

    /// The lowered boxes, chain by chain, with their conditions.
    pub fn boxes(&self) -> impl Iterator<Item = LoweredBox<'_>> {
        self.chains.iter().flat_map(move |c| {
            (0..c.entry_of.len()).map(move |i| {
                let ch = &c.checks[i];
                LoweredBox {
                    entry: c.entry_of[i] as usize,
                    bounds: c.compiled.rule(i).unwrap_or(Rule { lo: [0; FW], hi: [0; FW] }),
                    src_sets: ch.src_sets.iter().map(|&(k, not)| (&self.sets[k], not)).collect(),
                    dst_sets: ch.dst_sets.iter().map(|&(k, not)| (&self.sets[k], not)).collect(),
                    ct: &ch.ct,
                    apps: if ch.apps.is_empty() { Vec::new() } else { vec![ch.apps.as_slice()] },
                    tcp_flags: &ch.flags,
                    limit: ch.limit.map(|k| self.buckets[k as usize].spec),
                    addr_types: [ch.types[0].as_ref(), ch.types[1].as_ref()],
                }
            })
        })
    }

    /// The interface names ranked: name k has rank 2k + 1; rank 2k stands for any name
    /// between names k - 1 and k.
    pub fn iface_names(&self) -> &[String] {
        &self.names.0
    }

    /// The rank interface `name` gets in the [`IIF`] and [`OIF`] fields.
    pub fn iface(&self, name: &str) -> u32 {
        self.names.rank(name)
    }

    /// Sizes of the compiled structures, summed over the chains (boxes count as rules).
    pub fn stats(&self) -> crate::CompiledStats {
        let mut t = crate::CompiledStats::default();
        for c in &self.chains {
            let s = c.compiled.stats();
            t.rules += s.rules;
            t.partitions += s.partitions;
            t.nodes += s.nodes;
            t.leaf_entries += s.leaf_entries;
            t.depth = t.depth.max(s.depth);
            t.bytes += s.bytes;
        }
        t
    }

    /// The rules, chain by chain in [`Firewall::chains`] order; the last entry is the
    /// entered chain's policy.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The header of a packet in the compiled fields.
    fn header(&self, p: &Packet<'_>) -> Option<Header<FW>> {
        let mut h = [0u32; FW];
        let put = |h: &mut [u32; FW], at: usize, a: IpAddr| match a {
            IpAddr::V4(v) => h[at] = u32::from(v),
            IpAddr::V6(v) => {
                let x = u128::from(v);
                h[at..at + 4].copy_from_slice(&[
                    (x >> 96) as u32,
                    (x >> 64) as u32,
                    (x >> 32) as u32,
                    x as u32,
                ]);
            }
        };
        if p.src.is_ipv4() != p.dst.is_ipv4() {
            return None;
        }
        h[FAMILY] = if p.src.is_ipv4() { 4 } else { 6 };
        put(&mut h, SRC, p.src);
        put(&mut h, DST, p.dst);
        h[SPORT] = u32::from(p.sport);
        h[DPORT] = u32::from(p.dport);
        h[PROTO] = u32::from(p.proto);
        h[IIF] = self.names.rank(p.iif);
        h[OIF] = self.names.rank(p.oif);
        Some(Header(h))
    }

    /// The verdict for a packet and the entry that gave it.
    pub fn evaluate(&self, p: &Packet<'_>) -> Decision {
        self.evaluate_counting(p, &mut [])
    }

    /// [`Firewall::evaluate`], also adding to `hits[e]` the number of times the packet matched
    /// entry `e` on its way (jumps, counting rules and `RETURN`s too, as netfilter's counters
    /// do; the policy's entry when it decided). `hits` shorter than the entries counts
    /// nothing.
    pub fn evaluate_counting(&self, p: &Packet<'_>, hits: &mut [u64]) -> Decision {
        let count = hits.len() == self.entries.len();
        let policy = self.entries.len() - 1;
        let decided = match self.header(p) {
            Some(h) if count => self.walk(
                &h,
                p,
                Some(&mut |e, t| hits[e as usize] = hits[e as usize].saturating_add(t)),
            ),
            Some(h) => self.walk(&h, p, None),
            None => None,
        };
        let e = decided.unwrap_or(policy);
        if count && decided.is_none() {
            hits[policy] = hits[policy].saturating_add(1);
        }
        self.decision(e)
    }

    /// [`Firewall::evaluate`], also giving the packet's path: each entry it matched on its way
    /// with how many times (what [`Firewall::evaluate_counting`] would add to each entry's
    /// counter), in `path`, cleared first. A caller that caches a flow's decision replays the
    /// path onto its counters for the flow's later packets.
    pub fn evaluate_path(&self, p: &Packet<'_>, path: &mut Vec<(u32, u64)>) -> Decision {
        path.clear();
        let policy = self.entries.len() - 1;
        let decided = match self.header(p) {
            Some(h) => self.walk_path(&h, p, path),
            None => None,
        };
        let e = decided.unwrap_or(policy);
        if decided.is_none() {
            path.push((policy as u32, 1));
        }
        self.decision(e)
    }

    fn walk_path(
        &self,
        h: &Header<FW>,
        p: &Packet<'_>,
        path: &mut Vec<(u32, u64)>,
    ) -> Option<usize> {
        self.walk(h, p, Some(&mut |e, t| path.push((e, t))))
    }

    /// Walks the chains from the entered one; the deciding entry, or `None` when the packet
    /// falls off the entered chain.
    fn walk(
        &self,
        h: &Header<FW>,
        p: &Packet<'_>,
        hits: Option<&mut dyn FnMut(u32, u64)>,
    ) -> Option<usize> {
        WALK.with(|w| match w.try_borrow_mut() {
            Ok(mut w) => self.walk_in(&mut w, h, p, hits),
            // Not reentered in practice; a fresh one if it ever is.
            Err(_) => self.walk_in(&mut Walk::default(), h, p, hits),
        })
    }

    fn walk_in(
        &self,
        w: &mut Walk,
        h: &Header<FW>,
        p: &Packet<'_>,
        hits: Option<&mut dyn FnMut(u32, u64)>,
    ) -> Option<usize> {
        w.clear();
        let count = hits.is_some();
        w.runs = 1;
        w.chains.push(0);
        w.stack.push(Frame { run: 0, chain: 0, pos: self.chains[0].entries.start, chains: 0 });
        let decided = loop {
            let f = *w.stack.last().expect("a chain is being walked");
            let c = &self.chains[f.chain];
            let found = c.compiled.classify_live(h, |b| {
                c.entry_of[b as usize] as usize >= f.pos
                    && self.checks_pass(&c.checks[b as usize], p)
            });
            if let Some(b) = found
                && let Some(k) = c.checks[b].limit
                && !self.buckets[k as usize].take(p.time)
            {
                // Out of tokens: the rule does not match; the walk goes on after it.
                let top = w.stack.len() - 1;
                w.stack[top].pos = c.entry_of[b] as usize + 1;
                continue;
            }
            let action = found.map(|b| {
                let e = c.entry_of[b] as usize;
                if count {
                    w.hits.push((f.run, e as u32));
                }
                (e, &self.entries[e].action)
            });
            let top = w.stack.len() - 1;
            let returned = match action {
                None | Some((_, Action::Return)) => true,
                Some((e, Action::Verdict(_))) => break Some(e),
                Some((e, Action::Continue)) => {
                    w.stack[top].pos = e + 1;
                    false
                }
                Some((e, &Action::Jump(d))) => {
                    w.stack[top].pos = e + 1;
                    let known = w.returns.iter().find(|&&(x, _)| x == d).map(|&(_, r)| r);
                    match known {
                        Some(r) => w.calls.push((f.run, r)),
                        None => {
                            let r = w.runs;
                            w.runs += 1;
                            w.calls.push((f.run, r));
                            let start = self.chains[d].entries.start;
                            let at = w.chains.len();
                            w.chains.push(d);
                            w.stack.push(Frame { run: r, chain: d, pos: start, chains: at });
                        }
                    }
                    false
                }
                Some((_, &Action::Goto(d))) => {
                    match w.returns.iter().find(|&&(x, _)| x == d).map(|&(_, r)| r) {
                        Some(r) => {
                            w.calls.push((f.run, r));
                            true
                        }
                        None => {
                            w.stack[top].chain = d;
                            w.stack[top].pos = self.chains[d].entries.start;
                            w.chains.push(d);
                            false
                        }
                    }
                }
            };
            if returned {
                let f = w.stack.pop().expect("the frame that returned");
                let Walk { chains, returns, .. } = &mut *w;
                let walked = chains.drain(f.chains..);
                // A chain's outcome is remembered only while rules depend on the packet
                // alone: a `limit` rule's can change between two jumps to its chain.
                if self.buckets.is_empty() {
                    returns.extend(walked.map(|c| (c, f.run)));
                } else {
                    drop(walked);
                }
                if count {
                    w.done.push(f.run);
                }
                if w.stack.is_empty() {
                    break None;
                }
            }
        };
        if let Some(hits) = hits {
            // The frames still open complete now, innermost first; then every walk's
            // counters count as often as the walks that called it ran.
            let Walk { stack, done, times, runs, hits: matched, calls, .. } = &mut *w;
            done.extend(stack.iter().rev().map(|f| f.run));
            times.clear();
            times.resize(*runs as usize, 0);
            times[0] = 1;
            for &r in done.iter().rev() {
                let t = times[r as usize];
                for &(_, e) in matched.iter().filter(|x| x.0 == r) {
                    hits(e, t);
                }
                for &(_, c) in calls.iter().filter(|x| x.0 == r) {
                    times[c as usize] = times[c as usize].saturating_add(t);
                }
            }
        }
        decided
    }

    fn decision(&self, entry: usize) -> Decision {
        let verdict = match &self.entries[entry].action {
            Action::Verdict(t) => t.clone(),
            _ => Target::Accept,
        };
        Decision { verdict, entry }
    }

    fn checks_pass(&self, c: &Checks, p: &Packet<'_>) -> bool {
        (c.apps.is_empty()
            || c.apps.iter().any(|a| p.app.iter().any(|n| n.eq_ignore_ascii_case(a))))
            && c.flags.iter().all(|f| f.contains(p.tcp_flags))
            && c.src_sets.iter().all(|&(s, not)| self.sets[s].contains(p.src) != not)
            && c.dst_sets.iter().all(|&(s, not)| self.sets[s].contains(p.dst) != not)
            && c.ct.iter().all(|states| p.ct.is_some_and(|s| states.contains(&s)))
            && c.types.iter().zip([p.src, p.dst]).all(|(t, a)| {
                t.as_ref().is_none_or(|(types, not)| {
                    let has = AddrType::of(a, &self.local);
                    types.iter().any(|t| has & t.bit() != 0) != *not
                })
            })
    }
}

/// One alternative of a constraint: ranges on some fields, all of which must hold.
type Alt = Vec<(usize, u32, u32)>;

/// Each box split by the alternatives of a constraint: its intersection with each, where
/// that is not empty.
fn constrain(boxes: Vec<Rule<FW>>, alts: &[Alt]) -> Vec<Rule<FW>> {
    let mut out = Vec::with_capacity(boxes.len());
    for b in &boxes {
        'alt: for alt in alts {
            let mut x = *b;
            for &(f, lo, hi) in alt {
                x.lo[f] = x.lo[f].max(lo);
                x.hi[f] = x.hi[f].min(hi);
                if x.lo[f] > x.hi[f] {
                    continue 'alt;
                }
            }
            out.push(x);
        }
    }
    out
}

/// Alternatives on one field.
fn on(field: usize, ranges: impl IntoIterator<Item = (u32, u32)>) -> Vec<Alt> {
    ranges.into_iter().map(|(lo, hi)| vec![(field, lo, hi)]).collect()
}

/// The alternatives of an address match at `at` (SRC or DST): its family, and its boxes over
/// the address words.
fn address_alts(n: &Net, at: usize) -> Vec<Alt> {
    let f = if n.addr.is_ipv4() { 4 } else { 6 };
    address_boxes(n)
        .into_iter()
        .map(|b| {
            let mut a = vec![(FAMILY, f, f)];
            a.extend((0..4).map(|w| (at + w, b[w].0, b[w].1)));
            a
        })
        .collect()
}

/// The boxes of a rule: every field's constraint, each a union of alternatives, expanded.
fn lower(r: &IptRule, names: &Names) -> Vec<Rule<FW>> {
    let mut v4 = Rule { lo: [0; FW], hi: [u32::MAX; FW] };
    for (f, max) in [(SPORT, 65535), (DPORT, 65535), (PROTO, 255)] {
        v4.hi[f] = max;
    }
    let mut v6 = v4;
    (v4.lo[FAMILY], v4.hi[FAMILY]) = (4, 4);
    (v6.lo[FAMILY], v6.hi[FAMILY]) = (6, 6);
    for w in 1..4 {
        v4.hi[SRC + w] = 0;
        v4.hi[DST + w] = 0;
    }
    let mut boxes = match r.family {
        Some(4) => vec![v4],
        Some(6) => vec![v6],
        Some(_) => Vec::new(),
        None => vec![v4, v6],
    };
    let wide = |v: &[(u8, u8)]| -> Vec<(u32, u32)> {
        v.iter().map(|&(a, b)| (u32::from(a), u32::from(b))).collect()
    };
    let wide16 = |v: &[(u16, u16)]| -> Vec<(u32, u32)> {
        v.iter().map(|&(a, b)| (u32::from(a), u32::from(b))).collect()
    };
    let mut constraints: Vec<Vec<Alt>> = Vec::new();
    if let Some(n) = &r.src {
        constraints.push(address_alts(n, SRC));
    }
    if let Some(n) = &r.dst {
        constraints.push(address_alts(n, DST));
    }
    if let Some(p) = &r.proto {
        constraints.push(on(PROTO, wide(p)));
    }
    if let Some(p) = &r.sports {
        constraints.push(on(SPORT, wide16(p)));
    }
    if let Some(p) = &r.dports {
        constraints.push(on(DPORT, wide16(p)));
    }
    // An ICMP packet's type and code are in the port fields.
    if let Some(t) = &r.icmp_type {
        constraints.push(on(SPORT, wide(t)));
    }
    if let Some(c) = &r.icmp_code {
        constraints.push(on(DPORT, wide(c)));
    }
    if let Some((n, not)) = &r.iif {
        constraints.push(on(IIF, names.ranges(n, *not)));
    }
    if let Some((n, not)) = &r.oif {
        constraints.push(on(OIF, names.ranges(n, *not)));
    }
    for t in &r.tuples {
        let mut alts: Vec<Alt> = Vec::new();
        for e in &t.elems {
            // One element: the product of its fields' alternatives.
            let mut parts: Vec<Alt> = vec![Vec::new()];
            for (k, v) in t.keys.iter().zip(e) {
                let here: Vec<Alt> = match (k, v) {
                    (Key::Src, Value::Net(n)) => address_alts(n, SRC),
                    (Key::Dst, Value::Net(n)) => address_alts(n, DST),
                    (Key::Sport, &Value::Range(a, b)) => on(SPORT, [(a, b)]),
                    (Key::Dport, &Value::Range(a, b)) => on(DPORT, [(a, b)]),
                    (Key::Proto, &Value::Range(a, b)) => on(PROTO, [(a, b)]),
                    (Key::Iif, Value::Iface(n)) => on(IIF, [names.range(n)]),
                    (Key::Oif, Value::Iface(n)) => on(OIF, [names.range(n)]),
                    // A value of another field's kind matches nothing.
                    _ => Vec::new(),
                };
                parts = parts
                    .iter()
                    .flat_map(|p| {
                        here.iter().map(move |h| {
                            let mut x = p.clone();
                            x.extend_from_slice(h);
                            x
                        })
                    })
                    .collect();
            }
            alts.extend(parts);
        }
        constraints.push(alts);
    }
    for c in &constraints {
        boxes = constrain(boxes, c);
    }
    boxes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet<'a>(src: &str, dst: &str, proto: u8, sport: u16, dport: u16) -> Packet<'a> {
        Packet {
            src: src.parse().unwrap(),
            dst: dst.parse().unwrap(),
            sport,
            dport,
            proto,
            iif: "",
            oif: "",
            ct: None,
            tcp_flags: 0,
            app: &[],
            time: 0,
        }
    }

    #[test]
    fn icmp_types_and_codes_are_the_port_fields_and_families_hold() {
        let rs = crate::iptables::parse(
            "r",
            "*filter\n:INPUT DROP [0:0]\n-A INPUT -p icmp --icmp-type echo-request -j ACCEPT\n-A INPUT -p icmp --icmp-type 3/4 -j REJECT\n-A INPUT -p tcp -j ACCEPT\nCOMMIT\n",
        )
        .unwrap();
        let fw = Firewall::from_iptables(&rs, "INPUT", &HashMap::new()).unwrap();
        let name = |p: &Packet<'_>| fw.entries()[fw.evaluate(p).entry].name.clone();
        assert_eq!(name(&packet("10.0.0.1", "10.0.0.2", 1, 8, 0)), "INPUT:1");
        assert_eq!(name(&packet("10.0.0.1", "10.0.0.2", 1, 0, 0)), "INPUT:policy");
        assert_eq!(name(&packet("10.0.0.1", "10.0.0.2", 1, 3, 4)), "INPUT:2");
        assert_eq!(name(&packet("10.0.0.1", "10.0.0.2", 1, 3, 3)), "INPUT:policy");
        assert_eq!(fw.entries()[1].reject, Some(RejectWith::Icmp(3)));
        // A TCP packet to port 8 is not an echo request.
        assert_eq!(name(&packet("10.0.0.1", "10.0.0.2", 6, 8, 0)), "INPUT:3");
        // iptables-save rules are IPv4's: an IPv6 packet meets only the policy.
        assert_eq!(name(&packet("::1", "::2", 6, 1000, 22)), "INPUT:policy");
        assert_eq!(name(&packet("::1", "::2", 58, 128, 0)), "INPUT:policy");
    }

    #[test]
    fn app_rules_match_a_decided_flow_by_either_of_its_names() {
        let (rs, sets) = crate::syntax::parse(
            "r",
            "table filter {\n  app bittorrent drop\n  tcp dport 443 app YouTube reject\n  default accept\n}\n",
        )
        .unwrap();
        let fw = Firewall::from_iptables(&rs, "filter", &sets).unwrap();
        let name = |app: &[&str], dport: u16| {
            let p = Packet { app, ..packet("10.0.0.1", "10.0.0.2", 6, 40000, dport) };
            fw.entries()[fw.evaluate(&p).entry].name.clone()
        };
        // Undecided: no app rule matches.
        assert_eq!(name(&[], 443), "filter:policy");
        assert_eq!(name(&["BitTorrent"], 6881), "filter:1");
        assert_eq!(name(&["TLS", "YouTube"], 443), "filter:2");
        assert_eq!(name(&["TLS", "YouTube"], 80), "filter:policy");
        assert_eq!(name(&["TLS", "Google"], 443), "filter:policy");
    }

    #[test]
    fn limit_rules_match_while_their_bucket_has_tokens() {
        let rs = crate::iptables::parse(
            "r",
            "*filter\n:INPUT DROP [0:0]\n-A INPUT -p tcp -m limit --limit 2/second --limit-burst 3 -j ACCEPT\n-A INPUT -p tcp -j REJECT\nCOMMIT\n",
        )
        .unwrap();
        let fw = Firewall::from_iptables(&rs, "INPUT", &HashMap::new()).unwrap();
        assert!(fw.has_limits());
        let s = 1_000_000_000u64;
        let at = |t: u64| {
            let p = Packet { time: t, ..packet("10.0.0.1", "10.0.0.2", 6, 1000, 22) };
            fw.entries()[fw.evaluate(&p).entry].name.clone()
        };
        // The burst of 3, then nothing until a token comes back (every 0.5 s).
        let t0 = 100 * s;
        assert_eq!(
            [at(t0), at(t0), at(t0), at(t0), at(t0 + s / 4)],
            ["INPUT:1", "INPUT:1", "INPUT:1", "INPUT:2", "INPUT:2"]
        );
        assert_eq!(at(t0 + s / 2), "INPUT:1", "one token back after 0.5 s");
        assert_eq!(at(t0 + s / 2), "INPUT:2");
        // A long quiet spell refills the bucket to its burst only.
        let later = t0 + 60 * s;
        let got: Vec<String> = (0..4).map(|_| at(later)).collect();
        assert_eq!(got, ["INPUT:1", "INPUT:1", "INPUT:1", "INPUT:2"]);
    }

    #[test]
    fn addrtype_rules_tell_local_broadcast_multicast_and_unicast() {
        let rs = crate::iptables::parse(
            "r",
            "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -m addrtype --dst-type LOCAL -j ACCEPT\n-A INPUT -m addrtype --dst-type BROADCAST,MULTICAST -j DROP\n-A INPUT -m addrtype ! --src-type UNICAST -j REJECT\nCOMMIT\n",
        )
        .unwrap();
        let mut fw = Firewall::from_iptables(&rs, "INPUT", &HashMap::new()).unwrap();
        fw.set_local(&["10.0.0.2".parse().unwrap()]);
        let name = |fw: &Firewall, src: &str, dst: &str| {
            fw.entries()[fw.evaluate(&packet(src, dst, 17, 1000, 53)).entry].name.clone()
        };
        assert_eq!(name(&fw, "10.0.0.1", "10.0.0.2"), "INPUT:1");
        assert_eq!(name(&fw, "10.0.0.1", "255.255.255.255"), "INPUT:2");
        assert_eq!(name(&fw, "10.0.0.1", "224.0.0.251"), "INPUT:2");
        // The zero network is a broadcast type to the kernel, so not UNICAST.
        assert_eq!(name(&fw, "0.0.0.0", "10.0.0.9"), "INPUT:3");
        assert_eq!(name(&fw, "10.0.0.1", "127.0.0.1"), "INPUT:1", "loopback is local");
        assert_eq!(name(&fw, "10.0.0.1", "10.0.0.9"), "INPUT:policy");
        // Without the host's addresses nothing is LOCAL.
        fw.set_local(&[]);
        assert_eq!(name(&fw, "10.0.0.1", "10.0.0.2"), "INPUT:policy");
    }

    #[test]
    fn a_chain_with_a_limit_rule_is_walked_again_on_each_jump() {
        let rs = crate::iptables::parse(
            "r",
            "*filter\n:INPUT ACCEPT [0:0]\n:X - [0:0]\n-A INPUT -j X\n-A INPUT -j X\n-A X -m limit --limit 1/second --limit-burst 1 -j RETURN\n-A X -j DROP\nCOMMIT\n",
        )
        .unwrap();
        let fw = Firewall::from_iptables(&rs, "INPUT", &HashMap::new()).unwrap();
        let p = Packet { time: 5_000_000_000, ..packet("10.0.0.1", "10.0.0.2", 6, 1000, 22) };
        // The first jump takes the token and returns; the second finds none and drops, as
        // netfilter walks it.
        assert_eq!(fw.entries()[fw.evaluate(&p).entry].name, "X:2");
    }

    #[test]
    fn a_limit_is_the_last_match_of_its_rule() {
        // Alone, `-m limit` is iptables' default: 3 an hour, a burst of 5.
        let rs = crate::iptables::parse(
            "r",
            "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -p tcp -m tcp --dport 22 -m limit -j ACCEPT\nCOMMIT\n",
        )
        .unwrap();
        assert_eq!(rs.chains[0].rules[0].limit, Some(Limit::DEFAULT));
        // A match after the limit would see only what it let through: refused by name.
        let e = crate::iptables::parse(
            "r",
            "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -p tcp -m limit --limit 5/s -m tcp --dport 22 -j ACCEPT\nCOMMIT\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("a tcp match after a limit is not supported"), "{e}");
        let e = crate::nft::parse(
            "r",
            "table inet t {\n chain c {\n  limit rate 5/second tcp dport 22 accept\n }\n}\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("a match after a limit is not supported"), "{e}");
    }
}
