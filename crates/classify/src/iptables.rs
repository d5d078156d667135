//! An `iptables-save` subset: the filter table, chain policies, `-A` rules (with or without
//! the `[packets:bytes]` counters of `iptables-save -c`) with `-s`/`-d`, `-p`, `-i`/`-o`,
//! `--sport`/`--dport`, `-m multiport --sports/--dports`, `-m set --match-set NAME src|dst`,
//! `-m conntrack --ctstate`, `-m state --state`, `-m comment`, `--tcp-flags`/`--syn`, `-m icmp
//! --icmp-type` and `-m icmp6 --icmpv6-type`, `-m limit --limit N/UNIT --limit-burst B` (a
//! token bucket in capture time), `-m addrtype [!] --src-type|--dst-type` with the types an
//! address and the host's own addresses tell (UNSPEC, UNICAST, LOCAL, BROADCAST, MULTICAST),
//! and the
//! targets `ACCEPT`, `DROP`, `REJECT`, `RETURN`, user chains (`-j`), `-g`/`--goto`, and `LOG`
//! and `NFLOG` (which only log: the rule counts and the packet goes on). `!` negates `-s`,
//! `-d`, `-p`, `-i` and `-o`. The nat, mangle, raw and security tables are skipped. A rule is
//! named `CHAIN:N`, N counting from 1 within its chain, as `iptables -L --line-numbers` shows.
//!
//! Rules are read as `iptables-restore` reads them, checked against it on a corpus
//! (`tests/conformance.rs`): an option must follow the match it belongs to (`-m tcp`, or the
//! `-p` that loads it), a match's protocol must be given, each of `-s -d -p -i -o -j` once,
//! chains declared once and policies only on built-in chains. What rampart does not model (a
//! match like `hashlimit`, a target like `MARK`, `! --dport`) is refused by name, never read
//! with another meaning. Rules apply to their table's family, as on Linux: IPv4 for
//! `iptables-save` output, IPv6 for `ip6tables-save`'s (told by its header, or by every
//! address being IPv6). One extension: IPv4 and IPv6 rules may share a file, each rule with
//! an address matching its family and the others both. `REJECT` keeps its `--reject-with`
//! (by default ICMP port unreachable, or ICMPv6's).
//!
//! Chains stay chains: a jump is a reference to the chain's one body, never a copy, so a rule
//! set costs what its file holds however many paths lead through it.
//! [`Ruleset::reachable`] names the chains a packet entering one chain can reach, and
//! refuses jump loops, naming the rules that form the loop.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::classbench::ParseError;
use crate::ipset::{PrefixError, masked, parse_prefix};

/// An address match: a prefix, possibly negated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Net {
    /// The address (host bits below the prefix are cleared).
    pub addr: IpAddr,
    /// Prefix length.
    pub len: u8,
    /// `!`: everything but the prefix.
    pub not: bool,
}

/// Connection-tracking states (`--ctstate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CtState {
    /// `NEW`
    New,
    /// `ESTABLISHED`
    Established,
    /// `RELATED`
    Related,
    /// `INVALID`
    Invalid,
    /// `UNTRACKED`
    Untracked,
}

/// What a rule does when it matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `-j ACCEPT`
    Accept,
    /// `-j DROP`
    Drop,
    /// `-j REJECT`: dropped, and the sender told ([`IptRule::reject`] says how).
    Reject,
    /// `-j RETURN`
    Return,
    /// `-j CHAIN`: a user chain; a `RETURN` or its end comes back here.
    Jump(String),
    /// `-g CHAIN`: a user chain that takes this chain's place; its `RETURN` or end returns
    /// from this chain.
    Goto(String),
}

/// How a rejected packet's sender is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RejectWith {
    /// A TCP reset (`with tcp reset`, `--reject-with tcp-reset`); the rule matches TCP only.
    TcpReset,
    /// ICMP destination unreachable with this code (`with icmp type port-unreachable` is 3).
    Icmp(u8),
    /// ICMPv6 destination unreachable with this code (`port-unreachable` is 4).
    Icmpv6(u8),
    /// nftables' family-neutral codes (`with icmpx type ...`): 0 no-route, 1
    /// port-unreachable, 2 host-unreachable, 3 admin-prohibited, sent as ICMP or ICMPv6
    /// after the packet's family. A plain `reject` in an `inet` table is `Icmpx(1)`.
    Icmpx(u8),
}

/// A set of byte values: the TCP flag combinations a match allows (every form of nft's
/// `tcp flags` and iptables' `--tcp-flags` comes down to one).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ByteSet(pub [u64; 4]);

impl ByteSet {
    /// Every value.
    pub const ALL: ByteSet = ByteSet([u64::MAX; 4]);

    /// The values `f` holds for.
    pub fn from_fn(f: impl Fn(u8) -> bool) -> Self {
        let mut s = [0u64; 4];
        for v in 0..=255u8 {
            if f(v) {
                s[usize::from(v >> 6)] |= 1 << (v & 63);
            }
        }
        ByteSet(s)
    }

    /// The values whose bits under `mask` are `value` (iptables' `--tcp-flags MASK COMP`).
    pub fn masked(mask: u8, value: u8) -> Self {
        Self::from_fn(|v| v & mask == value)
    }

    /// Whether `v` is in the set.
    #[inline]
    pub fn contains(&self, v: u8) -> bool {
        self.0[usize::from(v >> 6)] >> (v & 63) & 1 == 1
    }

    /// The values in the set, in order.
    pub fn values(&self) -> impl Iterator<Item = u8> + '_ {
        (0..=255u8).filter(|&v| self.contains(v))
    }

    /// Both sets' values.
    pub fn and(&self, o: &ByteSet) -> ByteSet {
        ByteSet(std::array::from_fn(|i| self.0[i] & o.0[i]))
    }
}

impl std::fmt::Debug for ByteSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // As a mask/value pair when it is one, else the values.
        for mask in 0..=255u8 {
            let value = self.values().next().unwrap_or(0) & mask;
            if *self == ByteSet::masked(mask, value) {
                return write!(f, "ByteSet(flags & {mask:#04x} == {value:#04x})");
            }
        }
        f.debug_set().entries(self.values()).finish()
    }
}

/// A field a concatenation (or an anonymous set) matches on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Key {
    /// Source address.
    Src,
    /// Destination address.
    Dst,
    /// Source port.
    Sport,
    /// Destination port.
    Dport,
    /// Transport protocol.
    Proto,
    /// Input interface name.
    Iif,
    /// Output interface name.
    Oif,
}

/// One field's value in an element of a concatenation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    /// An address prefix (its `not` is false).
    Net(Net),
    /// An inclusive range of numbers (ports, protocols).
    Range(u32, u32),
    /// An interface name (a trailing `+` matches any suffix).
    Iface(String),
}

/// Elements over some fields, one of which the packet must match: nftables' concatenations
/// (`ip saddr . tcp dport { 10.0.0.1 . 22, 10.0.0.0/8 . 80-90 }`) and anonymous sets. Each
/// element is a box over its fields, so the classifier and the verifier take them as they
/// take port lists: as unions of boxes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tuples {
    /// The fields, in order.
    pub keys: Vec<Key>,
    /// The elements, each one value per key.
    pub elems: Vec<Vec<Value>>,
}

/// `-m limit`: a token bucket of `burst` packets, one token coming back every
/// `interval_ns` of capture time (xt_limit's credit scheme, in nanoseconds). The rule matches
/// while a token is there, and takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Limit {
    /// Nanoseconds per token (`--limit 5/min` is 12 s).
    pub interval_ns: u64,
    /// Tokens the bucket holds, and starts with (`--limit-burst`, 5 by default).
    pub burst: u32,
}

impl Limit {
    /// iptables' default: 3 per hour, burst 5.
    pub const DEFAULT: Limit = Limit { interval_ns: 1_200_000_000_000, burst: 5 };
}

