//! Firewall rule sets (`iptables-save` for now) lowered onto the compiled classifier.
//!
//! Each flattened rule becomes one or more boxes over [`FW`] fields (family, source and
//! destination address as four 32-bit words each, ports, protocol, input and output
//! interface): negations and port lists are unions, so a rule can need several boxes, all
//! pointing back to it. Conditions that are not ranges (IP sets, connection state) are checked
//! when a box matches. Jumps past inlined chains (`RETURN`) are followed by asking for the first
//! match at or after the jump's target.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::compiled::{Compiled, Options};
use crate::ipset::IpSet;
use crate::iptables::{CtState, Flat, FlatAction, IptRule, Net, Ruleset, Target};
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
    /// No such chain, or it jumps in a loop.
    #[error("chain {0} does not exist or jumps in a loop")]
    Chain(String),
    /// A rule names a set that was not given.
    #[error("rule {rule} uses set {set}, which is not defined")]
    Set {
        /// The rule.
        rule: String,
        /// The set.
        set: String,
    },
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
    /// An application match: nothing labels applications yet, so it never matches.
    app: bool,
    /// (mask, value) pairs over the TCP flags.
    flags: Vec<(u8, u8)>,
}

impl Checks {
    fn is_empty(&self) -> bool {
        self.src_sets.is_empty()
            && self.dst_sets.is_empty()
            && self.ct.is_empty()
            && !self.app
            && self.flags.is_empty()
    }
}

/// A rule set ready to evaluate packets.
#[derive(Clone, Debug)]
pub struct Firewall {
    entries: Vec<Flat>,
    compiled: Compiled<FW>,
    /// Per box: its entry, and its extra conditions.
    entry_of: Vec<u32>,
    checks: Vec<Checks>,
    sets: Vec<IpSet>,
    names: Names,
}

impl Firewall {
    /// Lowers built-in chain `chain` of an `iptables-save` rule set; `sets` are the IP sets
    /// its rules may name.
    pub fn from_iptables(
        rs: &Ruleset,
        chain: &str,
        sets: &HashMap<String, IpSet>,
    ) -> Result<Self, FirewallError> {
        Self::from_iptables_with_names(rs, chain, sets, &[])
    }

