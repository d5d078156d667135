//! The stateful firewall over captures, against Linux: the shared conntrack oracle's two
//! captures (both ports of a router running `ruleset.nft`, with a reload to `ruleset-B.nft`
//! and back) replayed through the firewall driver with the rule set files themselves, read by
//! the nftables reader. Every forwarded and dropped ingress packet, every crafted packet's
//! reason, every flow's final state and the `conntrack -S` deltas must be the kernel's.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use rampart_capture::{Capture, Frame, Timestamp};
use rampart_engine::driver::{Input, Limits};
use rampart_engine::replay::{FirewallSink, Reload, replay};
use rampart_engine::stateful::{Decided, Routes, RuleSet, Stateful, StatefulConfig};
use rampart_engine::{FlowRecord, FlowsConfig, Pipeline, Verdict};
use rampart_flow::{KeyKind, Side, TableConfig};
use rampart_testkit::router::{
    R0_MAC, R1_MAC, invalid_reasons, micros, tag, timeline_ns, verdicts,
};
use rampart_wire::{Family, LinkType, PacketMeta};

fn rules(dir: &Path, file: &str) -> Arc<RuleSet> {
    let text = std::fs::read_to_string(dir.join(file)).unwrap();
    let nft = rampart_classify::nft::parse(file, &text).unwrap();
    Arc::new(RuleSet::from_nft(file, &nft).unwrap())
}

fn addr(m: &PacketMeta, a: &[u8; 16]) -> String {
    match m.family {
        Family::V4 => std::net::Ipv4Addr::new(a[0], a[1], a[2], a[3]).to_string(),
        _ => std::net::Ipv6Addr::from(*a).to_string(),
    }
}

/// What the test keeps of each decided packet.
struct Seen {
    /// (time, from the client, src, dst), as `packets.tsv` identifies a packet.
    id: (String, bool, String, String),
    tag: u32,
    decided: Decided,
    rule: Option<Arc<str>>,
    reply: Option<Vec<u8>>,
}

#[derive(Default)]
struct Collect {
    packets: Vec<Seen>,
    records: Vec<FlowRecord>,
    reloads: Vec<(u64, String, bool)>,
}

impl FirewallSink for Collect {
    fn packet(
        &mut self,
        frame: &Frame<'_>,
        decided: &Decided,
        rules: &RuleSet,
        reply: Option<&[u8]>,
    ) -> io::Result<()> {
        let m = PacketMeta::parse(frame.link, frame.data);
        self.packets.push(Seen {
            id: (
                micros(frame.ts.as_nanos()),
                frame.interface == 0,
                addr(&m, &m.src),
                addr(&m, &m.dst),
            ),
            tag: tag(frame.data, usize::from(m.l3_offset)),
            decided: *decided,
            rule: decided.rule.map(|r| Arc::clone(rules.rule_name(r))),
            reply: reply.map(<[u8]>::to_vec),
        });
        Ok(())
    }

    fn record(&mut self, r: &FlowRecord) -> io::Result<()> {
        self.records.push(r.clone());
        Ok(())
    }

    fn reload(&mut self, at: Timestamp, source: &str, result: Result<(), &str>) -> io::Result<()> {
        self.reloads.push((at.as_nanos(), source.to_string(), result.is_ok()));
        Ok(())
    }
}

/// A record's original tuple, as `flows.tsv` writes it.
fn tuple(r: &FlowRecord) -> String {
    let k = &r.flow.key;
    let (src, dst, sport, dport) = match r.flow.initiator {
        Side::A => (k.addr_a(), k.addr_b(), k.port_a(), k.port_b()),
        Side::B => (k.addr_b(), k.addr_a(), k.port_b(), k.port_a()),
    };
    match k.kind() {
        KeyKind::Echo => {
            let t = if src.is_ipv4() { 8 } else { 128 };
            format!("src={src} dst={dst} type={t} code=0 id={sport}")
        }
        _ => format!("src={src} dst={dst} sport={sport} dport={dport}"),
    }
}

