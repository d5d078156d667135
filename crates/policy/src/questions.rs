//! The questions firewall engineers ask of rule sets (Batfish's filter questions), answered
//! on decision diagrams with counterexamples:
//!
//! - [`test()`]: which entry decides this packet, and what it does;
//! - [`shadowed`]: which rules can never decide anything, and a minimal set of earlier rules
//!   that together take all their packets;
//! - [`compare`]: whether two rule sets give every packet the same action, else a packet
//!   they disagree on and how many do;
//! - [`search`]: a packet meeting a constraint that gets a given action.
//!
//! Packets are written `PROTO SRC[:PORT] -> DST[:PORT]` with optional `iif NAME`,
//! `oif NAME`, `ct STATE`, `flags LETTERS` and `app NAME` after; IPv6 addresses with a port
//! are bracketed (`[2001:db8::1]:443`). Constraints for [`search`] are words: `tcp`, `udp`,
//! `icmp`, `proto N`, `src PREFIX`, `dst PREFIX`, `sport N[-M]`, `dport N[-M]`, `iif NAME`,
//! `oif NAME`, `ct STATE[,STATE...]`, `app NAME`.

use std::net::IpAddr;

use rampart_classify::firewall::{DPORT, DST, FAMILY, IIF, OIF, PROTO, SPORT, SRC};
use rampart_classify::iptables::CtState;

use crate::dd::{FALSE, Id, Manager, TRUE};
use crate::rules::{APP, Action, CT, CT_UNKNOWN, FIELDS, FLAGS, Flow, Layout, Model, ct_code};

/// Why a packet or constraint was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text}: at word {word}: expected {expected}")]
pub struct SyntaxError {
    /// The text given.
    pub text: String,
    /// 1-based word number.
    pub word: usize,
    /// What was expected there.
    pub expected: String,
}

/// A concrete packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    /// IP protocol.
    pub proto: u8,
    /// Source address.
    pub src: IpAddr,
    /// Source port.
    pub sport: u16,
    /// Destination address.
    pub dst: IpAddr,
    /// Destination port.
    pub dport: u16,
    /// Input interface.
    pub iif: Option<String>,
    /// Output interface.
    pub oif: Option<String>,
    /// Connection state (unknown when absent).
    pub ct: Option<CtState>,
    /// TCP flags.
    pub flags: u8,
    /// Application.
    pub app: Option<String>,
}

const FLAG_LETTERS: [(char, u8); 8] = [
    ('F', 0x01),
    ('S', 0x02),
    ('R', 0x04),
    ('P', 0x08),
    ('A', 0x10),
    ('U', 0x20),
    ('E', 0x40),
    ('C', 0x80),
];

fn proto_name(p: u8) -> Option<&'static str> {
    match p {
        6 => Some("tcp"),
        17 => Some("udp"),
        1 => Some("icmp"),
        58 => Some("icmpv6"),
        _ => None,
    }
}

fn proto_of(w: &str) -> Option<u8> {
    match w {
        "tcp" => Some(6),
        "udp" => Some(17),
        "icmp" => Some(1),
        "icmpv6" => Some(58),
        _ => w.parse().ok(),
    }
}

fn ct_of(w: &str) -> Option<CtState> {
    Some(match w.to_ascii_lowercase().as_str() {
        "new" => CtState::New,
        "established" => CtState::Established,
        "related" => CtState::Related,
        "invalid" => CtState::Invalid,
        "untracked" => CtState::Untracked,
        _ => return None,
    })
}

fn ct_name(c: u32) -> Option<&'static str> {
    ["new", "established", "related", "invalid", "untracked"].get(c as usize).copied()
}

/// `ADDR[:PORT]`, `[ADDR6]:PORT` or a bare IPv6 address.
fn endpoint(w: &str) -> Option<(IpAddr, u16)> {
    if let Some(rest) = w.strip_prefix('[') {
        let (a, p) = rest.split_once("]:")?;
        return Some((a.parse().ok()?, p.parse().ok()?));
    }
    if let Ok(a) = w.parse::<IpAddr>() {
        return Some((a, 0));
    }
    let (a, p) = w.rsplit_once(':')?;
    let a: std::net::Ipv4Addr = a.parse().ok()?;
    Some((IpAddr::V4(a), p.parse().ok()?))
}