/// An address type of `-m addrtype` that an address and the host's own addresses tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddrType {
    /// The unspecified address (`0.0.0.0`, `::`).
    Unspec,
    /// Any other unicast address that is not the host's.
    Unicast,
    /// One of the host's addresses.
    Local,
    /// The limited broadcast address, `255.255.255.255`.
    Broadcast,
    /// A multicast address.
    Multicast,
}

impl AddrType {
    /// This type's bit in [`AddrType::of`]'s set.
    pub fn bit(self) -> u8 {
        1 << self as u8
    }

    /// The types `a` has on a host with addresses `local`, as a set of [`AddrType::bit`]s, as
    /// the kernel's `xt_addrtype` tells them: for IPv4 the address's route type (the zero
    /// network and `255.255.255.255` are BROADCAST, `127.0.0.0/8` and the host's addresses
    /// LOCAL, others UNICAST; UNSPEC never); for IPv6 its class (`::` UNSPEC, multicast,
    /// every other address UNICAST) and LOCAL as well for `::1` and the host's addresses.
    pub fn of(a: std::net::IpAddr, local: &[std::net::IpAddr]) -> u8 {
        use std::net::IpAddr;
        let here = local.contains(&a);
        match a {
            IpAddr::V4(v) if v.octets()[0] == 0 || v.is_broadcast() => AddrType::Broadcast.bit(),
            IpAddr::V4(v) if v.is_multicast() => AddrType::Multicast.bit(),
            IpAddr::V4(v) if here || v.is_loopback() => AddrType::Local.bit(),
            IpAddr::V4(_) => AddrType::Unicast.bit(),
            IpAddr::V6(v) if v.is_unspecified() => AddrType::Unspec.bit(),
            IpAddr::V6(v) if v.is_multicast() => AddrType::Multicast.bit(),
            IpAddr::V6(v) if here || v.is_loopback() => {
                AddrType::Unicast.bit() | AddrType::Local.bit()
            }
            IpAddr::V6(_) => AddrType::Unicast.bit(),
        }
    }
}

/// One rule: what it matches (all of it must hold; `None` matches anything) and what it
/// does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IptRule {
    /// `CHAIN:N` (iptables, rampart syntax), or for nftables the chain, position and comment
    /// (`forward:3 new-tcp`).
    pub name: String,
    /// Line in the file.
    pub line: usize,
    /// The address family it applies to: 4 or 6 (`None`: both). iptables-save rules are
    /// IPv4's, ip6tables-save rules IPv6's; nftables rules take their table's family and
    /// their matches' (`ip saddr`, `icmp type`, `meta nfproto`).
    pub family: Option<u8>,
    /// `-s`
    pub src: Option<Net>,
    /// `-d`
    pub dst: Option<Net>,
    /// `-p`, `meta l4proto`: the protocols allowed, as inclusive ranges.
    pub proto: Option<Vec<(u8, u8)>>,
    /// `-i`: interface names (a trailing `+` matches any suffix), any of which matches, and
    /// whether the match is negated.
    pub iif: Option<(Vec<String>, bool)>,
    /// `-o`
    pub oif: Option<(Vec<String>, bool)>,
    /// `--sport` / `--sports`: inclusive ranges, any of which matches.
    pub sports: Option<Vec<(u16, u16)>>,
    /// `--dport` / `--dports`
    pub dports: Option<Vec<(u16, u16)>>,
    /// ICMP or ICMPv6 types allowed (`--icmp-type`, `icmp type`), as inclusive ranges. The
    /// classifier sees an ICMP packet's type in the source-port field, so these lower onto
    /// it (the rule's protocol is ICMP's or ICMPv6's).
    pub icmp_type: Option<Vec<(u8, u8)>>,
    /// ICMP or ICMPv6 codes allowed, lowered onto the destination-port field.
    pub icmp_code: Option<Vec<(u8, u8)>>,
    /// `-m set --match-set NAME src`, `ip saddr @NAME`: the set, and whether the match is
    /// negated (`ip saddr != @NAME`).
    pub src_set: Option<(String, bool)>,
    /// `-m set --match-set NAME dst`
    pub dst_set: Option<(String, bool)>,
    /// Concatenations and anonymous sets: each must hold.
    pub tuples: Vec<Tuples>,
    /// `-m conntrack --ctstate`, `ct state`: any of these (an empty list: no packet).
    pub ct: Option<Vec<CtState>>,
    /// `--tcp-flags MASK COMP` / `--syn`, `tcp flags ...`: the flag bytes allowed.
    pub tcp_flags: Option<ByteSet>,
    /// `-m limit`: the rule matches while its bucket has a token.
    pub limit: Option<Limit>,
    /// `-m addrtype --src-type`: the types allowed, and whether the match is negated.
    pub src_type: Option<(Vec<AddrType>, bool)>,
    /// `-m addrtype --dst-type`
    pub dst_type: Option<(Vec<AddrType>, bool)>,
    /// Application names (rampart syntax `app NAME`); matched once DPI labels flows, never
    /// before.
    pub app: Vec<String>,
    /// `-m comment --comment`, nft's `comment "..."`.
    pub comment: Option<String>,
    /// A `log` statement (`-j LOG`): its prefix (empty without one). It only logs.
    pub log: Option<String>,
    /// Whether the rule has a `counter` statement (iptables rules always count).
    pub counter: bool,
    /// How a `Reject` tells the sender.
    pub reject: Option<RejectWith>,
    /// `-j`; `None` for a rule that only counts (or logs).
    pub target: Option<Target>,
}

impl IptRule {
    /// The one protocol the rule allows, if it allows exactly one.
    pub fn single_proto(&self) -> Option<u8> {
        match self.proto.as_deref() {
            Some(&[(a, b)]) if a == b => Some(a),
            _ => None,
        }
    }
}

/// A chain and its rules.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chain {
    /// Its name.
    pub name: String,
    /// Built-in chains' policy (`ACCEPT` or `DROP`); `None` for user chains.
    pub policy: Option<Target>,
    /// Its rules in order.
    pub rules: Vec<IptRule>,
}

/// The filter table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ruleset {
    /// Chains in the order they were declared.
    pub chains: Vec<Chain>,
}

struct Lexer<'a> {
    file: &'a str,
    line: usize,
    text: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn error(&self, at: usize, expected: &str) -> ParseError {
        let mut at = at.min(self.text.len());
        while !self.text.is_char_boundary(at) {
            at -= 1;
        }
        let rest = &self.text[at..];
        let found = if rest.trim().is_empty() {
            "end of line".to_string()
        } else {
            format!("{:?}", rest.split_whitespace().next().unwrap_or(""))
        };
        ParseError {
            file: self.file.to_string(),
            line: self.line,
            column: at + 1,
            expected: expected.to_string(),
            found,
        }
    }

    /// The next word and its start, or `None` at the end; `"..."` words may hold spaces.
    fn word(&mut self) -> Option<(usize, String)> {
        let rest = &self.text[self.pos..];
        let skip = rest.len() - rest.trim_start().len();
        self.pos += skip;
        let start = self.pos;
        let rest = &self.text[self.pos..];
        if rest.is_empty() {
            return None;
        }
        if let Some(q) = rest.strip_prefix('"') {
            let end = q.find('"').map_or(q.len(), |e| e);
            self.pos += end + 2.min(rest.len() - end);
            return Some((start, q[..end].to_string()));
        }
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        self.pos += end;
        Some((start, rest[..end].to_string()))
    }

    fn need(&mut self, expected: &str) -> Result<(usize, String), ParseError> {
        let at = self.pos;
        self.word().ok_or_else(|| self.error(at, expected))
    }
}

fn net(lx: &Lexer<'_>, at: usize, w: &str, not: bool) -> Result<Net, ParseError> {
    let (addr, len) = parse_prefix(w).map_err(|e| match e {
        PrefixError::Addr => lx.error(at, "an IPv4 or IPv6 address"),
        PrefixError::Len(k) => lx.error(at + k, "a prefix length"),
    })?;
    Ok(Net { addr: masked(addr, len), len, not })
}

