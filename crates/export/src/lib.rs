//! Flow records out: JSON lines and CSV, formatted by hand into a reused buffer.
//!
//! Both formats write their fields from one list per [`Schema`] ([`field_names`],
//! [`json_field_names`]). The rampart schema's fields:
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
//! | `end_reason` | `idle`, `fin`, `rst`, `evicted` or `end`; `active` for an interim record of a live flow (`--active-timeout`) |
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
//! | `uid` | JSON: the flow's id ([`uid`]), `C` and 11 base-62 digits |
//! | `conn_state`, `history` | JSON: Zeek's connection state and history ([`rampart_tcpstate`]) |
//! | `retrans_fwd`, `out_of_order_fwd`, `lost_fwd`, `zero_window_fwd`, and `_rev` | JSON, TCP: the health counters of each direction's segments |
//! | `tunnel` | JSON: the tunnel the flow's packets came out of (`ip-in-ip`, `gre`, `vxlan`, `gtp-u`, `capwap`); the addresses and ports are the inner packets' |
//!
//! [`Schema::Rampart`] in CSV is the column list CSV has always had (scripts read its columns
//! by position); JSON, whose readers take fields by name, adds the [`JSON_ONLY`] fields.
//! [`Schema::V2`] is the telemetry notes' schema (§5): the same values under Zeek's orig/resp
//! names with units in the names (`orig_wire_bytes`, `rtt_orig_min_us` in whole
//! microseconds), the same fields in JSON and CSV. Both formats default to `Rampart`.
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
use rampart_tcpstate::DirCounters;
use rampart_wire::{IpFamily, proto};

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

/// A record's field set and names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schema {
    /// rampart's own names (`src`, `packets_fwd`, `rtt_src_min` in seconds, ...), the default
    /// for both formats. CSV writes exactly the 37 columns it always had (scripts read them
    /// by position); JSON, whose readers take fields by name, writes those plus
    /// `community_id` after `dport` and the connection fields at the end (`uid`,
    /// `conn_state`, `history`, `retrans_fwd`, ...: [`JSON_ONLY`]).
    Rampart,
    /// The one record schema of the telemetry notes (§5), the same fields in JSON and CSV:
    /// Zeek's orig/resp names, units in names (`rtt_orig_min_us`, `orig_wire_bytes`).
    V2,
}

impl Schema {
    /// The schema a format gets when none is asked for: `Rampart` for both, so that nothing
    /// that reads today's records breaks; `V2` is asked for with `--schema v2`.
    pub fn default_for(format: FlowFormat) -> Self {
        match format {
            FlowFormat::Json | FlowFormat::Csv => Self::Rampart,
        }
    }

    /// Its fields, in output order, as `format` writes them.
    fn fields(self, format: FlowFormat) -> impl Iterator<Item = &'static Field> {
        let list = match self {
            Self::Rampart => RAMPART,
            Self::V2 => V2,
        };
        let columns = self == Self::Rampart && format == FlowFormat::Csv;
        list.into_iter().flatten().filter(move |(n, _)| !columns || !JSON_ONLY.contains(n))
    }
}

/// Fields of [`Schema::Rampart`] that JSON writes and CSV does not (CSV's columns stay as
/// they always were).
pub const JSON_ONLY: &[&str] = &[
    "community_id",
    "uid",
    "conn_state",
    "history",
    "retrans_fwd",
    "retrans_rev",
    "out_of_order_fwd",
    "out_of_order_rev",
    "lost_fwd",
    "lost_rev",
    "zero_window_fwd",
    "zero_window_rev",
    "tunnel",
];

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
    /// The run's seed for `uid`.
    seed: u64,
}

impl<'a> View<'a> {
    fn new(r: &'a FlowRecord, seed: u64) -> Self {
        let f = &r.flow;
        let k = &f.key;
        let (src, sport, dst, dport) = match f.initiator {
            Side::A => (k.addr_a_bytes(), k.port_a(), k.addr_b_bytes(), k.port_b()),
            Side::B => (k.addr_b_bytes(), k.port_b(), k.addr_a_bytes(), k.port_a()),
        };
        let (sport, dport) = match f.key.kind() {
            KeyKind::Ports => (sport, dport),
            KeyKind::Echo | KeyKind::Pair => (0, 0),
        };
        let tcp = f.key.proto() == proto::TCP;
        let rtt = r.rtt.filter(|_| tcp).map(|s| s.toward_src_dst());
        Self { r, src, sport, dst, dport, tcp, rtt, seed }
    }

    /// An RTT statistic in whole microseconds, present only when there are samples.
    fn rtt_us(&self, to_dst: bool, pick: fn(&DirSummary) -> u64) -> Value<'a> {
        match self.rtt(to_dst) {
            Some(d) if d.count > 0 => Value::Int(pick(&d) / 1000),
            _ => Value::Absent,
        }
    }

    /// A TCP health counter of direction `d` (0: the initiator's segments).
    fn counter(&self, d: usize, pick: fn(&DirCounters) -> u32) -> Value<'a> {
        match &self.r.conn {
            Some(c) if self.tcp => Value::Int(pick(&c.dirs[d]).into()),
            _ => Value::Absent,
        }
    }

    fn conn_state(&self) -> Value<'a> {
        self.r.conn.as_ref().map_or(Value::Absent, |c| Value::Name(c.state.name()))
    }

    fn history(&self) -> Value<'a> {
        match &self.r.conn {
            Some(c) if !c.history.is_empty() => Value::Text(c.history.as_str()),
            _ => Value::Absent,
        }
    }

    fn uid(&self) -> Value<'a> {
        Value::Uid(record_uid(self.r, self.seed))
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
    Addr(IpFamily, &'a [u8; 16]),
    /// The protocol: a name, or the number.
    Proto(u8, IpFamily),
    /// TCP flags.
    Flags(u8),
    /// An application label.
    Label(Label),
    /// A Community ID.
    Cid(community_id::CommunityId),
    /// A yes or no.
    Bool(bool),
    /// A flow's `uid`.
    Uid(u64),
}

