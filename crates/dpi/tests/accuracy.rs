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
use rampart_wire::PacketMeta;

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
                f.set_responder(m.family.ip().unwrap_or(rampart_flow::IpFamily::V6), &m.dst);
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

/// Agreement over one capture folder's flows.
#[derive(Default)]
struct Tally {
    /// Flows nDPI labels by payload inspection that rampart also finds.
    flows: usize,
    /// Flows whose master protocol agrees.
    master: usize,
    /// Flows whose whole label agrees.
    label: usize,
    /// Flows rampart gives a master protocol other than nDPI's (not counting unknown).
    wrong: usize,
    /// Per capture: (name, flows, master, label, wrong).
    captures: Vec<(String, usize, usize, usize, usize)>,
    /// Per nDPI master: (flows, master, label).
    per_master: BTreeMap<String, (usize, usize, usize)>,
    /// (nDPI label, rampart label) -> flows, for the disagreements.
    misses: BTreeMap<(String, String), usize>,
}

impl Tally {
    fn pct(&self, x: usize) -> f64 {
        100.0 * x as f64 / self.flows.max(1) as f64
    }

    /// Master agreement averaged over the captures (each capture weighs the same).
    fn per_capture_master(&self) -> f64 {
        let rows: Vec<f64> = self
            .captures
            .iter()
            .filter(|c| c.1 > 0)
            .map(|c| 100.0 * c.2 as f64 / c.1 as f64)
            .collect();
        rows.iter().sum::<f64>() / rows.len().max(1) as f64
    }

    fn add(&mut self, other: Tally) {
        self.flows += other.flows;
        self.master += other.master;
        self.label += other.label;
        self.wrong += other.wrong;
        self.captures.extend(other.captures);
        for (k, v) in other.per_master {
            let e = self.per_master.entry(k).or_default();
            e.0 += v.0;
            e.1 += v.1;
            e.2 += v.2;
        }
        for (k, v) in other.misses {
            *self.misses.entry(k).or_default() += v;
        }
    }

    fn summary(&self) -> String {
        format!(
            "flows {}: master {:.1} %, label {:.1} %, master per capture {:.1} %, false {:.2} %",
            self.flows,
            self.pct(self.master),
            self.pct(self.label),
            self.per_capture_master(),
            self.pct(self.wrong),
        )
    }
}

/// Labels every capture of `dir/pcap` and compares with `dir/result`.
fn tally(dir: &Path) -> Tally {
    let mut t = Tally::default();
    let mut captures: Vec<PathBuf> =
        std::fs::read_dir(dir.join("pcap")).unwrap().map(|e| e.unwrap().path()).collect();
    captures.sort();
    let show = std::env::var_os("RAMPART_DPI_MISSES").is_some();
    for cap in captures {
        let name = cap.file_name().unwrap().to_string_lossy().into_owned();
        let want = expected(&dir.join("result").join(format!("{name}.out")), true);
        if want.is_empty() {
            continue;
        }
        let got = label_capture(&cap);
        let mut row = (name.clone(), 0, 0, 0, 0);
        for (k, label) in &want {
            let Some((ours, host)) = got.get(k) else { continue };
            row.1 += 1;
            let e = t.per_master.entry(master(label)).or_default();
            e.0 += 1;
            if master(ours) == master(label) {
                row.2 += 1;
                e.1 += 1;
            } else if master(ours) != "unknown" {
                row.4 += 1;
            }
            if ours.eq_ignore_ascii_case(label) {
                row.3 += 1;
                e.2 += 1;
            } else {
                *t.misses.entry((label.clone(), ours.clone())).or_default() += 1;
                if show {
                    let _ = writeln!(
                        std::io::stderr(),
                        "miss {name} {k:?}: nDPI {label}, rampart {ours} ({host})"
                    );
                }
            }
        }
        t.flows += row.1;
        t.master += row.2;
        t.label += row.3;
        t.wrong += row.4;
        t.captures.push(row);
    }
    t
}

/// Prints the per-capture table, the per-protocol table and, with `RAMPART_DPI_MISSES`, the
/// disagreements by count.
fn report(title: &str, t: &Tally) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "== {title}");
    let _ = writeln!(
        err,
        "{:<48} {:>6} {:>7} {:>7} {:>6}",
        "capture", "flows", "master", "label", "false"
    );
    for (name, n, m, l, w) in &t.captures {
        let _ = writeln!(err, "{name:<48} {n:>6} {m:>7} {l:>7} {w:>6}");
    }
    let _ = writeln!(err, "{:<20} {:>6} {:>7} {:>7}", "nDPI master", "flows", "master", "label");
    for (m, (n, a, b)) in &t.per_master {
        let _ = writeln!(err, "{m:<20} {n:>6} {a:>7} {b:>7}");
    }
    if std::env::var_os("RAMPART_DPI_MISSES").is_some() {
        let mut misses: Vec<_> = t.misses.iter().collect();
        misses.sort_by(|a, b| b.1.cmp(a.1));
        for ((want, ours), n) in misses {
            let _ = writeln!(err, "misses {n:>5}  nDPI {want:<32} rampart {ours}");
        }
    }
    let _ = writeln!(err, "{title}: {}", t.summary());
}

#[test]
fn agreement_with_ndpi() {
    let Some(dir) = data() else { return };
    let t = tally(&dir);
    report("nDPI captures", &t);
    assert!(t.flows > 400, "the captures' flows are found ({})", t.flows);
    // Floors reached so far.
    assert!(t.pct(t.master) >= FLOOR_MASTER, "master agreement {}", t.summary());
    assert!(t.pct(t.label) >= FLOOR_WHOLE, "label agreement {}", t.summary());
}

const FLOOR_MASTER: f64 = 98.8;
const FLOOR_WHOLE: f64 = 94.4;

/// The whole of nDPI's regression suite: the curated captures and the rest (`ndpi-suite/`).
#[test]
fn agreement_with_ndpi_suite() {
    let Some(first) = data() else { return };
    let Some(rest) = data_dir("pcaps/dpi/ndpi-suite") else { return };
    let mut t = tally(&first);
    let suite = tally(&rest);
    report("nDPI suite (ndpi-suite/)", &suite);
    t.add(suite);
    let _ = writeln!(std::io::stderr(), "all nDPI captures: {}", t.summary());
    assert!(t.captures.len() > 500, "the suite's captures are read ({})", t.captures.len());
    // Floors reached so far (the targets are 95 % master, 85 % label, 90 % master per
    // capture and at most 1 % false labels).
    assert!(t.pct(t.master) >= SUITE_MASTER, "master agreement: {}", t.summary());
    assert!(t.pct(t.label) >= SUITE_LABEL, "label agreement: {}", t.summary());
    assert!(t.per_capture_master() >= SUITE_PER_CAPTURE, "per capture: {}", t.summary());
    assert!(t.pct(t.wrong) <= SUITE_FALSE, "false labels: {}", t.summary());
}

const SUITE_MASTER: f64 = 97.1;
const SUITE_LABEL: f64 = 93.1;
const SUITE_PER_CAPTURE: f64 = 93.2;
const SUITE_FALSE: f64 = 0.5;

#[test]
fn snabbwall_expected_protocols() {
    let labels = |f: &Path| label_capture(f).into_values().map(|(label, _)| label).collect();
    let Some((found, expected)) = snabbwall(labels) else { return };
    assert!(expected >= 30, "the expected sets are read");
    // The floor reached so far.
    assert!(found >= SNABBWALL_FLOOR, "{found} of {expected}");
}

const SNABBWALL_FLOOR: usize = 36;