/// A port, a range `LO:HI` (open ends allowed outside multiport), or with `multi` a list of
/// up to 15 ports (a range counts twice), as iptables reads them.
fn ports(lx: &Lexer<'_>, at: usize, w: &str, multi: bool) -> Result<Vec<(u16, u16)>, ParseError> {
    let mut out = Vec::new();
    let mut col = at;
    let mut slots = 0;
    for part in w.split(',') {
        let one = |s: &str| s.parse::<u16>().ok();
        let r = match part.split_once(':') {
            Some((a, b)) => {
                slots += 2;
                let open = |s: &str, v: u16| if s.is_empty() && !multi { Some(v) } else { one(s) };
                open(a, 0).zip(open(b, 65535)).filter(|(l, h)| l <= h)
            }
            None => {
                slots += 1;
                one(part).map(|p| (p, p))
            }
        };
        let what = if multi {
            "a port, a range LO:HI or a list of them"
        } else {
            "a port or a range LO:HI"
        };
        out.push(r.ok_or_else(|| lx.error(col, what))?);
        col += part.len() + 1;
    }
    if multi && slots > 15 {
        return Err(lx.error(at, "at most 15 ports (a range counts as two)"));
    }
    Ok(out)
}

/// A comma-separated list of TCP flag names as the flag byte.
pub(crate) fn tcp_flags(w: &str) -> Option<u8> {
    w.split(',').try_fold(0u8, |acc, f| {
        Some(
            acc | match f.to_ascii_uppercase().as_str() {
                "FIN" => 0x01,
                "SYN" => 0x02,
                "RST" => 0x04,
                "PSH" => 0x08,
                "ACK" => 0x10,
                "URG" => 0x20,
                "ECE" => 0x40,
                "CWR" => 0x80,
                "ALL" => 0xff,
                "NONE" => 0,
                _ => return None,
            },
        )
    })
}

fn proto(w: &str) -> Option<u8> {
    match w.to_ascii_lowercase().as_str() {
        "tcp" => Some(6),
        "udp" => Some(17),
        "icmp" => Some(1),
        "icmpv6" | "ipv6-icmp" => Some(58),
        "sctp" => Some(132),
        "gre" => Some(47),
        "esp" => Some(50),
        "ah" => Some(51),
        "all" => None,
        // Other protocols by their /etc/protocols name, as iptables-save prints them.
        n => n.parse().ok().or_else(|| crate::nft::protocol_number(n)),
    }
}

/// The values of `0..=max` outside `lo..=hi`, as ranges.
pub(crate) fn complement((lo, hi): (u8, u8), max: u8) -> Vec<(u8, u8)> {
    let mut v = Vec::new();
    if lo > 0 {
        v.push((0, lo - 1));
    }
    if hi < max {
        v.push((hi + 1, max));
    }
    v
}

/// ICMP types by iptables' names: (name, type, code or `None` for any code).
const ICMP_TYPES: &[(&str, u8, Option<u8>)] = &[
    ("echo-reply", 0, None),
    ("pong", 0, None),
    ("destination-unreachable", 3, None),
    ("network-unreachable", 3, Some(0)),
    ("host-unreachable", 3, Some(1)),
    ("protocol-unreachable", 3, Some(2)),
    ("port-unreachable", 3, Some(3)),
    ("fragmentation-needed", 3, Some(4)),
    ("source-route-failed", 3, Some(5)),
    ("network-unknown", 3, Some(6)),
    ("host-unknown", 3, Some(7)),
    ("network-prohibited", 3, Some(9)),
    ("host-prohibited", 3, Some(10)),
    ("TOS-network-unreachable", 3, Some(11)),
    ("TOS-host-unreachable", 3, Some(12)),
    ("communication-prohibited", 3, Some(13)),
    ("host-precedence-violation", 3, Some(14)),
    ("precedence-cutoff", 3, Some(15)),
    ("source-quench", 4, None),
    ("redirect", 5, None),
    ("network-redirect", 5, Some(0)),
    ("host-redirect", 5, Some(1)),
    ("TOS-network-redirect", 5, Some(2)),
    ("TOS-host-redirect", 5, Some(3)),
    ("echo-request", 8, None),
    ("ping", 8, None),
    ("router-advertisement", 9, None),
    ("router-solicitation", 10, None),
    ("time-exceeded", 11, None),
    ("ttl-exceeded", 11, None),
    ("ttl-zero-during-transit", 11, Some(0)),
    ("ttl-zero-during-reassembly", 11, Some(1)),
    ("parameter-problem", 12, None),
    ("ip-header-bad", 12, Some(0)),
    ("required-option-missing", 12, Some(1)),
    ("timestamp-request", 13, None),
    ("timestamp-reply", 14, None),
    ("address-mask-request", 17, None),
    ("address-mask-reply", 18, None),
];

/// ICMPv6 types by ip6tables' names.
const ICMPV6_TYPES: &[(&str, u8, Option<u8>)] = &[
    ("destination-unreachable", 1, None),
    ("no-route", 1, Some(0)),
    ("communication-prohibited", 1, Some(1)),
    ("beyond-scope", 1, Some(2)),
    ("address-unreachable", 1, Some(3)),
    ("port-unreachable", 1, Some(4)),
    ("failed-policy", 1, Some(5)),
    ("reject-route", 1, Some(6)),
    ("packet-too-big", 2, None),
    ("time-exceeded", 3, None),
    ("ttl-exceeded", 3, None),
    ("ttl-zero-during-transit", 3, Some(0)),
    ("ttl-zero-during-reassembly", 3, Some(1)),
    ("parameter-problem", 4, None),
    ("bad-header", 4, Some(0)),
    ("unknown-header-type", 4, Some(1)),
    ("unknown-option", 4, Some(2)),
    ("echo-request", 128, None),
    ("ping", 128, None),
    ("echo-reply", 129, None),
    ("pong", 129, None),
    ("mld-listener-query", 130, None),
    ("mld-listener-report", 131, None),
    ("mld-listener-done", 132, None),
    ("router-solicitation", 133, None),
    ("router-advertisement", 134, None),
    ("neighbour-solicitation", 135, None),
    ("neighbor-solicitation", 135, None),
    ("neighbour-advertisement", 136, None),
    ("neighbor-advertisement", 136, None),
    ("redirect", 137, None),
];

/// `--icmp-type` / `--icmpv6-type`: a name, `TYPE` or `TYPE/CODE`, as (type, code); `any`
/// is (None, None).
fn icmp_type(w: &str, v6: bool) -> Option<(Option<u8>, Option<u8>)> {
    if w == "any" {
        return Some((None, None));
    }
    let table = if v6 { ICMPV6_TYPES } else { ICMP_TYPES };
    if let Some(&(_, t, c)) = table.iter().find(|(n, _, _)| n.eq_ignore_ascii_case(w)) {
        return Some((Some(t), c));
    }
    match w.split_once('/') {
        Some((t, c)) => Some((Some(t.parse().ok()?), Some(c.parse().ok()?))),
        None => Some((Some(w.parse().ok()?), None)),
    }
}

/// `--reject-with` types.
fn reject_with(w: &str) -> Option<RejectWith> {
    Some(match w {
        "tcp-reset" | "tcp-rst" => RejectWith::TcpReset,
        "icmp-net-unreachable" | "net-unreach" => RejectWith::Icmp(0),
        "icmp-host-unreachable" | "host-unreach" => RejectWith::Icmp(1),
        "icmp-proto-unreachable" | "proto-unreach" => RejectWith::Icmp(2),
        "icmp-port-unreachable" | "port-unreach" => RejectWith::Icmp(3),
        "icmp-net-prohibited" | "net-prohib" => RejectWith::Icmp(9),
        "icmp-host-prohibited" | "host-prohib" => RejectWith::Icmp(10),
        "icmp-admin-prohibited" | "admin-prohib" => RejectWith::Icmp(13),
        "icmp6-no-route" | "no-route" => RejectWith::Icmpv6(0),
        "icmp6-adm-prohibited" | "adm-prohibited" => RejectWith::Icmpv6(1),
        "icmp6-addr-unreachable" | "addr-unreach" => RejectWith::Icmpv6(3),
        "icmp6-port-unreachable" | "port-unreach6" => RejectWith::Icmpv6(4),
        "icmp6-policy-fail" | "policy-fail" => RejectWith::Icmpv6(5),
        "icmp6-reject-route" | "reject-route" => RejectWith::Icmpv6(6),
        _ => return None,
    })
}