/// A field: its name and how its value is found.
type Field = (&'static str, for<'a> fn(&View<'a>) -> Value<'a>);

/// Defines a part of a schema's field list twice from one list of `(name, value)`: as a
/// [`Field`] table `$table` (the names, and the Parquet writer's values), and as `$writer`,
/// straight-line code writing the same fields through a [`Text`] format, with each field's
/// prefix a constant and no per-field call through a pointer. `COLUMNS` leaves out the
/// [`JSON_ONLY`] fields (rampart's CSV columns), decided when compiling.
macro_rules! fields {
    ($(#[$doc:meta])* $table:ident, $writer:ident: [$(($name:literal, $value:expr)),* $(,)?]) => {
        $(#[$doc])*
        const $table: &[Field] = &[$(($name, $value)),*];

        /// Writes the fields of this part of the list of `v`, as `T` writes them.
        #[inline(always)]
        fn $writer<T: Text, const COLUMNS: bool>(l: &mut Vec<u8>, v: &View<'_>) {
            $(
                if !(COLUMNS && const { json_only($name) }) {
                    T::field(l, concat!(",\"", $name, "\":").as_bytes(), call($value, v));
                }
            )*
        }
    };
}

/// Calls a field's value function (a closure or a function) on a view, inlined.
#[inline(always)]
fn call<'a, F: Fn(&View<'a>) -> Value<'a>>(f: F, v: &View<'a>) -> Value<'a> {
    f(v)
}

/// Whether `name` is one of [`JSON_ONLY`] (evaluated when compiling).
const fn json_only(name: &str) -> bool {
    let mut i = 0;
    while i < JSON_ONLY.len() {
        let (a, b) = (JSON_ONLY[i].as_bytes(), name.as_bytes());
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return true;
            }
        }
        i += 1;
    }
    false
}

/// How a record's fields are written: JSON or CSV.
trait Text {
    /// Writes one field with `prefix`, `,"name":` (JSON puts it before a present value; CSV
    /// has no names), and a separator.
    fn field(l: &mut Vec<u8>, prefix: &'static [u8], v: Value<'_>);
}

/// JSON: each present field as `,"name":value` (the record's first comma becomes `{`).
struct Json;

impl Text for Json {
    #[inline(always)]
    fn field(l: &mut Vec<u8>, prefix: &'static [u8], v: Value<'_>) {
        if !matches!(v, Value::Absent) {
            l.extend_from_slice(prefix);
            json_value(l, v);
        }
    }
}

/// CSV: each field's cell and a comma (the record's last comma becomes the line's end).
struct Csv;

impl Text for Csv {
    #[inline(always)]
    fn field(l: &mut Vec<u8>, _: &'static [u8], v: Value<'_>) {
        csv_value(l, v);
        l.push(b',');
    }
}

/// Writes the fields of a [`Schema::Rampart`] record (without the [`JSON_ONLY`] ones when
/// `COLUMNS`), each with `T`'s separators.
fn rampart_fields<T: Text, const COLUMNS: bool>(l: &mut Vec<u8>, v: &View<'_>) {
    rampart_head::<T, COLUMNS>(l, v);
    app_and_firewall::<T, COLUMNS>(l, v);
    rampart_tail::<T, COLUMNS>(l, v);
}

/// Writes the fields of a [`Schema::V2`] record, each with `T`'s separators.
fn v2_fields<T: Text>(l: &mut Vec<u8>, v: &View<'_>) {
    v2_head::<T, false>(l, v);
    app_and_firewall::<T, false>(l, v);
    v2_tail::<T, false>(l, v);
}

/// The names of a flow record's columns in `schema`, in output order: CSV's header. JSON
/// (and the Parquet writer, whose columns are JSON's fields) writes [`json_field_names`].
pub fn field_names(schema: Schema) -> impl Iterator<Item = &'static str> {
    schema.fields(FlowFormat::Csv).map(|(name, _)| *name)
}

/// The names of the fields a JSON record in `schema` can have, in output order.
pub fn json_field_names(schema: Schema) -> impl Iterator<Item = &'static str> {
    schema.fields(FlowFormat::Json).map(|(name, _)| *name)
}

/// Every field of a rampart-schema record, in output order: the lists JSON, CSV and the CSV
/// header are written from (CSV leaves out [`JSON_ONLY`]).
const RAMPART: [&[Field]; 3] = [RAMPART_HEAD, APP_AND_FIREWALL, RAMPART_TAIL];

/// Every field of a v2 record, in output order (JSON and CSV alike).
const V2: [&[Field]; 3] = [V2_HEAD, APP_AND_FIREWALL, V2_TAIL];

