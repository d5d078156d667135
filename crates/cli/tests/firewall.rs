//! `rampart firewall` as an operator runs it: the shared conntrack oracle's two port captures
//! with its nftables rule set files, a reload to rule set B and back, a per-packet log, a
//! port's output capture, and the what-if comparison.

mod common;

use std::path::Path;

use common::rampart;
use rampart_testkit::router::timeline_at as at;

const R0: &str = "r0=9a:c0:d6:7f:03:86";
const R1: &str = "r1=d2:62:18:ba:51:94";

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn the_router_oracle_through_the_command() {
    let Some(data) = common::shared_data("the_router_oracle_through_the_command") else { return };
    let d = data.join("conntrack");
    let timeline = std::fs::read_to_string(d.join("timeline.tsv")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (log, flows, out) =
        (dir.path().join("log.json"), dir.path().join("flows.json"), dir.path().join("r1.pcap"));
    let reload_b = format!("{}={}", at(&timeline, "load ruleset B"), s(&d.join("ruleset-B.nft")));
    let reload_a = format!("{}={}", at(&timeline, "load ruleset A"), s(&d.join("ruleset.nft")));
    let broken = format!("1795395504.5={}", s(&d.join("ruleset-broken.nft")));
    let (c, sv) = (
        format!("r0={}", s(&d.join("client-side.pcap"))),
        format!("r1={}", s(&d.join("server-side.pcap"))),
    );
    let o = rampart(&[
        "firewall",
        "--rules",
        s(&d.join("ruleset.nft")),
        "-r",
        &c,
        "-r",
        &sv,
        "--port-mac",
        R0,
        "--port-mac",
        R1,
        "--reload",
        &reload_b,
        "--reload",
        &reload_a,
        "--reload",
        &broken,
        "--log",
        s(&log),
        "-o",
        s(&flows),
        "-w",
        &format!("r1={}", s(&out)),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // The broken file is reported with its capture time, and changes nothing.
    assert!(err.contains("at 1795395504.500000: "), "{err}");
    assert!(err.contains("ruleset-broken.nft:7:2: expected"), "{err}");
    assert!(err.contains("the rule set in force stays"), "{err}");
    // Counters as nft listed them at the end; conntrack -S.
    assert!(err.contains("forward:2 est-rel"), "{err}");
    assert!(err.contains("invalid=10") && err.contains("error=1"), "{err}");

    let log = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<serde_json::Value> =
        log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let verdict = |v: &str| lines.iter().filter(|l| l["verdict"] == v).count();
    // Every ingress IP packet (not the 2 ARP frames): the 4688 forwarded and those for the
    // router accepted, 20 dropped, the SYN to 9999 rejected.
    assert_eq!(lines.len(), 4728);
    assert_eq!((verdict("drop"), verdict("reject")), (20, 1));
    let rejected = lines.iter().find(|l| l["verdict"] == "reject").unwrap();
    for (k, v) in [
        ("iif", "r0"),
        ("oif", "r1"),
        ("proto", "tcp"),
        ("src", "10.66.1.2"),
        ("dst", "10.66.2.2"),
        ("ct_state", "new"),
        ("rule", "forward:7 reject-9999"),
    ] {
        assert_eq!(rejected[k], v, "{k}: {rejected}");
    }
    assert_eq!(rejected["dport"], 9999);
    assert!(rejected["time"].as_f64().unwrap() > 1.7e9);
    let reasons: Vec<&str> = lines.iter().filter_map(|l| l["reason"].as_str()).collect();
    assert!(reasons.contains(&"invalid tcp flag combination"), "{reasons:?}");
    // Linux's words, with the values it logs.
    assert!(
        reasons.iter().any(|r| r.starts_with("SEQ is over upper bound 3560820216")),
        "{reasons:?}"
    );
    assert_eq!(reasons.len(), 11, "the 11 crafted invalids: {reasons:?}");
    let reload_b_drops =
        lines.iter().filter(|l| l["rule"] == "forward:2 reload-B" && l["verdict"] == "drop");
    assert_eq!(reload_b_drops.count(), 5);

    // Flow records with the connection's final state.
    let flows = std::fs::read_to_string(&flows).unwrap();
    let records: Vec<serde_json::Value> =
        flows.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let web = records
        .iter()
        .find(|r| r["sport"] == 55936 && r["dport"] == 8080)
        .expect("the first HTTP fetch");
    assert_eq!(
        (web["tcp_state"].as_str(), web["assured"].as_bool()),
        (Some("TIME_WAIT"), Some(true))
    );
    assert!(!records.iter().any(|r| r["dport"] == 2222 && !r["ct_state"].is_null()));

    // The server-side port's output: every packet forwarded towards the server, and the
    // reset the reject sent back out of r0 is not in it.
    let o = rampart(&["flows", "-q", "--dpi", "off", "-r", s(&out)]);
    assert!(o.status.success());
    let sent: u64 = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|r| r["packets_fwd"].as_u64().unwrap() + r["packets_rev"].as_u64().unwrap())
        .sum();
    let forwarded_to_r1 =
        lines.iter().filter(|l| l["verdict"] == "accept" && l["oif"] == "r1").count() as u64;
    assert_eq!(sent, forwarded_to_r1);
}

#[test]
fn what_if_exits_one_and_lists_the_flows_that_differ() {
    let Some(data) = common::shared_data("what_if_exits_one_and_lists_the_flows_that_differ")
    else {
        return;
    };
    let d = data.join("conntrack");
    let (c, sv) = (
        format!("r0={}", s(&d.join("client-side.pcap"))),
        format!("r1={}", s(&d.join("server-side.pcap"))),
    );
    let run = |b: &str| {
        rampart(&[
            "firewall",
            "-q",
            "--rules",
            s(&d.join("ruleset.nft")),
            "--compare",
            s(&d.join(b)),
            "-r",
            &c,
            "-r",
            &sv,
            "--port-mac",
            R0,
            "--port-mac",
            R1,
        ])
    };
    let o = run("ruleset-B.nft");
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let diffs: Vec<serde_json::Value> =
        out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(diffs.len(), 2, "{out}");
    for x in &diffs {
        assert_eq!((x["proto"].as_str(), x["dst"].as_str()), (Some("icmp"), Some("10.66.2.2")));
        assert_eq!(
            (x["verdict_a"].as_str(), x["verdict_b"].as_str()),
            (Some("accept"), Some("drop"))
        );
        assert_eq!(x["rule_b"], "forward:2 reload-B");
        assert!(x["packets"].as_u64().unwrap() > 0);
    }
    // The same rule set on both sides: nothing differs.
    let o = run("ruleset.nft");
    assert_eq!(o.status.code(), Some(0));
    assert!(o.stdout.is_empty());
}

#[test]
fn a_rule_file_that_does_not_parse_stops_before_any_packet() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("bad.nft");
    std::fs::write(
        &rules,
        "table inet t {\n  chain f {\n    type filter hook forward priority 0;\n    tcp dport 22 frobnicate\n  }\n}\n",
    )
    .unwrap();
    let cap = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/mixed.pcap");
    let o = rampart(&["firewall", "--rules", s(&rules), "-r", &format!("eth0={}", s(&cap))]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.nft:4:"), "{err}");
    assert!(o.stdout.is_empty());
    // Ports that are not read are named.
    let good = dir.path().join("good.rules");
    std::fs::write(&good, "table filter {\n  default accept\n}\n").unwrap();
    let o = rampart(&[
        "firewall",
        "--rules",
        s(&good),
        "-r",
        &format!("eth0={}", s(&cap)),
        "--route",
        "10.0.0.0/8=eth9",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no port eth9 (ports: eth0)"));
}

/// A SYN flood through the stateful firewall: with room for some of it, the oldest
/// unassured connections are pushed out (early drop) and every new SYN is let in; with the
/// table full of established connections, new SYNs are dropped and counted; in both, the
/// connections that were established before the flood pass every packet.
#[test]
fn a_syn_flood_fills_the_table_and_established_connections_keep_passing() {
    use rampart_testkit::flood::{Kind, SESSIONS, write};
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules");
    std::fs::write(
        &rules,
        "table filter {\n  ct state established,related accept\n  tcp dport { 80, 443 } ct state new accept\n  default drop\n}\n",
    )
    .unwrap();
    let run = |syns: u32, ct_max: &str| {
        let cap = dir.path().join(format!("flood-{ct_max}.pcap"));
        let mut f = std::io::BufWriter::new(std::fs::File::create(&cap).unwrap());
        write(&mut f, Kind::SynWithSessions, syns, 1).unwrap();
        std::io::Write::flush(&mut f).unwrap();
        drop(f);
        let log = dir.path().join(format!("log-{ct_max}.json"));
        let o = rampart(&[
            "firewall",
            "--rules",
            s(&rules),
            "-r",
            &format!("eth0={}", s(&cap)),
            "--ct-max",
            ct_max,
            "--log",
            s(&log),
            "-o",
            "/dev/null",
        ]);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(o.status.success(), "{err}");
        let (mut session, mut passed, mut new_dropped) = (0, 0, 0);
        for l in std::fs::read_to_string(&log).unwrap().lines() {
            let r: serde_json::Value = serde_json::from_str(l).unwrap();
            if r["sport"] == 443 || r["dport"] == 443 {
                session += 1;
                passed += usize::from(r["verdict"] == "accept");
            } else if r["verdict"] == "drop" {
                assert_eq!(r["reason"], "table full, dropping packet");
                new_dropped += 1;
            }
        }
        let handshakes = 3 * usize::from(SESSIONS);
        assert_eq!(session, handshakes + syns as usize / 16, "{err}");
        assert_eq!(passed, session, "every packet of the established connections: {err}");
        (err, new_dropped)
    };
    let counter = |err: &str, name: &str| -> u64 {
        let at = err.find(&format!(" {name}=")).unwrap_or_else(|| panic!("{name}: {err}"));
        err[at + name.len() + 2..].split_whitespace().next().unwrap().parse().unwrap()
    };
    // Room for 5,000: the flood's SYNs push each other out.
    let (err, dropped) = run(100_000, "5000");
    let syns: u32 = 100_000 - 100_000 / 16;
    assert_eq!(dropped, 0, "{err}");
    assert_eq!(counter(&err, "insert"), u64::from(syns) + u64::from(SESSIONS), "{err}");
    assert_eq!(counter(&err, "insert_failed"), 0, "{err}");
    assert!(counter(&err, "early_drop") >= u64::from(syns) - 5000, "{err}");
    // Room for the sessions only: every SYN is dropped, as Linux's table-full drop.
    let (err, dropped) = run(5_000, &SESSIONS.to_string());
    let syns: u32 = 5_000 - 5_000 / 16;
    assert_eq!(dropped, syns as usize, "{err}");
    assert_eq!(counter(&err, "drop"), u64::from(syns), "{err}");
    assert!(err.contains(&format!("table_full {syns}, not_ip 0")), "the drops by why: {err}");
    assert_eq!(counter(&err, "early_drop"), 0, "{err}");
}
