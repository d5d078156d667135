//! `rampart flows` as a user runs it: formats, inputs, limits, and bad input.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;

fn sample() -> String {
    repo().join("samples/mixed.pcap").to_str().unwrap().to_owned()
}

fn fixture(name: &str) -> String {
    repo().join("tests/fixtures").join(name).to_str().unwrap().to_owned()
}

fn stdout_of(args: &[&str]) -> Vec<u8> {
    let out = rampart(args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

fn packets_in(json: &[u8]) -> u64 {
    group_json(json).values().map(|c| c[0] + c[2]).sum()
}

#[test]
fn pcapng_and_nanosecond_copies_give_the_same_flows() {
    let want = stdout_of(&["flows", "-q", "-r", &sample()]);
    assert_eq!(packets_in(&want), 3226);
    for copy in ["mixed.pcapng", "mixed-nsec.pcap"] {
        let got = stdout_of(&["flows", "-q", "-r", &fixture(copy)]);
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&want), "{copy}");
    }
}

#[test]
fn standard_input_reads_like_a_file() {
    let want = stdout_of(&["flows", "-q", "-r", &sample()]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_rampart"))
        .args(["flows", "-q", "-r", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let bytes = std::fs::read(sample()).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for chunk in bytes.chunks(1000) {
            stdin.write_all(chunk).unwrap();
        }
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout, want);
}

#[test]
fn csv_has_the_json_columns() {
    let out = stdout_of(&["flows", "-q", "--format", "csv", "-r", &sample()]);
    let text = String::from_utf8(out).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    for col in [
        "proto",
        "src",
        "sport",
        "dst",
        "dport",
        "packets_fwd",
        "bytes_fwd",
        "packets_rev",
        "bytes_rev",
        "first",
        "last",
    ] {
        assert!(header.contains(&col), "{col} missing from {header:?}");
    }
    let json = stdout_of(&["flows", "-q", "-r", &sample()]);
    assert_eq!(lines.count(), json.split(|b| *b == b'\n').filter(|l| !l.is_empty()).count());
}

/// Every record names its application; `--dpi off` leaves the fields out of JSON and the
/// cells empty in CSV; a summary line counts the labels.
#[test]
fn records_carry_applications_unless_turned_off() {
    let on = String::from_utf8(stdout_of(&["flows", "-q", "-r", &sample()])).unwrap();
    let lines: Vec<&str> = on.lines().collect();
    assert!(lines.iter().all(|l| l.contains("\"app\":\"") && l.contains("\"app_by\":\"")));
    // The sample's curl requests (cut at 144 bytes, so the host is not always captured), its
    // pings, and iperf3, which nothing names.
    assert!(lines.iter().any(|l| l.contains("\"app\":\"HTTP\",\"app_by\":\"dpi\"")), "{on}");
    assert!(
        lines.iter().any(|l| l.contains("\"proto\":\"icmp6\"") && l.contains("\"app\":\"ICMPV6\""))
    );
    assert!(
        lines.iter().any(|l| l.contains("\"dport\":5201,")
            && l.contains("\"app\":\"Unknown\",\"app_by\":\"none\""))
    );
    let off =
        String::from_utf8(stdout_of(&["flows", "-q", "--dpi", "off", "-r", &sample()])).unwrap();
    assert_eq!(off.lines().count(), lines.len());
    assert!(!off.contains("\"app"));
    let csv = String::from_utf8(stdout_of(&[
        "flows",
        "-q",
        "--dpi",
        "off",
        "--format",
        "csv",
        "-r",
        &sample(),
    ]))
    .unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let app = header.iter().position(|c| *c == "app").unwrap();
    assert!(csv.lines().skip(1).all(|l| l.split(',').nth(app) == Some("")));
    let out = rampart(&["flows", "-o", "/dev/null", "-r", &sample()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("applications: 15 by their packets"), "{err}");
    // A budget outside the allowed range is refused.
    let bad = rampart(&["flows", "--dpi-tcp-packets", "0", "-r", &sample()]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn count_limits_the_packets_read() {
    let out = stdout_of(&["flows", "-q", "-c", "100", "-r", &sample()]);
    assert_eq!(packets_in(&out), 100);
}

#[test]
fn a_small_table_evicts_without_losing_packets() {
    let out = rampart(&["flows", "--max-flows", "2", "-r", &sample()]);
    assert!(out.status.success());
    assert_eq!(packets_in(&out.stdout), 3226);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"end_reason\":\"evicted\""));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("evicted") && err.contains("3226 packets"), "{err}");
}

#[test]
fn a_short_timeout_splits_flows_but_keeps_every_packet() {
    let out = stdout_of(&["flows", "-q", "--flow-timeout", "0.5", "-r", &sample()]);
    assert!(String::from_utf8_lossy(&out).contains("\"end_reason\":\"idle\""));
    assert_eq!(packets_in(&out), 3226);
}

#[test]
fn not_a_capture_exits_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("notes.txt");
    std::fs::write(&p, "these are not packets\n").unwrap();
    let out = rampart(&["flows", "-r", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("notes.txt") && err.contains("not a capture file"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(out.stdout.is_empty());

    let e = dir.path().join("empty.pcap");
    std::fs::write(&e, "").unwrap();
    let out = rampart(&["flows", "-r", e.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("empty.pcap: empty file"));

    let out = rampart(&["flows", "-r", dir.path().join("missing.pcap").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.pcap"));
}

#[test]
fn a_cut_off_file_writes_the_flows_seen_and_names_the_offset() {
    let bytes = std::fs::read(sample()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cut.pcap");
    std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    let out = rampart(&["flows", "-r", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cut.pcap: byte offset ") && err.contains("cut off"), "{err}");
    // Every complete record before the cut is in the output.
    let n = packets_in(&out.stdout);
    let whole = rampart(&["flows", "-q", "-c", &n.to_string(), "-r", &sample()]);
    assert_eq!(out.stdout, whole.stdout);
    assert!(n > 1000, "{n}");
}

#[test]
fn a_record_longer_than_libpcap_accepts_is_corrupt() {
    let mut bytes = std::fs::read(sample()).unwrap();
    // Make the third record claim 300,000 bytes: past libpcap's 256 KiB, whatever the snap
    // length (records merely longer than the file's snap length are read: see capture.rs).
    let mut off = 24;
    for _ in 0..2 {
        let caplen = u32::from_le_bytes(bytes[off + 8..off + 12].try_into().unwrap());
        off += 16 + caplen as usize;
    }
    bytes[off + 8..off + 12].copy_from_slice(&300_000u32.to_le_bytes());
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("long.pcap");
    std::fs::write(&p, &bytes).unwrap();
    let out = rampart(&["flows", "-r", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "long.pcap: byte offset {off}: record length 300000 exceeds 262144, the largest"
        )),
        "{err}"
    );
    assert_eq!(packets_in(&out.stdout), 2);
}

#[test]
fn bad_options_are_refused() {
    for args in [
        &["flows", "-r", "x.pcap", "--format", "xml"][..],
        &["flows", "-r", "x.pcap", "--max-flows", "0"],
        &["flows", "-r", "x.pcap", "--flow-timeout", "-3"],
        &["flows", "-r", "x.pcap", "--frobnicate"],
    ] {
        let out = rampart(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rampart"))
        .args(["flows", "-q", "--flow-timeout", "0.01", "-r", &sample()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Ctrl-C while packets are still arriving: the run stops and writes every flow seen.
#[test]
fn ctrl_c_flushes_the_flows_seen() {
    let bytes = std::fs::read(sample()).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rampart"))
        .args(["flows", "-r", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    // Feed the header and the first records, then keep the pipe open and trickle more, as a
    // live `tcpdump -w -` would.
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&bytes[..60_000]);
        for chunk in bytes[60_000..].chunks(200) {
            std::thread::sleep(Duration::from_millis(20));
            if stdin.write_all(chunk).is_err() {
                return;
            }
        }
        std::thread::sleep(Duration::from_secs(30));
    });
    std::thread::sleep(Duration::from_millis(500));
    let pid = nix::unistd::Pid::from_raw(pid as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    drop(feeder);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("interrupted"), "{err}");
    let n = packets_in(&out.stdout);
    assert!(n > 300 && n < 3226, "{n} packets written");
}
