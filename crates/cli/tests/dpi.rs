//! `rampart dpi label` and `rampart dpi protocols`.

mod common;

use common::{rampart, repo, shared_data};

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = rampart(args);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn labels_the_bundled_sample() {
    let sample = repo().join("samples/mixed.pcap").display().to_string();
    let (code, out, err) = run(&["dpi", "label", "-r", &sample]);
    assert_eq!(code, Some(0), "{err}");
    let http: Vec<&str> = out.lines().filter(|l| l.contains(" HTTP dpi")).collect();
    // The six HTTP transfers (the sample is cut to 144 bytes a packet, too short for the
    // requests' headers: the responses decide them); iperf3's flows stay unknown.
    assert_eq!(http.len(), 6, "{out}");
    assert!(
        out.lines().filter(|l| l.contains(":520")).all(|l| l.ends_with("Unknown none")),
        "{out}"
    );
    let (code, json, _) = run(&["dpi", "label", "-r", &sample, "--json"]);
    assert_eq!(code, Some(0));
    assert_eq!(json.lines().count(), out.lines().count());
    assert!(json.lines().all(|l| l.starts_with("{\"proto\":") && l.ends_with('}')), "{json}");
}

#[test]
fn a_cut_capture_keeps_its_flows_and_says_where() {
    let sample = std::fs::read(repo().join("samples/mixed.pcap")).unwrap();
    let dir = std::env::temp_dir().join(format!("rampart-dpi-cut-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cut = dir.join("cut.pcap");
    std::fs::write(&cut, &sample[..sample.len() / 2 + 3]).unwrap();
    let (code, out, err) = run(&["dpi", "label", "-r", &cut.display().to_string()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(code, Some(1), "{err}");
    assert!(!out.is_empty(), "the flows read before the cut are written");
    assert!(err.contains("cut.pcap"), "{err}");
    let (code, _, err) = run(&["dpi", "label", "-r", "/nonexistent.pcap"]);
    assert_eq!(code, Some(2), "{err}");
}

#[test]
fn lists_what_it_recognises() {
    let (code, out, _) = run(&["dpi", "protocols"]);
    assert_eq!(code, Some(0));
    for p in ["TLS", "QUIC", "DNS", "HTTP", "SSH", "BitTorrent", "WireGuard", "Modbus"] {
        assert!(out.lines().any(|l| l.split('\t').next() == Some(p)), "{p} missing from {out}");
    }
    // Every row has its four columns.
    assert!(out.lines().all(|l| l.split('\t').count() == 4), "{out}");
    let (code, md, _) = run(&["dpi", "protocols", "--markdown"]);
    assert_eq!(code, Some(0));
    assert!(md.contains("| Modbus | TCP |"), "{md}");
}

#[test]
fn reads_quic_server_names() {
    let Some(data) = shared_data("reads_quic_server_names") else { return };
    let pcap = data.join("pcaps/dpi/ndpi/pcap/quic.pcap").display().to_string();
    let (code, out, err) = run(&["dpi", "label", "-r", &pcap]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("QUIC.YouTube dpi sni=\"www.youtube.com\""), "{out}");
    assert!(out.contains("QUIC.GMail dpi sni=\"mail.google.com\""), "{out}");
}

#[test]
fn ndpi_needs_its_feature() {
    let sample = repo().join("samples/mixed.pcap").display().to_string();
    let (code, out, err) = run(&["dpi", "label", "-r", &sample, "--dpi", "ndpi"]);
    if cfg!(feature = "ndpi") {
        assert_eq!(code, Some(0), "{err}");
        assert!(out.lines().all(|l| l.contains(" ndpi")), "{out}");
    } else {
        assert_eq!(code, Some(2));
        assert!(err.contains("built without nDPI"), "{err}");
    }
}