/// The router's two ports, each capture skipping the frames its port sent.
fn ports(dir: &Path) -> Vec<Input> {
    [("client-side.pcap", R0_MAC), ("server-side.pcap", R1_MAC)]
        .map(|(f, mac)| Input { capture: Capture::open(&dir.join(f)).unwrap(), own_mac: Some(mac) })
        .into()
}

fn pipeline(rules: Arc<RuleSet>) -> Pipeline {
    let local: Vec<IpAddr> = ["10.66.1.1", "10.66.2.1", "fd66:1::1", "fd66:2::1"]
        .iter()
        .map(|a| a.parse().unwrap())
        .collect();
    let routes = Routes { names: vec!["r0".into(), "r1".into()], local, ..Routes::default() };
    let cfg = StatefulConfig { routes: Arc::new(routes), ..StatefulConfig::default() };
    let table = TableConfig { max_flows: 1 << 16, ..TableConfig::default() };
    Pipeline::new(&FlowsConfig { table, rtt: None, dpi: None, ..FlowsConfig::default() })
        .with_stateful(Stateful::new(cfg, rules))
}

#[test]
fn linux_router_oracle_through_the_nft_rule_sets() {
    let Some(dir) =
        rampart_testkit::shared("linux_router_oracle_through_the_nft_rule_sets", "conntrack")
    else {
        return;
    };
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let (a, b) = (rules(&dir, "ruleset.nft"), rules(&dir, "ruleset-B.nft"));
    let timeline = read("timeline.tsv");
    let when = |event: &str| timeline_ns(&timeline, event);
    let reloads = vec![
        Reload {
            at: Timestamp::from_nanos(when("load ruleset B")),
            source: "ruleset-B.nft".into(),
            rules: Ok(b),
        },
        Reload {
            at: Timestamp::from_nanos(when("load ruleset A")),
            source: "ruleset.nft".into(),
            rules: Ok(a.clone()),
        },
    ];
    let mut inputs = ports(&dir);
    let mut sink = Collect::default();
    let stop = AtomicBool::new(false);
    let (outcome, main) =
        replay(&mut inputs, pipeline(a), None, reloads, &Limits::none(64), &stop, &mut sink)
            .unwrap();
    assert!(outcome.error.is_none());
    assert_eq!(sink.reloads.len(), 2);

    // Verdicts, by (time, ingress side, src, dst).
    let mut truth = verdicts(&read("packets.tsv"));
    let (mut forwarded, mut dropped, mut mismatches) = (0, 0, Vec::new());
    let mut crafted: HashMap<u32, &Seen> = HashMap::new();
    for p in &sink.packets {
        if (0xc0d1..=0xc0de).contains(&p.tag) {
            crafted.insert(p.tag, p);
        }
        let Some(want) = truth.get_mut(&p.id).and_then(VecDeque::pop_front) else { continue };
        if want != "forwarded" && want != "dropped" {
            continue;
        }
        let got = if p.decided.verdict == Verdict::Accept { "forwarded" } else { "dropped" };
        forwarded += usize::from(got == "forwarded");
        dropped += usize::from(got == "dropped");
        if got != want {
            mismatches.push(format!("{:?}: {got} by {:?}, Linux {want}", p.id, p.rule));
        }
    }
    assert!(mismatches.is_empty(), "{} differ:\n{}", mismatches.len(), mismatches.join("\n"));
    assert_eq!((forwarded, dropped), (4688, 21));

    // The rules that decided: the SYN to 9999 is rejected with a reset from the server's
    // address, the blocked SYNs meet the policy, the pings under rule set B its new rule.
    let by_rule = |name: &str| {
        sink.packets.iter().filter(|p| p.rule.as_deref() == Some(name)).collect::<Vec<_>>()
    };
    let rejected = by_rule("forward:7 reject-9999");
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0].decided.verdict, Verdict::Reject);
    let rst = rejected[0].reply.as_deref().expect("a reset goes back");
    let m = PacketMeta::parse(LinkType::Ethernet, rst);
    assert_eq!((addr(&m, &m.src).as_str(), m.sport, m.tcp.flags & 0x04), ("10.66.2.2", 9999, 4));
    assert_eq!(by_rule("forward:2 reload-B").len(), 5);
    // (The prerouting chain's accept policy names the packets for the router itself.)
    let policy = by_rule("policy");
    let dropped: Vec<_> = policy.iter().filter(|p| p.decided.verdict == Verdict::Drop).collect();
    assert_eq!(dropped.len(), 4, "2222 twice, the server's SYN to 22 twice");
    assert!(dropped.iter().all(|p| p.decided.oif.is_some()), "forwarded packets");

    // Crafted packets: the kernel's logged reasons, word for word.
    let logged = invalid_reasons(&read("invalid-log.txt"));
    assert_eq!(logged.len(), 9);
    for (t, msg) in &logged {
        let p = crafted.get(t).unwrap_or_else(|| panic!("crafted {t:#x} not decided"));
        let reason = p.decided.reason.map(|r| r.message());
        assert_eq!(reason.as_deref(), Some(msg.as_str()), "crafted {t:#x}");
        assert_eq!(p.decided.verdict, Verdict::Drop);
        assert_eq!(p.rule.as_deref(), Some("forward:1 invalid"));
    }
    assert_eq!(crafted.len(), 14);

    // The counters after the run are what `nft list ruleset` listed at the end (each reload
    // reset them, so they cover the last seconds): the forward chain's rules in order.
    let listed: Vec<u64> = read("nft-after.txt")
        .lines()
        .skip_while(|l| !l.contains("chain forward"))
        .filter_map(|l| l.split("counter packets ").nth(1))
        .map(|n| n.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    let st = main.stateful().unwrap();
    let k = st.rules().chains().iter().position(|c| c.name == "forward").unwrap();
    let all = st.hits();
    let hits = &all[k];
    assert_eq!(listed.len(), 8);
    assert_eq!(&hits[..8], listed.as_slice(), "the forward chain's counters");

    // conntrack -S: invalid rose by 10 and error by 1.
    let st = st.conntrack().stats();
    assert_eq!((st.invalid, st.error), (10, 1), "{st:?}");

    // Every flow's final state and flags, from the flow records.
    let mut ours: HashMap<String, Vec<&FlowRecord>> = HashMap::new();
    for r in sink.records.iter().filter(|r| r.ct.is_some()) {
        ours.entry(tuple(r)).or_default().push(r);
    }
    let mut flows = 0;
    for line in read("flows.tsv").lines().skip(1) {
        let c: Vec<&str> = line.split('\t').collect();
        let (tuple, states, assured, reply) = (c[3], c[4], c[6] == "yes", c[7] == "yes");
        let got = ours
            .get(tuple)
            .and_then(|v| v.first())
            .and_then(|r| r.ct)
            .unwrap_or_else(|| panic!("no record for {tuple}"));
        let last = states.rsplit('>').next().unwrap();
        assert_eq!(got.tcp_state.map(|s| s.name()), (last != "-").then_some(last), "{line}");
        assert_eq!((got.assured, got.seen_reply), (assured, reply), "{line}");
        flows += 1;
    }
    assert_eq!(flows, 20);
    // A flow a dropped first packet would have opened has no connection state.
    assert!(
        !sink.records.iter().any(|r| r.ct.is_some() && r.flow.key.port_b() == 2222),
        "the blocked SYN left state"
    );
}

