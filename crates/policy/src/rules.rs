//! Rule lists as decision diagrams.
//!
//! A [`Model`] holds, in one [`Manager`], the match set of every entry of a rule list and the
//! diagram from packets to the entry that decides them (terminal = entry index + 1), built the
//! way the list is evaluated:
//!
//! - ClassBench lists are first-match lists in which every rule accepts and no match drops,
//!   so the action diagram is the union of the rules' boxes (a balanced merge), far smaller
//!   than a diagram naming the deciding rule; which rule decides a packet comes from the
//!   compiled classifier instead, and reachability is decided point by point
//!   ([`crate::questions::shadowed`]);
//! - firewall rule sets (`iptables-save`, nftables, rampart syntax) are the lowered classifier's chains,
//!   each built once, backwards from its end: a verdict decides where it matches, a `RETURN`
//!   leaves the chain, a jump takes the jumped-to chain's diagram where it decides and goes on
//!   where it returns, a goto takes it whole, a counting rule never decides; the entered
//!   chain's policy decides what falls off its end. A chain is built once however many jumps
//!   reach it, so the cost follows the file, not the paths through it. Their fields are the
//!   classifier's 14 (family, address words, ports, protocol, interface ranks) and three more
//!   for the conditions the classifier checks beside its boxes: connection state, TCP flags
//!   and application. IP sets become unions of prefixes on the address words.

use std::collections::HashMap;
use std::net::IpAddr;

use rampart_classify::firewall::{
    self as fwall, DPORT, DST, FAMILY, FW, Firewall, IIF, LoweredBox, OIF, PROTO, SPORT, SRC,
};
use rampart_classify::ipset::IpSet;
use rampart_classify::iptables::{CtState, Target};
use rampart_classify::{Compiled, Rule};

use crate::dd::{FALSE, Id, Manager, TRUE};

/// Field: connection state ([`ct_code`]; 5 = not tracked, as in a capture file).
pub const CT: usize = FW;
/// Field: TCP flags.
pub const FLAGS: usize = FW + 1;
/// Field: application (0 = not identified, k = the k-th name in [`Model::apps`]).
pub const APP: usize = FW + 2;
/// Fields of a firewall model.
pub const FIELDS: usize = FW + 3;
/// The connection-state value of a packet whose state is not known.
pub const CT_UNKNOWN: u32 = 5;

/// The field value of a connection state.
pub fn ct_code(s: CtState) -> u32 {
    match s {
        CtState::New => 0,
        CtState::Established => 1,
        CtState::Related => 2,
        CtState::Invalid => 3,
        CtState::Untracked => 4,
    }
}

/// What a deciding entry does to a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Let it through.
    Accept,
    /// Drop it silently.
    Drop,
    /// Drop it and tell the sender.
    Reject,
}

impl Action {
    /// The name users write.
    pub fn name(self) -> &'static str {
        match self {
            Action::Accept => "accept",
            Action::Drop => "drop",
            Action::Reject => "reject",
        }
    }

    /// The terminal value of the action diagram.
    pub fn code(self) -> u32 {
        match self {
            Action::Accept => 1,
            Action::Drop => 2,
            Action::Reject => 3,
        }
    }

    /// The action a terminal value of the action diagram stands for.
    pub fn from_code(c: u32) -> Option<Self> {
        match c {
            1 => Some(Action::Accept),
            2 => Some(Action::Drop),
            3 => Some(Action::Reject),
            _ => None,
        }
    }
}

/// What an entry does when it matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Decides.
    Decide(Action),
    /// Leaves its chain (a `RETURN`).
    Return,
    /// Enters chain k of [`Model::chains`] and comes back where it returns.
    Jump(usize),
    /// Goes to chain k of [`Model::chains`] in place of its own.
    Goto(usize),
    /// Counts and goes on.
    Continue,
}

/// One entry of a rule list.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Its name: `CHAIN:N` for firewall rules, the 0-based index for ClassBench rules,
    /// `CHAIN:policy` or `default` for the last entry.
    pub name: String,
    /// What it does.
    pub flow: Flow,
    /// Its chain (an index into [`Model::chains`]; 0 for ClassBench lists).
    pub chain: usize,
}

