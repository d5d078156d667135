//! Capture input an operator can trust, through every command that reads captures: an output
//! is never written over its own input, a capture that shrinks or is rewritten while it is
//! read ends with an error naming the file and offset (and every record so far), and records
//! are read as libpcap reads them, with what could not be taken as it is said once.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use rampart_capture::{LinkType, PcapWriter, Timestamp};

fn sample() -> PathBuf {
    repo().join("samples/mixed.pcap")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// An Ethernet/IPv4/UDP frame from 10.0.(i>>8).(i&255):sport to 10.1.0.1:53 with `payload`
/// bytes of payload.
fn udp_frame(i: u32, sport: u16, payload: usize) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 20 + 8 + payload];
    f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&((20 + 8 + payload) as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 0, (i >> 8) as u8, i as u8]);
    ip[16..20].copy_from_slice(&[10, 1, 0, 1]);
    let udp = &mut f[34..42];
    udp[0..2].copy_from_slice(&sport.to_be_bytes());
    udp[2..4].copy_from_slice(&53u16.to_be_bytes());
    udp[4..6].copy_from_slice(&((8 + payload) as u16).to_be_bytes());
    f
}

/// A capture of `n` one-packet UDP flows 10 ms apart, so that with `--flow-timeout 1` records
/// come out all along the run.
fn many_flows(path: &Path, n: u32) {
    let out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = PcapWriter::new(out, LinkType::Ethernet, 65_535, false).unwrap();
    for i in 0..n {
        let f = udp_frame(i % 65_000, 1024 + (i / 65_000) as u16, 40);
        let ts = Timestamp::from_nanos(1_700_000_000_000_000_000 + u64::from(i) * 10_000_000);
        w.write(ts, f.len() as u32, &f).unwrap();
    }
    w.into_inner().unwrap();
}

fn json_lines(out: &[u8]) -> Vec<serde_json::Value> {
    std::str::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn an_output_that_is_the_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("x.pcap");
    std::fs::copy(sample(), &cap).unwrap();
    let want = std::fs::read(&cap).unwrap();
    let hard = dir.path().join("hard.pcap");
    std::fs::hard_link(&cap, &hard).unwrap();
    let soft = dir.path().join("soft.pcap");
    std::os::unix::fs::symlink(&cap, &soft).unwrap();
    let dotted = dir.path().join(".").join("x.pcap");
    let rules = dir.path().join("rules.txt");
    std::fs::write(&rules, "table filter {\n  default accept\n}\n").unwrap();
    for out in [&cap, &hard, &soft, &dotted] {
        for args in [
            vec!["flows", "-r", s(&cap), "-o", s(out)],
            vec!["flows", "-r", s(out), "-o", s(&cap)],
            vec!["filter", "-r", s(&cap), "--rules", s(&rules), "-w", s(out)],
        ] {
            let o = rampart(&args);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains("is the input capture itself; refusing"), "{args:?}: {err}");
            assert_eq!(std::fs::read(&cap).unwrap(), want, "{args:?} changed the input");
        }
    }
    // Standard output appended to the input (`>> x.pcap`), for the commands that write there.
    for args in [
        vec!["flows", "-q", "-r"],
        vec!["rtt", "-q", "-r"],
        vec!["dpi", "label", "-r"],
        vec!["rss", "balance", "--queues", "4", "-r"],
    ] {
        let append = std::fs::OpenOptions::new().append(true).open(&cap).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_rampart"))
            .args(&args)
            .arg(&hard)
            .stdout(append)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("the output (standard output) is the input"), "{args:?}: {err}");
        assert_eq!(std::fs::read(&cap).unwrap(), want, "{args:?} changed the input");
    }
    // A different file is fine, and so is standard input read from the file with -o elsewhere.
    let o = rampart(&["flows", "-q", "-r", s(&cap), "-o", s(&dir.path().join("f.json"))]);
    assert!(o.status.success());
    let o = Command::new(env!("CARGO_BIN_EXE_rampart"))
        .args(["flows", "-q", "-r", "-", "-o", s(&cap)])
        .stdin(std::fs::File::open(&hard).unwrap())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(&cap).unwrap(), want);
}