impl Packet {
    /// Reads `PROTO SRC[:PORT] -> DST[:PORT] [iif NAME] [oif NAME] [ct STATE] [flags F]
    /// [app NAME]`.
    pub fn parse(text: &str) -> Result<Self, SyntaxError> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let err = |word: usize, expected: &str| SyntaxError {
            text: text.to_string(),
            word: word + 1,
            expected: expected.to_string(),
        };
        let proto = words
            .first()
            .and_then(|w| proto_of(w))
            .ok_or_else(|| err(0, "a protocol (tcp, udp, icmp, icmpv6 or a number)"))?;
        let (src, sport) = words
            .get(1)
            .and_then(|w| endpoint(w))
            .ok_or_else(|| err(1, "a source ADDR[:PORT] ([ADDR]:PORT for IPv6)"))?;
        if words.get(2) != Some(&"->") {
            return Err(err(2, "'->'"));
        }
        let (dst, dport) = words
            .get(3)
            .and_then(|w| endpoint(w))
            .ok_or_else(|| err(3, "a destination ADDR[:PORT] ([ADDR]:PORT for IPv6)"))?;
        if src.is_ipv4() != dst.is_ipv4() {
            return Err(err(3, "an address of the source's family"));
        }
        let mut p = Packet {
            proto,
            src,
            sport,
            dst,
            dport,
            iif: None,
            oif: None,
            ct: None,
            flags: 0,
            app: None,
        };
        let mut k = 4;
        while k < words.len() {
            let key = words[k];
            let val = words.get(k + 1).copied().ok_or_else(|| err(k + 1, "a value"))?;
            match key {
                "iif" => p.iif = Some(val.to_string()),
                "oif" => p.oif = Some(val.to_string()),
                "app" => p.app = Some(val.to_ascii_lowercase()),
                "ct" => p.ct = Some(ct_of(val).ok_or_else(|| err(k + 1, "a connection state"))?),
                "flags" => {
                    for c in val.chars() {
                        let bit = FLAG_LETTERS
                            .iter()
                            .find(|(l, _)| *l == c.to_ascii_uppercase())
                            .ok_or_else(|| err(k + 1, "TCP flag letters (FSRPAUEC)"))?;
                        p.flags |= bit.1;
                    }
                }
                _ => return Err(err(k, "iif, oif, ct, flags or app")),
            }
            k += 2;
        }
        Ok(p)
    }

    /// The field values of the packet in a model's layout (`None`: it cannot be written
    /// there, as an IPv6 packet in a ClassBench model).
    pub fn fields(&self, model: &Model) -> Option<Vec<u32>> {
        match model.layout {
            Layout::ClassBench => {
                let (IpAddr::V4(s), IpAddr::V4(d)) = (self.src, self.dst) else {
                    return None;
                };
                Some(vec![
                    u32::from(s),
                    u32::from(d),
                    u32::from(self.sport),
                    u32::from(self.dport),
                    u32::from(self.proto),
                ])
            }
            Layout::Firewall => {
                let mut v = vec![0u32; FIELDS];
                v[FAMILY] = if self.src.is_ipv4() { 4 } else { 6 };
                put(&mut v, SRC, self.src);
                put(&mut v, DST, self.dst);
                v[SPORT] = u32::from(self.sport);
                v[DPORT] = u32::from(self.dport);
                v[PROTO] = u32::from(self.proto);
                v[IIF] = rank(&model.ifaces, self.iif.as_deref().unwrap_or(""));
                v[OIF] = rank(&model.ifaces, self.oif.as_deref().unwrap_or(""));
                v[CT] = self.ct.map_or(CT_UNKNOWN, ct_code);
                v[FLAGS] = u32::from(self.flags);
                v[APP] = self.app.as_ref().map_or(0, |a| {
                    model.apps.iter().position(|x| x == a).map_or(u32::MAX, |k| k as u32 + 1)
                });
                Some(v)
            }
        }
    }

    /// The packet with these field values.
    pub fn from_fields(model: &Model, v: &[u32]) -> Self {
        match model.layout {
            Layout::ClassBench => Packet {
                proto: v[4] as u8,
                src: IpAddr::from(v[0].to_be_bytes()),
                sport: v[2] as u16,
                dst: IpAddr::from(v[1].to_be_bytes()),
                dport: v[3] as u16,
                iif: None,
                oif: None,
                ct: None,
                flags: 0,
                app: None,
            },
            Layout::Firewall => {
                let addr = |at: usize| -> IpAddr {
                    if v[FAMILY] == 6 {
                        let x = (0..4).fold(0u128, |a, w| a << 32 | u128::from(v[at + w]));
                        IpAddr::from(x.to_be_bytes())
                    } else {
                        IpAddr::from(v[at].to_be_bytes())
                    }
                };
                let iface = |r: u32| -> Option<String> {
                    if r == 0 {
                        None
                    } else if r % 2 == 1 {
                        model.ifaces.get((r / 2) as usize).cloned()
                    } else {
                        // Between two known names: the lower one with a '!' appended sorts
                        // right after it.
                        model.ifaces.get((r / 2 - 1) as usize).map(|n| format!("{n}!"))
                    }
                };
                Packet {
                    proto: v[PROTO] as u8,
                    src: addr(SRC),
                    sport: v[SPORT] as u16,
                    dst: addr(DST),
                    dport: v[DPORT] as u16,
                    iif: iface(v[IIF]),
                    oif: iface(v[OIF]),
                    ct: ct_name(v[CT]).and_then(ct_of),
                    flags: v[FLAGS] as u8,
                    app: v[APP].checked_sub(1).and_then(|k| model.apps.get(k as usize).cloned()),
                }
            }
        }
    }
}

