//! `--metrics` checked by the tools users run: `promtool check metrics` on a scraped page, and
//! a real Prometheus (Debian's `prometheus`, on loopback, its own port and a temporary TSDB)
//! scraping rampart every second while a capture is streamed to it through `-r -`, whose
//! query API must answer the packet count rampart's summary reports and a
//! `histogram_quantile(0.5, ...)` within the bucket of the true median of the samples rampart
//! wrote. With `rtt --aggregate`, the per-prefix histograms pass `promtool` with buckets equal
//! to the samples counted by hand, and Prometheus' `histogram_quantile` per subnet lies in the
//! bucket of that subnet's true median. Each is skipped (one line) when the tool is not
//! installed, and fails instead under `RAMPART_REQUIRE_TOOLS`. A port already in use is exit
//! status 2, naming the address.

mod common;
use common::Daemon;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A TCP port nobody listens on now on 127.0.0.1.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn sample() -> PathBuf {
    rampart_testkit::repo().join("samples/mixed.pcap")
}

/// An HTTP request to 127.0.0.1:`port` (a form body makes it a POST); the status and body.
fn http(port: u16, path: &str, form: Option<&str>) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let req = match form {
        Some(body) => format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: \
             application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
        None => format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
    };
    s.write_all(req.as_bytes()).ok()?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).ok()?;
    let out = String::from_utf8_lossy(&out).into_owned();
    let status = out.split(' ').nth(1)?.parse().ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    // Prometheus answers in chunks; rampart with a length.
    let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        dechunk(body)
    } else {
        body.to_string()
    };
    Some((status, body))
}

