//! nftables rule sets: the files `nft -f` loads and the listings `nft list ruleset` prints,
//! read into the same [`Ruleset`] the other front ends make.
//!
//! What is read:
//!
//! - `flush ruleset`, `flush table|chain|set`, `define NAME = VALUE` (and `redefine`,
//!   `undefine`) with `$NAME`, `#` comments, `;` or a line end between statements, `\` at a
//!   line's end continuing it;
//! - `table [ip|ip6|inet] NAME { ... }` holding chains and sets, and the command forms
//!   `add|create table|chain|set`, `add|insert rule` (without a position) and `add element`;
//! - base chains (`type filter hook prerouting|input|forward|output|postrouting priority P;
//!   policy accept|drop;`, P a number or `raw`, `mangle`, `dstnat` (prerouting), `filter`,
//!   `security`, `srcnat` (postrouting), with `+ N` or `- N`) and regular chains;
//! - named sets (`type` or `typeof` of `ipv4_addr`, `ipv6_addr`, `inet_service`,
//!   `inet_proto`, `ifname`, and concatenations of them; `flags interval, constant`;
//!   `elements = { ... }`) and anonymous sets `{ ... }` of single values, prefixes and ranges;
//! - matches, with `!=` (and `<`, `>`, `<=`, `>=` on numbers) where nft allows them:
//!   `ip saddr|daddr|protocol`, `ip6 saddr|daddr|nexthdr`, `meta l4proto|nfproto|protocol`,
//!   `[meta] iifname|oifname|iif|oif` (a trailing `*` matches any suffix), `tcp|udp
//!   sport|dport`, `tcp flags` in every form (a bare list: any of them set; `==`; `/ MASK`;
//!   `& MASK ==|!= VALUE`; a set of exact values), `icmp|icmpv6 type|code` by number or by
//!   nft's names, `ct state`, and concatenations of the address, port, protocol and
//!   interface matches against sets;
//! - statements `counter [packets N bytes M]`, `comment "..."`, `log` with its options (it
//!   only logs: the rule counts and the packet goes on), `meta nftrace set 1` (no effect),
//!   `limit rate N/UNIT [burst B packets]` (nft_limit's token bucket, in capture time);
//! - verdicts `accept`, `drop`, `reject [with tcp reset | with icmp|icmpv6|icmpx type
//!   CODE]`, `jump`, `goto`, `return`, `continue`.
//!
//! Matches mean what nft's bytecode does: `tcp flags syn,ack` is "syn or ack set", `tcp
//! flags != syn,ack` is "the flags are not exactly syn and ack", `ct state
//! established,related` is either state, `ct state == established,related` is no packet (a
//! packet has one state). The dependencies nft adds are kept: `ip saddr` and `icmp type` make
//! a rule IPv4's, `ip6 ...` and `icmpv6 ...` IPv6's, `tcp dport` TCP's, `reject with tcp
//! reset` TCP's; a table's family bounds its rules'. Conflicting ones (`tcp dport 22 udp
//! sport 53`, `ip saddr ... ip6 daddr ...`) are errors, as in nft. `ip6 nexthdr` is read as
//! the transport protocol, which it is for packets without extension headers.
//!
//! Anything else (a statement, a match, a set type, a chain type or family rampart does not
//! model: `limit rate over`, `vmap`, `snat`, `type nat`, `table netdev`, ...) is an error naming the
//! file, line and column and the construct, never skipped. What the model cannot hold
//! exactly is refused the same way rather than approximated: a second `iifname` match in one
//! rule, a negated concatenation, an interface name ending in `+` (which the model reads as
//! a wildcard).
//!
//! Chains are named by their nft name when no other table has a chain of that name, else
//! `FAMILY TABLE CHAIN`. A rule is named as `nft -a list ruleset` lets a user find it: its
//! chain, its position there (from 1) and its comment, `forward:3 new-tcp`. Each base chain
//! is listed in [`NftRuleset::base`] with its hook, priority and policy, ready to be lowered
//! on its own ([`crate::firewall::Firewall::from_iptables`] with its name).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::classbench::ParseError;
use crate::ipset::IpSet;
use crate::iptables::{
    ByteSet, Chain, CtState, IptRule, Key, Net, RejectWith, Ruleset, Target, Tuples, Value,
};

/// A table's address family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// `ip`: IPv4.
    Ip,
    /// `ip6`: IPv6.
    Ip6,
    /// `inet`: both.
    Inet,
}

impl Family {
    /// nft's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Family::Ip => "ip",
            Family::Ip6 => "ip6",
            Family::Inet => "inet",
        }
    }

    /// The IP version of the packets its chains see (`None`: both).
    pub fn version(self) -> Option<u8> {
        match self {
            Family::Ip => Some(4),
            Family::Ip6 => Some(6),
            Family::Inet => None,
        }
    }

    fn of(w: &str) -> Option<Self> {
        Some(match w {
            "ip" => Family::Ip,
            "ip6" => Family::Ip6,
            "inet" => Family::Inet,
            _ => return None,
        })
    }
}

/// A netfilter hook a base chain is attached to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Hook {
    /// Packets arriving, before routing.
    Prerouting,
    /// Packets for this host.
    Input,
    /// Packets routed through.
    Forward,
    /// Packets this host sends.
    Output,
    /// Packets leaving, after routing.
    Postrouting,
}

impl Hook {
    /// nft's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Hook::Prerouting => "prerouting",
            Hook::Input => "input",
            Hook::Forward => "forward",
            Hook::Output => "output",
            Hook::Postrouting => "postrouting",
        }
    }

    fn of(w: &str) -> Option<Self> {
        Some(match w {
            "prerouting" => Hook::Prerouting,
            "input" => Hook::Input,
            "forward" => Hook::Forward,
            "output" => Hook::Output,
            "postrouting" => Hook::Postrouting,
            _ => return None,
        })
    }
}

/// A base chain: where packets enter a table's rules. Only packets of its table's family
/// traverse it (an `ip` table's chains never see IPv6 packets, nor apply their policy to
/// them); the lowered chain's rules carry the family, its policy does not, so whoever runs a
/// hook's chains passes each packet only to the chains of its family.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaseChain {
    /// Its table's family.
    pub family: Family,
    /// Its table.
    pub table: String,
    /// Its name in the [`Ruleset`] (the nft name, qualified when another table has a chain
    /// of that name).
    pub chain: String,
    /// Its hook.
    pub hook: Hook,
    /// Its priority: base chains of one hook run in ascending order.
    pub priority: i32,
    /// Its policy: `Accept` or `Drop`.
    pub policy: Target,
}

/// A loaded nftables rule set.
#[derive(Clone, Debug, Default)]
pub struct NftRuleset {
    /// Every chain of every table (base chains carry their policy), rules in order.
    pub rules: Ruleset,
    /// The named address sets rules match against (keyed `FAMILY TABLE SET`).
    pub sets: HashMap<String, IpSet>,
    /// The base chains, in file order.
    pub base: Vec<BaseChain>,
    /// Every chain's `FAMILY TABLE CHAIN`, with its name in [`NftRuleset::rules`].
    pub qualified: Vec<(String, String)>,
}

impl NftRuleset {
    /// The base chains on `hook`, in the order packets meet them (priority, then file
    /// order).
    pub fn hook(&self, hook: Hook) -> Vec<&BaseChain> {
        let mut v: Vec<&BaseChain> = self.base.iter().filter(|b| b.hook == hook).collect();
        v.sort_by_key(|b| b.priority);
        v
    }

    /// The base chain a single-chain tool starts from: the forward hook's first, else the
    /// only base chain there is.
    pub fn default_chain(&self) -> Option<&BaseChain> {
        self.hook(Hook::Forward).first().copied().or(match self.base.as_slice() {
            [one] => Some(one),
            _ => None,
        })
    }

    /// The chain a user means by `name`: its name in the [`Ruleset`], or `FAMILY TABLE
    /// CHAIN`, or `TABLE CHAIN`.
    pub fn find_chain(&self, name: &str) -> Option<&str> {
        if let Some(c) = self.rules.chains.iter().find(|c| c.name == name) {
            return Some(&c.name);
        }
        let words: Vec<&str> = name.split_whitespace().collect();
        let found = |want: &dyn Fn(&[&str]) -> bool| {
            let mut hits = self.qualified.iter().filter(|(q, _)| {
                let q: Vec<&str> = q.split(' ').collect();
                want(&q)
            });
            match (hits.next(), hits.next()) {
                (Some((_, n)), None) => Some(n.as_str()),
                _ => None,
            }
        };
        match words.as_slice() {
            [f, t, c] => found(&|q| q == [*f, *t, *c]),
            [t, c] => found(&|q| q[1..] == [*t, *c]),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Tokens

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    /// A word: keywords, names, numbers, addresses, prefixes, ranges written without spaces.
    Word(String),
    /// `"..."`
    Str(String),
    /// `$NAME`
    Var(String),
    /// `@NAME`
    SetRef(String),
    /// Punctuation: `{ } ( ) , = == != < > <= >= & | / . - ^`
    Sym(&'static str),
    /// A line end or `;`.
    End,
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: usize,
    col: usize,
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-' | '/' | '*' | '\\')
}

fn lex(file: &str, text: &str) -> Result<Vec<Token>, ParseError> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text.split('\n').collect();
    for (li, raw) in lines.iter().enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let mut it = line.char_indices().peekable();
        let mut continued = false;
        while let Some((i, c)) = it.next() {
            let at = |tok| Token { tok, line: li + 1, col: i + 1 };
            match c {
                '#' => break,
                '\\' if line[i + 1..].trim().is_empty() => {
                    continued = true;
                    break;
                }
                c if c.is_whitespace() => {}
                ';' => out.push(at(Tok::End)),
                '{' | '}' | '(' | ')' | ',' | '&' | '|' | '^' | '+' => {
                    out.push(at(Tok::Sym(match c {
                        '{' => "{",
                        '}' => "}",
                        '(' => "(",
                        ')' => ")",
                        ',' => ",",
                        '&' => "&",
                        '|' => "|",
                        '+' => "+",
                        _ => "^",
                    })))
                }
                '=' | '!' | '<' | '>' => {
                    let eq = it.next_if(|&(_, c)| c == '=').is_some();
                    let sym = match (c, eq) {
                        ('=', false) => "=",
                        ('=', true) => "==",
                        ('!', true) => "!=",
                        ('<', false) => "<",
                        ('<', true) => "<=",
                        ('>', false) => ">",
                        ('>', true) => ">=",
                        _ => {
                            return Err(err(
                                file,
                                li + 1,
                                i + 1,
                                "'!=' (a bare '!' is not nft syntax)",
                                "'!'",
                            ));
                        }
                    };
                    out.push(at(Tok::Sym(sym)));
                }
                '"' => {
                    let mut s = String::new();
                    let mut closed = false;
                    for (_, c) in it.by_ref() {
                        if c == '"' {
                            closed = true;
                            break;
                        }
                        s.push(c);
                    }
                    if !closed {
                        return Err(err(file, li + 1, i + 1, "a closing '\"'", "end of line"));
                    }
                    out.push(at(Tok::Str(s)));
                }
                '$' | '@' => {
                    let mut s = String::new();
                    while let Some(&(_, c)) = it.peek() {
                        if !(c.is_ascii_alphanumeric()
                            || c == '_'
                            || c == '.'
                            || c == '-'
                            || c == '/')
                        {
                            break;
                        }
                        s.push(c);
                        it.next();
                    }
                    if s.is_empty() {
                        return Err(err(
                            file,
                            li + 1,
                            i + 1,
                            "a name after '$' or '@'",
                            &format!("{c:?}"),
                        ));
                    }
                    out.push(at(if c == '$' { Tok::Var(s) } else { Tok::SetRef(s) }));
                }
                c if is_word_char(c) => {
                    let mut s = String::from(c);
                    while let Some(&(_, c)) = it.peek() {
                        if !is_word_char(c) {
                            break;
                        }
                        s.push(c);
                        it.next();
                    }
                    out.push(at(match s.as_str() {
                        "." => Tok::Sym("."),
                        "-" => Tok::Sym("-"),
                        "/" => Tok::Sym("/"),
                        _ => Tok::Word(s),
                    }));
                }
                _ => return Err(err(file, li + 1, i + 1, "nft syntax", &format!("{c:?}"))),
            }
        }
        if !continued {
            out.push(Token { tok: Tok::End, line: li + 1, col: line.len() + 1 });
        }
    }
    Ok(out)
}

fn err(file: &str, line: usize, col: usize, expected: &str, found: &str) -> ParseError {
    ParseError {
        file: file.to_string(),
        line,
        column: col,
        expected: expected.to_string(),
        found: found.to_string(),
    }
}

// ---------------------------------------------------------------------------------------
// Values and their types

/// What a match's values are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dt {
    Ipv4,
    Ipv6,
    Service,
    Proto,
    Ifname,
    NfProto,
    EtherType,
    TcpFlags,
    IcmpType,
    IcmpCode,
    Icmp6Type,
    Icmp6Code,
    CtState,
}

impl Dt {
    fn name(self) -> &'static str {
        match self {
            Dt::Ipv4 => "ipv4_addr",
            Dt::Ipv6 => "ipv6_addr",
            Dt::Service => "inet_service",
            Dt::Proto => "inet_proto",
            Dt::Ifname => "ifname",
            Dt::NfProto => "nf_proto",
            Dt::EtherType => "ether_type",
            Dt::TcpFlags => "tcp_flag",
            Dt::IcmpType => "icmp_type",
            Dt::IcmpCode => "icmp_code",
            Dt::Icmp6Type => "icmpv6_type",
            Dt::Icmp6Code => "icmpv6_code",
            Dt::CtState => "ct_state",
        }
    }

    fn bitmask(self) -> bool {
        matches!(self, Dt::TcpFlags | Dt::CtState)
    }

    /// The largest value.
    fn max(self) -> u128 {
        match self {
            Dt::Ipv4 => u128::from(u32::MAX),
            Dt::Ipv6 => u128::MAX,
            Dt::Service | Dt::EtherType => 65535,
            Dt::CtState => u128::from(u32::MAX),
            _ => 255,
        }
    }

    fn what(self) -> &'static str {
        match self {
            Dt::Ipv4 => "an IPv4 address, prefix or range",
            Dt::Ipv6 => "an IPv6 address, prefix or range",
            Dt::Service => "a port, a range LO-HI or a service name",
            Dt::Proto => "a protocol name or number",
            Dt::Ifname => "an interface name",
            Dt::NfProto => "ipv4 or ipv6",
            Dt::EtherType => "ip or ip6",
            Dt::TcpFlags => "TCP flags (fin, syn, rst, psh, ack, urg, ecn, cwr)",
            Dt::IcmpType => "an ICMP type (echo-request, destination-unreachable, ... or a number)",
            Dt::IcmpCode => "an ICMP code (port-unreachable, ... or a number)",
            Dt::Icmp6Type => "an ICMPv6 type (echo-request, nd-neighbor-solicit, ... or a number)",
            Dt::Icmp6Code => "an ICMPv6 code (no-route, ... or a number)",
            Dt::CtState => "connection states (new, established, related, invalid, untracked)",
        }
    }

    fn named(self) -> &'static [(&'static str, u32)] {
        match self {
            Dt::Service => SERVICES,
            Dt::Proto => PROTOCOLS,
            Dt::NfProto => &[("ipv4", 2), ("ipv6", 10)],
            Dt::EtherType => &[("ip", 0x0800), ("ip6", 0x86dd), ("arp", 0x0806), ("vlan", 0x8100)],
            Dt::TcpFlags => TCP_FLAGS,
            Dt::IcmpType => ICMP_TYPES,
            Dt::IcmpCode => ICMP_CODES,
            Dt::Icmp6Type => ICMPV6_TYPES,
            Dt::Icmp6Code => ICMPV6_CODES,
            Dt::CtState => CT_STATES,
            _ => &[],
        }
    }

    fn of_type(w: &str) -> Option<Dt> {
        Some(match w {
            "ipv4_addr" => Dt::Ipv4,
            "ipv6_addr" => Dt::Ipv6,
            "inet_service" => Dt::Service,
            "inet_proto" => Dt::Proto,
            "ifname" => Dt::Ifname,
            _ => return None,
        })
    }
}

