//! An output named `-` is standard output, as in tcpdump's `-w -`: never a file called `-`,
//! and never two outputs on standard output at once.

use std::process::{Command, Output};

fn repo(p: &str) -> String {
    format!("{}/../../{p}", env!("CARGO_MANIFEST_DIR"))
}

/// Runs rampart in a fresh directory (so a file named `-` would be seen there).
fn rampart(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rampart")).current_dir(dir).args(args).output().unwrap()
}

fn no_dash_file(dir: &std::path::Path, args: &[&str]) {
    assert!(!dir.join("-").exists(), "{args:?} wrote a file named '-'");
}

#[test]
fn outputs_named_dash_write_to_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sample = repo("samples/mixed.pcap");
    let rules = repo("crates/cli/tests/fixtures/classify/sample.rampart");
    let eth0 = format!("eth0={sample}");
    let records = d.join("records.json");
    let records = records.to_str().unwrap();

    // flows -o -: the same records as without -o.
    let plain = rampart(d, &["flows", "-q", "-r", &sample]);
    let args = ["flows", "-q", "-r", &sample, "-o", "-"];
    let dash = rampart(d, &args);
    assert!(dash.status.success(), "{}", String::from_utf8_lossy(&dash.stderr));
    assert!(!plain.stdout.is_empty());
    assert_eq!(dash.stdout, plain.stdout);
    no_dash_file(d, &args);

    // firewall --log - with the records in a file: one JSON object per packet on stdout.
    let args = ["firewall", "-r", &eth0, "--rules", &rules, "--log", "-", "-o", records];
    let o = rampart(d, &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines = String::from_utf8(o.stdout).unwrap();
    assert!(lines.lines().count() > 100, "{lines}");
    assert!(lines.lines().all(|l| l.starts_with("{\"time\":")), "{lines}");
    assert!(std::fs::metadata(records).unwrap().len() > 0);
    no_dash_file(d, &args);

    // filter -w -: a pcap on stdout, the rules' hit counts on stderr.
    let args = ["filter", "-r", &sample, "--rules", &rules, "-w", "-"];
    let o = rampart(d, &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout.len() > 24, "no packets written");
    assert_eq!(o.stdout[..4], 0xa1b2_3c4du32.to_le_bytes(), "not a nanosecond pcap");
    assert!(String::from_utf8_lossy(&o.stderr).contains("ACCEPT"));
    no_dash_file(d, &args);

    // report -o -: the page on stdout.
    let args = ["report", "-q", "-r", &sample, "-o", "-"];
    let o = rampart(d, &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout.starts_with(b"<!DOCTYPE html>"));
    no_dash_file(d, &args);
}

#[test]
fn two_outputs_on_standard_output_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sample = repo("samples/mixed.pcap");
    let rules = repo("crates/cli/tests/fixtures/classify/sample.rampart");
    let eth0 = format!("eth0={sample}");
    let cases: Vec<Vec<&str>> = vec![
        // The records take standard output when -o is not given.
        vec!["firewall", "-r", &eth0, "--rules", &rules, "--log", "-"],
        vec!["firewall", "-r", &eth0, "--rules", &rules, "-w", "eth0=-"],
        vec!["firewall", "-r", &eth0, "--rules", &rules, "-o", "-", "--compare", &rules],
        vec!["run", "--check", "--rules", &rules, "--pair", "a:b", "-o", "-", "--log", "-"],
    ];
    for args in &cases {
        let o = rampart(d, args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("would all write to standard output"), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?} wrote before refusing");
        no_dash_file(d, args);
    }
}

#[test]
fn run_config_paths_are_relative_to_the_file_and_dash_stays_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sub = d.join("conf");
    std::fs::create_dir(&sub).unwrap();
    let rules = repo("crates/cli/tests/fixtures/classify/sample.rampart");
    std::fs::copy(&rules, sub.join("fw.rampart")).unwrap();
    std::fs::copy(&rules, d.join("here.rampart")).unwrap();
    // The configuration named by a relative path: its `rules` is relative to it.
    std::fs::write(sub.join("run.toml"), "rules = \"fw.rampart\"\npair = [\"a:b\"]\n").unwrap();
    let o = rampart(d, &["run", "--config", "conf/run.toml", "--check"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("proved"));
    // A --rules given on the command line is relative to where rampart runs.
    let args = ["run", "--config", "conf/run.toml", "--rules", "here.rampart", "--check"];
    let o = rampart(d, &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("here.rampart:"));
    // `-` in the file is standard output, not a file beside it: two of them are refused.
    std::fs::write(
        sub.join("run.toml"),
        "rules = \"fw.rampart\"\npair = [\"a:b\"]\noutput = \"-\"\nlog = \"-\"\n",
    )
    .unwrap();
    let o = rampart(d, &["run", "--config", "conf/run.toml", "--check"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("would all write to standard output"), "{err}");
}

#[test]
fn a_capture_output_with_no_packet_is_still_a_capture() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sample = repo("samples/mixed.pcap");
    let rules = d.join("drop.rampart");
    std::fs::write(&rules, "table input {\n  default drop\n}\n").unwrap();
    let rules = rules.to_str().unwrap();
    let eth0 = format!("eth0={sample}");
    let (a, b) = (d.join("filtered.pcap"), d.join("eth0.pcap"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let o = rampart(d, &["filter", "-r", &sample, "--rules", rules, "-w", a]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let w = format!("eth0={b}");
    let o = rampart(d, &["firewall", "-r", &eth0, "--rules", rules, "-w", &w, "-o", "/dev/null"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in [a, b] {
        // A pcap header (nanosecond magic), then no record.
        let bytes = std::fs::read(f).unwrap();
        assert_eq!(bytes.len(), 24, "{f}");
        assert_eq!(bytes[..4], 0xa1b2_3c4du32.to_le_bytes(), "{f}");
    }
}

#[test]
fn report_refuses_writing_its_page_over_its_input_through_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sample = repo("samples/mixed.pcap");
    let records = d.join("records.json");
    let r = records.to_str().unwrap();
    let o = rampart(d, &["flows", "-q", "-r", &sample, "-o", r]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let before = std::fs::read(&records).unwrap();
    // `report --records r.json -o - >>r.json`.
    let append = std::fs::OpenOptions::new().append(true).open(&records).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rampart"))
        .current_dir(d)
        .args(["report", "-q", "--records", r, "-o", "-"])
        .stdout(append)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("standard output") && err.contains("is an input"), "{err}");
    assert_eq!(std::fs::read(&records).unwrap(), before, "the input was written to");
}