fn dechunk(mut b: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = b.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else { break };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        b = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// Percent-encodes a form value.
fn form_value(v: &str) -> String {
    v.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// An instant query's values, one per series (empty when it has none).
fn query(port: u16, q: &str) -> Vec<f64> {
    let (status, body) = http(port, "/api/v1/query", Some(&format!("query={}", form_value(q))))
        .unwrap_or_else(|| panic!("Prometheus did not answer {q}"));
    assert_eq!(status, 200, "{q}: {body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["value"][1].as_str().unwrap().parse::<f64>().unwrap())
        .collect()
}

fn wait_for(what: &str, secs: u64, mut ok: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(secs);
    while !ok() {
        assert!(Instant::now() < until, "timed out after {secs} s waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A temporary directory removed when dropped.
/// The page rampart serves once its run has ended (it lingers for the scrape), waiting up to
/// `secs` for it.
fn final_page(port: u16, secs: u64) -> String {
    let mut page = String::new();
    wait_for("the final page", secs, || match http(port, "/metrics", None) {
        Some((200, body)) if body.contains("rampart_run_ended 1\n") => {
            page = body;
            true
        }
        _ => false,
    });
    page
}

/// `promtool check metrics` accepts `page`.
fn promtool_accepts(promtool: &std::path::Path, page: &str) {
    let mut check =
        Command::new(promtool).args(["check", "metrics"]).stdin(Stdio::piped()).spawn().unwrap();
    check.stdin.take().unwrap().write_all(page.as_bytes()).unwrap();
    assert!(check.wait().unwrap().success(), "promtool check metrics failed on:\n{page}");
}

fn temp() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("rampart-metrics").tempdir().unwrap()
}

#[test]
fn a_port_in_use_is_status_2_naming_it() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let s = sample();
    let out = Command::new(env!("CARGO_BIN_EXE_rampart"))
        .args(["flows", "-q", "-r", s.to_str().unwrap(), "-o", "/dev/null", "--metrics", &addr])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("--metrics {addr}")), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn promtool_accepts_a_scraped_page() {
    let Some(promtool) = rampart_testkit::tool("promtool_accepts_a_scraped_page", "promtool")
    else {
        return;
    };
    let port = free_port();
    let s = sample();
    let addr = format!("127.0.0.1:{port}");
    let mut r = Daemon(
        Command::new(env!("CARGO_BIN_EXE_rampart"))
            .args(["flows", "-q", "-r", s.to_str().unwrap(), "-o", "/dev/null"])
            .args(["--metrics", &addr, "--metrics-linger", "20"])
            .spawn()
            .unwrap(),
    );
    let page = final_page(port, 20);
    assert_eq!(http(port, "/nothing", None).map(|(s, _)| s), Some(404));
    let _ = r.stop();
    promtool_accepts(&promtool, &page);
    assert!(page.contains("rampart_packets_total 3226\n"), "{page}");
}

/// The packet count of `rtt`'s summary line (`NAME: N packets (...`).
fn summary_packets(stderr: &str) -> u64 {
    let line = stderr.lines().find(|l| l.contains(" packets (")).expect(stderr);
    let n = line.split(": ").nth(1).unwrap().split(' ').next().unwrap();
    n.replace(',', "").parse().unwrap()
}

#[test]
fn prometheus_scrapes_counts_and_rtt_quantiles_that_match_the_run() {
    const TEST: &str = "prometheus_scrapes_counts_and_rtt_quantiles_that_match_the_run";
    let Some(prometheus) = rampart_testkit::tool(TEST, "prometheus") else { return };
    let dir = temp();
    let (rport, pport) = (free_port(), free_port());
    let capture = std::fs::read(sample()).unwrap();
    // rampart reads the capture from a pipe, fed in parts a second apart, and keeps its
    // endpoint up 60 s after the end (stopped by the test once it has what it needs).
    let mut r = Daemon(
        Command::new(env!("CARGO_BIN_EXE_rampart"))
            .args(["rtt", "-r", "-", "--format", "json"])
            .args(["--metrics", &format!("127.0.0.1:{rport}"), "--metrics-linger", "60"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // rampart's own results: its samples (stdout, read as they come, so the pipe never
    // fills) and its summary (stderr, read once it has been stopped).
    let mut out = r.0.stdout.take().unwrap();
    let mut err = r.0.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\nscrape_configs:\n  - \
             job_name: rampart\n    static_configs: [{{targets: [\"127.0.0.1:{rport}\"]}}]\n"
        ),
    )
    .unwrap();
    let mut p = Daemon(
        Command::new(prometheus)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("tsdb").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{pport}"))
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(dir.path().join("prom.log")).unwrap()))
            .spawn()
            .unwrap(),
    );
    wait_for("Prometheus to be ready", 30, || {
        http(pport, "/-/ready", None).is_some_and(|(s, _)| s == 200)
    });
    // The stream in four parts, a second and a half apart: scrapes see the counters grow.
    // rampart reads the stream's header before it serves, so the first part goes first.
    let mut stdin = r.0.stdin.take().unwrap();
    let part = capture.len().div_ceil(4);
    for (i, chunk) in capture.chunks(part).enumerate() {
        stdin.write_all(chunk).unwrap();
        stdin.flush().unwrap();
        if i == 0 {
            wait_for("a first scrape of rampart", 20, || !query(pport, "up == 1").is_empty());
        }
        std::thread::sleep(Duration::from_millis(1500));
    }
    drop(stdin);
    wait_for("rampart's final values in Prometheus", 30, || {
        query(pport, "rampart_run_ended").first() == Some(&1.0)
    });
    // A few more scrapes of the final values.
    std::thread::sleep(Duration::from_secs(3));
    let q = |s: &str| query(pport, s);
    let packets = q("rampart_packets_total");
    let increased = q("max_over_time(rate(rampart_packets_total[4s])[2m:1s])");
    let intermediate = q("count_over_time((rampart_packets_total > 0 < 3226)[2m:1s])");
    let quantile =
        q("histogram_quantile(0.5, sum by (le) (rampart_rtt_seconds_bucket{job=\"rampart\"}))");
    let counts = q("sum(rampart_rtt_seconds_count)");
    let buckets = query(pport, "rampart_rtt_seconds_bucket");
    assert!(!buckets.is_empty());
    let _ = r.stop();
    let mut stderr = String::new();
    let _ = err.read_to_string(&mut stderr);
    let stdout = out_t.join().unwrap();
    let _ = p.stop();

    let rtts: Vec<f64> = {
        let mut v: Vec<f64> = stdout
            .lines()
            .map(|l| {
                let j: serde_json::Value = serde_json::from_str(l).unwrap();
                j["rtt"].as_f64().unwrap()
            })
            .collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let total = summary_packets(&stderr);
    assert_eq!(total, 3226, "{stderr}");
    assert_eq!(packets, vec![total as f64], "rampart_packets_total");
    assert!(increased.first().is_some_and(|r| *r > 0.0), "rate never above 0: {increased:?}");
    assert!(
        intermediate.first().is_some_and(|n| *n >= 1.0),
        "no scrape saw the count part-way: {intermediate:?}"
    );
    assert_eq!(counts, vec![rtts.len() as f64], "RTT samples counted against written");
    // The true median's bucket: from the bucket of the lower median to that of the upper.
    let bounds = rampart_export::prometheus::RTT_BUCKETS;
    let lower = |v: f64| bounds.iter().rev().find(|b| **b < v).copied().unwrap_or(0.0);
    let upper = |v: f64| bounds.iter().find(|b| **b >= v).copied().unwrap_or(f64::INFINITY);
    let n = rtts.len();
    assert!(n > 100, "{n} samples");
    let (lo, hi) = (lower(rtts[(n - 1) / 2]), upper(rtts[n / 2]));
    let median = quantile[0];
    eprintln!(
        "prometheus: rampart_packets_total {packets:?} (summary {total}), peak rate {increased:?}/s, \
         histogram_quantile(0.5) {median} against the samples' median {} ({n} samples)",
        rtts[n / 2]
    );
    assert!(
        (lo..=hi).contains(&median),
        "histogram_quantile(0.5) = {median}, the samples' median {} lies in ({lo}, {hi}]",
        rtts[n / 2]
    );
}

/// The samples of a page: metric name, its labels as written (`k="v",...`, empty without),
/// value.
fn page_samples(page: &str) -> Vec<(String, String, f64)> {
    let mut out = Vec::new();
    for l in page.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let (series, value) = l.rsplit_once(' ').unwrap();
        let (name, labels) = match series.split_once('{') {
            Some((n, rest)) => (n, rest.strip_suffix('}').unwrap()),
            None => (series, ""),
        };
        out.push((name.to_string(), labels.to_string(), value.parse().unwrap()));
    }
    out
}

/// The label values of a `k="v",...` list (values without escapes, as in the test data).
fn label_values(labels: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = labels;
    while let Some((k, v)) = rest.split_once("=\"") {
        let end = v.find('"').unwrap();
        out.push((k.trim_start_matches(',').to_string(), v[..end].to_string()));
        rest = &v[end + 1..];
    }
    out
}

/// The number just before ` word` in `line` (`4712 accepted` for "accepted").
fn number_before(line: &str, word: &str) -> u64 {
    let at = line.find(&format!(" {word}")).unwrap_or_else(|| panic!("{word} in {line}"));
    line[..at].rsplit([' ', '(']).next().unwrap().parse().unwrap()
}

/// `rampart firewall --metrics` over the router oracle's captures with a reload: the page
/// passes `promtool check metrics`, and every counter equals what the run's own summary on
/// standard error says (verdicts and their bytes, drops by reason, each rule's counter,
/// decisions, conntrack -S, invalid packets by reason, the reload) and what its records say.
#[test]
fn firewall_page_passes_promtool_and_equals_the_summary() {
    const TEST: &str = "firewall_page_passes_promtool_and_equals_the_summary";
    let Some(promtool) = rampart_testkit::tool(TEST, "promtool") else { return };
    let Some(data) = common::shared_data(TEST) else { return };
    let d = data.join("conntrack");
    let timeline = std::fs::read_to_string(d.join("timeline.tsv")).unwrap();
    let reload_b = format!(
        "{}={}",
        rampart_testkit::router::timeline_at(&timeline, "load ruleset B"),
        d.join("ruleset-B.nft").display()
    );
    let dir = temp();
    let (records, stderr) = (dir.path().join("flows.json"), dir.path().join("stderr"));
    let port = free_port();
    let mut r = Daemon(
        Command::new(env!("CARGO_BIN_EXE_rampart"))
            .arg("firewall")
            .arg("--rules")
            .arg(d.join("ruleset.nft"))
            .arg("-r")
            .arg(format!("r0={}", d.join("client-side.pcap").display()))
            .arg("-r")
            .arg(format!("r1={}", d.join("server-side.pcap").display()))
            .args(["--port-mac", "r0=9a:c0:d6:7f:03:86", "--port-mac", "r1=d2:62:18:ba:51:94"])
            .args(["--reload", &reload_b, "-o"])
            .arg(&records)
            .args(["--metrics", &format!("127.0.0.1:{port}"), "--metrics-linger", "30"])
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap(),
    );
    let page = final_page(port, 30);
    // The summary is written before the linger.
    let err = std::fs::read_to_string(&stderr).unwrap();
    let _ = r.stop();
    promtool_accepts(&promtool, &page);

    let samples = page_samples(&page);
    let one = |name: &str, labels: &str| -> u64 {
        let found: Vec<f64> = samples
            .iter()
            .filter(|(n, l, _)| n == name && l == labels)
            .map(|(_, _, v)| *v)
            .collect();
        assert_eq!(found.len(), 1, "{name}{{{labels}}} in\n{page}");
        found[0] as u64
    };
    let family = |name: &str| -> Vec<(Vec<(String, String)>, u64)> {
        samples
            .iter()
            .filter(|(n, _, _)| n == name)
            .map(|(_, l, v)| (label_values(l), *v as u64))
            .collect()
    };
    let line = |start: &str| -> &str {
        err.lines().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("{start}: {err}"))
    };
    // Verdicts and their bytes.
    let first = line("r0, r1: ");
    assert_eq!(one("rampart_packets_total", ""), number_before(first, "packets"), "{err}");
    let bytes = line("  bytes: ");
    for (v, word) in [("accept", "accepted"), ("drop", "dropped"), ("reject", "rejected")] {
        let label = format!("verdict=\"{v}\"");
        assert_eq!(one("rampart_firewall_packets_total", &label), number_before(first, word));
        assert_eq!(one("rampart_firewall_bytes_total", &label), number_before(bytes, word));
    }
    let dropped = number_before(first, "dropped") + number_before(first, "rejected");
    assert!(dropped > 20, "the reload's drops: {err}");
    // Drops by reason: the summary's, adding up to the dropped and rejected packets.
    let by = line("  dropped or rejected by: ").trim_start_matches("  dropped or rejected by: ");
    let mut total = 0;
    for part in by.split(", ") {
        let (reason, n) = part.rsplit_once(' ').unwrap();
        let n: u64 = n.parse().unwrap();
        assert_eq!(one("rampart_firewall_drops_total", &format!("reason=\"{reason}\"")), n);
        total += n;
    }
    assert_eq!(total, dropped);
    assert_eq!(family("rampart_firewall_drops_total").len(), 5);
    // Each rule's counter as the summary lists it under its chain; no more, no fewer.
    let hits = family("rampart_rule_hits_total");
    let rule_lines = err.lines().filter(|l| l.contains(" counter packets ")).count();
    assert_eq!(hits.len(), rule_lines, "{page}\n{err}");
    assert!(hits.iter().any(|(l, n)| l[1].1 == "forward:2 reload-B" && *n > 0), "{page}");
    for (labels, n) in &hits {
        let (chain, rule, action) = (&labels[0].1, &labels[1].1, &labels[2].1);
        let section = err.split(&format!("    chain {chain} (")).nth(1).unwrap();
        let section = section.split("    chain ").next().unwrap();
        let want = format!("      {rule:<32} {action:<10} counter packets {n}\n");
        assert!(section.contains(&want), "{want:?} under chain {chain}: {err}");
    }
    // Decisions, conntrack -S, invalid packets by reason, the reload.
    let decisions = line("  decisions: ");
    assert_eq!(
        one("rampart_firewall_decisions_total", "by=\"rule_set\""),
        number_before(decisions, "by the rule set")
    );
    assert_eq!(
        one("rampart_firewall_decisions_total", "by=\"cache\""),
        number_before(decisions, "from the flow's")
    );
    let ct = line("  conntrack: ");
    let field = |k: &str| -> u64 {
        ct.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("{k} in {ct}"))
            .parse()
            .unwrap()
    };
    for (metric, k) in [
        ("rampart_conntrack_found_total", "found"),
        ("rampart_conntrack_inserted_total", "insert"),
        ("rampart_conntrack_insert_failed_total", "insert_failed"),
        ("rampart_conntrack_table_full_drops_total", "drop"),
        ("rampart_conntrack_early_drops_total", "early_drop"),
        ("rampart_conntrack_errors_total", "error"),
    ] {
        assert_eq!(one(metric, ""), field(k), "{metric}");
    }
    let after = |k: &str, end: char| -> u64 {
        ct.split(k).nth(1).unwrap().split(end).next().unwrap().parse().unwrap()
    };
    assert_eq!(one("rampart_conntrack_ignored_total", ""), after("(ignored ", ','));
    assert_eq!(
        one("rampart_conntrack_unchecked_checksums_total", ""),
        after("checksums not verifiable ", ')')
    );
    // Every flow has ended: no connection is left.
    assert_eq!(one("rampart_conntrack_entries", ""), 0);
    assert_eq!(one("rampart_conntrack_entries_limit", ""), 262_144);
    let invalid = line("  invalid by reason: ").trim_start_matches("  invalid by reason: ");
    let listed: Vec<(String, u64)> = invalid
        .split(", ")
        .map(|p| {
            let (r, n) = p.rsplit_once(' ').unwrap();
            (r.to_string(), n.parse().unwrap())
        })
        .collect();
    let nonzero: Vec<(String, u64)> = family("rampart_conntrack_invalid_total")
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(l, n)| (l[0].1.clone(), n))
        .collect();
    assert_eq!(nonzero, listed);
    assert_eq!(one("rampart_firewall_reloads_total", "result=\"loaded\""), 1);
    assert_eq!(one("rampart_firewall_reloads_total", "result=\"failed\""), 0);
    // Flow records: by end reason and by application, as the records say.
    let records = std::fs::read_to_string(&records).unwrap();
    let ended: u64 = family("rampart_flows_ended_total").iter().map(|(_, n)| n).sum();
    assert_eq!(ended, records.lines().count() as u64);
    assert_eq!(number_before(first, "flows"), ended);
    let with_app = records.lines().filter(|l| l.contains("\"app\":\"")).count() as u64;
    let by_app: u64 = family("rampart_app_flows_total").iter().map(|(_, n)| n).sum();
    assert_eq!(by_app, with_app);
    assert_eq!(one("rampart_flows_active", ""), 0);
}

/// `rampart firewall --metrics` on an address in use: status 2 naming it, before any output
/// file is created.
#[test]
fn firewall_metrics_on_a_port_in_use_is_status_2() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = temp();
    let rules = dir.path().join("rules");
    std::fs::write(&rules, "table filter {\n  default accept\n}\n").unwrap();
    let out_file = dir.path().join("flows.json");
    let out = Command::new(env!("CARGO_BIN_EXE_rampart"))
        .arg("firewall")
        .arg("--rules")
        .arg(&rules)
        .arg("-r")
        .arg(format!("eth0={}", sample().display()))
        .args(["--metrics", &addr, "-o"])
        .arg(&out_file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("--metrics {addr}")), "{err}");
    assert!(!out_file.exists());
}

/// A rule set of more rules than a page names: 1,024 rules by name and the policy, the hits
/// of the others under `rule="other"`, none lost (the page's rule hits add up to the
/// summary's).
#[test]
fn rule_hits_stay_bounded_on_a_large_rule_set() {
    const TEST: &str = "rule_hits_stay_bounded_on_a_large_rule_set";
    let Some(promtool) = rampart_testkit::tool(TEST, "promtool") else { return };
    let dir = temp();
    let rules = dir.path().join("rules");
    let mut text = String::from("table filter {\n");
    for p in 0..1100 {
        text.push_str(&format!("  udp dport {} accept\n", 20_000 + p));
    }
    text.push_str("  default accept\n}\n");
    std::fs::write(&rules, text).unwrap();
    let port = free_port();
    let stderr = dir.path().join("stderr");
    let mut r = Daemon(
        Command::new(env!("CARGO_BIN_EXE_rampart"))
            .arg("firewall")
            .arg("--rules")
            .arg(&rules)
            .arg("-r")
            .arg(format!("eth0={}", sample().display()))
            .args(["-o", "/dev/null", "--metrics", &format!("127.0.0.1:{port}")])
            .args(["--metrics-linger", "30"])
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap(),
    );
    let page = final_page(port, 30);
    let err = std::fs::read_to_string(&stderr).unwrap();
    let _ = r.stop();
    promtool_accepts(&promtool, &page);
    let hits: Vec<(String, String, f64)> = page_samples(&page)
        .into_iter()
        .filter(|(n, _, _)| n == "rampart_rule_hits_total")
        .collect();
    assert_eq!(hits.len(), 1024 + 2, "1,024 rules, the policy and other");
    assert!(hits[1024].1.contains("rule=\"policy\""), "{:?}", hits[1024]);
    assert!(hits[1024].2 > 0.0, "the sample's packets reach the policy");
    assert!(hits[1025].1.contains("rule=\"other\""), "{:?}", hits[1025]);
    let on_page: u64 = hits.iter().map(|(_, _, v)| *v as u64).sum();
    let in_summary: u64 = err
        .lines()
        .filter_map(|l| l.split(" counter packets ").nth(1))
        .map(|n| n.parse::<u64>().unwrap())
        .sum();
    assert_eq!(err.lines().filter(|l| l.contains(" counter packets ")).count(), 1101);
    assert_eq!(on_page, in_summary);
    assert!(on_page > 0);
}

/// A sample line's value on a page (`name{labels} value`), if the series is there.
fn series(page: &str, name_and_labels: &str) -> Option<f64> {
    page.lines().find_map(|l| l.strip_prefix(name_and_labels)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn per_prefix_rtt_histograms_pass_promtool_and_count_the_samples() {
    let test = "per_prefix_rtt_histograms_pass_promtool_and_count_the_samples";
    let Some(promtool) = rampart_testkit::tool(test, "promtool") else { return };
    let s = sample();
    let s = s.to_str().unwrap();
    // The samples of a plain run, by the /24 or /48 of their `src`.
    let out = Command::new(env!("CARGO_BIN_EXE_rampart"))
        .args(["rtt", "-q", "--format", "json", "-r", s])
        .output()
        .unwrap();
    let mut want: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let src = v["src"].as_str().unwrap();
        let p = if src.contains(':') { "fd77::/48".to_string() } else { "10.77.0.0/24".into() };
        want.entry(p).or_default().push(v["rtt"].as_f64().unwrap());
    }
    assert_eq!(want.len(), 2, "{want:?}");
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut r = Daemon(
        Command::new(env!("CARGO_BIN_EXE_rampart"))
            .args(["rtt", "-q", "-r", s, "--aggregate", "--interval", "1"])
            .args(["--metrics", &addr, "--metrics-linger", "20"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let page = final_page(port, 20);
    let _ = r.stop();
    promtool_accepts(&promtool, &page);
    for (prefix, rtts) in &want {
        let name = |suffix: &str, le: Option<&str>| match le {
            Some(le) => {
                format!("rampart_prefix_rtt_seconds{suffix}{{prefix=\"{prefix}\",le=\"{le}\"}}")
            }
            None => format!("rampart_prefix_rtt_seconds{suffix}{{prefix=\"{prefix}\"}}"),
        };
        let count = series(&page, &name("_count", None));
        assert_eq!(count, Some(rtts.len() as f64), "{prefix}:\n{page}");
        for le in rampart_export::prometheus::RTT_BUCKETS {
            let below = rtts.iter().filter(|v| **v <= le).count() as f64;
            let got = series(&page, &name("_bucket", Some(&le.to_string())));
            assert_eq!(got, Some(below), "{prefix} le {le}");
        }
        let sum: f64 = rtts.iter().sum();
        let got = series(&page, &name("_sum", None)).unwrap();
        assert!((got - sum).abs() < 1e-6, "{prefix}: sum {got} vs {sum}");
    }
    assert!(!page.contains("prefix=\"other\""), "{page}");
}

#[test]
fn prometheus_answers_histogram_quantile_per_subnet() {
    const TEST: &str = "prometheus_answers_histogram_quantile_per_subnet";
    let Some(prometheus) = rampart_testkit::tool(TEST, "prometheus") else { return };
    let s = sample();
    let s = s.to_str().unwrap();
    // The true medians per prefix, from the samples of a plain run.
    let out = Command::new(env!("CARGO_BIN_EXE_rampart"))
        .args(["rtt", "-q", "--format", "json", "-r", s])
        .output()
        .unwrap();
    let mut rtts: std::collections::BTreeMap<&str, Vec<f64>> = Default::default();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let p = if v["src"].as_str().unwrap().contains(':') { "fd77::/48" } else { "10.77.0.0/24" };
        rtts.entry(p).or_default().push(v["rtt"].as_f64().unwrap());
    }
    let dir = temp();
    let (rport, pport) = (free_port(), free_port());
    let mut r = Daemon(
        Command::new(env!("CARGO_BIN_EXE_rampart"))
            .args(["rtt", "-q", "-r", s, "--aggregate", "--interval", "1"])
            .args(["--metrics", &format!("127.0.0.1:{rport}"), "--metrics-linger", "60"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\nscrape_configs:\n  - \
             job_name: rampart\n    static_configs: [{{targets: [\"127.0.0.1:{rport}\"]}}]\n"
        ),
    )
    .unwrap();
    let mut p = Daemon(
        Command::new(prometheus)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("tsdb").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{pport}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for("Prometheus to be ready", 30, || {
        http(pport, "/-/ready", None).is_some_and(|(s, _)| s == 200)
    });
    wait_for("rampart's final values in Prometheus", 30, || {
        query(pport, "rampart_run_ended").first() == Some(&1.0)
    });
    let bounds = rampart_export::prometheus::RTT_BUCKETS;
    for (prefix, v) in &mut rtts {
        v.sort_by(f64::total_cmp);
        let sel = format!("rampart_prefix_rtt_seconds_bucket{{prefix=\"{prefix}\"}}");
        let median = query(pport, &format!("histogram_quantile(0.5, {sel})"));
        let count =
            query(pport, &format!("rampart_prefix_rtt_seconds_count{{prefix=\"{prefix}\"}}"));
        assert_eq!(count, vec![v.len() as f64], "{prefix}");
        // Within the bucket of the true median (from the lower median's to the upper's).
        let n = v.len();
        let lo = bounds.iter().rev().find(|b| **b < v[(n - 1) / 2]).copied().unwrap_or(0.0);
        let hi = bounds.iter().find(|b| **b >= v[n / 2]).copied().unwrap_or(f64::INFINITY);
        assert!(
            median.first().is_some_and(|m| (lo..=hi).contains(m)),
            "{prefix}: histogram_quantile(0.5) {median:?}, the samples' median {} in ({lo}, {hi}]",
            v[n / 2]
        );
    }
    let _ = r.stop();
    let _ = p.stop();
}
