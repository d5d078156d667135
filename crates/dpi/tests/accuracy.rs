//! Agreement with nDPI's labels on the shared nDPI captures (`../shared/data/pcaps/dpi`):
//! over the flows nDPI labels by payload inspection (`[Confidence: DPI]`), keyed on the
//! transport protocol and the unordered endpoint pair, how often rampart's master protocol
//! and whole label agree. Prints a per-protocol table; the floors asserted are the ones
//! reached so far (they can only rise).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

mod common;

use common::{Key, data_dir, endpoint, expected, key, master, snabbwall};
use rampart_capture::Capture;
use rampart_dpi::{Config, FlowDpi};
use rampart_wire::{Family, PacketMeta};

fn data() -> Option<PathBuf> {
    data_dir("pcaps/dpi/ndpi")
}

/// rampart's label for each flow of a capture.
fn label_capture(path: &Path) -> BTreeMap<Key, (String, String)> {
    let cfg = Config::default();
    let mut flows: BTreeMap<Key, (String, FlowDpi, [u16; 2])> = BTreeMap::new();
    let Ok(mut cap) = Capture::open(path) else { return BTreeMap::new() };
    while let Ok(batch) = cap.next_batch(256)
        && !batch.is_empty()
    {
        for frame in batch.iter() {
            let m = PacketMeta::parse(frame.link, frame.data);
            let l4 = match m.proto {
                6 => "TCP",
                17 => "UDP",
                _ => continue,
            };
            if !m.has_ports() || m.is_later_fragment() {
                continue;
            }
            let src = endpoint(m.family, &m.src, m.sport);
            let dst = endpoint(m.family, &m.dst, m.dport);
            let k = key(l4, src.clone(), dst);
            let entry = flows.entry(k).or_insert_with(|| {
                let mut f = FlowDpi::new(m.proto);
                f.set_responder(if m.family == Family::V4 { 4 } else { 6 }, &m.dst);
                (src.clone(), f, [m.sport, m.dport])
            });
            let from_initiator = entry.0 == src;
            // The payload as captured, without link-layer padding.
            let start = usize::from(m.payload_offset).min(frame.data.len());
            let end = start.saturating_add(m.payload_wire_len as usize).min(frame.data.len());
            let payload = &frame.data[start..end];
            entry.1.feed(&cfg, from_initiator, entry.2, payload);
        }
    }
    flows
        .into_iter()
        .map(|(k, (_, mut f, ports))| {
            f.give_up(ports);
            let host = f
                .meta()
                .sni
                .as_deref()
                .or(f.meta().http_host.as_deref())
                .or(f.meta().dns_query.as_deref())
                .unwrap_or("")
                .to_string();
            (k, (f.label().to_string(), host))
        })
        .collect()
}

#[test]
fn agreement_with_ndpi() {
    let Some(dir) = data() else { return };
    let mut per: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    let (mut total, mut masters, mut whole) = (0usize, 0usize, 0usize);
    let mut captures: Vec<PathBuf> =
        std::fs::read_dir(dir.join("pcap")).unwrap().map(|e| e.unwrap().path()).collect();
    captures.sort();
    for cap in captures {
        let name = cap.file_name().unwrap().to_string_lossy().into_owned();
        let want = expected(&dir.join("result").join(format!("{name}.out")), true);
        if want.is_empty() {
            continue;
        }
        let got = label_capture(&cap);
        for (k, label) in &want {
            let Some((ours, host)) = got.get(k) else { continue };
            total += 1;
            let e = per.entry(master(label)).or_default();
            e.0 += 1;
            if master(ours) == master(label) {
                masters += 1;
                e.1 += 1;
            }
            if ours.eq_ignore_ascii_case(label) {
                whole += 1;
                e.2 += 1;
            } else if std::env::var_os("RAMPART_DPI_MISSES").is_some() {
                let _ = writeln!(
                    std::io::stderr(),
                    "miss {name} {k:?}: nDPI {label}, rampart {ours} ({host})"
                );
            }
        }
    }
    let mut err = std::io::stderr();
    let _ = writeln!(err, "{:<20} {:>6} {:>7} {:>7}", "nDPI master", "flows", "master", "label");
    for (m, (n, a, b)) in &per {
        let _ = writeln!(err, "{m:<20} {n:>6} {a:>7} {b:>7}");
    }
    let pct = |x: usize| 100.0 * x as f64 / total.max(1) as f64;
    let _ =
        writeln!(err, "flows {total}: master {:.1}%, whole label {:.1}%", pct(masters), pct(whole));
    assert!(total > 400, "the captures' flows are found ({total})");
    // Floors reached so far.
    assert!(pct(masters) >= FLOOR_MASTER, "master agreement {:.1}%", pct(masters));
    assert!(pct(whole) >= FLOOR_WHOLE, "label agreement {:.1}%", pct(whole));
}

const FLOOR_MASTER: f64 = 97.2;
const FLOOR_WHOLE: f64 = 89.3;

#[test]
fn snabbwall_expected_protocols() {
    let labels = |f: &Path| label_capture(f).into_values().map(|(label, _)| label).collect();
    let Some((found, expected)) = snabbwall(labels) else { return };
    assert!(expected >= 30, "the expected sets are read");
    // The floor reached so far.
    assert!(found >= SNABBWALL_FLOOR, "{found} of {expected}");
}

const SNABBWALL_FLOOR: usize = 36;
