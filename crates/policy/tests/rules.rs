//! Rule-set diagrams against the classifier that runs the rules: which rule decides random
//! packets, shadowed rules checked point by point and by an independent diagram computation,
//! and every witness replayed.

mod common;

use std::collections::HashMap;
use std::net::IpAddr;

use common::{data, read};
use proptest::prelude::*;
use rampart_classify::classbench::parse_rules;
use rampart_classify::firewall::{Firewall, Packet as FwPacket};
use rampart_classify::ipset::IpSet;
use rampart_classify::linear::first_match;
use rampart_classify::{Header, Rule};
use rampart_policy::dd::FALSE;
use rampart_policy::questions::{self, Comparison, Packet};
use rampart_policy::rules::{self, Action, Layout};

fn overlaps(a: &Rule, b: &Rule) -> bool {
    (0..5).all(|d| a.lo[d] <= b.hi[d] && b.lo[d] <= a.hi[d])
}

/// Shadowed rules are exactly those whose box minus every earlier box is empty (computed
/// here with diagram differences, not the point-by-point search); each reported cover
/// covers; each reachable rule has a witness the linear scan gives to it.
fn check_classbench(set: &str) {
    let Some(dir) = data() else { return };
    let rs = parse_rules(set, &read(&dir, set)).unwrap();
    let mut m = rules::manager(Layout::ClassBench);
    let model = rules::classbench(&mut m, &rs);
    let found = questions::shadowed(&mut m, &model);
    let shadowed: HashMap<usize, &questions::Shadowed> =
        found.iter().map(|s| (s.entry, s)).collect();
    let free = questions::free_values(Layout::ClassBench);
    for i in 0..rs.len() {
        let mut left = model.matches[i];
        for j in (0..i).filter(|&j| overlaps(&rs[j], &rs[i])) {
            left = m.diff(left, model.matches[j]);
        }
        match shadowed.get(&i) {
            Some(s) => {
                assert_eq!(left, FALSE, "{set}: rule {i} reported shadowed but reachable");
                let mut cover = FALSE;
                for &j in &s.by {
                    assert!(j < i);
                    cover = m.or(cover, model.matches[j]);
                }
                assert_eq!(m.diff(model.matches[i], cover), FALSE, "{set}: cover of {i}");
            }
            None => {
                assert_ne!(left, FALSE, "{set}: rule {i} missed as shadowed");
                let w = m.witness(left, &|v| v == 1, &free).unwrap();
                let h = Header([w[0], w[1], w[2], w[3], w[4]]);
                assert_eq!(first_match(&rs, &h), Some(i), "{set}: witness for rule {i}");
            }
        }
    }
}

#[test]
fn classbench_acl1_1k() {
    check_classbench("acl1_1k");
}

#[test]
fn classbench_fw1_1k() {
    check_classbench("fw1_1k");
}

#[test]
fn classbench_ipc1_1k() {
    check_classbench("ipc1_1k");
}

/// Two ClassBench lists that differ get a witness the linear scans disagree on.
#[test]
fn classbench_compare_witness() {
    let Some(dir) = data() else { return };
    let rs = parse_rules("fw1_1k", &read(&dir, "fw1_1k")).unwrap();
    // Without its catch-all last rules the list accepts less; drop some rule in the middle
    // too.
    let a: Vec<Rule> = rs.iter().take(rs.len() - 3).copied().collect();
    let mut b = a.clone();
    b.remove(b.len() / 2);
    let mut m = rules::manager(Layout::ClassBench);
    let mut ma = rules::classbench(&mut m, &a);
    let mut mb = rules::classbench(&mut m, &b);
    match questions::compare(&mut m, &mut ma, &mut mb) {
        Comparison::Equivalent => {
            // Then every packet must get the same action: check a sample.
            for r in &a {
                let h = Header(r.lo);
                assert_eq!(first_match(&a, &h).is_some(), first_match(&b, &h).is_some());
            }
        }
        Comparison::Differ { witness, a: oa, b: ob, count } => {
            let h = Header([witness[0], witness[1], witness[2], witness[3], witness[4]]);
            let (xa, xb) = (first_match(&a, &h), first_match(&b, &h));
            assert_ne!(xa.is_some(), xb.is_some(), "the witness differs");
            assert_eq!(oa.action == Action::Accept, xa.is_some());
            assert_eq!(ob.action == Action::Accept, xb.is_some());
            assert!(count >= 1.0);
        }
    }
    let mut mc = rules::classbench(&mut m, &a);
    assert!(matches!(questions::compare(&mut m, &mut ma, &mut mc), Comparison::Equivalent));
}

