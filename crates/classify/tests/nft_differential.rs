//! Random small nftables rule sets, written as nft text, read and lowered onto the compiled
//! classifier, against a direct interpreter of nft's chain walk over the same rules as
//! generated (matches as nft's bytecode tests them: bitmask matches, dependencies on family
//! and protocol, sets; jump, goto, return, continue and the base chain's policy; connection
//! state given with each packet).

use std::net::IpAddr;

use rampart_classify::firewall::{Firewall, Packet};
use rampart_classify::iptables::{CtState, Target};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.next() as usize % v.len()]
    }
    fn chance(&mut self, n: u64) -> bool {
        self.next().is_multiple_of(n)
    }
}

const P4: &[(&str, u32, u8)] = &[
    ("10.0.0.0/8", 0x0a00_0000, 8),
    ("10.1.0.0/16", 0x0a01_0000, 16),
    ("192.168.1.7", 0xc0a8_0107, 32),
];
const P6: &[(&str, u128, u8)] =
    &[("2001:db8::/32", 0x2001_0db8 << 96, 32), ("::1", 1, 128), ("fe80::/10", 0xfe80 << 112, 10)];
const PORTS: &[(u16, u16)] = &[(22, 22), (80, 80), (443, 443), (1000, 2000), (0, 1023)];
const FLAGS: &[(&str, u8)] = &[("fin", 1), ("syn", 2), ("rst", 4), ("ack", 0x10)];
const STATES: &[(&str, u8, CtState)] = &[
    ("new", 8, CtState::New),
    ("established", 2, CtState::Established),
    ("related", 4, CtState::Related),
    ("invalid", 1, CtState::Invalid),
];
/// The named set `s4`.
const S4: &[(u32, u8)] = &[(0x0a01_0000, 16), (0xc0a8_0107, 32)];

