//! Capture time that jumps (a packet dated 1970, a clock stepped back or forward) loses and
//! invents nothing: every conversation's packets and bytes add up to the same totals as in the
//! capture without the jump, flows split only where the jump ends them, and any number of
//! workers writes the same records as one.

mod common;

use std::path::Path;

use common::{group_json, rampart, repo};

/// A pcap record: its capture time (seconds, microseconds) and the rest of it (lengths, bytes).
type Record = (u32, u32, Vec<u8>);

/// A capture with time jumps: its name, whether the jump ends flows (`Some(false)`: none ends
/// early; `Some(true)`: the table's clock, which follows the last packet of each batch, goes
/// a day ahead and ends the flows live then; `None`: only the packet's own flow sees the jump,
/// which can end it there and hide a later pause of it), and the time it gives packet `i` in
/// place of `s`.
struct Variant<'a> {
    name: &'a str,
    ends: Option<bool>,
    date: &'a dyn Fn(usize, u32) -> u32,
}

/// The bundled sample's header and records.
fn sample() -> (Vec<u8>, Vec<Record>) {
    let data = std::fs::read(repo().join("samples/mixed.pcap")).unwrap();
    let le = |b: &[u8]| u32::from_le_bytes(b.try_into().unwrap());
    assert_eq!(le(&data[..4]), 0xa1b2_c3d4, "a little-endian microsecond pcap");
    let mut records = Vec::new();
    let mut at = 24;
    while at + 16 <= data.len() {
        let incl = le(&data[at + 8..at + 12]) as usize;
        let rest = data[at + 8..at + 16 + incl].to_vec();
        records.push((le(&data[at..at + 4]), le(&data[at + 4..at + 8]), rest));
        at += 16 + incl;
    }
    assert_eq!(at, data.len());
    (data[..24].to_vec(), records)
}

fn write(path: &Path, header: &[u8], records: &[Record]) {
    let mut out = header.to_vec();
    for (sec, usec, rest) in records {
        out.extend_from_slice(&sec.to_le_bytes());
        out.extend_from_slice(&usec.to_le_bytes());
        out.extend_from_slice(rest);
    }
    std::fs::write(path, out).unwrap();
}

fn flows(path: &Path, extra: &[&str], workers: &str) -> Vec<u8> {
    let mut args = vec!["flows", "-q", "-r", path.to_str().unwrap(), "--workers", workers];
    args.extend_from_slice(extra);
    let out = rampart(&args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

#[test]
fn time_jumps_keep_every_conversation_s_totals() {
    let (header, records) = sample();
    let n = records.len();
    let mid = n / 2;
    let tmp = tempfile::tempdir().unwrap();
    let plain = tmp.path().join("plain.pcap");
    write(&plain, &header, &records);
    let day = 86_400;
    let variants = [
        Variant {
            name: "first packet in 1970",
            ends: Some(false),
            date: &|i, s| if i == 0 { 0 } else { s },
        },
        Variant {
            name: "middle packet in 1970",
            ends: Some(false),
            date: &|i, s| if i == mid { 0 } else { s },
        },
        Variant {
            name: "second half an hour back",
            ends: Some(false),
            date: &|i, s| if i >= mid { s - 3600 } else { s },
        },
        Variant {
            name: "middle packet a day ahead",
            ends: None,
            date: &|i, s| if i == mid { s + day } else { s },
        },
        Variant {
            name: "second half a day ahead",
            ends: Some(true),
            date: &|i, s| if i >= mid { s + day } else { s },
        },
        Variant {
            name: "300 packets from the middle on a day ahead",
            ends: Some(true),
            date: &|i, s| if (mid..mid + 300).contains(&i) { s + day } else { s },
        },
    ];
    for extra in [&[][..], &["--flow-timeout", "1"]] {
        let base = flows(&plain, extra, "1");
        let totals = group_json(&base);
        assert!(totals.len() > 10, "{} conversations", totals.len());
        for Variant { name, ends, date } in &variants {
            let path = tmp.path().join("jumped.pcap");
            let jumped: Vec<_> = records
                .iter()
                .enumerate()
                .map(|(i, (s, u, r))| (date(i, *s), *u, r.clone()))
                .collect();
            write(&path, &header, &jumped);
            let one = flows(&path, extra, "1");
            assert_eq!(group_json(&one), totals, "{name} {extra:?}: totals per conversation");
            let (before, after) =
                (base.split(|&b| b == b'\n').count(), one.split(|&b| b == b'\n').count());
            if *ends == Some(false) {
                // Nothing ends early, except the flow of a packet dated 1970 at the start,
                // which its next packet finds quiet for 53 years. (Time stepped back can end
                // fewer: a pause that spans the step is no longer seen as one.)
                assert!(after <= before + 1, "{name} {extra:?}: {before} -> {after} records");
            } else if *ends == Some(true) {
                // Those that go on start again.
                assert!(after > before, "{name} {extra:?}: {before} -> {after} records");
            }
            for w in ["2", "3"] {
                assert!(
                    flows(&path, extra, w) == one,
                    "{name} {extra:?}: --workers {w} differs from one worker"
                );
            }
        }
    }
}
