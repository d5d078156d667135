//! Telemetry from a live capture, on a veth pair between two network namespaces each test
//! creates, with known traffic sent across (UDP datagrams, HTTP exchanges):
//!
//! * `rampart flows -i IFACE -s SECONDS --metrics ADDR:PORT` scraped by a real Prometheus
//!   (Debian's `prometheus`, every second, inside the capturing namespace): its last value of
//!   `rampart_packets_total` must equal the packet count of rampart's summary,
//!   `rate(rampart_packets_total)` must have been above zero while the run went on, and the
//!   flow counters must equal the records rampart wrote.
//! * `rampart rtt -i IFACE --aggregate`: rows come out while the capture runs, once the clock
//!   has passed their interval (the link quiet by then), and agree with the samples a second
//!   `rampart rtt` on the same interface printed.
//!
//! Needs root (namespaces, CAP_NET_RAW), `ip`, `python3` and `curl` (and `prometheus` for the
//! first); without them a test says why in one line and passes, or fails under
//! `RAMPART_REQUIRE_TOOLS=1`. The namespaces, and everything running in them, are removed when
//! a test ends, also when it fails. Addresses: 10.232.40.0/24 and 10.232.41.0/24.

mod common;

use common::Daemon;
use common::sh;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Two namespaces joined by a veth pair (a0 in `a`, b0 in `b`), deleted with whatever runs in
/// them when dropped.
struct Pair {
    a: String,
    b: String,
    /// The pair's /24 inside 10.232.0.0/16: a is .1, b is .2.
    net: u8,
}

impl Pair {
    fn new(tag: &str, net: u8) -> Self {
        let id = std::process::id();
        let p = Self { a: format!("rm{id}{tag}a"), b: format!("rm{id}{tag}b"), net };
        let (a, b) = (&p.a, &p.b);
        sh(&format!(
            "ip netns add {a}; ip netns add {b}
             ip -n {a} link set lo up; ip -n {b} link set lo up
             ip link add a0 netns {a} type veth peer name b0 netns {b}
             ip -n {a} addr add 10.232.{net}.1/24 dev a0
             ip -n {b} addr add 10.232.{net}.2/24 dev b0
             ip netns exec {a} sysctl -qw net.ipv6.conf.a0.disable_ipv6=1 || true
             ip netns exec {b} sysctl -qw net.ipv6.conf.b0.disable_ipv6=1 || true
             ip -n {a} link set a0 up; ip -n {b} link set b0 up"
        ));
        p
    }

