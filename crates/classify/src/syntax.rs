//! rampart's own rule syntax, close to nftables:
//!
//! ```text
//! # comments run to the end of the line
//! set blocked4 = { 198.51.100.0/24, 203.0.113.7 }
//! table filter {
//!   ct state established,related accept
//!   ip saddr @blocked4 drop
//!   tcp dport { 22, 443 } ct state new accept
//!   ip6 saddr != 2001:db8::/32 udp dport 1000-2000 jump limits
//!   iif "eth0" app bittorrent drop
//!   udp dport 53 accept
//!   default drop
//! }
//! chain limits {
//!   udp sport 53 return
//!   reject
//! }
//! ```
//!
//! A `table` is a chain that packets enter, with `default accept|drop` as its policy; a
//! `chain` is entered only by `jump`. Each line is one rule: matches, all of which must hold,
//! then at most one verdict (`accept`, `drop`, `reject`, `return`, `jump NAME`, `goto NAME`;
//! none counts only). A `jump` comes back after the chain's end or its `return`; a `goto`
//! does not. Rules are named `CHAIN:N` as for iptables. Matches: `ip|ip6 saddr|daddr [!=]
//! ADDR[/LEN]|@SET`, `tcp|udp sport|dport [!=] PORT|LO-HI|{ ... }`, `tcp flags F[,F] [/ MASK]`
//! (the flags of MASK, by default F itself, must be exactly F), `meta l4proto NAME|NUM`,
//! `iif|oif [!=] NAME` (a trailing `*` matches any suffix), `ct state LIST`, `app NAME`.
//! The result is the same [`Ruleset`] the `iptables-save` reader makes, and the sets it
//! defines.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::classbench::ParseError;
use crate::ipset::{IpSet, PrefixError, masked, parse_prefix};
use crate::iptables::{Chain, CtState, IptRule, Net, Ruleset, Target};

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Word(String),
    Str(String),
    Sym(char),
    Ne,
    Newline,
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: usize,
    col: usize,
}

fn lex(file: &str, text: &str) -> Result<Vec<Token>, ParseError> {
    let mut out = Vec::new();
    for (li, line) in text.lines().enumerate() {
        let mut it = line.char_indices().peekable();
        while let Some((i, c)) = it.next() {
            let at = |tok| Token { tok, line: li + 1, col: i + 1 };
            match c {
                '#' => break,
                c if c.is_whitespace() => {}
                '{' | '}' | ',' | '=' | '@' => out.push(at(Tok::Sym(c))),
                '!' => {
                    if it.next_if(|&(_, c)| c == '=').is_some() {
                        out.push(at(Tok::Ne));
                    } else {
                        return Err(err(file, li + 1, i + 1, "'!=' ", "'!'"));
                    }
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
                _ => {
                    let mut s = String::from(c);
                    while let Some(&(_, c)) = it.peek() {
                        if c.is_whitespace() || "{},=@#\"".contains(c) || c == '!' {
                            break;
                        }
                        s.push(c);
                        it.next();
                    }
                    out.push(at(Tok::Word(s)));
                }
            }
        }
        out.push(Token { tok: Tok::Newline, line: li + 1, col: line.len() + 1 });
    }
    Ok(out)
}

fn err(file: &str, line: usize, col: usize, expected: &str, found: &str) -> ParseError {
    ParseError {
        file: file.to_string(),
        line,
        column: col,
        expected: expected.trim().to_string(),
        found: found.to_string(),
    }
}

struct Parser<'a> {
    file: &'a str,
    toks: Vec<Token>,
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.toks.get(self.pos)
    }

    fn error(&self, expected: &str) -> ParseError {
        match self.peek() {
            Some(t) => {
                let found = match &t.tok {
                    Tok::Word(w) => format!("{w:?}"),
                    Tok::Str(s) => format!("\"{s}\""),
                    Tok::Sym(c) => format!("'{c}'"),
                    Tok::Ne => "'!='".into(),
                    Tok::Newline => "end of line".into(),
                };
                err(self.file, t.line, t.col, expected, &found)
            }
            None => {
                let (l, c) = self.toks.last().map_or((1, 1), |t| (t.line + 1, 1));
                err(self.file, l, c, expected, "end of file")
            }
        }
    }

    fn skip_newlines(&mut self) {
        while matches!(self.peek(), Some(Token { tok: Tok::Newline, .. })) {
            self.pos += 1;
        }
    }

    fn word(&mut self, expected: &str) -> Result<(String, usize, usize), ParseError> {
        match self.peek().cloned() {
            Some(Token { tok: Tok::Word(w) | Tok::Str(w), line, col }) => {
                self.pos += 1;
                Ok((w, line, col))
            }
            _ => Err(self.error(expected)),
        }
    }

    fn sym(&mut self, c: char) -> Result<(), ParseError> {
        match self.peek() {
            Some(Token { tok: Tok::Sym(x), .. }) if *x == c => {
                self.pos += 1;
                Ok(())
            }
            _ => Err(self.error(&format!("'{c}'"))),
        }
    }

    fn is_sym(&self, c: char) -> bool {
        matches!(self.peek(), Some(Token { tok: Tok::Sym(x), .. }) if *x == c)
    }

    fn not(&mut self) -> bool {
        let ne = matches!(self.peek(), Some(Token { tok: Tok::Ne, .. }));
        self.pos += usize::from(ne);
        ne
    }

    /// One value, or `{ v, v, ... }` (newlines allowed inside).
    fn list(&mut self, expected: &str) -> Result<Vec<(String, usize, usize)>, ParseError> {
        if !self.is_sym('{') {
            return Ok(vec![self.word(expected)?]);
        }
        self.pos += 1;
        let mut v = Vec::new();
        loop {
            self.skip_newlines();
            v.push(self.word(expected)?);
            self.skip_newlines();
            if self.is_sym(',') {
                self.pos += 1;
                continue;
            }
            self.sym('}')?;
            return Ok(v);
        }
    }
}