impl std::fmt::Display for Packet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match proto_name(self.proto) {
            Some(n) => write!(f, "{n} ")?,
            None => write!(f, "{} ", self.proto)?,
        }
        let ep = |a: IpAddr, p: u16| match a {
            IpAddr::V4(_) => format!("{a}:{p}"),
            IpAddr::V6(_) => format!("[{a}]:{p}"),
        };
        write!(f, "{} -> {}", ep(self.src, self.sport), ep(self.dst, self.dport))?;
        if let Some(i) = &self.iif {
            write!(f, " iif {i}")?;
        }
        if let Some(o) = &self.oif {
            write!(f, " oif {o}")?;
        }
        if let Some(c) = self.ct {
            write!(f, " ct {}", ct_name(ct_code(c)).unwrap_or("new"))?;
        }
        if self.flags != 0 {
            let s: String =
                FLAG_LETTERS.iter().filter(|(_, b)| self.flags & b != 0).map(|(l, _)| *l).collect();
            write!(f, " flags {s}")?;
        }
        if let Some(a) = &self.app {
            write!(f, " app {a}")?;
        }
        Ok(())
    }
}

fn put(v: &mut [u32], at: usize, a: IpAddr) {
    match a {
        IpAddr::V4(x) => v[at] = u32::from(x),
        IpAddr::V6(x) => {
            let x = u128::from(x);
            for w in 0..4 {
                v[at + w] = (x >> (96 - 32 * w)) as u32;
            }
        }
    }
}

fn rank(names: &[String], s: &str) -> u32 {
    match names.binary_search_by(|k| k.as_str().cmp(s)) {
        Ok(i) => 2 * i as u32 + 1,
        Err(i) => 2 * i as u32,
    }
}

/// Field values a witness takes where the rules leave a field free: 10.0.0.1 -> 10.0.0.2,
/// TCP from port 40000 to 80, no interface, state unknown.
pub fn free_values(layout: Layout) -> Vec<u32> {
    let (a, b) = (0x0a00_0001, 0x0a00_0002);
    match layout {
        Layout::ClassBench => vec![a, b, 40000, 80, 6],
        Layout::Firewall => {
            let mut v = vec![0u32; FIELDS];
            v[FAMILY] = 4;
            v[SRC] = a;
            v[DST] = b;
            v[SPORT] = 40000;
            v[DPORT] = 80;
            v[PROTO] = 6;
            v[CT] = CT_UNKNOWN;
            v
        }
    }
}

/// What a rule set does to a packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The deciding entry (index into [`Model::entries`]).
    pub entry: usize,
    /// Its action.
    pub action: Action,
}