/// A chain of a firewall model.
#[derive(Clone, Debug)]
pub struct ChainModel {
    /// Its name.
    pub name: String,
    /// Its rules: a range of [`Model::entries`].
    pub entries: std::ops::Range<usize>,
    /// Packets entering it to the entry that decides them + 1, or 0 where they return.
    pub outcome: Id,
    /// The packets that can enter it (from every jump and goto to it; all valid packets for
    /// the entered chain).
    pub arrive: Id,
    /// The rules that jump or go to it.
    pub callers: Vec<usize>,
}

/// Which field layout a model has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Source, destination, source port, destination port, protocol (IPv4).
    ClassBench,
    /// The classifier's 14 firewall fields plus [`CT`], [`FLAGS`] and [`APP`].
    Firewall,
}

/// A rule list as diagrams.
#[derive(Debug)]
pub struct Model {
    /// Which fields.
    pub layout: Layout,
    /// The entries, in evaluation order; the last is the default or policy.
    pub entries: Vec<Entry>,
    /// Each entry's match set.
    pub matches: Vec<Id>,
    /// Packets to deciding entry + 1 (firewall layouts; ClassBench lists use [`Model::first`]).
    pub decision: Option<Id>,
    /// ClassBench lists: the compiled classifier, which names the deciding rule.
    pub first: Option<Compiled>,
    /// Packets to [`Action::code`], once built ([`actions`] builds it).
    pub actions: Option<Id>,
    /// The packets that can exist (family 4 or 6; IPv4 addresses with zero upper words).
    pub valid: Id,
    /// Interface names, ranked as in the classifier (rank 2k+1 is name k).
    pub ifaces: Vec<String>,
    /// Application names (value k+1 is name k).
    pub apps: Vec<String>,
    /// Firewall models: the chains, the entered one first (empty for ClassBench lists).
    pub chains: Vec<ChainModel>,
}

/// The field maxima of a layout.
pub fn maxima(layout: Layout) -> Vec<u32> {
    match layout {
        Layout::ClassBench => vec![u32::MAX, u32::MAX, 65535, 65535, 255],
        Layout::Firewall => {
            let mut m = vec![u32::MAX; FIELDS];
            m[FAMILY] = 6;
            m[SPORT] = 65535;
            m[DPORT] = 65535;
            m[PROTO] = 255;
            m[CT] = CT_UNKNOWN;
            m[FLAGS] = 255;
            m
        }
    }
}

/// The order a layout's fields are tested in (`order[f]` = position of field `f`): protocol
/// first, then the addresses, then the ports and the rest. Measured on the ClassBench sets
/// (BENCHMARKS.md): the first-match diagram of fw1_1k takes 11 ms to prove against 153 ms in
/// field order, ipc1_10k 0.53 s against 1.8 s.
pub fn order(layout: Layout) -> Vec<usize> {
    let first: Vec<usize> = match layout {
        // proto, sport, dport, src, dst
        // proto, src, dst, sport, dport
        Layout::ClassBench => vec![4, 0, 1, 2, 3],
        Layout::Firewall => {
            let mut v = vec![PROTO, FAMILY];
            v.extend(SRC..SRC + 4);
            v.extend(DST..DST + 4);
            v.extend([SPORT, DPORT, IIF, OIF, CT, FLAGS, APP]);
            v
        }
    };
    let mut order = vec![0; first.len()];
    for (level, &f) in first.iter().enumerate() {
        order[f] = level;
    }
    order
}

/// A manager for a layout, in its [`order`].
pub fn manager(layout: Layout) -> Manager {
    Manager::with_order(maxima(layout), order(layout))
}

/// A manager for the first `n` fields of a layout (the classifier's own fields, without the
/// verifier's extra ones), in the layout's order.
pub fn manager_for(layout: Layout, n: usize) -> Manager {
    let mut max = maxima(layout);
    max.truncate(n);
    let full = order(layout);
    // Keep the relative order of the first n fields.
    let mut fields: Vec<usize> = (0..n).collect();
    fields.sort_by_key(|&f| full[f]);
    let mut ord = vec![0; n];
    for (level, &f) in fields.iter().enumerate() {
        ord[f] = level;
    }
    Manager::with_order(max, ord)
}