/// The family of a filter table section of `iptables-save` (or `ip6tables-save`) output:
/// 6 when its header says ip6tables-save or every family it names is IPv6's, 4 when every
/// one is IPv4's or it names none, `None` for a section naming both (rampart's extension:
/// then each rule with an address takes its family, and the others apply to both). A
/// section names a family by its addresses and by `-p icmp` (IPv4) or `-p ipv6-icmp`
/// (IPv6), which mean nothing in the other family's table. Sets each
/// rule's family and default reject, and refuses a rule whose addresses mix families.
fn settle_family(file: &str, rules: &mut [&mut IptRule], header6: bool) -> Result<(), ParseError> {
    let fam = |n: &Option<Net>| n.map(|n| if n.addr.is_ipv4() { 4u8 } else { 6 });
    let mut seen = [false; 2];
    for r in rules.iter() {
        let by_proto = match r.single_proto() {
            Some(1) => Some(4),
            Some(58) => Some(6),
            _ => None,
        };
        for f in [fam(&r.src), fam(&r.dst), by_proto].into_iter().flatten() {
            seen[usize::from(f == 6)] = true;
        }
    }
    let section = match (header6, seen) {
        (true, _) | (false, [false, true]) => Some(6),
        (false, [_, false]) => Some(4),
        (false, [true, true]) => None,
    };
    for r in rules.iter_mut() {
        let own = match (fam(&r.src), fam(&r.dst)) {
            (Some(a), Some(b)) if a != b => {
                return Err(ParseError {
                    file: file.to_string(),
                    line: r.line,
                    column: 1,
                    expected: "-s and -d of one address family".into(),
                    found: "an IPv4 and an IPv6 address".into(),
                });
            }
            (a, b) => a.or(b),
        };
        r.family = own.or(section);
        if r.target == Some(Target::Reject) && r.reject.is_none() {
            r.reject = Some(match r.family {
                Some(4) => RejectWith::Icmp(3),
                Some(_) => RejectWith::Icmpv6(4),
                None => RejectWith::Icmpx(1),
            });
        }
    }
    Ok(())
}

/// Matches netfilter has that rampart does not read.
const UNSUPPORTED_MATCHES: &[&str] = &[
    "ah",
    "bpf",
    "cgroup",
    "cluster",
    "connbytes",
    "connlabel",
    "connlimit",
    "connmark",
    "cpu",
    "dccp",
    "devgroup",
    "dscp",
    "dst",
    "ecn",
    "esp",
    "frag",
    "hashlimit",
    "hbh",
    "helper",
    "hl",
    "iprange",
    "ipv6header",
    "ipvs",
    "length",
    "mac",
    "mark",
    "mh",
    "nfacct",
    "osf",
    "owner",
    "physdev",
    "pkttype",
    "policy",
    "quota",
    "rateest",
    "realm",
    "recent",
    "rpfilter",
    "rt",
    "sctp",
    "socket",
    "statistic",
    "string",
    "tcpmss",
    "time",
    "tos",
    "ttl",
    "u32",
    "udplite",
];

/// Targets netfilter has that rampart does not read (they decide or change packets in ways
/// rampart does not model).
const UNSUPPORTED_TARGETS: &[&str] = &[
    "AUDIT",
    "CHECKSUM",
    "CLASSIFY",
    "CLUSTERIP",
    "CONNMARK",
    "CONNSECMARK",
    "CT",
    "DNAT",
    "DSCP",
    "ECN",
    "HL",
    "HMARK",
    "IDLETIMER",
    "LED",
    "MARK",
    "MASQUERADE",
    "NETMAP",
    "NFQUEUE",
    "NOTRACK",
    "QUEUE",
    "RATEEST",
    "REDIRECT",
    "SECMARK",
    "SET",
    "SNAT",
    "SYNPROXY",
    "TCPMSS",
    "TCPOPTSTRIP",
    "TEE",
    "TOS",
    "TPROXY",
    "TRACE",
    "TTL",
    "ULOG",
];

/// Options of the LOG and NFLOG targets, and whether each takes a value. These targets only
/// log, so a rule with them counts and goes on, as in netfilter.
const LOG_OPTIONS: &[(&str, bool)] = &[
    ("--log-prefix", true),
    ("--log-level", true),
    ("--log-tcp-sequence", false),
    ("--log-tcp-options", false),
    ("--log-ip-options", false),
    ("--log-uid", false),
    ("--log-macdecode", false),
    ("--nflog-group", true),
    ("--nflog-prefix", true),
    ("--nflog-range", true),
    ("--nflog-size", true),
    ("--nflog-threshold", true),
];

/// The tables of `iptables-save` output.
const TABLES: &[&str] = &["filter", "nat", "mangle", "raw", "security"];

/// The protocol name iptables loads an implicit match by.
fn proto_match_name(p: u8) -> Option<&'static str> {
    match p {
        6 => Some("tcp"),
        17 => Some("udp"),
        132 => Some("sctp"),
        33 => Some("dccp"),
        136 => Some("udplite"),
        1 => Some("icmp"),
        58 => Some("icmp6"),
        _ => None,
    }
}

/// A `--limit` rate as nanoseconds per packet: `N/second` (`/sec`, `/s`), `/minute`
/// (`/min`, `/m`), `/hour` (`/h`), `/day` (`/d`); a bare `N` is per second.
fn rate(v: &str) -> Option<u64> {
    let (n, unit) = v.split_once('/').unwrap_or((v, "second"));
    let n: u64 = n.parse().ok().filter(|&n| n >= 1)?;
    let per: u64 = match unit {
        "s" | "sec" | "second" => 1_000_000_000,
        "m" | "min" | "minute" => 60_000_000_000,
        "h" | "hour" => 3_600_000_000_000,
        "d" | "day" => 86_400_000_000_000,
        _ => return None,
    };
    Some((per / n).max(1))
}

/// Which match an option belongs to.
fn option_match(w: &str) -> Option<&'static [&'static str]> {
    Some(match w {
        "--sport" | "--source-port" | "--dport" | "--destination-port" => &["tcp", "udp"],
        "--tcp-flags" | "--syn" => &["tcp"],
        "--sports" | "--source-ports" | "--dports" | "--destination-ports" | "--ports" => {
            &["multiport"]
        }
        "--ctstate" => &["conntrack"],
        "--state" => &["state"],
        "--match-set" => &["set"],
        "--comment" => &["comment"],
        "--icmp-type" => &["icmp"],
        "--icmpv6-type" => &["icmp6"],
        "--limit" | "--limit-burst" => &["limit"],
        "--src-type" | "--dst-type" | "--limit-iface-in" | "--limit-iface-out" => &["addrtype"],
        _ => return None,
    })
}

