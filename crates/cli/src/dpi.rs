//! `rampart dpi`: application identification of each flow of a capture, and the list of
//! what is recognised.

use std::collections::HashMap;
use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use rampart_dpi::{Config, FlowDpi};
use rampart_flow::{FlowKey, Side};
use rampart_wire::PacketMeta;

use crate::input::{Fail, stop_flag};

/// `rampart dpi` subcommands.
#[derive(Subcommand, Debug)]
pub(crate) enum Cmd {
    /// Label each TCP and UDP flow of a capture: one line per flow in order of its first
    /// packet (`PROTO A <-> B LABEL BY` and the metadata found), or JSON lines.
    Label {
        /// Capture file (pcap or pcapng).
        #[arg(short = 'r', long = "read", value_name = "FILE")]
        input: PathBuf,
        /// One JSON object per flow instead.
        #[arg(long)]
        json: bool,
        /// TCP packets with payload inspected per flow.
        #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u8).range(1..=32))]
        tcp_packets: u8,
        /// UDP packets inspected per flow.
        #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u8).range(1..=32))]
        udp_packets: u8,
        /// Which labeller: rampart's own, or nDPI (builds with the `ndpi` feature only;
        /// labels come with `app_by` "ndpi" and no metadata).
        #[arg(long, value_parser = ["rampart", "ndpi"], default_value = "rampart")]
        dpi: String,
    },
    /// The protocols recognised (nDPI's names), from the detector registry: one line each,
    /// tab-separated: name, transport, the evidence needed before a label, and the source
    /// of the facts checked.
    Protocols {
        /// The table as a Markdown document instead (what crates/dpi/PROTOCOLS.md holds).
        #[arg(long)]
        markdown: bool,
    },
}

pub(crate) fn run(cmd: Cmd) -> ExitCode {
    match cmd {
        Cmd::Protocols { markdown } => {
            if markdown {
                print!("{}", rampart_dpi::protocols_markdown());
            } else {
                println!("protocol\ttransport\tevidence\tsource");
                for p in rampart_dpi::protocols() {
                    println!("{}\t{}\t{}\t{}", p.name, p.transport, p.evidence, p.source);
                }
            }
            ExitCode::SUCCESS
        }
        Cmd::Label { input, json, tcp_packets, udp_packets, dpi } => {
            let cfg = Config { tcp_packets, udp_packets, ..Config::default() };
            let ndpi = dpi == "ndpi";
            if ndpi && !cfg!(feature = "ndpi") {
                return Fail(
                    "this rampart was built without nDPI (cargo feature `ndpi`)".into(),
                    2,
                )
                .exit();
            }
            match label(&input, json, &cfg, ndpi) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => e.exit(),
            }
        }
    }
}

struct Entry {
    key: FlowKey,
    /// The side that sent the first packet, and its port and the other's.
    first: Side,
    ports: [u16; 2],
    dpi: FlowDpi,
    /// nDPI's state and its packets so far, when it labels instead.
    #[cfg(feature = "ndpi")]
    ndpi: Option<(rampart_dpi::ndpi::NdpiFlow<'static>, u32)>,
}

/// One nDPI module for the process (it lives until exit).
#[cfg(feature = "ndpi")]
fn ndpi_module() -> Option<&'static rampart_dpi::ndpi::Ndpi> {
    thread_local! {
        static MODULE: Option<&'static rampart_dpi::ndpi::Ndpi> =
            rampart_dpi::ndpi::Ndpi::new().map(|m| &*Box::leak(Box::new(m)));
    }
    MODULE.with(|m| *m)
}

fn address(family: u8, a: &[u8; 16]) -> IpAddr {
    if family == 4 {
        IpAddr::V4(Ipv4Addr::new(a[0], a[1], a[2], a[3]))
    } else {
        IpAddr::V6(Ipv6Addr::from(*a))
    }
}

fn endpoint(family: u8, a: &[u8; 16], port: u16) -> String {
    match address(family, a) {
        IpAddr::V4(v) => format!("{v}:{port}"),
        IpAddr::V6(v) => format!("[{v}]:{port}"),
    }
}

fn json_str(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len() + 2);
    rampart_export::text::json_string(&mut out, s);
    String::from_utf8(out).expect("escaping keeps UTF-8")
}