/// Runs `flows ARGS` on `cap` with its output held back (so it blocks on a full pipe), cuts the
/// file to `cut` bytes from another thread, then lets the output flow. The run must end with
/// status 1 and an error naming the file and an offset, with every record complete.
fn truncate_while_reading(
    cap: &Path,
    cut: u64,
    as_user: Option<&str>,
    args: &[&str],
) -> (String, Vec<u8>) {
    let mut cmd = match as_user {
        Some(u) => {
            let mut c = Command::new("setpriv");
            c.args([&format!("--reuid={u}"), &format!("--regid={u}"), "--clear-groups"]);
            c.arg(env!("CARGO_BIN_EXE_rampart"));
            c
        }
        None => Command::new(env!("CARGO_BIN_EXE_rampart")),
    };
    let mut child = cmd
        .args(["flows", "--flow-timeout", "1", "-r", s(cap)])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Records fill the pipe within the first thousand packets; rampart then waits to write.
    std::thread::sleep(Duration::from_millis(1500));
    let path = cap.to_path_buf();
    // Opening for writing waits for a mapped reader's lease; a buffered reader is not waited
    // for.
    let cutter = std::thread::spawn(move || {
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(cut).unwrap();
    });
    std::thread::sleep(Duration::from_millis(500));
    let mut stdout = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut stdout).unwrap();
    let out = child.wait_with_output().unwrap();
    cutter.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "killed by a signal? {:?}: {err}", out.status);
    (err, stdout)
}

/// The offset an error names, checking the run's records against it: every packet before it is
/// in a complete record.
fn check_records_before(err: &str, stdout: &[u8], size: u64) {
    let at: u64 = err
        .split("t.pcap: byte offset ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no offset: {err}"));
    assert!(at > 24 && at <= size / 2 + 100, "{at}: {err}");
    assert!(err.contains("the flows seen before that point were written"), "{err}");
    let records = json_lines(stdout);
    let packets: u64 = records.iter().map(|r| r["packets_fwd"].as_u64().unwrap()).sum();
    assert_eq!(packets, (at - 24) / (16 + 82), "{err}");
}

#[test]
fn a_capture_truncated_while_it_is_read_ends_with_an_error_not_a_signal() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("t.pcap");
    many_flows(&cap, 200_000);
    let size = std::fs::metadata(&cap).unwrap().len();
    // One thread reads through a buffer: reading stops where the bytes ran out.
    let (err, stdout) = truncate_while_reading(&cap, size / 2, None, &[]);
    assert_eq!(std::fs::metadata(&cap).unwrap().len(), size / 2, "the truncation went through");
    assert!(
        err.contains(&format!(
            "the file shrank while it was read ({size} bytes when opened, {} now)",
            size / 2
        )),
        "{err}"
    );
    check_records_before(&err, &stdout, size);
}

#[test]
fn a_capture_truncated_while_workers_read_it_ends_with_an_error_not_a_signal() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("t.pcap");
    let n = 200_000;
    many_flows(&cap, n);
    let size = std::fs::metadata(&cap).unwrap().len();
    // Workers read the file through buffers handed to them: reading stops where the bytes ran
    // out, as with one thread, and every record before that point is complete.
    let (err, stdout) = truncate_while_reading(&cap, size / 2, None, &["--workers", "2"]);
    assert_eq!(std::fs::metadata(&cap).unwrap().len(), size / 2, "the truncation went through");
    assert!(
        err.contains(&format!(
            "the file shrank while it was read ({size} bytes when opened, {} now)",
            size / 2
        )),
        "{err}"
    );
    check_records_before(&err, &stdout, size);
}