/// Parses `iptables-save` output (IPv4 and IPv6 rules may share one file: each rule matches
/// the family of its addresses); `file` names it in errors. Rules are read as
/// `iptables-restore` reads them: an option belongs to a match loaded before it (`-m`, or
/// the one `-p` names), each flag is given once, and a construct rampart does not model is
/// refused by name rather than read with another meaning.
pub fn parse(file: &str, text: &str) -> Result<Ruleset, ParseError> {
    let mut rs = Ruleset::default();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut table: Option<String> = None;
    // Whether the section being read was written by ip6tables-save, and the rules it added.
    let mut header6 = false;
    let mut added: Vec<(usize, usize)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut lx = Lexer { file, line: i + 1, text: line, pos: 0 };
        let t = line.trim_start();
        let at = line.len() - t.len();
        if t.is_empty() || t.starts_with('#') {
            if t.starts_with("# Generated by ") {
                header6 = t.starts_with("# Generated by ip6tables-save");
            }
            continue;
        }
        if let Some(name) = t.strip_prefix('*') {
            let name = name.trim();
            if !TABLES.contains(&name) {
                return Err(lx.error(at + 1, "a table: filter, nat, mangle, raw or security"));
            }
            table = Some(name.to_string());
            continue;
        }
        if t.trim() == "COMMIT" {
            if table.is_none() {
                return Err(lx.error(at, "a table ('*filter') before COMMIT"));
            }
            table = None;
            let mut rules: Vec<&mut IptRule> = Vec::new();
            let mut left: &mut [Chain] = &mut rs.chains;
            let mut base = 0;
            // The rules this section added, chain by chain (each chain's are contiguous).
            added.sort_unstable();
            let mut k = 0;
            while k < added.len() {
                let c = added[k].0;
                let first = added[k].1;
                let n = added[k..].iter().take_while(|x| x.0 == c).count();
                let (_, rest) = std::mem::take(&mut left).split_at_mut(c - base);
                let (this, after) = rest.split_first_mut().expect("the chain exists");
                rules.extend(this.rules[first..first + n].iter_mut());
                left = after;
                base = c + 1;
                k += n;
            }
            settle_family(file, &mut rules, header6)?;
            added.clear();
            continue;
        }
        let Some(tbl) = &table else {
            return Err(lx.error(at, "a table ('*filter') before chains and rules"));
        };
        if tbl != "filter" {
            continue;
        }
        if let Some(decl) = t.strip_prefix(':') {
            let mut parts = decl.split_whitespace();
            let name = parts.next().ok_or_else(|| lx.error(at + 1, "a chain name"))?;
            if index.contains_key(name) {
                return Err(
                    lx.error(at + 1, &format!("a new chain name ({name} is declared twice)"))
                );
            }
            let policy_at = at + 2 + name.len();
            let policy = match parts.next() {
                Some("ACCEPT") => Some(Target::Accept),
                Some("DROP") => Some(Target::Drop),
                Some("-") => None,
                _ => return Err(lx.error(policy_at, "a policy: ACCEPT, DROP or -")),
            };
            if policy.is_some() && !builtin(name) {
                return Err(lx.error(
                    policy_at,
                    &format!(
                        "- as the policy of user chain {name} (only built-in chains have one)"
                    ),
                ));
            }
            index.insert(name.to_string(), rs.chains.len());
            rs.chains.push(Chain { name: name.to_string(), policy, rules: Vec::new() });
            continue;
        }
        // `iptables-save -c` puts the rule's counters first.
        let (mut wat, mut w) = lx.need("-A")?;
        if w.starts_with('[')
            && w.ends_with(']')
            && w[1..w.len() - 1]
                .split_once(':')
                .is_some_and(|(a, b)| a.parse::<u64>().is_ok() && b.parse::<u64>().is_ok())
        {
            (wat, w) = lx.need("-A")?;
        }
        if matches!(w.as_str(), "-I" | "-D" | "-R" | "-N" | "-X" | "-P" | "-F" | "-Z" | "-E") {
            return Err(lx.error(wat, &format!("-A ({w} is not supported: rampart reads iptables-save output, which appends rules with -A)")));
        }
        if w != "-A" {
            return Err(lx.error(wat, "'-A', a chain declaration (':NAME POLICY') or COMMIT"));
        }
        let (cat, chain) = lx.need("a chain name")?;
        let Some(&ci) = index.get(&chain) else {
            return Err(lx.error(cat, "a chain declared with ':NAME' earlier"));
        };
        let n = rs.chains[ci].rules.len() + 1;
        let mut r = IptRule {
            name: format!("{chain}:{n}"),
            line: i + 1,
            counter: true,
            ..IptRule::default()
        };
        let mut not = false;
        // `-p` as given (the protocol and `!`), for the matches it loads.
        let mut proto_given: Option<(u8, bool)> = None;
        // Matches loaded so far (`-m`, or implicitly by `-p`), with where they were loaded.
        let mut loaded: Vec<(String, usize)> = Vec::new();
        let mut target_name: Option<String> = None;
        let mut seen: Vec<&'static str> = Vec::new();
        let mut once = |lx: &Lexer<'_>, at: usize, flag: &'static str| {
            if seen.contains(&flag) {
                return Err(lx.error(
                    at,
                    &format!("one {flag} per rule (multiple {flag} flags are not allowed)"),
                ));
            }
            seen.push(flag);
            Ok(())
        };
        while let Some((wat, w)) = lx.word() {
            let neg = std::mem::take(&mut not);
            if neg
                && !matches!(
                    w.as_str(),
                    "-s" | "--source"
                        | "-d"
                        | "--destination"
                        | "-p"
                        | "--protocol"
                        | "-i"
                        | "--in-interface"
                        | "-o"
                        | "--out-interface"
                        | "--src-type"
                        | "--dst-type"
                )
            {
                return Err(lx.error(
                    wat,
                    &format!(
                        "-s, -d, -p, -i, -o, --src-type or --dst-type after '!' ('! {w}' is not supported)"
                    ),
                ));
            }
            // An option of a match that is not loaded: iptables loads the match `-p` names
            // when it knows the option, and refuses it otherwise.
            if let Some(owners) = option_match(&w)
                && !loaded.iter().any(|(m, _)| owners.contains(&m.as_str()))
            {
                let implicit =
                    proto_given.and_then(|(p, not)| (!not).then(|| proto_match_name(p)).flatten());
                match implicit {
                    Some(m) if owners.contains(&m) => loaded.push((m.to_string(), wat)),
                    Some(m @ ("sctp" | "dccp" | "udplite")) if w.contains("port") => {
                        return Err(lx.error(
                            wat,
                            &format!(
                                "an option rampart reads (ports of the {m} match are not supported)"
                            ),
                        ));
                    }
                    _ => {
                        let need = owners
                            .iter()
                            .map(|m| format!("-m {m}"))
                            .collect::<Vec<_>>()
                            .join(" or ");
                        return Err(
                            lx.error(wat, &format!("{need} (or the -p it belongs to) before {w}"))
                        );
                    }
                }
            }
            match w.as_str() {
                "!" => not = true,
                "-s" | "--source" | "-d" | "--destination" => {
                    let src = w.starts_with("-s") || w == "--source";
                    once(&lx, wat, if src { "-s" } else { "-d" })?;
                    let (at, v) = lx.need("an address or prefix")?;
                    let n = net(&lx, at, &v, neg)?;
                    if src { r.src = Some(n) } else { r.dst = Some(n) }
                }
                "-p" | "--protocol" => {
                    once(&lx, wat, "-p")?;
                    let (at, v) = lx.need("a protocol")?;
                    match proto(&v) {
                        Some(p) => {
                            proto_given = Some((p, neg));
                            r.proto = Some(if neg {
                                complement((p, p), 255)
                            } else {
                                vec![(p, p)]
                            });
                        }
                        None if v.eq_ignore_ascii_case("all") => {}
                        None => return Err(lx.error(at, "a protocol name or number")),
                    }
                }
                "-i" | "--in-interface" | "-o" | "--out-interface" => {
                    let input = w.starts_with("-i") || w == "--in-interface";
                    once(&lx, wat, if input { "-i" } else { "-o" })?;
                    let (_, v) = lx.need("an interface name")?;
                    if input {
                        r.iif = Some((vec![v], neg))
                    } else {
                        r.oif = Some((vec![v], neg))
                    }
                }
                "-m" | "--match" => {
                    let (at, m) = lx.need("a match module")?;
                    // Matches run in order and a limit takes its token when reached: the model
                    // has the limit after every other match (a comment aside).
                    if r.limit.is_some() && m != "comment" {
                        return Err(lx.error(at, &format!("-j or -m comment after -m limit (a {m} match after a limit is not supported)")));
                    }
                    if !matches!(m.as_str(), "tcp" | "udp" | "icmp" | "icmp6" | "multiport" | "set" | "conntrack" | "state" | "comment" | "limit" | "addrtype") {
                        let what = if UNSUPPORTED_MATCHES.contains(&m.as_str()) {
                            format!("a match rampart reads: tcp, udp, icmp, icmp6, multiport, set, conntrack, state, comment, limit, addrtype (the {m} match is not supported)")
                        } else {
                            "a match: tcp, udp, icmp, icmp6, multiport, set, conntrack, state, comment, limit, addrtype".to_string()
                        };
                        return Err(lx.error(at, &what));
                    }
                    if m == "limit" {
                        // `-m limit` alone is iptables' default rate, 3/hour with a burst of 5.
                        r.limit.get_or_insert(Limit::DEFAULT);
                    }
                    loaded.push((m, at));
                }
                "--sport" | "--source-port" | "--dport" | "--destination-port" => {
                    let (at, v) = lx.need("ports")?;
                    let list = ports(&lx, at, &v, false)?;
                    if list.len() > 1 {
                        return Err(lx.error(at, "one port or range LO:HI (lists need -m multiport)"));
                    }
                    if w.contains("source") || w == "--sport" { r.sports = Some(list) } else { r.dports = Some(list) }
                }
                "--sports" | "--source-ports" | "--dports" | "--destination-ports" | "--ports" => {
                    let (at, v) = lx.need("ports")?;
                    if w == "--ports" {
                        return Err(lx.error(wat, "--sports or --dports (--ports, either direction, is not supported)"));
                    }
                    let list = ports(&lx, at, &v, true)?;
                    if w.contains("source") || w == "--sports" { r.sports = Some(list) } else { r.dports = Some(list) }
                }
                "--match-set" => {
                    let (_, name) = lx.need("a set name")?;
                    let (at, dir) = lx.need("src or dst")?;
                    match dir.as_str() {
                        "src" => r.src_set = Some((name, false)),
                        "dst" => r.dst_set = Some((name, false)),
                        _ => return Err(lx.error(at, "src or dst (one direction; more are not supported)")),
                    }
                }
                "--ctstate" | "--state" => {
                    let (at, v) = lx.need("connection states")?;
                    for s in v.split(',') {
                        r.ct.get_or_insert_with(Vec::new).push(match s {
                            "NEW" => CtState::New,
                            "ESTABLISHED" => CtState::Established,
                            "RELATED" => CtState::Related,
                            "INVALID" => CtState::Invalid,
                            "UNTRACKED" => CtState::Untracked,
                            "SNAT" | "DNAT" => return Err(lx.error(at, &format!("NEW, ESTABLISHED, RELATED, INVALID or UNTRACKED (state {s} is not supported)"))),
                            _ => return Err(lx.error(at, "NEW, ESTABLISHED, RELATED, INVALID or UNTRACKED")),
                        });
                    }
                }
                "--comment" => {
                    r.comment = Some(lx.need("a comment")?.1);
                }
                "--limit" => {
                    once(&lx, wat, "--limit")?;
                    let (at, v) = lx.need("a rate: N/second, N/minute, N/hour or N/day")?;
                    let interval = rate(&v).ok_or_else(|| {
                        lx.error(at, "a rate: N/second, N/minute, N/hour or N/day (N at least 1)")
                    })?;
                    r.limit.get_or_insert(Limit::DEFAULT).interval_ns = interval;
                }
                "--limit-burst" => {
                    once(&lx, wat, "--limit-burst")?;
                    let (at, v) = lx.need("a burst: a number of packets")?;
                    let burst = v
                        .parse::<u32>()
                        .ok()
                        .filter(|b| (1..=10_000).contains(b))
                        .ok_or_else(|| lx.error(at, "a burst of 1 to 10000 packets"))?;
                    r.limit.get_or_insert(Limit::DEFAULT).burst = burst;
                }
                "--src-type" | "--dst-type" => {
                    let (at, v) = lx.need("address types, like LOCAL or UNICAST,MULTICAST")?;
                    let mut types = Vec::new();
                    for t in v.split(',') {
                        types.push(match t {
                            "UNSPEC" => AddrType::Unspec,
                            "UNICAST" => AddrType::Unicast,
                            "LOCAL" => AddrType::Local,
                            "BROADCAST" => AddrType::Broadcast,
                            "MULTICAST" => AddrType::Multicast,
                            "ANYCAST" | "BLACKHOLE" | "UNREACHABLE" | "PROHIBIT" | "THROW" | "NAT" | "XRESOLVE" => {
                                return Err(lx.error(at, &format!("UNSPEC, UNICAST, LOCAL, BROADCAST or MULTICAST (type {t} is not supported: it depends on the routing table)")));
                            }
                            _ => return Err(lx.error(at, "address types: UNSPEC, UNICAST, LOCAL, BROADCAST, MULTICAST")),
                        });
                    }
                    let src = w == "--src-type";
                    once(&lx, wat, if src { "--src-type" } else { "--dst-type" })?;
                    if src { r.src_type = Some((types, neg)) } else { r.dst_type = Some((types, neg)) }
                }
                "--limit-iface-in" | "--limit-iface-out" => {
                    return Err(lx.error(wat, &format!("--src-type or --dst-type ({w} is not supported)")));
                }
                "--icmp-type" | "--icmpv6-type" => {
                    let (at, v) = lx.need("an ICMP type: a name, TYPE or TYPE/CODE")?;
                    let v6 = w == "--icmpv6-type";
                    let (t, c) = icmp_type(&v, v6).ok_or_else(|| {
                        lx.error(at, if v6 { "an ICMPv6 type: a name (echo-request, ...), TYPE or TYPE/CODE" } else { "an ICMP type: a name (echo-request, ...), TYPE or TYPE/CODE" })
                    })?;
                    if let Some(t) = t {
                        r.icmp_type = Some(vec![(t, t)]);
                    }
                    if let Some(c) = c {
                        r.icmp_code = Some(vec![(c, c)]);
                    }
                }
                "--syn" => r.tcp_flags = Some(ByteSet::masked(0x17, 0x02)),
                "--tcp-flags" => {
                    let (at, m) = lx.need("the flags to examine, like SYN,RST,ACK")?;
                    let mask = tcp_flags(&m).ok_or_else(|| lx.error(at, "TCP flags (FIN,SYN,RST,PSH,ACK,URG,ALL,NONE)"))?;
                    let (at, v) = lx.need("the flags that must be set")?;
                    let value = tcp_flags(&v).ok_or_else(|| lx.error(at, "TCP flags (FIN,SYN,RST,PSH,ACK,URG,ALL,NONE)"))?;
                    r.tcp_flags = Some(ByteSet::masked(mask, value & mask));
                }
                "-j" | "--jump" | "-g" | "--goto" => {
                    once(&lx, wat, "-j")?;
                    let goto = w == "-g" || w == "--goto";
                    let (at, v) = lx.need("a target")?;
                    r.target = match v.as_str() {
                        _ if goto => {
                            if !index.contains_key(&v) || builtin(&v) {
                                return Err(lx.error(at, "a user chain declared earlier"));
                            }
                            Some(Target::Goto(v.clone()))
                        }
                        "ACCEPT" => Some(Target::Accept),
                        "DROP" => Some(Target::Drop),
                        "REJECT" => Some(Target::Reject),
                        "RETURN" => Some(Target::Return),
                        // They only log: the rule counts and the packet goes on.
                        "LOG" | "NFLOG" => {
                            r.log = Some(String::new());
                            None
                        }
                        c if index.contains_key(c) && !builtin(c) => Some(Target::Jump(c.to_string())),
                        c if UNSUPPORTED_TARGETS.contains(&c) => {
                            return Err(lx.error(at, &format!("a target rampart reads: ACCEPT, DROP, REJECT, RETURN, LOG, NFLOG or a user chain (the {c} target is not supported)")));
                        }
                        _ => return Err(lx.error(at, "ACCEPT, DROP, REJECT, RETURN or a declared chain")),
                    };
                    target_name = Some(v);
                }
                "--reject-with" => {
                    if target_name.as_deref() != Some("REJECT") {
                        return Err(lx.error(wat, "-j REJECT before --reject-with"));
                    }
                    let (at, v) = lx.need("a reject type")?;
                    r.reject = Some(reject_with(&v).ok_or_else(|| lx.error(at, "a reject type: icmp-port-unreachable, icmp-host-prohibited, tcp-reset, icmp6-adm-prohibited, ...") )?);
                    if r.reject == Some(RejectWith::TcpReset) && proto_given != Some((6, false)) {
                        return Err(lx.error(at, "-p tcp before --reject-with tcp-reset (the kernel refuses a TCP reset for other protocols)"));
                    }
                }
                o if LOG_OPTIONS.iter().any(|(n, _)| *n == o) => {
                    if !matches!(target_name.as_deref(), Some("LOG" | "NFLOG")) {
                        return Err(lx.error(wat, &format!("-j LOG or -j NFLOG before {o}")));
                    }
                    if LOG_OPTIONS.iter().any(|&(n, v)| n == o && v) {
                        let (_, v) = lx.need("a value")?;
                        if o == "--log-prefix" || o == "--nflog-prefix" {
                            r.log = Some(v);
                        }
                    }
                }
                _ => return Err(lx.error(wat, "a supported option (-s -d -p -i -o -m --sport --dport --tcp-flags --syn --icmp-type --match-set --ctstate --comment -j -g)")),
            }
        }
        if not {
            return Err(lx.error(line.len(), "an option after '!'"));
        }
        // What iptables checks once the rule is read: a match's protocol.
        for (m, at) in &loaded {
            let ok: &[u8] = match m.as_str() {
                "tcp" => &[6],
                "udp" => &[17],
                "multiport" => &[6, 17, 33, 132, 136],
                "icmp" => &[1],
                "icmp6" => &[58],
                _ => continue,
            };
            if !proto_given.is_some_and(|(p, not)| !not && ok.contains(&p)) {
                let want = match m.as_str() {
                    "multiport" => "-p tcp or -p udp",
                    "tcp" => "-p tcp",
                    "icmp" => "-p icmp",
                    "icmp6" => "-p icmpv6",
                    _ => "-p udp",
                };
                return Err(lx.error(*at, &format!("{want} for the {m} match")));
            }
        }
        added.push((ci, rs.chains[ci].rules.len()));
        rs.chains[ci].rules.push(r);
    }
    if let Some(t) = table {
        let lines = text.lines().count();
        return Err(ParseError {
            file: file.to_string(),
            line: lines + 1,
            column: 1,
            expected: format!("COMMIT ending table *{t}"),
            found: "end of file".to_string(),
        });
    }
    Ok(rs)
}