/// A random firewall rule set in iptables-save form.
fn iptables_text(seed: &[u8]) -> String {
    let addrs = ["10.0.0.0/8", "10.1.0.0/16", "10.1.2.3", "192.168.0.0/24", "0.0.0.0/0"];
    let mut t = String::from(
        "*filter\n:INPUT DROP [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:USER - [0:0]\n",
    );
    for (k, b) in seed.iter().enumerate() {
        let chain = if k % 5 == 4 { "USER" } else { "INPUT" };
        let mut r = format!("-A {chain}");
        if b & 1 != 0 {
            r += &format!(" -s {}", addrs[(*b as usize >> 1) % addrs.len()]);
        }
        if b & 2 != 0 {
            r += &format!(" -d {}", addrs[(*b as usize >> 2) % addrs.len()]);
        }
        match (b >> 3) % 4 {
            0 => r += &format!(" -p tcp --dport {}", 20 + (b % 8)),
            1 => r += &format!(" -p udp --sport {}:{}", 50, 50 + b % 16),
            2 => r += " -p tcp -m multiport --dports 80,443",
            _ => {}
        }
        if b & 0x40 != 0 {
            r += if b & 4 != 0 { " -i eth+" } else { " ! -i eth1" };
        }
        if b % 7 == 0 {
            r += " -m conntrack --ctstate ESTABLISHED,RELATED";
        }
        if b % 11 == 0 {
            r += " -m set --match-set blocked src";
        }
        r += match (b >> 5) % 5 {
            0 | 1 => " -j ACCEPT",
            2 => " -j DROP",
            3 if chain == "INPUT" => " -j USER",
            3 => " -j RETURN",
            _ => " -j REJECT",
        };
        t += &r;
        t.push('\n');
    }
    t += "COMMIT\n";
    t
}

fn sets() -> HashMap<String, IpSet> {
    let mut s = IpSet::new();
    s.insert("10.1.0.0".parse().unwrap(), 16);
    s.insert("192.168.0.7".parse().unwrap(), 32);
    HashMap::from([("blocked".to_string(), s)])
}

