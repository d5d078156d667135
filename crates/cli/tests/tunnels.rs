//! Flows inside tunnels: tests/fixtures/tunnels.pcap (scripts/make-tunnels.py) holds one DNS
//! query inside each tunnel rampart reads, then one outside any.

mod common;

use common::*;

fn records(args: &[&str]) -> Vec<serde_json::Value> {
    let capture = repo().join("tests/fixtures/tunnels.pcap");
    let mut all = vec!["flows", "-q", "-r", capture.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = rampart(&all);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

#[test]
fn inner_flows_are_keyed_labelled_and_marked_with_their_tunnel() {
    let got: Vec<(String, String, u64, Option<String>, String)> = records(&[])
        .iter()
        .map(|v| {
            (
                v["src"].as_str().unwrap().to_owned(),
                v["dst"].as_str().unwrap().to_owned(),
                v["dport"].as_u64().unwrap(),
                v["tunnel"].as_str().map(str::to_owned),
                v["app"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let tunnels = ["ip-in-ip", "gre", "gre", "vxlan", "gtp-u", "capwap"];
    assert_eq!(got.len(), 7, "{got:?}");
    for (i, g) in got.iter().enumerate() {
        let want_tunnel = tunnels.get(i).map(|t| t.to_string());
        assert_eq!(
            g,
            &(
                format!("10.9.0.{}", i + 1),
                "10.9.1.1".to_owned(),
                53,
                want_tunnel,
                "DNS".to_owned()
            ),
        );
    }
    // v2 names it the same, in CSV too.
    let v2 = records(&["--schema", "v2"]);
    assert_eq!(v2[3]["tunnel"], "vxlan");
}

#[test]
fn outer_keeps_the_tunnels_own_flows() {
    let got: Vec<(String, u64)> = records(&["--tunnels", "outer"])
        .iter()
        .map(|v| {
            (v["proto"].to_string().trim_matches('"').to_owned(), v["dport"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(
        got,
        [
            ("4".to_owned(), 0),
            ("47".to_owned(), 0),
            ("udp".to_owned(), 4789),
            ("udp".to_owned(), 2152),
            ("udp".to_owned(), 5247),
            ("udp".to_owned(), 53),
        ]
    );
    assert!(records(&["--tunnels", "outer"]).iter().all(|v| v.get("tunnel").is_none()));
}
