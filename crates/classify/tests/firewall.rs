//! The lowered firewall against a direct interpreter of netfilter's chain walk, on random
//! rule sets written as `iptables-save` text and random packets.

use std::collections::HashMap;
use std::net::IpAddr;

use rampart_classify::firewall::{Firewall, Packet};
use rampart_classify::ipset::IpSet;
use rampart_classify::iptables::{CtState, IptRule, Net, Ruleset, Target, parse};

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

const PREFIXES: &[&str] = &[
    "10.0.0.0/8",
    "10.1.0.0/16",
    "192.168.1.7",
    "0.0.0.0/1",
    "2001:db8::/32",
    "2001:db8:0:1::/64",
    "::1",
    "fe80::/10",
];
const ADDRS: &[&str] = &[
    "10.1.2.3",
    "10.9.9.9",
    "192.168.1.7",
    "192.168.1.8",
    "200.1.1.1",
    "2001:db8::5",
    "2001:db8:0:1::9",
    "::1",
    "fe80::1",
    "2002::1",
];
const PORTS: &[&str] = &["22", "80", "443", "1000:2000", "80,443", "53,1024:65535", "0:1023"];
const PORT: &[&str] = &["22", "53", "443", "1000:2000", ":1023", "1024:"];
const IFACES: &[&str] = &["lo", "eth0", "eth1", "eth+", "wlan+", "+"];
const PKT_IFACES: &[&str] = &["lo", "eth0", "eth1", "eth10", "wlan0", "", "e"];

fn rule(rng: &mut Rng, chain: &str, jumps: &[&str]) -> String {
    let mut s = format!("-A {chain}");
    let neg = |rng: &mut Rng| if rng.chance(4) { "! " } else { "" };
    // One rule's addresses are of one family (iptables-restore refuses others).
    let v4 = rng.chance(2);
    let pool: Vec<&str> = PREFIXES.iter().copied().filter(|a| a.contains('.') == v4).collect();
    if rng.chance(2) {
        s += &format!(" {}-s {}", neg(rng), rng.pick(&pool));
    }
    if rng.chance(3) {
        s += &format!(" {}-d {}", neg(rng), rng.pick(&pool));
    }
    let proto = *rng.pick(&["tcp", "udp", "icmp", ""]);
    let mut ports = false;
    let mut tcp = false;
    if !proto.is_empty() {
        let n = neg(rng);
        s += &format!(" {n}-p {proto}");
        // Port and flag options belong to the tcp and udp matches, as in iptables.
        ports = n.is_empty() && proto != "icmp";
        tcp = n.is_empty() && proto == "tcp";
    }
    if rng.chance(3) {
        s += &format!(" {}-i {}", neg(rng), rng.pick(IFACES));
    }
    if rng.chance(5) {
        s += &format!(" {}-o {}", neg(rng), rng.pick(IFACES));
    }
    if ports && rng.chance(3) {
        s += &format!(" -m multiport --dports {}", rng.pick(PORTS));
    }
    if ports && rng.chance(4) {
        s += &format!(" --sport {}", rng.pick(PORT));
    }
    if rng.chance(6) {
        s += &format!(
            " -m set --match-set {} {}",
            rng.pick(&["s1", "s2"]),
            rng.pick(&["src", "dst"])
        );
    }
    if rng.chance(6) {
        s += &format!(
            " -m conntrack --ctstate {}",
            rng.pick(&["NEW", "ESTABLISHED,RELATED", "INVALID"])
        );
    }
    if tcp && rng.chance(6) {
        s += rng.pick::<&str>(&[
            " --syn",
            " --tcp-flags SYN,ACK ACK",
            " --tcp-flags ALL NONE",
            " --tcp-flags FIN,RST RST",
        ]);
    }
    let mut targets = vec!["ACCEPT", "DROP", "REJECT", ""];
    if chain != "INPUT" {
        targets.push("RETURN");
    }
    targets.extend_from_slice(jumps);
    let t = *rng.pick(&targets);
    if !t.is_empty() {
        s += &format!(" -j {t}");
    }
    s
}

fn ruleset(rng: &mut Rng) -> String {
    let mut s = String::from("*filter\n");
    s += &format!(":INPUT {} [0:0]\n:U1 - [0:0]\n:U2 - [0:0]\n", rng.pick(&["ACCEPT", "DROP"]));
    for (chain, jumps) in [("INPUT", &["U1", "U2"][..]), ("U1", &["U2"][..]), ("U2", &[][..])] {
        for _ in 0..rng.next() % 8 {
            s += &rule(rng, chain, jumps);
            s.push('\n');
        }
    }
    s + "COMMIT\n"
}

fn in_net(n: &Net, a: IpAddr) -> bool {
    let inside = match (n.addr, a) {
        (IpAddr::V4(p), IpAddr::V4(x)) => {
            let m = if n.len == 0 { 0 } else { u32::MAX << (32 - u32::from(n.len)) };
            u32::from(x) & m == u32::from(p)
        }
        (IpAddr::V6(p), IpAddr::V6(x)) => {
            let m = if n.len == 0 { 0 } else { u128::MAX << (128 - u32::from(n.len)) };
            u128::from(x) & m == u128::from(p)
        }
        // iptables and ip6tables are separate: a rule of the other family never matches.
        _ => return false,
    };
    inside != n.not
}

fn iface(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('+') {
        Some(p) => name.starts_with(p),
        None => pattern == name,
    }
}

