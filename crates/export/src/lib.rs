//! Flow records out: JSON lines and CSV, formatted by hand into a reused buffer.
//!
//! Field names (JSON keys and CSV columns, in this order):
//!
//! | field | meaning |
//! |---|---|
//! | `proto` | `tcp`, `udp`, `icmp` (over IPv4), `icmp6` (over IPv6), or the protocol number |
//! | `src`, `sport` | the initiator (sender of the first packet seen) and its port |
//! | `dst`, `dport` | the responder; ports are 0 where the protocol has none |
//! | `first`, `last` | first and last packet, epoch seconds with microseconds |
//! | `duration` | `last - first` in seconds |
//! | `packets_fwd`, `bytes_fwd` | initiator to responder; bytes are frame lengths on the wire |
//! | `packets_rev`, `bytes_rev` | responder to initiator |
//! | `tcp_flags_fwd`, `tcp_flags_rev` | TCP flags seen each way, as letters `CEUAPRSF` |
//! | `icmp_id` | the echo identifier of an ICMP echo flow |
//! | `end_reason` | `idle`, `evicted` or `end` |
//! | `rtt_src_count`, `_min`, `_median`, `_max` | TCP: passive RTT samples from the capture point to the initiator and back (seconds; median within ~3 %) |
//! | `rtt_dst_count`, `_min`, `_median`, `_max` | the same towards the responder |
//! | `app` | the application, in nDPI's naming: `MASTER` or `MASTER.APP` (`DNS`, `TLS.YouTube`, `Unknown`) |
//! | `app_by` | how it was found: `dpi` (the packets), `port`, `address` (the responder's address block), `none` |
//! | `sni`, `alpn` | TLS or QUIC server name, and the ALPN protocols offered (comma-separated) |
//! | `http_host`, `user_agent` | HTTP request headers |
//! | `dns_query` | the DNS query name |
//! | `ssh_banner` | the first SSH banner seen |
//!
//! JSON omits `tcp_flags_*` and `rtt_*` for non-TCP flows, `rtt_*_min/median/max` when there
//! are no samples, `icmp_id` for non-echo flows, `app` and the fields after it when
//! application identification is off, and each metadata field when it was not found; CSV
//! leaves those cells empty. Text fields are escaped as JSON strings, and quoted in CSV when
//! they hold a comma, quote or line break.
//!
//! The [`rtt`] module writes RTT samples (pping's two formats and JSON) and per-flow RTT
//! summaries; [`num`] holds the hand-written number and address formatting both use. Numbers are JSON numbers, addresses strings (IPv6 in RFC 5952 form).
#![forbid(unsafe_code)]

use std::io::{self, Write};
use std::net::IpAddr;

use rampart_dpi::App;
use rampart_flow::{EndedFlow, KeyKind};
use rampart_rtt::RttSummary;
use rampart_wire::proto;

pub mod num;
pub mod rtt;
pub mod text;

use num::int;

/// Output format of flow records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowFormat {
    /// One JSON object per line.
    Json,
    /// Comma-separated values under a header line.
    Csv,
}

const COLUMNS: &str = "proto,src,sport,dst,dport,first,last,duration,packets_fwd,bytes_fwd,\
packets_rev,bytes_rev,tcp_flags_fwd,tcp_flags_rev,icmp_id,end_reason,rtt_src_count,rtt_src_min,\
rtt_src_median,rtt_src_max,rtt_dst_count,rtt_dst_min,rtt_dst_median,rtt_dst_max,app,app_by,sni,\
alpn,http_host,user_agent,dns_query,ssh_banner";

/// Writes flow records to `W`. Output is buffered by `W`; call [`FlowWriter::flush`] before exit.
pub struct FlowWriter<W: Write> {
    out: W,
    format: FlowFormat,
    line: Vec<u8>,
    header_done: bool,
}