    /// The interface names chain `chain` of `rs` mentions (a `+` wildcard as its prefix and
    /// the prefix's successor), sorted: what interface ranks are made of.
    pub fn interface_names(rs: &Ruleset, chain: &str) -> Result<Vec<String>, FirewallError> {
        let entries = rs.flatten(chain).ok_or_else(|| FirewallError::Chain(chain.to_string()))?;
        let mut names: Vec<String> = Vec::new();
        for r in entries.iter().flat_map(|e| &e.all) {
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
        let entries = rs.flatten(chain).ok_or_else(|| FirewallError::Chain(chain.to_string()))?;
        let mut names = Self::interface_names(rs, chain)?;
        names.extend_from_slice(extra_names);
        names.sort();
        names.dedup();
        let names = Names(names);
        let mut set_index: HashMap<&str, usize> = HashMap::new();
        let mut set_list = Vec::new();
        let mut boxes: Vec<Rule<FW>> = Vec::new();
        let mut entry_of = Vec::new();
        let mut checks = Vec::new();
        for (ei, e) in entries.iter().enumerate() {
            let mut c = Checks::default();
            for r in &e.all {
                for (set, list) in [(&r.src_set, &mut c.src_sets), (&r.dst_set, &mut c.dst_sets)] {
                    if let Some(name) = set {
                        let s = sets.get(name).ok_or_else(|| FirewallError::Set {
                            rule: e.name.clone(),
                            set: name.clone(),
                        })?;
                        let next = set_list.len();
                        let i = *set_index.entry(name.as_str()).or_insert(next);
                        if i == next {
                            set_list.push(s.clone());
                        }
                        list.push(i);
                    }
                }
                if !r.ct.is_empty() {
                    c.ct.push(r.ct.clone());
                }
                c.app |= !r.app.is_empty();
                c.flags.extend(r.tcp_flags);
            }
            for b in lower(&e.all, &names) {
                boxes.push(b);
                entry_of.push(ei as u32);
                checks.push(c.clone());
            }
        }
        // Boxes with conditions, and boxes that do not decide, never hide later ones.
        let opaque = (0..boxes.len())
            .map(|i| {
                !checks[i].is_empty()
                    || !matches!(entries[entry_of[i] as usize].action, FlatAction::Verdict(_))
            })
            .collect();
        let compiled = Compiled::with_options(&boxes, &Options { partition: [SRC, DST], opaque });
        Ok(Self { entries, compiled, entry_of, checks, sets: set_list, names })
    }

    /// The compiled structure over the boxes (box `i` is the `i`-th of [`Firewall::boxes`]).
    pub fn compiled(&self) -> &Compiled<FW> {
        &self.compiled
    }

    /// The lowered boxes in evaluation order, with their conditions.
    pub fn boxes(&self) -> impl Iterator<Item = LoweredBox<'_>> {
        (0..self.entry_of.len()).map(move |i| {
            let c = &self.checks[i];
            let entry = self.entry_of[i] as usize;
            LoweredBox {
                entry,
                bounds: self.compiled.rule(i).unwrap_or(Rule { lo: [0; FW], hi: [0; FW] }),
                src_sets: c.src_sets.iter().map(|&k| &self.sets[k]).collect(),
                dst_sets: c.dst_sets.iter().map(|&k| &self.sets[k]).collect(),
                ct: &c.ct,
                apps: self.entries[entry]
                    .all
                    .iter()
                    .filter(|r| !r.app.is_empty())
                    .map(|r| r.app.as_slice())
                    .collect(),
                tcp_flags: &c.flags,
            }
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

    /// Sizes of the compiled structure (boxes count as rules).
    pub fn stats(&self) -> crate::CompiledStats {
        self.compiled.stats()
    }

    /// The flattened rules, in evaluation order (the last is the chain's policy).
    pub fn entries(&self) -> &[Flat] {
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

    /// [`Firewall::evaluate`], also adding one to `hits[e]` for every entry `e` the packet
    /// matched on its way (jumps, counting rules and `RETURN`s too, as netfilter's counters do;
    /// the policy's entry when it decided). `hits` shorter than the entries counts nothing.
    pub fn evaluate_counting(&self, p: &Packet<'_>, hits: &mut [u64]) -> Decision {
        let count = hits.len() == self.entries.len();
        let policy = self.entries.len() - 1;
        let mut hit = |e: usize| {
            if count {
                hits[e] += 1;
            }
        };
        let Some(h) = self.header(p) else {
            hit(policy);
            return self.decision(policy);
        };
        let mut start = 0usize;
        loop {
            let found = self.compiled.classify_live(&h, |b| {
                self.entry_of[b as usize] as usize >= start && self.checks_pass(b as usize, p)
            });
            let Some(b) = found else {
                hit(policy);
                return self.decision(policy);
            };
            let e = self.entry_of[b] as usize;
            hit(e);
            match &self.entries[e].action {
                FlatAction::Verdict(_) => return self.decision(e),
                FlatAction::Goto(k) => start = *k,
                FlatAction::Continue => start = e + 1,
            }
        }
    }

    fn decision(&self, entry: usize) -> Decision {
        let verdict = match &self.entries[entry].action {
            FlatAction::Verdict(t) => t.clone(),
            _ => Target::Accept,
        };
        Decision { verdict, entry }
    }

    fn checks_pass(&self, b: usize, p: &Packet<'_>) -> bool {
        let c = &self.checks[b];
        !c.app
            && c.flags.iter().all(|&(m, v)| p.tcp_flags & m == v)
            && c.src_sets.iter().all(|&s| self.sets[s].contains(p.src))
            && c.dst_sets.iter().all(|&s| self.sets[s].contains(p.dst))
            && c.ct.iter().all(|states| p.ct.is_some_and(|s| states.contains(&s)))
    }
}

/// The boxes of one flattened rule (the conjunction of `all`).
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