/// A firewall-layout manager whose interface and application fields hold just the values
/// that mean something: ranks `0..=2 * ifaces` and applications `0..=apps + 1` (the last: an
/// application no rule names), so that counts of packets are counts of distinguishable ones.
pub fn firewall_manager(ifaces: usize, apps: usize) -> Manager {
    let mut m = maxima(Layout::Firewall);
    m[IIF] = 2 * ifaces as u32;
    m[OIF] = 2 * ifaces as u32;
    m[APP] = apps as u32 + 1;
    Manager::with_order(m, order(Layout::Firewall))
}

/// Builds the model of a ClassBench list in `m`.
pub fn classbench(m: &mut Manager, rules: &[Rule]) -> Model {
    let matches: Vec<Id> = rules.iter().map(|r| m.cube(&ranges(r), TRUE)).collect();
    let n = rules.len();
    let mut entries: Vec<Entry> = (0..n)
        .map(|i| Entry { name: i.to_string(), flow: Flow::Decide(Action::Accept), chain: 0 })
        .collect();
    entries.push(Entry { name: "default".into(), flow: Flow::Decide(Action::Drop), chain: 0 });
    Model {
        layout: Layout::ClassBench,
        entries,
        matches,
        decision: None,
        first: Some(Compiled::new(rules)),
        actions: None,
        valid: TRUE,
        ifaces: Vec::new(),
        apps: Vec::new(),
        chains: Vec::new(),
    }
}

/// The diagram from packets to [`Action::code`], built on first use (for a ClassBench list,
/// the union of its boxes: accept inside, drop outside).
pub fn actions(m: &mut Manager, model: &mut Model) -> Id {
    if let Some(a) = model.actions {
        return a;
    }
    let any = union(m, &model.matches);
    let a = m.map(any, &|v| if v != 0 { Action::Accept.code() } else { Action::Drop.code() });
    model.actions = Some(a);
    a
}

/// The union of packet sets, as a balanced merge.
fn union(m: &mut Manager, sets: &[Id]) -> Id {
    match sets.len() {
        0 => FALSE,
        1 => sets[0],
        k => {
            let a = union(m, &sets[..k / 2]);
            let b = union(m, &sets[k / 2..]);
            m.or(a, b)
        }
    }
}

fn ranges<const N: usize>(r: &Rule<N>) -> Vec<(u32, u32)> {
    (0..N).map(|d| (r.lo[d], r.hi[d])).collect()
}

fn action_map(m: &mut Manager, decision: Id, entries: &[Entry]) -> Id {
    let codes: Vec<u32> = entries
        .iter()
        .map(|e| match e.flow {
            Flow::Decide(a) => a.code(),
            _ => 0,
        })
        .collect();
    m.map(decision, &|v| if v == 0 { 0 } else { codes[v as usize - 1] })
}

/// The action of a classifier target.
fn action(t: &Target) -> Action {
    match t {
        Target::Accept => Action::Accept,
        Target::Reject => Action::Reject,
        // Only verdicts reach here; a jump or return is not a verdict.
        _ => Action::Drop,
    }
}

