//! `rampart bench`: every step of both chains measured over the whole capture, as a table or
//! one JSON object; a file that is no capture is named, with status 2.

use std::process::Command;

fn repo(p: &str) -> String {
    format!("{}/../../{p}", env!("CARGO_MANIFEST_DIR"))
}

fn rampart(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rampart")).args(args).output().unwrap()
}

#[test]
fn both_chains_step_by_step() {
    let sample = repo("samples/mixed.pcap");
    let out = rampart(&["bench", "-r", &sample, "--passes", "2", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["packets"], 3226);
    assert_eq!(v["passes"], 2);
    let names = |chain: &str| -> Vec<String> {
        v[chain].as_array().unwrap().iter().map(|s| s["step"].as_str().unwrap().into()).collect()
    };
    let flows =
        ["walk", "parse", "key and hash", "table", "tcp state", "rtt", "identification", "output"];
    assert_eq!(names("flows"), flows);
    assert_eq!(names("rtt"), ["walk", "parse", "key and hash", "table", "rtt", "output"]);
    for chain in ["flows", "rtt"] {
        let mut before = 0.0;
        for s in v[chain].as_array().unwrap() {
            let ns = s["ns_per_packet"].as_f64().unwrap();
            let passes = s["passes"].as_array().unwrap();
            assert_eq!(passes.len(), 2, "{s}");
            assert!(ns > 0.0 && passes.iter().all(|p| p.as_f64().unwrap() > 0.0), "{s}");
            let added = s["added"].as_f64().unwrap();
            assert!((added - (ns - before)).abs() < 0.02, "{s}");
            before = ns;
        }
    }
    // The table names the file, and one chain when asked.
    let out = rampart(&["bench", "-r", &sample, "--passes", "1", "--command", "rtt"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with(&format!("{sample}: 3226 packets")), "{text}");
    assert!(text.contains("\nrtt ") && !text.contains("\nflows "), "{text}");
}

#[test]
fn a_file_that_is_no_capture_is_named() {
    let readme = repo("README.md");
    let out = rampart(&["bench", "-r", &readme]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("README.md"), "{err}");
    let out = rampart(&["bench", "-r", &readme, "--passes", "0"]);
    assert_eq!(out.status.code(), Some(2), "passes below 1 are refused");
}

#[test]
fn a_capture_cut_short_is_named_once_with_the_offset() {
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.pcap");
    let bytes = std::fs::read(repo("samples/mixed.pcap")).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() - 10]).unwrap();
    let out = rampart(&["bench", "-r", cut.to_str().unwrap(), "--passes", "1"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("cut.pcap").count(), 1, "{err}");
    assert!(err.contains("byte offset"), "{err}");
}