impl<W: Write> FlowWriter<W> {
    /// A writer of `format` records to `out`.
    pub fn new(out: W, format: FlowFormat) -> Self {
        Self { out, format, line: Vec::with_capacity(512), header_done: false }
    }

    /// Writes the CSV header if it has not been written (JSON has none). Called by the first
    /// [`FlowWriter::write`]; call it directly so that an empty result still has its header.
    pub fn header(&mut self) -> io::Result<()> {
        if self.format == FlowFormat::Csv && !self.header_done {
            self.out.write_all(COLUMNS.as_bytes())?;
            self.out.write_all(b"\n")?;
        }
        self.header_done = true;
        Ok(())
    }

    /// Writes one flow record with its RTT summary and its application (`None` when
    /// identification is off).
    pub fn write(&mut self, e: &EndedFlow, rtt: &RttSummary, app: Option<&App>) -> io::Result<()> {
        self.header()?;
        self.line.clear();
        let f = &e.flow;
        let (src, sport, dst, dport) = f.endpoints();
        let (sport, dport) = match f.key.kind() {
            KeyKind::Ports => (sport, dport),
            KeyKind::Echo | KeyKind::Pair => (0, 0),
        };
        let tcp = f.key.proto == proto::TCP;
        let echo = (f.key.kind() == KeyKind::Echo).then_some(f.key.port_a);
        let (rtt_src, rtt_dst) = rtt::toward(f.initiator, rtt);
        let l = &mut self.line;
        match self.format {
            FlowFormat::Json => {
                l.extend_from_slice(b"{\"proto\":");
                proto_name(l, f.key.proto, f.key.family, true);
                l.extend_from_slice(b",\"src\":\"");
                addr(l, src);
                l.extend_from_slice(b"\",\"sport\":");
                int(l, sport);
                l.extend_from_slice(b",\"dst\":\"");
                addr(l, dst);
                l.extend_from_slice(b"\",\"dport\":");
                int(l, dport);
                l.extend_from_slice(b",\"first\":");
                epoch(l, f.first);
                l.extend_from_slice(b",\"last\":");
                epoch(l, f.last);
                l.extend_from_slice(b",\"duration\":");
                epoch(l, f.last.saturating_sub(f.first));
                for (name, v) in [
                    (&b",\"packets_fwd\":"[..], f.packets[0]),
                    (b",\"bytes_fwd\":", f.bytes[0]),
                    (b",\"packets_rev\":", f.packets[1]),
                    (b",\"bytes_rev\":", f.bytes[1]),
                ] {
                    l.extend_from_slice(name);
                    int(l, v);
                }
                if tcp {
                    l.extend_from_slice(b",\"tcp_flags_fwd\":\"");
                    flags(l, f.tcp_flags[0]);
                    l.extend_from_slice(b"\",\"tcp_flags_rev\":\"");
                    flags(l, f.tcp_flags[1]);
                    l.push(b'"');
                }
                if let Some(id) = echo {
                    l.extend_from_slice(b",\"icmp_id\":");
                    int(l, id);
                }
                l.extend_from_slice(b",\"end_reason\":\"");
                l.extend_from_slice(e.reason.name().as_bytes());
                l.push(b'"');
                if let Some(app) = app {
                    app_json(l, app);
                }
                if tcp {
                    rtt::summary_json(l, rtt_src, rtt_dst);
                }
                l.extend_from_slice(b"}\n");
            }
            FlowFormat::Csv => {
                proto_name(l, f.key.proto, f.key.family, false);
                l.push(b',');
                addr(l, src);
                l.push(b',');
                int(l, sport);
                l.push(b',');
                addr(l, dst);
                l.push(b',');
                int(l, dport);
                for t in [f.first, f.last, f.last.saturating_sub(f.first)] {
                    l.push(b',');
                    epoch(l, t);
                }
                for v in [f.packets[0], f.bytes[0], f.packets[1], f.bytes[1]] {
                    l.push(b',');
                    int(l, v);
                }
                l.push(b',');
                if tcp {
                    flags(l, f.tcp_flags[0]);
                }
                l.push(b',');
                if tcp {
                    flags(l, f.tcp_flags[1]);
                }
                l.push(b',');
                if let Some(id) = echo {
                    int(l, id);
                }
                l.push(b',');
                l.extend_from_slice(e.reason.name().as_bytes());
                if tcp {
                    rtt::summary_csv(l, rtt_src, rtt_dst);
                } else {
                    l.extend_from_slice(b",,,,,,,,");
                }
                match app {
                    Some(app) => app_csv(l, app),
                    None => l.extend_from_slice(b",,,,,,,,"),
                }
                l.push(b'\n');
            }
        }
        self.out.write_all(&self.line)
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// The metadata fields after `app` and `app_by`, in column order.
fn meta_fields(app: &App) -> [(&'static [u8], Option<&str>); 6] {
    let m = app.meta();
    [
        (b"sni", m.sni.as_deref()),
        (b"alpn", m.alpn.as_deref()),
        (b"http_host", m.http_host.as_deref()),
        (b"user_agent", m.user_agent.as_deref()),
        (b"dns_query", m.dns_query.as_deref()),
        (b"ssh_banner", m.ssh_banner.as_deref()),
    ]
}

/// Writes a `Display` value into the line (writing into a Vec cannot fail).
fn display(l: &mut Vec<u8>, v: impl std::fmt::Display) {
    let _ = write!(l, "{v}");
}

fn app_json(l: &mut Vec<u8>, app: &App) {
    l.extend_from_slice(b",\"app\":\"");
    let start = l.len();
    display(l, app.label);
    // Labels are names from fixed lists and need no escaping; should one ever need it, it
    // gets it.
    if l[start..].iter().any(|&b| b == b'"' || b == b'\\' || b < 0x20) {
        let label = l.split_off(start);
        text::json_escaped(l, &String::from_utf8_lossy(&label));
    }
    l.extend_from_slice(b"\",\"app_by\":\"");
    l.extend_from_slice(app.by.name().as_bytes());
    l.push(b'"');
    for (name, v) in meta_fields(app) {
        if let Some(v) = v {
            l.extend_from_slice(b",\"");
            l.extend_from_slice(name);
            l.extend_from_slice(b"\":");
            text::json_string(l, v);
        }
    }
}

fn app_csv(l: &mut Vec<u8>, app: &App) {
    l.push(b',');
    let start = l.len();
    display(l, app.label);
    if l[start..].iter().any(|&b| matches!(b, b',' | b'"' | b'\n' | b'\r')) {
        let label = l.split_off(start);
        text::csv_field(l, &String::from_utf8_lossy(&label));
    }
    l.push(b',');
    l.extend_from_slice(app.by.name().as_bytes());
    for (_, v) in meta_fields(app) {
        l.push(b',');
        if let Some(v) = v {
            text::csv_field(l, v);
        }
    }
}

/// Nanoseconds as seconds with six decimals (microseconds, truncated).
fn epoch(l: &mut Vec<u8>, ns: u64) {
    int(l, ns / 1_000_000_000);
    l.push(b'.');
    let us = (ns % 1_000_000_000) / 1000;
    let mut buf = itoa::Buffer::new();
    let digits = buf.format(us);
    l.extend(std::iter::repeat_n(b'0', 6 - digits.len()));
    l.extend_from_slice(digits.as_bytes());
}

fn addr(l: &mut Vec<u8>, a: IpAddr) {
    // Writing into a Vec cannot fail.
    let _ = write!(l, "{a}");
}

fn proto_name(l: &mut Vec<u8>, p: u8, family: u8, quote: bool) {
    let name = match (p, family) {
        (proto::TCP, _) => "tcp",
        (proto::UDP, _) => "udp",
        (proto::ICMP, 4) => "icmp",
        (proto::ICMPV6, 6) => "icmp6",
        _ => {
            int(l, p);
            return;
        }
    };
    if quote {
        l.push(b'"');
    }
    l.extend_from_slice(name.as_bytes());
    if quote {
        l.push(b'"');
    }
}

fn flags(l: &mut Vec<u8>, f: u16) {
    const LETTERS: [(u16, u8); 8] = [
        (0x80, b'C'),
        (0x40, b'E'),
        (0x20, b'U'),
        (0x10, b'A'),
        (0x08, b'P'),
        (0x04, b'R'),
        (0x02, b'S'),
        (0x01, b'F'),
    ];
    for (bit, c) in LETTERS {
        if f & bit != 0 {
            l.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rampart_flow::{EndReason, Flow, FlowId, FlowKey, KeyKind, PacketInfo, Side};

    fn ended(proto: u8, kind: KeyKind, family: u8) -> EndedFlow {
        let mut a = [0; 16];
        let mut b = [0; 16];
        if family == 4 {
            a[..4].copy_from_slice(&[10, 0, 0, 1]);
            b[..4].copy_from_slice(&[10, 0, 0, 2]);
        } else {
            a = "fd77::1".parse::<std::net::Ipv6Addr>().unwrap().octets();
            b = "fd77::2".parse::<std::net::Ipv6Addr>().unwrap().octets();
        }
        let (sp, dp) = if kind == KeyKind::Ports { (40000, 80) } else { (7, 7) };
        let (key, side) = FlowKey::new(b, dp, a, sp, proto, family, kind);
        let p = PacketInfo {
            key,
            side,
            hash: 0,
            ts: 1_700_000_000_000_001_000,
            wire_len: 60,
            tcp_flags: 0x1b,
        };
        let mut flow = Flow::start(&p);
        flow.last = 1_700_000_001_500_000_999;
        flow.packets = [3, 2];
        flow.bytes = [180, 1500];
        flow.tcp_flags = [0x1b, 0x12];
        EndedFlow { flow, reason: EndReason::End, id: FlowId(0) }
    }

    fn render(format: FlowFormat, e: &EndedFlow) -> String {
        let mut w = FlowWriter::new(Vec::new(), format);
        w.write(e, &RttSummary::default(), None).unwrap();
        String::from_utf8(w.into_inner().unwrap()).unwrap()
    }

    #[test]
    fn json_tcp() {
        let s = render(FlowFormat::Json, &ended(6, KeyKind::Ports, 4));
        assert_eq!(
            s,
            "{\"proto\":\"tcp\",\"src\":\"10.0.0.2\",\"sport\":80,\"dst\":\"10.0.0.1\",\
             \"dport\":40000,\"first\":1700000000.000001,\"last\":1700000001.500000,\
             \"duration\":1.499999,\"packets_fwd\":3,\"bytes_fwd\":180,\"packets_rev\":2,\
             \"bytes_rev\":1500,\"tcp_flags_fwd\":\"APSF\",\"tcp_flags_rev\":\"AS\",\
             \"end_reason\":\"end\",\"rtt_src_count\":0,\"rtt_dst_count\":0}\n"
        );
        assert_eq!(ended(6, KeyKind::Ports, 4).flow.initiator, Side::B);
        // Samples towards each end: side B is the initiator here, so sides[1] is `rtt_src`.
        let mut r = RttSummary::default();
        r.sides[1] = rampart_rtt::DirSummary { count: 2, min: 1_000, median: 1_500, max: 2_000 };
        let mut w = FlowWriter::new(Vec::new(), FlowFormat::Json);
        w.write(&ended(6, KeyKind::Ports, 4), &r, None).unwrap();
        let s = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert!(
            s.ends_with(
                ",\"rtt_src_count\":2,\"rtt_src_min\":0.000001000,\"rtt_src_median\":0.000001500,\
                 \"rtt_src_max\":0.000002000,\"rtt_dst_count\":0}\n"
            ),
            "{s}"
        );
    }

    #[test]
    fn json_icmp6_echo_and_other_protocols() {
        let s = render(FlowFormat::Json, &ended(58, KeyKind::Echo, 6));
        assert!(s.starts_with("{\"proto\":\"icmp6\",\"src\":\"fd77::2\",\"sport\":0,"), "{s}");
        assert!(s.contains(",\"icmp_id\":7,") && !s.contains("tcp_flags"), "{s}");
        let s = render(FlowFormat::Json, &ended(47, KeyKind::Pair, 4));
        assert!(s.starts_with("{\"proto\":47,"), "{s}");
    }

    #[test]
    fn csv_has_a_header_and_fixed_columns() {
        let mut w = FlowWriter::new(Vec::new(), FlowFormat::Csv);
        w.write(&ended(17, KeyKind::Ports, 4), &RttSummary::default(), None).unwrap();
        w.write(&ended(6, KeyKind::Ports, 6), &RttSummary::default(), None).unwrap();
        let s = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let lines: Vec<_> = s.lines().collect();
        assert_eq!(lines[0], COLUMNS);
        let n = lines[0].split(',').count();
        assert!(lines.iter().all(|l| l.split(',').count() == n));
        assert_eq!(
            lines[1],
            "udp,10.0.0.2,80,10.0.0.1,40000,1700000000.000001,1700000001.500000,1.499999,\
             3,180,2,1500,,,,end,,,,,,,,,,,,,,,,"
        );
        let mut w = FlowWriter::new(Vec::new(), FlowFormat::Csv);
        w.header().unwrap();
        assert_eq!(w.into_inner().unwrap(), format!("{COLUMNS}\n").into_bytes());
    }

    fn tls_app() -> App {
        let meta = rampart_dpi::Meta {
            sni: Some("www.youtube.com".into()),
            alpn: Some("h2,http/1.1".into()),
            user_agent: Some("a \"quoted\", \\ agent".into()),
            ..Default::default()
        };
        App {
            label: rampart_dpi::Label { master: rampart_dpi::Proto::Tls, app: Some("YouTube") },
            by: rampart_dpi::By::Dpi,
            meta: Some(Box::new(meta)),
        }
    }

    #[test]
    fn application_fields_in_json() {
        let mut w = FlowWriter::new(Vec::new(), FlowFormat::Json);
        w.write(&ended(6, KeyKind::Ports, 4), &RttSummary::default(), Some(&tls_app())).unwrap();
        w.write(&ended(17, KeyKind::Ports, 4), &RttSummary::default(), Some(&App::default()))
            .unwrap();
        let s = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert!(
            lines[0].contains(
                "\"end_reason\":\"end\",\"app\":\"TLS.YouTube\",\"app_by\":\"dpi\",\
                 \"sni\":\"www.youtube.com\",\"alpn\":\"h2,http/1.1\",\
                 \"user_agent\":\"a \\\"quoted\\\", \\\\ agent\",\"rtt_src_count\":0"
            ),
            "{}",
            lines[0]
        );
        assert!(lines[1].ends_with("\"app\":\"Unknown\",\"app_by\":\"none\"}"), "{}", lines[1]);
    }

    #[test]
    fn application_fields_in_csv() {
        let mut w = FlowWriter::new(Vec::new(), FlowFormat::Csv);
        w.write(&ended(6, KeyKind::Ports, 4), &RttSummary::default(), Some(&tls_app())).unwrap();
        let s = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let row = s.lines().nth(1).unwrap();
        assert!(
            row.ends_with(
                ",TLS.YouTube,dpi,www.youtube.com,\"h2,http/1.1\",,\"a \"\"quoted\"\", \\ agent\",,"
            ),
            "{row}"
        );
    }
}