fields! {
    /// [`Schema::Rampart`]'s fields before [`APP_AND_FIREWALL`].
    RAMPART_HEAD, rampart_head: [
        ("proto", |v| Value::Proto(v.r.flow.key.proto(), v.r.flow.key.family())),
        ("src", |v| Value::Addr(v.r.flow.key.family(), v.src)),
        ("sport", |v| Value::Int(v.sport.into())),
        ("dst", |v| Value::Addr(v.r.flow.key.family(), v.dst)),
        ("dport", |v| Value::Int(v.dport.into())),
        ("community_id", |v| community_id::of_flow(&v.r.flow, 0).map_or(Value::Absent, Value::Cid)),
        ("first", |v| Value::Time(v.r.flow.first.as_nanos())),
        ("last", |v| Value::Time(v.r.flow.last.as_nanos())),
        ("duration", |v| Value::Time(v.r.flow.last.since(v.r.flow.first).as_nanos())),
        ("packets_fwd", |v| Value::Int(v.r.flow.packets[0])),
        ("bytes_fwd", |v| Value::Int(v.r.flow.bytes[0])),
        ("packets_rev", |v| Value::Int(v.r.flow.packets[1])),
        ("bytes_rev", |v| Value::Int(v.r.flow.bytes[1])),
        ("tcp_flags_fwd", |v| if v.tcp { Value::Flags(v.r.flow.tcp_flags[0]) } else { Value::Absent }),
        ("tcp_flags_rev", |v| if v.tcp { Value::Flags(v.r.flow.tcp_flags[1]) } else { Value::Absent }),
        ("icmp_id", icmp_id),
        ("end_reason", |v| Value::Name(v.r.end.name())),
        ("rtt_src_count", |v| v.rtt(false).map_or(Value::Absent, |d| Value::Int(d.count))),
        ("rtt_src_min", |v| v.rtt_stat(false, |d| d.min.as_nanos())),
        ("rtt_src_median", |v| v.rtt_stat(false, |d| d.median.as_nanos())),
        ("rtt_src_max", |v| v.rtt_stat(false, |d| d.max.as_nanos())),
        ("rtt_dst_count", |v| v.rtt(true).map_or(Value::Absent, |d| Value::Int(d.count))),
        ("rtt_dst_min", |v| v.rtt_stat(true, |d| d.min.as_nanos())),
        ("rtt_dst_median", |v| v.rtt_stat(true, |d| d.median.as_nanos())),
        ("rtt_dst_max", |v| v.rtt_stat(true, |d| d.max.as_nanos())),
    ]
}

fields! {
    /// The fields both schemas write under the same names, in the same order: the application
    /// and its metadata, then the firewall's view.
    APP_AND_FIREWALL, app_and_firewall: [
        ("app", app),
        ("app_by", app_by),
        ("sni", |v| v.meta(|m| m.sni.as_deref())),
        ("alpn", |v| v.meta(|m| m.alpn.as_deref())),
        ("http_host", |v| v.meta(|m| m.http_host.as_deref())),
        ("user_agent", |v| v.meta(|m| m.user_agent.as_deref())),
        ("dns_query", |v| v.meta(|m| m.dns_query.as_deref())),
        ("ssh_banner", |v| v.meta(|m| m.ssh_banner.as_deref())),
        ("ct_state", ct_state),
        ("tcp_state", tcp_state),
        ("assured", assured),
        ("verdict", verdict),
        ("rule", rule),
    ]
}

fields! {
    /// [`Schema::Rampart`]'s fields after [`APP_AND_FIREWALL`].
    RAMPART_TAIL, rampart_tail: [
        ("uid", |v| v.uid()),
        ("conn_state", |v| v.conn_state()),
        ("history", |v| v.history()),
        ("retrans_fwd", |v| v.counter(0, |c| c.retrans)),
        ("retrans_rev", |v| v.counter(1, |c| c.retrans)),
        ("out_of_order_fwd", |v| v.counter(0, |c| c.out_of_order)),
        ("out_of_order_rev", |v| v.counter(1, |c| c.out_of_order)),
        ("lost_fwd", |v| v.counter(0, |c| c.lost)),
        ("lost_rev", |v| v.counter(1, |c| c.lost)),
        ("zero_window_fwd", |v| v.counter(0, |c| c.zero_window)),
        ("zero_window_rev", |v| v.counter(1, |c| c.zero_window)),
        ("tunnel", tunnel),
    ]
}

fields! {
    /// [`Schema::V2`]'s fields before [`APP_AND_FIREWALL`].
    V2_HEAD, v2_head: [
        ("ts", |v| Value::Time(v.r.flow.first.as_nanos())),
        ("ts_end", |v| Value::Time(v.r.flow.last.as_nanos())),
        ("duration", |v| Value::Time(v.r.flow.last.since(v.r.flow.first).as_nanos())),
        ("uid", |v| v.uid()),
        ("community_id", |v| community_id::of_flow(&v.r.flow, 0).map_or(Value::Absent, Value::Cid)),
        ("orig_h", |v| Value::Addr(v.r.flow.key.family(), v.src)),
        ("orig_p", |v| Value::Int(v.sport.into())),
        ("resp_h", |v| Value::Addr(v.r.flow.key.family(), v.dst)),
        ("resp_p", |v| Value::Int(v.dport.into())),
        ("proto", |v| Value::Proto(v.r.flow.key.proto(), v.r.flow.key.family())),
        ("icmp_id", icmp_id),
        ("orig_pkts", |v| Value::Int(v.r.flow.packets[0])),
        ("orig_wire_bytes", |v| Value::Int(v.r.flow.bytes[0])),
        ("resp_pkts", |v| Value::Int(v.r.flow.packets[1])),
        ("resp_wire_bytes", |v| Value::Int(v.r.flow.bytes[1])),
        ("tcp_flags_orig", |v| if v.tcp { Value::Flags(v.r.flow.tcp_flags[0]) } else { Value::Absent }),
        ("tcp_flags_resp", |v| if v.tcp { Value::Flags(v.r.flow.tcp_flags[1]) } else { Value::Absent }),
        ("conn_state", |v| v.conn_state()),
        ("history", |v| v.history()),
        ("orig_retrans", |v| v.counter(0, |c| c.retrans)),
        ("orig_out_of_order", |v| v.counter(0, |c| c.out_of_order)),
        ("orig_lost", |v| v.counter(0, |c| c.lost)),
        ("orig_zero_window", |v| v.counter(0, |c| c.zero_window)),
        ("resp_retrans", |v| v.counter(1, |c| c.retrans)),
        ("resp_out_of_order", |v| v.counter(1, |c| c.out_of_order)),
        ("resp_lost", |v| v.counter(1, |c| c.lost)),
        ("resp_zero_window", |v| v.counter(1, |c| c.zero_window)),
        ("end_reason", |v| Value::Name(v.r.end.name())),
        ("rtt_orig_samples", |v| v.rtt(false).map_or(Value::Absent, |d| Value::Int(d.count))),
        ("rtt_orig_min_us", |v| v.rtt_us(false, |d| d.min.as_nanos())),
        ("rtt_orig_median_us", |v| v.rtt_us(false, |d| d.median.as_nanos())),
        ("rtt_orig_max_us", |v| v.rtt_us(false, |d| d.max.as_nanos())),
        ("rtt_resp_samples", |v| v.rtt(true).map_or(Value::Absent, |d| Value::Int(d.count))),
        ("rtt_resp_min_us", |v| v.rtt_us(true, |d| d.min.as_nanos())),
        ("rtt_resp_median_us", |v| v.rtt_us(true, |d| d.median.as_nanos())),
        ("rtt_resp_max_us", |v| v.rtt_us(true, |d| d.max.as_nanos())),
    ]
}