fn matches(r: &IptRule, p: &Packet<'_>, sets: &HashMap<String, IpSet>) -> bool {
    let within = |list: &Option<Vec<(u16, u16)>>, v: u16| {
        list.as_ref().is_none_or(|l| l.iter().any(|&(a, b)| a <= v && v <= b))
    };
    let family = if p.src.is_ipv4() { 4 } else { 6 };
    r.family.is_none_or(|f| f == family)
        && r.src.as_ref().is_none_or(|n| in_net(n, p.src))
        && r.dst.as_ref().is_none_or(|n| in_net(n, p.dst))
        && r.proto.as_ref().is_none_or(|l| l.iter().any(|&(a, b)| a <= p.proto && p.proto <= b))
        && r.iif.as_ref().is_none_or(|(n, not)| n.iter().any(|n| iface(n, p.iif)) != *not)
        && r.oif.as_ref().is_none_or(|(n, not)| n.iter().any(|n| iface(n, p.oif)) != *not)
        && within(&r.sports, p.sport)
        && within(&r.dports, p.dport)
        && r.src_set.as_ref().is_none_or(|(s, not)| sets[s].contains(p.src) != *not)
        && r.dst_set.as_ref().is_none_or(|(s, not)| sets[s].contains(p.dst) != *not)
        && r.ct.as_ref().is_none_or(|l| p.ct.is_some_and(|c| l.contains(&c)))
        && r.tcp_flags.is_none_or(|f| f.contains(p.tcp_flags))
}

/// netfilter's walk: the first matching verdict, RETURN back to the caller, else the policy.
fn walk(
    rs: &Ruleset,
    chain: &str,
    p: &Packet<'_>,
    sets: &HashMap<String, IpSet>,
    hits: &mut HashMap<String, u64>,
) -> Option<(Target, String)> {
    let c = rs.chains.iter().find(|c| c.name == chain).unwrap();
    for r in &c.rules {
        if !matches(r, p, sets) {
            continue;
        }
        // netfilter counts every rule a packet matches, whatever its target.
        *hits.entry(r.name.clone()).or_default() += 1;
        match &r.target {
            Some(Target::Jump(j)) => {
                if let Some(v) = walk(rs, j, p, sets, hits) {
                    return Some(v);
                }
            }
            Some(Target::Return) => return None,
            Some(t) => return Some((t.clone(), r.name.clone())),
            None => {}
        }
    }
    None
}

#[test]
fn lowered_rule_sets_decide_as_netfilter_does() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut sets = HashMap::new();
    let mut s1 = IpSet::new();
    s1.insert("10.1.0.0".parse().unwrap(), 16);
    s1.insert("2001:db8::5".parse().unwrap(), 128);
    let mut s2 = IpSet::new();
    s2.insert("192.168.1.0".parse().unwrap(), 24);
    sets.insert("s1".to_string(), s1);
    sets.insert("s2".to_string(), s2);
    let mut decided = 0;
    let mut by_rule = 0;
    let mut via_user_chain = 0;
    for _ in 0..1000 {
        let text = ruleset(&mut rng);
        let rs = parse("random", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let fw = Firewall::from_iptables(&rs, "INPUT", &sets).unwrap();
        let policy = rs.chains[0].policy.clone().unwrap();
        for _ in 0..200 {
            let v4 = rng.chance(2);
            let pool: Vec<&str> = ADDRS.iter().copied().filter(|a| a.contains('.') == v4).collect();
            let p = Packet {
                src: rng.pick(&pool).parse().unwrap(),
                dst: rng.pick(&pool).parse().unwrap(),
                sport: *rng.pick(&[22u16, 53, 80, 443, 1500, 40000]),
                dport: *rng.pick(&[22u16, 53, 80, 443, 1500, 40000]),
                proto: *rng.pick(&[6u8, 17, 1, 58]),
                iif: rng.pick::<&str>(PKT_IFACES),
                oif: rng.pick::<&str>(PKT_IFACES),
                ct: *rng.pick(&[
                    None,
                    Some(CtState::New),
                    Some(CtState::Established),
                    Some(CtState::Invalid),
                ]),
                tcp_flags: *rng.pick(&[0u8, 0x02, 0x12, 0x10, 0x04, 0x11, 0x18]),
                app: &[],
                time: 0,
            };
            let mut want_hits = HashMap::new();
            let want = walk(&rs, "INPUT", &p, &sets, &mut want_hits).unwrap_or_else(|| {
                *want_hits.entry("INPUT:policy".to_string()).or_default() += 1;
                (policy.clone(), "INPUT:policy".into())
            });
            let mut hits = vec![0u64; fw.entries().len()];
            let got = fw.evaluate_counting(&p, &mut hits);
            let mut got_hits: HashMap<String, u64> = HashMap::new();
            for (e, n) in fw.entries().iter().zip(&hits) {
                if *n > 0 {
                    *got_hits.entry(e.name.clone()).or_default() += n;
                }
            }
            assert_eq!(got_hits, want_hits, "counters: {p:?}\n{text}");
            // The path a cache replays adds up to the same counters, with the same decision.
            let mut path = Vec::new();
            let again = fw.evaluate_path(&p, &mut path);
            let mut replayed = vec![0u64; fw.entries().len()];
            for &(e, n) in &path {
                replayed[e as usize] += n;
            }
            assert_eq!((replayed, again.entry), (hits.clone(), got.entry), "path: {p:?}\n{text}");
            let name = &fw.entries()[got.entry].name;
            assert_eq!((got.verdict, name.clone()), want, "{p:?}\n{text}");
            decided += 1;
            by_rule += usize::from(!name.ends_with(":policy"));
            via_user_chain += usize::from(name.starts_with('U'));
        }
    }
    assert_eq!(decided, 200_000);
    // The random sets exercise the rules, not only the policies.
    assert!(by_rule > 20_000 && via_user_chain > 1_500, "{by_rule} {via_user_chain}");
}