fn write_flow(out: &mut impl std::io::Write, e: &mut Entry, json: bool) -> std::io::Result<()> {
    e.dpi.give_up(e.ports);
    let k = &e.key;
    let l4 = if k.proto == 6 { "TCP" } else { "UDP" };
    // The initiator first.
    let (a, b) = (endpoint(k.family, &k.addr_a, k.port_a), endpoint(k.family, &k.addr_b, k.port_b));
    let (a, b) = if e.first == Side::A { (a, b) } else { (b, a) };
    #[allow(unused_mut)]
    let (mut label, mut by) = (e.dpi.label().to_string(), e.dpi.by().name());
    #[cfg(feature = "ndpi")]
    if let Some((flow, _)) = &mut e.ndpi {
        label = flow.label();
        by = "ndpi";
    }
    let m = e.dpi.meta();
    let fields = [
        ("sni", &m.sni),
        ("alpn", &m.alpn),
        ("http_host", &m.http_host),
        ("user_agent", &m.user_agent),
        ("dns_query", &m.dns_query),
        ("ssh_banner", &m.ssh_banner),
    ];
    if json {
        write!(
            out,
            "{{\"proto\":\"{l4}\",\"src\":{},\"dst\":{},\"app\":{},\"app_by\":\"{by}\"",
            json_str(&a),
            json_str(&b),
            json_str(&label)
        )?;
        for (name, v) in fields {
            if let Some(v) = v {
                write!(out, ",\"{name}\":{}", json_str(v))?;
            }
        }
        writeln!(out, "}}")
    } else {
        write!(out, "{l4} {a} <-> {b} {label} {by}")?;
        for (name, v) in fields {
            if let Some(v) = v {
                write!(out, " {name}={v:?}")?;
            }
        }
        writeln!(out)
    }
}

fn label(path: &std::path::Path, json: bool, cfg: &Config, ndpi: bool) -> Result<(), Fail> {
    #[cfg(not(feature = "ndpi"))]
    let _ = ndpi;
    let mut cap = crate::input::open_file(path)?;
    crate::input::refuse_overwrite(&cap, None)?;
    let mut index: HashMap<FlowKey, usize> = HashMap::new();
    let mut flows: Vec<Entry> = Vec::new();
    let mut failed = None;
    // Ctrl-C ends reading; the flows seen so far are still written.
    let stop = stop_flag();
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let batch = match cap.next_batch(256) {
            Ok(b) => b,
            Err(e) => {
                failed = Some(e.to_string());
                break;
            }
        };
        if batch.is_empty() {
            break;
        }
        for frame in batch.iter() {
            let m = PacketMeta::parse(frame.link, frame.data);
            if (m.proto != 6 && m.proto != 17) || m.is_later_fragment() {
                continue;
            }
            let Some((key, side)) = FlowKey::from_meta(&m) else { continue };
            let i = *index.entry(key).or_insert_with(|| {
                let mut dpi = FlowDpi::new(m.proto);
                dpi.set_responder(key.family, &m.dst);
                flows.push(Entry {
                    key,
                    first: side,
                    ports: [m.sport, m.dport],
                    dpi,
                    #[cfg(feature = "ndpi")]
                    ndpi: if ndpi {
                        ndpi_module().and_then(|m| m.flow()).map(|f| (f, 0))
                    } else {
                        None
                    },
                });
                flows.len() - 1
            });
            let e = &mut flows[i];
            #[cfg(feature = "ndpi")]
            if let Some((flow, packets)) = &mut e.ndpi {
                // As ndpiReader: whole IP packets, at most 80 TCP or 24 UDP.
                *packets += 1;
                if *packets <= if m.proto == 6 { 80 } else { 24 } {
                    let l3 = usize::from(m.l3_offset).min(frame.data.len());
                    let end = l3.saturating_add(m.ip_wire_len as usize).min(frame.data.len());
                    flow.feed(&frame.data[l3..end], frame.ts.0 / 1_000_000);
                }
                continue;
            }
            if e.dpi.is_done() {
                continue;
            }
            // The payload as captured, without link-layer padding.
            let start = usize::from(m.payload_offset).min(frame.data.len());
            let end = start.saturating_add(m.payload_wire_len as usize).min(frame.data.len());
            e.dpi.feed(cfg, side == e.first, e.ports, &frame.data[start..end]);
        }
    }
    // Every flow found so far is written, even when the capture ends in an error.
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for e in &mut flows {
        write_flow(&mut out, e, json).map_err(|e| Fail(format!("cannot write: {e}"), 2))?;
    }
    out.flush().map_err(|e| Fail(format!("cannot write: {e}"), 2))?;
    crate::input::report_end(&mut cap, crate::input::Tell::Alone);
    match failed {
        Some(e) => Err(Fail(e, 1)),
        None => Ok(()),
    }
}
