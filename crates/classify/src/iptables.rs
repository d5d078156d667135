//! An `iptables-save` subset: the filter table, chain policies, `-A` rules (with or without
//! the `[packets:bytes]` counters of `iptables-save -c`) with `-s`/`-d`, `-p`, `-i`/`-o`,
//! `--sport`/`--dport`, `-m multiport --sports/--dports`, `-m set --match-set NAME src|dst`,
//! `-m conntrack --ctstate`, `-m state --state`, `-m comment`, `--tcp-flags`/`--syn`, and the
//! targets `ACCEPT`, `DROP`, `REJECT`, `RETURN`, user chains (`-j`), `-g`/`--goto`, and `LOG`
//! and `NFLOG` (which only log: the rule counts and the packet goes on). `!` negates `-s`,
//! `-d`, `-p`, `-i` and `-o`. The nat, mangle, raw and security tables are skipped. A rule is
//! named `CHAIN:N`, N counting from 1 within its chain, as `iptables -L --line-numbers` shows.
//!
//! Rules are read as `iptables-restore` reads them, checked against it on a corpus
//! (`tests/conformance.rs`): an option must follow the match it belongs to (`-m tcp`, or the
//! `-p` that loads it), a match's protocol must be given, each of `-s -d -p -i -o -j` once,
//! chains declared once and policies only on built-in chains. What rampart does not model (a
//! match like `limit`, a target like `MARK`, `! --dport`) is refused by name, never read
//! with another meaning. One extension: IPv4 and IPv6 rules (`ip6tables-save`'s) may share
//! a file, each rule matching the family of its addresses.
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    /// `-j REJECT` (with its options, which are kept verbatim)
    Reject,
    /// `-j RETURN`
    Return,
    /// `-j CHAIN`: a user chain; a `RETURN` or its end comes back here.
    Jump(String),
    /// `-g CHAIN`: a user chain that takes this chain's place; its `RETURN` or end returns
    /// from this chain.
    Goto(String),
}

/// One `-A` rule.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IptRule {
    /// `CHAIN:N`.
    pub name: String,
    /// Line in the file.
    pub line: usize,
    /// `-s`
    pub src: Option<Net>,
    /// `-d`
    pub dst: Option<Net>,
    /// `-p`: protocol number, negated.
    pub proto: Option<(u8, bool)>,
    /// `-i`: interface name (a trailing `+` matches any suffix), negated.
    pub iif: Option<(String, bool)>,
    /// `-o`
    pub oif: Option<(String, bool)>,
    /// `--sport` / `--sports`: inclusive ranges, any of which matches.
    pub sports: Vec<(u16, u16)>,
    /// `--dport` / `--dports`
    pub dports: Vec<(u16, u16)>,
    /// `-m set --match-set NAME src`
    pub src_set: Option<String>,
    /// `-m set --match-set NAME dst`
    pub dst_set: Option<String>,
    /// `-m conntrack --ctstate`: any of these.
    pub ct: Vec<CtState>,
    /// `--tcp-flags MASK COMP` / `--syn`: (mask, value) over the TCP flag byte.
    pub tcp_flags: Option<(u8, u8)>,
    /// Application names (rampart syntax `app NAME`); matched once DPI labels flows, never
    /// before.
    pub app: Vec<String>,
    /// `-j`; `None` for a rule that only counts.
    pub target: Option<Target>,
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
        n => n.parse().ok(),
    }
}