/// Rule set B in force all along, judged beside A: the five pings it drops are the only
/// difference, one flow.
#[test]
fn what_if_lists_the_flows_two_rule_sets_treat_differently() {
    let Some(dir) = rampart_testkit::shared(
        "what_if_lists_the_flows_two_rule_sets_treat_differently",
        "conntrack",
    ) else {
        return;
    };
    let (a, b) = (rules(&dir, "ruleset.nft"), rules(&dir, "ruleset-B.nft"));
    let mut inputs = ports(&dir);
    #[derive(Default)]
    struct Diffs(Collect, Vec<rampart_engine::replay::Difference>);
    impl FirewallSink for Diffs {
        fn packet(
            &mut self,
            f: &Frame<'_>,
            d: &Decided,
            r: &RuleSet,
            reply: Option<&[u8]>,
        ) -> io::Result<()> {
            self.0.packet(f, d, r, reply)
        }
        fn record(&mut self, r: &FlowRecord) -> io::Result<()> {
            self.0.record(r)
        }
        fn reload(&mut self, at: Timestamp, s: &str, r: Result<(), &str>) -> io::Result<()> {
            self.0.reload(at, s, r)
        }
        fn differs(&mut self, d: &rampart_engine::replay::Difference) -> io::Result<()> {
            self.1.push(d.clone());
            Ok(())
        }
    }
    let mut sink = Diffs::default();
    let stop = AtomicBool::new(false);
    let (outcome, _) = replay(
        &mut inputs,
        pipeline(a),
        Some(pipeline(b)),
        Vec::new(),
        &Limits::none(64),
        &stop,
        &mut sink,
    )
    .unwrap();
    // B drops every echo request to 10.66.2.2 (the three pings at the start, the fifteen of
    // the last run), so it never sees a connection and drops the replies A lets through as
    // established (three, and the ten the real router answered while A was in force): two
    // flows.
    let d = &sink.1;
    assert_eq!(d.len(), 2, "{d:?}");
    assert_eq!(outcome.summary.differing_flows, 2);
    for x in d {
        assert_eq!(x.key.proto(), 1);
        assert_eq!(x.a.0, Verdict::Accept);
        assert_eq!((x.b.0, x.b.1.as_deref()), (Verdict::Drop, Some("forward:2 reload-B")));
    }
    assert_eq!(d.iter().map(|x| x.packets).sum::<u64>(), 18 + 13);
}