const TCP_FLAGS: &[(&str, u32)] = &[
    ("fin", 0x01),
    ("syn", 0x02),
    ("rst", 0x04),
    ("psh", 0x08),
    ("ack", 0x10),
    ("urg", 0x20),
    ("ecn", 0x40),
    ("ece", 0x40),
    ("cwr", 0x80),
];

const CT_STATES: &[(&str, u32)] = &[
    ("invalid", 0x01),
    ("established", 0x02),
    ("related", 0x04),
    ("new", 0x08),
    ("untracked", 0x40),
];

/// The state bit a packet's connection state sets.
fn ct_bit(s: CtState) -> u32 {
    match s {
        CtState::Invalid => 0x01,
        CtState::Established => 0x02,
        CtState::Related => 0x04,
        CtState::New => 0x08,
        CtState::Untracked => 0x40,
    }
}

const ALL_STATES: [CtState; 5] =
    [CtState::New, CtState::Established, CtState::Related, CtState::Invalid, CtState::Untracked];

const ICMP_TYPES: &[(&str, u32)] = &[
    ("echo-reply", 0),
    ("destination-unreachable", 3),
    ("source-quench", 4),
    ("redirect", 5),
    ("echo-request", 8),
    ("router-advertisement", 9),
    ("router-solicitation", 10),
    ("time-exceeded", 11),
    ("parameter-problem", 12),
    ("timestamp-request", 13),
    ("timestamp-reply", 14),
    ("info-request", 15),
    ("info-reply", 16),
    ("address-mask-request", 17),
    ("address-mask-reply", 18),
];

const ICMP_CODES: &[(&str, u32)] = &[
    ("net-unreachable", 0),
    ("host-unreachable", 1),
    ("prot-unreachable", 2),
    ("port-unreachable", 3),
    ("frag-needed", 4),
    ("net-prohibited", 9),
    ("host-prohibited", 10),
    ("admin-prohibited", 13),
];

const ICMPV6_TYPES: &[(&str, u32)] = &[
    ("destination-unreachable", 1),
    ("packet-too-big", 2),
    ("time-exceeded", 3),
    ("parameter-problem", 4),
    ("echo-request", 128),
    ("echo-reply", 129),
    ("mld-listener-query", 130),
    ("mld-listener-report", 131),
    ("mld-listener-done", 132),
    ("mld-listener-reduction", 132),
    ("nd-router-solicit", 133),
    ("nd-router-advert", 134),
    ("nd-neighbor-solicit", 135),
    ("nd-neighbor-advert", 136),
    ("nd-redirect", 137),
    ("router-renumbering", 138),
    ("ind-neighbor-solicit", 141),
    ("ind-neighbor-advert", 142),
    ("mld2-listener-report", 143),
];

const ICMPV6_CODES: &[(&str, u32)] = &[
    ("no-route", 0),
    ("admin-prohibited", 1),
    ("addr-unreachable", 3),
    ("port-unreachable", 4),
    ("policy-fail", 5),
    ("reject-route", 6),
];

const ICMPX_CODES: &[(&str, u32)] =
    &[("no-route", 0), ("port-unreachable", 1), ("host-unreachable", 2), ("admin-prohibited", 3)];

/// Protocol names as Debian's /etc/protocols gives them (nft resolves them there), and
/// nft's own `icmpv6`.
/// The protocol number of a name of /etc/protocols (the names nft and iptables accept).
pub(crate) fn protocol_number(name: &str) -> Option<u8> {
    PROTOCOLS.iter().find(|(n, _)| *n == name).and_then(|&(_, v)| u8::try_from(v).ok())
}

const PROTOCOLS: &[(&str, u32)] = &[
    ("ip", 0),
    ("hopopt", 0),
    ("icmp", 1),
    ("igmp", 2),
    ("ggp", 3),
    ("ipencap", 4),
    ("st", 5),
    ("tcp", 6),
    ("egp", 8),
    ("igp", 9),
    ("pup", 12),
    ("udp", 17),
    ("hmp", 20),
    ("xns-idp", 22),
    ("rdp", 27),
    ("iso-tp4", 29),
    ("dccp", 33),
    ("xtp", 36),
    ("ddp", 37),
    ("idpr-cmtp", 38),
    ("ipv6", 41),
    ("ipv6-route", 43),
    ("ipv6-frag", 44),
    ("idrp", 45),
    ("rsvp", 46),
    ("gre", 47),
    ("esp", 50),
    ("ah", 51),
    ("skip", 57),
    ("ipv6-icmp", 58),
    ("icmpv6", 58),
    ("ipv6-nonxt", 59),
    ("ipv6-opts", 60),
    ("rspf", 73),
    ("vmtp", 81),
    ("eigrp", 88),
    ("ospf", 89),
    ("ax.25", 93),
    ("ipip", 94),
    ("etherip", 97),
    ("encap", 98),
    ("pim", 103),
    ("ipcomp", 108),
    ("vrrp", 112),
    ("l2tp", 115),
    ("isis", 124),
    ("sctp", 132),
    ("fc", 133),
    ("mobility-header", 135),
    ("udplite", 136),
    ("mpls-in-ip", 137),
    ("manet", 138),
    ("hip", 139),
    ("shim6", 140),
    ("wesp", 141),
    ("rohc", 142),
    ("ethernet", 143),
];

/// Service names as Debian's /etc/services gives them, for the ports people name.
const SERVICES: &[(&str, u32)] = &[
    ("ftp-data", 20),
    ("ftp", 21),
    ("ssh", 22),
    ("telnet", 23),
    ("smtp", 25),
    ("domain", 53),
    ("bootps", 67),
    ("bootpc", 68),
    ("tftp", 69),
    ("http", 80),
    ("kerberos", 88),
    ("pop3", 110),
    ("sunrpc", 111),
    ("auth", 113),
    ("ntp", 123),
    ("netbios-ns", 137),
    ("netbios-dgm", 138),
    ("netbios-ssn", 139),
    ("imap2", 143),
    ("snmp", 161),
    ("snmp-trap", 162),
    ("bgp", 179),
    ("ldap", 389),
    ("https", 443),
    ("microsoft-ds", 445),
    ("isakmp", 500),
    ("syslog", 514),
    ("submission", 587),
    ("ldaps", 636),
    ("rsync", 873),
    ("imaps", 993),
    ("pop3s", 995),
    ("openvpn", 1194),
    ("mysql", 3306),
    ("ipsec-nat-t", 4500),
    ("postgresql", 5432),
];

/// One value of an element: a range in its type's numbers, or an interface name.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Val {
    Num(u128, u128),
    Name(String),
}

/// The prefixes covering `lo..=hi` in a `bits`-wide space, as (value, length).
fn range_prefixes(mut lo: u128, hi: u128, bits: u32) -> Vec<(u128, u8)> {
    let mut out = Vec::new();
    loop {
        // The largest block starting at lo that stays within hi.
        let mut size = if lo == 0 { bits } else { lo.trailing_zeros().min(bits) };
        while size > 0 {
            let span = if size >= 128 { u128::MAX } else { (1u128 << size) - 1 };
            if lo.checked_add(span).is_some_and(|end| end <= hi) {
                break;
            }
            size -= 1;
        }
        out.push((lo, (bits - size) as u8));
        let span = if size >= 128 { u128::MAX } else { (1u128 << size) - 1 };
        match lo.checked_add(span) {
            Some(end) if end < hi => lo = end + 1,
            _ => return out,
        }
    }
}

fn net_of(v: u128, len: u8, v6: bool) -> Net {
    let addr =
        if v6 { IpAddr::V6(Ipv6Addr::from(v)) } else { IpAddr::V4(Ipv4Addr::from(v as u32)) };
    Net { addr, len, not: false }
}