/// Which entry decides packet `v` (field values) and its action.
pub fn test(m: &Manager, model: &Model, v: &[u32]) -> Outcome {
    let entry = crate::rules::decide(m, model, v);
    let action = match model.entries.get(entry).map(|e| e.flow) {
        Some(Flow::Decide(a)) => a,
        _ => Action::Drop,
    };
    Outcome { entry, action }
}

/// Why a rule can never decide a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// No packet meets its own conditions.
    Unmatchable,
    /// Earlier rules of its chain take every packet it matches (in [`Shadowed::by`]).
    Covered,
    /// No packet that reaches its chain meets its conditions ([`Shadowed::by`]: the rules
    /// that jump or go to the chain).
    Unreached,
}

/// A rule that can never decide a packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shadowed {
    /// The rule (index into [`Model::entries`]).
    pub entry: usize,
    /// Why.
    pub reason: Reason,
    /// For [`Reason::Covered`], earlier entries of its chain that together take every packet
    /// it matches, none of them needless; for [`Reason::Unreached`], the jumps to its chain.
    pub by: Vec<usize>,
    /// Whether some of the covering entries do something else with those packets.
    pub actions_differ: bool,
}

fn decides(e: &crate::rules::Entry) -> Option<Action> {
    match e.flow {
        Flow::Decide(a) => Some(a),
        _ => None,
    }
}

/// The deciding rules (not the policy) that no packet reaches, with what covers them.
///
/// Firewall rule sets are answered chain by chain on the user's rules, however many jumps
/// lead to a chain: a rule is unreachable when no packet reaching its chain gets to it and
/// matches; it is then covered by earlier rules of its chain (verdicts, `RETURN`s, gotos,
/// and jumps where the jumped-to chain decides), or no packet reaching the chain meets its
/// conditions, or none at all does. For a ClassBench list, each rule is checked point by
/// point: take a packet left in the rule's box, ask the compiled classifier which rule takes
/// it; if it is this rule, the rule is reachable, otherwise that earlier rule covers part of
/// the box and its box is taken away, until nothing is left (shadowed, by the rules taken).
/// Most rules are settled by one packet.
pub fn shadowed(m: &mut Manager, model: &Model) -> Vec<Shadowed> {
    let n = model.entries.len();
    let reached = model.decision.map(|d| {
        let reach = m.mask(model.valid, d);
        m.terminals(reach)
    });
    let free = free_values(model.layout);
    let mut out = Vec::new();
    // What each entry takes out of its chain's packets (firewall models), built on demand.
    let mut takes: Vec<Option<Id>> = vec![None; n];
    for i in 0..n.saturating_sub(1) {
        let Some(act) = decides(&model.entries[i]) else {
            continue;
        };
        let own = m.and(model.matches[i], model.valid);
        if own == FALSE {
            out.push(Shadowed {
                entry: i,
                reason: Reason::Unmatchable,
                by: Vec::new(),
                actions_differ: false,
            });
            continue;
        }
        let mut chosen = Vec::new();
        let mut left = own;
        match &reached {
            Some(r) => {
                if r.contains(&(i as u32 + 1)) {
                    continue;
                }
                let c = &model.chains[model.entries[i].chain];
                left = m.and(own, c.arrive);
                if left == FALSE {
                    out.push(Shadowed {
                        entry: i,
                        reason: Reason::Unreached,
                        by: c.callers.clone(),
                        actions_differ: false,
                    });
                    continue;
                }
                // Earlier rules of the chain that take packets, greedily in order.
                let mut rest = left;
                for j in c.entries.start..i {
                    let t = take(m, model, &mut takes, j);
                    if t != FALSE && m.and(rest, t) != FALSE {
                        chosen.push(j);
                        rest = m.diff(rest, t);
                        if rest == FALSE {
                            break;
                        }
                    }
                }
            }
            None => {
                let mut reachable = false;
                let mut rest = own;
                while let Some(p) = m.witness(rest, &|v| v == 1, &free) {
                    let j = crate::rules::decide(m, model, &p);
                    if j >= i {
                        reachable = true;
                        break;
                    }
                    chosen.push(j);
                    rest = m.diff(rest, model.matches[j]);
                }
                if reachable {
                    continue;
                }
            }
        }
        // Drop any rule the others make needless.
        let taken = |m: &mut Manager, takes: &mut Vec<Option<Id>>, j: usize| {
            if model.chains.is_empty() { model.matches[j] } else { take(m, model, takes, j) }
        };
        let mut k = 0;
        while k < chosen.len() && chosen.len() > 1 {
            let mut rest = FALSE;
            for (x, &j) in chosen.iter().enumerate() {
                if x != k {
                    let t = taken(m, &mut takes, j);
                    rest = m.or(rest, t);
                }
            }
            if m.diff(left, rest) == FALSE {
                chosen.remove(k);
            } else {
                k += 1;
            }
        }
        chosen.sort_unstable();
        let actions_differ = chosen.iter().any(|&j| decides(&model.entries[j]) != Some(act));
        out.push(Shadowed { entry: i, reason: Reason::Covered, by: chosen, actions_differ });
    }
    out
}

