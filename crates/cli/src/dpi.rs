//! `rampart dpi`: application identification of each flow of a capture, and the list of
//! what is recognised.

use std::io::{self, Write};
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use rampart_dpi::Config;
use rampart_engine::{Event, FlowsConfig, Sink};
use rampart_export::{FlowFormat, FlowWriter};
use rampart_flow::{IpFamily, KeyKind, Side};

use crate::Fail;
use crate::input::stop_flag;

/// `rampart dpi` subcommands.
#[derive(Subcommand, Debug)]
pub(crate) enum Cmd {
    /// Label each flow of a capture: one line per flow as it ends (`PROTO A <-> B LABEL BY`
    /// and the metadata found), or the records of `rampart flows --format json`.
    Label {
        /// Capture file (pcap or pcapng).
        #[arg(short = 'r', long = "read", value_name = "FILE")]
        input: PathBuf,
        /// The flow records of `rampart flows --format json` instead.
        #[arg(long)]
        json: bool,
        /// TCP packets with payload inspected per flow (as `flows --dpi-tcp-packets`).
        #[arg(long, alias = "dpi-tcp-packets", default_value_t = 8,
              value_parser = clap::value_parser!(u8).range(1..=64))]
        tcp_packets: u8,
        /// UDP packets inspected per flow (as `flows --dpi-udp-packets`).
        #[arg(long, alias = "dpi-udp-packets", default_value_t = 4,
              value_parser = clap::value_parser!(u8).range(1..=64))]
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

pub(crate) fn run(cmd: Cmd) -> Result<ExitCode, Fail> {
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
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Label { input, json, tcp_packets, udp_packets, dpi } => {
            let cfg = Config { tcp_packets, udp_packets, ..Config::default() };
            label(&input, json, &cfg, dpi == "ndpi").map(|()| ExitCode::SUCCESS)
        }
    }
}

/// Flow records as `dpi label` prints them: `PROTO A <-> B LABEL BY` and the metadata found
/// (`name="value"`), or the record in the JSON schema of `rampart flows`.
struct Labels<W: Write> {
    out: W,
    json: Option<FlowWriter<Vec<u8>>>,
}

impl<W: Write> Sink for Labels<W> {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        let Event::Flow(r) = e else { return Ok(()) };
        if let Some(w) = &mut self.json {
            w.write(r)?;
            let line = std::mem::take(w.get_mut());
            return self.out.write_all(&line);
        }
        let f = &r.flow;
        let k = &f.key;
        let (a, b) = match f.initiator {
            Side::A => ((k.addr_a_bytes(), k.port_a()), (k.addr_b_bytes(), k.port_b())),
            Side::B => ((k.addr_b_bytes(), k.port_b()), (k.addr_a_bytes(), k.port_a())),
        };
        let ports = k.kind() == KeyKind::Ports;
        let l4 = proto_label(k.proto(), k.family());
        let (a, b) = (endpoint(k.family(), a.0, a.1, ports), endpoint(k.family(), b.0, b.1, ports));
        let app = r.app.clone().unwrap_or_default();
        write!(self.out, "{l4} {a} <-> {b} {} {}", app.label, app.by.name())?;
        let m = app.meta();
        for (name, v) in [
            ("sni", &m.sni),
            ("alpn", &m.alpn),
            ("http_host", &m.http_host),
            ("user_agent", &m.user_agent),
            ("dns_query", &m.dns_query),
            ("ssh_banner", &m.ssh_banner),
        ] {
            if let Some(v) = v {
                write!(self.out, " {name}={v:?}")?;
            }
        }
        writeln!(self.out)
    }
}

/// `TCP`, `UDP`, `ICMP`, `ICMP6`, or the protocol number.
fn proto_label(proto: u8, family: IpFamily) -> String {
    match (proto, family) {
        (6, _) => "TCP".into(),
        (17, _) => "UDP".into(),
        (1, IpFamily::V4) => "ICMP".into(),
        (58, IpFamily::V6) => "ICMP6".into(),
        (p, _) => p.to_string(),
    }
}

fn endpoint(family: IpFamily, a: &[u8; 16], port: u16, ports: bool) -> String {
    match (family.addr(a), ports) {
        (IpAddr::V4(v), true) => format!("{v}:{port}"),
        (IpAddr::V6(v), true) => format!("[{v}]:{port}"),
        (ip, false) => ip.to_string(),
    }
}

/// Labels every flow of the capture with rampart's detectors, through the same pipeline and
/// reading loop as `rampart flows`: a line per flow as it ends, with the capture's error
/// (after every flow seen before it is written) as the exit status.
fn label(path: &std::path::Path, json: bool, cfg: &Config, ndpi: bool) -> Result<(), Fail> {
    let mut cap = crate::input::open_file(path)?;
    crate::input::refuse_overwrite(&cap, None)?;
    // Ctrl-C ends reading; the flows seen so far are still written.
    let stop = stop_flag();
    let out = io::BufWriter::new(io::stdout().lock());
    let error = if ndpi {
        ndpi_labels(&mut cap, out, json, &stop)?
    } else {
        let flows = FlowsConfig { rtt: None, dpi: Some(*cfg), ..FlowsConfig::default() };
        let json = json.then(|| FlowWriter::new(Vec::new(), FlowFormat::Json));
        let mut sink = Labels { out, json };
        let outcome = rampart_engine::run(&mut cap, &flows, None, &stop, &mut sink, &mut |_| {})
            .and_then(|o| sink.out.flush().map(|()| o))
            .map_err(|e| Fail::write("cannot write", &e))?;
        outcome.error
    };
    crate::input::report_end(&mut cap, crate::input::Tell::Alone);
    match error {
        Some(e) => Err(Fail(e.to_string(), crate::run_error_status(&e))),
        None => Ok(()),
    }
}

