//! Flow records out: JSON lines and CSV, formatted by hand into a reused buffer.
//!
//! Both formats write the same fields, in the same order, from one list ([`field_names`]):
//!
//! | field | meaning |
//! |---|---|
//! | `proto` | `tcp`, `udp`, `icmp` (over IPv4), `icmp6` (over IPv6), or the protocol number |
//! | `src`, `sport` | the initiator (sender of the first packet seen) and its port |
//! | `dst`, `dport` | the responder; ports are 0 where the protocol has none |
//! | `community_id` | the flow's Community ID v1 ([`community_id`]); JSON always, CSV with [`Schema::V2`] |
//! | `first`, `last` | first and last packet, epoch seconds with microseconds |
//! | `duration` | `last - first` in seconds |
//! | `packets_fwd`, `bytes_fwd` | initiator to responder; bytes are frame lengths on the wire |
//! | `packets_rev`, `bytes_rev` | responder to initiator |
//! | `tcp_flags_fwd`, `tcp_flags_rev` | TCP flags seen each way, as letters `CEUAPRSF` |
//! | `icmp_id` | the echo identifier of an ICMP echo flow |
//! | `end_reason` | `idle`, `fin`, `rst`, `evicted` or `end` |
//! | `rtt_src_count`, `_min`, `_median`, `_max` | TCP: passive RTT samples from the capture point to the initiator and back (seconds; median within ~3 %) |
//! | `rtt_dst_count`, `_min`, `_median`, `_max` | the same towards the responder |
//! | `app` | the application, in nDPI's naming: `MASTER` or `MASTER.APP` (`DNS`, `TLS.YouTube`, `Unknown`) |
//! | `app_by` | how it was found: `dpi` (the packets), `port`, `address` (the responder's address block), `none` |
//! | `sni`, `alpn` | TLS or QUIC server name, and the ALPN protocols offered (comma-separated) |
//! | `http_host`, `user_agent` | HTTP request headers |
//! | `dns_query` | the DNS query name |
//! | `ssh_banner` | the first SSH banner seen |
//! | `ct_state` | stateful firewall: the connection's state as its initiator's next packet would see it (`new`, `established`) |
//! | `tcp_state` | the TCP connection's state as conntrack names it (`ESTABLISHED`, `TIME_WAIT`, ...) |
//! | `assured` | whether the connection was ASSURED |
//! | `verdict`, `rule` | the last verdict on the flow and the rule that gave it |
//!
//! CSV's columns are fixed by a [`Schema`]: [`Schema::Rampart`] is the column list CSV has
//! always had (scripts read its columns by position), [`Schema::V2`] adds `community_id`.
//! JSON, whose readers take fields by name, writes `community_id` unless asked for
//! [`Schema::Rampart`] explicitly ([`FlowWriter::with_schema`]).
//!
//! A field that does not apply is left out of JSON and left empty in CSV: `tcp_flags_*` and
//! `rtt_*` for flows that are not TCP and `rtt_*` when RTT matching is off,
//! `rtt_*_min/median/max` when there are no samples, `icmp_id` for flows that are not echoes,
//! `app` and the fields after it when identification is off, and each metadata field when it
//! was not found. Text fields are escaped as JSON strings, and quoted in CSV when they hold a
//! comma, quote or line break.
//!
//! The [`rtt`] module writes RTT samples (pping's two formats and JSON) and per-flow RTT
//! summaries; [`report`] draws the HTML page of `rampart report`; [`ipfix`] sends flow
//! records to an IPFIX collector; `parquet` (cargo feature `parquet`) writes them as a Parquet
//! dataset of typed columns; [`num`] holds the hand-written number and address formatting
//! they use. Numbers
//! are JSON numbers, addresses strings (IPv6 in RFC 5952 form).
#![forbid(unsafe_code)]

use std::io::{self, Write};

use rampart_dpi::Label;
use rampart_engine::FlowRecord;
use rampart_flow::{KeyKind, Side};
use rampart_rtt::DirSummary;
use rampart_wire::proto;

pub mod community_id;
pub mod ipfix;
pub mod num;
#[cfg(feature = "parquet")]
pub mod parquet;
pub mod prometheus;
pub mod report;
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

/// A record's field set. JSON and CSV write the same fields in the same order; what changes
/// between schemas is which fields there are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schema {
    /// The fields flow records have had since the first release, unchanged: CSV's 37
    /// columns (the default for CSV).
    Rampart,
    /// `rampart` plus `community_id` after `dport` (the default for JSON).
    V2,
}

