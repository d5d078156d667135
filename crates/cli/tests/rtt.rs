//! `rampart rtt` against ground truth: pping's own output on the shared captures (byte for
//! byte), the injected delays of the bundled sample, and the options' contracts.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{rampart, repo, shared_data};
use rampart_capture::Capture;

fn sample() -> String {
    repo().join("samples/mixed.pcap").display().to_string()
}

fn stdout(args: &[&str]) -> String {
    let out = rampart(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `rampart rtt --compat pping` with `extra` arguments and `TZ=UTC`.
fn compat(file: &Path, extra: &[&str]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_rampart"))
        .args(["rtt", "--compat", "pping", "-q", "-r"])
        .arg(file)
        .args(extra)
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// Compares whole outputs, reporting the first differing line.
fn same(got: &[u8], want: &[u8], what: &str) {
    if got != want {
        let (g, w) = (String::from_utf8_lossy(got), String::from_utf8_lossy(want));
        let at = g.lines().zip(w.lines()).position(|(a, b)| a != b);
        panic!(
            "{what}: output differs ({} lines vs {} expected); first difference at line {:?}: {:?} vs {:?}",
            g.lines().count(),
            w.lines().count(),
            at.map(|i| i + 1),
            at.and_then(|i| g.lines().nth(i)),
            at.and_then(|i| w.lines().nth(i)),
        );
    }
}

#[test]
fn compat_is_byte_identical_to_pping_on_every_shared_capture() {
    let Some(data) = shared_data("compat_is_byte_identical_to_pping_on_every_shared_capture")
    else {
        return;
    };
    let dir = data.join("pcaps/rtt");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let (stem, args): (&str, &[&str]) = if let Some(s) = name.strip_suffix(".pping-m.txt") {
            (s, &["-m"])
        } else if let Some(s) = name.strip_suffix(".pping.txt") {
            (s, &[])
        } else {
            continue;
        };
        let pcap = dir.join(format!("{stem}.pcap"));
        same(&compat(&pcap, args), &std::fs::read(&path).unwrap(), &name);
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} expected outputs found in {}", dir.display());
}

#[test]
fn compat_is_byte_identical_to_pping_on_the_benchmark_capture() {
    let Some(data) = shared_data("compat_is_byte_identical_to_pping_on_the_benchmark_capture")
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let unzst = |name: &str| -> PathBuf {
        let out = tmp.path().join(name.trim_end_matches(".zst"));
        let ok = Command::new("zstd")
            .args(["-q", "-d", "-o"])
            .arg(&out)
            .arg(data.join("pcaps/bench").join(name))
            .status()
            .expect("zstd is installed (.ci/run installs it)");
        assert!(ok.success());
        out
    };
    let pcap = unzst("rtt-bench.pcap.zst");
    let want = std::fs::read(unzst("rtt-bench.pping-m.txt.zst")).unwrap();
    assert_eq!(want.iter().filter(|&&b| b == b'\n').count(), 107_199);
    same(&compat(&pcap, &["-m"]), &want, "rtt-bench");
}

/// Writes `frames` of `src` as pcapng, one interface, timestamps in nanoseconds.
fn to_pcapng(src: &Path, dst: &Path) {
    let mut cap = Capture::open(src).unwrap();
    let mut out = Vec::new();
    let block = |out: &mut Vec<u8>, kind: u32, body: &[u8]| {
        let len = 12 + body.len().next_multiple_of(4);
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(&(len as u32).to_le_bytes());
        out.extend_from_slice(body);
        out.resize(out.len() + body.len().next_multiple_of(4) - body.len(), 0);
        out.extend_from_slice(&(len as u32).to_le_bytes());
    };
    let mut shb = Vec::new();
    shb.extend_from_slice(&0x1a2b_3c4du32.to_le_bytes());
    shb.extend_from_slice(&[1, 0, 0, 0]);
    shb.extend_from_slice(&(-1i64).to_le_bytes());
    block(&mut out, 0x0a0d_0d0a, &shb);
    let mut link = None;
    loop {
        let batch = cap.next_batch(256).unwrap();
        if batch.is_empty() {
            break;
        }
        for f in batch.iter() {
            if link.is_none() {
                link = Some(f.link);
                let mut idb = Vec::new();
                idb.extend_from_slice(&(f.link.to_linktype() as u16).to_le_bytes());
                idb.extend_from_slice(&[0, 0]);
                idb.extend_from_slice(&0u32.to_le_bytes());
                // if_tsresol = 9 (nanoseconds), then the end of options.
                idb.extend_from_slice(&[9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0]);
                block(&mut out, 1, &idb);
            }
            let mut epb = Vec::new();
            epb.extend_from_slice(&0u32.to_le_bytes());
            epb.extend_from_slice(&((f.ts.as_nanos() >> 32) as u32).to_le_bytes());
            epb.extend_from_slice(&(f.ts.as_nanos() as u32).to_le_bytes());
            epb.extend_from_slice(&f.caplen().to_le_bytes());
            epb.extend_from_slice(&f.origlen.to_le_bytes());
            epb.extend_from_slice(f.data);
            block(&mut out, 6, &epb);
        }
    }
    std::fs::write(dst, out).unwrap();
}

#[test]
fn compat_reads_pcapng_as_it_reads_pcap() {
    let Some(data) = shared_data("compat_reads_pcapng_as_it_reads_pcap") else { return };
    let tmp = tempfile::tempdir().unwrap();
    for stem in ["rtt-mixed", "rtt20-small-snap144"] {
        let ng = tmp.path().join(format!("{stem}.pcapng"));
        to_pcapng(&data.join(format!("pcaps/rtt/{stem}.pcap")), &ng);
        let want = std::fs::read(data.join(format!("pcaps/rtt/{stem}.pping-m.txt"))).unwrap();
        same(&compat(&ng, &["-m"]), &want, &format!("{stem}.pcapng"));
    }
}

#[test]
fn compat_output_does_not_depend_on_the_container() {
    let want = compat(Path::new(&sample()), &["-m"]);
    assert!(want.len() > 10_000);
    for f in ["tests/fixtures/mixed.pcapng", "tests/fixtures/mixed-nsec.pcap"] {
        same(&compat(&repo().join(f), &["-m"]), &want, f);
    }
}

/// Samples per `src` (the host the RTT runs to), in seconds.
fn by_src(json: &str) -> BTreeMap<String, Vec<f64>> {
    let mut m: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for line in json.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        for k in ["time", "rtt", "min_rtt", "sport", "dport"] {
            assert!(v[k].is_number(), "{k} in {line}");
        }
        for k in ["proto", "src", "dst", "method"] {
            assert!(v[k].is_string(), "{k} in {line}");
        }
        m.entry(v["src"].as_str().unwrap().to_owned())
            .or_default()
            .push(v["rtt"].as_f64().unwrap());
    }
    for v in m.values_mut() {
        v.sort_by(f64::total_cmp);
    }
    m
}

#[test]
fn default_mode_floors_match_the_injected_delays_without_think_time() {
    // samples/mixed.pcap: client 10.77.0.1/fd77::1 is 4 ms from the capture point; servers .2,
    // .3 and .4 are 5, 20 and 80 ms away (see samples/README.md). The delay bridge adds up to
    // about 0.6 ms.
    let m = by_src(&stdout(&["rtt", "--format", "json", "-q", "-r", &sample()]));
    for (host, ms) in [
        ("10.77.0.1", 4.0),
        ("10.77.0.2", 5.0),
        ("10.77.0.3", 20.0),
        ("10.77.0.4", 80.0),
        ("fd77::1", 4.0),
    ] {
        let v = &m[host];
        let floor = v[0] * 1e3;
        assert!(floor >= ms && floor < ms + 0.7, "{host}: floor {floor} ms, delay {ms} ms");
    }
    // pping's own samples reach 1 s here (application think time); timing data segments only,
    // the worst is a few delayed ACKs.
    let worst = m.values().flat_map(|v| v.last()).fold(0.0f64, |a, &b| a.max(b));
    assert!(worst < 0.2, "largest sample {worst} s");
    let ts = stdout(&["rtt", "--format", "json", "-q", "-r", &sample()]);
    assert!(ts.lines().all(|l| l.contains("\"method\":\"ts\"")), "every flow has timestamps");
}

#[test]
fn seq_mode_measures_the_same_paths() {
    let m = by_src(&stdout(&["rtt", "--mode", "seq", "--format", "json", "-q", "-r", &sample()]));
    for (host, ms) in [("10.77.0.2", 5.0), ("10.77.0.3", 20.0), ("10.77.0.4", 80.0)] {
        let floor = m[host][0] * 1e3;
        assert!(floor >= ms && floor < ms + 0.7, "{host}: floor {floor} ms, delay {ms} ms");
    }
    let out = stdout(&["rtt", "--mode", "seq", "--format", "json", "-q", "-r", &sample()]);
    assert!(out.lines().all(|l| l.contains("\"method\":\"seq\"")));
}

#[test]
fn machine_and_text_formats_follow_pping() {
    let m = stdout(&["rtt", "-m", "-q", "-r", &sample()]);
    let line = m.lines().next().unwrap();
    let f: Vec<&str> = line.split(' ').collect();
    assert_eq!(f.len(), 7, "{line}");
    assert!(f[0].split_once('.').is_some_and(|(_, us)| us.len() == 6), "{line}");
    assert!(f[6].contains('+'), "{line}");
    let t = Command::new(env!("CARGO_BIN_EXE_rampart"))
        .args(["rtt", "-q", "-r", &sample()])
        .env("TZ", "UTC")
        .output()
        .unwrap();
    let text = String::from_utf8(t.stdout).unwrap();
    assert!(text.lines().next().unwrap().split(' ').next().unwrap().len() == 8);
    assert_eq!(text.lines().count(), m.lines().count());
}

#[test]
fn summaries_give_each_direction_s_min_median_and_max() {
    let out = stdout(&["rtt", "--summary", "--format", "json", "-q", "-r", &sample()]);
    let mut seen = 0;
    for line in out.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["dst"] == "10.77.0.4" && v["rtt_dst_count"].as_u64().unwrap() > 0 {
            let (min, med, max) = (
                v["rtt_dst_min"].as_f64().unwrap(),
                v["rtt_dst_median"].as_f64().unwrap(),
                v["rtt_dst_max"].as_f64().unwrap(),
            );
            assert!((0.080..0.0807).contains(&min) && min <= med && med <= max, "{line}");
            seen += 1;
        }
    }
    assert!(seen > 0, "{out}");
    // The flow records carry the same fields.
    let flows = stdout(&["flows", "-q", "-r", &sample()]);
    let to4: Vec<serde_json::Value> = flows
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["dst"] == "10.77.0.4" && v["proto"] == "tcp")
        .collect();
    assert!(!to4.is_empty());
    assert!(
        to4.iter().any(|v| v["rtt_dst_min"].as_f64().is_some_and(|m| (0.080..0.0807).contains(&m)))
    );
    assert!(to4.iter().all(|v| v["rtt_src_count"].is_number()));
}