/// Ranges sorted and merged.
fn merge(mut v: Vec<(u128, u128)>) -> Vec<(u128, u128)> {
    v.sort_unstable();
    let mut out: Vec<(u128, u128)> = Vec::new();
    for (lo, hi) in v {
        match out.last_mut() {
            Some(l) if lo <= l.1.saturating_add(1) => l.1 = l.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

fn complement(v: &[(u128, u128)], max: u128) -> Vec<(u128, u128)> {
    let mut out = Vec::new();
    let mut next = Some(0u128);
    for &(lo, hi) in &merge(v.to_vec()) {
        if let Some(n) = next
            && lo > n
        {
            out.push((n, lo - 1));
        }
        next = hi.checked_add(1);
    }
    if let Some(n) = next
        && n <= max
    {
        out.push((n, max));
    }
    out
}

// ---------------------------------------------------------------------------------------
// Selectors: what a match looks at

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sel {
    Saddr4,
    Daddr4,
    Saddr6,
    Daddr6,
    IpProto,
    Nexthdr,
    L4proto,
    NfProto,
    EtherProto,
    Iifname,
    Oifname,
    Sport(u8),
    Dport(u8),
    TcpFlags,
    IcmpType,
    IcmpCode,
    Icmp6Type,
    Icmp6Code,
    CtState,
}

impl Sel {
    fn dt(self) -> Dt {
        match self {
            Sel::Saddr4 | Sel::Daddr4 => Dt::Ipv4,
            Sel::Saddr6 | Sel::Daddr6 => Dt::Ipv6,
            Sel::IpProto | Sel::Nexthdr | Sel::L4proto => Dt::Proto,
            Sel::NfProto => Dt::NfProto,
            Sel::EtherProto => Dt::EtherType,
            Sel::Iifname | Sel::Oifname => Dt::Ifname,
            Sel::Sport(_) | Sel::Dport(_) => Dt::Service,
            Sel::TcpFlags => Dt::TcpFlags,
            Sel::IcmpType => Dt::IcmpType,
            Sel::IcmpCode => Dt::IcmpCode,
            Sel::Icmp6Type => Dt::Icmp6Type,
            Sel::Icmp6Code => Dt::Icmp6Code,
            Sel::CtState => Dt::CtState,
        }
    }

    /// The family nft makes the match depend on.
    fn family(self) -> Option<u8> {
        match self {
            Sel::Saddr4 | Sel::Daddr4 | Sel::IpProto | Sel::IcmpType | Sel::IcmpCode => Some(4),
            Sel::Saddr6 | Sel::Daddr6 | Sel::Nexthdr | Sel::Icmp6Type | Sel::Icmp6Code => Some(6),
            _ => None,
        }
    }

    /// The transport protocol nft makes the match depend on, and its name.
    fn proto(self) -> Option<(u8, &'static str)> {
        match self {
            Sel::Sport(6) | Sel::Dport(6) | Sel::TcpFlags => Some((6, "tcp")),
            Sel::Sport(_) | Sel::Dport(_) => Some((17, "udp")),
            Sel::IcmpType | Sel::IcmpCode => Some((1, "icmp")),
            Sel::Icmp6Type | Sel::Icmp6Code => Some((58, "icmpv6")),
            _ => None,
        }
    }

    fn key(self) -> Option<Key> {
        Some(match self {
            Sel::Saddr4 | Sel::Saddr6 => Key::Src,
            Sel::Daddr4 | Sel::Daddr6 => Key::Dst,
            Sel::Sport(_) => Key::Sport,
            Sel::Dport(_) => Key::Dport,
            Sel::IpProto | Sel::Nexthdr | Sel::L4proto => Key::Proto,
            Sel::Iifname => Key::Iif,
            Sel::Oifname => Key::Oif,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Implicit,
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
}

/// The right-hand side of a match.
#[derive(Clone, Debug)]
enum Rhs {
    /// One value (a tuple for a concatenation).
    One(Vec<Val>),
    /// An anonymous set: its elements.
    Set(Vec<Vec<Val>>),
    /// A named set, with where it was named.
    Named(String, usize, usize),
}

#[derive(Clone, Debug)]
struct Match {
    sels: Vec<Sel>,
    op: Op,
    /// `& MASK` before the operator, or `/ MASK` after the value.
    mask: Option<u128>,
    rhs: Rhs,
    line: usize,
    col: usize,
}

/// A set element and its line and column.
type Placed = (Vec<Val>, (usize, usize));

/// A rule as read, before named sets and jumps are resolved.
#[derive(Clone, Debug)]
struct RuleB {
    rule: IptRule,
    col: usize,
    matches: Vec<Match>,
    jump: Option<(String, usize, usize)>,
}

#[derive(Clone, Debug)]
struct ChainB {
    name: String,
    base: Option<(Hook, i32)>,
    policy: Option<Target>,
    rules: Vec<RuleB>,
    line: usize,
    col: usize,
}

#[derive(Clone, Debug)]
struct SetB {
    name: String,
    types: Vec<Dt>,
    interval: bool,
    elems: Vec<Vec<Val>>,
}

#[derive(Clone, Debug)]
struct TableB {
    family: Family,
    name: String,
    chains: Vec<ChainB>,
    sets: Vec<SetB>,
}

// ---------------------------------------------------------------------------------------
// The parser

/// Tokens one file may expand to through `$NAME`, so that nested definitions cannot fill
/// memory.
const MAX_TOKENS: usize = 1 << 22;

struct Parser<'a> {
    file: &'a str,
    toks: Vec<Token>,
    pos: usize,
    defines: HashMap<String, Vec<Token>>,
    tables: Vec<TableB>,
}

/// Statements nft has that rampart does not model, named in the error.
const UNSUPPORTED_STATEMENTS: &[&str] = &[
    "quota",
    "snat",
    "dnat",
    "masquerade",
    "redirect",
    "tproxy",
    "queue",
    "dup",
    "fwd",
    "mark",
    "notrack",
    "synproxy",
    "set",
    "update",
    "add",
    "delete",
    "flow",
    "numgen",
    "jhash",
    "symhash",
    "fib",
    "rt",
    "socket",
    "osf",
    "exthdr",
    "ipsec",
    "sctp",
    "dccp",
    "udplite",
    "th",
    "ah",
    "esp",
    "comp",
    "frag",
    "hbh",
    "mh",
    "rt0",
    "rt2",
    "srh",
    "dst",
    "ether",
    "vlan",
    "arp",
    "igmp",
    "gre",
    "geneve",
    "vxlan",
    "tcpopt",
    "cgroupv2",
    "secmark",
    "xt",
    "last",
    "ct",
    "meta",
    "icmpx",
    "ip",
    "ip6",
    "tcp",
    "udp",
    "icmp",
    "icmpv6",
    "iif",
    "oif",
    "iifname",
    "oifname",
];

impl<'a> Parser<'a> {
    /// The token at the cursor, with `$NAME` expanded.
    fn peek(&mut self) -> Result<Option<&Token>, ParseError> {
        while let Some(Token { tok: Tok::Var(name), line, col }) = self.toks.get(self.pos).cloned()
        {
            let Some(body) = self.defines.get(&name) else {
                return Err(err(
                    self.file,
                    line,
                    col,
                    "a variable defined earlier with 'define'",
                    &format!("${name}"),
                ));
            };
            if self.toks.len() + body.len() > MAX_TOKENS {
                return Err(err(
                    self.file,
                    line,
                    col,
                    "fewer nested definitions",
                    &format!("${name}"),
                ));
            }
            let body = body.clone();
            self.toks.splice(self.pos..self.pos + 1, body);
        }
        Ok(self.toks.get(self.pos))
    }

    fn here(&mut self) -> (usize, usize) {
        match self.peek() {
            Ok(Some(t)) => (t.line, t.col),
            _ => self.toks.last().map_or((1, 1), |t| (t.line, t.col)),
        }
    }

    fn error(&mut self, expected: &str) -> ParseError {
        let file = self.file;
        match self.peek() {
            Ok(Some(t)) => {
                let found = match &t.tok {
                    Tok::Word(w) => format!("{w:?}"),
                    Tok::Str(s) => format!("\"{s}\""),
                    Tok::Var(v) => format!("${v}"),
                    Tok::SetRef(v) => format!("@{v}"),
                    Tok::Sym(c) => format!("'{c}'"),
                    Tok::End => "end of statement".into(),
                };
                err(file, t.line, t.col, expected, &found)
            }
            Ok(None) => {
                let (l, _) = self.toks.last().map_or((1, 1), |t| (t.line, t.col));
                err(file, l + 1, 1, expected, "end of file")
            }
            Err(e) => e,
        }
    }

    fn is_word(&mut self, w: &str) -> bool {
        matches!(self.peek(), Ok(Some(Token { tok: Tok::Word(x), .. })) if x == w)
    }

    fn is_sym(&mut self, s: &str) -> bool {
        matches!(self.peek(), Ok(Some(Token { tok: Tok::Sym(x), .. })) if *x == s)
    }

    fn at_end(&mut self) -> bool {
        matches!(self.peek(), Ok(Some(Token { tok: Tok::End, .. })) | Ok(None))
    }

    fn eat_word(&mut self, w: &str) -> bool {
        let y = self.is_word(w);
        self.pos += usize::from(y);
        y
    }

    fn eat_sym(&mut self, s: &str) -> bool {
        let y = self.is_sym(s);
        self.pos += usize::from(y);
        y
    }

    fn sym(&mut self, s: &str) -> Result<(), ParseError> {
        if self.eat_sym(s) { Ok(()) } else { Err(self.error(&format!("'{s}'"))) }
    }

    fn word(&mut self, expected: &str) -> Result<(String, usize, usize), ParseError> {
        match self.peek()?.cloned() {
            Some(Token { tok: Tok::Word(w), line, col }) => {
                self.pos += 1;
                Ok((w, line, col))
            }
            _ => Err(self.error(expected)),
        }
    }

    /// A name: a word or a quoted string.
    fn name(&mut self, expected: &str) -> Result<(String, usize, usize), ParseError> {
        match self.peek()?.cloned() {
            Some(Token { tok: Tok::Word(w) | Tok::Str(w), line, col }) => {
                self.pos += 1;
                Ok((w, line, col))
            }
            _ => Err(self.error(expected)),
        }
    }

    fn skip_ends(&mut self) -> Result<(), ParseError> {
        while matches!(self.peek()?, Some(Token { tok: Tok::End, .. })) {
            self.pos += 1;
        }
        Ok(())
    }

    /// The end of a statement: `;`, a line end, the end of the file, or a `}` that closes
    /// the block (left for the caller).
    fn end_of_statement(&mut self) -> Result<(), ParseError> {
        if self.at_end() {
            self.pos += 1;
            return Ok(());
        }
        if self.is_sym("}") {
            return Ok(());
        }
        Err(self.error("a newline or ';'"))
    }

    /// After a block's `}`: nft wants a newline or `;` before anything else, even the
    /// enclosing block's `}`.
    fn end_of_block(&mut self) -> Result<(), ParseError> {
        if self.at_end() {
            self.pos += 1;
            return Ok(());
        }
        Err(self.error("a newline or ';' after '}'"))
    }

    fn unsupported(&mut self, what: &str, found: &str) -> ParseError {
        let (line, col) = self.here();
        err(
            self.file,
            line,
            col,
            &format!("a construct rampart reads ({what} is not supported)"),
            found,
        )
    }

    // -- top level ------------------------------------------------------------------------

    fn file(&mut self) -> Result<(), ParseError> {
        loop {
            self.skip_ends()?;
            if self.peek()?.is_none() {
                return Ok(());
            }
            let (w, line, col) =
                self.word("a command: table, define, flush, add, create or insert")?;
            match w.as_str() {
                "flush" => self.flush()?,
                "define" | "redefine" => {
                    let (name, _, _) = self.word("a variable name")?;
                    self.sym("=")?;
                    let mut body = Vec::new();
                    let mut depth = 0usize;
                    while let Some(t) = self.peek()?.cloned() {
                        match &t.tok {
                            Tok::End if depth == 0 => break,
                            Tok::End => {}
                            Tok::Sym("{") => depth += 1,
                            Tok::Sym("}") => depth = depth.saturating_sub(1),
                            _ => {}
                        }
                        if !matches!(t.tok, Tok::End) {
                            body.push(t);
                        }
                        self.pos += 1;
                    }
                    if body.is_empty() {
                        return Err(err(self.file, line, col, "a value after '='", "nothing"));
                    }
                    self.defines.insert(name, body);
                }
                "undefine" => {
                    let (name, l, c) = self.word("a variable name")?;
                    if self.defines.remove(&name).is_none() {
                        return Err(err(
                            self.file,
                            l,
                            c,
                            "a variable defined earlier",
                            &format!("{name:?}"),
                        ));
                    }
                }
                "table" => {
                    let t = self.table_head()?;
                    self.sym("{")?;
                    self.table_body(t)?;
                    self.end_of_block_or_eof()?;
                    continue;
                }
                "add" | "create" | "insert" => self.command(&w)?,
                "include" | "delete" | "destroy" | "list" | "reset" | "rename" | "replace"
                | "monitor" | "describe" | "import" | "export" => {
                    self.pos -= 1;
                    return Err(self.unsupported(&format!("the {w} command"), &format!("{w:?}")));
                }
                _ => {
                    self.pos -= 1;
                    return Err(
                        self.error("a command: table, define, flush, add, create or insert")
                    );
                }
            }
            self.end_of_statement_top()?;
        }
    }

    fn end_of_statement_top(&mut self) -> Result<(), ParseError> {
        if self.at_end() {
            self.pos += 1;
            return Ok(());
        }
        Err(self.error("a newline or ';'"))
    }

    fn end_of_block_or_eof(&mut self) -> Result<(), ParseError> {
        if self.peek()?.is_none() {
            return Ok(());
        }
        self.end_of_block()
    }

    /// `[FAMILY] NAME`
    fn table_head(&mut self) -> Result<usize, ParseError> {
        let (w, l, c) = self.name("a table family (ip, ip6, inet) or name")?;
        let (family, name) = match Family::of(&w) {
            Some(f) if !self.is_sym("{") && !self.at_end() => (f, self.name("a table name")?.0),
            _ if matches!(w.as_str(), "arp" | "bridge" | "netdev")
                && !self.is_sym("{")
                && !self.at_end() =>
            {
                return Err(err(
                    self.file,
                    l,
                    c,
                    &format!(
                        "a table family rampart reads: ip, ip6 or inet (the {w} family is not supported)"
                    ),
                    &format!("{w:?}"),
                ));
            }
            _ => (Family::Ip, w),
        };
        Ok(self.table_index(family, &name))
    }

    fn table_index(&mut self, family: Family, name: &str) -> usize {
        match self.tables.iter().position(|t| t.family == family && t.name == name) {
            Some(i) => i,
            None => {
                self.tables.push(TableB {
                    family,
                    name: name.to_string(),
                    chains: Vec::new(),
                    sets: Vec::new(),
                });
                self.tables.len() - 1
            }
        }
    }

    /// An existing table: `[FAMILY] NAME`.
    fn existing_table(&mut self) -> Result<usize, ParseError> {
        let (first, l, c) = self.name("a table family or name")?;
        let (family, name, l, c) = match Family::of(&first) {
            Some(f) => {
                // `FAMILY TABLE ...` unless the family word is itself the table's name.
                let (n, l2, c2) = self.name("a table name")?;
                (f, n, l2, c2)
            }
            None => (Family::Ip, first, l, c),
        };
        self.tables.iter().position(|t| t.family == family && t.name == name).ok_or_else(|| {
            err(self.file, l, c, "a table created earlier", &format!("{} {name:?}", family.name()))
        })
    }

    fn flush(&mut self) -> Result<(), ParseError> {
        let (what, _, _) = self.word("ruleset, table, chain or set")?;
        match what.as_str() {
            "ruleset" => {
                let family = if self.at_end() { None } else { Some(self.word("a family")?) };
                match family {
                    None => self.tables.clear(),
                    Some((f, l, c)) => {
                        let f = Family::of(&f).ok_or_else(|| {
                            err(self.file, l, c, "ip, ip6 or inet", &format!("{f:?}"))
                        })?;
                        self.tables.retain(|t| t.family != f);
                    }
                }
            }
            "table" => {
                let t = self.existing_table()?;
                for c in &mut self.tables[t].chains {
                    c.rules.clear();
                }
                for s in &mut self.tables[t].sets {
                    s.elems.clear();
                }
            }
            "chain" => {
                let t = self.existing_table()?;
                let (c, l, col) = self.name("a chain name")?;
                let chain =
                    self.tables[t].chains.iter_mut().find(|x| x.name == c).ok_or_else(|| {
                        err(self.file, l, col, "a chain created earlier", &format!("{c:?}"))
                    })?;
                chain.rules.clear();
            }
            "set" => {
                let t = self.existing_table()?;
                let (s, l, col) = self.name("a set name")?;
                let set =
                    self.tables[t].sets.iter_mut().find(|x| x.name == s).ok_or_else(|| {
                        err(self.file, l, col, "a set created earlier", &format!("{s:?}"))
                    })?;
                set.elems.clear();
            }
            _ => {
                self.pos -= 1;
                return Err(self.error("ruleset, table, chain or set"));
            }
        }
        Ok(())
    }

    fn command(&mut self, verb: &str) -> Result<(), ParseError> {
        let (what, l, c) = self.word("table, chain, rule, set or element")?;
        match (verb, what.as_str()) {
            (_, "table") if verb != "insert" => {
                let t = self.table_head()?;
                if self.eat_sym("{") {
                    self.table_body(t)?;
                }
            }
            (_, "chain") if verb != "insert" => {
                let t = self.existing_table()?;
                let (name, l, c) = self.name("a chain name")?;
                let k = self.chain_index(t, &name, l, c);
                if self.eat_sym("{") {
                    self.chain_body(t, k)?;
                }
            }
            ("add" | "insert", "rule") => {
                let t = self.existing_table()?;
                let (name, l, c) = self.name("a chain name")?;
                let Some(k) = self.tables[t].chains.iter().position(|x| x.name == name) else {
                    return Err(err(
                        self.file,
                        l,
                        c,
                        "a chain created earlier",
                        &format!("{name:?}"),
                    ));
                };
                if self.is_word("position") || self.is_word("handle") || self.is_word("index") {
                    return Err(self.unsupported("a rule position", "position"));
                }
                let r = self.rule(t)?;
                let rules = &mut self.tables[t].chains[k].rules;
                if verb == "insert" { rules.insert(0, r) } else { rules.push(r) }
            }
            (_, "set") if verb != "insert" => {
                let t = self.existing_table()?;
                let (name, l, c) = self.name("a set name")?;
                self.sym("{")?;
                self.set_body(t, name, l, c)?;
            }
            ("add" | "create", "element") => {
                let t = self.existing_table()?;
                let (name, l, c) = self.name("a set name")?;
                let Some(k) = self.tables[t].sets.iter().position(|x| x.name == name) else {
                    return Err(err(
                        self.file,
                        l,
                        c,
                        "a set created earlier",
                        &format!("{name:?}"),
                    ));
                };
                let (types, interval) =
                    (self.tables[t].sets[k].types.clone(), self.tables[t].sets[k].interval);
                self.sym("{")?;
                let elems = self.elements(&types, Some(interval))?;
                self.tables[t].sets[k].elems.extend(elems);
            }
            (
                _,
                "map" | "flowtable" | "counter" | "quota" | "limit" | "ct" | "secmark" | "synproxy",
            ) => {
                return Err(err(
                    self.file,
                    l,
                    c,
                    &format!("a construct rampart reads (named {what} objects are not supported)"),
                    &format!("{what:?}"),
                ));
            }
            _ => {
                return Err(err(
                    self.file,
                    l,
                    c,
                    "table, chain, rule, set or element",
                    &format!("{what:?}"),
                ));
            }
        }
        Ok(())
    }

    fn chain_index(&mut self, t: usize, name: &str, line: usize, col: usize) -> usize {
        let chains = &mut self.tables[t].chains;
        match chains.iter().position(|c| c.name == name) {
            Some(k) => k,
            None => {
                chains.push(ChainB {
                    name: name.to_string(),
                    base: None,
                    policy: None,
                    rules: Vec::new(),
                    line,
                    col,
                });
                chains.len() - 1
            }
        }
    }

    fn table_body(&mut self, t: usize) -> Result<(), ParseError> {
        loop {
            self.skip_ends()?;
            if self.eat_sym("}") {
                return Ok(());
            }
            if self.peek()?.is_none() {
                return Err(self.error("'}' closing the table"));
            }
            let (w, l, c) = self.word("chain, set or comment")?;
            match w.as_str() {
                "chain" => {
                    let (name, l, c) = self.name("a chain name")?;
                    let k = self.chain_index(t, &name, l, c);
                    self.sym("{")?;
                    self.chain_body(t, k)?;
                    self.end_of_block()?;
                }
                "set" => {
                    let (name, l, c) = self.name("a set name")?;
                    self.sym("{")?;
                    self.set_body(t, name, l, c)?;
                    self.end_of_block()?;
                }
                "comment" => {
                    self.name("a comment string")?;
                    self.end_of_statement()?;
                }
                "flags" => {
                    return Err(err(
                        self.file,
                        l,
                        c,
                        "a construct rampart reads (table flags, such as dormant, are not supported)",
                        "\"flags\"",
                    ));
                }
                "map" | "flowtable" | "counter" | "quota" | "limit" | "ct" | "secmark"
                | "synproxy" => {
                    return Err(err(
                        self.file,
                        l,
                        c,
                        &format!("a construct rampart reads (named {w} objects are not supported)"),
                        &format!("{w:?}"),
                    ));
                }
                _ => return Err(err(self.file, l, c, "chain, set or comment", &format!("{w:?}"))),
            }
        }
    }

    fn chain_body(&mut self, t: usize, k: usize) -> Result<(), ParseError> {
        loop {
            self.skip_ends()?;
            if self.eat_sym("}") {
                return Ok(());
            }
            if self.peek()?.is_none() {
                return Err(self.error("'}' closing the chain"));
            }
            if self.is_word("type") {
                let (l, c) = self.here();
                self.pos += 1;
                let (ty, tl, tc) = self.word("filter")?;
                if ty != "filter" {
                    let what = if matches!(ty.as_str(), "nat" | "route") {
                        format!("a chain type rampart reads: filter (type {ty} is not supported)")
                    } else {
                        "filter, nat or route".to_string()
                    };
                    return Err(err(self.file, tl, tc, &what, &format!("{ty:?}")));
                }
                if !self.eat_word("hook") {
                    return Err(self.error("'hook'"));
                }
                let (h, hl, hc) = self.word("a hook")?;
                let hook = match Hook::of(&h) {
                    Some(h) => h,
                    None if h == "ingress" || h == "egress" => {
                        return Err(err(
                            self.file,
                            hl,
                            hc,
                            &format!("a hook rampart reads (the {h} hook is not supported)"),
                            &format!("{h:?}"),
                        ));
                    }
                    None => {
                        return Err(err(
                            self.file,
                            hl,
                            hc,
                            "prerouting, input, forward, output or postrouting",
                            &format!("{h:?}"),
                        ));
                    }
                };
                if self.is_word("device") {
                    return Err(self.unsupported("a chain device", "device"));
                }
                if !self.eat_word("priority") {
                    return Err(self.error("'priority'"));
                }
                let prio = self.priority(hook)?;
                let chain = &mut self.tables[t].chains[k];
                if chain.base.is_some_and(|b| b != (hook, prio))
                    || (chain.base.is_none() && !chain.rules.is_empty())
                {
                    return Err(err(
                        self.file,
                        l,
                        c,
                        "the chain's first declaration (a chain cannot change its type, hook or priority)",
                        "\"type\"",
                    ));
                }
                chain.base = Some((hook, prio));
                self.end_of_statement()?;
                continue;
            }
            if self.is_word("policy") {
                let (l, c) = self.here();
                self.pos += 1;
                let (p, pl, pc) = self.word("accept or drop")?;
                let policy = match p.as_str() {
                    "accept" => Target::Accept,
                    "drop" => Target::Drop,
                    _ => return Err(err(self.file, pl, pc, "accept or drop", &format!("{p:?}"))),
                };
                if self.tables[t].chains[k].base.is_none() {
                    return Err(err(
                        self.file,
                        l,
                        c,
                        "a base chain for 'policy' (only a chain with a hook has one)",
                        "\"policy\"",
                    ));
                }
                self.tables[t].chains[k].policy = Some(policy);
                self.end_of_statement()?;
                continue;
            }
            // A line that is only a comment is the chain's.
            if self.is_word("comment") {
                self.pos += 1;
                self.name("a comment string")?;
                self.end_of_statement()?;
                continue;
            }
            if self.is_word("devices") || self.is_word("flags") {
                return Err(self.unsupported("this chain property", "devices"));
            }
            let r = self.rule(t)?;
            self.tables[t].chains[k].rules.push(r);
            self.end_of_statement()?;
        }
    }

    fn priority(&mut self, hook: Hook) -> Result<i32, ParseError> {
        const WHAT: &str = "a priority: a number or raw, mangle, dstnat, filter, security, srcnat";
        let (w, l, c) = self.word(WHAT)?;
        if let Ok(n) = w.parse::<i32>() {
            return Ok(n);
        }
        // `filter-10` reads as one word.
        let (name, inline) = match w.find('-') {
            Some(i) if i > 0 => (&w[..i], Some(&w[i + 1..])),
            _ => (w.as_str(), None),
        };
        let base: i32 = match name {
            "raw" => -300,
            "mangle" => -150,
            "dstnat" if hook == Hook::Prerouting => -100,
            "filter" => 0,
            "security" => 50,
            "srcnat" if hook == Hook::Postrouting => 100,
            "dstnat" | "srcnat" => {
                let right = if name == "dstnat" { "prerouting" } else { "postrouting" };
                return Err(err(
                    self.file,
                    l,
                    c,
                    &format!(
                        "a priority valid on the {} hook ({name} is for {right})",
                        hook.name()
                    ),
                    &format!("{w:?}"),
                ));
            }
            _ => return Err(err(self.file, l, c, WHAT, &format!("{w:?}"))),
        };
        let offset = |p: &Parser<'_>, n: &str, l: usize, c: usize| -> Result<i32, ParseError> {
            n.parse::<i32>().map_err(|_| err(p.file, l, c, "a number", &format!("{n:?}")))
        };
        let range = |p: &Parser<'_>, v: Option<i32>, l: usize, c: usize| {
            v.ok_or_else(|| err(p.file, l, c, "a priority within a 32-bit integer", "more"))
        };
        if let Some(n) = inline {
            return range(self, base.checked_sub(offset(self, n, l, c)?), l, c);
        }
        if self.eat_sym("+") || self.is_sym("-") {
            let minus = self.eat_sym("-");
            let (n, nl, nc) = self.word("a number")?;
            let n = offset(self, &n, nl, nc)?;
            let v = if minus { base.checked_sub(n) } else { base.checked_add(n) };
            return range(self, v, nl, nc);
        }
        // `filter -10`: the sign is part of the number's word.
        if let Some(Token { tok: Tok::Word(n), line, col }) = self.peek()?.cloned()
            && let Some(k) = n.strip_prefix('-')
        {
            self.pos += 1;
            return range(self, base.checked_sub(offset(self, k, line, col)?), line, col);
        }
        Ok(base)
    }

    fn set_body(
        &mut self,
        t: usize,
        name: String,
        line: usize,
        col: usize,
    ) -> Result<(), ParseError> {
        let k = match self.tables[t].sets.iter().position(|s| s.name == name) {
            Some(k) => k,
            None => {
                self.tables[t].sets.push(SetB {
                    name: name.clone(),
                    types: Vec::new(),
                    interval: false,
                    elems: Vec::new(),
                });
                self.tables[t].sets.len() - 1
            }
        };
        let mut pending: Vec<Vec<Placed>> = Vec::new();
        let _ = (line, col);
        loop {
            self.skip_ends()?;
            if self.eat_sym("}") {
                break;
            }
            if self.peek()?.is_none() {
                return Err(self.error("'}' closing the set"));
            }
            let (w, l, c) =
                self.word("type, typeof, flags, elements, size, comment, policy or auto-merge")?;
            match w.as_str() {
                "type" => {
                    let mut types = Vec::new();
                    loop {
                        let (ty, tl, tc) = self.word("a set type")?;
                        let dt = Dt::of_type(&ty).ok_or_else(|| {
                            err(self.file, tl, tc, &format!("a set type rampart reads: ipv4_addr, ipv6_addr, inet_service, inet_proto, ifname ({ty} is not supported)"), &format!("{ty:?}"))
                        })?;
                        types.push(dt);
                        if !self.eat_sym(".") {
                            break;
                        }
                    }
                    self.tables[t].sets[k].types = types;
                }
                "typeof" => {
                    let mut types = Vec::new();
                    loop {
                        let (l2, c2) = self.here();
                        let sel = self.selector()?.ok_or_else(|| err(self.file, l2, c2, "a match expression (ip saddr, tcp dport, meta l4proto, iifname, ...)", "something else"))?;
                        let dt = sel.dt();
                        if Dt::of_type(dt.name()).is_none() {
                            return Err(err(
                                self.file,
                                l2,
                                c2,
                                &format!(
                                    "a set type rampart reads ({} sets are not supported)",
                                    dt.name()
                                ),
                                dt.name(),
                            ));
                        }
                        types.push(dt);
                        if !self.eat_sym(".") {
                            break;
                        }
                    }
                    self.tables[t].sets[k].types = types;
                }
                "flags" => loop {
                    let (f, fl, fc) = self.word("interval or constant")?;
                    match f.as_str() {
                        "interval" => self.tables[t].sets[k].interval = true,
                        "constant" => {}
                        "timeout" | "dynamic" => {
                            return Err(err(
                                self.file,
                                fl,
                                fc,
                                &format!(
                                    "a set flag rampart reads: interval, constant ({f} is not supported)"
                                ),
                                &format!("{f:?}"),
                            ));
                        }
                        _ => {
                            return Err(err(
                                self.file,
                                fl,
                                fc,
                                "interval, constant, timeout or dynamic",
                                &format!("{f:?}"),
                            ));
                        }
                    }
                    if !self.eat_sym(",") {
                        break;
                    }
                },
                "elements" => {
                    if self.tables[t].sets[k].types.is_empty() {
                        return Err(err(
                            self.file,
                            l,
                            c,
                            "a set type before its elements",
                            "\"elements\"",
                        ));
                    }
                    self.sym("=")?;
                    self.sym("{")?;
                    let types = self.tables[t].sets[k].types.clone();
                    let elems = self.elements_at(&types, None)?;
                    pending.push(elems);
                }
                "size" => {
                    let (n, nl, nc) = self.word("a number")?;
                    n.parse::<u32>()
                        .map_err(|_| err(self.file, nl, nc, "a number", &format!("{n:?}")))?;
                }
                "comment" => {
                    self.name("a comment string")?;
                }
                "policy" => {
                    let (p, pl, pc) = self.word("performance or memory")?;
                    if p != "performance" && p != "memory" {
                        return Err(err(
                            self.file,
                            pl,
                            pc,
                            "performance or memory",
                            &format!("{p:?}"),
                        ));
                    }
                }
                "auto-merge" | "counter" => {}
                "timeout" | "gc-interval" => {
                    return Err(err(
                        self.file,
                        l,
                        c,
                        &format!("a set property rampart reads ({w} is not supported)"),
                        &format!("{w:?}"),
                    ));
                }
                _ => {
                    return Err(err(
                        self.file,
                        l,
                        c,
                        "type, typeof, flags, elements, size, comment, policy or auto-merge",
                        &format!("{w:?}"),
                    ));
                }
            }
            self.end_of_statement()?;
        }
        let interval = self.tables[t].sets[k].interval;
        for elems in pending {
            for (e, (l, c)) in &elems {
                if !interval && e.iter().any(|v| matches!(v, Val::Num(a, b) if a != b)) {
                    return Err(err(
                        self.file,
                        *l,
                        *c,
                        &format!("'flags interval' in set {name} for prefixes or ranges"),
                        "a prefix or range",
                    ));
                }
            }
            self.tables[t].sets[k].elems.extend(elems.into_iter().map(|(e, _)| e));
        }
        Ok(())
    }

    /// Elements after `{`, up to the closing `}` (nested `{ }` sets are flattened). With
    /// `interval: Some(false)`, prefixes and ranges are refused.
    fn elements(
        &mut self,
        types: &[Dt],
        interval: Option<bool>,
    ) -> Result<Vec<Vec<Val>>, ParseError> {
        Ok(self.elements_at(types, interval)?.into_iter().map(|(e, _)| e).collect())
    }

    /// [`Parser::elements`], each with its line and column.
    fn elements_at(
        &mut self,
        types: &[Dt],
        interval: Option<bool>,
    ) -> Result<Vec<Placed>, ParseError> {
        self.elements_nested(types, interval, 0)
    }

    /// [`Parser::elements_at`] `depth` braces inside a set (bounded, so a file of nested
    /// braces is an error, not a stack overflow).
    fn elements_nested(
        &mut self,
        types: &[Dt],
        interval: Option<bool>,
        depth: usize,
    ) -> Result<Vec<Placed>, ParseError> {
        let mut out = Vec::new();
        loop {
            self.skip_ends()?;
            if self.eat_sym("}") {
                return Ok(out);
            }
            if self.is_sym("{") && depth >= 16 {
                return Err(self.error("a set element (sets nest at most 16 deep)"));
            }
            if self.eat_sym("{") {
                out.extend(self.elements_nested(types, interval, depth + 1)?);
            } else {
                let (l, c) = self.here();
                let mut e = Vec::new();
                for (i, &dt) in types.iter().enumerate() {
                    if i > 0 {
                        self.sym(".")?;
                    }
                    e.push(self.value(dt, true)?);
                }
                if interval == Some(false)
                    && e.iter().any(|v| matches!(v, Val::Num(a, b) if a != b))
                {
                    return Err(err(
                        self.file,
                        l,
                        c,
                        "'flags interval' in a set holding prefixes or ranges",
                        "a prefix or range",
                    ));
                }
                if self.eat_word("comment") {
                    self.name("a comment string")?;
                }
                if self.is_sym(":") || self.is_word(":") {
                    return Err(self.unsupported("a map", "':'"));
                }
                out.push((e, (l, c)));
            }
            self.skip_ends()?;
            if self.eat_sym(",") {
                continue;
            }
            self.skip_ends()?;
            if self.eat_sym("}") {
                return Ok(out);
            }
            return Err(self.error("',' or '}'"));
        }
    }

    /// One value of type `dt`: a number or name, a prefix, a range (`a-b` or `a - b`); with
    /// `elem`, as a set element (bitmask types take `a|b`).
    fn value(&mut self, dt: Dt, elem: bool) -> Result<Val, ParseError> {
        let (l, c) = self.here();
        let tok = self.peek()?.cloned();
        let bad = |p: &Parser<'_>, found: &str| err(p.file, l, c, dt.what(), found);
        let text = match tok.map(|t| t.tok) {
            Some(Tok::Word(w)) => w,
            Some(Tok::Str(s)) => s,
            _ => return Err(self.error(dt.what())),
        };
        self.pos += 1;
        if dt == Dt::Ifname {
            return Ok(Val::Name(text));
        }
        if dt.bitmask() {
            let mut v = self.atom(dt, &text).ok_or_else(|| bad(self, &format!("{text:?}")))?;
            while self.eat_sym("|") {
                let (w, l2, c2) = self.word(dt.what())?;
                v |= self
                    .atom(dt, &w)
                    .ok_or_else(|| err(self.file, l2, c2, dt.what(), &format!("{w:?}")))?;
            }
            let _ = elem;
            return Ok(Val::Num(v, v));
        }
        // Prefixes.
        if matches!(dt, Dt::Ipv4 | Dt::Ipv6) {
            let (a, len) = match text.split_once('/') {
                Some((a, len)) => (a.to_string(), Some(len.to_string())),
                None if self.eat_sym("/") => (text.clone(), Some(self.word("a prefix length")?.0)),
                None => (text.clone(), None),
            };
            if let Some(len) = len {
                let v = self.addr(dt, &a).ok_or_else(|| bad(self, &format!("{text:?}")))?;
                let bits = if dt == Dt::Ipv4 { 32 } else { 128 };
                let n: u32 =
                    len.parse().ok().filter(|&n| n <= bits).ok_or_else(|| {
                        err(self.file, l, c, "a prefix length", &format!("{len:?}"))
                    })?;
                // The host bits (all of them for `/0`).
                let host = dt.max().checked_shr(n).unwrap_or(0);
                let lo = v & !host & dt.max();
                return Ok(Val::Num(lo, lo | host));
            }
        }
        // A whole word that is a value, else a range written in it (`a-b`), else one with
        // spaces (`a - b`).
        if let Some(v) = self.scalar(dt, &text) {
            if self.eat_sym("-") {
                let (w, l2, c2) = self.word(dt.what())?;
                let hi = self
                    .scalar(dt, &w)
                    .ok_or_else(|| err(self.file, l2, c2, dt.what(), &format!("{w:?}")))?;
                if hi < v {
                    return Err(err(
                        self.file,
                        l,
                        c,
                        "a range whose end is not below its start",
                        &format!("{text}-{w}"),
                    ));
                }
                return Ok(Val::Num(v, hi));
            }
            return Ok(Val::Num(v, v));
        }
        for (i, _) in text.match_indices('-') {
            if let (Some(a), Some(b)) =
                (self.scalar(dt, &text[..i]), self.scalar(dt, &text[i + 1..]))
            {
                if b < a {
                    return Err(err(
                        self.file,
                        l,
                        c,
                        "a range whose end is not below its start",
                        &format!("{text:?}"),
                    ));
                }
                return Ok(Val::Num(a, b));
            }
        }
        Err(bad(self, &format!("{text:?}")))
    }

    fn addr(&self, dt: Dt, w: &str) -> Option<u128> {
        match dt {
            Dt::Ipv4 => w.parse::<Ipv4Addr>().ok().map(|a| u128::from(u32::from(a))),
            Dt::Ipv6 => w.parse::<Ipv6Addr>().ok().map(u128::from),
            _ => None,
        }
    }

    /// A number or name of type `dt`.
    fn scalar(&self, dt: Dt, w: &str) -> Option<u128> {
        if matches!(dt, Dt::Ipv4 | Dt::Ipv6) {
            return self.addr(dt, w);
        }
        self.atom(dt, w)
    }

    fn atom(&self, dt: Dt, w: &str) -> Option<u128> {
        if let Some(&(_, v)) = dt.named().iter().find(|(n, _)| *n == w) {
            return Some(u128::from(v));
        }
        let n = match w.strip_prefix("0x") {
            Some(h) => u128::from_str_radix(h, 16).ok()?,
            None => w.parse::<u128>().ok()?,
        };
        (n <= dt.max()).then_some(n)
    }

    // -- rules ------------------------------------------------------------------------------

    /// A match's left-hand side, if the cursor is at one.
    fn selector(&mut self) -> Result<Option<Sel>, ParseError> {
        let Some(Token { tok: Tok::Word(w), .. }) = self.peek()?.cloned() else { return Ok(None) };
        let next = |p: &mut Parser<'_>| -> Result<Option<String>, ParseError> {
            Ok(match p.toks.get(p.pos + 1).map(|t| &t.tok) {
                Some(Tok::Word(x)) => Some(x.clone()),
                _ => None,
            })
        };
        let n = next(self)?;
        let (sel, words) = match (w.as_str(), n.as_deref()) {
            ("ip", Some("saddr")) => (Sel::Saddr4, 2),
            ("ip", Some("daddr")) => (Sel::Daddr4, 2),
            ("ip", Some("protocol")) => (Sel::IpProto, 2),
            ("ip6", Some("saddr")) => (Sel::Saddr6, 2),
            ("ip6", Some("daddr")) => (Sel::Daddr6, 2),
            ("ip6", Some("nexthdr")) => (Sel::Nexthdr, 2),
            ("meta", Some("l4proto")) => (Sel::L4proto, 2),
            ("meta", Some("nfproto")) => (Sel::NfProto, 2),
            ("meta", Some("protocol")) => (Sel::EtherProto, 2),
            ("meta", Some("iifname" | "iif")) => (Sel::Iifname, 2),
            ("meta", Some("oifname" | "oif")) => (Sel::Oifname, 2),
            ("iifname" | "iif", _) => (Sel::Iifname, 1),
            ("oifname" | "oif", _) => (Sel::Oifname, 1),
            ("tcp", Some("sport")) => (Sel::Sport(6), 2),
            ("tcp", Some("dport")) => (Sel::Dport(6), 2),
            ("udp", Some("sport")) => (Sel::Sport(17), 2),
            ("udp", Some("dport")) => (Sel::Dport(17), 2),
            ("tcp", Some("flags")) => (Sel::TcpFlags, 2),
            ("icmp", Some("type")) => (Sel::IcmpType, 2),
            ("icmp", Some("code")) => (Sel::IcmpCode, 2),
            ("icmpv6", Some("type")) => (Sel::Icmp6Type, 2),
            ("icmpv6", Some("code")) => (Sel::Icmp6Code, 2),
            ("ct", Some("state")) => (Sel::CtState, 2),
            _ => return Ok(None),
        };
        self.pos += words;
        Ok(Some(sel))
    }

    fn rule(&mut self, t: usize) -> Result<RuleB, ParseError> {
        let (line, col) = self.here();
        let mut r = RuleB {
            rule: IptRule { line, ..IptRule::default() },
            col,
            matches: Vec::new(),
            jump: None,
        };
        let mut terminal: Option<(usize, usize)> = None;
        loop {
            if self.at_end() || self.is_sym("}") {
                break;
            }
            let (l, c) = self.here();
            if self.is_word("comment") {
                self.pos += 1;
                r.rule.comment = Some(self.name("a comment string")?.0);
                if !(self.at_end() || self.is_sym("}")) {
                    return Err(self.error("a newline or ';' (a rule's comment comes last)"));
                }
                break;
            }
            if terminal.is_some() {
                return Err(err(
                    self.file,
                    l,
                    c,
                    "the end of the rule (a statement after a verdict has no effect)",
                    "a statement",
                ));
            }
            if let Some(sel) = self.selector()? {
                if r.rule.limit.is_some() {
                    // nft takes a token when evaluation reaches the limit, so a match after
                    // it sees only what the limit let through: the model has the limit last.
                    return Err(err(
                        self.file,
                        l,
                        c,
                        "a statement or verdict after 'limit' (a match after a limit is not supported)",
                        "a match",
                    ));
                }
                let m = self.match_rest(sel, l, c)?;
                r.matches.push(m);
                continue;
            }
            let (w, wl, wc) = match self.peek()?.cloned() {
                Some(Token { tok: Tok::Word(w), line, col }) => (w, line, col),
                _ => return Err(self.error("a match, a statement or a verdict")),
            };
            self.pos += 1;
            match w.as_str() {
                "limit" => {
                    // `limit rate N/UNIT [burst B packets]`: a token bucket, as iptables'
                    // `-m limit`. `over` and byte rates are not modelled.
                    if !self.eat_word("rate") {
                        return Err(self.error("'rate'"));
                    }
                    if self.is_word("over") {
                        return Err(self.unsupported("'limit rate over'", "\"over\""));
                    }
                    let what = "a rate: N/second, N/minute, N/hour, N/day or N/week";
                    let (rate, rl, rc) = self.word(what)?;
                    let Some((n, unit)) = rate.split_once('/') else {
                        if rate.bytes().all(|b| b.is_ascii_digit())
                            && let Ok(Some(t)) = self.peek()
                            && let Tok::Word(u) = &t.tok
                            && u.contains("bytes")
                        {
                            let u = u.clone();
                            return Err(self.unsupported("a byte rate", &format!("{u:?}")));
                        }
                        return Err(err(self.file, rl, rc, what, &format!("{rate:?}")));
                    };
                    let n: u64 = n
                        .parse()
                        .map_err(|_| err(self.file, rl, rc, what, &format!("{rate:?}")))?;
                    let per: u64 = match unit {
                        "second" => 1_000_000_000,
                        "minute" => 60_000_000_000,
                        "hour" => 3_600_000_000_000,
                        "day" => 86_400_000_000_000,
                        "week" => 604_800_000_000_000,
                        _ => return Err(err(self.file, rl, rc, what, &format!("{rate:?}"))),
                    };
                    if n == 0 {
                        return Err(err(self.file, wl, wc, "a rate of at least 1", "0"));
                    }
                    let mut limit =
                        crate::iptables::Limit { interval_ns: (per / n).max(1), burst: 5 };
                    if self.eat_word("burst") {
                        let b = self.number("a burst: a number of packets")?;
                        if !self.eat_word("packets") {
                            return Err(self.unsupported("a burst in bytes", "not \"packets\""));
                        }
                        // The kernel takes a burst of 0 packets for its default, 5.
                        limit.burst = match u32::try_from(b).unwrap_or(u32::MAX) {
                            0 => 5,
                            b => b,
                        };
                    }
                    if r.rule.limit.is_some() {
                        return Err(err(self.file, wl, wc, "one limit per rule", "a second limit"));
                    }
                    r.rule.limit = Some(limit);
                }
                "counter" => {
                    r.rule.counter = true;
                    if self.eat_word("packets") {
                        self.number("a packet count")?;
                        if !self.eat_word("bytes") {
                            return Err(self.error("'bytes'"));
                        }
                        self.number("a byte count")?;
                    } else if self.is_word("name") {
                        return Err(self.unsupported("a named counter", "name"));
                    }
                }
                "log" => {
                    let mut prefix = String::new();
                    loop {
                        if self.eat_word("prefix") {
                            prefix = self.name("a log prefix string")?.0;
                        } else if self.eat_word("level") {
                            let (lv, ll, lc) = self.word("a log level")?;
                            if !matches!(
                                lv.as_str(),
                                "emerg"
                                    | "alert"
                                    | "crit"
                                    | "err"
                                    | "warn"
                                    | "notice"
                                    | "info"
                                    | "debug"
                                    | "audit"
                            ) {
                                return Err(err(
                                    self.file,
                                    ll,
                                    lc,
                                    "a log level: emerg, alert, crit, err, warn, notice, info, debug or audit",
                                    &format!("{lv:?}"),
                                ));
                            }
                        } else if self.eat_word("group")
                            || self.eat_word("snaplen")
                            || self.eat_word("queue-threshold")
                        {
                            self.number("a number")?;
                        } else if self.eat_word("flags") {
                            loop {
                                if self.eat_word("tcp") {
                                    loop {
                                        let (f, fl, fc) = self.word("sequence or options")?;
                                        if f != "sequence" && f != "options" {
                                            return Err(err(
                                                self.file,
                                                fl,
                                                fc,
                                                "sequence or options",
                                                &format!("{f:?}"),
                                            ));
                                        }
                                        if !(self.is_sym(",")
                                            && matches!(self.toks.get(self.pos + 1).map(|t| &t.tok), Some(Tok::Word(x)) if x == "sequence" || x == "options"))
                                        {
                                            break;
                                        }
                                        self.pos += 1;
                                    }
                                } else if self.eat_word("ip") {
                                    if !self.eat_word("options") {
                                        return Err(self.error("'options'"));
                                    }
                                } else if !(self.eat_word("skuid")
                                    || self.eat_word("ether")
                                    || self.eat_word("all"))
                                {
                                    return Err(self.error("log flags: tcp sequence,options, ip options, skuid, ether or all"));
                                }
                                if !self.eat_sym(",") {
                                    break;
                                }
                            }
                        } else {
                            break;
                        }
                    }
                    r.rule.log = Some(prefix);
                }
                "meta" | "nftrace" if w == "nftrace" || self.is_word("nftrace") => {
                    if w == "meta" {
                        self.pos += 1;
                    }
                    if !self.eat_word("set") {
                        return Err(self.error("'set'"));
                    }
                    let (v, vl, vc) = self.word("0 or 1")?;
                    if v != "0" && v != "1" {
                        return Err(err(self.file, vl, vc, "0 or 1", &format!("{v:?}")));
                    }
                }
                "accept" | "drop" | "return" | "continue" => {
                    r.rule.target = match w.as_str() {
                        "accept" => Some(Target::Accept),
                        "drop" => Some(Target::Drop),
                        "return" => Some(Target::Return),
                        _ => None,
                    };
                    terminal = Some((wl, wc));
                }
                "jump" | "goto" => {
                    let (name, nl, nc) = self.name("a chain name")?;
                    r.jump = Some((name.clone(), nl, nc));
                    r.rule.target =
                        Some(if w == "jump" { Target::Jump(name) } else { Target::Goto(name) });
                    terminal = Some((wl, wc));
                }
                "reject" => {
                    r.rule.target = Some(Target::Reject);
                    let family = self.tables[t].family;
                    let kind = if self.eat_word("with") {
                        let (k, kl, kc) = self.word("tcp, icmp, icmpv6 or icmpx")?;
                        match k.as_str() {
                            "tcp" => {
                                if !self.eat_word("reset") {
                                    return Err(self.error("'reset'"));
                                }
                                // nft adds the dependency `meta l4proto tcp`.
                                r.matches.push(Match {
                                    sels: vec![Sel::L4proto],
                                    op: Op::Implicit,
                                    mask: None,
                                    rhs: Rhs::One(vec![Val::Num(6, 6)]),
                                    line: kl,
                                    col: kc,
                                });
                                RejectWith::TcpReset
                            }
                            "icmp" | "icmpv6" | "icmpx" => {
                                self.eat_word("type");
                                let (dt_codes, fam): (&[(&str, u32)], Option<u8>) = match k.as_str()
                                {
                                    "icmp" => (ICMP_CODES, Some(4)),
                                    "icmpv6" => (ICMPV6_CODES, Some(6)),
                                    _ => (ICMPX_CODES, None),
                                };
                                let (v, vl, vc) = self.word("an unreachable code")?;
                                let code = dt_codes.iter().find(|(n, _)| *n == v).map(|&(_, c)| c as u8).or_else(|| v.parse::<u8>().ok()).ok_or_else(|| err(self.file, vl, vc, "an unreachable code (port-unreachable, host-unreachable, admin-prohibited, ...)", &format!("{v:?}")))?;
                                match (k.as_str(), family) {
                                    ("icmpx", Family::Inet) => {}
                                    ("icmpx", _) => {
                                        return Err(err(
                                            self.file,
                                            kl,
                                            kc,
                                            "icmp or icmpv6 (icmpx codes are for inet tables)",
                                            "\"icmpx\"",
                                        ));
                                    }
                                    ("icmp", Family::Ip6) | ("icmpv6", Family::Ip) => {
                                        return Err(err(
                                            self.file,
                                            kl,
                                            kc,
                                            "a reject of the table's family (conflicting protocols)",
                                            &format!("{k:?}"),
                                        ));
                                    }
                                    _ => {}
                                }
                                if let Some(f) = fam {
                                    r.matches.push(Match {
                                        sels: vec![Sel::NfProto],
                                        op: Op::Implicit,
                                        mask: None,
                                        rhs: Rhs::One(vec![Val::Num(
                                            if f == 4 { 2 } else { 10 },
                                            if f == 4 { 2 } else { 10 },
                                        )]),
                                        line: kl,
                                        col: kc,
                                    });
                                }
                                match k.as_str() {
                                    "icmp" => RejectWith::Icmp(code),
                                    "icmpv6" => RejectWith::Icmpv6(code),
                                    _ => RejectWith::Icmpx(code),
                                }
                            }
                            _ => {
                                return Err(err(
                                    self.file,
                                    kl,
                                    kc,
                                    "tcp, icmp, icmpv6 or icmpx",
                                    &format!("{k:?}"),
                                ));
                            }
                        }
                    } else {
                        match family {
                            Family::Ip => RejectWith::Icmp(3),
                            Family::Ip6 => RejectWith::Icmpv6(4),
                            Family::Inet => RejectWith::Icmpx(1),
                        }
                    };
                    r.rule.reject = Some(kind);
                    terminal = Some((wl, wc));
                }
                "vmap" | "map" => {
                    self.pos -= 1;
                    return Err(self.unsupported("a verdict map", &format!("{w:?}")));
                }
                _ if UNSUPPORTED_STATEMENTS.contains(&w.as_str()) => {
                    self.pos -= 1;
                    let next = match self.toks.get(self.pos + 1).map(|t| &t.tok) {
                        Some(Tok::Word(n))
                            if !matches!(
                                w.as_str(),
                                "limit"
                                    | "quota"
                                    | "snat"
                                    | "dnat"
                                    | "masquerade"
                                    | "redirect"
                                    | "queue"
                                    | "notrack"
                                    | "synproxy"
                                    | "dup"
                                    | "fwd"
                            ) =>
                        {
                            format!(" {n}")
                        }
                        _ => String::new(),
                    };
                    return Err(self.unsupported(&format!("'{w}{next}'"), &format!("{w:?}")));
                }
                _ => {
                    self.pos -= 1;
                    return Err(self.error("a match, a statement or a verdict"));
                }
            }
        }
        Ok(r)
    }

    fn number(&mut self, what: &str) -> Result<u64, ParseError> {
        let (n, l, c) = self.word(what)?;
        n.parse().map_err(|_| err(self.file, l, c, what, &format!("{n:?}")))
    }

    /// A match after its first selector: more selectors (`. tcp dport`), `& MASK`, an
    /// operator, a value, set or set reference, `/ MASK`.
    fn match_rest(&mut self, first: Sel, line: usize, col: usize) -> Result<Match, ParseError> {
        let mut sels = vec![first];
        while self.is_sym(".") {
            self.pos += 1;
            let (l, c) = self.here();
            let s = self.selector()?.ok_or_else(|| {
                err(self.file, l, c, "a match expression to concatenate", "something else")
            })?;
            sels.push(s);
        }
        if sels.len() > 1 {
            for &s in &sels {
                if s.key().is_none() {
                    return Err(err(
                        self.file,
                        line,
                        col,
                        &format!(
                            "a concatenation of addresses, ports, protocols and interfaces ({} in a concatenation is not supported)",
                            s.dt().name()
                        ),
                        "a concatenation",
                    ));
                }
            }
        }
        let mut mask = None;
        if self.eat_sym("&") {
            if sels.len() > 1 || !sels[0].dt().bitmask() {
                return Err(err(
                    self.file,
                    line,
                    col,
                    "a '&' mask on tcp flags or ct state (masks on other fields are not supported)",
                    "'&'",
                ));
            }
            mask = Some(self.mask_expr(sels[0].dt())?);
        }
        let op = match self.peek()?.map(|t| t.tok.clone()) {
            Some(Tok::Sym("==")) => Op::Eq,
            Some(Tok::Sym("!=")) => Op::Ne,
            Some(Tok::Sym("<")) => Op::Lt,
            Some(Tok::Sym(">")) => Op::Gt,
            Some(Tok::Sym("<=")) => Op::Le,
            Some(Tok::Sym(">=")) => Op::Ge,
            Some(Tok::Word(w)) if w == "eq" => Op::Eq,
            Some(Tok::Word(w)) if w == "ne" => Op::Ne,
            Some(Tok::Word(w)) if w == "lt" => Op::Lt,
            Some(Tok::Word(w)) if w == "gt" => Op::Gt,
            Some(Tok::Word(w)) if w == "le" => Op::Le,
            Some(Tok::Word(w)) if w == "ge" => Op::Ge,
            _ => Op::Implicit,
        };
        if op != Op::Implicit {
            self.pos += 1;
        }
        if self.is_word("vmap") || self.is_word("map") {
            return Err(self.unsupported("a verdict map", "\"vmap\""));
        }
        let types: Vec<Dt> = sels.iter().map(|s| s.dt()).collect();
        let rhs = if let Some(Token { tok: Tok::SetRef(name), line: l, col: c }) =
            self.peek()?.cloned()
        {
            self.pos += 1;
            Rhs::Named(name, l, c)
        } else if self.eat_sym("{") {
            Rhs::Set(self.elements(&types, None)?)
        } else {
            let mut e = Vec::new();
            for (i, &dt) in types.iter().enumerate() {
                if i > 0 {
                    self.sym(".")?;
                }
                let mut v = self.value(dt, false)?;
                // A comma list of flags is their union (`tcp flags fin,syn`, `ct state
                // established,related`).
                if dt.bitmask() {
                    while self.is_sym(",") {
                        self.pos += 1;
                        let w = self.value(dt, false)?;
                        if let (Val::Num(a, _), Val::Num(b, _)) = (&v, &w) {
                            v = Val::Num(a | b, a | b);
                        }
                    }
                } else if self.is_sym(",") {
                    return Err(self.error(&format!(
                        "the end of the value ({} is not a bitmask: a list needs {{ }})",
                        dt.name()
                    )));
                }
                e.push(v);
            }
            Rhs::One(e)
        };
        if self.eat_sym("/") {
            if mask.is_some() || sels.len() > 1 || !sels[0].dt().bitmask() {
                return Err(err(
                    self.file,
                    line,
                    col,
                    "a '/' mask on tcp flags or ct state",
                    "'/'",
                ));
            }
            mask = Some(self.mask_expr(sels[0].dt())?);
        }
        if sels.len() > 1 && op != Op::Implicit && op != Op::Eq {
            return Err(err(
                self.file,
                line,
                col,
                "a concatenation matched with '==' (a negated or compared concatenation is not supported)",
                "an operator",
            ));
        }
        if matches!(op, Op::Lt | Op::Gt | Op::Le | Op::Ge) && !matches!(rhs, Rhs::One(_)) {
            return Err(err(self.file, line, col, "one value after a comparison", "a set"));
        }
        Ok(Match { sels, op, mask, rhs, line, col })
    }

    /// `(a|b)`, `a,b`, `a|b` or a number: the bits.
    fn mask_expr(&mut self, dt: Dt) -> Result<u128, ParseError> {
        let paren = self.eat_sym("(");
        let mut v = match self.value(dt, true)? {
            Val::Num(a, _) => a,
            Val::Name(_) => 0,
        };
        while self.is_sym(",") || (paren && self.is_sym("|")) {
            self.pos += 1;
            if let Val::Num(a, _) = self.value(dt, true)? {
                v |= a;
            }
        }
        if paren {
            self.sym(")")?;
        }
        Ok(v)
    }
}

// ---------------------------------------------------------------------------------------
// From matches to the rule model

/// What a match allows of one field.
enum Allowed {
    /// Numbers (addresses, ports, protocols, types, families).
    Ranges(Vec<(u128, u128)>),
    /// Names, negated or not.
    Names(Vec<String>, bool),
    /// Flag bytes.
    Flags(ByteSet),
    /// Connection states.
    States(Vec<CtState>),
}

/// Whether `x` meets `op` against `v` (after `& mask`, for bitmask types).
fn relate(op: Op, x: u128, v: u128, bitmask_implicit: bool) -> bool {
    match op {
        Op::Implicit if bitmask_implicit => x & v != 0,
        Op::Implicit | Op::Eq => x == v,
        Op::Ne => x != v,
        Op::Lt => x < v,
        Op::Gt => x > v,
        Op::Le => x <= v,
        Op::Ge => x >= v,
    }
}

struct Resolver<'a> {
    file: &'a str,
}

impl Resolver<'_> {
    fn error(&self, m: &Match, expected: &str, found: &str) -> ParseError {
        err(self.file, m.line, m.col, expected, found)
    }

    /// The allowed values of a one-field match, from its elements (a set) or its value.
    fn allowed(&self, m: &Match, elems: Option<&[Vec<Val>]>) -> Result<Allowed, ParseError> {
        let dt = m.sels[0].dt();
        let vals: Vec<&Val> = match (&m.rhs, elems) {
            (Rhs::One(v), _) => v.iter().collect(),
            (Rhs::Set(e), _) => e.iter().map(|e| &e[0]).collect(),
            (_, Some(e)) => e.iter().map(|e| &e[0]).collect(),
            (_, None) => Vec::new(),
        };
        let is_set = !matches!(m.rhs, Rhs::One(_));
        if dt == Dt::Ifname {
            let names: Vec<String> = vals
                .iter()
                .map(|v| match v {
                    Val::Name(n) => n.clone(),
                    Val::Num(..) => String::new(),
                })
                .collect();
            let mut model = Vec::new();
            for n in names {
                let n = match n.strip_suffix('*') {
                    Some(p) if !p.ends_with('\\') => format!("{p}+"),
                    _ if n.ends_with('+') => {
                        return Err(self.error(m, "an interface name rampart can hold (a name ending in '+' reads as a wildcard in rampart's model, so it is not supported)", &format!("{n:?}")));
                    }
                    _ => n.replace("\\*", "*"),
                };
                model.push(n);
            }
            return match m.op {
                Op::Implicit | Op::Eq => Ok(Allowed::Names(model, false)),
                Op::Ne => Ok(Allowed::Names(model, true)),
                _ => Err(self.error(m, "== or != on an interface name", "a comparison")),
            };
        }
        let nums: Vec<(u128, u128)> = vals
            .iter()
            .filter_map(|v| match v {
                Val::Num(a, b) => Some((*a, *b)),
                Val::Name(_) => None,
            })
            .collect();
        if dt.bitmask() {
            // Evaluated over every value the field can take.
            let pred = |x: u128| -> bool {
                match (&m.rhs, m.mask) {
                    (Rhs::One(_), mask) => {
                        let v = nums.first().map_or(0, |r| r.0);
                        let x = mask.map_or(x, |k| x & k);
                        relate(m.op, x, v, mask.is_none())
                    }
                    (_, mask) => {
                        let x = mask.map_or(x, |k| x & k);
                        nums.iter().any(|&(a, _)| x == a) != (m.op == Op::Ne)
                    }
                }
            };
            return Ok(if dt == Dt::TcpFlags {
                Allowed::Flags(ByteSet::from_fn(|v| pred(u128::from(v))))
            } else {
                Allowed::States(
                    ALL_STATES.iter().copied().filter(|&s| pred(u128::from(ct_bit(s)))).collect(),
                )
            });
        }
        let max = dt.max();
        let ranges = match m.op {
            Op::Implicit | Op::Eq => nums,
            Op::Ne => complement(&nums, max),
            op => {
                let (v, hi) = nums[0];
                if v != hi {
                    return Err(self.error(m, "one value after a comparison", "a range"));
                }
                match op {
                    Op::Lt if v == 0 => Vec::new(),
                    Op::Lt => vec![(0, v - 1)],
                    Op::Le => vec![(0, v)],
                    Op::Gt if v == max => Vec::new(),
                    Op::Gt => vec![(v + 1, max)],
                    _ => vec![(v, max)],
                }
            }
        };
        let _ = is_set;
        Ok(Allowed::Ranges(merge(ranges)))
    }

    /// Adds a match to a rule. `sets` are the rule's table's sets, `named` the key the table
    /// gives a named set in the rule set's address sets.
    #[allow(clippy::too_many_arguments)]
    fn apply(
        &self,
        r: &mut IptRule,
        m: &Match,
        sets: &[SetB],
        named: &dyn Fn(&str) -> String,
        address_sets: &mut HashMap<String, IpSet>,
        table: Family,
        proto_eq: &mut bool,
    ) -> Result<(), ParseError> {
        // The set a match names, typed as the match.
        let named_set = match &m.rhs {
            Rhs::Named(name, l, c) => {
                let s = sets.iter().find(|s| &s.name == name).ok_or_else(|| {
                    err(self.file, *l, *c, "a set of this table", &format!("@{name}"))
                })?;
                let want: Vec<Dt> = m.sels.iter().map(|s| s.dt()).collect();
                if s.types != want {
                    let names =
                        |v: &[Dt]| v.iter().map(|d| d.name()).collect::<Vec<_>>().join(" . ");
                    return Err(err(
                        self.file,
                        *l,
                        *c,
                        &format!(
                            "a set of type {} (set {name} holds {})",
                            names(&want),
                            names(&s.types)
                        ),
                        &format!("@{name}"),
                    ));
                }
                Some(s)
            }
            _ => None,
        };
        // Dependencies nft adds, and conflicts between them.
        for &s in &m.sels {
            if let Some(f) = s.family() {
                self.family(r, m, f, table, s)?;
            }
            if let Some((p, name)) = s.proto() {
                let fixed = r.single_proto();
                // nft refuses a dependency that an earlier protocol match contradicts, or
                // that a set of protocols leaves open.
                let open = *proto_eq && fixed != Some(p);
                if r.proto.as_ref().is_some_and(|v| !v.iter().any(|&(a, b)| a <= p && p <= b))
                    || open
                {
                    let other = fixed
                        .and_then(|x| {
                            PROTOCOLS.iter().find(|(_, v)| *v == u32::from(x)).map(|(n, _)| *n)
                        })
                        .unwrap_or("another protocol");
                    return Err(self.error(m, &format!("matches of one protocol (conflicting protocols specified: {other} vs. {name})"), name));
                }
                if r.proto.is_none() {
                    r.proto = Some(vec![(p, p)]);
                }
            }
        }
        if m.sels.len() > 1 {
            // A concatenation: a union of boxes.
            let elems: Vec<Vec<Val>> = match (&m.rhs, named_set) {
                (Rhs::One(e), _) => vec![e.clone()],
                (Rhs::Set(e), _) => e.clone(),
                (_, Some(s)) => s.elems.clone(),
                _ => Vec::new(),
            };
            let keys: Vec<Key> = m.sels.iter().map(|s| s.key().expect("checked")).collect();
            let mut out = Vec::new();
            for e in &elems {
                let mut parts: Vec<Vec<Value>> = vec![Vec::new()];
                for (s, v) in m.sels.iter().zip(e) {
                    let here: Vec<Value> = match (s.dt(), v) {
                        (Dt::Ipv4 | Dt::Ipv6, &Val::Num(lo, hi)) => {
                            let v6 = s.dt() == Dt::Ipv6;
                            range_prefixes(lo, hi, if v6 { 128 } else { 32 })
                                .into_iter()
                                .map(|(a, l)| Value::Net(net_of(a, l, v6)))
                                .collect()
                        }
                        (_, &Val::Num(lo, hi)) => vec![Value::Range(lo as u32, hi as u32)],
                        (_, Val::Name(n)) => {
                            let n = match n.strip_suffix('*') {
                                Some(p) => format!("{p}+"),
                                None if n.ends_with('+') => return Err(self.error(m, "an interface name rampart can hold (a name ending in '+' is not supported)", n)),
                                None => n.clone(),
                            };
                            vec![Value::Iface(n)]
                        }
                    };
                    parts = parts
                        .iter()
                        .flat_map(|p| {
                            here.iter().map(move |h| {
                                let mut x = p.clone();
                                x.push(h.clone());
                                x
                            })
                        })
                        .collect();
                }
                out.extend(parts);
            }
            r.tuples.push(Tuples { keys, elems: out });
            return Ok(());
        }
        let sel = m.sels[0];
        // A named address set stays a set (it may be large, and rules share it).
        if let (Some(s), Sel::Saddr4 | Sel::Daddr4 | Sel::Saddr6 | Sel::Daddr6) = (named_set, sel) {
            let key = named(&s.name);
            if !address_sets.contains_key(&key) {
                let mut set = IpSet::new();
                let v6 = s.types[0] == Dt::Ipv6;
                for e in &s.elems {
                    if let Val::Num(lo, hi) = e[0] {
                        for (a, l) in range_prefixes(lo, hi, if v6 { 128 } else { 32 }) {
                            set.insert(net_of(a, l, v6).addr, l);
                        }
                    }
                }
                address_sets.insert(key.clone(), set);
            }
            let not = match m.op {
                Op::Implicit | Op::Eq => false,
                Op::Ne => true,
                _ => return Err(self.error(m, "== or != with a set", "a comparison")),
            };
            let slot = if matches!(sel, Sel::Saddr4 | Sel::Saddr6) {
                &mut r.src_set
            } else {
                &mut r.dst_set
            };
            if slot.is_some() {
                return Err(self.error(
                    m,
                    "one set match per address in a rule (a second one is not supported)",
                    &format!("@{}", s.name),
                ));
            }
            *slot = Some((key, not));
            return Ok(());
        }
        let allowed = self.allowed(m, named_set.map(|s| s.elems.as_slice()))?;
        match (sel, allowed) {
            (Sel::Saddr4 | Sel::Daddr4 | Sel::Saddr6 | Sel::Daddr6, Allowed::Ranges(v)) => {
                let v6 = matches!(sel, Sel::Saddr6 | Sel::Daddr6);
                let bits = if v6 { 128 } else { 32 };
                let src = matches!(sel, Sel::Saddr4 | Sel::Saddr6);
                let slot = if src { &mut r.src } else { &mut r.dst };
                // One prefix, or the complement of one, is the plain address match.
                let single = |v: &[(u128, u128)]| -> Option<(u128, u8)> {
                    match v {
                        [(lo, hi)] => match range_prefixes(*lo, *hi, bits).as_slice() {
                            [one] => Some(*one),
                            _ => None,
                        },
                        _ => None,
                    }
                };
                let positive = match (&m.rhs, m.op) {
                    (Rhs::One(e), Op::Ne) => match e.first() {
                        Some(&Val::Num(lo, hi)) => single(&[(lo, hi)]).map(|p| (p, true)),
                        _ => None,
                    },
                    _ => single(&v).map(|p| (p, false)),
                };
                if let (Some(((a, l), not)), None) = (positive, &slot) {
                    let mut n = net_of(a, l, v6);
                    n.not = not;
                    *slot = Some(n);
                } else {
                    let key = if src { Key::Src } else { Key::Dst };
                    let elems = v
                        .iter()
                        .flat_map(|&(lo, hi)| range_prefixes(lo, hi, bits))
                        .map(|(a, l)| vec![Value::Net(net_of(a, l, v6))])
                        .collect();
                    r.tuples.push(Tuples { keys: vec![key], elems });
                }
            }
            (Sel::IpProto | Sel::Nexthdr | Sel::L4proto, Allowed::Ranges(v)) => {
                *proto_eq |= matches!(m.op, Op::Implicit | Op::Eq);
                let v: Vec<(u8, u8)> = v.iter().map(|&(a, b)| (a as u8, b as u8)).collect();
                r.proto = Some(match r.proto.take() {
                    None => v,
                    Some(old) => intersect8(&old, &v),
                });
            }
            (Sel::NfProto | Sel::EtherProto, Allowed::Ranges(v)) => {
                if sel == Sel::NfProto && table != Family::Inet {
                    return Err(self.error(
                        m,
                        "meta nfproto in an inet table (it is only useful there)",
                        "meta nfproto",
                    ));
                }
                let (four, six) = if sel == Sel::NfProto { (2, 10) } else { (0x0800, 0x86dd) };
                let has = |x: u128| v.iter().any(|&(a, b)| a <= x && x <= b);
                match (has(four), has(six)) {
                    (true, true) => {}
                    (true, false) => self.family(r, m, 4, table, sel)?,
                    (false, true) => self.family(r, m, 6, table, sel)?,
                    // No IP packet: the rule can never match.
                    (false, false) => r.family = Some(0),
                }
            }
            (Sel::Iifname | Sel::Oifname, Allowed::Names(names, not)) => {
                let slot = if sel == Sel::Iifname { &mut r.iif } else { &mut r.oif };
                if slot.is_some() {
                    let what = if sel == Sel::Iifname { "iifname" } else { "oifname" };
                    return Err(self.error(
                        m,
                        &format!("one {what} match per rule (a second one is not supported)"),
                        what,
                    ));
                }
                *slot = Some((names, not));
            }
            (Sel::Sport(_) | Sel::Dport(_), Allowed::Ranges(v)) => {
                let v: Vec<(u16, u16)> = v.iter().map(|&(a, b)| (a as u16, b as u16)).collect();
                let slot = if matches!(sel, Sel::Sport(_)) { &mut r.sports } else { &mut r.dports };
                *slot = Some(match slot.take() {
                    None => v,
                    Some(old) => intersect16(&old, &v),
                });
            }
            (
                Sel::IcmpType | Sel::Icmp6Type | Sel::IcmpCode | Sel::Icmp6Code,
                Allowed::Ranges(v),
            ) => {
                let v: Vec<(u8, u8)> = v.iter().map(|&(a, b)| (a as u8, b as u8)).collect();
                let slot = if matches!(sel, Sel::IcmpType | Sel::Icmp6Type) {
                    &mut r.icmp_type
                } else {
                    &mut r.icmp_code
                };
                *slot = Some(match slot.take() {
                    None => v,
                    Some(old) => intersect8(&old, &v),
                });
            }
            (Sel::TcpFlags, Allowed::Flags(f)) => {
                r.tcp_flags = Some(r.tcp_flags.map_or(f, |old| old.and(&f)));
            }
            (Sel::CtState, Allowed::States(s)) => {
                r.ct = Some(match r.ct.take() {
                    None => s,
                    Some(old) => old.into_iter().filter(|x| s.contains(x)).collect(),
                });
            }
            _ => return Err(self.error(m, "a value of the match's type", "another kind of value")),
        }
        Ok(())
    }

    fn family(
        &self,
        r: &mut IptRule,
        m: &Match,
        f: u8,
        table: Family,
        sel: Sel,
    ) -> Result<(), ParseError> {
        let table_f = match table {
            Family::Ip => Some(4),
            Family::Ip6 => Some(6),
            Family::Inet => None,
        };
        let clash = |a: u8| if a == 4 { "ip" } else { "ip6" };
        if let Some(t) = table_f.or(r.family)
            && t != f
            && t != 0
        {
            let what = match sel {
                Sel::IcmpType | Sel::IcmpCode if r.proto.as_deref() == Some(&[(58, 58)]) => {
                    "icmpv6 vs. icmp".to_string()
                }
                Sel::Icmp6Type | Sel::Icmp6Code if r.proto.as_deref() == Some(&[(1, 1)]) => {
                    "icmp vs. icmpv6".to_string()
                }
                _ => format!("{} vs. {}", clash(t), clash(f)),
            };
            return Err(self.error(
                m,
                &format!("matches of one family (conflicting protocols specified: {what})"),
                clash(f),
            ));
        }
        if r.family != Some(0) {
            r.family = Some(f);
        }
        Ok(())
    }
}

