//! `--active-timeout`: live flows reported in intervals. On the bundled sample (5.3 s of
//! iperf3 and HTTP, flows of several seconds) with a 1 s timeout, every flow's records (the
//! interim ones and its final one, joined by `uid`) add up to the one record of a plain run,
//! in JSON, CSV and both schemas; workers write the same bytes as one; `rampart report`
//! counts each flow once; bad values are refused.

mod common;

use std::collections::BTreeMap;

use common::*;

fn sample() -> String {
    repo().join("samples/mixed.pcap").to_str().unwrap().to_owned()
}

fn stdout_of(args: &[&str]) -> Vec<u8> {
    let out = rampart(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// Per uid: records, packets and bytes each way (summed), first packet (the earliest
/// record's), last packet (the latest), end reasons in order, TCP flags each way (joined).
#[derive(Debug, Default, PartialEq)]
struct PerFlow {
    records: u64,
    counts: [u64; 4],
    first: String,
    last: String,
    ends: Vec<String>,
    flags: [String; 2],
}

/// Joins flag letters in `CEUAPRSF` order.
fn join_flags(a: &str, b: &str) -> String {
    "CEUAPRSF".chars().filter(|c| a.contains(*c) || b.contains(*c)).collect()
}

/// The raw text of a JSON number field (times compared as written, not as floats).
fn raw<'a>(line: &'a str, field: &str) -> &'a str {
    let at = line.find(&format!("\"{field}\":")).unwrap() + field.len() + 3;
    let rest = &line[at..];
    &rest[..rest.find([',', '}']).unwrap()]
}

/// JSON records (`names`: first, last, the four counters, the flags each way) grouped by uid.
fn by_uid(json: &[u8], names: [&str; 8]) -> BTreeMap<String, PerFlow> {
    let mut m: BTreeMap<String, PerFlow> = BTreeMap::new();
    for line in std::str::from_utf8(json).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let uid = v["uid"].as_str().unwrap().to_owned();
        let f = m.entry(uid).or_default();
        f.records += 1;
        for (i, n) in names[2..6].iter().enumerate() {
            f.counts[i] += v[n].as_u64().unwrap();
        }
        if f.first.is_empty() {
            f.first = raw(line, names[0]).to_owned();
        }
        f.last = raw(line, names[1]).to_owned();
        f.ends.push(v["end_reason"].as_str().unwrap().to_owned());
        for d in 0..2 {
            let got = v[names[6 + d]].as_str().unwrap_or("");
            f.flags[d] = join_flags(&f.flags[d], got);
        }
    }
    m
}

const RAMPART: [&str; 8] = [
    "first",
    "last",
    "packets_fwd",
    "bytes_fwd",
    "packets_rev",
    "bytes_rev",
    "tcp_flags_fwd",
    "tcp_flags_rev",
];
const V2: [&str; 8] = [
    "ts",
    "ts_end",
    "orig_pkts",
    "orig_wire_bytes",
    "resp_pkts",
    "resp_wire_bytes",
    "tcp_flags_orig",
    "tcp_flags_resp",
];

/// Checks that `parts` (records of an active-timeout run) add up, flow by flow, to `whole`
/// (a plain run's), and returns the number of interim records.
fn adds_up(whole: &BTreeMap<String, PerFlow>, parts: &BTreeMap<String, PerFlow>) -> u64 {
    assert_eq!(whole.keys().collect::<Vec<_>>(), parts.keys().collect::<Vec<_>>(), "the same uids");
    let mut interim = 0;
    for (uid, w) in whole {
        let p = &parts[uid];
        assert_eq!(w.records, 1);
        assert_eq!(
            (&p.counts, &p.first, &p.last, &p.flags),
            (&w.counts, &w.first, &w.last, &w.flags),
            "{uid}"
        );
        let (last, before) = p.ends.split_last().unwrap();
        assert_eq!(last, &w.ends[0], "{uid}: the final record ends as the plain one");
        assert!(before.iter().all(|e| e == "active"), "{uid}: {:?}", p.ends);
        interim += before.len() as u64;
    }
    interim
}