fields! {
    /// [`Schema::V2`]'s fields after [`APP_AND_FIREWALL`].
    V2_TAIL, v2_tail: [("tunnel", tunnel)]
}

/// The tunnel the flow's packets came out of, when they did.
fn tunnel<'a>(v: &View<'a>) -> Value<'a> {
    match rampart_wire::Tunnel::from_code(v.r.flow.key.tunnel()) {
        Some(rampart_wire::Tunnel::None) | None => Value::Absent,
        Some(t) => Value::Name(t.name()),
    }
}

fn icmp_id<'a>(v: &View<'a>) -> Value<'a> {
    match v.r.flow.key.kind() {
        KeyKind::Echo => Value::Int(v.r.flow.key.port_a().into()),
        _ => Value::Absent,
    }
}

fn app<'a>(v: &View<'a>) -> Value<'a> {
    v.r.app.as_ref().map_or(Value::Absent, |a| Value::Label(a.label))
}

fn app_by<'a>(v: &View<'a>) -> Value<'a> {
    v.r.app.as_ref().map_or(Value::Absent, |a| Value::Name(a.by.name()))
}

fn ct_state<'a>(v: &View<'a>) -> Value<'a> {
    v.r.ct.map_or(Value::Absent, |c| Value::Name(c.ct_state.name()))
}

fn tcp_state<'a>(v: &View<'a>) -> Value<'a> {
    match v.r.ct.and_then(|c| c.tcp_state) {
        Some(t) => Value::Name(t.name()),
        None => Value::Absent,
    }
}

fn assured<'a>(v: &View<'a>) -> Value<'a> {
    v.r.ct.map_or(Value::Absent, |c| Value::Bool(c.assured))
}

fn verdict<'a>(v: &View<'a>) -> Value<'a> {
    v.r.verdict.as_ref().map_or(Value::Absent, |(d, _)| Value::Name(d.name()))
}

fn rule<'a>(v: &View<'a>) -> Value<'a> {
    match &v.r.verdict {
        Some((_, Some(rule))) => Value::Text(rule),
        _ => Value::Absent,
    }
}

/// A flow's `uid`: a 64-bit hash of its key, its initiator and its first packet's time,
/// mixed with the run's `seed`. It depends on nothing else (not on the number of workers,
/// nor on the order flows end), so a run's output is the same for any `--workers`; two
/// flows of one run have the same uid only if they have the same key and first time (which
/// the flow table never gives), or by a 64-bit collision. With the same seed the same
/// capture gives the same uids; a different seed (`--uid-seed`) gives unrelated ones.
pub fn uid(flow: &rampart_flow::Flow, seed: u64) -> u64 {
    key_uid(&flow.key, flow.initiator, flow.first.as_nanos(), seed)
}

/// [`uid`] of a flow's key, initiator and first packet's time in nanoseconds.
#[inline]
fn key_uid(k: &rampart_flow::FlowKey, initiator: Side, first: u64, seed: u64) -> u64 {
    /// SplitMix64's finaliser.
    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
    let tail = u64::from(k.port_a()) << 48
        | u64::from(k.port_b()) << 32
        | u64::from(k.proto()) << 24
        | u64::from(k.family().version()) << 16
        | u64::from(k.kind() as u8) << 8
        | u64::from(initiator == Side::B);
    let mut h = mix(seed ^ 0x9e37_79b9_7f4a_7c15);
    for w in [
        word(&k.addr_a_bytes()[..8]),
        word(&k.addr_a_bytes()[8..]),
        word(&k.addr_b_bytes()[..8]),
        word(&k.addr_b_bytes()[8..]),
        tail,
        first,
    ] {
        h = mix(h ^ w).wrapping_add(0x9e37_79b9_7f4a_7c15);
    }
    mix(h)
}

/// The `uid` of a record's flow: [`uid`] of the flow's key, initiator and first packet
/// ([`FlowRecord::start`]), so every record of one flow (interim records of an active timeout
/// and its final one) carries the same uid.
pub fn record_uid(r: &FlowRecord, seed: u64) -> u64 {
    key_uid(&r.flow.key, r.flow.initiator, r.start.as_nanos(), seed)
}