#[test]
fn filter_expressions_go_through_libpcap() {
    if !common::libpcap("filter_expressions_go_through_libpcap") {
        return;
    }
    let out = stdout(&["rtt", "-m", "-q", "-f", "host 10.77.0.4", "-r", &sample()]);
    assert!(!out.is_empty());
    assert!(out.lines().all(|l| l.contains("10.77.0.4")), "{out}");
    let c =
        stdout(&["rtt", "--compat", "pping", "-m", "-q", "-f", "host 10.77.0.4", "-r", &sample()]);
    assert!(!c.is_empty() && c.lines().all(|l| l.contains("10.77.0.4")));
    let bad = rampart(&["rtt", "-f", "tcp and port", "-r", &sample()]);
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("syntax error") && err.contains("tcp and port"), "{err}");
    let flows = stdout(&["flows", "-q", "-f", "icmp", "-r", &sample()]);
    assert!(flows.lines().all(|l| l.contains("\"proto\":\"icmp\"")), "{flows}");
}

#[test]
fn a_filter_without_libpcap_names_the_package() {
    // The loader is pointed at a file that does not exist, as on a machine without libpcap.
    let out = Command::new(env!("CARGO_BIN_EXE_rampart"))
        .args(["flows", "-q", "-f", "tcp", "-r", &sample()])
        .env("RAMPART_LIBPCAP", "/nonexistent/libpcap.so.0.8")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("libpcap") && err.contains("apt-get install libpcap0.8"), "{err}");
    // Without -f the same command needs no library.
    let out = Command::new(env!("CARGO_BIN_EXE_rampart"))
        .args(["flows", "-q", "-r", &sample()])
        .env("RAMPART_LIBPCAP", "/nonexistent/libpcap.so.0.8")
        .output()
        .unwrap();
    assert!(out.status.success() && !out.stdout.is_empty());
}