    /// `program` inside namespace `ns`.
    fn cmd(ns: &str, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, program]);
        c
    }

    /// Sends `n` UDP datagrams from a to b, spread over `ports` destination ports from `port`.
    fn udp(&self, n: u32, port: u16, ports: u16) {
        let script = format!(
            "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
             for i in range({n}):\n    s.sendto(b'x' * 18, ('10.232.{}.2', {port} + i % {ports}))\n",
            self.net
        );
        assert!(Self::cmd(&self.a, "python3").args(["-c", &script]).status().unwrap().success());
    }

    /// An instant query to the Prometheus listening on 127.0.0.1:9090 in b: one value per
    /// series (empty when there is none).
    fn query(&self, q: &str) -> Vec<f64> {
        let out = Self::cmd(&self.b, "curl")
            .args(["-s", "-m", "5", "--data-urlencode", &format!("query={q}")])
            .arg("http://127.0.0.1:9090/api/v1/query")
            .output()
            .unwrap();
        let body = String::from_utf8_lossy(&out.stdout);
        let v: serde_json::Value =
            serde_json::from_str(&body).unwrap_or_else(|_| panic!("{q}: {body}"));
        assert_eq!(v["status"], "success", "{q}: {body}");
        v["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["value"][1].as_str().unwrap().parse::<f64>().unwrap())
            .collect()
    }

    /// An HTTP server in b on port 8080 serving `index.html` (20,000 bytes), until dropped.
    fn http_server(&self, www: &std::path::Path) -> Daemon {
        std::fs::write(www.join("index.html"), "x".repeat(20_000)).unwrap();
        Daemon(
            Self::cmd(&self.b, "python3")
                .args(["-m", "http.server", "8080", "--bind", &format!("10.232.{}.2", self.net)])
                .current_dir(www)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        )
    }

    /// Fetches the server's page from a: whether it answered 200.
    fn fetch(&self) -> bool {
        let out = Self::cmd(&self.a, "curl")
            .args(["-s", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}"])
            .arg(format!("http://10.232.{}.2:8080/index.html", self.net))
            .output()
            .unwrap();
        out.stdout == b"200"
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        for n in [&self.a, &self.b] {
            common::delete_namespace(n);
        }
    }
}

/// Whether the machine can run `test`; if not it is skipped (one line), or fails under
/// `RAMPART_REQUIRE_TOOLS`.
fn can_run(test: &str, tools: &[&str]) -> bool {
    if !nix::unistd::geteuid().is_root() {
        rampart_testkit::skip(
            rampart_testkit::REQUIRE_TOOLS,
            test,
            "not root (it creates network namespaces and needs CAP_NET_RAW)",
        );
        return false;
    }
    tools.iter().all(|t| rampart_testkit::tool(test, t).is_some())
}

fn wait_for(what: &str, until: Instant, mut ok: impl FnMut() -> bool) {
    while !ok() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn interrupt(child: &std::process::Child) {
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
}

#[test]
fn prometheus_scrapes_a_live_capture_and_agrees_with_its_summary() {
    let test = "prometheus_scrapes_a_live_capture_and_agrees_with_its_summary";
    if !can_run(test, &["ip", "python3", "curl", "prometheus"]) {
        return;
    }
    let started = Instant::now();
    let deadline = started + Duration::from_secs(55);
    let dir = tempfile::Builder::new().prefix("rampart-live-metrics").tempdir().unwrap();
    let p = Pair::new("p", 40);

    // Prometheus in b, scraping rampart's endpoint there every second.
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n  - \
         job_name: rampart\n    static_configs: [{targets: [\"127.0.0.1:9464\"]}]\n",
    )
    .unwrap();
    let _prometheus = Daemon(
        Pair::cmd(&p.b, "prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("tsdb").display()))
            .arg("--web.listen-address=127.0.0.1:9090")
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(dir.path().join("prom.log")).unwrap()))
            .spawn()
            .unwrap(),
    );
    let ready = || {
        Pair::cmd(&p.b, "curl")
            .args(["-sf", "-m", "2", "-o", "/dev/null", "http://127.0.0.1:9090/-/ready"])
            .status()
            .is_ok_and(|s| s.success())
    };
    wait_for("Prometheus to be ready", deadline, ready);

    // An HTTP server in b for the TCP exchange.
    let www = tempfile::tempdir().unwrap();
    let _server = p.http_server(www.path());

    // rampart in b, capturing on b0 for 15 s, then serving its final values.
    let records = dir.path().join("flows.json");
    let stderr = dir.path().join("rampart.err");
    let rampart = Pair::cmd(&p.b, env!("CARGO_BIN_EXE_rampart"))
        .args(["flows", "-i", "b0", "-s", "15", "-o"])
        .arg(&records)
        .args(["--metrics", "127.0.0.1:9464", "--metrics-linger", "30"])
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&stderr).unwrap()))
        .spawn()
        .unwrap();
    let mut rampart = Daemon(rampart);
    let run_started = Instant::now();
    wait_for("a first scrape of rampart", deadline, || !p.query("up == 1").is_empty());
    let scraped = run_started.elapsed();

    // Known traffic, in steps a second and a half apart, so scrapes see the counter grow.
    p.udp(300, 7000, 3);
    std::thread::sleep(Duration::from_millis(1500));
    p.udp(300, 7100, 3);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(p.fetch(), "the HTTP exchange failed");
    let sent = run_started.elapsed();
    assert!(
        sent < Duration::from_secs(14),
        "traffic sent after the run ended ({sent:?}; first scrape after {scraped:?})"
    );

    wait_for("rampart's final values in Prometheus", deadline, || {
        p.query("rampart_run_ended").first() == Some(&1.0)
    });
    // Two more scrapes of the final values.
    std::thread::sleep(Duration::from_millis(2500));
    let packets = p.query("rampart_packets_total");
    let rate_during_run = p.query(
        "max_over_time((rate(rampart_packets_total[3s]) and rampart_run_ended == 0)[1m:1s])",
    );
    let ended = p.query("sum(rampart_flows_ended_total)");
    let created = p.query("rampart_flows_created_total");
    let udp_rate = p.query("max_over_time(rate(rampart_packets_total[3s])[1m:1s])");
    let mut by_reason = BTreeMap::new();
    for reason in ["idle", "fin", "rst", "evicted", "end"] {
        let v = p.query(&format!("rampart_flows_ended_total{{reason=\"{reason}\"}}"));
        by_reason.insert(reason.to_string(), v.first().copied().unwrap_or(f64::NAN));
    }

    // rampart's own account: Ctrl-C ends the linger; the summary came before it.
    interrupt(&rampart.0);
    wait_for("rampart to exit", deadline, || rampart.0.try_wait().unwrap().is_some());
    let status = rampart.0.wait().unwrap();
    let err = std::fs::read_to_string(&stderr).unwrap();
    assert!(status.success(), "{err}");
    let line = err.lines().find(|l| l.starts_with("b0: ")).unwrap_or_else(|| panic!("{err}"));
    let total: u64 = line[4..].split(' ').next().unwrap().parse().unwrap();
    let text = std::fs::read_to_string(&records).unwrap();
    let recs: Vec<serde_json::Value> =
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut written = BTreeMap::new();
    for r in &recs {
        *written.entry(r["end_reason"].as_str().unwrap().to_string()).or_insert(0.0) += 1.0;
    }
    eprintln!(
        "live metrics: rampart_packets_total {packets:?} (summary {total}), peak rate during the \
         run {rate_during_run:?}/s, {} records, flows ended {ended:?}, created {created:?}; \
         first scrape {scraped:?} and traffic sent {sent:?} after rampart started; whole test \
         {:?}",
        recs.len(),
        started.elapsed()
    );

    assert_eq!(packets, vec![total as f64], "rampart_packets_total against the summary: {err}");
    // The known traffic was seen: 600 datagrams and the HTTP exchange, every one in a record.
    let udp: f64 = recs
        .iter()
        .filter(|r| r["proto"] == "udp" && (7000..7200).contains(&r["dport"].as_u64().unwrap()))
        .map(|r| r["packets_fwd"].as_f64().unwrap())
        .sum();
    assert_eq!(udp, 600.0, "{text}");
    assert!(
        recs.iter().any(|r| {
            r["proto"] == "tcp"
                && r["dport"] == 8080
                && r["bytes_rev"].as_u64().is_some_and(|b| b > 20_000)
        }),
        "no HTTP exchange in the records: {text}"
    );
    assert!(total >= 620, "{line}");
    assert!(
        rate_during_run.first().is_some_and(|r| *r > 0.0),
        "rate(rampart_packets_total) never above 0 while the run went on: {rate_during_run:?} \
         (at any time: {udp_rate:?})"
    );
    // Flow counters against the records written.
    assert_eq!(ended, vec![recs.len() as f64], "sum(rampart_flows_ended_total)");
    assert_eq!(created, vec![recs.len() as f64], "rampart_flows_created_total");
    for (reason, n) in &by_reason {
        assert_eq!(*n, written.get(reason).copied().unwrap_or(0.0), "reason {reason}: {written:?}");
    }
    assert!(started.elapsed() < Duration::from_secs(60), "took {:?}", started.elapsed());
}

