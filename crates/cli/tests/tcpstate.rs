//! The TCP health counters of `rampart flows` against tshark's TCP sequence analysis of the
//! same captures (`tcp.analysis.*`). The expected counts were made with
//! scripts/tshark-tcp-analysis.py (tshark 4.0.17) and are committed under
//! tests/fixtures/tshark/tcpstate/, so the test does not depend on a tshark version.
//!
//! Per conversation (TCP address and port pair) and direction: segments after a gap
//! (`lost_segment`) and zero-window advertisements must agree exactly; retransmissions and
//! out-of-order segments must agree exactly in sum (both are "a segment below the next
//! expected sequence number"), and how the sum splits between them may differ by at most
//! [`SPLIT_BOUND`] per direction (the split depends on the handshake RTT, which tshark takes
//! from its conversation's first frame).

mod common;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;

use common::*;

/// Most segments one direction may class differently between retransmission and out of order.
const SPLIT_BOUND: u64 = 2;

type Key = ((IpAddr, u16), (IpAddr, u16));
/// retrans, out of order, lost, zero window: A->B, then B->A.
type Counts = [u64; 8];

fn read(fixture: &Path) -> BTreeMap<Key, Counts> {
    let text = std::fs::read_to_string(fixture).unwrap();
    let mut m = BTreeMap::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let f: Vec<&str> = line.split('\t').collect();
        let a = (f[0].parse().unwrap(), f[1].parse().unwrap());
        let b = (f[2].parse().unwrap(), f[3].parse().unwrap());
        let mut c = [0; 8];
        for (slot, v) in c.iter_mut().zip(&f[4..]) {
            *slot = v.parse().unwrap();
        }
        m.insert((a, b), c);
    }
    m
}

fn ours(capture: &Path) -> BTreeMap<Key, Counts> {
    let out = rampart(&[
        "flows",
        "-q",
        "--dpi",
        "off",
        "--no-rtt",
        "--schema",
        "v2",
        "-r",
        capture.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}: {}",
        capture.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut m: BTreeMap<Key, Counts> = BTreeMap::new();
    for line in out.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_slice(line).unwrap();
        if v["proto"] != "tcp" {
            continue;
        }
        let end = |h: &str, p: &str| -> (IpAddr, u16) {
            (v[h].as_str().unwrap().parse().unwrap(), v[p].as_u64().unwrap() as u16)
        };
        let (o, r) = (end("orig_h", "orig_p"), end("resp_h", "resp_p"));
        let n = |f: &str| v[f].as_u64().unwrap();
        let orig =
            [n("orig_retrans"), n("orig_out_of_order"), n("orig_lost"), n("orig_zero_window")];
        let resp =
            [n("resp_retrans"), n("resp_out_of_order"), n("resp_lost"), n("resp_zero_window")];
        let (key, first, second) = if o <= r { ((o, r), orig, resp) } else { ((r, o), resp, orig) };
        let c = m.entry(key).or_default();
        for i in 0..4 {
            c[i] += first[i];
            c[4 + i] += second[i];
        }
    }
    m.retain(|_, c| c.iter().any(|&n| n > 0));
    m
}

/// What differs between tshark's counts and ours for one conversation, beyond the bounds.
fn compare(k: &Key, want: &Counts, got: &Counts, split: &mut u64) -> Option<String> {
    let mut bad = false;
    for d in [0, 4] {
        let (w, g) = (&want[d..d + 4], &got[d..d + 4]);
        bad |= w[2] != g[2] || w[3] != g[3] || w[0] + w[1] != g[0] + g[1];
        let off = w[0].abs_diff(g[0]);
        *split += off;
        bad |= off > SPLIT_BOUND;
    }
    bad.then(|| format!("{k:?}: tshark {want:?}, rampart {got:?}"))
}

#[test]
fn health_counters_match_tshark() {
    let Some(data) = shared_data("health_counters_match_tshark") else { return };
    let fixtures = repo().join("tests/fixtures/tshark/tcpstate");
    let (mut captures, mut convs, mut exact, mut split) = (0, 0, 0, 0);
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
            let want = read(&fixture);
            let got = ours(&capture);
            let zero = [0; 8];
            let keys: std::collections::BTreeSet<&Key> = want.keys().chain(got.keys()).collect();
            for k in keys {
                let (w, g) = (want.get(k).unwrap_or(&zero), got.get(k).unwrap_or(&zero));
                convs += 1;
                exact += u64::from(w == g);
                if let Some(d) = compare(k, w, g, &mut split) {
                    failures.push(format!("{name}: {d}"));
                }
            }
            captures += 1;
        }
    }
    eprintln!(
        "{captures} captures, {convs} conversations with a flag, {exact} exactly equal, \
         {split} segments classed differently between retransmission and out of order"
    );
    assert!(captures >= 100, "only {captures} captures checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
