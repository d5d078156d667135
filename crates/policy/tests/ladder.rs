//! Rule sets whose jump paths grow exponentially: a ladder of chains where each chain jumps to
//! the next from two rules has 2^(n-1) paths to its last chain. Reading, lowering, classifying
//! and verifying must cost what the file holds, not what the paths number: checked with a
//! time and a memory budget (this test binary counts its allocations), and against a direct
//! netfilter walk where that walk is still small enough to run.

use std::alloc::{GlobalAlloc, Layout as AllocLayout, System};
use std::cell::Cell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use rampart_classify::firewall::{Firewall, Packet};
use rampart_classify::iptables::{Ruleset, Target};
use rampart_policy::questions::{self, Reason};
use rampart_policy::rules;

/// The system allocator, counting the bytes each thread holds and their peak (the tests of
/// this binary run on threads of their own).
struct Counting;

thread_local! {
    static HELD: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn held() -> isize {
    HELD.with(Cell::get)
}

// SAFETY: every call is forwarded to the system allocator unchanged; the counters are
// thread-local cells with constant initialisers (touching them never allocates) and never
// affect what is allocated.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: AllocLayout) -> *mut u8 {
        let size = layout.size() as isize;
        let _ = HELD.try_with(|h| {
            h.set(h.get() + size);
            let _ = PEAK.try_with(|p| p.set(p.get().max(h.get())));
        });
        // SAFETY: the caller's layout is passed on as given.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: AllocLayout) {
        let _ = HELD.try_with(|h| h.set(h.get() - layout.size() as isize));
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The issue's ladder in `iptables-save` form: chain i jumps to chain i+1 from a TCP rule and
/// from a UDP rule, both on port 1000+i; the last chain accepts 10.0.0.0/8. With `both`, the
/// second rule matches every protocol, so a TCP packet enters each chain twice as often as
/// the one before (netfilter's own walk doubles too).
fn ladder_iptables(n: usize, both: bool) -> String {
    let mut l = vec!["*filter".to_string(), ":INPUT DROP [0:0]".to_string()];
    l.extend((0..n).map(|i| format!(":C{i} - [0:0]")));
    l.push("-A INPUT -j C0".into());
    for i in 0..n - 1 {
        let next = i + 1;
        if both {
            l.push(format!("-A C{i} -p tcp -j C{next}"));
            l.push(format!("-A C{i} -j C{next}"));
        } else {
            l.push(format!("-A C{i} -p tcp -m tcp --dport {} -j C{next}", 1000 + i));
            l.push(format!("-A C{i} -p udp -m udp --dport {} -j C{next}", 1000 + i));
        }
    }
    l.push(format!("-A C{} -s 10.0.0.0/8 -j ACCEPT", n - 1));
    l.push("COMMIT".into());
    l.join("\n") + "\n"
}

/// The same ladder in rampart's syntax.
fn ladder_rampart(n: usize) -> String {
    let mut t = String::from("table input {\n  jump c0\n  default drop\n}\n");
    for i in 0..n - 1 {
        t += &format!(
            "chain c{i} {{\n  tcp dport {p} jump c{}\n  udp dport {p} jump c{}\n}}\n",
            i + 1,
            i + 1,
            p = 1000 + i
        );
    }
    t += &format!("chain c{} {{\n  ip saddr 10.0.0.0/8 accept\n}}\n", n - 1);
    t
}

fn packet(proto: u8, dport: u16) -> Packet<'static> {
    Packet {
        src: "10.0.0.1".parse().unwrap(),
        dst: "10.0.0.2".parse().unwrap(),
        sport: 1,
        dport,
        proto,
        iif: "",
        oif: "",
        ct: None,
        tcp_flags: 0,
        app: &[],
        time: 0,
    }
}

