//! Application identification inside the pipeline: the labels `run` gives each flow record
//! agree with nDPI's on the shared nDPI captures as well as the detectors do on their own
//! (`crates/dpi/tests/accuracy.rs`), Snabbwall's expected protocols are reported, and
//! neither the number of workers nor the input path (mapped file or stream) changes a label.

#[path = "../../dpi/tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use common::{Key, data_dir, endpoint, expected, key, master, snabbwall};
use rampart_capture::Capture;
use rampart_engine::{FlowRecord, FlowsConfig, run_flows};
use rampart_wire::Family;

/// One record as the test compares it: key, label, how it was found, and the metadata.
type Row = (Key, String, &'static str, rampart_dpi::Meta);

fn records(cap: &mut Capture, cfg: &FlowsConfig) -> Vec<Row> {
    let mut rows = Vec::new();
    let stop = AtomicBool::new(false);
    let mut sink = |e: &FlowRecord| {
        let k = &e.flow.key;
        let l4 = match k.proto() {
            6 => "TCP",
            17 => "UDP",
            _ => "other",
        };
        let fam = Family::from(k.family());
        let app = e.app.as_ref().expect("identification is on");
        rows.push((
            key(
                l4,
                endpoint(fam, k.addr_a_bytes(), k.port_a()),
                endpoint(fam, k.addr_b_bytes(), k.port_b()),
            ),
            app.label.to_string(),
            app.by.name(),
            app.meta().clone(),
        ));
        Ok(())
    };
    let out = run_flows(cap, cfg, &stop, &mut sink, &mut |_| {}).unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    rows
}

fn captures(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng" || x == "cap"))
        .collect();
    v.sort();
    v
}

#[test]
fn flow_records_agree_with_ndpi() {
    let Some(dir) = data_dir("pcaps/dpi/ndpi") else { return };
    let cfg = FlowsConfig::default();
    let (mut total, mut masters, mut whole) = (0usize, 0usize, 0usize);
    for cap in captures(&dir.join("pcap")) {
        let name = cap.file_name().unwrap().to_string_lossy().into_owned();
        let want = expected(&dir.join("result").join(format!("{name}.out")), true);
        if want.is_empty() {
            continue;
        }
        // A key seen again after its flow ended (a new connection on the same ports) keeps
        // its first record's label, as nDPI's output lists one flow per key.
        let mut got: BTreeMap<Key, String> = BTreeMap::new();
        for (k, label, ..) in records(&mut Capture::open(&cap).unwrap(), &cfg) {
            got.entry(k).or_insert(label);
        }
        for (k, label) in &want {
            let Some(ours) = got.get(k) else { continue };
            total += 1;
            masters += usize::from(master(ours) == master(label));
            whole += usize::from(ours.eq_ignore_ascii_case(label));
        }
    }
    let pct = |x: usize| 100.0 * x as f64 / total.max(1) as f64;
    let _ = writeln!(
        std::io::stderr(),
        "flow records: {total} flows, master {:.1}%, whole label {:.1}%",
        pct(masters),
        pct(whole)
    );
    assert!(total > 400, "the captures' flows are found ({total})");
    // The detectors' own floors (crates/dpi/tests/accuracy.rs): the pipeline loses nothing.
    assert!(pct(masters) >= 98.8, "master agreement {:.1}%", pct(masters));
    assert!(pct(whole) >= 94.5, "label agreement {:.1}%", pct(whole));
}

#[test]
fn snabbwall_protocols_are_in_the_flow_records() {
    let labels = |f: &Path| {
        let rows = records(&mut Capture::open(f).unwrap(), &FlowsConfig::default());
        rows.into_iter().map(|(_, label, ..)| label).collect()
    };
    let Some((found, expected)) = snabbwall(labels) else { return };
    assert!(expected >= 30, "the expected sets are read");
    assert!(found >= 36, "{found} of {expected}");
}

/// Labels and metadata do not depend on the number of workers, nor on whether the workers
/// read a mapped file or packets the reading thread parsed from a stream (whose payloads it
/// copies for them).
#[test]
fn workers_and_streams_give_the_same_labels() {
    let Some(dir) = data_dir("pcaps/dpi/ndpi") else { return };
    let mut checked = 0;
    for cap in captures(&dir.join("pcap")) {
        let one = records(&mut Capture::open(&cap).unwrap(), &FlowsConfig::default());
        let bytes = std::fs::read(&cap).unwrap();
        for workers in [2, 3] {
            let cfg = FlowsConfig { workers, ..FlowsConfig::default() };
            let mapped = records(&mut Capture::open(&cap).unwrap(), &cfg);
            assert_eq!(mapped, one, "{} with {workers} workers", cap.display());
            let reader = Box::new(std::io::Cursor::new(bytes.clone()));
            let mut stream = Capture::from_reader("stream", reader).unwrap();
            assert_eq!(records(&mut stream, &cfg), one, "{} streamed", cap.display());
        }
        checked += one.len();
    }
    assert!(checked > 500, "{checked} records compared");
}