#[test]
fn a_capture_of_another_user_is_read_by_workers_too() {
    // Another user reading a root-owned file (no lease could be had on it): workers read it
    // through buffers, which need none.
    if !nix::unistd::geteuid().is_root() {
        rampart_testkit::skip(
            rampart_testkit::REQUIRE_DATA,
            "a_capture_of_another_user_is_read_by_workers_too",
            "not root (it runs rampart as another user with setpriv)",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .unwrap();
    let cap = dir.path().join("t.pcap");
    many_flows(&cap, 200_000);
    let size = std::fs::metadata(&cap).unwrap().len();
    let cut = size / 2 + 7;
    let (err, stdout) = truncate_while_reading(&cap, cut, Some("65534"), &["--workers", "2"]);
    assert!(
        err.contains(&format!(
            "the file shrank while it was read ({size} bytes when opened, {cut} now)"
        )),
        "{err}"
    );
    let records = json_lines(&stdout);
    let packets: u64 = records.iter().map(|r| r["packets_fwd"].as_u64().unwrap()).sum();
    assert_eq!(packets, (cut - 24) / (16 + 82));
}

/// A pcap with the given snap length in its header and records as given (captured bytes,
/// original length).
fn raw_pcap(link: u32, snaplen: u32, records: &[(Vec<u8>, u32)]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    b.extend_from_slice(&2u16.to_le_bytes());
    b.extend_from_slice(&4u16.to_le_bytes());
    b.extend_from_slice(&[0; 8]);
    b.extend_from_slice(&snaplen.to_le_bytes());
    b.extend_from_slice(&link.to_le_bytes());
    for (i, (data, origlen)) in records.iter().enumerate() {
        b.extend_from_slice(&(1_700_000_000 + i as u32).to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&(data.len() as u32).to_le_bytes());
        b.extend_from_slice(&origlen.to_le_bytes());
        b.extend_from_slice(data);
    }
    b
}

#[test]
fn records_longer_than_the_snap_length_are_read_by_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("long.pcap");
    // A header claiming 96 bytes, and records of 142 and 1,042 bytes.
    let recs: Vec<(Vec<u8>, u32)> = (0..4)
        .map(|i| {
            let f = udp_frame(i, 5000, if i % 2 == 0 { 100 } else { 1000 });
            let len = f.len() as u32;
            (f, len)
        })
        .collect();
    std::fs::write(&cap, raw_pcap(1, 96, &recs)).unwrap();
    let rules = dir.path().join("rules.txt");
    std::fs::write(&rules, "table filter {\n  default accept\n}\n").unwrap();
    let w = dir.path().join("out.pcap");
    for args in [
        vec!["flows", "-q", "-r", s(&cap)],
        vec!["rtt", "-q", "-r", s(&cap)],
        vec!["rtt", "--compat", "pping", "-q", "-r", s(&cap)],
        vec!["dpi", "label", "-r", s(&cap)],
        vec!["rss", "balance", "--queues", "4", "-r", s(&cap)],
        vec!["filter", "-r", s(&cap), "--rules", s(&rules), "-w", s(&w)],
    ] {
        let o = rampart(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{args:?}: {err}");
        assert!(
            err.contains("long.pcap: 4 records longer than the snap length the file declares"),
            "{args:?}: {err}"
        );
    }
    let o = rampart(&["flows", "-q", "-r", s(&cap)]);
    let bytes: u64 = json_lines(&o.stdout).iter().map(|r| r["bytes_fwd"].as_u64().unwrap()).sum();
    assert_eq!(bytes, 2 * 142 + 2 * 1042);
    // The filter wrote them whole.
    let o = rampart(&["flows", "-q", "-r", s(&w)]);
    let bytes: u64 = json_lines(&o.stdout).iter().map(|r| r["bytes_fwd"].as_u64().unwrap()).sum();
    assert_eq!(bytes, 2 * 142 + 2 * 1042);
}

#[test]
fn implausible_original_lengths_are_flagged_and_not_summed() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("orig.pcap");
    let f = udp_frame(1, 5000, 18);
    // Honest (60 on the wire), below the captured length, and 0xffffffff.
    let recs = vec![(f.clone(), 60), (f.clone(), 10), (f.clone(), u32::MAX)];
    std::fs::write(&cap, raw_pcap(1, 65_535, &recs)).unwrap();
    let o = rampart(&["flows", "-r", s(&cap)]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let r = json_lines(&o.stdout);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0]["bytes_fwd"].as_u64(), Some(60 + 60 + 60));
    assert!(err.contains("180 bytes on the wire"), "{err}");
    assert!(
        err.contains(
            "orig.pcap: 1 record with an original length below the captured length and 1 above \
             1 MiB: their captured length was counted instead"
        ),
        "{err}"
    );
}

#[test]
fn frames_of_link_types_rampart_does_not_parse_are_counted_and_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("ppp.pcap");
    // PPP (LINKTYPE_PPP, 9): address, control, protocol 0x0021 (IPv4), then the IP packet.
    let recs: Vec<(Vec<u8>, u32)> = (0..5)
        .map(|i| {
            let mut f = vec![0xff, 0x03, 0x00, 0x21];
            f.extend_from_slice(&udp_frame(i, 5000, 10)[14..]);
            let len = f.len() as u32;
            (f, len)
        })
        .collect();
    std::fs::write(&cap, raw_pcap(9, 65_535, &recs)).unwrap();
    let rules = dir.path().join("rules.txt");
    std::fs::write(&rules, "table filter {\n  default accept\n}\n").unwrap();
    let w = dir.path().join("out.pcap");
    for args in [
        vec!["flows", "-q", "-r", s(&cap)],
        vec!["rtt", "-q", "-r", s(&cap)],
        vec!["rtt", "--compat", "pping", "-r", s(&cap)],
        vec!["dpi", "label", "-r", s(&cap)],
        vec!["rss", "balance", "--queues", "4", "-r", s(&cap)],
        vec!["filter", "-r", s(&cap), "--rules", s(&rules), "-w", s(&w)],
    ] {
        let o = rampart(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{args:?}: {err}");
        let line = "ppp.pcap: 5 frames of link type 9 (PPP) not analysed: rampart does not parse";
        assert_eq!(err.matches(line).count(), 1, "{args:?}: {err}");
    }
    // The filter could not apply its rules: it passes none of them on, and says so.
    let o = rampart(&["filter", "-r", s(&cap), "--rules", s(&rules), "-w", s(&w)]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("5 packets, 0 passed (0 not IP, dropped), 5 not filtered and not passed"),
        "{err}"
    );
    // A capture with no record, of the input's link type (as `tcpdump -w` leaves one).
    let out = std::fs::read(&w).unwrap();
    assert_eq!(out.len(), 24);
    assert_eq!(out[20..24], 9u32.to_le_bytes(), "PPP, as the input");
}
