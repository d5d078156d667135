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
    let out =
        interrupted_while_reading(sample(), &["flows", "-r", "-"], Duration::from_millis(500));
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("interrupted"), "{err}");
    let n = packets_in(&out.stdout);
    assert!(n > 300 && n < 3226, "{n} packets written");
}

/// A classic pcap record of an Ethernet/IPv4/UDP packet from port `sport` at `secs`.
fn udp_record(secs: u32, sport: u16) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 20 + 8 + 4];
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    f[14] = 0x45;
    f[16..18].copy_from_slice(&32u16.to_be_bytes());
    f[22] = 64;
    f[23] = 17;
    f[26..30].copy_from_slice(&[10, 0, 0, 1]);
    f[30..34].copy_from_slice(&[10, 0, 0, 2]);
    f[34..36].copy_from_slice(&sport.to_be_bytes());
    f[36..38].copy_from_slice(&53u16.to_be_bytes());
    f[38..40].copy_from_slice(&12u16.to_be_bytes());
    let mut r = Vec::new();
    for v in [secs, 0, f.len() as u32, f.len() as u32] {
        r.extend_from_slice(&v.to_le_bytes());
    }
    r.extend_from_slice(&f);
    r
}

#[test]
fn records_are_written_as_flows_end_on_a_stream() {
    // Hardening item 3: on a stream, a flow's record comes out when the flow ends, not when
    // the input does.
    let mut child = Command::new(env!("CARGO_BIN_EXE_rampart"))
        .args(["flows", "-q", "-r", "-", "--flow-timeout", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut header = Vec::new();
    for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 1] {
        header.extend_from_slice(&v.to_le_bytes());
    }
    stdin.write_all(&header).unwrap();
    stdin.write_all(&udp_record(1000, 1111)).unwrap();
    stdin.flush().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    // Ten seconds later in capture time: the first flow has been idle past the timeout.
    stdin.write_all(&udp_record(1010, 2222)).unwrap();
    stdin.flush().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::Read;
        let mut buf = [0u8; 4096];
        let n = stdout.read(&mut buf).unwrap_or(0);
        let _ = tx.send(String::from_utf8_lossy(&buf[..n]).into_owned());
    });
    let first = rx.recv_timeout(Duration::from_secs(10));
    drop(stdin);
    let _ = child.wait();
    let first = first.expect("the ended flow's record is written while the input is still open");
    assert!(
        first.contains("\"sport\":1111") && first.contains("\"end_reason\":\"idle\""),
        "{first}"
    );
    assert!(!first.contains("\"sport\":2222"), "the live flow is not written yet: {first}");
}

/// A classic pcap record of an Ethernet/IPv4/TCP segment 10.0.0.1:40000 <-> 10.0.0.2:80.
fn tcp_record(usecs: u64, reply: bool, flags: u8) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 20 + 20];
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    f[14] = 0x45;
    f[16..18].copy_from_slice(&40u16.to_be_bytes());
    f[22] = 64;
    f[23] = 6;
    let (a, b, pa, pb) = ([10, 0, 0, 1], [10, 0, 0, 2], 40000u16, 80u16);
    let (src, dst, sp, dp) = if reply { (b, a, pb, pa) } else { (a, b, pa, pb) };
    f[26..30].copy_from_slice(&src);
    f[30..34].copy_from_slice(&dst);
    f[34..36].copy_from_slice(&sp.to_be_bytes());
    f[36..38].copy_from_slice(&dp.to_be_bytes());
    f[46] = 0x50;
    f[47] = flags;
    let mut r = Vec::new();
    for v in [(usecs / 1_000_000) as u32, (usecs % 1_000_000) as u32, 54, 54] {
        r.extend_from_slice(&v.to_le_bytes());
    }
    r.extend_from_slice(&f);
    r
}

#[test]
fn tcp_close_ends_a_record() {
    // Hardening item 4: a connection closed by a FIN each way, or reset, ends after the linger
    // (5 s by default), not the idle timeout; a new SYN on the same ports starts a new record.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("close.pcap");
    let mut pcap = Vec::new();
    for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 1] {
        pcap.extend_from_slice(&v.to_le_bytes());
    }
    let t0 = 1_700_000_000_000_000u64;
    for (dt, reply, flags) in [
        (0, false, 0x02),
        (1_000, true, 0x12),
        (2_000, false, 0x10),
        (3_000, false, 0x11),
        (4_000, true, 0x11),
        (5_000, false, 0x10),
        // 8 s later: reopened, then reset.
        (8_000_000, false, 0x02),
        (8_001_000, true, 0x14),
    ] {
        pcap.extend_from_slice(&tcp_record(t0 + dt, reply, flags));
    }
    pcap.extend_from_slice(&udp_record(1_700_000_020, 5353));
    std::fs::write(&path, &pcap).unwrap();
    let out = rampart(&["flows", "-r", path.to_str().unwrap()]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let reasons: Vec<&str> = text
        .lines()
        .map(|l| l.split("\"end_reason\":\"").nth(1).unwrap().split('"').next().unwrap())
        .collect();
    assert_eq!(reasons, ["fin", "rst", "end"], "{text}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("1 closed (FIN), 1 reset (RST)"), "{err}");
    // With a linger longer than the capture, the records run to the end of input.
    let out = rampart(&["flows", "-q", "--tcp-linger", "60", "-r", path.to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.matches("\"end_reason\":\"fin\"").count(), 1, "the reopening SYN ends it");
    assert_eq!(text.matches("\"end_reason\":\"end\"").count(), 2, "{text}");
}

#[test]
fn memory_stays_where_the_summary_says() {
    // Hardening item 5: crafted TLS flows that all buffer at once are held to --dpi-memory,
    // and the summary says what the process holds.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tls.pcap");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    rampart_testkit::flood::write(&mut f, rampart_testkit::flood::Kind::Tls, 3000, 10).unwrap();
    f.flush().unwrap();
    drop(f);
    let out =
        rampart(&["flows", "--dpi-memory", "1", "-o", "/dev/null", "-r", path.to_str().unwrap()]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let capped = err.lines().find(|l| l.contains("--dpi-memory was reached")).expect(&err);
    let n: u64 = capped.split_whitespace().find_map(|w| w.parse().ok()).unwrap();
    assert!(n > 2000, "{err}");
    let apps = err.lines().find(|l| l.contains("applications:")).unwrap();
    let mib: f64 = apps.rsplit(", ").next().unwrap().trim_end_matches(" MiB").parse().unwrap();
    assert!(mib < 1.6, "identification held {mib} MiB with a 1 MiB budget: {err}");
    assert!(err.contains("  memory: peak "), "{err}");
}