fn net(
    p: &Parser<'_>,
    (w, line, col): &(String, usize, usize),
    v6: Option<bool>,
) -> Result<(IpAddr, u8), ParseError> {
    let bad = |what: &str| err(p.file, *line, *col, what, &format!("{w:?}"));
    let (addr, len) = parse_prefix(w).map_err(|e| match e {
        PrefixError::Addr => bad("an address or prefix"),
        PrefixError::Len(_) => bad("a prefix length"),
    })?;
    if v6.is_some_and(|v6| v6 != addr.is_ipv6()) {
        return Err(bad(if addr.is_ipv6() {
            "an IPv4 address after 'ip'"
        } else {
            "an IPv6 address after 'ip6'"
        }));
    }
    Ok((addr, len))
}

/// Parses rampart rules; `file` names the input in errors.
pub fn parse(file: &str, text: &str) -> Result<(Ruleset, HashMap<String, IpSet>), ParseError> {
    let mut p = Parser { file, toks: lex(file, text)?, pos: 0 };
    let mut rs = Ruleset::default();
    let mut sets: HashMap<String, IpSet> = HashMap::new();
    let mut jumps: Vec<(String, usize, usize)> = Vec::new();
    loop {
        p.skip_newlines();
        if p.peek().is_none() {
            break;
        }
        let (kw, _, _) = p.word("'set', 'table' or 'chain'")?;
        match kw.as_str() {
            "set" => {
                let (name, _, _) = p.word("a set name")?;
                p.sym('=')?;
                let mut s = IpSet::new();
                for e in p.list("an address or prefix")? {
                    let (a, l) = net(&p, &e, None)?;
                    s.insert(a, l);
                }
                sets.insert(name, s);
            }
            "table" | "chain" => {
                let (name, line, col) = p.word("a chain name")?;
                if rs.chains.iter().any(|c| c.name == name) {
                    return Err(err(
                        file,
                        line,
                        col,
                        "a new chain name",
                        &format!("{name:?} again"),
                    ));
                }
                p.sym('{')?;
                let mut chain = Chain { name: name.clone(), policy: None, rules: Vec::new() };
                let mut policy = None;
                loop {
                    p.skip_newlines();
                    if p.peek().is_none() {
                        return Err(p.error(&format!("'}}' closing {kw} {name}")));
                    }
                    if p.is_sym('}') {
                        p.pos += 1;
                        break;
                    }
                    if matches!(p.peek(), Some(Token { tok: Tok::Word(w), .. }) if w == "default") {
                        p.pos += 1;
                        let (v, line, col) = p.word("accept or drop")?;
                        policy = Some(match v.as_str() {
                            "accept" => Target::Accept,
                            "drop" => Target::Drop,
                            _ => {
                                return Err(err(
                                    file,
                                    line,
                                    col,
                                    "accept or drop",
                                    &format!("{v:?}"),
                                ));
                            }
                        });
                        continue;
                    }
                    let line = p.peek().map_or(0, |t| t.line);
                    let n = chain.rules.len() + 1;
                    let r = rule(&mut p, &sets, &mut jumps, format!("{name}:{n}"), line)?;
                    chain.rules.push(r);
                }
                if kw == "table" {
                    chain.policy = Some(policy.unwrap_or(Target::Accept));
                } else if policy.is_some() {
                    return Err(err(file, line, col, "a table (chains have no default)", "chain"));
                }
                rs.chains.push(chain);
            }
            _ => {
                p.pos -= 1;
                return Err(p.error("'set', 'table' or 'chain'"));
            }
        }
    }
    for (j, line, col) in jumps {
        if !rs.chains.iter().any(|c| c.name == j && c.policy.is_none()) {
            return Err(err(
                file,
                line,
                col,
                "a chain defined with 'chain NAME { ... }'",
                &format!("{j:?}"),
            ));
        }
    }
    Ok((rs, sets))
}