/// Lowers, classifies and verifies; returns the time taken and the peak bytes held above
/// what was held before.
fn exercise(rs: &Ruleset, chain: &str, accept_last: &str) -> (Duration, usize) {
    let base = held();
    PEAK.with(|p| p.set(base));
    let t0 = Instant::now();
    let fw = Firewall::from_iptables(rs, chain, &HashMap::new()).unwrap();
    let rules_in_file: usize = rs.chains.iter().map(|c| c.rules.len()).sum();
    assert_eq!(fw.entries().len(), rules_in_file + 1, "one entry per rule, and the policy");
    // Classification: a TCP packet to port 1000 climbs the ladder on TCP at the first rung,
    // then finds no rule on the next (ports differ) and returns: the policy drops it.
    let d = fw.evaluate(&packet(6, 1000));
    assert_eq!(d.verdict, Target::Drop);
    // Verification: the same answer from the diagrams, and the rules that can never decide
    // anything named once each.
    let mut m = rules::firewall_manager(0, 0);
    let model = rules::firewall(&mut m, &fw, &mut Vec::new());
    let p = questions::Packet::parse("tcp 10.0.0.1:1 -> 10.0.0.2:1000").unwrap();
    let o = questions::test(&m, &model, &p.fields(&model).unwrap());
    assert_eq!(o.entry, d.entry);
    let found = questions::shadowed(&mut m, &model);
    assert!(!m.exceeded());
    let elapsed = t0.elapsed();
    // The last chain's accept holds for many packets, but none gets there: a packet would
    // need a different port at every rung. It is named once, as unreached, with the jumps
    // to its chain; no other rule is reported.
    let said: Vec<(&str, Reason, usize)> = found
        .iter()
        .map(|s| (model.entries[s.entry].name.as_str(), s.reason, s.by.len()))
        .collect();
    assert_eq!(said, vec![(accept_last, Reason::Unreached, 2)]);
    (elapsed, (PEAK.with(Cell::get) - base).max(0) as usize)
}

/// Time and memory budgets: generous for a debug build on a busy machine, and still far below
/// what a cost in proportion to 2^59 paths would take.
fn budgets() -> (Duration, usize) {
    let time = if cfg!(debug_assertions) { 20 } else { 1 };
    (Duration::from_secs(time), 256 << 20)
}

#[test]
fn rule_set_ladder_stays_linear() {
    let (time, memory) = budgets();
    for n in [18, 60] {
        let text = ladder_iptables(n, false);
        let rs = rampart_classify::iptables::parse("ladder.ipt", &text).unwrap();
        let (t, bytes) = exercise(&rs, "INPUT", &format!("C{}:1", n - 1));
        assert!(t < time, "{n} chains: {t:?}");
        assert!(bytes < memory, "{n} chains: {bytes} bytes");
        let text = ladder_rampart(n);
        let (rs, _) = rampart_classify::syntax::parse("ladder.rules", &text).unwrap();
        let (t, bytes) = exercise(&rs, "input", &format!("c{}:1", n - 1));
        assert!(t < time, "{n} chains, rampart syntax: {t:?}");
        assert!(bytes < memory, "{n} chains, rampart syntax: {bytes} bytes");
    }
}

/// netfilter's walk, with its counters: exponential on the doubling ladder, so only for
/// small ones.
fn walk(rs: &Ruleset, chain: &str, p: &Packet<'_>, hits: &mut HashMap<String, u64>) -> bool {
    let c = rs.chains.iter().find(|c| c.name == chain).unwrap();
    for r in &c.rules {
        let proto_ok =
            r.proto.as_ref().is_none_or(|l| l.iter().any(|&(a, b)| a <= p.proto && p.proto <= b));
        let src_ok = r.src.is_none_or(|n| match (n.addr, p.src) {
            (std::net::IpAddr::V4(a), std::net::IpAddr::V4(x)) => {
                let m = u32::MAX.checked_shl(32 - u32::from(n.len)).unwrap_or(0);
                (u32::from(x) & m == u32::from(a)) != n.not
            }
            _ => false,
        });
        let port_ok =
            r.dports.as_ref().is_none_or(|l| l.iter().any(|&(a, b)| a <= p.dport && p.dport <= b));
        if !(proto_ok && port_ok && src_ok) {
            continue;
        }
        *hits.entry(r.name.clone()).or_default() += 1;
        match &r.target {
            Some(Target::Jump(j)) if walk(rs, j, p, hits) => return true,
            Some(Target::Accept) => return true,
            _ => {}
        }
    }
    false
}

