//! The shared oracle's rule sets: the file `nft -f` loaded and `nft list ruleset`'s listing
//! of it read to the same rules, the broken file refused where nft refused it, and the
//! lowered forward chain deciding packets as the rule set says.

use std::collections::HashMap;

use rampart_classify::firewall::{Firewall, Packet};
use rampart_classify::iptables::{CtState, IptRule, RejectWith, Target};
use rampart_classify::nft::{Hook, NftRuleset, parse};

fn read(name: &str) -> Option<(String, String)> {
    let dir = rampart_testkit::shared(name, "conntrack")?;
    let f = |n: &str| std::fs::read_to_string(dir.join(n)).unwrap();
    Some((f("ruleset.nft"), f("nft-after.txt")))
}

/// The rules without what a listing changes: lines.
fn rules(rs: &NftRuleset) -> Vec<(String, Vec<IptRule>)> {
    rs.rules
        .chains
        .iter()
        .map(|c| {
            let rules = c.rules.iter().cloned().map(|r| IptRule { line: 0, ..r }).collect();
            (c.name.clone(), rules)
        })
        .collect()
}

#[test]
fn the_loaded_file_and_its_listing_read_alike() {
    let Some((file, listing)) = read("the_loaded_file_and_its_listing_read_alike") else { return };
    let a = parse("ruleset.nft", &file).unwrap();
    let b = parse("nft-after.txt", &listing).unwrap();
    assert_eq!(rules(&a), rules(&b));
    assert_eq!(a.base, b.base);
    assert_eq!(a.sets, b.sets);
    let fwd = &a.rules.chains[1];
    let names: Vec<&str> = fwd.rules.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "forward:1 invalid",
            "forward:2 est-rel",
            "forward:3 new-tcp",
            "forward:4 new-udp",
            "forward:5 new-ping",
            "forward:6 new-ping6",
            "forward:7 reject-9999",
            "forward:8 policy-drop"
        ]
    );
    assert_eq!(fwd.rules[6].reject, Some(RejectWith::TcpReset));
    assert_eq!(a.hook(Hook::Prerouting)[0].priority, -150);
    assert_eq!(a.default_chain().unwrap().chain, "forward");
    // Rule set B: one rule more, before est-rel.
    let dir = rampart_testkit::data_root().join("conntrack");
    let b = parse("ruleset-B.nft", &std::fs::read_to_string(dir.join("ruleset-B.nft")).unwrap())
        .unwrap();
    assert_eq!(b.rules.chains[1].rules[1].name, "forward:2 reload-B");
    assert_eq!(b.rules.chains[1].rules.len(), 9);
}

#[test]
fn the_broken_file_is_refused_where_nft_refused_it() {
    let Some(dir) =
        rampart_testkit::shared("the_broken_file_is_refused_where_nft_refused_it", "conntrack")
    else {
        return;
    };
    let text = std::fs::read_to_string(dir.join("ruleset-broken.nft")).unwrap();
    let e = parse("ruleset-broken.nft", &text).unwrap_err();
    // nft: "ruleset-broken.nft:7:2-5: Error: syntax error, unexpected string".
    assert_eq!((e.line, e.column), (7, 2));
    assert!(e.to_string().starts_with("ruleset-broken.nft:7:2: expected"), "{e}");
}

fn packet<'a>(
    src: &str,
    dst: &str,
    proto: u8,
    ports: (u16, u16),
    ifs: (&'a str, &'a str),
    ct: CtState,
) -> Packet<'a> {
    Packet {
        src: src.parse().unwrap(),
        dst: dst.parse().unwrap(),
        sport: ports.0,
        dport: ports.1,
        proto,
        iif: ifs.0,
        oif: ifs.1,
        ct: Some(ct),
        tcp_flags: if proto == 6 { 0x02 } else { 0 },
        app: &[],
        time: 0,
    }
}

#[test]
fn the_forward_chain_decides_as_the_rule_set_says() {
    let Some((file, _)) = read("the_forward_chain_decides_as_the_rule_set_says") else { return };
    let rs = parse("ruleset.nft", &file).unwrap();
    let fw = Firewall::from_iptables(&rs.rules, "forward", &rs.sets).unwrap();
    let decide = |p: &Packet<'_>| {
        let d = fw.evaluate(p);
        (d.verdict, fw.entries()[d.entry].name.clone())
    };
    let out = ("r0", "r1");
    let back = ("r1", "r0");
    use CtState::*;
    let cases = [
        (
            packet("10.66.1.2", "10.66.2.2", 6, (40000, 5201), out, New),
            Target::Accept,
            "forward:3 new-tcp",
        ),
        (
            packet("10.66.1.2", "10.66.2.2", 6, (40000, 2222), out, New),
            Target::Drop,
            "forward:policy",
        ),
        (
            packet("10.66.2.2", "10.66.1.2", 6, (40000, 22), back, New),
            Target::Drop,
            "forward:policy",
        ),
        (
            packet("10.66.2.2", "10.66.1.2", 6, (5201, 40000), back, Established),
            Target::Accept,
            "forward:2 est-rel",
        ),
        (
            packet("fd66:1::2", "fd66:2::2", 17, (4000, 5300), out, New),
            Target::Accept,
            "forward:4 new-udp",
        ),
        (
            packet("10.66.1.2", "10.66.2.2", 1, (8, 0), out, New),
            Target::Accept,
            "forward:5 new-ping",
        ),
        // An ICMPv6 echo request is not an ICMP one, nor the other way round.
        (
            packet("fd66:1::2", "fd66:2::2", 58, (128, 0), out, New),
            Target::Accept,
            "forward:6 new-ping6",
        ),
        (packet("fd66:1::2", "fd66:2::2", 58, (8, 0), out, New), Target::Drop, "forward:policy"),
        (packet("10.66.1.2", "10.66.2.2", 1, (128, 0), out, New), Target::Drop, "forward:policy"),
        (
            packet("10.66.1.2", "10.66.2.2", 6, (40000, 9999), out, New),
            Target::Reject,
            "forward:7 reject-9999",
        ),
        (
            packet("10.66.1.2", "10.66.2.2", 6, (40000, 5201), out, Invalid),
            Target::Drop,
            "forward:1 invalid",
        ),
    ];
    for (p, verdict, rule) in cases {
        assert_eq!(decide(&p), (verdict, rule.to_string()), "{p:?}");
    }
    assert_eq!(fw.entries()[6].reject, Some(RejectWith::TcpReset));
    // Every base chain lowers on its own.
    for b in &rs.base {
        Firewall::from_iptables(&rs.rules, &b.chain, &HashMap::new()).unwrap();
    }
}
