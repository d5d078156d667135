//! What identification costs: every TCP and UDP flow of the shared nDPI captures
//! (`../shared/data/pcaps/dpi/ndpi/pcap`, group `dpi`, and the rest of nDPI's suite in
//! `ndpi-suite/pcap`, group `dpi_suite`; packets held in memory) labelled from a fresh
//! state, as when every flow is new (`new_flows`: time per flow), and one more packet fed to
//! flows already decided (`decided`: time per packet). nDPI's own figures on this machine
//! class are in `../shared/notes/dpi.md` §4; with `--features ndpi` the same flows also go
//! through nDPI 4.2 in the same run (`ndpi_new_flows`). `cargo bench -p rampart-dpi --bench
//! dpi [--features ndpi]` (prints one line and measures nothing without the data).

use std::collections::HashMap;
use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use rampart_capture::Capture;
use rampart_dpi::{Config, FlowDpi};
use rampart_wire::PacketMeta;

/// A flow's packets: (from the initiator, payload), its ports and responder address, and
/// (for nDPI) each packet from its IP header, with its time in milliseconds.
struct Flow {
    l4: u8,
    ports: [u16; 2],
    family: rampart_flow::IpFamily,
    responder: [u8; 16],
    packets: Vec<(bool, Vec<u8>)>,
    #[cfg_attr(not(feature = "ndpi"), allow(dead_code))]
    ip: Vec<(Vec<u8>, u64)>,
}

/// Protocol, source, destination, source port, destination port.
type Tuple = (u8, [u8; 16], [u8; 16], u16, u16);

fn flows(sub: &str) -> Option<Vec<Flow>> {
    let dir = std::env::var_os("RAMPART_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data").into())
        .join(sub);
    if !dir.is_dir() {
        println!("skipped: no nDPI captures at {}", dir.display());
        return None;
    }
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(&dir).ok()?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    for f in files {
        let Ok(mut cap) = Capture::open(&f) else { continue };
        let mut index: HashMap<Tuple, usize> = HashMap::new();
        let first = out.len();
        while let Ok(batch) = cap.next_batch(256)
            && !batch.is_empty()
        {
            for frame in batch.iter() {
                let m = PacketMeta::parse(frame.link, frame.data);
                if (m.proto != 6 && m.proto != 17) || !m.has_ports() || m.is_later_fragment() {
                    continue;
                }
                let fwd = (m.proto, m.src, m.dst, m.sport, m.dport);
                let rev = (m.proto, m.dst, m.src, m.dport, m.sport);
                let (i, from_initiator) = match (index.get(&fwd), index.get(&rev)) {
                    (Some(&i), _) => (i, true),
                    (_, Some(&i)) => (i, false),
                    _ => {
                        out.push(Flow {
                            l4: m.proto,
                            ports: [m.sport, m.dport],
                            family: m.family.ip().unwrap_or(rampart_flow::IpFamily::V6),
                            responder: m.dst,
                            packets: Vec::new(),
                            ip: Vec::new(),
                        });
                        index.insert(fwd, out.len() - 1 - first);
                        (out.len() - 1 - first, true)
                    }
                };
                let start = usize::from(m.payload_offset).min(frame.data.len());
                let end = start.saturating_add(m.payload_wire_len as usize).min(frame.data.len());
                let fl = &mut out[first + i];
                if fl.packets.len() < 32 {
                    fl.packets.push((from_initiator, frame.data[start..end].to_vec()));
                    let l3 = usize::from(m.l3_offset).min(frame.data.len());
                    let ip_end = l3.saturating_add(m.ip_wire_len as usize).min(frame.data.len());
                    fl.ip.push((frame.data[l3..ip_end].to_vec(), frame.ts.as_nanos() / 1_000_000));
                }
            }
        }
    }
    Some(out)
}

fn label(f: &Flow, cfg: &Config) -> FlowDpi {
    let mut d = FlowDpi::new(f.l4);
    d.set_responder(f.family, &f.responder);
    for (dir, p) in &f.packets {
        if d.feed(cfg, *dir, f.ports, p) {
            break;
        }
    }
    d.give_up(f.ports);
    d
}

fn bench(c: &mut Criterion) {
    // The curated captures, then the rest of nDPI's suite (about 235 protocols).
    for (group, sub) in [("dpi", "pcaps/dpi/ndpi/pcap"), ("dpi_suite", "pcaps/dpi/ndpi-suite/pcap")]
    {
        bench_group(c, group, sub);
    }
}

fn bench_group(c: &mut Criterion, group: &str, sub: &str) {
    let Some(flows) = flows(sub) else { return };
    let cfg = Config::default();
    println!(
        "{group}: {} flows; {} bytes of state per flow (FlowDpi)",
        flows.len(),
        std::mem::size_of::<FlowDpi>()
    );
    let mut g = c.benchmark_group(group);
    g.sample_size(20);
    g.bench_function("new_flows", |b| {
        b.iter(|| {
            for f in &flows {
                black_box(label(f, &cfg).label());
            }
        })
    });
    #[cfg(feature = "ndpi")]
    {
        // The same flows through nDPI 4.2 (the `ndpi` feature), in the same run: each flow
        // new, packets until nDPI's detection is over.
        let nd = rampart_dpi::ndpi::Ndpi::new().expect("an nDPI module");
        g.bench_function("ndpi_new_flows", |b| {
            b.iter(|| {
                for f in &flows {
                    let mut fl = nd.flow().expect("an nDPI flow");
                    for (p, ms) in &f.ip {
                        if fl.feed(p, *ms) {
                            break;
                        }
                    }
                    black_box(fl.label());
                }
            })
        });
    }
    let mut decided: Vec<FlowDpi> = flows.iter().map(|f| label(f, &cfg)).collect();
    g.bench_function("decided", |b| {
        b.iter(|| {
            for (d, f) in decided.iter_mut().zip(&flows) {
                let p = f.packets.first().map_or(&[][..], |p| &p.1);
                black_box(d.feed(&cfg, true, f.ports, p));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