#[test]
fn rule_set_ladder_counters_match_netfilter_when_every_rung_doubles() {
    // Small: the walk here is as exponential as netfilter's.
    let text = ladder_iptables(12, true);
    let rs = rampart_classify::iptables::parse("ladder.ipt", &text).unwrap();
    let fw = Firewall::from_iptables(&rs, "INPUT", &HashMap::new()).unwrap();
    // A UDP packet: each rung's second rule jumps, the first does not match; the last chain
    // accepts only 10/8 sources, and this one is not.
    let mut p = packet(17, 1000);
    p.src = "192.0.2.1".parse().unwrap();
    let mut want = HashMap::new();
    walk(&rs, "INPUT", &p, &mut want);
    let mut hits = vec![0u64; fw.entries().len()];
    let d = fw.evaluate_counting(&p, &mut hits);
    assert_eq!(d.verdict, Target::Drop);
    let got: HashMap<String, u64> = fw
        .entries()
        .iter()
        .zip(&hits)
        .filter(|(e, n)| **n > 0 && !e.name.ends_with(":policy"))
        .map(|(e, n)| (e.name.clone(), *n))
        .collect();
    assert_eq!(got, want);
    // TCP doubles at every rung: C11 is entered 2^11 times, each time through C10:1 or C10:2.
    let mut want = HashMap::new();
    let mut p = packet(6, 1000);
    p.src = "192.0.2.1".parse().unwrap();
    walk(&rs, "INPUT", &p, &mut want);
    let mut hits = vec![0u64; fw.entries().len()];
    fw.evaluate_counting(&p, &mut hits);
    let count = |fw: &Firewall, hits: &[u64], name: &str| {
        hits[fw.entries().iter().position(|e| e.name == name).unwrap()]
    };
    assert_eq!(count(&fw, &hits, "C10:2"), want["C10:2"]);
    assert_eq!(count(&fw, &hits, "C10:2"), 1 << 10);
    // At 60 chains netfilter would walk 2^59 times; rampart still answers at once, and its
    // counters say how often netfilter's would have counted.
    let text = ladder_iptables(60, true);
    let rs = rampart_classify::iptables::parse("ladder.ipt", &text).unwrap();
    let fw = Firewall::from_iptables(&rs, "INPUT", &HashMap::new()).unwrap();
    let t0 = Instant::now();
    let mut hits = vec![0u64; fw.entries().len()];
    let d = fw.evaluate_counting(&p, &mut hits);
    assert_eq!(d.verdict, Target::Drop);
    assert!(t0.elapsed() < budgets().0);
    assert_eq!(count(&fw, &hits, "C58:2"), 1 << 58);
    let mut p = packet(6, 1000);
    p.src = "10.0.0.1".parse().unwrap();
    assert_eq!(fw.evaluate(&p).verdict, Target::Accept);
    let mut m = rules::firewall_manager(0, 0);
    let model = rules::firewall(&mut m, &fw, &mut Vec::new());
    let found = questions::shadowed(&mut m, &model);
    assert!(found.iter().all(|s| s.reason != Reason::Unmatchable), "{found:?}");
}

#[test]
fn rules_that_no_packet_reaching_their_chain_meets_are_named_once() {
    // C1 is entered only by TCP; its UDP rule can hold on its own, but never there.
    let text = "*filter\n:INPUT DROP [0:0]\n:C0 - [0:0]\n:C1 - [0:0]\n-A INPUT -j C0\n-A C0 -p tcp -j C1\n-A C0 -p tcp --dport 80 -j C1\n-A C1 -p udp -j ACCEPT\n-A C1 -p tcp --dport 22 -j ACCEPT\n-A C1 -p tcp --dport 22 -j DROP\nCOMMIT\n";
    let rs = rampart_classify::iptables::parse("r", text).unwrap();
    let fw = Firewall::from_iptables(&rs, "INPUT", &HashMap::new()).unwrap();
    let mut m = rules::firewall_manager(0, 0);
    let model = rules::firewall(&mut m, &fw, &mut Vec::new());
    let found = questions::shadowed(&mut m, &model);
    let said: Vec<(String, Reason, Vec<String>)> = found
        .iter()
        .map(|s| {
            let by = s.by.iter().map(|&j| model.entries[j].name.clone()).collect();
            (model.entries[s.entry].name.clone(), s.reason, by)
        })
        .collect();
    assert_eq!(
        said,
        vec![
            ("C1:1".into(), Reason::Unreached, vec!["C0:1".into(), "C0:2".into()]),
            ("C1:3".into(), Reason::Covered, vec!["C1:2".into()]),
        ]
    );
}