impl Ruleset {
    /// Rules per chain, in declaration order.
    pub fn counts(&self) -> Vec<(&str, usize)> {
        self.chains.iter().map(|c| (c.name.as_str(), c.rules.len())).collect()
    }

    /// The chains a packet entering `chain` can reach (it first), each once, in declaration
    /// order after it; an error when there is no such chain or jumps loop.
    pub fn reachable(&self, chain: &str) -> Result<Vec<usize>, ChainError> {
        let index: HashMap<&str, usize> =
            self.chains.iter().enumerate().map(|(i, c)| (c.name.as_str(), i)).collect();
        let Some(&root) = index.get(chain) else {
            return Err(ChainError::Missing {
                chain: chain.to_string(),
                known: self.chains.iter().map(|c| c.name.clone()).collect(),
            });
        };
        // Depth-first, with the path of jump rules that led here (for naming a loop).
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            Open,
            Done,
        }
        let mut mark = vec![Mark::New; self.chains.len()];
        let mut path: Vec<(usize, usize)> = Vec::new(); // (chain, rule index being followed)
        mark[root] = Mark::Open;
        path.push((root, 0));
        while let Some(&mut (c, ref mut k)) = path.last_mut() {
            let rules = &self.chains[c].rules;
            let Some(r) = rules.get(*k) else {
                mark[c] = Mark::Done;
                path.pop();
                continue;
            };
            *k += 1;
            let (Some(Target::Jump(j)) | Some(Target::Goto(j))) = &r.target else { continue };
            let Some(&d) = index.get(j.as_str()) else {
                return Err(ChainError::Missing {
                    chain: j.clone(),
                    known: self.chains.iter().map(|c| c.name.clone()).collect(),
                });
            };
            match mark[d] {
                Mark::Done => {}
                Mark::New => {
                    mark[d] = Mark::Open;
                    path.push((d, 0));
                }
                Mark::Open => {
                    let from = path
                        .iter()
                        .position(|&(x, _)| x == d)
                        .expect("open chains are on the path");
                    let rules = path[from..]
                        .iter()
                        .map(|&(x, k)| {
                            let r = &self.chains[x].rules[k - 1];
                            (r.name.clone(), r.line)
                        })
                        .collect();
                    return Err(ChainError::Loop { rules });
                }
            }
        }
        let mut out = vec![root];
        out.extend((0..self.chains.len()).filter(|&i| i != root && mark[i] == Mark::Done));
        Ok(out)
    }
}