/// Appends a uid as Zeek writes its uids: `C` and then the number in base 62 (11 digits).
///
/// The number is cut in three (5, 3 and 3 digits) and each part's digits found with 32-bit
/// arithmetic, three short chains of divisions instead of one of eleven.
#[inline]
pub fn uid_text(l: &mut Vec<u8>, u: u64) {
    const DIGITS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    const P3: u64 = 62 * 62 * 62;
    const P6: u64 = P3 * P3;
    /// Writes the base-62 digits of `v` into `out`, zero-padded.
    #[inline(always)]
    fn part(out: &mut [u8], mut v: u32) {
        for slot in out.iter_mut().rev() {
            *slot = DIGITS[(v % 62) as usize];
            v /= 62;
        }
    }
    // u64::MAX / 62^6 < 62^5: the high part has five digits and fits 32 bits.
    let (high, low) = ((u / P6) as u32, u % P6);
    // Written in place (see `num::uint`).
    let at = l.len();
    l.extend_from_slice(b"C00000000000");
    let buf = &mut l[at..];
    part(&mut buf[1..6], high);
    part(&mut buf[6..9], (low / P3) as u32);
    part(&mut buf[9..12], (low % P3) as u32);
}

/// Writes flow records to `W`. Output is buffered by `W`; call [`FlowWriter::flush`] before exit.
pub struct FlowWriter<W: Write> {
    out: W,
    format: FlowFormat,
    schema: Schema,
    line: Vec<u8>,
    header_done: bool,
    seed: u64,
}

impl<W: Write> FlowWriter<W> {
    /// A writer of `format` records to `out`, with the format's default [`Schema`].
    pub fn new(out: W, format: FlowFormat) -> Self {
        Self::with_schema(out, format, Schema::default_for(format))
    }

    /// A writer of `format` records in `schema` to `out`.
    pub fn with_schema(out: W, format: FlowFormat, schema: Schema) -> Self {
        Self { out, format, schema, line: Vec::with_capacity(512), header_done: false, seed: 0 }
    }

