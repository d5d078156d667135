//! With the `ndpi` feature: nDPI 4.2 through the optional backend gives the labels nDPI 4.2
//! expects for its own captures (`../shared/data/pcaps/dpi/ndpi/result-4.2`, 32 captures),
//! which shows the backend feeds nDPI as ndpiReader does; and rampart's labels on the same
//! flows are compared with them.
#![cfg(feature = "ndpi")]

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

mod common;

use common::{Key, data_dir, endpoint, expected, key, master};
use rampart_capture::Capture;
use rampart_dpi::ndpi::Ndpi;
use rampart_dpi::{Config, FlowDpi};
use rampart_wire::PacketMeta;

/// Both labellers over a capture: (nDPI's label, rampart's label) per flow.
fn label(nd: &Ndpi, path: &Path) -> BTreeMap<Key, (String, String)> {
    struct Entry<'a> {
        ndpi: rampart_dpi::ndpi::NdpiFlow<'a>,
        ours: FlowDpi,
        first: String,
        ports: [u16; 2],
        packets: u32,
        l4: u8,
    }
    let cfg = Config::default();
    let mut flows: BTreeMap<Key, Entry<'_>> = BTreeMap::new();
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
            let k = key(l4, src.clone(), endpoint(m.family, &m.dst, m.dport));
            let e = flows.entry(k).or_insert_with(|| Entry {
                ndpi: nd.flow().expect("an nDPI flow"),
                ours: FlowDpi::new(m.proto),
                first: src.clone(),
                ports: [m.sport, m.dport],
                packets: 0,
                l4: m.proto,
            });
            e.packets += 1;
            // ndpiReader's limits: 80 TCP or 24 UDP packets.
            let limit = if e.l4 == 6 { 80 } else { 24 };
            let l3 = usize::from(m.l3_offset).min(frame.data.len());
            let end = l3.saturating_add(m.ip_wire_len as usize).min(frame.data.len());
            if e.packets <= limit {
                e.ndpi.feed(&frame.data[l3..end], frame.ts.as_nanos() / 1_000_000);
            }
            let start = usize::from(m.payload_offset).min(frame.data.len());
            let pend = start.saturating_add(m.payload_wire_len as usize).min(frame.data.len());
            let from = e.first == src;
            e.ours.feed(&cfg, from, e.ports, &frame.data[start..pend]);
        }
    }
    flows
        .into_iter()
        .map(|(k, mut e)| {
            e.ours.give_up(e.ports);
            (k, (e.ndpi.label(), e.ours.label().to_string()))
        })
        .collect()
}

#[test]
fn ndpi_backend_reproduces_ndpi_4_2() {
    let Some(dir) = data_dir("pcaps/dpi/ndpi") else { return };
    let nd = Ndpi::new().expect("an nDPI module");
    let mut captures: Vec<PathBuf> =
        std::fs::read_dir(dir.join("result-4.2")).unwrap().map(|e| e.unwrap().path()).collect();
    captures.sort();
    let (mut total, mut same, mut ours_master) = (0, 0, 0);
    let mut err = std::io::stderr();
    for out in captures {
        let name = out.file_name().unwrap().to_string_lossy().trim_end_matches(".out").to_string();
        let want = expected(&out, false);
        let got = label(&nd, &dir.join("pcap").join(&name));
        for (k, label) in &want {
            let Some((ndpi, ours)) = got.get(k) else { continue };
            total += 1;
            if ndpi == label {
                same += 1;
            } else {
                let _ = writeln!(err, "ndpi {name} {k:?}: expected {label}, backend {ndpi}");
            }
            if master(ours) == master(label) {
                ours_master += 1;
            }
        }
    }
    let pct = |x: usize| 100.0 * x as f64 / total.max(1) as f64;
    let _ = writeln!(
        err,
        "nDPI 4.2 labels: {total} flows; backend exact {:.1}%; rampart master {:.1}%",
        pct(same),
        pct(ours_master)
    );
    assert!(total > 150, "flows found: {total}");
    assert!(pct(same) >= 97.0, "the backend reproduces nDPI 4.2: {:.1}%", pct(same));
}