fn random_packet(x: u64) -> Packet {
    let addrs = ["10.1.2.3", "10.1.9.9", "10.200.0.1", "192.168.0.7", "8.8.8.8"];
    let pick = |k: u64| -> IpAddr { addrs[(k % 5) as usize].parse().unwrap() };
    Packet {
        proto: [6, 17, 1][(x >> 3) as usize % 3],
        src: pick(x),
        sport: [50, 55, 70, 40000][(x >> 5) as usize % 4],
        dst: pick(x >> 8),
        dport: [20, 22, 27, 80, 443, 8080][(x >> 11) as usize % 6],
        iif: ["", "eth0", "eth1", "wlan0"][(x >> 14) as usize % 4].to_string().into(),
        oif: None,
        ct: [None, Some(rampart_classify::iptables::CtState::Established)][(x >> 16) as usize % 2],
        flags: 0,
        app: None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    /// The diagram's deciding rule is the classifier's, and compare/search witnesses replay.
    #[test]
    fn firewall_diagrams_agree(seed in prop::collection::vec(any::<u8>(), 1..24), seed2 in prop::collection::vec(any::<u8>(), 1..24), xs in prop::collection::vec(any::<u64>(), 40)) {
        let ts = [iptables_text(&seed), iptables_text(&seed2)];
        let rsets: Vec<_> = ts.iter().map(|t| rampart_classify::iptables::parse("t", t).unwrap()).collect();
        let mut names = Vec::new();
        for rs in &rsets {
            names.extend(Firewall::interface_names(rs, "INPUT").unwrap());
        }
        let fws: Vec<Firewall> = rsets.iter().map(|rs| Firewall::from_iptables_with_names(rs, "INPUT", &sets(), &names).unwrap()).collect();
        let mut m = rules::manager(Layout::Firewall);
        let mut apps = Vec::new();
        let mut models: Vec<_> = fws.iter().map(|fw| rules::firewall(&mut m, fw, &mut apps)).collect();
        let evaluate = |fw: &Firewall, p: &Packet| {
            fw.evaluate(&FwPacket {
                src: p.src, dst: p.dst, sport: p.sport, dport: p.dport, proto: p.proto,
                iif: p.iif.as_deref().unwrap_or(""), oif: "", ct: p.ct, tcp_flags: p.flags, app: &[], time: 0,
            }).entry
        };
        for &x in &xs {
            let p = random_packet(x);
            for (fw, model) in fws.iter().zip(&models) {
                let v = p.fields(model).unwrap();
                prop_assert_eq!(questions::test(&m, model, &v).entry, evaluate(fw, &p), "{}", p);
            }
        }
        let (first, second) = models.split_at_mut(1);
        match questions::compare(&mut m, &mut first[0], &mut second[0]) {
            Comparison::Equivalent => {
                for &x in &xs {
                    let p = random_packet(x);
                    let (ea, eb) = (evaluate(&fws[0], &p), evaluate(&fws[1], &p));
                    let act = |fw: &Firewall, e: usize| format!("{:?}", fw.entries()[e].action);
                    prop_assert_eq!(act(&fws[0], ea), act(&fws[1], eb));
                }
            }
            Comparison::Differ { witness, a, b, .. } => {
                let p = Packet::from_fields(&first[0], &witness);
                prop_assert_eq!(evaluate(&fws[0], &p), a.entry, "{}", p);
                prop_assert_eq!(evaluate(&fws[1], &p), b.entry, "{}", p);
                prop_assert_ne!(a.action, b.action);
            }
        }
        for act in [Action::Accept, Action::Drop, Action::Reject] {
            let c = questions::constraint(&mut m, &first[0], "tcp dport 20-443").unwrap();
            if let Some(w) = questions::search(&mut m, &mut first[0], c, act) {
                let p = Packet::from_fields(&first[0], &w);
                prop_assert_eq!(p.proto, 6);
                prop_assert!((20..=443).contains(&p.dport));
                let e = evaluate(&fws[0], &p);
                prop_assert_eq!(e, questions::test(&m, &first[0], &w).entry);
                prop_assert_eq!(questions::test(&m, &first[0], &w).action, act);
            }
        }
        // Shadowed rules: no random packet is decided by one.
        let sh = questions::shadowed(&mut m, &first[0]);
        for &x in &xs {
            let p = random_packet(x);
            let e = evaluate(&fws[0], &p);
            prop_assert!(!sh.iter().any(|s| s.entry == e), "{} decided by a shadowed rule", p);
        }
    }
}

#[test]
fn packets_round_trip() {
    for text in [
        "tcp 10.0.0.1:1234 -> 10.0.0.2:443",
        "udp [2001:db8::1]:53 -> [2001:db8::2]:5353 iif eth0 ct established flags SA",
        "17 192.168.1.1:1 -> 192.168.1.2:2 app dns",
    ] {
        let p = Packet::parse(text).unwrap();
        let again = Packet::parse(&p.to_string()).unwrap();
        assert_eq!(p, again, "{text}");
    }
    for bad in [
        "",
        "tcp",
        "tcp 10.0.0.1:1 10.0.0.2:2",
        "tcp 10.0.0.1:1 -> [::1]:2",
        "tcp 1.2.3.4:99999 -> 1.2.3.4:1",
        "tcp 1.1.1.1:1 -> 2.2.2.2:2 ct nope",
    ] {
        let e = Packet::parse(bad).unwrap_err();
        assert!(!e.expected.is_empty(), "{bad}");
    }
}