/// The packets entry `j` of a firewall model takes out of its chain: all it matches for a
/// verdict, a `RETURN` or a goto; for a jump, those the jumped-to chain decides.
fn take(m: &mut Manager, model: &Model, takes: &mut [Option<Id>], j: usize) -> Id {
    if let Some(t) = takes[j] {
        return t;
    }
    let t = match model.entries[j].flow {
        Flow::Decide(_) | Flow::Return | Flow::Goto(_) => model.matches[j],
        Flow::Jump(k) => {
            let d = crate::rules::decides_set(m, model.chains[k].outcome);
            m.and(model.matches[j], d)
        }
        Flow::Continue => FALSE,
    };
    takes[j] = Some(t);
    t
}

/// How two rule sets compare.
#[derive(Clone, Debug)]
pub enum Comparison {
    /// Every packet gets the same action from both.
    Equivalent,
    /// They differ.
    Differ {
        /// A packet they disagree on (field values).
        witness: Vec<u32>,
        /// What the first does to it.
        a: Outcome,
        /// What the second does to it.
        b: Outcome,
        /// How many packets they disagree on.
        count: f64,
    },
}

/// Compares two models built in the same manager.
pub fn compare(m: &mut Manager, a: &mut Model, b: &mut Model) -> Comparison {
    let (xa, xb) = (crate::rules::actions(m, a), crate::rules::actions(m, b));
    let diff = m.neq(xa, xb);
    let diff = m.and(diff, a.valid);
    let diff = m.and(diff, b.valid);
    if diff == FALSE {
        return Comparison::Equivalent;
    }
    let free = free_values(a.layout);
    let witness = m.witness(diff, &|v| v == 1, &free).expect("a non-empty set has a member");
    let count = m.count(diff, &|v| v == 1);
    Comparison::Differ { a: test(m, a, &witness), b: test(m, b, &witness), witness, count }
}

