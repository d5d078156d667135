//! `--workers N` changes nothing in the output: flow records (with the default and a short idle
//! timeout, and with interim records of an active timeout) and RTT samples are byte-identical
//! for 1, 2 and 3 workers on every shared capture.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{rampart, repo, shared_data};

fn captures(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            captures(&p, out);
        } else if matches!(p.extension().and_then(|e| e.to_str()), Some("pcap" | "pcapng" | "cap"))
        {
            out.push(p);
        }
    }
}

/// Runs `args` with 1, 2 and 3 workers and checks the outputs and exit statuses agree.
fn same_for_all_workers(file: &Path, args: &[&str]) -> usize {
    let f = file.to_str().unwrap();
    let run = |w: &str| {
        let mut a = args.to_vec();
        a.extend(["-r", f, "-q", "--workers", w]);
        rampart(&a)
    };
    let one = run("1");
    for w in ["2", "3"] {
        let other = run(w);
        assert_eq!(other.status.code(), one.status.code(), "{args:?} {f} --workers {w}");
        assert!(
            other.stdout == one.stdout,
            "{args:?} {f}: --workers {w} differs from --workers 1 ({} against {} bytes)",
            other.stdout.len(),
            one.stdout.len()
        );
    }
    one.stdout.len()
}

#[test]
fn bundled_sample_is_the_same_for_any_worker_count() {
    let sample = repo().join("samples/mixed.pcap");
    for args in [
        &["flows"][..],
        &["flows", "--flow-timeout", "0.2"],
        &["flows", "--active-timeout", "0.3", "--flow-timeout", "0.5"],
        &["rtt"],
        &["rtt", "--summary"],
        // Workers write the sample lines of these three formats themselves; aggregated samples
        // go through the reading thread.
        &["rtt", "-m"],
        &["rtt", "--format", "json"],
        &["rtt", "--aggregate", "--interval", "0.5"],
    ] {
        assert!(same_for_all_workers(&sample, args) > 0, "{args:?}");
    }
}

/// A stream (standard input) takes the other path: the reading thread parses and sends
/// parsed packets.
#[test]
fn a_stream_is_the_same_for_any_worker_count() {
    let sample = std::fs::read(repo().join("samples/mixed.pcap")).unwrap();
    let run = |args: &[&str], w: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rampart"))
            .args(args)
            .args(["-r", "-", "-q", "--workers", w])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let data = sample.clone();
        let feeder = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, &data));
        let out = child.wait_with_output().unwrap();
        feeder.join().unwrap().unwrap();
        assert!(out.status.success());
        out.stdout
    };
    for args in
        [&["flows", "--flow-timeout", "0.2"][..], &["flows", "--active-timeout", "0.3"], &["rtt"]]
    {
        let one = run(args, "1");
        assert!(!one.is_empty());
        assert_eq!(run(args, "2"), one, "{args:?}");
        assert_eq!(run(args, "3"), one, "{args:?}");
    }
}

#[test]
fn every_shared_capture_is_the_same_for_any_worker_count() {
    let Some(data) = shared_data("every_shared_capture_is_the_same_for_any_worker_count") else {
        return;
    };
    let mut files = Vec::new();
    captures(&data.join("pcaps"), &mut files);
    assert!(files.len() > 100, "{} captures", files.len());
    let tmp = tempfile::tempdir().unwrap();
    let bench = tmp.path().join("rtt-bench.pcap");
    let ok = Command::new("zstd")
        .args(["-q", "-d", "-o"])
        .arg(&bench)
        .arg(data.join("pcaps/bench/rtt-bench.pcap.zst"))
        .status()
        .expect("zstd is installed (.ci/run installs it)");
    assert!(ok.success());
    files.push(bench);
    let mut bytes = 0;
    for f in &files {
        bytes += same_for_all_workers(f, &["flows"]);
        bytes += same_for_all_workers(f, &["flows", "--flow-timeout", "1", "--format", "csv"]);
        bytes +=
            same_for_all_workers(f, &["flows", "--active-timeout", "1", "--flow-timeout", "5"]);
        bytes += same_for_all_workers(f, &["rtt"]);
    }
    assert!(bytes > 1_000_000, "{bytes} bytes of output compared");
}

#[test]
fn compat_mode_refuses_workers() {
    let sample = repo().join("samples/mixed.pcap");
    let out =
        rampart(&["rtt", "--compat", "pping", "--workers", "2", "-r", sample.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--workers"));
}