impl Schema {
    /// The schema a format gets when none is asked for: `V2` for JSON (an added field breaks
    /// no JSON reader), `Rampart` for CSV (an added column moves the ones after it).
    pub fn default_for(format: FlowFormat) -> Self {
        match format {
            FlowFormat::Json => Self::V2,
            FlowFormat::Csv => Self::Rampart,
        }
    }

    fn has(self, field: &str) -> bool {
        self == Self::V2 || field != "community_id"
    }
}

/// What a record's fields are computed from, worked out once per record.
struct View<'a> {
    r: &'a FlowRecord,
    src: &'a [u8; 16],
    sport: u16,
    dst: &'a [u8; 16],
    dport: u16,
    tcp: bool,
    /// RTT towards the initiator and the responder, for a TCP flow with RTT matching on.
    rtt: Option<(DirSummary, DirSummary)>,
}

impl<'a> View<'a> {
    fn new(r: &'a FlowRecord) -> Self {
        let f = &r.flow;
        let k = &f.key;
        let (src, sport, dst, dport) = match f.initiator {
            Side::A => (&k.addr_a, k.port_a, &k.addr_b, k.port_b),
            Side::B => (&k.addr_b, k.port_b, &k.addr_a, k.port_a),
        };
        let (sport, dport) = match f.key.kind() {
            KeyKind::Ports => (sport, dport),
            KeyKind::Echo | KeyKind::Pair => (0, 0),
        };
        let tcp = f.key.proto == proto::TCP;
        let rtt = r.rtt.filter(|_| tcp).map(|s| s.toward_src_dst());
        Self { r, src, sport, dst, dport, tcp, rtt }
    }

    fn rtt(&self, to_dst: bool) -> Option<DirSummary> {
        self.rtt.map(|(s, d)| if to_dst { d } else { s })
    }

    /// An RTT statistic, present only when there are samples.
    fn rtt_stat(&self, to_dst: bool, pick: fn(&DirSummary) -> u64) -> Value<'a> {
        match self.rtt(to_dst) {
            Some(d) if d.count > 0 => Value::Rtt(pick(&d)),
            _ => Value::Absent,
        }
    }

    fn meta(&self, pick: fn(&rampart_dpi::Meta) -> Option<&str>) -> Value<'a> {
        match &self.r.app {
            Some(app) => pick(app.meta()).map_or(Value::Absent, Value::Text),
            None => Value::Absent,
        }
    }
}