/// Reads a [`search`] constraint into a packet set.
pub fn constraint(m: &mut Manager, model: &Model, text: &str) -> Result<Id, SyntaxError> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let err = |word: usize, expected: &str| SyntaxError {
        text: text.to_string(),
        word: word + 1,
        expected: expected.to_string(),
    };
    let fw = model.layout == Layout::Firewall;
    let (f_src, f_dst, f_sport, f_dport, f_proto) =
        if fw { (SRC, DST, SPORT, DPORT, PROTO) } else { (0, 1, 2, 3, 4) };
    let mut d = TRUE;
    let mut k = 0;
    while k < words.len() {
        let w = words[k];
        let value = words.get(k + 1).copied();
        let set = match w {
            "tcp" | "udp" | "icmp" | "icmpv6" => {
                let p = u32::from(proto_of(w).expect("a known name"));
                k += 1;
                m.range(f_proto, p, p, TRUE, FALSE)
            }
            "proto" => {
                let p: u8 =
                    value.and_then(|v| v.parse().ok()).ok_or_else(|| err(k + 1, "0-255"))?;
                k += 2;
                m.range(f_proto, u32::from(p), u32::from(p), TRUE, FALSE)
            }
            "src" | "dst" => {
                let v = value.ok_or_else(|| err(k + 1, "ADDR[/LEN]"))?;
                let at = if w == "src" { f_src } else { f_dst };
                let s = prefix_set(m, fw, at, v).ok_or_else(|| err(k + 1, "ADDR[/LEN]"))?;
                k += 2;
                s
            }
            "sport" | "dport" => {
                let v = value.ok_or_else(|| err(k + 1, "PORT or PORT-PORT"))?;
                let (lo, hi) = match v.split_once('-') {
                    Some((a, b)) => (a.parse::<u16>(), b.parse::<u16>()),
                    None => (v.parse::<u16>(), v.parse::<u16>()),
                };
                let (Ok(lo), Ok(hi)) = (lo, hi) else {
                    return Err(err(k + 1, "PORT or PORT-PORT (0-65535)"));
                };
                let f = if w == "sport" { f_sport } else { f_dport };
                k += 2;
                m.range(f, u32::from(lo), u32::from(hi), TRUE, FALSE)
            }
            "iif" | "oif" if fw => {
                let v = value.ok_or_else(|| err(k + 1, "an interface name"))?;
                let r = rank(&model.ifaces, v);
                k += 2;
                m.range(if w == "iif" { IIF } else { OIF }, r, r, TRUE, FALSE)
            }
            "ct" if fw => {
                let v = value.ok_or_else(|| err(k + 1, "connection states"))?;
                let mut codes = Vec::new();
                for s in v.split(',') {
                    let c = ct_code(ct_of(s).ok_or_else(|| err(k + 1, "connection states"))?);
                    codes.push((c, c));
                }
                k += 2;
                m.ranges(CT, &codes)
            }
            "app" if fw => {
                let v = value.ok_or_else(|| err(k + 1, "an application"))?.to_ascii_lowercase();
                k += 2;
                match model.apps.iter().position(|a| *a == v) {
                    Some(i) => m.range(APP, i as u32 + 1, i as u32 + 1, TRUE, FALSE),
                    // An application no rule names: any value no rule tests.
                    None => {
                        let n = model.apps.len() as u32 + 1;
                        m.range(APP, n, n, TRUE, FALSE)
                    }
                }
            }
            _ => {
                let also = if fw { ", iif, oif, ct, app" } else { "" };
                return Err(err(
                    k,
                    &format!("tcp, udp, icmp, proto, src, dst, sport, dport{also}"),
                ));
            }
        };
        d = m.and(d, set);
    }
    Ok(d)
}

fn prefix_set(m: &mut Manager, fw: bool, at: usize, text: &str) -> Option<Id> {
    let (a, l) = text.split_once('/').map_or((text, None), |(a, l)| (a, Some(l)));
    let addr: IpAddr = a.parse().ok()?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let len: u32 = match l {
        Some(l) => l.parse().ok().filter(|&v| v <= max)?,
        None => max,
    };
    if !fw {
        let IpAddr::V4(v) = addr else { return None };
        let (lo, hi) = rampart_classify::Rule::prefix(u32::from(v), len as u8);
        return Some(m.range(at, lo, hi, TRUE, FALSE));
    }
    let mut r = vec![(0, u32::MAX); FIELDS];
    match addr {
        IpAddr::V4(v) => {
            r[FAMILY] = (4, 4);
            r[at] = rampart_classify::Rule::prefix(u32::from(v), len as u8);
        }
        IpAddr::V6(v) => {
            r[FAMILY] = (6, 6);
            let x = u128::from(v);
            for w in 0..4 {
                let bits = len.saturating_sub(32 * w as u32).min(32);
                r[at + w] = rampart_classify::Rule::prefix((x >> (96 - 32 * w)) as u32, bits as u8);
            }
        }
    }
    Some(m.cube(&r, TRUE))
}

/// A packet in `set` that the model gives `action`, if there is one.
pub fn search(m: &mut Manager, model: &mut Model, set: Id, action: Action) -> Option<Vec<u32>> {
    let code = action.code();
    let all = crate::rules::actions(m, model);
    let gets = m.map(all, &|v| u32::from(v == code));
    let s = m.and(set, gets);
    let s = m.and(s, model.valid);
    m.witness(s, &|v| v == 1, &free_values(model.layout))
}