#[test]
fn the_records_of_each_flow_add_up_to_its_plain_record() {
    let plain = stdout_of(&["flows", "-q", "-r", &sample()]);
    let json = stdout_of(&["flows", "-q", "-r", &sample(), "--active-timeout", "1"]);
    let interim = adds_up(&by_uid(&plain, RAMPART), &by_uid(&json, RAMPART));
    assert!(interim >= 10, "{interim} interim records");
    // The final records come in the plain run's order.
    let finals = |json: &[u8]| -> Vec<String> {
        let text = std::str::from_utf8(json).unwrap().to_owned();
        text.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|v| v["end_reason"] != "active")
            .map(|v| v["uid"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(finals(&json), finals(&plain));
    // Each record covers at most the timeout, and a flow's records do not overlap.
    let mut last_end: BTreeMap<String, f64> = BTreeMap::new();
    for line in std::str::from_utf8(&json).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let (first, last) = (v["first"].as_f64().unwrap(), v["last"].as_f64().unwrap());
        assert!(last - first <= 1.000_001, "{line}");
        let uid = v["uid"].as_str().unwrap().to_owned();
        if let Some(prev) = last_end.insert(uid, last) {
            assert!(first > prev, "{line}");
        }
    }
    // Schema v2, JSON and CSV: the same sums.
    let v2 = stdout_of(&["flows", "-q", "-r", &sample(), "--schema", "v2"]);
    let v2_active =
        stdout_of(&["flows", "-q", "-r", &sample(), "--schema", "v2", "--active-timeout", "1"]);
    assert_eq!(adds_up(&by_uid(&v2, V2), &by_uid(&v2_active, V2)), interim);
    let csv = String::from_utf8(stdout_of(&[
        "flows",
        "-q",
        "-r",
        &sample(),
        "--format",
        "csv",
        "--schema",
        "v2",
        "--active-timeout",
        "1",
    ]))
    .unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let mut sums: BTreeMap<String, [u64; 4]> = BTreeMap::new();
    let mut active = 0;
    for l in lines {
        let cells: Vec<&str> = l.split(',').collect();
        let s = sums.entry(cells[col("uid")].to_owned()).or_default();
        for (i, n) in V2[2..6].iter().enumerate() {
            s[i] += cells[col(n)].parse::<u64>().unwrap();
        }
        active += u64::from(cells[col("end_reason")] == "active");
    }
    assert_eq!(active, interim);
    let want: BTreeMap<String, [u64; 4]> =
        by_uid(&v2, V2).into_iter().map(|(u, f)| (u, f.counts)).collect();
    assert_eq!(sums, want);
    // The rampart CSV keeps its columns; interim rows say `active`.
    let csv = String::from_utf8(stdout_of(&[
        "flows",
        "-q",
        "-r",
        &sample(),
        "--format",
        "csv",
        "--active-timeout",
        "1",
    ]))
    .unwrap();
    let plain_csv =
        String::from_utf8(stdout_of(&["flows", "-q", "-r", &sample(), "--format", "csv"])).unwrap();
    assert_eq!(csv.lines().next(), plain_csv.lines().next());
    assert_eq!(csv.lines().filter(|l| l.contains(",active,")).count() as u64, interim);
}

#[test]
fn workers_write_the_bytes_one_worker_writes() {
    let one = stdout_of(&["flows", "-q", "-r", &sample(), "--active-timeout", "0.5"]);
    assert!(String::from_utf8_lossy(&one).contains("\"end_reason\":\"active\""));
    for n in ["2", "3"] {
        let got =
            stdout_of(&["flows", "-q", "-r", &sample(), "--active-timeout", "0.5", "--workers", n]);
        assert!(got == one, "--workers {n} differs");
    }
}

#[test]
fn the_summary_counts_flows_and_interim_records_apart() {
    let plain = rampart(&["flows", "-r", &sample()]);
    let out = rampart(&["flows", "-r", &sample(), "--active-timeout", "1"]);
    assert!(out.status.success());
    let (a, b) = (String::from_utf8_lossy(&plain.stderr), String::from_utf8_lossy(&out.stderr));
    let first = |s: &str| s.lines().next().unwrap().split(" in ").next().unwrap().to_owned();
    assert_eq!(first(&a), first(&b), "the same number of flows");
    assert!(b.contains("interim records of live flows (active timeout): "), "{b}");
    assert!(!a.contains("interim"), "{a}");
}

#[test]
fn the_report_counts_each_flow_once() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, parts) = (dir.path().join("plain.json"), dir.path().join("parts.json"));
    let s = sample();
    for (out, extra) in [(&plain, &[][..]), (&parts, &["--active-timeout", "1"][..])] {
        let mut args = vec!["flows", "-q", "-r", &s, "-o", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        stdout_of(&args);
    }
    let page = |records: &std::path::Path| {
        let html = dir.path().join("page.html");
        let out = rampart(&[
            "report",
            "--records",
            records.to_str().unwrap(),
            "-o",
            html.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        (
            said.split(": ").nth(1).unwrap().split(',').next().unwrap().to_owned(),
            std::fs::read_to_string(&html).unwrap(),
        )
    };
    let (n_plain, page_plain) = page(&plain);
    let (n_parts, page_parts) = page(&parts);
    assert_eq!(n_plain, n_parts);
    assert!(n_plain.ends_with(" flows") && n_plain != "0 flows", "{n_plain}");
    // The same page, but for the source name in it.
    let strip = |p: &str, name: &str| p.replace(name, "");
    assert_eq!(strip(&page_plain, "plain.json"), strip(&page_parts, "parts.json"));
}

#[test]
fn bad_values_are_refused_with_a_clear_error() {
    for bad in ["0", "-1", "abc", "", "nan", "inf"] {
        let arg = format!("--active-timeout={bad}");
        let out = rampart(&["flows", "-q", "-r", &sample(), &arg]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--active-timeout") && err.contains("is not a positive number of seconds"),
            "{bad}: {err}"
        );
        assert!(out.stdout.is_empty());
    }
    // rtt sends flow records only to a collector.
    let out = rampart(&["rtt", "-r", &sample(), "--active-timeout", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--ipfix"));
}

/// `rampart firewall --active-timeout`: the stateful firewall's records come in intervals
/// too, each with the connection's state and verdict so far, adding up per flow.
#[test]
fn the_firewall_writes_interim_records_too() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("accept.rules");
    std::fs::write(&rules, "table filter {\n  default accept\n}\n").unwrap();
    let port = format!("eth0={}", sample());
    let run = |extra: &[&str]| {
        let mut args = vec!["firewall", "-q", "--rules", rules.to_str().unwrap(), "-r", &port];
        args.extend_from_slice(extra);
        stdout_of(&args)
    };
    let plain = run(&[]);
    let parts = run(&["--active-timeout", "1"]);
    assert!(adds_up(&by_uid(&plain, RAMPART), &by_uid(&parts, RAMPART)) >= 10);
    for line in std::str::from_utf8(&parts).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["end_reason"] == "active" {
            assert_eq!(v["verdict"], "accept", "{line}");
            assert!(v["ct_state"].is_string(), "{line}");
        }
    }
}

/// `rampart rtt --summary` prints one summary per flow also when interim records go to a
/// collector (here one nobody listens on: the run goes on and says so once).
#[test]
fn rtt_summaries_stay_one_per_flow() {
    let plain = stdout_of(&["rtt", "-q", "-r", &sample(), "--summary"]);
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let target = format!("127.0.0.1:{port}");
    let with = stdout_of(&[
        "rtt",
        "-q",
        "-r",
        &sample(),
        "--summary",
        "--ipfix",
        &target,
        "--active-timeout",
        "1",
    ]);
    assert!(!plain.is_empty());
    assert_eq!(String::from_utf8_lossy(&with), String::from_utf8_lossy(&plain));
}
