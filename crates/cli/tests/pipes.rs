//! A reader that closes the pipe early (`rampart ... | head`) ends every command the same
//! way: silently, with status 0, never a panic or an error status.

use std::process::{Command, Stdio};

fn repo(p: &str) -> String {
    format!("{}/../../{p}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_command_stops_quietly_when_its_reader_goes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.pcap");
    let log = dir.path().join("records.json").to_string_lossy().into_owned();
    let (sample, rules) =
        (repo("samples/mixed.pcap"), repo("crates/cli/tests/fixtures/classify/sample.rampart"));
    let (a, b) = (
        repo("crates/cli/tests/fixtures/verify/a.rampart"),
        repo("crates/cli/tests/fixtures/verify/b.rampart"),
    );
    let ring = repo("crates/cli/tests/fixtures/verify/ring.nkpl");
    let eth0 = format!("eth0={sample}");
    let commands: Vec<Vec<&str>> = vec![
        vec!["flows", "-r", &sample],
        vec!["flows", "-r", &sample, "--format", "csv"],
        vec!["rtt", "-r", &sample],
        vec!["rtt", "--compat", "pping", "-r", &sample],
        vec!["rules", "check", &rules],
        vec!["filter", "-r", &sample, "--rules", &rules, "-w", out.to_str().unwrap()],
        vec!["filter", "-r", &sample, "--rules", &rules, "-w", "-"],
        vec!["flows", "-r", &sample, "-o", "-"],
        vec!["firewall", "-r", &eth0, "--rules", &rules, "--log", "-", "-o", log.as_str()],
        vec!["report", "-q", "-r", &sample, "-o", "-"],
        vec!["firewall", "-r", &eth0, "--rules", &rules],
        vec!["verify", "shadowed", &a],
        vec!["verify", "compare", &a, &b],
        vec!["verify", "test", &a, "--packet", "tcp 10.0.0.1:1 -> 10.0.0.2:22"],
        vec!["verify", "nkpl", &ring],
        vec!["dpi", "protocols"],
        vec!["dpi", "label", "-r", &sample],
        vec!["rss", "balance", "--queues", "4", "-r", &sample],
    ];
    for args in &commands {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rampart"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes before anything is read.
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked") && !err.contains("Broken pipe"), "{args:?}: {err}");
    }
}
