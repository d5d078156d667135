//! `rampart flows --format parquet -o DIR`, read back the way users read it: DuckDB over the
//! whole directory with Hive partitioning. The flows it finds, run by run, are the JSON
//! records of the same runs (counts, packet and byte sums, timestamps to the microsecond); a
//! second run adds files and changes none; a directory of other files is refused. Several
//! inputs (`-r` repeated, `-r DIR`) give the records of each input in turn.
//!
//! DuckDB is the Python package (`python3 -m pip install duckdb`, as `.ci/run` does); without
//! it the DuckDB checks are skipped with one line, or fail under `RAMPART_REQUIRE_TOOLS`.
#![cfg(feature = "parquet")]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn sample() -> String {
    repo().join("samples/mixed.pcap").to_str().unwrap().to_owned()
}

/// A flow's identity: proto, src, sport, dst, dport, first (µs since the epoch).
type Key = (String, String, u64, String, u64, i64);
/// Records with that key, then packets and bytes each way summed, and `last` (µs) summed.
type Sums = [i64; 6];

/// Whether Python's duckdb package imports; otherwise one skip line (a failure under
/// `RAMPART_REQUIRE_TOOLS`).
fn duckdb(test: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import duckdb"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        rampart_testkit::skip(
            rampart_testkit::REQUIRE_TOOLS,
            test,
            "the Python package duckdb is not installed (python3 -m pip install duckdb)",
        );
    }
    ok
}

/// Epoch seconds as JSON writes them (`1700000000.000001`) in microseconds, exactly.
fn micros(text: &str) -> i64 {
    let (s, f) = text.split_once('.').unwrap();
    assert_eq!(f.len(), 6, "{text}");
    s.parse::<i64>().unwrap() * 1_000_000 + f.parse::<i64>().unwrap()
}

/// The raw text of a JSON number field in a record line.
fn raw<'a>(line: &'a str, field: &str) -> &'a str {
    let at = line.find(&format!("\"{field}\":")).unwrap() + field.len() + 3;
    let rest = &line[at..];
    &rest[..rest.find([',', '}']).unwrap()]
}

/// JSON records grouped by flow.
fn json_sums(json: &[u8]) -> BTreeMap<Key, Sums> {
    let mut m: BTreeMap<Key, Sums> = BTreeMap::new();
    for line in std::str::from_utf8(json).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let proto = match &v["proto"] {
            serde_json::Value::String(s) => s.clone(),
            n => n.to_string(),
        };
        let key = (
            proto,
            v["src"].as_str().unwrap().to_owned(),
            v["sport"].as_u64().unwrap(),
            v["dst"].as_str().unwrap().to_owned(),
            v["dport"].as_u64().unwrap(),
            micros(raw(line, "first")),
        );
        let s = m.entry(key).or_default();
        s[0] += 1;
        for (i, f) in ["packets_fwd", "bytes_fwd", "packets_rev", "bytes_rev"].iter().enumerate() {
            s[i + 1] += v[f].as_i64().unwrap();
        }
        s[5] += micros(raw(line, "last"));
    }
    m
}

/// DuckDB's reading of the dataset under `dir`, grouped by run (the file name's run id) and
/// flow; also checks that the partition columns match each row's `first`.
fn duckdb_sums(dir: &Path) -> BTreeMap<String, BTreeMap<Key, Sums>> {
    let script = r#"
import duckdb, json, sys
glob = sys.argv[1] + '/**/*.parquet'
c = duckdb.connect()
src = f"read_parquet('{glob}', hive_partitioning=true, filename=true)"
bad = c.sql(f"""SELECT count(*) FROM {src}
    WHERE date <> CAST(first AT TIME ZONE 'UTC' AS DATE)
       OR CAST(hour AS INTEGER) <> hour(first AT TIME ZONE 'UTC')""").fetchall()[0][0]
if bad:
    sys.exit(f"{bad} rows in the wrong partition")
types = dict((r[0], r[1]) for r in c.sql(f"DESCRIBE SELECT * FROM {src}").fetchall())
assert types['first'] == 'TIMESTAMP WITH TIME ZONE', types['first']
assert types['bytes_fwd'] == 'BIGINT' and types['sport'] == 'INTEGER', types
assert types['src_ip_bin'] == 'BLOB' and types['date'] == 'DATE', types
rows = c.sql(f"""SELECT regexp_extract(filename, 'part-(.*)-[0-9]+\\.parquet$', 1) AS run,
    proto, src, sport, dst, dport, epoch_us(first), count(*),
    sum(packets_fwd), sum(bytes_fwd), sum(packets_rev), sum(bytes_rev), sum(epoch_us(last))
    FROM {src} GROUP BY ALL""").fetchall()
for r in rows:
    print(json.dumps([str(x) for x in r]))
"#;
    let out = Command::new("python3").args(["-c", script, dir.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut runs: BTreeMap<String, BTreeMap<Key, Sums>> = BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let r: Vec<String> = serde_json::from_str(line).unwrap();
        let n = |i: usize| r[i].parse::<i64>().unwrap();
        let key = (r[1].clone(), r[2].clone(), n(3) as u64, r[4].clone(), n(5) as u64, n(6));
        let sums = [n(7), n(8), n(9), n(10), n(11), n(12)];
        runs.entry(r[0].clone()).or_default().insert(key, sums);
    }
    runs
}

/// Every file under `dir` with its contents.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                out.insert(p, bytes);
            }
        }
    }
    out
}

