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
    assert_eq!(String::from_utf8_lossy(&out.stdout), "input: 5 rules\nweb: 2 rules\n1 sets\n");
    let out = rampart(&["rules", "check", &fixture("sample.iptables"), "--format", "iptables"]);
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