#[test]
fn count_and_seconds_stop_early() {
    let out = rampart(&["rtt", "-c", "100", "-r", &sample()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(": 100 packets"), "{err}");
    let all = stdout(&["rtt", "-m", "-q", "-r", &sample()]).lines().count();
    let one = stdout(&["rtt", "-m", "-q", "-s", "1", "-r", &sample()]).lines().count();
    assert!(one > 0 && one < all, "{one} of {all}");
    // pping's -s prints its summary and the capture seconds.
    let c = rampart(&["rtt", "--compat", "pping", "-m", "-s", "1", "-r", &sample()]);
    let err = String::from_utf8_lossy(&c.stderr);
    assert!(err.contains("First packet at") && err.contains("Captured "), "{err}");
}

#[test]
fn live_capture_errors_name_the_interface() {
    let out = rampart(&["rtt", "-i", "no-such-if0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("'no-such-if0'"));
    let both = rampart(&["rtt", "-i", "lo", "-r", &sample()]);
    assert_eq!(both.status.code(), Some(2));
}

#[test]
fn bad_captures_keep_what_was_printed() {
    let bytes = std::fs::read(sample()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let cut = tmp.path().join("cut.pcap");
    std::fs::write(&cut, &bytes[..bytes.len() - 777]).unwrap();
    let whole = stdout(&["rtt", "-m", "-q", "-r", &sample()]);
    for compat in [false, true] {
        let mut args = vec!["rtt", "-m", "-q", "-r", cut.to_str().unwrap()];
        if compat {
            args.extend(["--compat", "pping"]);
        }
        let out = rampart(&args);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("cut.pcap") && err.contains("offset"), "{err}");
        assert!(!out.stdout.is_empty());
        if !compat {
            assert!(whole.starts_with(&*String::from_utf8_lossy(&out.stdout)));
        }
    }
    let junk = tmp.path().join("junk.pcap");
    std::fs::write(&junk, b"this is not a capture at all").unwrap();
    assert_eq!(rampart(&["rtt", "-r", junk.to_str().unwrap()]).status.code(), Some(2));
}

/// One `--aggregate` row's key: interval start (µs since the epoch) and prefix.
type RowKey = (u64, String);

/// A JSON number with at most `decimals` places (and 16 significant digits), scaled to an
/// integer (`1.5`, 3 → 1500).
fn scaled(v: &serde_json::Value, decimals: i32) -> u64 {
    (v.as_f64().unwrap_or_else(|| panic!("{v} is not a number")) * 10f64.powi(decimals)).round()
        as u64
}

/// The prefix of `addr` as the aggregation names it.
fn prefix(addr: &str, v4: u32, v6: u32) -> String {
    match addr.parse::<std::net::IpAddr>().unwrap() {
        std::net::IpAddr::V4(a) => {
            let m = if v4 == 0 { 0 } else { u32::MAX << (32 - v4) };
            format!("{}/{v4}", std::net::Ipv4Addr::from(u32::from(a) & m))
        }
        std::net::IpAddr::V6(a) => {
            let m = if v6 == 0 { 0 } else { u128::MAX << (128 - v6) };
            format!("{}/{v6}", std::net::Ipv6Addr::from(u128::from(a) & m))
        }
    }
}

/// Per-sample JSON grouped as `--aggregate` groups it: RTTs (ns, sorted) per interval of
/// `secs` and prefix of `side` (`src` or `dst`).
fn group_samples(
    json: &str,
    secs: u64,
    side: &str,
    v4: u32,
    v6: u32,
) -> BTreeMap<RowKey, Vec<u64>> {
    let mut m: BTreeMap<RowKey, Vec<u64>> = BTreeMap::new();
    for l in json.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let t = scaled(&v["time"], 6);
        let start = t - t % (secs * 1_000_000);
        let p = prefix(v[side].as_str().unwrap(), v4, v6);
        m.entry((start, p)).or_default().push(scaled(&v["rtt"], 9));
    }
    m.values_mut().for_each(|v| v.sort_unstable());
    m
}

/// Checks `--aggregate` rows against the samples of the same run: the same (interval,
/// prefix) rows, equal counts, min, max and mean, median and 95th percentile (nearest rank)
/// within 1/128 of the samples', bins that add up to the count.
fn check_rows(rows: &str, want: &BTreeMap<RowKey, Vec<u64>>, secs: u64, side: &str) {
    let mut seen = BTreeMap::new();
    for l in rows.lines() {
        let r: serde_json::Value = serde_json::from_str(l).unwrap();
        let start = scaled(&r["start"], 6);
        assert_eq!(scaled(&r["end"], 6), start + secs * 1_000_000, "{l}");
        assert_eq!(start % (secs * 1_000_000), 0, "{l}");
        assert_eq!(r["by"], side, "{l}");
        let key = (start, r["prefix"].as_str().unwrap().to_string());
        let v = want.get(&key).unwrap_or_else(|| panic!("no samples for {key:?}: {l}"));
        let n = v.len() as u64;
        assert_eq!(r["count"].as_u64(), Some(n), "{l}");
        let ms = |k: &str| scaled(&r[k], 6);
        assert_eq!(ms("min_ms"), v[0], "{l}");
        assert_eq!(ms("max_ms"), v[v.len() - 1], "{l}");
        let mean = v.iter().sum::<u64>() as f64 / n as f64;
        assert!((ms("mean_ms") as f64 - mean).abs() <= 0.5, "{l}: mean {mean}");
        for (k, pct) in [("median_ms", 50), ("p95_ms", 95)] {
            let truth = v[(n * pct).div_ceil(100).max(1) as usize - 1];
            let est = ms(k);
            assert!(
                (est as f64 - truth as f64).abs() <= truth as f64 / 128.0,
                "{k} {est} vs the samples' {truth}: {l}"
            );
        }
        let bins = r["bins_ns"].as_array().unwrap();
        assert_eq!(bins.iter().map(|b| b[2].as_u64().unwrap()).sum::<u64>(), n, "{l}");
        for b in bins {
            let (lo, hi) = (b[0].as_u64().unwrap(), b[1].as_u64().unwrap());
            assert!(lo < hi && (hi - lo == 1 || (hi - lo) * 64 <= lo), "{l}");
        }
        assert!(seen.insert(key, ()).is_none(), "a row twice: {l}");
    }
    let missing: Vec<_> = want.keys().filter(|k| !seen.contains_key(*k)).collect();
    assert!(missing.is_empty(), "prefixes with samples but no row: {missing:?}");
}

/// `--aggregate` over `file`, checked against the same run's per-sample JSON, with one
/// worker and with three (the same bytes), by `src` and by `dst`.
fn aggregate_matches_samples(file: &str, secs: u64, min_rows: usize) {
    let samples = stdout(&["rtt", "--format", "json", "-q", "-r", file]);
    assert!(!samples.is_empty());
    let interval = secs.to_string();
    for (side, lens, (v4, v6)) in [("src", "24,48", (24, 48)), ("dst", "32,128", (32, 128))] {
        let args = ["rtt", "-q", "-r", file, "--aggregate", lens, "--interval", &interval];
        let by = ["--aggregate-by", side];
        let rows = stdout(&[&args[..], &by].concat());
        let want = group_samples(&samples, secs, side, v4, v6);
        assert!(want.len() >= min_rows, "{file}: {} rows", want.len());
        check_rows(&rows, &want, secs, side);
        let workers = stdout(&[&args[..], &by, &["--workers", "3"]].concat());
        assert_eq!(rows, workers, "--workers 3 differs from one worker");
    }
    // /0 puts every family's samples in one row per interval.
    let rows = stdout(&["rtt", "-q", "-r", file, "--aggregate", "0,0", "--interval", &interval]);
    check_rows(&rows, &group_samples(&samples, secs, "src", 0, 0), secs, "src");
}

#[test]
fn aggregate_rows_agree_with_the_samples_of_the_same_run() {
    aggregate_matches_samples(&sample(), 1, 10);
    // One interval holds the whole capture by default (10 s, 5.3 s of packets).
    let rows = stdout(&["rtt", "-q", "-r", &sample(), "--aggregate"]);
    let prefixes: Vec<String> = rows
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["prefix"].to_string())
        .collect();
    assert_eq!(prefixes, ["\"10.77.0.0/24\"", "\"fd77::/48\""]);
}

#[test]
fn aggregate_rows_agree_with_the_samples_on_the_shared_captures() {
    let test = "aggregate_rows_agree_with_the_samples_on_the_shared_captures";
    let Some(data) = shared_data(test) else { return };
    let mut checked = 0;
    for name in ["rtt20-small.pcap", "rtt-mixed.pcap"] {
        let path = data.join("pcaps/rtt").join(name);
        if path.exists() {
            aggregate_matches_samples(&path.display().to_string(), 2, 2);
            checked += 1;
        }
    }
    assert!(checked > 0, "no RTT capture in {}", data.join("pcaps/rtt").display());
}

#[test]
fn aggregate_caps_prefixes_and_says_so() {
    let out = rampart(&["rtt", "-r", &sample(), "--aggregate", "32,128", "--aggregate-max", "2"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let rows: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows[2]["prefix"], "other");
    let other = rows[2]["count"].as_u64().unwrap();
    let all: u64 = rows.iter().map(|r| r["count"].as_u64().unwrap()).sum();
    assert_eq!(all, 531);
    assert!(
        err.contains(&format!(
            "{other} samples of prefixes beyond --aggregate-max 2 counted in 'other' rows"
        )),
        "{err}"
    );
    assert!(err.contains("  aggregated: 3 rows over 1 interval of 10 s (/32 and /128 by src)"));
}

#[test]
fn aggregate_options_are_checked() {
    for (args, says) in [
        (&["--aggregate", "33,48"][..], "'33' is not an IPv4 prefix length (0 to 32)"),
        (&["--aggregate", "24,129"], "'129' is not an IPv6 prefix length (0 to 128)"),
        (&["--aggregate", "24"], "is not V4LEN,V6LEN"),
        (&["--aggregate", "--interval", "0"], "is not an interval in seconds"),
        (&["--aggregate", "--aggregate-max", "0"], "--aggregate-max"),
        (&["--interval", "5"], "--aggregate"),
        (&["--aggregate", "-m"], "--aggregate writes JSON lines"),
        (&["--aggregate", "--format", "text"], "--aggregate writes JSON lines"),
        (&["--aggregate", "--summary"], "cannot be used with"),
        (&["--aggregate", "--compat", "pping"], "cannot be used with"),
    ] {
        let s = sample();
        let out = rampart(&[&["rtt", "-q", "-r", &s][..], args].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(out.stdout.is_empty() && !err.contains("panicked"), "{args:?}: {err}");
    }
}

/// Ctrl-C while packets are still arriving: the open interval's rows are written, so the
/// rows count every sample the summary reports.
#[test]
fn ctrl_c_writes_the_open_interval() {
    use std::time::Duration;
    let out = common::interrupted_while_reading(
        sample(),
        &["rtt", "-r", "-", "--aggregate", "--interval", "60"],
        Duration::from_millis(700),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    let samples: u64 = err
        .split(" RTT samples")
        .next()
        .and_then(|h| h.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    let counted: u64 = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["count"].as_u64().unwrap())
        .sum();
    assert!(samples > 0 && samples < 531, "{err}");
    assert_eq!(counted, samples, "{err}");
    assert!(err.contains(" over 1 interval of 60 s (/24 and /48 by src)"), "{err}");
}