fn intersect8(a: &[(u8, u8)], b: &[(u8, u8)]) -> Vec<(u8, u8)> {
    a.iter()
        .flat_map(|&(l1, h1)| {
            b.iter().filter_map(move |&(l2, h2)| {
                (l1.max(l2) <= h1.min(h2)).then_some((l1.max(l2), h1.min(h2)))
            })
        })
        .collect()
}

fn intersect16(a: &[(u16, u16)], b: &[(u16, u16)]) -> Vec<(u16, u16)> {
    a.iter()
        .flat_map(|&(l1, h1)| {
            b.iter().filter_map(move |&(l2, h2)| {
                (l1.max(l2) <= h1.min(h2)).then_some((l1.max(l2), h1.min(h2)))
            })
        })
        .collect()
}

/// Parses an nftables rule set (`nft -f` input or `nft list ruleset` output); `file` names
/// it in errors.
pub fn parse(file: &str, text: &str) -> Result<NftRuleset, ParseError> {
    let mut p = Parser {
        file,
        toks: lex(file, text)?,
        pos: 0,
        defines: HashMap::new(),
        tables: Vec::new(),
    };
    p.file()?;
    let tables = std::mem::take(&mut p.tables);
    // Chain names: the nft name where no other table has one like it.
    let mut count: HashMap<&str, usize> = HashMap::new();
    for t in &tables {
        for c in &t.chains {
            *count.entry(c.name.as_str()).or_default() += 1;
        }
    }
    let qualified = |t: &TableB, c: &str| {
        if count.get(c).copied().unwrap_or(0) > 1 {
            format!("{} {} {c}", t.family.name(), t.name)
        } else {
            c.to_string()
        }
    };
    let res = Resolver { file };
    let mut out = NftRuleset::default();
    for t in &tables {
        let table_family = match t.family {
            Family::Ip => Some(4),
            Family::Ip6 => Some(6),
            Family::Inet => None,
        };
        let named = |s: &str| format!("{} {} {s}", t.family.name(), t.name);
        for c in &t.chains {
            let cname = qualified(t, &c.name);
            let mut rules = Vec::new();
            for (i, rb) in c.rules.iter().enumerate() {
                let mut r = rb.rule.clone();
                r.family = table_family;
                let mut proto_eq = false;
                for m in &rb.matches {
                    res.apply(&mut r, m, &t.sets, &named, &mut out.sets, t.family, &mut proto_eq)?;
                }
                if let Some((j, l, col)) = &rb.jump {
                    let Some(target) = t.chains.iter().find(|x| &x.name == j) else {
                        return Err(err(
                            file,
                            *l,
                            *col,
                            "a chain of this table",
                            &format!("{j:?}"),
                        ));
                    };
                    if target.base.is_some() {
                        return Err(err(
                            file,
                            *l,
                            *col,
                            "a regular chain (a jump or goto to a base chain is refused by the kernel)",
                            &format!("{j:?}"),
                        ));
                    }
                    let q = qualified(t, j);
                    r.target = Some(match &r.target {
                        Some(Target::Goto(_)) => Target::Goto(q),
                        _ => Target::Jump(q),
                    });
                }
                r.name = match &r.comment {
                    Some(cm) => format!("{cname}:{} {cm}", i + 1),
                    None => format!("{cname}:{}", i + 1),
                };
                let _ = rb.col;
                rules.push(r);
            }
            let policy = c.base.map(|_| c.policy.clone().unwrap_or(Target::Accept));
            if let Some((hook, priority)) = c.base {
                out.base.push(BaseChain {
                    family: t.family,
                    table: t.name.clone(),
                    chain: cname.clone(),
                    hook,
                    priority,
                    policy: policy.clone().unwrap_or(Target::Accept),
                });
            }
            let _ = (c.line, c.col);
            out.qualified
                .push((format!("{} {} {}", t.family.name(), t.name, c.name), cname.clone()));
            out.rules.chains.push(Chain { name: cname, policy, rules });
        }
    }
    // Jumps that loop are refused, as the kernel refuses them.
    for b in &out.base {
        out.rules.reachable(&b.chain).map_err(|e| {
            let line = match &e {
                crate::iptables::ChainError::Loop { rules } => rules.first().map_or(0, |r| r.1),
                _ => 0,
            };
            err(file, line, 1, "jumps that do not loop", &e.to_string())
        })?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(body: &str) -> IptRule {
        let text = format!("table inet t {{\n chain c {{\n  {body}\n }}\n}}\n");
        let rs = parse("r", &text).unwrap_or_else(|e| panic!("{e}"));
        rs.rules.chains[0].rules[0].clone()
    }

    fn fails(text: &str) -> ParseError {
        parse("r", text).expect_err(text)
    }

    fn flags(body: &str) -> Vec<u8> {
        one(body).tcp_flags.unwrap().values().collect()
    }

    #[test]
    fn tcp_flags_mean_what_the_bytecode_does() {
        let all = |f: &dyn Fn(u8) -> bool| (0..=255u8).filter(|&v| f(v)).collect::<Vec<_>>();
        assert_eq!(flags("tcp flags syn"), all(&|v| v & 0x02 != 0));
        assert_eq!(flags("tcp flags fin,syn,rst"), all(&|v| v & 0x07 != 0));
        assert_eq!(flags("tcp flags & (fin | syn | rst) != 0"), all(&|v| v & 0x07 != 0));
        assert_eq!(flags("tcp flags == syn"), vec![0x02]);
        assert_eq!(flags("tcp flags != syn,ack"), all(&|v| v != 0x12));
        assert_eq!(flags("tcp flags syn / syn,ack"), all(&|v| v & 0x12 == 0x02));
        assert_eq!(flags("tcp flags & (syn|ack) == syn|ack"), all(&|v| v & 0x12 == 0x12));
        assert_eq!(flags("tcp flags & (syn|ack) != syn"), all(&|v| v & 0x12 != 0x02));
        assert_eq!(flags("tcp flags { syn, syn|ack }"), vec![0x02, 0x12]);
        assert_eq!(flags("tcp flags != { syn, ack }"), all(&|v| v != 0x02 && v != 0x10));
        assert_eq!(one("tcp flags syn").proto, Some(vec![(6, 6)]));
    }

    #[test]
    fn ct_state_is_one_state_per_packet() {
        use CtState::*;
        assert_eq!(one("ct state established,related").ct, Some(vec![Established, Related]));
        assert_eq!(one("ct state != established").ct, Some(vec![New, Related, Invalid, Untracked]));
        // A packet's state is one bit: it never equals two, and always differs from two.
        assert_eq!(one("ct state == established,related").ct, Some(vec![]));
        assert_eq!(one("ct state != established,related").ct.unwrap().len(), 5);
        assert_eq!(one("ct state { new, related }").ct, Some(vec![New, Related]));
        assert_eq!(
            one("ct state != { new, related }").ct,
            Some(vec![Established, Invalid, Untracked])
        );
        assert_eq!(one("ct state new ct state new,established").ct, Some(vec![New]));
    }

    #[test]
    fn addresses_ports_protocols_and_families() {
        let r = one("ip saddr 10.0.0.0/8 ip daddr != 192.168.1.1 tcp dport { 22, 80-90 } accept");
        assert_eq!(r.family, Some(4));
        assert_eq!(r.src.unwrap().len, 8);
        assert!(r.dst.unwrap().not);
        assert_eq!(r.dports, Some(vec![(22, 22), (80, 90)]));
        assert_eq!(r.proto, Some(vec![(6, 6)]));
        let r = one("ip6 saddr { 2001:db8::/32, ::1 } udp sport != 53 drop");
        assert_eq!(r.family, Some(6));
        assert_eq!(r.tuples.len(), 1);
        assert_eq!(r.tuples[0].elems.len(), 2);
        assert_eq!(r.sports, Some(vec![(0, 52), (54, 65535)]));
        // A range of addresses: the prefixes that cover it.
        let r = one("ip saddr 10.0.0.1-10.0.0.6");
        assert_eq!(r.tuples[0].elems.len(), 4);
        let r = one("tcp dport < 1024 tcp dport >= 22");
        assert_eq!(r.dports, Some(vec![(22, 1023)]));
        let r = one("meta l4proto != { tcp, udp } meta nfproto ipv6");
        assert_eq!(r.proto, Some(vec![(0, 5), (7, 16), (18, 255)]));
        assert_eq!(r.family, Some(6));
        assert_eq!(one("ip protocol icmp").proto, Some(vec![(1, 1)]));
        assert_eq!(one("ip6 nexthdr ipv6-icmp").family, Some(6));
        assert_eq!(one("tcp dport ssh").dports, Some(vec![(22, 22)]));
        // The table's family bounds its rules.
        let rs = parse("r", "table ip6 t {\n chain c {\n  tcp dport 22\n }\n}\n").unwrap();
        assert_eq!(rs.rules.chains[0].rules[0].family, Some(6));
    }

    #[test]
    fn icmp_types_and_codes_by_name_and_number() {
        let r = one("icmp type echo-request");
        assert_eq!(
            (r.family, r.proto.clone(), r.icmp_type.clone()),
            (Some(4), Some(vec![(1, 1)]), Some(vec![(8, 8)]))
        );
        let r = one("icmpv6 type { nd-neighbor-solicit, 1-4 } icmpv6 code no-route");
        assert_eq!(r.icmp_type, Some(vec![(1, 4), (135, 135)]));
        assert_eq!(r.icmp_code, Some(vec![(0, 0)]));
        assert_eq!(one("icmp code != 3").icmp_code, Some(vec![(0, 2), (4, 255)]));
    }

    #[test]
    fn interfaces_with_wildcards_and_sets() {
        assert_eq!(one("iifname \"eth*\"").iif, Some((vec!["eth+".to_string()], false)));
        assert_eq!(
            one("oifname != { \"a\", \"b\" }").oif,
            Some((vec!["a".into(), "b".into()], true))
        );
        assert_eq!(one("iif lo oif \"wg0\"").oif, Some((vec!["wg0".into()], false)));
        let e = fails("table inet t {\n chain c {\n  iifname \"eth+\"\n }\n}\n");
        assert!(e.expected.contains("not supported"), "{e}");
        let e = fails("table inet t {\n chain c {\n  iifname a iifname b\n }\n}\n");
        assert_eq!((e.line, e.column), (3, 13));
        assert!(e.expected.contains("not supported"), "{e}");
    }

    #[test]
    fn statements_and_verdicts() {
        let r = one(
            "counter packets 5 bytes 10 log prefix \"x: \" level warn flags tcp sequence,options accept comment \"ok\"",
        );
        assert!(r.counter);
        assert_eq!(r.log.as_deref(), Some("x: "));
        assert_eq!(r.target, Some(Target::Accept));
        assert_eq!(r.comment.as_deref(), Some("ok"));
        assert_eq!(r.name, "c:1 ok");
        let r = one("meta nftrace set 1 continue");
        assert_eq!(r.target, None);
        let r = one("reject with tcp reset");
        assert_eq!((r.reject, r.proto), (Some(RejectWith::TcpReset), Some(vec![(6, 6)])));
        let r = one("reject with icmp type host-unreachable");
        assert_eq!((r.reject, r.family), (Some(RejectWith::Icmp(1)), Some(4)));
        let r = one("reject with icmpv6 admin-prohibited");
        assert_eq!((r.reject, r.family), (Some(RejectWith::Icmpv6(1)), Some(6)));
        assert_eq!(one("reject").reject, Some(RejectWith::Icmpx(1)));
        assert_eq!(
            one("reject with icmpx type admin-prohibited").reject,
            Some(RejectWith::Icmpx(3))
        );
        let rs = parse("r", "table ip t {\n chain c {\n  reject\n }\n}\n").unwrap();
        assert_eq!(rs.rules.chains[0].rules[0].reject, Some(RejectWith::Icmp(3)));
        let e = fails("table ip t {\n chain c {\n  reject with icmpx type no-route\n }\n}\n");
        assert_eq!((e.line, e.column), (3, 15));
        let e = fails("table inet t {\n chain c {\n  accept counter\n }\n}\n");
        assert_eq!((e.line, e.column), (3, 10));
        let e = fails("table inet t {\n chain c {\n  tcp dport 22 comment \"x\" accept\n }\n}\n");
        assert_eq!((e.line, e.column), (3, 28));
    }

    #[test]
    fn chains_hooks_priorities_and_names() {
        let text = "flush ruleset\ndefine web = { 80, 443 }\ndefine lan = 10.0.0.0/8\n\
            table inet f {\n\
              chain pre { type filter hook prerouting priority mangle + 5; policy accept; }\n\
              chain fwd {\n type filter hook forward priority filter; policy drop;\n\
                ip saddr $lan tcp dport $web jump web\n\
                goto rest\n }\n\
              chain web {\n counter return comment \"back\"\n }\n\
              chain rest { }\n\
            }\n\
            table ip g {\n chain fwd {\n type filter hook forward priority -10; policy accept;\n }\n}\n\
            table ip6 h {\n chain out {\n  type filter hook postrouting priority srcnat-5\n }\n}\n";
        let rs = parse("r", text).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = rs.rules.chains.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["pre", "inet f fwd", "web", "rest", "ip g fwd", "out"]);
        let prio: Vec<(Hook, i32)> = rs.base.iter().map(|b| (b.hook, b.priority)).collect();
        assert_eq!(
            prio,
            [
                (Hook::Prerouting, -145),
                (Hook::Forward, 0),
                (Hook::Forward, -10),
                (Hook::Postrouting, 95)
            ]
        );
        assert_eq!(rs.hook(Hook::Forward)[0].chain, "ip g fwd");
        assert_eq!(rs.default_chain().unwrap().chain, "ip g fwd");
        assert_eq!(rs.find_chain("inet f fwd"), Some("inet f fwd"));
        assert_eq!(rs.find_chain("f web"), Some("web"));
        assert_eq!(rs.find_chain("ip6 h out"), Some("out"));
        assert_eq!(rs.find_chain("fwd"), None);
        let fwd = &rs.rules.chains[1];
        assert_eq!(fwd.policy, Some(Target::Drop));
        assert_eq!(fwd.rules[0].target, Some(Target::Jump("web".into())));
        assert_eq!(fwd.rules[0].dports, Some(vec![(80, 80), (443, 443)]));
        assert_eq!(fwd.rules[1].target, Some(Target::Goto("rest".into())));
        assert_eq!(rs.rules.chains[2].rules[0].name, "web:1 back");
        assert_eq!(rs.base[3].policy, Target::Accept);
        // flush ruleset forgets what came before.
        let rs = parse(
            "r",
            "table ip a {\n chain x { }\n}\nflush ruleset\ntable ip b {\n chain y { }\n}\n",
        )
        .unwrap();
        assert_eq!(rs.rules.chains.len(), 1);
    }

    #[test]
    fn sets_named_anonymous_and_concatenated() {
        let text = "table inet t {\n\
            set blk { type ipv4_addr; flags interval; elements = { 10.0.0.0/8, 192.168.1.1-192.168.1.9 } }\n\
            set svc { typeof ip saddr . tcp dport; flags interval; elements = { 10.0.0.1 . 22, 10.1.0.0/16 . 80-90 } }\n\
            set ports { type inet_service; elements = { 22, 443 } }\n\
            set ifs { type ifname; elements = { \"eth0\", \"wg*\" } }\n\
            chain c {\n\
              ip saddr @blk drop\n\
              ip daddr != @blk accept\n\
              ip saddr . tcp dport @svc accept\n\
              tcp dport @ports iifname @ifs accept\n\
              ip saddr . tcp dport { 10.0.0.1 . 22, 10.0.0.0/31 . 443 } accept\n\
            }\n}\n";
        let rs = parse("r", text).unwrap_or_else(|e| panic!("{e}"));
        let r = &rs.rules.chains[0].rules;
        assert_eq!(r[0].src_set, Some(("inet t blk".into(), false)));
        assert_eq!(r[1].dst_set, Some(("inet t blk".into(), true)));
        let blk = &rs.sets["inet t blk"];
        assert!(
            blk.contains("192.168.1.9".parse().unwrap())
                && !blk.contains("192.168.1.10".parse().unwrap())
        );
        assert_eq!(r[2].tuples[0].keys, vec![Key::Src, Key::Dport]);
        assert_eq!(r[2].tuples[0].elems.len(), 2);
        assert_eq!(r[3].dports, Some(vec![(22, 22), (443, 443)]));
        assert_eq!(r[3].iif, Some((vec!["eth0".into(), "wg+".into()], false)));
        assert_eq!(r[4].tuples[0].elems.len(), 2);
        // Types must agree; intervals need the flag; a set must exist.
        let e = fails(
            "table inet t {\n set p { type inet_service; }\n chain c {\n  ip saddr @p\n }\n}\n",
        );
        assert_eq!((e.line, e.column), (4, 12));
        let e = fails("table inet t {\n set p { type inet_service; elements = { 1-2 } }\n}\n");
        assert_eq!((e.line, e.column), (2, 42));
        let e = fails("table inet t {\n chain c {\n  ip saddr @nope\n }\n}\n");
        assert_eq!((e.line, e.column), (3, 12));
        let e = fails("table inet t {\n set p { type mark; }\n}\n");
        assert!(e.expected.contains("not supported"), "{e}");
    }

    #[test]
    fn commands_add_insert_and_flush() {
        let text = "add table inet t\nadd chain inet t c { type filter hook input priority 0; policy drop; }\n\
            add rule inet t c tcp dport 22 accept\ninsert rule inet t c ct state established accept\n\
            add set inet t s { type ipv4_addr; }\nadd element inet t s { 10.0.0.1, 10.0.0.2 }\n\
            add rule inet t c ip saddr @s drop\n";
        let rs = parse("r", text).unwrap_or_else(|e| panic!("{e}"));
        let c = &rs.rules.chains[0];
        assert_eq!(c.rules.len(), 3);
        assert_eq!(c.rules[0].ct, Some(vec![CtState::Established]));
        assert!(rs.sets["inet t s"].contains("10.0.0.2".parse().unwrap()));
        let e = fails("add rule inet t c accept\n");
        assert_eq!((e.line, e.column), (1, 15));
        let e =
            fails("add table inet t\nadd chain inet t c\nadd rule inet t c position 3 accept\n");
        assert!(e.expected.contains("not supported"), "{e}");
        let e = fails("delete table inet t\n");
        assert!(e.expected.contains("not supported"), "{e}");
    }

    #[test]
    fn errors_name_the_place_and_the_construct() {
        let at = |text: &str| {
            let e = fails(text);
            (e.line, e.column, e.to_string())
        };
        let (l, c, m) = at(
            "table inet t {\n chain c {\n  tcp dport 22 limit rate over 10/second drop\n }\n}\n",
        );
        assert_eq!((l, c), (3, 27));
        assert!(m.contains("'limit rate over' is not supported"), "{m}");
        // A packet rate is read: the token bucket of `-m limit`.
        let r = one("tcp dport 22 limit rate 10/second burst 20 packets accept");
        assert_eq!(r.limit, Some(crate::iptables::Limit { interval_ns: 100_000_000, burst: 20 }));
        assert_eq!(one("limit rate 3/hour accept").limit.map(|l| l.burst), Some(5));
        let (l, c, m) = at("table inet t {\n chain c {\n  ct mark 1 accept\n }\n}\n");
        assert_eq!((l, c), (3, 3));
        assert!(m.contains("'ct mark' is not supported"), "{m}");
        let (l, c, m) = at("table inet t {\n chain c {\n  ct state vmap { new : accept }\n }\n}\n");
        assert_eq!((l, c), (3, 12));
        assert!(m.contains("verdict map"), "{m}");
        let (l, c, m) =
            at("table inet t {\n chain c {\n  type nat hook prerouting priority dstnat;\n }\n}\n");
        assert_eq!((l, c), (3, 8));
        assert!(m.contains("type nat is not supported"), "{m}");
        let (l, c, _) = at("table netdev t {\n}\n");
        assert_eq!((l, c), (1, 7));
        let (l, c, m) =
            at("table inet t {\n chain c {\n  tcp dport 22 udp sport 53 accept\n }\n}\n");
        assert_eq!((l, c), (3, 16));
        assert!(m.contains("conflicting protocols specified: tcp vs. udp"), "{m}");
        let (l, c, m) =
            at("table inet t {\n chain c {\n  meta l4proto { tcp, udp } tcp dport 22\n }\n}\n");
        assert_eq!((l, c), (3, 29));
        assert!(m.contains("conflicting"), "{m}");
        let (l, c, m) = at("table inet t {\n chain c {\n  ip saddr 1.2.3.4 ip6 daddr ::1\n }\n}\n");
        assert_eq!((l, c), (3, 20));
        assert!(m.contains("ip vs. ip6"), "{m}");
        let (l, c, _) = at("table ip t {\n chain c {\n  meta nfproto ipv4\n }\n}\n");
        assert_eq!((l, c), (3, 3));
        let (l, c, _) = at("table inet t {\n chain c {\n  tcp dport 22,80\n }\n}\n");
        assert_eq!((l, c), (3, 15));
        let (l, c, _) = at("table inet t {\n chain c {\n  tcp dport 99999\n }\n}\n");
        assert_eq!((l, c), (3, 13));
        let (l, c, _) = at("table inet t {\n chain c { policy drop; }\n}\n");
        assert_eq!((l, c), (2, 12));
        let (l, c, _) =
            at("table inet t {\n chain c { type filter hook input priority dstnat; }\n}\n");
        assert_eq!((l, c), (2, 44));
        let (l, c, _) = at("table inet t {\n chain c {\n  jump d\n }\n}\n");
        assert_eq!((l, c), (3, 8));
        let (l, c, _) = at(
            "table inet t {\n chain b { type filter hook input priority 0; }\n chain c {\n  jump b\n }\n}\n",
        );
        assert_eq!((l, c), (4, 8));
        let (l, c, _) = at("table inet t {\n chain c {\n  ip saddr $nope\n }\n}\n");
        assert_eq!((l, c), (3, 12));
        let (l, c, _) = at("table inet t { chain c { accept } }\n");
        assert_eq!((l, c), (1, 35));
        let (l, _, m) = at(
            "table inet t {\n chain a {\n  type filter hook input priority 0;\n  jump b\n }\n chain b {\n  jump a2\n }\n chain a2 {\n  jump b\n }\n}\n",
        );
        assert_eq!(l, 7);
        assert!(m.contains("loop"), "{m}");
        // Found by the fuzzer: defines that double at every level stay bounded.
        let mut text = String::from("define a0 = { 1, 2 }\n");
        for i in 1..40 {
            text += &format!("define a{i} = {{ $a{}, $a{} }}\n", i - 1, i - 1);
        }
        assert!(parse("r", &text).is_err());
    }
}
