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
use crate::iptables::{ChainError, CtState, IptRule, Net, Ruleset, Target};
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
    /// Sets the source address must be in (all of them).
    pub src_sets: Vec<&'a IpSet>,
    /// Sets the destination address must be in.
    pub dst_sets: Vec<&'a IpSet>,
    /// Connection states: the state must be in each list.
    pub ct: &'a [Vec<CtState>],
    /// Applications: the flow's application must be in each list.
    pub apps: Vec<&'a [String]>,
    /// (mask, value) pairs the TCP flags must meet.
    pub tcp_flags: &'a [(u8, u8)],
}

/// A packet as the firewall sees it.
#[derive(Clone, Debug)]
pub struct Packet<'a> {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Source port (0 when the protocol has none).
    pub sport: u16,
    /// Destination port.
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

    /// The ranges an `-i`/`-o` argument (with negation) covers.
    fn ranges(&self, name: &str, not: bool) -> Vec<(u32, u32)> {
        let r = match name.strip_suffix('+') {
            Some("") => (0, u32::MAX),
            Some(prefix) => (self.rank(prefix), self.rank(&successor(prefix)) - 1),
            None => (self.rank(name), self.rank(name)),
        };
        if not { complement(r, u32::MAX) } else { vec![r] }
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

/// A field's allowed values as a union of ranges; `None` for "anything".
type Union = Option<Vec<(u32, u32)>>;

fn intersect(a: Union, b: Vec<(u32, u32)>) -> Union {
    Some(match a {
        None => b,
        Some(a) => a
            .iter()
            .flat_map(|&(l1, h1)| {
                b.iter().filter_map(move |&(l2, h2)| {
                    (l1.max(l2) <= h1.min(h2)).then_some((l1.max(l2), h1.min(h2)))
                })
            })
            .collect(),
    })
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
    src_sets: Vec<usize>,
    dst_sets: Vec<usize>,
    ct: Vec<Vec<CtState>>,
    /// Application names (one must match): nothing labels applications yet, so a rule with
    /// them never matches.
    apps: Vec<String>,
    /// (mask, value) pairs over the TCP flags.
    flags: Vec<(u8, u8)>,
}

impl Checks {
    fn is_empty(&self) -> bool {
        self.src_sets.is_empty()
            && self.dst_sets.is_empty()
            && self.ct.is_empty()
            && self.apps.is_empty()
            && self.flags.is_empty()
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
}

/// One walk through a chain (and the chains it goes to in its place).
#[derive(Default)]
struct Run {
    /// Entries it matched itself.
    hits: Vec<u32>,
    /// Walks it jumped into (new, or remembered from an earlier jump).
    calls: Vec<u32>,
}

/// A chain being walked.
struct Frame {
    run: u32,
    chain: usize,
    /// The next entry to consider.
    pos: usize,
    /// The chains this frame walked (the first, then each goto's).
    chains: Vec<usize>,
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
            for (n, _) in r.iif.iter().chain(&r.oif) {
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
                entries.push(Entry { name: r.name.clone(), line: r.line, chain: k, action });
            }
        }
        let policy = rs.chains[order[0]].policy.clone().unwrap_or(Target::Accept);
        entries.push(Entry {
            name: format!("{chain}:policy"),
            line: 0,
            chain: 0,
            action: Action::Verdict(policy),
        });
        let mut set_index: HashMap<&str, usize> = HashMap::new();
        let mut set_list = Vec::new();
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
                    if let Some(name) = set {
                        let s = sets.get(name).ok_or_else(|| FirewallError::Set {
                            rule: r.name.clone(),
                            set: name.clone(),
                        })?;
                        let fresh = set_list.len();
                        let i = *set_index.entry(name.as_str()).or_insert(fresh);
                        if i == fresh {
                            set_list.push(s.clone());
                        }
                        list.push(i);
                    }
                }
                if !r.ct.is_empty() {
                    ch.ct.push(r.ct.clone());
                }
                ch.apps.clone_from(&r.app);
                ch.flags.extend(r.tcp_flags);
                for b in lower(std::slice::from_ref(r), &names) {
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
            let compiled =
                Compiled::with_options(&boxes, &Options { partition: [SRC, DST], opaque });
            chains.push(LoweredChain {
                name: rs.chains[c].name.clone(),
                entries: range,
                compiled,
                entry_of,
                checks,
            });
            debug_assert_eq!(chains.len(), k + 1);
        }
        Ok(Self { entries, chains, sets: set_list, names })
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
                    src_sets: ch.src_sets.iter().map(|&k| &self.sets[k]).collect(),
                    dst_sets: ch.dst_sets.iter().map(|&k| &self.sets[k]).collect(),
                    ct: &ch.ct,
                    apps: if ch.apps.is_empty() { Vec::new() } else { vec![ch.apps.as_slice()] },
                    tcp_flags: &ch.flags,
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
        let mut runs: Vec<Run> = vec![Run::default()];
        // Chains known to return for this packet, and the walk that found it out.
        let mut returns: Vec<(usize, u32)> = Vec::new();
        let mut done: Vec<u32> = Vec::new();
        let mut stack: Vec<Frame> =
            vec![Frame { run: 0, chain: 0, pos: self.chains[0].entries.start, chains: vec![0] }];
        let decided = loop {
            let f = stack.last_mut().expect("a chain is being walked");
            let c = &self.chains[f.chain];
            let pos = f.pos;
            let found = c.compiled.classify_live(h, |b| {
                c.entry_of[b as usize] as usize >= pos && self.checks_pass(&c.checks[b as usize], p)
            });
            let action = found.map(|b| {
                let e = c.entry_of[b] as usize;
                runs[f.run as usize].hits.push(e as u32);
                (e, &self.entries[e].action)
            });
            let returned = match action {
                None | Some((_, Action::Return)) => true,
                Some((e, Action::Verdict(_))) => break Some(e),
                Some((e, Action::Continue)) => {
                    f.pos = e + 1;
                    false
                }
                Some((e, &Action::Jump(d))) => {
                    f.pos = e + 1;
                    let known = returns.iter().find(|&&(x, _)| x == d).map(|&(_, r)| r);
                    let run = f.run as usize;
                    match known {
                        Some(r) => runs[run].calls.push(r),
                        None => {
                            let r = runs.len() as u32;
                            runs.push(Run::default());
                            runs[run].calls.push(r);
                            let start = self.chains[d].entries.start;
                            stack.push(Frame { run: r, chain: d, pos: start, chains: vec![d] });
                        }
                    }
                    false
                }
                Some((_, &Action::Goto(d))) => {
                    match returns.iter().find(|&&(x, _)| x == d).map(|&(_, r)| r) {
                        Some(r) => {
                            runs[f.run as usize].calls.push(r);
                            true
                        }
                        None => {
                            f.chain = d;
                            f.pos = self.chains[d].entries.start;
                            f.chains.push(d);
                            false
                        }
                    }
                }
            };
            if returned {
                let f = stack.pop().expect("the frame that returned");
                returns.extend(f.chains.iter().map(|&c| (c, f.run)));
                done.push(f.run);
                if stack.is_empty() {
                    break None;
                }
            }
        };
        if let Some(hits) = hits {
            // The frames still open complete now, innermost first; then every walk's
            // counters count as often as the walks that called it ran.
            done.extend(stack.iter().rev().map(|f| f.run));
            let mut times = vec![0u64; runs.len()];
            times[0] = 1;
            for &r in done.iter().rev() {
                let t = times[r as usize];
                for &e in &runs[r as usize].hits {
                    hits(e, t);
                }
                for &c in &runs[r as usize].calls {
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
        c.apps.is_empty()
            && c.flags.iter().all(|&(m, v)| p.tcp_flags & m == v)
            && c.src_sets.iter().all(|&s| self.sets[s].contains(p.src))
            && c.dst_sets.iter().all(|&s| self.sets[s].contains(p.dst))
            && c.ct.iter().all(|states| p.ct.is_some_and(|s| states.contains(&s)))
    }
}

/// The boxes of a conjunction of rules (one rule, or a rule and what it is tested with).
fn lower(all: &[IptRule], names: &Names) -> Vec<Rule<FW>> {
    // Families the addresses allow.
    let mut fam: Union = None;
    let mut addr: [Vec<Vec<AddrBox>>; 2] = [Vec::new(), Vec::new()];
    let (mut sport, mut dport, mut proto, mut iif, mut oif): (Union, Union, Union, Union, Union) =
        (None, None, None, None, None);
    for r in all {
        for (k, n) in [(0, &r.src), (1, &r.dst)] {
            if let Some(n) = n {
                let f = if n.addr.is_ipv4() { 4 } else { 6 };
                fam = intersect(fam, vec![(f, f)]);
                addr[k].push(address_boxes(n));
            }
        }
        if !r.sports.is_empty() {
            sport = intersect(
                sport,
                r.sports.iter().map(|&(a, b)| (u32::from(a), u32::from(b))).collect(),
            );
        }
        if !r.dports.is_empty() {
            dport = intersect(
                dport,
                r.dports.iter().map(|&(a, b)| (u32::from(a), u32::from(b))).collect(),
            );
        }
        if let Some((p, not)) = r.proto {
            let p = u32::from(p);
            proto = intersect(proto, if not { complement((p, p), 255) } else { vec![(p, p)] });
        }
        if let Some((n, not)) = &r.iif {
            iif = intersect(iif, names.ranges(n, *not));
        }
        if let Some((n, not)) = &r.oif {
            oif = intersect(oif, names.ranges(n, *not));
        }
    }
    let fam = fam.unwrap_or_else(|| vec![(4, 4), (6, 6)]);
    let any = |u: Union, max: u32| u.unwrap_or_else(|| vec![(0, max)]);
    let (sport, dport, proto) = (any(sport, 65535), any(dport, 65535), any(proto, 255));
    let (iif, oif) = (any(iif, u32::MAX), any(oif, u32::MAX));
    let mut out = Vec::new();
    for &(f, _) in &fam {
        let v4 = f == 4;
        let wild: [(u32, u32); 4] =
            std::array::from_fn(|k| if v4 && k > 0 { (0, 0) } else { (0, u32::MAX) });
        // Each address field: the intersection of its matches' box unions.
        let mut per = [vec![wild], vec![wild]];
        for (k, list) in addr.iter().enumerate() {
            for boxes in list {
                per[k] = per[k]
                    .iter()
                    .flat_map(|a| {
                        boxes.iter().filter_map(move |b| {
                            let x: [(u32, u32); 4] =
                                std::array::from_fn(|i| (a[i].0.max(b[i].0), a[i].1.min(b[i].1)));
                            x.iter().all(|(l, h)| l <= h).then_some(x)
                        })
                    })
                    .collect();
            }
        }
        for s in &per[0] {
            for d in &per[1] {
                for &sp in &sport {
                    for &dp in &dport {
                        for &pr in &proto {
                            for &i in &iif {
                                for &o in &oif {
                                    let mut lo = [0u32; FW];
                                    let mut hi = [0u32; FW];
                                    lo[FAMILY] = f;
                                    hi[FAMILY] = f;
                                    for w in 0..4 {
                                        (lo[SRC + w], hi[SRC + w]) = s[w];
                                        (lo[DST + w], hi[DST + w]) = d[w];
                                    }
                                    (lo[SPORT], hi[SPORT]) = sp;
                                    (lo[DPORT], hi[DPORT]) = dp;
                                    (lo[PROTO], hi[PROTO]) = pr;
                                    (lo[IIF], hi[IIF]) = i;
                                    (lo[OIF], hi[OIF]) = o;
                                    out.push(Rule { lo, hi });
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}
