//! `rampart flows` against tshark's dissection of the same captures: frame and byte counts per
//! conversation and direction must agree exactly. The expected tables were made with
//! scripts/tshark-flows.py and are committed under tests/fixtures/tshark/.

mod common;

use common::*;

#[test]
fn bundled_sample_matches_tshark() {
    let r = repo();
    let d = diff_against_fixture(
        &r.join("samples/mixed.pcap"),
        &r.join("tests/fixtures/tshark/samples/mixed.tsv"),
    );
    assert!(d.is_empty(), "{}", d.join("\n"));
}

/// Every shared capture that has a fixture: our RTT captures, nDPI's and Snabbwall's.
#[test]
fn shared_captures_match_tshark() {
    let Some(data) = shared_data("shared_captures_match_tshark") else { return };
    let fixtures = repo().join("tests/fixtures/tshark");
    let mut checked = 0;
    let mut failures = Vec::new();
    for (set, dir) in [
        ("rtt", "pcaps/rtt"),
        ("ndpi", "pcaps/dpi/ndpi/pcap"),
        ("snabbwall", "pcaps/dpi/snabbwall"),
    ] {
        for entry in std::fs::read_dir(fixtures.join(set)).unwrap() {
            let fixture = entry.unwrap().path();
            let name = fixture.file_name().unwrap().to_str().unwrap().trim_end_matches(".tsv");
            let capture = data.join(dir).join(name);
            assert!(capture.exists(), "{} is missing", capture.display());
            let d = diff_against_fixture(&capture, &fixture);
            if !d.is_empty() {
                failures.push(format!("{name}:\n  {}", d.join("\n  ")));
            }
            checked += 1;
        }
    }
    assert!(checked >= 100, "only {checked} captures checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