fn rule(
    p: &mut Parser<'_>,
    sets: &HashMap<String, IpSet>,
    jumps: &mut Vec<(String, usize, usize)>,
    name: String,
    line: usize,
) -> Result<IptRule, ParseError> {
    let mut r = IptRule { name, line, ..IptRule::default() };
    // The matches given so far: nftables ANDs repeated matches, which the rule model cannot
    // hold, so a second one of a kind is refused rather than read with another meaning.
    let mut given: Vec<&'static str> = Vec::new();
    let mut once = |p: &Parser<'_>, l: usize, c: usize, what: &'static str| {
        if given.contains(&what) {
            return Err(err(
                p.file,
                l,
                c,
                &format!("one {what} match per rule (a second one is not supported)"),
                &format!("{what:?} again"),
            ));
        }
        given.push(what);
        Ok(())
    };
    loop {
        if matches!(p.peek(), Some(Token { tok: Tok::Newline, .. }) | None) || p.is_sym('}') {
            return Ok(r);
        }
        if r.target.is_some() {
            return Err(p.error("the end of the rule after its verdict"));
        }
        let (w, wl, wc) = p.word("a match or a verdict")?;
        match w.as_str() {
            "ip" | "ip6" => {
                let (dir, _, _) = p.word("saddr or daddr")?;
                if dir != "saddr" && dir != "daddr" {
                    p.pos -= 1;
                    return Err(p.error("saddr or daddr"));
                }
                once(p, wl, wc, if dir == "saddr" { "saddr" } else { "daddr" })?;
                let not = p.not();
                if p.is_sym('@') {
                    p.pos += 1;
                    let (set, sl, sc) = p.word("a set name")?;
                    if !sets.contains_key(&set) {
                        return Err(err(
                            p.file,
                            sl,
                            sc,
                            "a set defined earlier with 'set NAME = { ... }'",
                            &format!("{set:?}"),
                        ));
                    }
                    let _ = (sl, sc);
                    if dir == "saddr" {
                        r.src_set = Some((set, not))
                    } else {
                        r.dst_set = Some((set, not))
                    }
                } else {
                    let v = p.word("an address or prefix")?;
                    let (a, len) = net(p, &v, Some(w == "ip6"))?;
                    let n = Net { addr: masked(a, len), len, not };
                    if dir == "saddr" { r.src = Some(n) } else { r.dst = Some(n) }
                }
            }
            "tcp" | "udp" => {
                let proto = if w == "tcp" { 6 } else { 17 };
                if r.proto.as_ref().is_some_and(|v| v[..] != [(proto, proto)]) {
                    return Err(err(
                        p.file,
                        wl,
                        wc,
                        "one transport protocol per rule",
                        &format!("{w:?}"),
                    ));
                }
                r.proto = Some(vec![(proto, proto)]);
                let (dir, dl, dc) = p.word("sport, dport or flags")?;
                if matches!(dir.as_str(), "sport" | "dport" | "flags") {
                    once(
                        p,
                        dl,
                        dc,
                        if dir == "sport" {
                            "sport"
                        } else if dir == "dport" {
                            "dport"
                        } else {
                            "flags"
                        },
                    )?;
                }
                if dir == "flags" && proto == 6 {
                    // `tcp flags syn` (set), `tcp flags syn / syn,ack` (of those, exactly syn).
                    let (v, l, c) = p.word("TCP flags like syn or syn,ack")?;
                    let mut names = vec![v];
                    while p.is_sym(',') {
                        p.pos += 1;
                        names.push(p.word("a TCP flag")?.0);
                    }
                    let bad = |l, c, v: &str| {
                        err(
                            p.file,
                            l,
                            c,
                            "TCP flags (fin, syn, rst, psh, ack, urg, ece, cwr)",
                            &format!("{v:?}"),
                        )
                    };
                    let value = crate::iptables::tcp_flags(&names.join(","))
                        .ok_or_else(|| bad(l, c, &names.join(",")))?;
                    let mut mask = value;
                    if matches!(p.peek(), Some(Token { tok: Tok::Word(w), .. }) if w == "/") {
                        p.pos += 1;
                        let (m, l, c) = p.word("the flags to examine")?;
                        let mut names = vec![m];
                        while p.is_sym(',') {
                            p.pos += 1;
                            names.push(p.word("a TCP flag")?.0);
                        }
                        mask = crate::iptables::tcp_flags(&names.join(","))
                            .ok_or_else(|| bad(l, c, &names.join(",")))?;
                    }
                    r.tcp_flags = Some(crate::iptables::ByteSet::masked(mask, value & mask));
                    continue;
                }
                if dir != "sport" && dir != "dport" {
                    p.pos -= 1;
                    return Err(p.error(if proto == 6 {
                        "sport, dport or flags"
                    } else {
                        "sport or dport"
                    }));
                }
                let not = p.not();
                let mut ranges = Vec::new();
                for (v, l, c) in p.list("a port or LO-HI")? {
                    let one = |s: &str| s.parse::<u16>().ok();
                    let range = match v.split_once('-') {
                        Some((a, b)) => one(a).zip(one(b)).filter(|(a, b)| a <= b),
                        None => one(&v).map(|x| (x, x)),
                    };
                    ranges.push(
                        range.ok_or_else(|| {
                            err(p.file, l, c, "a port or LO-HI", &format!("{v:?}"))
                        })?,
                    );
                }
                if not {
                    // Everything outside the listed ports.
                    ranges.sort_unstable();
                    let mut out = Vec::new();
                    let mut next = 0u32;
                    for (a, b) in ranges {
                        if u32::from(a) > next {
                            out.push((next as u16, a - 1));
                        }
                        next = next.max(u32::from(b) + 1);
                    }
                    if next <= 65535 {
                        out.push((next as u16, 65535));
                    }
                    ranges = out;
                }
                if dir == "sport" { r.sports = Some(ranges) } else { r.dports = Some(ranges) }
            }
            "meta" => {
                let (k, _, _) = p.word("l4proto")?;
                if k != "l4proto" {
                    p.pos -= 1;
                    return Err(p.error("l4proto"));
                }
                if r.proto.is_some() {
                    return Err(err(
                        p.file,
                        wl,
                        wc,
                        "one protocol match per rule (a second one is not supported)",
                        "\"meta\"",
                    ));
                }
                let not = p.not();
                let (v, l, c) = p.word("a protocol")?;
                let n = match v.as_str() {
                    "tcp" => 6,
                    "udp" => 17,
                    "icmp" => 1,
                    "icmpv6" => 58,
                    "sctp" => 132,
                    x => x.parse().map_err(|_| {
                        err(p.file, l, c, "a protocol name or number", &format!("{v:?}"))
                    })?,
                };
                r.proto =
                    Some(if not { crate::iptables::complement((n, n), 255) } else { vec![(n, n)] });
            }
            "iif" | "oif" => {
                once(p, wl, wc, if w == "iif" { "iif" } else { "oif" })?;
                let not = p.not();
                let (v, _, _) = p.word("an interface name")?;
                let v = v.strip_suffix('*').map_or(v.clone(), |s| format!("{s}+"));
                if w == "iif" { r.iif = Some((vec![v], not)) } else { r.oif = Some((vec![v], not)) }
            }
            "ct" => {
                once(p, wl, wc, "ct")?;
                let (k, _, _) = p.word("state")?;
                if k != "state" {
                    p.pos -= 1;
                    return Err(p.error("state"));
                }
                let mut states = p.list("connection states")?;
                while p.is_sym(',') {
                    p.pos += 1;
                    states.push(p.word("a connection state")?);
                }
                for (s, l, c) in states {
                    r.ct.get_or_insert_with(Vec::new).push(match s.as_str() {
                        "new" => CtState::New,
                        "established" => CtState::Established,
                        "related" => CtState::Related,
                        "invalid" => CtState::Invalid,
                        "untracked" => CtState::Untracked,
                        _ => {
                            return Err(err(
                                p.file,
                                l,
                                c,
                                "new, established, related, invalid or untracked",
                                &format!("{s:?}"),
                            ));
                        }
                    });
                }
            }
            "app" => {
                once(p, wl, wc, "app")?;
                let (v, _, _) = p.word("an application name")?;
                r.app.push(v);
            }
            "accept" => r.target = Some(Target::Accept),
            "drop" => r.target = Some(Target::Drop),
            "reject" => {
                r.target = Some(Target::Reject);
                r.reject = Some(crate::iptables::RejectWith::Icmpx(1));
            }
            "return" => r.target = Some(Target::Return),
            "counter" => r.counter = true,
            "jump" | "goto" => {
                let (c, l, col) = p.word("a chain name")?;
                jumps.push((c.clone(), l, col));
                r.target = Some(if w == "jump" { Target::Jump(c) } else { Target::Goto(c) });
            }
            _ => {
                p.pos -= 1;
                return Err(p.error("a match (ip, ip6, tcp, udp, meta, iif, oif, ct, app) or a verdict (accept, drop, reject, return, jump, goto)"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
# the design's example
set blocked4 = { 198.51.100.0/24, 203.0.113.7 }
table filter {
  ct state established,related accept
  ip saddr @blocked4 drop
  tcp dport { 22, 443 } ct state new accept
  ip6 saddr != 2001:db8::/32 udp dport 1000-2000 jump limits
  iif \"eth0\" app bittorrent drop
  udp dport 53 accept
  default drop
}
chain limits {
  udp sport 53 return
  reject
}
";

    #[test]
    fn parses_the_design_example() {
        let (rs, sets) = parse("rules", SAMPLE).unwrap();
        assert!(sets["blocked4"].contains("203.0.113.7".parse().unwrap()));
        assert_eq!(rs.counts(), vec![("filter", 6), ("limits", 2)]);
        let f = &rs.chains[0];
        assert_eq!(f.policy, Some(Target::Drop));
        assert_eq!(f.rules[2].dports, Some(vec![(22, 22), (443, 443)]));
        assert_eq!(f.rules[2].ct, Some(vec![CtState::New]));
        let v6 = f.rules[3].src.unwrap();
        assert!(v6.not && v6.addr.is_ipv6() && v6.len == 32);
        assert_eq!(f.rules[4].app, vec!["bittorrent".to_string()]);
        assert_eq!(f.rules[3].target, Some(Target::Jump("limits".into())));
        assert_eq!(rs.reachable("filter").unwrap(), vec![0, 1]);
    }

    #[test]
    fn errors_say_where_and_what() {
        let e = parse("r", "table t {\n  tcp dport 99999 accept\n}\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 13));
        assert!(e.to_string().starts_with("r:2:13: expected a port"), "{e}");
        let e = parse("r", "table t {\n  ip saddr @nope drop\n}\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 13));
        let e = parse("r", "table t {\n  jump nowhere\n}\n").unwrap_err();
        assert!(e.expected.contains("chain defined"), "{e}");
        let e = parse("r", "table t {\n  ip saddr 2001:db8::1 drop\n}\n").unwrap_err();
        assert!(e.expected.contains("IPv4"), "{e}");
        let e = parse("r", "table t {\n  accept drop\n}\n").unwrap_err();
        assert_eq!(e.column, 10);
        let e = parse("r", "table t {\n  frobnicate\n}\n").unwrap_err();
        assert!(e.expected.starts_with("a match"), "{e}");
        let e = parse("r", "table t {\n  accept\n").unwrap_err();
        assert!(e.found.contains("end of file"), "{e}");
        let (rs, _) =
            parse("r", "table t {\n  tcp flags syn / syn,ack drop\n  tcp flags ack accept\n}\n")
                .unwrap();
        assert_eq!(
            rs.chains[0].rules[0].tcp_flags,
            Some(crate::iptables::ByteSet::masked(0x12, 0x02))
        );
        assert_eq!(
            rs.chains[0].rules[1].tcp_flags,
            Some(crate::iptables::ByteSet::masked(0x10, 0x10))
        );
        let (rs, _) = parse("r", "table t {\n  tcp dport != { 22, 80-90 } drop\n}\n").unwrap();
        assert_eq!(rs.chains[0].rules[0].dports, Some(vec![(0, 21), (23, 79), (91, 65535)]));
    }
}