/// One field's value in a record.
enum Value<'a> {
    /// The field does not apply: left out of JSON, an empty CSV cell.
    Absent,
    /// A count.
    Int(u64),
    /// Nanoseconds since the epoch (or a duration), as seconds with microseconds.
    Time(u64),
    /// An RTT in nanoseconds, as seconds with nanoseconds.
    Rtt(u64),
    /// A name from a fixed list (no escaping needed).
    Name(&'static str),
    /// Text from the packets (escaped).
    Text(&'a str),
    /// An address in a key slot, and the family.
    Addr(u8, &'a [u8; 16]),
    /// The protocol: a name, or the number.
    Proto(u8, u8),
    /// TCP flags.
    Flags(u8),
    /// An application label.
    Label(Label),
    /// A Community ID.
    Cid(community_id::CommunityId),
    /// A yes or no.
    Bool(bool),
}

/// A field: its name and how its value is found.
type Field = (&'static str, for<'a> fn(&View<'a>) -> Value<'a>);

/// The names of a flow record's fields in `schema`, in output order.
pub fn field_names(schema: Schema) -> impl Iterator<Item = &'static str> {
    FIELDS.iter().map(|(name, _)| *name).filter(move |n| schema.has(n))
}

/// Every field of a flow record, in output order: the one list JSON, CSV and the CSV header
/// are written from.
const FIELDS: &[Field] = &[
    ("proto", |v| Value::Proto(v.r.flow.key.proto, v.r.flow.key.family)),
    ("src", |v| Value::Addr(v.r.flow.key.family, v.src)),
    ("sport", |v| Value::Int(v.sport.into())),
    ("dst", |v| Value::Addr(v.r.flow.key.family, v.dst)),
    ("dport", |v| Value::Int(v.dport.into())),
    ("community_id", |v| community_id::of_flow(&v.r.flow, 0).map_or(Value::Absent, Value::Cid)),
    ("first", |v| Value::Time(v.r.flow.first)),
    ("last", |v| Value::Time(v.r.flow.last)),
    ("duration", |v| Value::Time(v.r.flow.last.saturating_sub(v.r.flow.first))),
    ("packets_fwd", |v| Value::Int(v.r.flow.packets[0])),
    ("bytes_fwd", |v| Value::Int(v.r.flow.bytes[0])),
    ("packets_rev", |v| Value::Int(v.r.flow.packets[1])),
    ("bytes_rev", |v| Value::Int(v.r.flow.bytes[1])),
    ("tcp_flags_fwd", |v| if v.tcp { Value::Flags(v.r.flow.tcp_flags[0]) } else { Value::Absent }),
    ("tcp_flags_rev", |v| if v.tcp { Value::Flags(v.r.flow.tcp_flags[1]) } else { Value::Absent }),
    ("icmp_id", |v| match v.r.flow.key.kind() {
        KeyKind::Echo => Value::Int(v.r.flow.key.port_a.into()),
        _ => Value::Absent,
    }),
    ("end_reason", |v| Value::Name(v.r.end.name())),
    ("rtt_src_count", |v| v.rtt(false).map_or(Value::Absent, |d| Value::Int(d.count))),
    ("rtt_src_min", |v| v.rtt_stat(false, |d| d.min)),
    ("rtt_src_median", |v| v.rtt_stat(false, |d| d.median)),
    ("rtt_src_max", |v| v.rtt_stat(false, |d| d.max)),
    ("rtt_dst_count", |v| v.rtt(true).map_or(Value::Absent, |d| Value::Int(d.count))),
    ("rtt_dst_min", |v| v.rtt_stat(true, |d| d.min)),
    ("rtt_dst_median", |v| v.rtt_stat(true, |d| d.median)),
    ("rtt_dst_max", |v| v.rtt_stat(true, |d| d.max)),
    ("app", |v| v.r.app.as_ref().map_or(Value::Absent, |a| Value::Label(a.label))),
    ("app_by", |v| v.r.app.as_ref().map_or(Value::Absent, |a| Value::Name(a.by.name()))),
    ("sni", |v| v.meta(|m| m.sni.as_deref())),
    ("alpn", |v| v.meta(|m| m.alpn.as_deref())),
    ("http_host", |v| v.meta(|m| m.http_host.as_deref())),
    ("user_agent", |v| v.meta(|m| m.user_agent.as_deref())),
    ("dns_query", |v| v.meta(|m| m.dns_query.as_deref())),
    ("ssh_banner", |v| v.meta(|m| m.ssh_banner.as_deref())),
    ("ct_state", |v| v.r.ct.map_or(Value::Absent, |c| Value::Name(c.ct_state.name()))),
    ("tcp_state", |v| match v.r.ct.and_then(|c| c.tcp_state) {
        Some(t) => Value::Name(t.name()),
        None => Value::Absent,
    }),
    ("assured", |v| v.r.ct.map_or(Value::Absent, |c| Value::Bool(c.assured))),
    ("verdict", |v| v.r.verdict.as_ref().map_or(Value::Absent, |(d, _)| Value::Name(d.name()))),
    ("rule", |v| match &v.r.verdict {
        Some((_, Some(rule))) => Value::Text(rule),
        _ => Value::Absent,
    }),
];

/// Writes flow records to `W`. Output is buffered by `W`; call [`FlowWriter::flush`] before exit.
pub struct FlowWriter<W: Write> {
    out: W,
    format: FlowFormat,
    schema: Schema,
    line: Vec<u8>,
    header_done: bool,
}

impl<W: Write> FlowWriter<W> {
    /// A writer of `format` records to `out`, with the format's default [`Schema`].
    pub fn new(out: W, format: FlowFormat) -> Self {
        Self::with_schema(out, format, Schema::default_for(format))
    }

    /// A writer of `format` records in `schema` to `out`.
    pub fn with_schema(out: W, format: FlowFormat, schema: Schema) -> Self {
        Self { out, format, schema, line: Vec::with_capacity(512), header_done: false }
    }

    /// Writes the CSV header if it has not been written (JSON has none). Called by the first
    /// [`FlowWriter::write`]; call it directly so that an empty result still has its header.
    pub fn header(&mut self) -> io::Result<()> {
        if self.format == FlowFormat::Csv && !self.header_done {
            self.line.clear();
            for (i, name) in field_names(self.schema).enumerate() {
                if i > 0 {
                    self.line.push(b',');
                }
                self.line.extend_from_slice(name.as_bytes());
            }
            self.line.push(b'\n');
            self.out.write_all(&self.line)?;
        }
        self.header_done = true;
        Ok(())
    }

    /// Writes one flow record.
    pub fn write(&mut self, r: &FlowRecord) -> io::Result<()> {
        self.header()?;
        let view = View::new(r);
        let l = &mut self.line;
        l.clear();
        match self.format {
            FlowFormat::Json => {
                l.push(b'{');
                let mut first = true;
                for (name, value) in FIELDS.iter().filter(|(n, _)| self.schema.has(n)) {
                    let v = value(&view);
                    if matches!(v, Value::Absent) {
                        continue;
                    }
                    if !first {
                        l.push(b',');
                    }
                    first = false;
                    l.push(b'"');
                    l.extend_from_slice(name.as_bytes());
                    l.extend_from_slice(b"\":");
                    json_value(l, v);
                }
                l.extend_from_slice(b"}\n");
            }
            FlowFormat::Csv => {
                for (i, (_, value)) in FIELDS.iter().filter(|(n, _)| self.schema.has(n)).enumerate()
                {
                    if i > 0 {
                        l.push(b',');
                    }
                    csv_value(l, value(&view));
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

    /// The underlying writer.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

fn json_value(l: &mut Vec<u8>, v: Value<'_>) {
    match v {
        Value::Absent => {}
        Value::Bool(b) => l.extend_from_slice(if b { b"true" } else { b"false" }),
        Value::Int(n) => int(l, n),
        Value::Time(ns) => epoch(l, ns),
        Value::Rtt(ns) => rtt::secs(l, ns, 9),
        Value::Name(s) => {
            l.push(b'"');
            l.extend_from_slice(s.as_bytes());
            l.push(b'"');
        }
        Value::Text(s) => text::json_string(l, s),
        Value::Cid(c) => {
            l.push(b'"');
            l.extend_from_slice(c.as_str().as_bytes());
            l.push(b'"');
        }
        Value::Addr(family, a) => {
            l.push(b'"');
            num::slot_addr(l, family, a);
            l.push(b'"');
        }
        Value::Proto(p, family) => match proto_name(p, family) {
            Some(name) => {
                l.push(b'"');
                l.extend_from_slice(name.as_bytes());
                l.push(b'"');
            }
            None => int(l, p),
        },
        Value::Flags(f) => {
            l.push(b'"');
            flags(l, f);
            l.push(b'"');
        }
        Value::Label(label) => {
            l.push(b'"');
            let start = l.len();
            display(l, label);
            // Labels are names from fixed lists and need no escaping; should one ever need
            // it, it gets it.
            if l[start..].iter().any(|&b| b == b'"' || b == b'\\' || b < 0x20) {
                let raw = l.split_off(start);
                text::json_escaped(l, &String::from_utf8_lossy(&raw));
            }
            l.push(b'"');
        }
    }
}

fn csv_value(l: &mut Vec<u8>, v: Value<'_>) {
    match v {
        Value::Absent => {}
        Value::Bool(b) => l.extend_from_slice(if b { b"true" } else { b"false" }),
        Value::Int(n) => int(l, n),
        Value::Time(ns) => epoch(l, ns),
        Value::Rtt(ns) => rtt::secs(l, ns, 9),
        Value::Name(s) => l.extend_from_slice(s.as_bytes()),
        Value::Text(s) => text::csv_field(l, s),
        Value::Cid(c) => l.extend_from_slice(c.as_str().as_bytes()),
        Value::Addr(family, a) => num::slot_addr(l, family, a),
        Value::Proto(p, family) => match proto_name(p, family) {
            Some(name) => l.extend_from_slice(name.as_bytes()),
            None => int(l, p),
        },
        Value::Flags(f) => flags(l, f),
        Value::Label(label) => {
            let start = l.len();
            display(l, label);
            if l[start..].iter().any(|&b| matches!(b, b',' | b'"' | b'\n' | b'\r')) {
                let raw = l.split_off(start);
                text::csv_field(l, &String::from_utf8_lossy(&raw));
            }
        }
    }
}

/// Writes a `Display` value into the line (writing into a Vec cannot fail).
fn display(l: &mut Vec<u8>, v: impl std::fmt::Display) {
    let _ = write!(l, "{v}");
}

/// Appends nanoseconds since the epoch as seconds with six decimals (microseconds,
/// truncated), as records write times.
pub fn epoch(l: &mut Vec<u8>, ns: u64) {
    int(l, ns / 1_000_000_000);
    l.push(b'.');
    let us = (ns % 1_000_000_000) / 1000;
    let mut buf = itoa::Buffer::new();
    let digits = buf.format(us);
    l.extend(std::iter::repeat_n(b'0', 6 - digits.len()));
    l.extend_from_slice(digits.as_bytes());
}

/// The protocol's name in records (`family` 4 or 6), or `None` where the number is written.
pub fn proto_name(p: u8, family: u8) -> Option<&'static str> {
    match (p, family) {
        (proto::TCP, _) => Some("tcp"),
        (proto::UDP, _) => Some("udp"),
        (proto::ICMP, 4) => Some("icmp"),
        (proto::ICMPV6, 6) => Some("icmp6"),
        _ => None,
    }
}

fn flags(l: &mut Vec<u8>, f: u8) {
    const LETTERS: [(u8, u8); 8] = [
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
    use rampart_dpi::App;
    use rampart_flow::{EndReason, Flow, FlowKey, KeyKind, PacketInfo, Side};
    use rampart_rtt::RttSummary;

    pub(crate) fn ended(proto: u8, kind: KeyKind, family: u8) -> FlowRecord {
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
        FlowRecord {
            flow,
            end: EndReason::End,
            rtt: Some(RttSummary::default()),
            app: None,
            ct: None,
            verdict: None,
        }
    }

    pub(crate) fn with_app(mut r: FlowRecord, app: App) -> FlowRecord {
        r.app = Some(app);
        r
    }

    fn render(format: FlowFormat, r: &FlowRecord) -> String {
        let mut w = FlowWriter::new(Vec::new(), format);
        w.write(r).unwrap();
        String::from_utf8(w.into_inner().unwrap()).unwrap()
    }

    #[test]
    fn json_tcp() {
        let s = render(FlowFormat::Json, &ended(6, KeyKind::Ports, 4));
        assert_eq!(
            s,
            "{\"proto\":\"tcp\",\"src\":\"10.0.0.2\",\"sport\":80,\"dst\":\"10.0.0.1\",\
             \"dport\":40000,\"community_id\":\"1:3k1SoWXs/FltHw2aBCgUTgbDQF4=\",\
             \"first\":1700000000.000001,\"last\":1700000001.500000,\
             \"duration\":1.499999,\"packets_fwd\":3,\"bytes_fwd\":180,\"packets_rev\":2,\
             \"bytes_rev\":1500,\"tcp_flags_fwd\":\"APSF\",\"tcp_flags_rev\":\"AS\",\
             \"end_reason\":\"end\",\"rtt_src_count\":0,\"rtt_dst_count\":0}\n"
        );
        assert_eq!(ended(6, KeyKind::Ports, 4).flow.initiator, Side::B);
        // Samples the initiator's packets completed measure the path to the initiator:
        // `rtt_src`.
        let mut r = RttSummary::default();
        r.dirs[0] = rampart_rtt::DirSummary { count: 2, min: 1_000, median: 1_500, max: 2_000 };
        let mut rec = ended(6, KeyKind::Ports, 4);
        rec.rtt = Some(r);
        let s = render(FlowFormat::Json, &rec);
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

    const COLUMNS: &str = "proto,src,sport,dst,dport,first,last,duration,packets_fwd,\
        bytes_fwd,packets_rev,bytes_rev,tcp_flags_fwd,tcp_flags_rev,icmp_id,end_reason,\
        rtt_src_count,rtt_src_min,rtt_src_median,rtt_src_max,rtt_dst_count,rtt_dst_min,\
        rtt_dst_median,rtt_dst_max,app,app_by,sni,alpn,http_host,user_agent,dns_query,ssh_banner,\
        ct_state,tcp_state,assured,verdict,rule";

    #[test]
    fn csv_has_a_header_and_fixed_columns() {
        let mut w = FlowWriter::new(Vec::new(), FlowFormat::Csv);
        w.write(&ended(17, KeyKind::Ports, 4)).unwrap();
        w.write(&ended(6, KeyKind::Ports, 6)).unwrap();
        let s = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let lines: Vec<_> = s.lines().collect();
        assert_eq!(lines[0], COLUMNS);
        assert_eq!(field_names(Schema::Rampart).collect::<Vec<_>>().join(","), COLUMNS);
        let n = lines[0].split(',').count();
        assert!(lines.iter().all(|l| l.split(',').count() == n));
        assert_eq!(
            lines[1],
            "udp,10.0.0.2,80,10.0.0.1,40000,1700000000.000001,1700000001.500000,1.499999,\
             3,180,2,1500,,,,end,,,,,,,,,,,,,,,,,,,,,"
        );
        let mut w = FlowWriter::new(Vec::new(), FlowFormat::Csv);
        w.header().unwrap();
        assert_eq!(w.into_inner().unwrap(), format!("{COLUMNS}\n").into_bytes());
    }

    /// `--schema rampart` writes today's records, JSON included; `v2` CSV has the column
    /// after `dport`. The ID checked was computed independently (Python's hashlib over the
    /// spec's byte layout).
    #[test]
    fn schemas() {
        let r = ended(6, KeyKind::Ports, 4);
        let mut w = FlowWriter::with_schema(Vec::new(), FlowFormat::Json, Schema::Rampart);
        w.write(&r).unwrap();
        let s = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert!(!s.contains("community_id"), "{s}");
        assert_eq!(Schema::default_for(FlowFormat::Csv), Schema::Rampart);
        let mut w = FlowWriter::with_schema(Vec::new(), FlowFormat::Csv, Schema::V2);
        w.write(&r).unwrap();
        let s = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let lines: Vec<&str> = s.lines().collect();
        let v2 = COLUMNS.replace(",dport,", ",dport,community_id,");
        assert_eq!(lines[0], v2);
        assert_eq!(field_names(Schema::V2).collect::<Vec<_>>().join(","), v2);
        assert!(
            lines[1].starts_with("tcp,10.0.0.2,80,10.0.0.1,40000,1:3k1SoWXs/FltHw2aBCgUTgbDQF4=,"),
            "{}",
            lines[1]
        );
        assert_eq!(lines[1].split(',').count(), v2.split(',').count());
        // No ID (ICMP other than echo): an empty cell, no JSON field.
        let r = ended(1, KeyKind::Pair, 4);
        let mut w = FlowWriter::with_schema(Vec::new(), FlowFormat::Csv, Schema::V2);
        w.write(&r).unwrap();
        let s = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert!(s.lines().nth(1).unwrap().starts_with("icmp,10.0.0.2,0,10.0.0.1,0,,"), "{s}");
        assert!(!render(FlowFormat::Json, &r).contains("community_id"));
    }

    pub(crate) fn tls_app() -> App {
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
        w.write(&with_app(ended(6, KeyKind::Ports, 4), tls_app())).unwrap();
        w.write(&with_app(ended(17, KeyKind::Ports, 4), App::default())).unwrap();
        let s = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert!(
            lines[0].ends_with(
                "\"end_reason\":\"end\",\"rtt_src_count\":0,\"rtt_dst_count\":0,\
                 \"app\":\"TLS.YouTube\",\"app_by\":\"dpi\",\
                 \"sni\":\"www.youtube.com\",\"alpn\":\"h2,http/1.1\",\
                 \"user_agent\":\"a \\\"quoted\\\", \\\\ agent\"}"
            ),
            "{}",
            lines[0]
        );
        assert!(lines[1].ends_with("\"app\":\"Unknown\",\"app_by\":\"none\"}"), "{}", lines[1]);
    }

    #[test]
    fn application_fields_in_csv() {
        let mut w = FlowWriter::new(Vec::new(), FlowFormat::Csv);
        w.write(&with_app(ended(6, KeyKind::Ports, 4), tls_app())).unwrap();
        let s = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let row = s.lines().nth(1).unwrap();
        assert!(
            row.ends_with(
                ",TLS.YouTube,dpi,www.youtube.com,\"h2,http/1.1\",,\"a \"\"quoted\"\", \\ agent\",,,,,,,"
            ),
            "{row}"
        );
    }

    #[test]
    fn without_rtt_the_rtt_cells_are_empty() {
        // RTT matching off: no `rtt_*` field in JSON, empty cells in CSV (not zeros).
        let mut r = ended(6, KeyKind::Ports, 4);
        r.rtt = None;
        assert!(!render(FlowFormat::Json, &r).contains("rtt_"));
        let csv = render(FlowFormat::Csv, &r);
        let row = csv.lines().nth(1).unwrap();
        assert!(row.ends_with(",end,,,,,,,,,,,,,,,,,,,,,"), "{row}");
        // RTT on, a TCP flow without samples: counts of 0.
        let r = ended(6, KeyKind::Ports, 4);
        let row = render(FlowFormat::Csv, &r).lines().nth(1).unwrap().to_string();
        assert!(row.ends_with(",end,0,,,,0,,,,,,,,,,,,,,,,"), "{row}");
    }
}