#[derive(Clone, Debug)]
enum M {
    Src4(usize, bool),
    Src4Any(Vec<usize>),
    Dst6(usize, bool),
    Named4,
    Dport(u8, Vec<usize>, bool),
    DportLt(u8, u16),
    L4(Vec<u8>, bool),
    IcmpType(u8),
    Icmp6Type(u8),
    FlagsAny(u8),
    FlagsEq(u8),
    FlagsNe(u8),
    FlagsMasked(u8, u8),
    FlagsIn(Vec<u8>),
    CtAny(u8),
    CtNe(u8),
    CtIn(Vec<u8>, bool),
    Iif(&'static str, bool),
    Concat(Vec<(usize, u16)>),
}

#[derive(Clone, Debug)]
enum V {
    Accept,
    Drop,
    Reject,
    Jump(usize),
    Goto(usize),
    Return,
    Continue,
    Count,
}

#[derive(Clone, Debug)]
struct R {
    ms: Vec<M>,
    v: V,
    comment: Option<String>,
}

fn flag_text(v: u8) -> String {
    let s: Vec<&str> = FLAGS.iter().filter(|(_, b)| v & b != 0).map(|(n, _)| *n).collect();
    if s.is_empty() { "0x0".into() } else { s.join("|") }
}

fn render(m: &M) -> String {
    let ports = |v: &[usize]| -> String {
        let one = |&i: &usize| {
            let (a, b) = PORTS[i];
            if a == b { a.to_string() } else { format!("{a}-{b}") }
        };
        if v.len() == 1 {
            one(&v[0])
        } else {
            format!("{{ {} }}", v.iter().map(one).collect::<Vec<_>>().join(", "))
        }
    };
    let ne = |n: bool| if n { "!= " } else { "" };
    let proto = |p: u8| if p == 6 { "tcp" } else { "udp" };
    match m {
        M::Src4(i, n) => format!("ip saddr {}{}", ne(*n), P4[*i].0),
        M::Src4Any(v) => {
            format!("ip saddr {{ {} }}", v.iter().map(|&i| P4[i].0).collect::<Vec<_>>().join(", "))
        }
        M::Dst6(i, n) => format!("ip6 daddr {}{}", ne(*n), P6[*i].0),
        M::Named4 => "ip saddr @s4".into(),
        M::Dport(p, v, n) => format!("{} dport {}{}", proto(*p), ne(*n), ports(v)),
        M::DportLt(p, x) => format!("{} dport < {x}", proto(*p)),
        M::L4(v, n) => format!(
            "meta l4proto {}{{ {} }}",
            ne(*n),
            v.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ")
        ),
        M::IcmpType(t) => format!("icmp type {t}"),
        M::Icmp6Type(t) => format!("icmpv6 type {t}"),
        M::FlagsAny(v) => format!("tcp flags {}", flag_text(*v).replace('|', ",")),
        M::FlagsEq(v) => format!("tcp flags == {}", flag_text(*v)),
        M::FlagsNe(v) => format!("tcp flags != {}", flag_text(*v)),
        M::FlagsMasked(m, v) => format!("tcp flags & ({}) == {}", flag_text(*m), flag_text(*v)),
        M::FlagsIn(v) => format!(
            "tcp flags {{ {} }}",
            v.iter().map(|&x| flag_text(x)).collect::<Vec<_>>().join(", ")
        ),
        M::CtAny(v) => format!(
            "ct state {}",
            STATES.iter().filter(|s| v & s.1 != 0).map(|s| s.0).collect::<Vec<_>>().join(",")
        ),
        M::CtNe(v) => format!("ct state != {}", STATES.iter().find(|s| s.1 == *v).unwrap().0),
        M::CtIn(v, n) => format!(
            "ct state {}{{ {} }}",
            ne(*n),
            v.iter()
                .map(|b| STATES.iter().find(|s| s.1 == *b).unwrap().0)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        M::Iif(p, n) => format!("iifname {}\"{p}\"", ne(*n)),
        M::Concat(v) => format!(
            "ip saddr . tcp dport {{ {} }}",
            v.iter().map(|(i, p)| format!("{} . {p}", P4[*i].0)).collect::<Vec<_>>().join(", ")
        ),
    }
}

const CHAINS: [&str; 3] = ["forward", "c1", "c2"];

fn gen_rule(rng: &mut Rng, chain: usize) -> R {
    let mut ms = Vec::new();
    // One family and one protocol per rule, as nft requires.
    let fam = *rng.pick(&[0u8, 0, 4, 6]);
    match fam {
        4 if rng.chance(2) => ms.push(match rng.next() % 4 {
            0 => M::Src4(rng.next() as usize % 3, rng.chance(3)),
            1 => M::Src4Any(vec![0, 2]),
            2 => M::Named4,
            _ => M::Src4(1, false),
        }),
        6 if rng.chance(2) => ms.push(M::Dst6(rng.next() as usize % 3, rng.chance(3))),
        _ => {}
    }
    let classes: &[&str] = match fam {
        4 => &["", "tcp", "udp", "icmp", "l4"],
        6 => &["", "tcp", "udp", "icmpv6", "l4"],
        _ => &["", "tcp", "udp", "l4"],
    };
    match *rng.pick(classes) {
        "tcp" | "udp" => {
            let p = if rng.chance(2) { 6 } else { 17 };
            if rng.chance(2) {
                let n = 1 + rng.next() as usize % 2;
                let v: Vec<usize> = (0..n).map(|_| rng.next() as usize % PORTS.len()).collect();
                ms.push(M::Dport(p, v, rng.chance(4)));
            } else if rng.chance(3) {
                ms.push(M::DportLt(p, *rng.pick(&[23u16, 1024])));
            }
            if p == 6 && rng.chance(2) {
                let v = (rng.next() as u8) & 0x17;
                ms.push(match rng.next() % 5 {
                    0 => M::FlagsAny(v | 2),
                    1 => M::FlagsEq(v),
                    2 => M::FlagsNe(v),
                    3 => M::FlagsMasked(0x12, v & 0x12),
                    _ => M::FlagsIn(vec![2, 0x12]),
                });
            }
            if p == 6 && fam == 4 && rng.chance(4) {
                ms.push(M::Concat(vec![(0, 22), (2, 443)]));
            }
        }
        "icmp" => ms.push(M::IcmpType(*rng.pick(&[0u8, 8]))),
        "icmpv6" => ms.push(M::Icmp6Type(*rng.pick(&[128u8, 129]))),
        "l4" => ms.push(M::L4(vec![*rng.pick(&[6u8, 17]), 1], rng.chance(3))),
        _ => {}
    }
    if rng.chance(3) {
        let b = *rng.pick(&[1u8, 2, 4, 8]);
        ms.push(match rng.next() % 3 {
            0 => M::CtAny(b | *rng.pick(&[0u8, 4])),
            1 => M::CtNe(b),
            _ => M::CtIn(vec![b, 4], rng.chance(2)),
        });
    }
    if rng.chance(4) {
        ms.push(M::Iif(rng.pick::<&str>(&["eth0", "eth*", "lan1", "*"]), rng.chance(3)));
    }
    let mut vs = vec![V::Accept, V::Drop, V::Reject, V::Continue, V::Count, V::Return];
    for k in chain + 1..3 {
        vs.push(V::Jump(k));
        vs.push(V::Goto(k));
    }
    let v = rng.pick(&vs).clone();
    let comment = rng.chance(4).then(|| format!("r{}", rng.next() % 100));
    R { ms, v, comment }
}

fn render_set(chains: &[Vec<R>], policy: &str) -> String {
    let mut s = String::from(
        "table inet t {\n\tset s4 {\n\t\ttype ipv4_addr\n\t\tflags interval\n\t\telements = { 10.1.0.0/16, 192.168.1.7 }\n\t}\n",
    );
    for (k, rules) in chains.iter().enumerate() {
        s += &format!("\tchain {} {{\n", CHAINS[k]);
        if k == 0 {
            s += &format!("\t\ttype filter hook forward priority filter; policy {policy};\n");
        }
        for r in rules {
            let mut line: Vec<String> = r.ms.iter().map(render).collect();
            line.push(match &r.v {
                V::Accept => "accept".into(),
                V::Drop => "drop".into(),
                V::Reject => "reject".into(),
                V::Jump(k) => format!("jump {}", CHAINS[*k]),
                V::Goto(k) => format!("goto {}", CHAINS[*k]),
                V::Return => "return".into(),
                V::Continue => "continue".into(),
                V::Count => "counter".into(),
            });
            if let Some(c) = &r.comment {
                line.push(format!("comment \"{c}\""));
            }
            s += &format!("\t\t{}\n", line.join(" "));
        }
        s += "\t}\n";
    }
    s + "}\n"
}

fn in4(a: IpAddr, net: u32, len: u8) -> bool {
    let IpAddr::V4(a) = a else { return false };
    let m = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    u32::from(a) & m == net
}

fn in6(a: IpAddr, net: u128, len: u8) -> bool {
    let IpAddr::V6(a) = a else { return false };
    let m = if len == 0 { 0 } else { u128::MAX << (128 - len) };
    u128::from(a) & m == net
}

fn glob(p: &str, name: &str) -> bool {
    match p.strip_suffix('*') {
        Some(pre) => name.starts_with(pre),
        None => p == name,
    }
}

/// nft's meaning of one match.
fn holds(m: &M, p: &Packet<'_>, ct: u8) -> bool {
    let v4 = p.src.is_ipv4();
    let inp = |i: usize| {
        let (lo, hi) = PORTS[i];
        lo <= p.dport && p.dport <= hi
    };
    match m {
        M::Src4(i, n) => v4 && in4(p.src, P4[*i].1, P4[*i].2) != *n,
        M::Src4Any(v) => v4 && v.iter().any(|&i| in4(p.src, P4[i].1, P4[i].2)),
        M::Dst6(i, n) => !v4 && in6(p.dst, P6[*i].1, P6[*i].2) != *n,
        M::Named4 => v4 && S4.iter().any(|&(a, l)| in4(p.src, a, l)),
        M::Dport(pr, v, n) => p.proto == *pr && v.iter().any(|&i| inp(i)) != *n,
        M::DportLt(pr, x) => p.proto == *pr && p.dport < *x,
        M::L4(v, n) => v.contains(&p.proto) != *n,
        M::IcmpType(t) => v4 && p.proto == 1 && p.sport == u16::from(*t),
        M::Icmp6Type(t) => !v4 && p.proto == 58 && p.sport == u16::from(*t),
        M::FlagsAny(v) => p.proto == 6 && p.tcp_flags & v != 0,
        M::FlagsEq(v) => p.proto == 6 && p.tcp_flags == *v,
        M::FlagsNe(v) => p.proto == 6 && p.tcp_flags != *v,
        M::FlagsMasked(k, v) => p.proto == 6 && p.tcp_flags & k == *v,
        M::FlagsIn(v) => p.proto == 6 && v.contains(&p.tcp_flags),
        M::CtAny(v) => ct & v != 0,
        M::CtNe(v) => ct != *v,
        M::CtIn(v, n) => v.contains(&ct) != *n,
        M::Iif(g, n) => glob(g, p.iif) != *n,
        M::Concat(v) => {
            v4 && p.proto == 6
                && v.iter().any(|&(i, port)| in4(p.src, P4[i].1, P4[i].2) && p.dport == port)
        }
    }
}

/// nft's chain walk: the deciding rule's (chain, position), or `None` for the policy.
fn walk(chains: &[Vec<R>], p: &Packet<'_>, ct: u8) -> Option<(usize, usize)> {
    let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
    while let Some((c, i)) = stack.pop() {
        let Some(r) = chains[c].get(i) else { continue };
        if !r.ms.iter().all(|m| holds(m, p, ct)) {
            stack.push((c, i + 1));
            continue;
        }
        match r.v {
            V::Accept | V::Drop | V::Reject => return Some((c, i)),
            V::Continue | V::Count => stack.push((c, i + 1)),
            V::Return => {}
            V::Jump(k) => {
                stack.push((c, i + 1));
                stack.push((k, 0));
            }
            V::Goto(k) => stack.push((k, 0)),
        }
    }
    None
}

#[test]
fn lowered_nft_rule_sets_decide_as_nft_walks_them() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut decided, mut by_rule, mut deeper) = (0, 0, 0);
    for _ in 0..600 {
        let chains: Vec<Vec<R>> =
            (0..3).map(|k| (0..rng.next() % 7).map(|_| gen_rule(&mut rng, k)).collect()).collect();
        let policy = *rng.pick(&["accept", "drop"]);
        let text = render_set(&chains, policy);
        let rs = rampart_classify::nft::parse("random.nft", &text)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        let fw = Firewall::from_iptables(&rs.rules, "forward", &rs.sets).unwrap();
        for _ in 0..150 {
            let v4 = rng.chance(2);
            let src: IpAddr = if v4 {
                *rng.pick(&["10.1.2.3", "10.9.9.9", "192.168.1.7", "200.1.1.1"])
            } else {
                *rng.pick(&["2001:db8::5", "::1", "fe80::1", "2002::1"])
            }
            .parse()
            .unwrap();
            let dst: IpAddr =
                if v4 { "10.0.0.1" } else { *rng.pick(&["2001:db8::9", "::1", "fe80::2"]) }
                    .parse()
                    .unwrap();
            let proto = *rng.pick(&[6u8, 17, 1, 58]);
            let state = *rng.pick(STATES);
            let p = Packet {
                src,
                dst,
                sport: *rng.pick(&[0u16, 8, 128, 129, 40000]),
                dport: *rng.pick(&[0u16, 22, 80, 443, 1500, 8080]),
                proto,
                iif: rng.pick::<&str>(&["eth0", "eth1", "lan1", ""]),
                oif: "",
                ct: Some(state.2),
                tcp_flags: *rng.pick(&[0u8, 0x02, 0x12, 0x10, 0x04, 0x11, 0x03]),
                app: &[],
                time: 0,
            };
            let want = walk(&chains, &p, state.1);
            let got = fw.evaluate(&p);
            let name = &fw.entries()[got.entry].name;
            match want {
                None => {
                    let pol = if policy == "drop" { Target::Drop } else { Target::Accept };
                    assert_eq!(
                        (got.verdict, name.as_str()),
                        (pol, "forward:policy"),
                        "{p:?}\n{text}"
                    );
                }
                Some((c, i)) => {
                    let r = &chains[c][i];
                    let mut want_name = format!("{}:{}", CHAINS[c], i + 1);
                    if let Some(cm) = &r.comment {
                        want_name = format!("{want_name} {cm}");
                    }
                    let verdict = match r.v {
                        V::Accept => Target::Accept,
                        V::Drop => Target::Drop,
                        _ => Target::Reject,
                    };
                    assert_eq!((got.verdict, name.clone()), (verdict, want_name), "{p:?}\n{text}");
                    by_rule += 1;
                    deeper += usize::from(c > 0);
                }
            }
            decided += 1;
        }
    }
    assert_eq!(decided, 90_000);
    // The random sets exercise rules in every chain, not only the policies.
    assert!(by_rule > 20_000 && deeper > 3_000, "{by_rule} {deeper}");
}