    /// Uses `seed` for the records' `uid`s (see [`uid`]; 0 unless set).
    pub fn with_uid_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
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
        let view = View::new(r, self.seed);
        let l = &mut self.line;
        l.clear();
        match (self.format, self.schema) {
            (FlowFormat::Json, Schema::Rampart) => rampart_fields::<Json, false>(l, &view),
            (FlowFormat::Json, Schema::V2) => v2_fields::<Json>(l, &view),
            (FlowFormat::Csv, Schema::Rampart) => rampart_fields::<Csv, true>(l, &view),
            (FlowFormat::Csv, Schema::V2) => v2_fields::<Csv>(l, &view),
        }
        match self.format {
            // Every field came with a comma before it: the first one opens the object.
            FlowFormat::Json => {
                match l.first_mut() {
                    Some(b) => *b = b'{',
                    None => l.push(b'{'),
                }
                l.extend_from_slice(b"}\n");
            }
            // Every cell came with a comma after it: the last one ends the line.
            FlowFormat::Csv => {
                l.pop();
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

#[inline(always)]
fn json_value(l: &mut Vec<u8>, v: Value<'_>) {
    match v {
        Value::Absent => {}
        Value::Bool(b) => l.extend_from_slice(if b { b"true" } else { b"false" }),
        Value::Int(n) => num::uint(l, n),
        Value::Time(ns) => epoch(l, ns),
        Value::Rtt(ns) => num::secs_frac(l, ns, 9),
        Value::Uid(u) => {
            l.push(b'"');
            uid_text(l, u);
            l.push(b'"');
        }
        Value::Name(s) => {
            l.push(b'"');
            l.extend_from_slice(s.as_bytes());
            l.push(b'"');
        }
        Value::Text(s) => text::json_string(l, s),
        Value::Cid(c) => {
            l.push(b'"');
            l.extend_from_slice(c.as_bytes());
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
            label_text(l, label);
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

#[inline(always)]
fn csv_value(l: &mut Vec<u8>, v: Value<'_>) {
    match v {
        Value::Absent => {}
        Value::Bool(b) => l.extend_from_slice(if b { b"true" } else { b"false" }),
        Value::Int(n) => num::uint(l, n),
        Value::Time(ns) => epoch(l, ns),
        Value::Rtt(ns) => num::secs_frac(l, ns, 9),
        Value::Uid(u) => uid_text(l, u),
        Value::Name(s) => l.extend_from_slice(s.as_bytes()),
        Value::Text(s) => text::csv_field(l, s),
        Value::Cid(c) => l.extend_from_slice(c.as_bytes()),
        Value::Addr(family, a) => num::slot_addr(l, family, a),
        Value::Proto(p, family) => match proto_name(p, family) {
            Some(name) => l.extend_from_slice(name.as_bytes()),
            None => int(l, p),
        },
        Value::Flags(f) => flags(l, f),
        Value::Label(label) => {
            let start = l.len();
            label_text(l, label);
            if l[start..].iter().any(|&b| matches!(b, b',' | b'"' | b'\n' | b'\r')) {
                let raw = l.split_off(start);
                text::csv_field(l, &String::from_utf8_lossy(&raw));
            }
        }
    }
}

/// Appends a label's text as its `Display` writes it (`MASTER` or `MASTER.APP`), without
/// the formatter.
#[inline]
fn label_text(l: &mut Vec<u8>, label: Label) {
    let (first, second) = label.parts();
    l.extend_from_slice(first.as_bytes());
    if let Some(app) = second {
        l.push(b'.');
        l.extend_from_slice(app.as_bytes());
    }
}

/// Appends nanoseconds since the epoch as seconds with six decimals (microseconds,
/// truncated), as records write times.
#[inline]
pub fn epoch(l: &mut Vec<u8>, ns: u64) {
    num::secs_micros(l, ns);
}

/// The protocol's name in records, or `None` where the number is written.
pub fn proto_name(p: u8, family: IpFamily) -> Option<&'static str> {
    match (p, family) {
        (proto::TCP, _) => Some("tcp"),
        (proto::UDP, _) => Some("udp"),
        (proto::ICMP, IpFamily::V4) => Some("icmp"),
        (proto::ICMPV6, IpFamily::V6) => Some("icmp6"),
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
    use rampart_wire::{Span, Timestamp};

    pub(crate) fn ended(proto: u8, kind: KeyKind, family: IpFamily) -> FlowRecord {
        let mut a = [0; 16];
        let mut b = [0; 16];
        if family == IpFamily::V4 {
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
            ts: Timestamp::from_nanos(1_700_000_000_000_001_000),
            wire_len: 60,
            tcp_flags: 0x1b,
        };
        let mut flow = Flow::start(&p);
        flow.last = Timestamp::from_nanos(1_700_000_001_500_000_999);
        flow.packets = [3, 2];
        flow.bytes = [180, 1500];
        flow.tcp_flags = [0x1b, 0x12];
        FlowRecord {
            flow,
            start: flow.first,
            end: EndReason::End,
            rtt: Some(RttSummary::default()),
            app: None,
            ct: None,
            verdict: None,
            conn: None,
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

    /// The uid field that ends a rampart JSON record of `r` with seed 0.
    fn uid_field(r: &FlowRecord) -> String {
        let mut l = Vec::new();
        uid_text(&mut l, uid(&r.flow, 0));
        format!(",\"uid\":\"{}\"", String::from_utf8(l).unwrap())
    }

    /// An interim record (active timeout) says `active` and carries its flow's uid, in every
    /// schema; the interval's own times and counters are the record's.
    #[test]
    fn interim_records_say_active_and_keep_the_flows_uid() {
        let whole = ended(6, KeyKind::Ports, IpFamily::V4);
        let mut part = whole.clone();
        part.flow.first = whole.flow.first + Span::from_millis(700);
        part.flow.packets = [1, 1];
        part.end = EndReason::Active;
        assert_eq!(record_uid(&part, 0), record_uid(&whole, 0));
        assert_eq!(record_uid(&whole, 0), uid(&whole.flow, 0));
        let mut other = whole.clone();
        other.start += Span::from_nanos(1);
        assert_ne!(record_uid(&other, 0), record_uid(&whole, 0));
        let s = render(FlowFormat::Json, &part);
        assert!(s.contains("\"first\":1700000000.700001,"), "{s}");
        assert!(
            s.contains("\"packets_fwd\":1,") && s.contains("\"end_reason\":\"active\","),
            "{s}"
        );
        assert!(s.ends_with(&format!("{}}}\n", uid_field(&whole))), "{s}");
        let csv = render(FlowFormat::Csv, &part);
        assert!(csv.lines().nth(1).unwrap().contains(",active,"), "{csv}");
        let mut w = FlowWriter::with_schema(Vec::new(), FlowFormat::Json, Schema::V2);
        w.write(&part).unwrap();
        w.write(&whole).unwrap();
        let v2 = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let uids: Vec<&str> = v2.lines().map(|l| &l[l.find("\"uid\"").unwrap()..][..20]).collect();
        assert_eq!(uids[0], uids[1]);
        assert!(v2.lines().next().unwrap().contains("\"end_reason\":\"active\""), "{v2}");
    }

    #[test]
    fn json_tcp() {
        let r = ended(6, KeyKind::Ports, IpFamily::V4);
        let s = render(FlowFormat::Json, &r);
        assert_eq!(
            s,
            format!(
                "{{\"proto\":\"tcp\",\"src\":\"10.0.0.2\",\"sport\":80,\"dst\":\"10.0.0.1\",\
             \"dport\":40000,\"community_id\":\"1:3k1SoWXs/FltHw2aBCgUTgbDQF4=\",\
             \"first\":1700000000.000001,\"last\":1700000001.500000,\
             \"duration\":1.499999,\"packets_fwd\":3,\"bytes_fwd\":180,\"packets_rev\":2,\
             \"bytes_rev\":1500,\"tcp_flags_fwd\":\"APSF\",\"tcp_flags_rev\":\"AS\",\
             \"end_reason\":\"end\",\"rtt_src_count\":0,\"rtt_dst_count\":0{}}}\n",
                uid_field(&r)
            )
        );
        assert_eq!(ended(6, KeyKind::Ports, IpFamily::V4).flow.initiator, Side::B);
        // Samples the initiator's packets completed measure the path to the initiator:
        // `rtt_src`.
        let mut r = RttSummary::default();
        r.dirs[0] = rampart_rtt::DirSummary {
            count: 2,
            min: rampart_wire::Span::from_nanos(1_000),
            median: rampart_wire::Span::from_nanos(1_500),
            max: rampart_wire::Span::from_nanos(2_000),
        };
        let mut rec = ended(6, KeyKind::Ports, IpFamily::V4);
        rec.rtt = Some(r);
        let s = render(FlowFormat::Json, &rec);
        assert!(
            s.contains(
                ",\"rtt_src_count\":2,\"rtt_src_min\":0.000001000,\"rtt_src_median\":0.000001500,\
                 \"rtt_src_max\":0.000002000,\"rtt_dst_count\":0,\"uid\""
            ),
            "{s}"
        );
    }

    #[test]
    fn json_icmp6_echo_and_other_protocols() {
        let s = render(FlowFormat::Json, &ended(58, KeyKind::Echo, IpFamily::V6));
        assert!(s.starts_with("{\"proto\":\"icmp6\",\"src\":\"fd77::2\",\"sport\":0,"), "{s}");
        assert!(s.contains(",\"icmp_id\":7,") && !s.contains("tcp_flags"), "{s}");
        let s = render(FlowFormat::Json, &ended(47, KeyKind::Pair, IpFamily::V4));
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
        w.write(&ended(17, KeyKind::Ports, IpFamily::V4)).unwrap();
        w.write(&ended(6, KeyKind::Ports, IpFamily::V6)).unwrap();
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
        let r = ended(6, KeyKind::Ports, IpFamily::V4);
        let mut w = FlowWriter::with_schema(Vec::new(), FlowFormat::Json, Schema::Rampart);
        w.write(&r).unwrap();
        let s = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert_eq!(s, render(FlowFormat::Json, &r));
        assert!(s.contains(",\"community_id\":\"1:3k1SoWXs/FltHw2aBCgUTgbDQF4=\","), "{s}");
        assert_eq!(Schema::default_for(FlowFormat::Csv), Schema::Rampart);
        assert_eq!(Schema::default_for(FlowFormat::Json), Schema::Rampart);
        let json: Vec<_> = json_field_names(Schema::Rampart).collect();
        let csv: Vec<_> = field_names(Schema::Rampart).collect();
        assert_eq!(json.iter().filter(|n| !JSON_ONLY.contains(n)).collect::<Vec<_>>().len(), 37);
        assert_eq!(csv.len(), 37);
        let mut w = FlowWriter::with_schema(Vec::new(), FlowFormat::Csv, Schema::V2);
        w.write(&r).unwrap();
        let s = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], V2_COLUMNS);
        assert_eq!(field_names(Schema::V2).collect::<Vec<_>>().join(","), V2_COLUMNS);
        assert_eq!(json_field_names(Schema::V2).collect::<Vec<_>>().join(","), V2_COLUMNS);
        assert!(
            lines[1].starts_with("1700000000.000001,1700000001.500000,1.499999,C"),
            "{}",
            lines[1]
        );
        assert!(
            lines[1].contains(",1:3k1SoWXs/FltHw2aBCgUTgbDQF4=,10.0.0.2,80,10.0.0.1,40000,tcp,,3,180,2,1500,APSF,AS,"),
            "{}",
            lines[1]
        );
        assert_eq!(lines[1].split(',').count(), V2_COLUMNS.split(',').count());
        // No ID (ICMP other than echo): an empty cell, no JSON field.
        let r = ended(1, KeyKind::Pair, IpFamily::V4);
        let mut w = FlowWriter::with_schema(Vec::new(), FlowFormat::Csv, Schema::V2);
        w.write(&r).unwrap();
        let s = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert!(s.lines().nth(1).unwrap().contains(",,10.0.0.2,0,10.0.0.1,0,icmp,"), "{s}");
        assert!(!render(FlowFormat::Json, &r).contains("community_id"));
    }

    const V2_COLUMNS: &str = "ts,ts_end,duration,uid,community_id,orig_h,orig_p,resp_h,resp_p,\
        proto,icmp_id,orig_pkts,orig_wire_bytes,resp_pkts,resp_wire_bytes,tcp_flags_orig,\
        tcp_flags_resp,conn_state,history,orig_retrans,orig_out_of_order,orig_lost,\
        orig_zero_window,resp_retrans,resp_out_of_order,resp_lost,resp_zero_window,end_reason,\
        rtt_orig_samples,rtt_orig_min_us,rtt_orig_median_us,rtt_orig_max_us,rtt_resp_samples,\
        rtt_resp_min_us,rtt_resp_median_us,rtt_resp_max_us,app,app_by,sni,alpn,http_host,\
        user_agent,dns_query,ssh_banner,ct_state,tcp_state,assured,verdict,rule,tunnel";

    /// The connection fields in both schemas: Zeek's state and history, the counters per
    /// direction, RTT in whole microseconds in v2.
    #[test]
    fn connection_fields() {
        use rampart_tcpstate::{ConnState, ConnSummary, DirCounters};
        let mut r = ended(6, KeyKind::Ports, IpFamily::V4);
        let mut c = ConnSummary { state: ConnState::SF, ..ConnSummary::default() };
        c.dirs[0] = DirCounters { retrans: 1, out_of_order: 2, lost: 3, zero_window: 4 };
        c.dirs[1] = DirCounters { retrans: 5, out_of_order: 6, lost: 7, zero_window: 8 };
        r.conn = Some(c);
        let mut rtt = RttSummary::default();
        rtt.dirs[1] = rampart_rtt::DirSummary {
            count: 2,
            min: rampart_wire::Span::from_nanos(1_999),
            median: rampart_wire::Span::from_nanos(2_500),
            max: rampart_wire::Span::from_nanos(30_000),
        };
        r.rtt = Some(rtt);
        let s = render(FlowFormat::Json, &r);
        assert!(
            s.ends_with(
                ",\"conn_state\":\"SF\",\"retrans_fwd\":1,\"retrans_rev\":5,\
                 \"out_of_order_fwd\":2,\"out_of_order_rev\":6,\"lost_fwd\":3,\"lost_rev\":7,\
                 \"zero_window_fwd\":4,\"zero_window_rev\":8}\n"
            ),
            "{s}"
        );
        // CSV's columns do not move.
        assert!(!render(FlowFormat::Csv, &r).contains(",SF"));
        let mut w = FlowWriter::with_schema(Vec::new(), FlowFormat::Json, Schema::V2);
        w.write(&r).unwrap();
        let s = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert!(
            s.contains(
                ",\"conn_state\":\"SF\",\"orig_retrans\":1,\"orig_out_of_order\":2,\
                 \"orig_lost\":3,\"orig_zero_window\":4,\"resp_retrans\":5,\
                 \"resp_out_of_order\":6,\"resp_lost\":7,\"resp_zero_window\":8,\
                 \"end_reason\":\"end\",\"rtt_orig_samples\":0,\"rtt_resp_samples\":2,\
                 \"rtt_resp_min_us\":1,\"rtt_resp_median_us\":2,\"rtt_resp_max_us\":30}"
            ),
            "{s}"
        );
        // Not TCP: a state, no counters.
        let mut r = ended(17, KeyKind::Ports, IpFamily::V4);
        r.conn = Some(ConnSummary { state: ConnState::S0, ..ConnSummary::default() });
        let s = render(FlowFormat::Json, &r);
        assert!(s.ends_with(",\"conn_state\":\"S0\"}\n"), "{s}");
    }

    /// A uid depends on the key, the first packet's time and the seed only.
    #[test]
    fn uids() {
        let r = ended(6, KeyKind::Ports, IpFamily::V4);
        let mut later = r.clone();
        later.flow.first += Span::from_nanos(1);
        let mut other = r.clone();
        let k = r.flow.key;
        other.flow.key = FlowKey::new(
            *k.addr_a_bytes(),
            k.port_a() + 1,
            *k.addr_b_bytes(),
            k.port_b(),
            k.proto(),
            k.family(),
            k.kind(),
        )
        .0;
        let mut longer = r.clone();
        longer.flow.last += Span::from_nanos(5);
        longer.flow.packets[0] += 7;
        let u = uid(&r.flow, 0);
        assert_eq!(u, uid(&longer.flow, 0));
        assert_ne!(u, uid(&later.flow, 0));
        assert_ne!(u, uid(&other.flow, 0));
        assert_ne!(u, uid(&r.flow, 1));
        let mut l = Vec::new();
        uid_text(&mut l, u64::MAX);
        assert_eq!(l, b"CLygHa16AHYF");
        // The three-part digits equal eleven divisions of the whole number.
        let plain = |mut u: u64| {
            const DIGITS: &[u8; 62] =
                b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
            let mut buf = [b'0'; 11];
            for slot in buf.iter_mut().rev() {
                *slot = DIGITS[(u % 62) as usize];
                u /= 62;
            }
            [b"C".as_slice(), &buf].concat()
        };
        let p3 = 62u64.pow(3);
        let p6 = 62u64.pow(6);
        let mut values = vec![0, 1, 61, 62, u64::MAX, u64::MAX - 1, u, uid(&r.flow, 9)];
        for p in [p3, p6, p6 * 61, 62u64.pow(10)] {
            values.extend([p - 1, p, p + 1]);
        }
        values.extend((0..2000).map(|s| uid(&r.flow, s)));
        for v in values {
            let mut t = Vec::new();
            uid_text(&mut t, v);
            assert_eq!(t, plain(v), "{v}");
        }
        l.clear();
        uid_text(&mut l, 0);
        assert_eq!(l, b"C00000000000");
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
        w.write(&with_app(ended(6, KeyKind::Ports, IpFamily::V4), tls_app())).unwrap();
        w.write(&with_app(ended(17, KeyKind::Ports, IpFamily::V4), App::default())).unwrap();
        let s = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert!(
            lines[0].ends_with(
                "\"end_reason\":\"end\",\"rtt_src_count\":0,\"rtt_dst_count\":0,\
                 \"app\":\"TLS.YouTube\",\"app_by\":\"dpi\",\
                 \"sni\":\"www.youtube.com\",\"alpn\":\"h2,http/1.1\",\
                 \"user_agent\":\"a \\\"quoted\\\", \\\\ agent\",\"uid\":\"C"
            ) || lines[0].contains("\"user_agent\":\"a \\\"quoted\\\", \\\\ agent\",\"uid\":\"C"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].contains("\"app\":\"Unknown\",\"app_by\":\"none\",\"uid\":\"C"),
            "{}",
            lines[1]
        );
    }

    /// Labels are appended as they are displayed.
    #[test]
    fn label_text_is_the_display() {
        use rampart_dpi::{Label, Proto};
        for master in [Proto::Unknown, Proto::Tls, Proto::Dns, Proto::Quic] {
            for app in [None, Some("YouTube"), Some(master.name()), Some("TLS"), Some("")] {
                let label = Label { master, app };
                let mut l = b"x".to_vec();
                label_text(&mut l, label);
                assert_eq!(l, format!("x{label}").into_bytes(), "{label:?}");
            }
        }
    }

    #[test]
    fn application_fields_in_csv() {
        let mut w = FlowWriter::new(Vec::new(), FlowFormat::Csv);
        w.write(&with_app(ended(6, KeyKind::Ports, IpFamily::V4), tls_app())).unwrap();
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
        let mut r = ended(6, KeyKind::Ports, IpFamily::V4);
        r.rtt = None;
        assert!(!render(FlowFormat::Json, &r).contains("rtt_"));
        let csv = render(FlowFormat::Csv, &r);
        let row = csv.lines().nth(1).unwrap();
        assert!(row.ends_with(",end,,,,,,,,,,,,,,,,,,,,,"), "{row}");
        // RTT on, a TCP flow without samples: counts of 0.
        let r = ended(6, KeyKind::Ports, IpFamily::V4);
        let row = render(FlowFormat::Csv, &r).lines().nth(1).unwrap().to_string();
        assert!(row.ends_with(",end,0,,,,0,,,,,,,,,,,,,,,,"), "{row}");
    }
}