#[cfg(not(feature = "ndpi"))]
fn ndpi_labels(
    _: &mut rampart_capture::Capture,
    _: impl Write,
    _: bool,
    _: &std::sync::atomic::AtomicBool,
) -> Result<Option<rampart_engine::RunError>, Fail> {
    Err(Fail("this rampart was built without nDPI (cargo feature `ndpi`)".into(), 2))
}

/// nDPI's labels for the same flows, through the shared reading loop: nDPI is fed whole IP
/// packets, as ndpiReader feeds it (at most 80 of a TCP flow, 24 of a UDP flow), and each
/// TCP and UDP flow is written at the end, in order of its first packet, with `app_by`
/// `ndpi`, in the same fields as `rampart flows` (JSON) or `dpi label` (text).
#[cfg(feature = "ndpi")]
fn ndpi_labels(
    cap: &mut rampart_capture::Capture,
    mut out: impl Write,
    json: bool,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Option<rampart_engine::RunError>, Fail> {
    use rampart_capture::Frame;
    use rampart_engine::{Consumer, Limits, Summary, read_batches};
    use rampart_wire::PacketMeta;
    use std::collections::HashMap;

    let Some(module) = rampart_dpi::ndpi::Ndpi::new() else {
        return Err(Fail("nDPI could not be started".into(), 2));
    };
    struct Flow<'m> {
        key: rampart_flow::FlowKey,
        first: Side,
        ndpi: rampart_dpi::ndpi::NdpiFlow<'m>,
        packets: u32,
    }
    struct Feed<'m> {
        module: &'m rampart_dpi::ndpi::Ndpi,
        index: HashMap<rampart_flow::FlowKey, usize>,
        flows: Vec<Flow<'m>>,
    }
    impl Consumer for Feed<'_> {
        fn batch(&mut self, frames: &[Frame<'_>], _: &mut Summary) -> io::Result<()> {
            for frame in frames {
                let m = PacketMeta::parse(frame.link, frame.data);
                if (m.proto != 6 && m.proto != 17) || m.is_later_fragment() {
                    continue;
                }
                let Some((key, side)) = rampart_flow::FlowKey::from_meta(&m) else { continue };
                let i = match self.index.get(&key) {
                    Some(&i) => i,
                    None => {
                        let Some(ndpi) = self.module.flow() else { continue };
                        self.flows.push(Flow { key, first: side, ndpi, packets: 0 });
                        self.index.insert(key, self.flows.len() - 1);
                        self.flows.len() - 1
                    }
                };
                let f = &mut self.flows[i];
                f.packets += 1;
                if f.packets <= if m.proto == 6 { 80 } else { 24 } {
                    let l3 = usize::from(m.l3_offset).min(frame.data.len());
                    let end = l3.saturating_add(m.ip_wire_len as usize).min(frame.data.len());
                    f.ndpi.feed(&frame.data[l3..end], frame.ts.as_nanos() / 1_000_000);
                }
            }
            Ok(())
        }
    }
    let mut feed = Feed { module: &module, index: HashMap::new(), flows: Vec::new() };
    let mut s = Summary::default();
    let error = read_batches(cap, &Limits::none(256), None, stop, &mut s, &mut feed, &mut |_| {})
        .map_err(|e| Fail::write("cannot write", &e))?;
    let write = |out: &mut dyn Write, f: &mut Flow<'_>| -> io::Result<()> {
        let k = &f.key;
        let (a, b) = match f.first {
            Side::A => (k.endpoint(Side::A), k.endpoint(Side::B)),
            Side::B => (k.endpoint(Side::B), k.endpoint(Side::A)),
        };
        let label = f.ndpi.label();
        if json {
            let mut l = Vec::new();
            l.extend_from_slice(b"{\"proto\":\"");
            l.extend_from_slice(if k.proto() == 6 { b"tcp" } else { b"udp" });
            l.extend_from_slice(b"\",\"src\":\"");
            rampart_export::num::slot_addr(&mut l, k.family(), a.0);
            write!(l, "\",\"sport\":{},\"dst\":\"", a.1)?;
            rampart_export::num::slot_addr(&mut l, k.family(), b.0);
            write!(l, "\",\"dport\":{},\"app\":", b.1)?;
            rampart_export::text::json_string(&mut l, &label);
            l.extend_from_slice(b",\"app_by\":\"ndpi\"}\n");
            out.write_all(&l)
        } else {
            let l4 = proto_label(k.proto(), k.family());
            let (a, b) =
                (endpoint(k.family(), a.0, a.1, true), endpoint(k.family(), b.0, b.1, true));
            writeln!(out, "{l4} {a} <-> {b} {label} ndpi")
        }
    };
    for f in &mut feed.flows {
        write(&mut out, f).map_err(|e| Fail::write("cannot write", &e))?;
    }
    out.flush().map_err(|e| Fail::write("cannot write", &e))?;
    Ok(error)
}