/// Matches netfilter has that rampart does not read.
const UNSUPPORTED_MATCHES: &[&str] = &[
    "addrtype",
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
    "icmp",
    "icmp6",
    "iprange",
    "ipv6header",
    "ipvs",
    "length",
    "limit",
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
    for (i, line) in text.lines().enumerate() {
        let mut lx = Lexer { file, line: i + 1, text: line, pos: 0 };
        let t = line.trim_start();
        let at = line.len() - t.len();
        if t.is_empty() || t.starts_with('#') {
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
        let mut r = IptRule { name: format!("{chain}:{n}"), line: i + 1, ..IptRule::default() };
        let mut not = false;
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
                )
            {
                return Err(lx.error(
                    wat,
                    &format!("-s, -d, -p, -i or -o after '!' ('! {w}' is not supported)"),
                ));
            }
            // An option of a match that is not loaded: iptables loads the match `-p` names
            // when it knows the option, and refuses it otherwise.
            if let Some(owners) = option_match(&w)
                && !loaded.iter().any(|(m, _)| owners.contains(&m.as_str()))
            {
                let implicit =
                    r.proto.and_then(|(p, not)| (!not).then(|| proto_match_name(p)).flatten());
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
                        Some(p) => r.proto = Some((p, neg)),
                        None if v.eq_ignore_ascii_case("all") => {}
                        None => return Err(lx.error(at, "a protocol name or number")),
                    }
                }
                "-i" | "--in-interface" | "-o" | "--out-interface" => {
                    let input = w.starts_with("-i") || w == "--in-interface";
                    once(&lx, wat, if input { "-i" } else { "-o" })?;
                    let (_, v) = lx.need("an interface name")?;
                    if input { r.iif = Some((v, neg)) } else { r.oif = Some((v, neg)) }
                }
                "-m" | "--match" => {
                    let (at, m) = lx.need("a match module")?;
                    if !matches!(m.as_str(), "tcp" | "udp" | "multiport" | "set" | "conntrack" | "state" | "comment") {
                        let what = if UNSUPPORTED_MATCHES.contains(&m.as_str()) {
                            format!("a match rampart reads: tcp, udp, multiport, set, conntrack, state, comment (the {m} match is not supported)")
                        } else {
                            "a match: tcp, udp, multiport, set, conntrack, state, comment".to_string()
                        };
                        return Err(lx.error(at, &what));
                    }
                    loaded.push((m, at));
                }
                "--sport" | "--source-port" | "--dport" | "--destination-port" => {
                    let (at, v) = lx.need("ports")?;
                    let list = ports(&lx, at, &v, false)?;
                    if list.len() > 1 {
                        return Err(lx.error(at, "one port or range LO:HI (lists need -m multiport)"));
                    }
                    if w.contains("source") || w == "--sport" { r.sports = list } else { r.dports = list }
                }
                "--sports" | "--source-ports" | "--dports" | "--destination-ports" | "--ports" => {
                    let (at, v) = lx.need("ports")?;
                    if w == "--ports" {
                        return Err(lx.error(wat, "--sports or --dports (--ports, either direction, is not supported)"));
                    }
                    let list = ports(&lx, at, &v, true)?;
                    if w.contains("source") || w == "--sports" { r.sports = list } else { r.dports = list }
                }
                "--match-set" => {
                    let (_, name) = lx.need("a set name")?;
                    let (at, dir) = lx.need("src or dst")?;
                    match dir.as_str() {
                        "src" => r.src_set = Some(name),
                        "dst" => r.dst_set = Some(name),
                        _ => return Err(lx.error(at, "src or dst (one direction; more are not supported)")),
                    }
                }
                "--ctstate" | "--state" => {
                    let (at, v) = lx.need("connection states")?;
                    for s in v.split(',') {
                        r.ct.push(match s {
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
                    lx.need("a comment")?;
                }
                "--syn" => r.tcp_flags = Some((0x17, 0x02)),
                "--tcp-flags" => {
                    let (at, m) = lx.need("the flags to examine, like SYN,RST,ACK")?;
                    let mask = tcp_flags(&m).ok_or_else(|| lx.error(at, "TCP flags (FIN,SYN,RST,PSH,ACK,URG,ALL,NONE)"))?;
                    let (at, v) = lx.need("the flags that must be set")?;
                    let value = tcp_flags(&v).ok_or_else(|| lx.error(at, "TCP flags (FIN,SYN,RST,PSH,ACK,URG,ALL,NONE)"))?;
                    r.tcp_flags = Some((mask, value & mask));
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
                        "LOG" | "NFLOG" => None,
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
                    lx.need("a reject type")?;
                }
                o if LOG_OPTIONS.iter().any(|(n, _)| *n == o) => {
                    if !matches!(target_name.as_deref(), Some("LOG" | "NFLOG")) {
                        return Err(lx.error(wat, &format!("-j LOG or -j NFLOG before {o}")));
                    }
                    if LOG_OPTIONS.iter().any(|&(n, v)| n == o && v) {
                        lx.need("a value")?;
                    }
                }
                _ => return Err(lx.error(wat, "a supported option (-s -d -p -i -o -m --sport --dport --tcp-flags --syn --match-set --ctstate -j -g)")),
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
                _ => continue,
            };
            if !r.proto.is_some_and(|(p, not)| !not && ok.contains(&p)) {
                let want = if m == "multiport" {
                    "-p tcp or -p udp"
                } else if m == "tcp" {
                    "-p tcp"
                } else {
                    "-p udp"
                };
                return Err(lx.error(*at, &format!("{want} for the {m} match")));
            }
        }
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
        assert_eq!(web.dports, vec![(80, 80), (443, 443), (8000, 8080)]);
        let not10 = &rs.chains[0].rules[5];
        assert!(not10.src.unwrap().not);
        assert_eq!(not10.proto, Some((17, false)));
        assert_eq!(rs.chains[0].rules[1].ct, vec![CtState::Related, CtState::Established]);
        assert_eq!(rs.chains[0].rules[4].src_set.as_deref(), Some("blocklist"));
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
        assert_eq!(rs.chains[0].rules[0].tcp_flags, Some((0x17, 0x02)));
        assert_eq!(rs.chains[0].rules[1].tcp_flags, Some((0x12, 0x10)));
        let e = parse(
            "r",
            "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -p tcp --tcp-flags SYN,BOGUS SYN\nCOMMIT\n",
        )
        .unwrap_err();
        assert_eq!(e.column, 29);
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