mod cached {
    //! Cached decisions against the rule set walked for every packet: random traffic between
    //! two ports, random rule sets (connection state, ports, flags, addresses, jumps, rejects)
    //! and reloads at random points must give the same verdicts, rules, states and counters.

    use super::*;
    use proptest::prelude::*;
    use rampart_capture::Timestamp;
    use rampart_classify::firewall::Firewall;
    use rampart_engine::{Events, Summary};

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
            &v[self.below(v.len() as u64) as usize]
        }
    }

    /// An Ethernet/IPv4 frame: TCP (flags, seq, ack), UDP, or ICMP echo (request or reply).
    fn frame(
        src: [u8; 4],
        dst: [u8; 4],
        proto: u8,
        sport: u16,
        dport: u16,
        x: (u8, u32, u32),
    ) -> Vec<u8> {
        let l4 = match proto {
            6 => 20,
            17 => 8,
            _ => 8,
        };
        let mut f = vec![0u8; 14 + 20 + l4];
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        let ip = &mut f[14..];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&((20 + l4) as u16).to_be_bytes());
        ip[8] = 64;
        ip[9] = proto;
        ip[12..16].copy_from_slice(&src);
        ip[16..20].copy_from_slice(&dst);
        let t = &mut ip[20..];
        match proto {
            6 => {
                t[0..2].copy_from_slice(&sport.to_be_bytes());
                t[2..4].copy_from_slice(&dport.to_be_bytes());
                t[4..8].copy_from_slice(&x.1.to_be_bytes());
                t[8..12].copy_from_slice(&x.2.to_be_bytes());
                t[12] = 5 << 4;
                t[13] = x.0;
                t[14..16].copy_from_slice(&65535u16.to_be_bytes());
            }
            17 => {
                t[0..2].copy_from_slice(&sport.to_be_bytes());
                t[2..4].copy_from_slice(&dport.to_be_bytes());
                t[4..6].copy_from_slice(&8u16.to_be_bytes());
            }
            _ => {
                t[0] = x.0; // 8 request, 0 reply
                t[4..6].copy_from_slice(&sport.to_be_bytes());
            }
        }
        f
    }

    /// Random traffic: packets of a few conversations between hosts behind port 0 and
    /// port 1, in random order, with timestamps 1-400 ms apart (so some connections time out).
    fn traffic(r: &mut Rng) -> Vec<(u64, u32, Vec<u8>)> {
        let mut out = Vec::new();
        let mut t = 1_700_000_000_000_000_000u64;
        let n = 20 + r.below(180);
        for _ in 0..n {
            let (a, b) = ([10, 0, 0, 1 + r.below(3) as u8], [10, 0, 1, 1 + r.below(3) as u8]);
            let from0 = r.below(3) > 0;
            let (src, dst, iif) = if from0 { (a, b, 0) } else { (b, a, 1) };
            let proto = *r.pick(&[6u8, 6, 6, 17, 1]);
            let (sp, dp) = (*r.pick(&[1000u16, 1001]), *r.pick(&[22u16, 80, 443, 53]));
            let (sport, dport) = if r.below(4) == 0 { (dp, sp) } else { (sp, dp) };
            let flags = *r.pick(&[0x02u8, 0x12, 0x10, 0x18, 0x11, 0x04, 0x14, 0x03, 0x00]);
            let seq = *r.pick(&[1000u32, 1001, 5000, 5001, 900_000]);
            let ack = *r.pick(&[0u32, 1001, 5001, 77]);
            let icmp = *r.pick(&[8u8, 0]);
            let x = if proto == 1 { (icmp, 0, 0) } else { (flags, seq, ack) };
            out.push((t, iif, frame(src, dst, proto, sport, dport, x)));
            t += 1_000_000 * (1 + r.below(400));
        }
        out
    }

    /// A random rule set in rampart syntax.
    fn rules(r: &mut Rng) -> Arc<RuleSet> {
        let pool = [
            "ct state established,related accept",
            "ct state invalid drop",
            "tcp dport 22 ct state new accept",
            "tcp dport 80 accept",
            "tcp dport 443 reject",
            "udp dport 53 accept",
            "udp dport 53 ct state new drop",
            "tcp flags syn / syn,ack ct state new accept",
            "tcp flags fin drop",
            "ip saddr 10.0.1.2 drop",
            "iif \"p1\" ct state new drop",
            "oif \"p1\" accept",
            "meta l4proto icmp accept",
            "ct state new jump sub",
            "tcp sport 1000 jump sub",
            "",
        ];
        let mut text = String::from("table filter {\n");
        for _ in 0..1 + r.below(6) {
            text.push_str("  ");
            let line = pool[r.below(pool.len() as u64) as usize];
            text.push_str(line);
            text.push('\n');
        }
        text.push_str(if r.below(2) == 0 {
            "  default accept\n}\n"
        } else {
            "  default drop\n}\n"
        });
        text.push_str("chain sub {\n  tcp dport 80 return\n  udp dport 53 accept\n");
        let ends = ["  reject\n", "  drop\n", "  tcp dport 22 accept\n", ""];
        let last = ends[r.below(ends.len() as u64) as usize];
        text.push_str(last);
        text.push_str("}\n");
        let (rs, sets) = rampart_classify::syntax::parse("random", &text)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        let fw = Firewall::from_iptables(&rs, "filter", &sets).unwrap();
        Arc::new(RuleSet::single("random", "filter", rampart_engine::stateful::Hook::Forward, fw))
    }

    fn plane(rules: Arc<RuleSet>, cache: bool) -> Pipeline {
        let routes = Routes { names: vec!["p0".into(), "p1".into()], ..Routes::default() };
        // The frames carry no checksums.
        let ct = rampart_conntrack::Config { checksum: false, ..Default::default() };
        let cfg =
            StatefulConfig { ct, routes: Arc::new(routes), cache, ..StatefulConfig::default() };
        let table = TableConfig {
            max_flows: 64,
            idle_timeout: rampart_wire::Span::from_secs(30),
            ..TableConfig::default()
        };
        Pipeline::new(&FlowsConfig { table, rtt: None, dpi: None, ..FlowsConfig::default() })
            .with_stateful(Stateful::new(cfg, rules))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        #[test]
        fn cached_decisions_equal_the_rule_set_walked_each_time(seed in 1u64..) {
            let mut r = Rng(seed);
            let packets = traffic(&mut r);
            let first = rules(&mut r);
            let (mut cached, mut walked) = (plane(first.clone(), true), plane(first, false));
            let (mut v, mut events, mut s) = (Vec::new(), Events::default(), Summary::default());
            let mut at = 0;
            while at < packets.len() {
                if r.below(4) == 0 {
                    let next = rules(&mut r);
                    cached.stateful_mut().unwrap().reload(next.clone());
                    walked.stateful_mut().unwrap().reload(next);
                }
                let end = (at + 1 + r.below(16) as usize).min(packets.len());
                let frames: Vec<Frame<'_>> = packets[at..end]
                    .iter()
                    .map(|(t, iif, data)| Frame {
                        ts: Timestamp::from_nanos(*t),
                        origlen: data.len() as u32,
                        link: LinkType::Ethernet,
                        interface: *iif,
                        offset: 0,
                        data,
                    })
                    .collect();
                cached.process(&frames, Verdict::Drop, &mut v, &mut events, &mut s);
                walked.process(&frames, Verdict::Drop, &mut v, &mut events, &mut s);
                prop_assert_eq!(cached.decisions(), walked.decisions(), "packets {}..{}", at, end);
                at = end;
            }
            let (a, b) = (cached.stateful().unwrap(), walked.stateful().unwrap());
            prop_assert_eq!(a.hits(), b.hits());
            prop_assert_eq!(b.decided_counts().0, 0, "nothing cached when caching is off");
        }
    }

    /// Snabbwall's order: a flow is judged without an application until identification
    /// decides it, then `app` rules apply to the rest of the flow.
    #[test]
    fn app_rules_apply_from_the_packet_after_identification() {
        let text = "table filter {\n  app http drop\n  default accept\n}\n";
        let (rs, sets) = rampart_classify::syntax::parse("app", text).unwrap();
        let fw = Firewall::from_iptables(&rs, "filter", &sets).unwrap();
        let rules =
            Arc::new(RuleSet::single("app", "filter", rampart_engine::stateful::Hook::Forward, fw));
        assert!(rules.uses_app());
        let routes = Routes { names: vec!["p0".into(), "p1".into()], ..Routes::default() };
        let ct = rampart_conntrack::Config { checksum: false, ..Default::default() };
        let cfg = StatefulConfig { ct, routes: Arc::new(routes), ..StatefulConfig::default() };
        let mut p = Pipeline::new(&FlowsConfig { rtt: None, ..FlowsConfig::default() })
            .with_stateful(Stateful::new(cfg, rules));
        let (c, sv) = ([10, 0, 0, 1], [10, 0, 1, 1]);
        let with = |mut f: Vec<u8>, payload: &[u8]| {
            f.extend_from_slice(payload);
            let len = (f.len() - 14) as u16;
            f[16..18].copy_from_slice(&len.to_be_bytes());
            f
        };
        let get = b"GET / HTTP/1.1\r\nHost: example.net\r\nUser-Agent: t\r\n\r\n";
        let owned = [
            (0u32, frame(c, sv, 6, 40000, 80, (0x02, 100, 0))),
            (1, frame(sv, c, 6, 80, 40000, (0x12, 900, 101))),
            (0, frame(c, sv, 6, 40000, 80, (0x10, 101, 901))),
            (0, with(frame(c, sv, 6, 40000, 80, (0x18, 101, 901)), get)),
            (
                1,
                with(
                    frame(sv, c, 6, 80, 40000, (0x18, 901, 101 + get.len() as u32)),
                    b"HTTP/1.1 200 OK\r\n\r\n",
                ),
            ),
            (0, frame(c, sv, 6, 40000, 80, (0x10, 101 + get.len() as u32, 920))),
        ];
        let frames: Vec<Frame<'_>> = owned
            .iter()
            .enumerate()
            .map(|(i, (iif, data))| Frame {
                ts: Timestamp::from_nanos(1_700_000_000_000_000_000 + i as u64 * 1_000_000),
                origlen: data.len() as u32,
                link: LinkType::Ethernet,
                interface: *iif,
                offset: 0,
                data,
            })
            .collect();
        let (mut v, mut events, mut s) = (Vec::new(), Events::default(), Summary::default());
        p.process(&frames, Verdict::Drop, &mut v, &mut events, &mut s);
        use Verdict::{Accept, Drop};
        // The request is judged before it is identified; the reply and what follows are HTTP.
        assert_eq!(v, [Accept, Accept, Accept, Accept, Drop, Drop]);
        let names: Vec<Option<String>> = p
            .decisions()
            .iter()
            .map(|d| d.rule.map(|r| p.stateful().unwrap().rules().rule_name(r).to_string()))
            .collect();
        assert_eq!(names[4].as_deref(), Some("filter:1"));
        assert_eq!(names[3].as_deref(), Some("policy"));
    }

    /// `-m limit` in the data plane: an echo-request flood is let through at the rule's rate
    /// (capture time), the rest dropped; its flow's decisions are never taken from the cache.
    #[test]
    fn limit_rules_pass_a_flood_at_their_rate() {
        let text = "*filter\n:FORWARD DROP [0:0]\n-A FORWARD -p icmp -m icmp --icmp-type echo-request -m limit --limit 2/second --limit-burst 2 -j ACCEPT\nCOMMIT\n";
        let rs = rampart_classify::iptables::parse("limit.ipt", text).unwrap();
        let fw = Firewall::from_iptables(&rs, "FORWARD", &Default::default()).unwrap();
        let rules = Arc::new(RuleSet::single(
            "limit",
            "FORWARD",
            rampart_engine::stateful::Hook::Forward,
            fw,
        ));
        let mut p = plane(rules, true);
        // 20 echo requests of one ping, 100 ms apart: 2 s.
        let owned: Vec<Vec<u8>> =
            (0..20).map(|_| frame([10, 0, 0, 1], [10, 0, 1, 1], 1, 7, 0, (8, 0, 0))).collect();
        let frames: Vec<Frame<'_>> = owned
            .iter()
            .enumerate()
            .map(|(i, data)| Frame {
                ts: Timestamp::from_nanos(1_700_000_000_000_000_000 + i as u64 * 100_000_000),
                origlen: data.len() as u32,
                link: LinkType::Ethernet,
                interface: 0,
                offset: 0,
                data,
            })
            .collect();
        let (mut v, mut events, mut s) = (Vec::new(), Events::default(), Summary::default());
        p.process(&frames, Verdict::Drop, &mut v, &mut events, &mut s);
        let passed: Vec<usize> =
            v.iter().enumerate().filter(|(_, v)| **v == Verdict::Accept).map(|(i, _)| i).collect();
        // The burst of two (leaving 0.1 s of credit after the second, 100 ms later), then a
        // token every 500 ms: at 0.5 s, 1.0 s and 1.5 s.
        assert_eq!(passed, [0, 1, 5, 10, 15]);
        assert_eq!(p.stateful().unwrap().decided_counts().0, 0, "nothing from the cache");
    }

    /// ICMP messages other than echo share their address pair's flow: a decision cached for
    /// one type must not answer for another, as rules see type and code.
    #[test]
    fn icmp_types_of_one_address_pair_are_judged_each() {
        let text = "*filter\n:FORWARD ACCEPT [0:0]\n-A FORWARD -p icmp -m icmp --icmp-type timestamp-request -j DROP\nCOMMIT\n";
        let rs = rampart_classify::iptables::parse("icmp.ipt", text).unwrap();
        let fw = Firewall::from_iptables(&rs, "FORWARD", &Default::default()).unwrap();
        let rules = Arc::new(RuleSet::single(
            "icmp",
            "FORWARD",
            rampart_engine::stateful::Hook::Forward,
            fw,
        ));
        let (a, b) = ([10, 0, 0, 1], [10, 0, 1, 1]);
        // An information request, then a timestamp request, then the information request again.
        let owned: Vec<Vec<u8>> =
            [15u8, 13, 15].iter().map(|&t| frame(a, b, 1, 7, 0, (t, 0, 0))).collect();
        let frames: Vec<Frame<'_>> = owned
            .iter()
            .enumerate()
            .map(|(i, data)| Frame {
                ts: Timestamp::from_nanos(1_700_000_000_000_000_000 + i as u64 * 1_000_000),
                origlen: data.len() as u32,
                link: LinkType::Ethernet,
                interface: 0,
                offset: 0,
                data,
            })
            .collect();
        for cache in [true, false] {
            let mut p = plane(Arc::clone(&rules), cache);
            let (mut v, mut events, mut s) = (Vec::new(), Events::default(), Summary::default());
            p.process(&frames, Verdict::Drop, &mut v, &mut events, &mut s);
            assert_eq!(v, [Verdict::Accept, Verdict::Drop, Verdict::Accept], "cache {cache}");
        }
    }
}