/// Builds the model of a lowered firewall rule set in `m` (a [`Layout::Firewall`] manager).
/// `apps` names the applications rules mention (extended with this rule set's).
pub fn firewall(m: &mut Manager, fw: &Firewall, apps: &mut Vec<String>) -> Model {
    let entries: Vec<Entry> = fw
        .entries()
        .iter()
        .map(|e| Entry {
            name: e.name.clone(),
            flow: match &e.action {
                fwall::Action::Verdict(t) => Flow::Decide(action(t)),
                fwall::Action::Return => Flow::Return,
                fwall::Action::Jump(k) => Flow::Jump(*k),
                fwall::Action::Goto(k) => Flow::Goto(*k),
                fwall::Action::Continue => Flow::Continue,
            },
            chain: e.chain,
        })
        .collect();
    let n = entries.len();
    let mut matches = vec![FALSE; n];
    let mut set_cache: HashMap<*const IpSet, [Id; 2]> = HashMap::new();
    for b in fw.boxes() {
        let cube = lower_box(m, &b, apps, &mut set_cache);
        matches[b.entry] = m.or(matches[b.entry], cube);
    }
    // The policy matches everything.
    if let Some(last) = matches.last_mut() {
        *last = TRUE;
    }
    let mut chains: Vec<ChainModel> = fw
        .chains()
        .iter()
        .map(|c| ChainModel {
            name: c.name.clone(),
            entries: c.entries.clone(),
            outcome: FALSE,
            arrive: FALSE,
            callers: Vec::new(),
        })
        .collect();
    for (i, e) in entries.iter().enumerate() {
        if let Flow::Jump(k) | Flow::Goto(k) = e.flow {
            chains[k].callers.push(i);
        }
    }
    // Callees before callers: each chain's diagram is built once, backwards from its end.
    let order = callees_first(&entries, &chains);
    for &c in &order {
        let mut from = FALSE;
        for i in chains[c].entries.clone().rev() {
            from = match entries[i].flow {
                Flow::Decide(_) => {
                    let t = m.leaf(i as u32 + 1);
                    let here = m.mask(matches[i], t);
                    m.first(here, from)
                }
                Flow::Return => m.ite(matches[i], FALSE, from),
                Flow::Jump(k) => {
                    let through = m.first(chains[k].outcome, from);
                    m.ite(matches[i], through, from)
                }
                Flow::Goto(k) => m.ite(matches[i], chains[k].outcome, from),
                Flow::Continue => from,
            };
        }
        chains[c].outcome = from;
    }
    let policy = m.leaf(n as u32);
    let decision = m.first(chains[0].outcome, policy);
    let actions = action_map(m, decision, &entries);
    let valid = valid_space(m);
    // Callers first: the packets that reach each chain.
    chains[0].arrive = valid;
    for &c in order.iter().rev() {
        let mut here = chains[c].arrive;
        for i in chains[c].entries.clone() {
            match entries[i].flow {
                Flow::Decide(_) | Flow::Return => here = m.diff(here, matches[i]),
                Flow::Continue => {}
                Flow::Jump(k) | Flow::Goto(k) => {
                    let enter = m.and(here, matches[i]);
                    chains[k].arrive = m.or(chains[k].arrive, enter);
                    let leaves = if matches!(entries[i].flow, Flow::Goto(_)) {
                        matches[i]
                    } else {
                        let decides = decides_set(m, chains[k].outcome);
                        m.and(matches[i], decides)
                    };
                    here = m.diff(here, leaves);
                }
            }
        }
    }
    let ifaces = fw.iface_names().to_vec();
    Model {
        layout: Layout::Firewall,
        entries,
        matches,
        decision: Some(decision),
        first: None,
        actions: Some(actions),
        valid,
        ifaces,
        apps: apps.clone(),
        chains,
    }
}

/// The packets a chain's outcome diagram decides (does not return).
pub fn decides_set(m: &mut Manager, outcome: Id) -> Id {
    m.map(outcome, &|v| u32::from(v != 0))
}

/// The chains in an order where every chain comes after the chains it jumps or goes to.
fn callees_first(entries: &[Entry], chains: &[ChainModel]) -> Vec<usize> {
    let mut seen = vec![false; chains.len()];
    let mut out = Vec::with_capacity(chains.len());
    for root in 0..chains.len() {
        if seen[root] {
            continue;
        }
        seen[root] = true;
        let mut stack = vec![(root, chains[root].entries.start)];
        while let Some(&mut (c, ref mut i)) = stack.last_mut() {
            if *i >= chains[c].entries.end {
                out.push(c);
                stack.pop();
                continue;
            }
            let e = *i;
            *i += 1;
            if let Flow::Jump(k) | Flow::Goto(k) = entries[e].flow
                && !seen[k]
            {
                seen[k] = true;
                stack.push((k, chains[k].entries.start));
            }
        }
    }
    out
}