/// The lines a child writes on its standard output, each with the wall-clock time it was read.
fn collect_lines(child: &mut std::process::Child) -> Arc<Mutex<Vec<(SystemTime, String)>>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let out = BufReader::new(child.stdout.take().unwrap());
    let into = Arc::clone(&lines);
    std::thread::spawn(move || {
        for l in out.lines().map_while(Result::ok) {
            into.lock().unwrap().push((SystemTime::now(), l));
        }
    });
    lines
}

/// Seconds since the epoch of a JSON number.
fn epoch(v: &serde_json::Value) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs_f64(v.as_f64().unwrap())
}

#[test]
fn live_aggregate_rows_come_out_as_intervals_end_and_agree_with_the_samples() {
    let test = "live_aggregate_rows_come_out_as_intervals_end_and_agree_with_the_samples";
    if !can_run(test, &["ip", "python3", "curl"]) {
        return;
    }
    let started = Instant::now();
    let deadline = started + Duration::from_secs(50);
    let p = Pair::new("r", 41);
    let www = tempfile::tempdir().unwrap();
    let _server = p.http_server(www.path());
    wait_for("the HTTP server", deadline, || p.fetch());
    // Two captures of the same interface: samples, and rows per /32 and 1 s interval.
    let spawn = |args: &[&str]| {
        Daemon(
            Pair::cmd(&p.b, env!("CARGO_BIN_EXE_rampart"))
                .args(["rtt", "-q", "-l", "-i", "b0"])
                .args(args)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    let mut samples = spawn(&["--format", "json"]);
    let mut agg = spawn(&["--aggregate", "32,128", "--interval", "1"]);
    let sample_lines = collect_lines(&mut samples.0);
    let rows = collect_lines(&mut agg.0);
    // Both captures must be running before the traffic that is compared (on a busy machine
    // one may start later): exchange until each has shown a sample or a row, then compare
    // only the intervals that begin after that.
    wait_for("both captures to see traffic", deadline, || {
        assert!(p.fetch(), "the HTTP exchange failed");
        std::thread::sleep(Duration::from_millis(500));
        !sample_lines.lock().unwrap().is_empty() && !rows.lock().unwrap().is_empty()
    });
    let since = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs() + 1;
    let from_us = since * 1_000_000;
    while SystemTime::now() < SystemTime::UNIX_EPOCH + Duration::from_secs(since) {
        std::thread::sleep(Duration::from_millis(50));
    }
    for _ in 0..3 {
        assert!(p.fetch(), "the HTTP exchange failed");
        std::thread::sleep(Duration::from_millis(700));
    }
    // The link is quiet now: the clock closes the last interval with samples a second after
    // its end, with no packet to push it out.
    let last_end = |lines: &[(SystemTime, String)]| {
        let (_, l) = lines.last()?;
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let t = Duration::from_secs_f64(v["time"].as_f64().unwrap()).as_secs();
        Some(SystemTime::UNIX_EPOCH + Duration::from_secs(t + 1))
    };
    let mut end = None;
    wait_for("the samples", deadline, || {
        end = last_end(&sample_lines.lock().unwrap());
        end.is_some()
    });
    let end = end.unwrap();
    wait_for("the row of the last interval", deadline, || {
        rows.lock().unwrap().iter().any(|(_, l)| {
            let r: serde_json::Value = serde_json::from_str(l).unwrap();
            epoch(&r["end"]) >= end
        })
    });
    std::thread::sleep(Duration::from_millis(300));
    let during = rows.lock().unwrap().clone();
    for (read, l) in &during {
        let r: serde_json::Value = serde_json::from_str(l).unwrap();
        // Never before the interval ended; the last one's rows (no later sample to close it)
        // a second after (the live grace), by the clock; none more than 10 s after.
        let after = read.duration_since(epoch(&r["end"]));
        assert!(after.is_ok(), "{l} read before its end");
        let after = after.unwrap();
        if epoch(&r["end"]) >= end {
            assert!(after >= Duration::from_millis(900), "{l} read {after:?} after its end");
        }
        assert!(after < Duration::from_secs(10), "{l} read {after:?} after its end");
    }
    interrupt(&samples.0);
    interrupt(&agg.0);
    wait_for("both captures to end", deadline, || {
        samples.0.try_wait().unwrap().is_some() && agg.0.try_wait().unwrap().is_some()
    });
    std::thread::sleep(Duration::from_millis(200));
    // Every row was out before Ctrl-C: the link was quiet since.
    let all = rows.lock().unwrap().clone();
    assert_eq!(all.len(), during.len(), "rows written at the end: {all:?}");
    // The rows against the samples: per (interval start in µs, src/32), count, min and max (ns).
    let mut want: BTreeMap<(u64, String), Vec<u64>> = BTreeMap::new();
    for (_, l) in sample_lines.lock().unwrap().iter() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let t = (v["time"].as_f64().unwrap() * 1e6).round() as u64;
        let rtt = (v["rtt"].as_f64().unwrap() * 1e9).round() as u64;
        let key = (t - t % 1_000_000, format!("{}/32", v["src"].as_str().unwrap()));
        want.entry(key).or_default().push(rtt);
    }
    let mut got = BTreeMap::new();
    for (_, l) in &all {
        let r: serde_json::Value = serde_json::from_str(l).unwrap();
        let start = (r["start"].as_f64().unwrap() * 1e6).round() as u64;
        let ns = |k: &str| (r[k].as_f64().unwrap() * 1e6).round() as u64;
        let key = (start, r["prefix"].as_str().unwrap().to_string());
        got.insert(key, (r["count"].as_u64().unwrap(), ns("min_ms"), ns("max_ms")));
    }
    want.retain(|(start, _), _| *start >= from_us);
    got.retain(|(start, _), _| *start >= from_us);
    let want: BTreeMap<_, _> = want
        .into_iter()
        .map(|(k, v)| (k, (v.len() as u64, *v.iter().min().unwrap(), *v.iter().max().unwrap())))
        .collect();
    eprintln!(
        "live aggregate: {} rows from {} samples in {:?}",
        got.len(),
        want.values().map(|v| v.0).sum::<u64>(),
        started.elapsed()
    );
    assert!(!want.is_empty());
    // The same counts. Each capture's socket stamps a packet's time as it is handed the
    // packet, so two captures' RTTs differ by microseconds, more on a busy machine: the
    // values themselves are checked against the samples on capture files (tests/rtt.rs).
    // A sample within microseconds of a second's boundary may fall on either side of it, so
    // counts are compared per prefix over the run.
    let per_prefix = |m: &BTreeMap<(u64, String), (u64, u64, u64)>| {
        let mut t: BTreeMap<String, u64> = BTreeMap::new();
        for ((_, p), v) in m {
            *t.entry(p.clone()).or_default() += v.0;
        }
        t
    };
    assert_eq!(per_prefix(&got), per_prefix(&want), "{got:?} against the samples {want:?}");
    assert!(got.values().all(|(_, min, max)| min <= max), "{got:?}");
}