/// `A -> B -> A` for the jump rules `A:1`, `B:3`.
fn loop_chains(rules: &[(String, usize)]) -> String {
    let chain = |n: &str| n.rsplit_once(':').map_or(n, |(c, _)| c).to_string();
    let mut names: Vec<String> = rules.iter().map(|(n, _)| chain(n)).collect();
    if let Some(first) = names.first().cloned() {
        names.push(first);
    }
    names.join(" -> ")
}

/// Whether `name` is one of the filter table's built-in chains.
pub fn builtin(name: &str) -> bool {
    matches!(name, "INPUT" | "FORWARD" | "OUTPUT")
}

/// Why the chains cannot be walked from a chain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// The chain (entered or jumped to) does not exist.
    #[error("no chain {chain:?} (chains: {})", if known.is_empty() { "none".to_string() } else { known.join(", ") })]
    Missing {
        /// The name asked for.
        chain: String,
        /// The chains there are.
        known: Vec<String>,
    },
    /// Jumps loop: each rule (name, line) jumps to the next one's chain, the last to the
    /// first's.
    #[error("chains jump in a loop: {} ({})", loop_chains(rules), rules.iter().map(|(n, l)| format!("{n} at line {l}")).collect::<Vec<_>>().join(", "))]
    Loop {
        /// The jump rules that form the loop, with their lines.
        rules: Vec<(String, usize)>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
# Generated by iptables-save v1.8.9
*nat
:PREROUTING ACCEPT [0:0]
-A PREROUTING -p tcp --dport 80 -j REDIRECT --to-ports 8080
COMMIT
*filter
:INPUT DROP [0:0]
:FORWARD DROP [0:0]
:OUTPUT ACCEPT [0:0]
:SSH - [0:0]
-A INPUT -i lo -j ACCEPT
-A INPUT -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A INPUT -p tcp -m tcp --dport 22 -j SSH
-A INPUT -p tcp -m multiport --dports 80,443,8000:8080 -m comment --comment \"web ports\" -j ACCEPT
-A INPUT -m set --match-set blocklist src -j DROP
-A INPUT ! -s 10.0.0.0/8 -p udp --sport 53 -j ACCEPT
-A SSH -s 192.168.1.0/24 -j RETURN
-A SSH -j REJECT --reject-with icmp-port-unreachable
COMMIT
";

    #[test]
    fn parses_the_filter_table_and_skips_others() {
        let rs = parse("rules", SAMPLE).unwrap();
        assert_eq!(rs.counts(), vec![("INPUT", 6), ("FORWARD", 0), ("OUTPUT", 0), ("SSH", 2)]);
        let web = &rs.chains[0].rules[3];
        assert_eq!(web.name, "INPUT:4");
        assert_eq!(web.dports, Some(vec![(80, 80), (443, 443), (8000, 8080)]));
        assert_eq!(web.comment.as_deref(), Some("web ports"));
        let not10 = &rs.chains[0].rules[5];
        assert!(not10.src.unwrap().not);
        assert_eq!(not10.proto, Some(vec![(17, 17)]));
        assert_eq!(rs.chains[0].rules[1].ct, Some(vec![CtState::Related, CtState::Established]));
        assert_eq!(rs.chains[0].rules[4].src_set, Some(("blocklist".into(), false)));
    }

    #[test]
    fn chains_reachable_from_a_chain() {
        let rs = parse("rules", SAMPLE).unwrap();
        let names =
            |v: Vec<usize>| v.iter().map(|&i| rs.chains[i].name.clone()).collect::<Vec<_>>();
        assert_eq!(names(rs.reachable("INPUT").unwrap()), ["INPUT", "SSH"]);
        assert_eq!(names(rs.reachable("FORWARD").unwrap()), ["FORWARD"]);
        assert!(matches!(rs.reachable("NOPE"), Err(ChainError::Missing { .. })));
        let rs = parse(
            "r",
            "*filter\n:INPUT ACCEPT [0:0]\n:A - [0:0]\n:B - [0:0]\n-A INPUT -j A\n-A A -p tcp -g B\n-A B -j A\nCOMMIT\n",
        )
        .unwrap();
        let e = rs.reachable("INPUT").unwrap_err();
        assert_eq!(
            e.to_string(),
            "chains jump in a loop: A -> B -> A (A:1 at line 6, B:1 at line 7)"
        );
    }

    #[test]
    fn tcp_flags() {
        let rs = parse("r", "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -p tcp --syn -j DROP\n-A INPUT -p tcp --tcp-flags SYN,ACK ACK -j ACCEPT\nCOMMIT\n").unwrap();
        assert_eq!(rs.chains[0].rules[0].tcp_flags, Some(ByteSet::masked(0x17, 0x02)));
        assert_eq!(rs.chains[0].rules[1].tcp_flags, Some(ByteSet::masked(0x12, 0x10)));
        let e = parse(
            "r",
            "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -p tcp --tcp-flags SYN,BOGUS SYN\nCOMMIT\n",
        )
        .unwrap_err();
        assert_eq!(e.column, 29);
    }

    #[test]
    fn icmp_types_comments_rejects_logs_and_families() {
        let v4 = "# Generated by iptables-save v1.8.9\n*filter\n:INPUT DROP [0:0]\n\
            -A INPUT -p icmp -m icmp --icmp-type 8 -m comment --comment \"ping in\" -j ACCEPT\n\
            -A INPUT -p icmp --icmp-type port-unreachable -j ACCEPT\n\
            -A INPUT -p icmp -m icmp --icmp-type 3/4 -j ACCEPT\n\
            -A INPUT -p tcp -j REJECT --reject-with tcp-reset\n\
            -A INPUT -j REJECT\n\
            -A INPUT -j LOG --log-prefix \"in: \"\nCOMMIT\n";
        let rs = parse("r", v4).unwrap();
        let r = &rs.chains[0].rules;
        assert_eq!((r[0].icmp_type.clone(), r[0].icmp_code.clone()), (Some(vec![(8, 8)]), None));
        assert_eq!(r[0].comment.as_deref(), Some("ping in"));
        assert_eq!(r[1].icmp_type, Some(vec![(3, 3)]));
        assert_eq!(r[1].icmp_code, Some(vec![(3, 3)]));
        assert_eq!(r[2].icmp_code, Some(vec![(4, 4)]));
        assert_eq!(r[3].reject, Some(RejectWith::TcpReset));
        assert_eq!(r[4].reject, Some(RejectWith::Icmp(3)));
        assert_eq!((r[5].log.as_deref(), r[5].target.clone()), (Some("in: "), None));
        // iptables-save rules are IPv4's, even without an address.
        assert!(r.iter().all(|r| r.family == Some(4)));
        let v6 = "# Generated by ip6tables-save v1.8.9\n*filter\n:INPUT DROP [0:0]\n\
            -A INPUT -p ipv6-icmp -m icmp6 --icmpv6-type 135 -j ACCEPT\n\
            -A INPUT -p tcp -j REJECT\nCOMMIT\n";
        let rs = parse("r", v6).unwrap();
        let r = &rs.chains[0].rules;
        assert!(r.iter().all(|r| r.family == Some(6)));
        assert_eq!(r[0].icmp_type, Some(vec![(135, 135)]));
        assert_eq!(r[1].reject, Some(RejectWith::Icmpv6(4)));
        // Without a header, the addresses tell; a file mixing both keeps addressless rules
        // for both families.
        let rs = parse(
            "r",
            "*filter\n:INPUT DROP [0:0]\n-A INPUT -s ::1 -j ACCEPT\n-A INPUT -j DROP\nCOMMIT\n",
        )
        .unwrap();
        assert_eq!(rs.chains[0].rules[1].family, Some(6));
        let rs = parse("r", "*filter\n:INPUT DROP [0:0]\n-A INPUT -s ::1 -j ACCEPT\n-A INPUT -s 10.0.0.1 -j ACCEPT\n-A INPUT -j DROP\nCOMMIT\n").unwrap();
        assert_eq!(rs.chains[0].rules[2].family, None);
        let rs = parse("r", "*filter\n:INPUT DROP [0:0]\n-A INPUT -p icmp -j ACCEPT\n-A INPUT -p ipv6-icmp -j ACCEPT\n-A INPUT -j DROP\nCOMMIT\n").unwrap();
        assert_eq!(rs.chains[0].rules[2].family, None);
        let rs = parse("r", "*filter\n:INPUT DROP [0:0]\n-A INPUT -p ipv6-icmp -j ACCEPT\n-A INPUT -j DROP\nCOMMIT\n").unwrap();
        assert_eq!(rs.chains[0].rules[1].family, Some(6));
        let e = parse(
            "r",
            "*filter\n:INPUT DROP [0:0]\n-A INPUT -s ::1 -d 10.0.0.1 -j ACCEPT\nCOMMIT\n",
        )
        .unwrap_err();
        assert_eq!(e.line, 3);
        let e = parse("r", "*filter\n:INPUT DROP [0:0]\n-A INPUT -p udp -j REJECT --reject-with tcp-reset\nCOMMIT\n").unwrap_err();
        assert!(e.expected.contains("-p tcp"), "{e}");
        let e =
            parse("r", "*filter\n:INPUT DROP [0:0]\n-A INPUT --icmp-type 8 -j ACCEPT\nCOMMIT\n")
                .unwrap_err();
        assert!(e.expected.contains("-m icmp"), "{e}");
        let e = parse(
            "r",
            "*filter\n:INPUT DROP [0:0]\n-A INPUT -p icmp --icmp-type bogus -j ACCEPT\nCOMMIT\n",
        )
        .unwrap_err();
        assert_eq!(e.column, 30);
    }

    #[test]
    fn errors_say_where_and_what() {
        let e = parse(
            "r",
            "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -p tcp --dport 99999 -j ACCEPT\nCOMMIT\n",
        )
        .unwrap_err();
        assert_eq!((e.line, e.column), (3, 25));
        assert!(e.to_string().contains("r:3:25: expected a port"), "{e}");
        let e =
            parse("r", "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j NOWHERE\nCOMMIT\n").unwrap_err();
        assert_eq!((e.line, e.column), (3, 13));
        let e =
            parse("r", "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -s 1.2.3.4/40 -j DROP\nCOMMIT\n")
                .unwrap_err();
        assert!(e.expected.contains("prefix length"), "{e}");
        let e = parse("r", "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT --frobnicate -j DROP\n")
            .unwrap_err();
        assert_eq!(e.column, 10);
        let e = parse("r", "*filter\n:INPUT ACCEPT [0:0]\n").unwrap_err();
        assert!(e.expected.contains("COMMIT"), "{e}");
        let e = parse("r", "*filter\n:A - [0:0]\n:B - [0:0]\n:INPUT ACCEPT [0:0]\n-A A -j B\n-A B -j A\n-A INPUT -j A\nCOMMIT\n").unwrap();
        assert!(matches!(e.reachable("INPUT"), Err(ChainError::Loop { .. })), "a jump loop");
        // Found by the fuzzer: a column inside a multi-byte character.
        assert!(parse("r", "*filter\n:\u{b}\u{b}\u{b}\u{b}\u{b}\u{b}\u{91}orts").is_err());
    }
}