fn run_ok(args: &[&str]) -> Vec<u8> {
    let out = rampart(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

#[test]
fn two_runs_into_one_dataset_read_in_duckdb_as_the_json_records() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = tmp.path().join("ds");
    let dss = ds.to_str().unwrap();
    let json = run_ok(&["flows", "-q", "-r", &sample()]);
    let want = json_sums(&json);
    assert_eq!(want.values().map(|s| s[0]).sum::<i64>(), 23);

    run_ok(&["flows", "-q", "-r", &sample(), "--format", "parquet", "-o", dss]);
    let before = snapshot(&ds);
    assert!(before.keys().any(|p| p.ends_with("_rampart_dataset")));
    let parts: Vec<_> =
        before.keys().filter(|p| p.extension().is_some_and(|e| e == "parquet")).collect();
    assert_eq!(parts.len(), 1, "{parts:?}");
    let rel = parts[0].strip_prefix(&ds).unwrap().to_str().unwrap().to_owned();
    assert!(rel.starts_with("date=2026-11-23/hour=00/part-"), "{rel}");

    run_ok(&["flows", "-q", "-r", &sample(), "--format", "parquet", "-o", dss]);
    let after = snapshot(&ds);
    // Every file of the first run is still there, byte for byte; the second added one.
    for (p, bytes) in &before {
        assert_eq!(after.get(p), Some(bytes), "{} changed", p.display());
    }
    assert_eq!(after.len(), before.len() + 1);
    assert!(after.keys().all(|p| !p.to_string_lossy().ends_with(".tmp")));

    if !duckdb("two_runs_into_one_dataset_read_in_duckdb_as_the_json_records") {
        return;
    }
    let runs = duckdb_sums(&ds);
    assert_eq!(runs.len(), 2, "{:?}", runs.keys());
    for (run, got) in &runs {
        assert_eq!(got, &want, "run {run}");
    }
}

#[test]
fn several_inputs_give_each_input_s_records_in_turn() {
    let test = "several_inputs_give_each_input_s_records_in_turn";
    let Some(other) = rampart_testkit::shared(test, "pcaps/rtt/rtt20-small.pcap") else {
        return;
    };
    let other = other.to_str().unwrap().to_owned();
    let a = run_ok(&["flows", "-q", "-r", &sample()]);
    let b = run_ok(&["flows", "-q", "-r", &other]);
    // Each file is its own run of the flow table: the records of both are those of each,
    // one after the other, in the order given.
    let both = run_ok(&["flows", "-q", "-r", &sample(), "-r", &other]);
    assert_eq!(both, [a.clone(), b.clone()].concat());
    // A directory: its capture files by name (anything else in it is not read).
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("archive");
    std::fs::create_dir(&dir).unwrap();
    std::os::unix::fs::symlink(&other, dir.join("a.pcap")).unwrap();
    std::os::unix::fs::symlink(sample(), dir.join("b.pcap")).unwrap();
    std::fs::write(dir.join("README.txt"), "not a capture").unwrap();
    let by_dir = run_ok(&["flows", "-q", "-r", dir.to_str().unwrap()]);
    assert_eq!(by_dir, [b.clone(), a.clone()].concat());
    let csv = run_ok(&["flows", "-q", "--format", "csv", "-r", &sample(), "-r", &other]);
    assert_eq!(
        String::from_utf8(csv).unwrap().lines().filter(|l| l.starts_with("proto,")).count(),
        1
    );

    let ds = tmp.path().join("ds");
    run_ok(&[
        "flows",
        "-q",
        "-r",
        &sample(),
        "-r",
        &other,
        "--format",
        "parquet",
        "-o",
        ds.to_str().unwrap(),
    ]);
    if !duckdb(test) {
        return;
    }
    let runs = duckdb_sums(&ds);
    assert_eq!(runs.len(), 1, "{:?}", runs.keys());
    let got = runs.into_values().next().unwrap();
    let mut want = json_sums(&a);
    for (k, s) in json_sums(&b) {
        let e = want.entry(k).or_default();
        for i in 0..6 {
            e[i] += s[i];
        }
    }
    assert_eq!(got, want);
}

#[test]
fn a_directory_of_other_files_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    std::fs::create_dir_all(dir.join("date=2026-11-23/hour=00")).unwrap();
    let stray = dir.join("date=2026-11-23/hour=00/flows.csv");
    std::fs::write(&stray, "proto\n").unwrap();
    let out = rampart(&[
        "flows",
        "-q",
        "-r",
        &sample(),
        "--format",
        "parquet",
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(stray.to_str().unwrap()) && err.contains("refusing"), "{err}");
    assert_eq!(snapshot(&dir).len(), 1, "nothing written");
    // A file, and no directory at all.
    let out = rampart(&[
        "flows",
        "-q",
        "-r",
        &sample(),
        "--format",
        "parquet",
        "-o",
        stray.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a directory"));
    let out = rampart(&["flows", "-q", "-r", &sample(), "--format", "parquet"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("-o DIR"));
}

#[test]
fn an_output_that_is_a_later_input_is_refused_before_it_is_opened() {
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("copy.pcap");
    std::fs::copy(sample(), &copy).unwrap();
    let c = copy.to_str().unwrap();
    let out = rampart(&["flows", "-q", "-r", &sample(), "-r", c, "-o", c]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("refusing to write over it"));
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(sample()).unwrap());
}

/// Ctrl-C while packets still arrive on `-r -`: every file is closed under its final name,
/// complete (Parquet's footer magic), holding the flows seen; the run exits 0.
#[test]
fn ctrl_c_closes_the_files_with_the_flows_seen() {
    use std::time::Duration;
    let tmp = tempfile::tempdir().unwrap();
    let ds = tmp.path().join("ds");
    let out = interrupted_while_reading(
        sample(),
        &["flows", "-r", "-", "--format", "parquet", "-o", ds.to_str().unwrap()],
        Duration::from_millis(500),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    let files = snapshot(&ds);
    assert!(files.keys().all(|p| !p.to_string_lossy().ends_with(".tmp")), "{files:?}");
    let parts: Vec<_> =
        files.iter().filter(|(p, _)| p.extension().is_some_and(|e| e == "parquet")).collect();
    assert_eq!(parts.len(), 1, "{:?}", files.keys());
    assert!(parts[0].1.starts_with(b"PAR1") && parts[0].1.ends_with(b"PAR1"));
    if !duckdb("ctrl_c_closes_the_files_with_the_flows_seen") {
        return;
    }
    let packets: i64 =
        duckdb_sums(&ds).values().flat_map(|m| m.values()).map(|s| s[1] + s[3]).sum();
    assert!(packets > 300 && packets < 3226, "{packets} packets written");
}

/// `--active-timeout` into a dataset: DuckDB's sums per `uid` (records, packets and bytes
/// each way, first and last packet) over the interim and final rows are each flow's plain
/// JSON record, and the interim rows say `active`; rows go to the hour of their own `first`.
#[test]
fn interim_rows_add_up_per_uid_in_duckdb() {
    let test = "interim_rows_add_up_per_uid_in_duckdb";
    let tmp = tempfile::tempdir().unwrap();
    let ds = tmp.path().join("ds");
    let dss = ds.to_str().unwrap();
    let s = sample();
    run_ok(&["flows", "-q", "-r", &s, "--format", "parquet", "-o", dss, "--active-timeout", "1"]);
    let json = run_ok(&["flows", "-q", "-r", &s, "--active-timeout", "1"]);
    let interim = String::from_utf8_lossy(&json).matches("\"end_reason\":\"active\"").count();
    assert!(interim >= 10);
    let plain = run_ok(&["flows", "-q", "-r", &s]);
    let mut want: BTreeMap<String, [i64; 7]> = BTreeMap::new();
    for line in std::str::from_utf8(&plain).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let n = |k: &str| v[k].as_i64().unwrap();
        let sums = [
            1,
            n("packets_fwd"),
            n("bytes_fwd"),
            n("packets_rev"),
            n("bytes_rev"),
            micros(raw(line, "first")),
            micros(raw(line, "last")),
        ];
        want.insert(v["uid"].as_str().unwrap().to_owned(), sums);
    }
    if !duckdb(test) {
        return;
    }
    let script = r#"
import duckdb, json, sys
c = duckdb.connect()
src = f"read_parquet('{sys.argv[1]}/**/*.parquet', hive_partitioning=true)"
bad = c.sql(f"""SELECT count(*) FROM {src}
    WHERE date <> CAST(first AT TIME ZONE 'UTC' AS DATE)
       OR CAST(hour AS INTEGER) <> hour(first AT TIME ZONE 'UTC')""").fetchall()[0][0]
assert bad == 0, bad
print(json.dumps(c.sql(f"SELECT count(*) FROM {src} WHERE end_reason = 'active'").fetchall()[0][0]))
for r in c.sql(f"""SELECT uid, count(*), sum(packets_fwd), sum(bytes_fwd), sum(packets_rev),
        sum(bytes_rev), min(epoch_us(first)), max(epoch_us(last)) FROM {src} GROUP BY uid""").fetchall():
    print(json.dumps([str(x) for x in r]))
"#;
    let out = Command::new("python3").args(["-c", script, dss]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next().unwrap().parse::<usize>().unwrap(), interim);
    let mut got: BTreeMap<String, [i64; 7]> = BTreeMap::new();
    for line in lines {
        let r: Vec<String> = serde_json::from_str(line).unwrap();
        let n = |i: usize| r[i].parse::<i64>().unwrap();
        got.insert(r[0].clone(), [1, n(2), n(3), n(4), n(5), n(6), n(7)]);
        assert!(n(1) >= 1);
    }
    assert_eq!(got, want);
}
