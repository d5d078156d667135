//! `rampart rules check`, `rampart classify` and `rampart filter`.

mod common;

use common::{rampart, repo};

fn fixture(name: &str) -> String {
    repo().join("crates/cli/tests/fixtures/classify").join(name).display().to_string()
}

#[test]
fn rules_check_counts_per_chain_and_reports_errors() {
    let out = rampart(&["rules", "check", &fixture("sample.rampart"), "--format", "rampart"]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "input: 5 rules\nweb: 2 rules\n1 set\n");
    let out = rampart(&[
        "rules",
        "check",
        &fixture("sample.iptables"),
        "--format",
        "iptables",
        "--sets",
        &fixture("sample.ipset"),
    ]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("INPUT: 5 rules\n"));
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.rules");
    std::fs::write(&bad, "table t {\n  tcp dport 70000 accept\n}\n").unwrap();
    let out = rampart(&["rules", "check", bad.to_str().unwrap(), "--format", "rampart"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.rules:2:13: expected a port"), "{err}");
}

#[test]
fn filter_writes_the_same_packets_for_both_syntaxes() {
    let dir = tempfile::tempdir().unwrap();
    let sample = repo().join("samples/mixed.pcap");
    let run = |rules: &str, format: &str, extra: &[&str]| {
        let out_pcap = dir.path().join(format!("{format}.pcap"));
        let mut args = vec![
            "filter",
            "-r",
            sample.to_str().unwrap(),
            "--rules",
            rules,
            "--format",
            format,
            "-w",
            out_pcap.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = rampart(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        (std::fs::read(out_pcap).unwrap(), String::from_utf8(out.stdout).unwrap())
    };
    let (a, hits_a) = run(&fixture("sample.rampart"), "rampart", &[]);
    let (b, hits_b) =
        run(&fixture("sample.iptables"), "iptables", &["--sets", &fixture("sample.ipset")]);
    assert_eq!(a, b);
    let counts =
        |s: &str| s.lines().map(|l| l.rsplit('\t').next().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(counts(&hits_a), counts(&hits_b));
    let passed: u64 = hits_a
        .lines()
        .filter(|l| l.contains("\tACCEPT\t"))
        .map(|l| l.rsplit('\t').next().unwrap().parse::<u64>().unwrap())
        .sum();
    // The written capture holds exactly the accepted packets.
    let flows = rampart(&["flows", "-r", dir.path().join("rampart.pcap").to_str().unwrap()]);
    let summary = String::from_utf8_lossy(&flows.stderr);
    assert!(summary.contains(&format!(": {passed} packets")), "{summary}");
}

#[test]
fn classify_prints_the_deciding_rule() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.trace");
    // 69.221.x -> 10.0.0.3:5201 TCP (jumps to web, accepted there); UDP to port 9: the policy.
    std::fs::write(
        &trace,
        "1172125705\t167772163\t5000\t5201\t6\t0\t0\n167772163\t1\t53\t9\t17\t0\t0\n",
    )
    .unwrap();
    let out = rampart(&[
        "classify",
        "--rules",
        &fixture("sample.rampart"),
        "--format",
        "rampart",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "6\n-1\n");
}

/// Runs rampart; (exit status, standard output, standard error).
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = rampart(args);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn one_way_to_read_rules_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let put = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let trace = put("t.trace", "167772163\t1\t53\t9\t17\t0\t0\n");
    let capture = repo().join("samples/mixed.pcap").display().to_string();
    let out = dir.path().join("out.pcap").display().to_string();
    let bad = [
        (
            put(
                "loop.ipt",
                "*filter\n:INPUT DROP [0:0]\n:A - [0:0]\n:B - [0:0]\n-A INPUT -j A\n-A A -p tcp -j B\n-A B -j A\nCOMMIT\n",
            ),
            "loop.ipt:6: chains jump in a loop: A -> B -> A (A:1 at line 6, B:1 at line 7)",
        ),
        (
            put(
                "loop.rules",
                "table t {\n  jump a\n}\nchain a {\n  goto b\n}\nchain b {\n  tcp dport 1 jump a\n}\n",
            ),
            "loop.rules:5: chains jump in a loop: a -> b -> a",
        ),
        (put("empty.rules", "# nothing yet\n\n"), "empty.rules: empty rule file"),
        (put("sets-only.rules", "set s = { 10.0.0.1 }\n"), "sets-only.rules: no table"),
        (
            put("nat-only.ipt", "*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n"),
            "nat-only.ipt: no chain in a *filter table",
        ),
        (
            put("prose.txt", "allow ssh from the office\n"),
            "prose.txt: line 1: cannot tell the rule format",
        ),
        (
            put("nochain.ipt", "*filter\n:FORWARD DROP [0:0]\nCOMMIT\n"),
            "nochain.ipt: no chain \"INPUT\" (chains: FORWARD); give --chain",
        ),
    ];
    for (file, want) in &bad {
        let commands: [Vec<&str>; 5] = [
            vec!["rules", "check", file],
            vec!["filter", "-r", &capture, "--rules", file, "-w", &out],
            vec!["classify", "--rules", file, "--trace", &trace],
            vec!["verify", "shadowed", file],
            vec!["verify", "test", file, "--packet", "tcp 10.0.0.1:1 -> 10.0.0.2:2"],
        ];
        for args in &commands {
            let (code, _, err) = run(args);
            assert_eq!(code, Some(2), "{args:?}: {err}");
            assert!(err.contains(want), "{args:?}: {err}");
        }
    }
    // The README's own `rules check rules.txt`: the format is told from the text.
    let (code, stdout, err) = run(&["rules", "check", &fixture("sample.rampart")]);
    assert_eq!(
        (code, stdout.as_str()),
        (Some(0), "input: 5 rules\nweb: 2 rules\n1 set\n"),
        "{err}"
    );
    // A set the rules name must be given, for rules check as for filter.
    let (code, _, err) = run(&["rules", "check", &fixture("sample.iptables")]);
    assert_eq!(code, Some(2));
    assert!(err.contains("sample.iptables:10: rule INPUT:5 uses set blocked"), "{err}");
    // --format still overrides: rampart text read as iptables-save fails where it says.
    let (code, _, err) =
        run(&["rules", "check", &fixture("sample.rampart"), "--format", "iptables"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("sample.rampart:1:1: expected a table"), "{err}");
}

#[test]
fn compressed_rule_files_and_traces_read_as_their_text() {
    let dir = tempfile::tempdir().unwrap();
    let plain = fixture("sample.rampart");
    let want = run(&["rules", "check", &plain]).1;
    for (tool, ext) in [("gzip", "gz"), ("zstd", "zst")] {
        let Some(path) = rampart_testkit::tool("compressed_rule_files_and_traces", tool) else {
            continue;
        };
        let packed = dir.path().join(format!("rules.{ext}"));
        let out = std::process::Command::new(&path).args(["-c", &plain]).output().unwrap();
        assert!(out.status.success());
        std::fs::write(&packed, out.stdout).unwrap();
        let (code, got, err) = run(&["rules", "check", packed.to_str().unwrap()]);
        assert_eq!((code, got.as_str()), (Some(0), want.as_str()), "{tool}: {err}");
    }
    // The shared ClassBench traces are gzipped: classify reads them as they are.
    let Some(data) = common::shared_data("compressed_rule_files_and_traces") else { return };
    let cb = data.join("classbench");
    let (code, plain_out, err) = run(&[
        "classify",
        "--rules",
        cb.join("acl1_10k").to_str().unwrap(),
        "--trace",
        cb.join("acl1_10k_trace.gz").to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(plain_out.lines().count(), 97_611);
    assert!(plain_out.lines().any(|l| l != "-1"));
}

/// The filter tracks connections: a rule set that accepts new connections to the iperf ports
/// and established traffic passes those connections whole, replies included, and nothing else.
#[test]
fn filter_passes_the_replies_of_the_connections_it_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("stateful.rules");
    std::fs::write(
        &rules,
        "table filter {\n  ct state established,related accept\n  tcp dport { 5201, 5202 } ct state new accept\n  default drop\n}\n",
    )
    .unwrap();
    let sample = repo().join("samples/mixed.pcap");
    let out = dir.path().join("out.pcap");
    let o = rampart(&[
        "filter",
        "-r",
        sample.to_str().unwrap(),
        "--rules",
        rules.to_str().unwrap(),
        "-w",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let records = |p: &std::path::Path| -> Vec<serde_json::Value> {
        let o = rampart(&["flows", "-q", "--dpi", "off", "--no-rtt", "-r", p.to_str().unwrap()]);
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let want: Vec<serde_json::Value> = records(&sample)
        .into_iter()
        .filter(|r| r["proto"] == "tcp" && (r["dport"] == 5201 || r["dport"] == 5202))
        .collect();
    let got = records(&out);
    assert!(!want.is_empty());
    assert_eq!(got, want, "the accepted connections, both directions, and nothing else");
    assert!(want.iter().all(|r| r["packets_rev"].as_u64().unwrap() > 0));
}