/// Family 4 with zero upper address words, or family 6.
fn valid_space(m: &mut Manager) -> Id {
    let mut v4 = vec![(0, u32::MAX); FIELDS];
    v4[FAMILY] = (4, 4);
    for w in 1..4 {
        v4[SRC + w] = (0, 0);
        v4[DST + w] = (0, 0);
    }
    let v4 = m.cube(&v4, TRUE);
    let v6 = m.range(FAMILY, 6, 6, TRUE, FALSE);
    m.or(v4, v6)
}

fn lower_box(
    m: &mut Manager,
    b: &LoweredBox<'_>,
    apps: &mut Vec<String>,
    set_cache: &mut HashMap<*const IpSet, [Id; 2]>,
) -> Id {
    let mut r: Vec<(u32, u32)> = ranges(&b.bounds);
    r.extend([(0, u32::MAX); 3]);
    let mut d = m.cube(&r, TRUE);
    for (sets, side) in [(&b.src_sets, 0), (&b.dst_sets, 1)] {
        for &(s, not) in sets.iter() {
            let key: *const IpSet = s;
            let ids = match set_cache.get(&key) {
                Some(ids) => *ids,
                None => {
                    let ids = [set_dd(m, s, SRC), set_dd(m, s, DST)];
                    set_cache.insert(key, ids);
                    ids
                }
            };
            d = if not { m.diff(d, ids[side]) } else { m.and(d, ids[side]) };
        }
    }
    for states in b.ct {
        let codes: Vec<(u32, u32)> = states.iter().map(|&s| (ct_code(s), ct_code(s))).collect();
        let c = m.ranges(CT, &codes);
        d = m.and(d, c);
    }
    for names in &b.apps {
        let mut vals = Vec::new();
        for n in names.iter() {
            let k = match apps.iter().position(|a| a.eq_ignore_ascii_case(n)) {
                Some(k) => k,
                None => {
                    apps.push(n.to_ascii_lowercase());
                    apps.len() - 1
                }
            };
            vals.push((k as u32 + 1, k as u32 + 1));
        }
        let c = m.ranges(APP, &vals);
        d = m.and(d, c);
    }
    for flags in b.tcp_flags {
        let vals: Vec<(u32, u32)> = flags.values().map(|v| (u32::from(v), u32::from(v))).collect();
        let c = m.ranges(FLAGS, &vals);
        d = m.and(d, c);
    }
    d
}

/// The packets whose address at `at` (the first of its four words) is in set `s`.
fn set_dd(m: &mut Manager, s: &IpSet, at: usize) -> Id {
    let mut d = FALSE;
    for (addr, len) in s.prefixes() {
        let mut r = vec![(0, u32::MAX); FIELDS];
        match addr {
            IpAddr::V4(v) => {
                r[FAMILY] = (4, 4);
                let (lo, hi) = Rule::prefix(u32::from(v), len);
                r[at] = (lo, hi);
            }
            IpAddr::V6(v) => {
                r[FAMILY] = (6, 6);
                let x = u128::from(v);
                for w in 0..4 {
                    let word = (x >> (96 - 32 * w)) as u32;
                    let bits = u32::from(len).saturating_sub(32 * w as u32).min(32);
                    let (lo, hi) = Rule::prefix(word, bits as u8);
                    r[at + w] = (lo, hi);
                }
            }
        }
        let c = m.cube(&r, TRUE);
        d = m.or(d, c);
    }
    d
}

/// The entry deciding a packet (its field values).
pub fn decide(m: &Manager, model: &Model, p: &[u32]) -> usize {
    match (&model.first, model.decision) {
        (Some(c), _) => {
            let h = rampart_classify::Header(std::array::from_fn(|d| p[d]));
            c.classify(&h).unwrap_or(model.entries.len() - 1)
        }
        (None, Some(d)) => (m.eval(d, p) as usize).saturating_sub(1),
        (None, None) => model.entries.len() - 1,
    }
}
