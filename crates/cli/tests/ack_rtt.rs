//! The SEQ/ACK samples of `rampart rtt --mode seq` against Wireshark's `tcp.analysis.ack_rtt`
//! on the same captures (nDPI's and Snabbwall's). The expected values were made with
//! scripts/tshark-ack-rtt.py (tshark 4.0.17) and are committed under
//! tests/fixtures/tshark/ackrtt/, so the test does not depend on a tshark version.
//!
//! Every sample rampart makes must be one Wireshark makes for the same ACK frame, with the same
//! value: rampart pairs an ACK with the segment it exactly acknowledges, as Wireshark does, and
//! leaves out what Karn's rule forbids and what its three timed segments per direction do not
//! hold, so it makes fewer samples, never other ones. The test prints how many of Wireshark's
//! it makes.

mod common;

use std::collections::BTreeMap;

use common::*;

/// The ACK frame: its time in microseconds, then source and destination address and port.
type Frame = (i64, String, u16, String, u16);

/// rampart's sample time (printed to the microsecond) in microseconds.
fn us(secs: f64) -> i64 {
    (secs * 1e6).round() as i64
}

/// tshark's frame time (to the nanosecond) in whole microseconds, as rampart prints it.
fn us_of(text: &str) -> i64 {
    let (s, frac) = text.split_once('.').unwrap_or((text, ""));
    let frac: String = frac.chars().chain(std::iter::repeat('0')).take(6).collect();
    s.parse::<i64>().unwrap() * 1_000_000 + frac.parse::<i64>().unwrap()
}

#[test]
fn seq_ack_samples_are_wiresharks() {
    let Some(data) = shared_data("seq_ack_samples_are_wiresharks") else { return };
    let fixtures = repo().join("tests/fixtures/tshark/ackrtt");
    let (mut captures, mut theirs, mut ours) = (0, 0usize, 0usize);
    let mut wrong = Vec::new();
    for (set, dir) in [("ndpi", "pcaps/dpi/ndpi/pcap"), ("snabbwall", "pcaps/dpi/snabbwall")] {
        for entry in std::fs::read_dir(data.join(dir)).unwrap() {
            let capture = entry.unwrap().path();
            let name = capture.file_name().unwrap().to_str().unwrap();
            if !["pcap", "pcapng", "cap"].iter().any(|e| name.ends_with(&format!(".{e}"))) {
                continue;
            }
            // Wireshark's ack_rtt per ACK frame (a capture without a fixture has none).
            let mut want: BTreeMap<Frame, Vec<f64>> = BTreeMap::new();
            if let Ok(text) =
                std::fs::read_to_string(fixtures.join(set).join(format!("{name}.tsv")))
            {
                for line in text.lines() {
                    let f: Vec<&str> = line.split('\t').collect();
                    let frame = (
                        us_of(f[0]),
                        f[1].to_owned(),
                        f[2].parse().unwrap(),
                        f[3].to_owned(),
                        f[4].parse().unwrap(),
                    );
                    want.entry(frame).or_default().push(f[5].parse().unwrap());
                    theirs += 1;
                }
            }
            let out = rampart(&[
                "rtt",
                "--mode",
                "seq",
                "--format",
                "json",
                "-q",
                "-r",
                capture.to_str().unwrap(),
            ]);
            assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
            for line in out.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                let v: serde_json::Value = serde_json::from_slice(line).unwrap();
                assert_eq!(v["method"], "seq", "{name}: {v}");
                let frame = (
                    us(v["time"].as_f64().unwrap()),
                    v["src"].as_str().unwrap().to_owned(),
                    v["sport"].as_u64().unwrap() as u16,
                    v["dst"].as_str().unwrap().to_owned(),
                    v["dport"].as_u64().unwrap() as u16,
                );
                let rtt = v["rtt"].as_f64().unwrap();
                ours += 1;
                let same =
                    want.get(&frame).is_some_and(|w| w.iter().any(|t| (t - rtt).abs() < 1e-6));
                if !same {
                    wrong.push(format!(
                        "{name}: {frame:?} rampart {rtt}, Wireshark {:?}",
                        want.get(&frame)
                    ));
                }
            }
            captures += 1;
        }
    }
    eprintln!(
        "{captures} captures: Wireshark {theirs} ack_rtt samples, rampart {ours} ({:.1} %), {} not Wireshark's",
        100.0 * ours as f64 / theirs.max(1) as f64,
        wrong.len()
    );
    assert!(captures >= 70, "only {captures} captures checked");
    assert!(ours * 2 >= theirs, "rampart made {ours} of Wireshark's {theirs} samples");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
