//! Prometheus metrics: the text exposition format (version 0.0.4), written by hand.
//!
//! Why no client crate: the Prometheus project's Rust client (`prometheus-client`) keeps each
//! counter as one shared atomic and writes OpenMetrics, on which `promtool check metrics`
//! reports missing help text. rampart's counters already live in per-thread summaries that are
//! published at batch boundaries and summed when scraped ([`rampart_engine::Board`]), so all
//! that is needed is a writer of the text format: [`Exposition`] (families, samples, label
//! escaping, histograms), [`Histogram`] (fixed buckets, cumulative when written) and
//! [`FlowCounts`] (what the flow records and RTT samples of a run add up to). [`render`]
//! writes rampart's whole metric set from them; every family is listed in the README.
//!
//! Names follow Prometheus' conventions: the `rampart_` prefix, base units (seconds, bytes)
//! in the name, `_total` on counters. Labels take bounded values only (reasons, directions,
//! applications, rule names), never addresses or ports; the one exception, address prefixes
//! ([`PrefixRtt`], asked for with `rtt --aggregate`), is capped like the application names.

use std::fmt::Write as _;

use rampart_dpi::Label;
use rampart_engine::{FlowRecord, Summary};
use rampart_flow::{Dir, EndReason};
use rampart_rtt::Sample;
use rampart_rtt::aggregate::{IntervalRow, Prefix};
use rampart_wire::{Span, Status};

/// The `Content-Type` of a page [`render`] writes.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Upper bounds (seconds) of the RTT histograms' buckets: 100 µs to 10 s in 1-2-5 steps,
/// from a LAN's round trips to a satellite link's or a congested queue's.
pub const RTT_BUCKETS: [f64; 16] = [
    0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0,
    10.0,
];

/// Distinct application labels counted by name; any further ones count as `other`, so a
/// page's series stay bounded.
pub const MAX_APPS: usize = 256;

/// The kind of a metric family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up (the name ends in `_total`).
    Counter,
    /// Any value.
    Gauge,
    /// Cumulative buckets with `_bucket`, `_sum` and `_count` series.
    Histogram,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// A histogram over fixed upper bounds: counts per bucket (not cumulative), the sum and the
/// count of observations.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    bounds: &'static [f64],
    /// One count per bound, then the count above the last bound.
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    /// An empty histogram over `bounds` (ascending).
    pub fn new(bounds: &'static [f64]) -> Self {
        Self { bounds, counts: vec![0; bounds.len() + 1], sum: 0.0, count: 0 }
    }

    /// Counts one observation (a value equal to a bound falls in that bound's bucket, as
    /// `le` says).
    #[inline]
    pub fn observe(&mut self, v: f64) {
        let i = self.bounds.partition_point(|b| *b < v);
        self.counts[i] += 1;
        self.sum += v;
        self.count += 1;
    }

    /// Adds another histogram over the same bounds.
    pub fn merge(&mut self, o: &Histogram) {
        debug_assert_eq!(self.bounds, o.bounds);
        self.add_counts(&o.counts, o.sum, o.count);
    }

    /// Adds observations already counted per bucket (`counts` in this histogram's buckets),
    /// with their sum and number.
    pub fn add_counts(&mut self, counts: &[u64], sum: f64, count: u64) {
        for (a, b) in self.counts.iter_mut().zip(counts) {
            *a += b;
        }
        self.sum += sum;
        self.count += count;
    }

    /// Observations counted.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Sum of the observations.
    pub fn sum(&self) -> f64 {
        self.sum
    }

    /// `(upper bound, cumulative count)` per bucket, the last bound being `+Inf`.
    pub fn cumulative(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        let bounds = self.bounds.iter().copied().chain([f64::INFINITY]);
        bounds.zip(self.counts.iter().scan(0u64, |acc, c| {
            *acc += c;
            Some(*acc)
        }))
    }
}

/// What a run's flow records and RTT samples add up to: flows ended by reason, flows per
/// application, RTT samples per direction. Kept by whoever receives the records (the
/// reading thread), published like the engine's counters.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowCounts {
    /// Records per [`EndReason`], in the order of [`END_REASONS`] (flows ended).
    pub ended: [u64; 5],
    /// Interim records of live flows ([`EndReason::Active`], an active timeout), counted
    /// apart: they end no flow.
    pub interim: u64,
    /// Records per application label, in order of first appearance (at most [`MAX_APPS`]).
    pub apps: Vec<(Label, u64)>,
    /// Records of applications beyond [`MAX_APPS`].
    pub other_apps: u64,
    /// RTT samples (seconds), indexed by the [`Dir`] of the packet that completed them:
    /// `[Dir::Original]` measures the capture point to the initiator and back,
    /// `[Dir::Reply]` to the responder and back.
    pub rtt: [Histogram; 2],
}

/// End reasons in the order of [`FlowCounts::ended`].
pub const END_REASONS: [EndReason; 5] =
    [EndReason::Idle, EndReason::Fin, EndReason::Rst, EndReason::Evicted, EndReason::End];

impl Default for FlowCounts {
    fn default() -> Self {
        Self {
            ended: [0; 5],
            interim: 0,
            apps: Vec::new(),
            other_apps: 0,
            rtt: [Histogram::new(&RTT_BUCKETS), Histogram::new(&RTT_BUCKETS)],
        }
    }
}

impl FlowCounts {
    /// Counts a flow record: its end reason and its application. An interim record
    /// ([`EndReason::Active`]) counts only in [`FlowCounts::interim`], so that each flow is
    /// counted once, by its final record.
    pub fn record(&mut self, r: &FlowRecord) {
        if !r.end.is_final() {
            self.interim += 1;
            return;
        }
        let i = END_REASONS.iter().position(|e| *e == r.end).unwrap_or(4);
        self.ended[i] += 1;
        if let Some(app) = &r.app {
            if let Some((_, n)) = self.apps.iter_mut().find(|(l, _)| *l == app.label) {
                *n += 1;
            } else if self.apps.len() < MAX_APPS {
                self.apps.push((app.label, 1));
            } else {
                self.other_apps += 1;
            }
        }
    }

    /// Counts an RTT sample in its direction's histogram.
    #[inline]
    pub fn sample(&mut self, s: &Sample) {
        self.rtt[s.dir as usize].observe(s.rtt.as_nanos() as f64 * 1e-9);
    }

    /// Flows ended (their final records).
    pub fn flows(&self) -> u64 {
        self.ended.iter().sum()
    }
}

/// [`RTT_BUCKETS`] as spans (rounded to the nanosecond): the coarse buckets an aggregator
/// counts per prefix ([`rampart_rtt::aggregate::AggConfig::coarse`]) for [`PrefixRtt`].
pub fn rtt_bucket_bounds() -> Vec<Span> {
    RTT_BUCKETS.iter().map(|b| Span::from_nanos((b * 1e9).round() as u64)).collect()
}

/// Per-prefix RTT histograms over a run (`rampart rtt --aggregate --metrics`), fed one
/// interval row at a time: the first `max` prefixes of the run get series of their own
/// (`prefix` label), later ones and the intervals' `other` rows add up in `prefix="other"`,
/// so the page stays bounded.
#[derive(Clone, Debug)]
pub struct PrefixRtt {
    max: usize,
    index: std::collections::HashMap<Prefix, usize>,
    rows: Vec<(Prefix, Histogram)>,
    other: Histogram,
}

impl PrefixRtt {
    /// No prefixes yet; at most `max` with series of their own.
    pub fn new(max: usize) -> Self {
        Self {
            max,
            index: std::collections::HashMap::new(),
            rows: Vec::new(),
            other: Histogram::new(&RTT_BUCKETS),
        }
    }

    /// Adds an interval's row, whose coarse counts are over [`rtt_bucket_bounds`] (a row
    /// without them is ignored).
    pub fn add(&mut self, r: &IntervalRow<'_>) {
        if r.coarse.len() != RTT_BUCKETS.len() + 1 {
            return;
        }
        let h = match r.prefix {
            Some(p) => match self.index.get(&p) {
                Some(&i) => &mut self.rows[i].1,
                None if self.rows.len() < self.max => {
                    self.index.insert(p, self.rows.len());
                    self.rows.push((p, Histogram::new(&RTT_BUCKETS)));
                    &mut self.rows.last_mut().expect("just pushed").1
                }
                None => &mut self.other,
            },
            None => &mut self.other,
        };
        h.add_counts(r.coarse, r.sum as f64 * 1e-9, r.count);
    }

    /// Prefixes with series of their own.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether no prefix has a series yet.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Writes the `rampart_prefix_rtt_seconds` family: one histogram per prefix, ordered by
    /// prefix, then `other` if anything fell there.
    pub fn render(&self, e: &mut Exposition) {
        e.family(
            "rampart_prefix_rtt_seconds",
            Kind::Histogram,
            "Passive TCP round-trip times per address prefix (rtt --aggregate), from the capture \
             point to the aggregated end and back.",
        );
        let mut order: Vec<&(Prefix, Histogram)> = self.rows.iter().collect();
        order.sort_unstable_by_key(|r| r.0);
        let mut name = String::new();
        for (p, h) in order {
            name.clear();
            let _ = write!(name, "{p}");
            e.histogram("rampart_prefix_rtt_seconds", &[("prefix", &name)], h);
        }
        if self.other.count > 0 {
            e.histogram("rampart_prefix_rtt_seconds", &[("prefix", "other")], &self.other);
        }
    }
}

/// Label names that apply to a direction of RTT samples (see [`FlowCounts::rtt`]).
pub fn direction_name(d: Dir) -> &'static str {
    match d {
        Dir::Original => "to_initiator",
        Dir::Reply => "to_responder",
    }
}

/// A page of the text exposition format being written.
#[derive(Debug, Default)]
pub struct Exposition {
    out: String,
}

impl Exposition {
    /// An empty page.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts a family: its `# HELP` and `# TYPE` lines. `help` is escaped as the format
    /// asks (backslash and newline).
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) {
        let _ = write!(self.out, "# HELP {name} ");
        for c in help.chars() {
            match c {
                '\\' => self.out.push_str("\\\\"),
                '\n' => self.out.push_str("\\n"),
                c => self.out.push(c),
            }
        }
        let _ = writeln!(self.out, "\n# TYPE {name} {}", kind.name());
    }

    /// One sample: `name{label="value",...} value`, label values escaped.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        self.labels(labels, None);
        self.out.push(' ');
        self.value(value);
        self.out.push('\n');
    }

    /// A counter's or gauge's sample of an integer value (written exactly).
    pub fn int(&mut self, name: &str, labels: &[(&str, &str)], value: u64) {
        self.out.push_str(name);
        self.labels(labels, None);
        let _ = writeln!(self.out, " {value}");
    }

    /// A whole family with one series per label value: `(value, count)` pairs.
    pub fn counter_by<'a>(
        &mut self,
        name: &str,
        help: &str,
        label: &str,
        values: impl IntoIterator<Item = (&'a str, u64)>,
    ) {
        self.family(name, Kind::Counter, help);
        for (v, n) in values {
            self.int(name, &[(label, v)], n);
        }
    }

    /// A family of one series without labels.
    pub fn single(&mut self, name: &str, kind: Kind, help: &str, value: u64) {
        self.family(name, kind, help);
        self.int(name, &[], value);
    }

    /// A histogram's series (the family must have been started with [`Kind::Histogram`]):
    /// cumulative `_bucket{le=...}` ending with `+Inf`, then `_sum` and `_count`.
    pub fn histogram(&mut self, name: &str, labels: &[(&str, &str)], h: &Histogram) {
        let mut le = String::new();
        for (bound, n) in h.cumulative() {
            le.clear();
            if bound.is_infinite() {
                le.push_str("+Inf");
            } else {
                let _ = write!(le, "{bound}");
            }
            let _ = write!(self.out, "{name}_bucket");
            self.labels(labels, Some(&le));
            let _ = writeln!(self.out, " {n}");
        }
        let _ = write!(self.out, "{name}_sum");
        self.labels(labels, None);
        self.out.push(' ');
        self.value(h.sum());
        self.out.push('\n');
        let _ = write!(self.out, "{name}_count");
        self.labels(labels, None);
        let _ = writeln!(self.out, " {}", h.count());
    }

    /// The page.
    pub fn finish(self) -> String {
        self.out
    }

    fn labels(&mut self, labels: &[(&str, &str)], le: Option<&str>) {
        if labels.is_empty() && le.is_none() {
            return;
        }
        self.out.push('{');
        let all = labels.iter().copied().chain(le.map(|v| ("le", v)));
        for (i, (k, v)) in all.enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            self.out.push_str(k);
            self.out.push_str("=\"");
            escape_label(&mut self.out, v);
            self.out.push('"');
        }
        self.out.push('}');
    }

    fn value(&mut self, v: f64) {
        if v.is_nan() {
            self.out.push_str("NaN");
        } else if v.is_infinite() {
            self.out.push_str(if v > 0.0 { "+Inf" } else { "-Inf" });
        } else {
            let _ = write!(self.out, "{v}");
        }
    }
}

/// Appends a label value escaped as the text format asks: backslash, double quote and
/// newline.
pub fn escape_label(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// A live capture's counters (from the capture's monitor).
#[derive(Clone, Copy, Debug, Default)]
pub struct LiveCounts {
    /// Packets rampart took from the kernel's ring.
    pub received: u64,
    /// Packets the kernel dropped because the ring was full.
    pub kernel_dropped: u64,
    /// Packets rampart took from the ring and could not use.
    pub rampart_dropped: u64,
    /// Times the kernel froze the full ring.
    pub freezes: u64,
}

/// Distinct rules counted by name on a page (besides each base chain's policy); the hits of
/// any further ones count under the rule `other`, so a page's series stay bounded whatever
/// the rule set's size.
pub const MAX_RULES: usize = 1024;

/// One rule's counter: packets that matched it, as netfilter counts them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleHits {
    /// The base chain it is reached from (table and chain, as the summary names it).
    pub chain: String,
    /// The rule's name as the firewall's log shows it (`forward:3 new-tcp`, `policy`).
    pub rule: String,
    /// What it does: `accept`, `drop`, `reject`, `jump NAME`, `return`, ...
    pub action: String,
    /// Packets that matched it.
    pub packets: u64,
}

/// Connection tracking's counters, as `conntrack -S` and `conntrack -C` give them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConntrackCounts {
    /// Connections tracked now.
    pub entries: u64,
    /// Most connections tracked at once (`nf_conntrack_max`).
    pub limit: u64,
    /// Packets that found their connection.
    pub found: u64,
    /// Connections confirmed (`insert`).
    pub inserted: u64,
    /// New connections that could not be confirmed (`insert_failed`).
    pub insert_failed: u64,
    /// New packets dropped because the table was full (`drop`).
    pub table_full: u64,
    /// Connections pushed out to make room (`early_drop`).
    pub early_drops: u64,
    /// ICMP errors that failed the error path (`error`).
    pub errors: u64,
    /// TCP packets the state machine ignored.
    pub ignored: u64,
    /// Packets tracked without their checksum verified (cut by the snap length, fragments).
    pub unchecked: u64,
    /// Invalid packets by Linux's reason (every reason, at 0 too); their sum can exceed
    /// `invalid` since ICMP errors count as `errors`.
    pub invalid: Vec<(&'static str, u64)>,
}

/// The stateful firewall's counters (`rampart firewall`): what its summary shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FirewallCounts {
    /// Per verdict name (`accept`, `drop`, `reject`): packets, and their bytes on the wire.
    pub verdicts: Vec<(&'static str, u64, u64)>,
    /// Packets dropped or rejected, by why (`rule`, `policy`, `ct_invalid`, `table_full`,
    /// `not_ip`); they add up to the dropped and rejected packets.
    pub drops: Vec<(&'static str, u64)>,
    /// Per rule of the rule set in force (at most [`MAX_RULES`]).
    pub rules: Vec<RuleHits>,
    /// Packets that matched rules beyond [`MAX_RULES`] (`None` when every rule is named).
    pub other_rules: Option<u64>,
    /// Packets decided by walking the rule set, and from a flow's cached decision.
    pub decisions: [u64; 2],
    /// Rule set reloads: applied, and refused (a file that did not load).
    pub reloads: [u64; 2],
    /// Connection tracking.
    pub conntrack: ConntrackCounts,
}

impl FirewallCounts {
    /// Adds another data plane's rule and connection tracking counters (those of another
    /// worker running the same rule set): rule hits by chain, rule and action, connection
    /// counts and invalid reasons by name. Verdicts, drops and reloads are not touched.
    pub fn add_data_plane(&mut self, o: &FirewallCounts) {
        for (a, b) in self.decisions.iter_mut().zip(o.decisions) {
            *a += b;
        }
        for r in &o.rules {
            match self
                .rules
                .iter_mut()
                .find(|x| x.chain == r.chain && x.rule == r.rule && x.action == r.action)
            {
                Some(x) => x.packets += r.packets,
                None => self.rules.push(r.clone()),
            }
        }
        if let Some(n) = o.other_rules {
            *self.other_rules.get_or_insert(0) += n;
        }
        let (c, d) = (&mut self.conntrack, &o.conntrack);
        c.entries += d.entries;
        c.limit += d.limit;
        c.found += d.found;
        c.inserted += d.inserted;
        c.insert_failed += d.insert_failed;
        c.table_full += d.table_full;
        c.early_drops += d.early_drops;
        c.errors += d.errors;
        c.ignored += d.ignored;
        c.unchecked += d.unchecked;
        for &(name, n) in &d.invalid {
            match c.invalid.iter_mut().find(|x| x.0 == name) {
                Some(x) => x.1 += n,
                None => c.invalid.push((name, n)),
            }
        }
    }
}

/// Everything one page shows.
#[derive(Debug)]
pub struct Page<'a> {
    /// The run's counters (summed over its threads).
    pub summary: &'a Summary,
    /// What its records and samples add up to.
    pub flows: &'a FlowCounts,
    /// A live capture's ring counters, if capturing live.
    pub live: Option<LiveCounts>,
    /// The firewall's counters, for `rampart firewall`.
    pub firewall: Option<&'a FirewallCounts>,
    /// Whether the run has ended (the counters are final).
    pub ended: bool,
}

/// Writes rampart's metric page.
pub fn render(p: &Page<'_>) -> String {
    let s = p.summary;
    let t = &s.table;
    let mut e = Exposition::new();
    e.family("rampart_build_info", Kind::Gauge, "rampart's version (the value is always 1).");
    e.int("rampart_build_info", &[("version", env!("CARGO_PKG_VERSION"))], 1);
    e.single(
        "rampart_run_ended",
        Kind::Gauge,
        "1 once the run has ended and every counter is final, else 0.",
        u64::from(p.ended),
    );
    e.single(
        "rampart_packets_total",
        Kind::Counter,
        "Frames read from the capture (after the filter expression).",
        s.packets,
    );
    e.single(
        "rampart_bytes_total",
        Kind::Counter,
        "Bytes of the frames read, as long as they were on the wire.",
        s.wire_bytes,
    );
    e.single(
        "rampart_captured_bytes_total",
        Kind::Counter,
        "Bytes of the frames read, as captured (at most the snap length each).",
        s.captured_bytes,
    );
    e.single(
        "rampart_filtered_packets_total",
        Kind::Counter,
        "Frames the filter expression rejected (not counted anywhere else).",
        s.filtered,
    );
    e.single("rampart_non_ip_packets_total", Kind::Counter, "Frames that were not IP.", s.non_ip);
    e.counter_by(
        "rampart_parse_problems_total",
        "Frames with a parse problem, by problem.",
        "reason",
        (0..Status::PROBLEMS).map(|i| (Status::problem_name(i), s.problems[i])),
    );
    e.single(
        "rampart_flows_created_total",
        Kind::Counter,
        "Flows the flow table started.",
        t.created,
    );
    e.single(
        "rampart_flows_active",
        Kind::Gauge,
        "Flows live in the flow table now (started and not yet ended).",
        t.created.saturating_sub(p.flows.flows()),
    );
    e.counter_by(
        "rampart_flows_ended_total",
        "Flows ended (one record each), by why they ended.",
        "reason",
        END_REASONS.iter().map(|r| r.name()).zip(p.flows.ended),
    );
    if p.flows.interim > 0 {
        // Only with an active timeout, from the first interim record on.
        e.single(
            "rampart_flow_records_interim_total",
            Kind::Counter,
            "Interim records of live flows (active timeout); not flows ended.",
            p.flows.interim,
        );
    }
    e.single(
        "rampart_flow_table_evictions_total",
        Kind::Counter,
        "Flows evicted from the full flow table to make room for a new one.",
        t.evicted,
    );
    e.single(
        "rampart_flow_table_refused_total",
        Kind::Counter,
        "New flows not tracked because the table was full of protected flows.",
        t.refused,
    );
    e.family(
        "rampart_app_flows_total",
        Kind::Counter,
        "Flows ended, by the application identification named (nDPI's naming).",
    );
    let mut name = String::new();
    for (label, n) in &p.flows.apps {
        name.clear();
        let _ = write!(name, "{label}");
        e.int("rampart_app_flows_total", &[("app", &name)], *n);
    }
    if p.flows.other_apps > 0 {
        e.int("rampart_app_flows_total", &[("app", "other")], p.flows.other_apps);
    }
    e.family(
        "rampart_rtt_seconds",
        Kind::Histogram,
        "Passive TCP round-trip times from the capture point to one end and back, by which end.",
    );
    for d in [Dir::Original, Dir::Reply] {
        e.histogram(
            "rampart_rtt_seconds",
            &[("direction", direction_name(d))],
            &p.flows.rtt[d as usize],
        );
    }
    e.family(
        "rampart_memory_bytes",
        Kind::Gauge,
        "Memory held by a part of the pipeline (its high-water mark).",
    );
    let parts = [
        ("flow_table", s.table_bytes),
        ("rtt", s.rtt_bytes),
        ("dpi", s.dpi_bytes),
        ("tcp_state", s.tcp_bytes),
    ];
    for (part, b) in parts {
        e.int("rampart_memory_bytes", &[("part", part)], b as u64);
    }
    if let Some(l) = p.live {
        e.single(
            "rampart_capture_received_packets_total",
            Kind::Counter,
            "Packets rampart took from the kernel's capture ring.",
            l.received,
        );
        e.single(
            "rampart_kernel_ring_drops_total",
            Kind::Counter,
            "Packets the kernel dropped because the capture ring was full.",
            l.kernel_dropped,
        );
        e.counter_by(
            "rampart_drops_total",
            "Packets lost before analysis, by reason: ring_full (the kernel, the ring was \
             full) or unusable_record (rampart, a ring record that does not fit its block).",
            "reason",
            [("ring_full", l.kernel_dropped), ("unusable_record", l.rampart_dropped)],
        );
        e.single(
            "rampart_capture_ring_freezes_total",
            Kind::Counter,
            "Times the kernel froze the full capture ring.",
            l.freezes,
        );
    }
    if let Some(f) = p.firewall {
        firewall(&mut e, f);
    }
    e.finish()
}

/// The firewall's families.
fn firewall(e: &mut Exposition, f: &FirewallCounts) {
    e.counter_by(
        "rampart_firewall_packets_total",
        "IP packets and other frames the firewall decided, by verdict.",
        "verdict",
        f.verdicts.iter().map(|(v, n, _)| (*v, *n)),
    );
    e.counter_by(
        "rampart_firewall_bytes_total",
        "Bytes (as on the wire) of the packets the firewall decided, by verdict.",
        "verdict",
        f.verdicts.iter().map(|(v, _, b)| (*v, *b)),
    );
    e.counter_by(
        "rampart_firewall_drops_total",
        "Packets dropped or rejected, by why: rule (a rule's verdict), policy (a base chain's \
         policy), ct_invalid (a rule or policy, the packet being ct state invalid), table_full \
         (the connection table was full), not_ip (frames not IP or not parsed, which a router \
         does not forward).",
        "reason",
        f.drops.iter().copied(),
    );
    e.family(
        "rampart_rule_hits_total",
        Kind::Counter,
        "Packets that matched a rule of the rule set in force, as netfilter counts them (they \
         restart at a reload, as nft's counters do).",
    );
    for r in &f.rules {
        let labels =
            [("chain", r.chain.as_str()), ("rule", r.rule.as_str()), ("action", &r.action)];
        e.int("rampart_rule_hits_total", &labels, r.packets);
    }
    if let Some(n) = f.other_rules {
        let labels = [("chain", "other"), ("rule", "other"), ("action", "other")];
        e.int("rampart_rule_hits_total", &labels, n);
    }
    e.counter_by(
        "rampart_firewall_decisions_total",
        "Packets decided by walking the rule set (rule_set) or by the flow's cached decision \
         (cache).",
        "by",
        [("rule_set", f.decisions[0]), ("cache", f.decisions[1])],
    );
    e.counter_by(
        "rampart_firewall_reloads_total",
        "Rule set reloads, by result: loaded, or failed (the file did not load; the rules in \
         force stayed).",
        "result",
        [("loaded", f.reloads[0]), ("failed", f.reloads[1])],
    );
    let c = &f.conntrack;
    e.single(
        "rampart_conntrack_entries",
        Kind::Gauge,
        "Connections tracked now (conntrack -C).",
        c.entries,
    );
    e.single(
        "rampart_conntrack_entries_limit",
        Kind::Gauge,
        "Most connections tracked at once (--ct-max, nf_conntrack_max).",
        c.limit,
    );
    for (name, help, v) in [
        ("rampart_conntrack_found_total", "Packets that found their connection.", c.found),
        (
            "rampart_conntrack_inserted_total",
            "New connections confirmed (conntrack -S insert).",
            c.inserted,
        ),
        (
            "rampart_conntrack_insert_failed_total",
            "New connections that could not be confirmed (conntrack -S insert_failed).",
            c.insert_failed,
        ),
        (
            "rampart_conntrack_table_full_drops_total",
            "New packets dropped because the table was full of connections that may not be \
             pushed out (conntrack -S drop).",
            c.table_full,
        ),
        (
            "rampart_conntrack_early_drops_total",
            "Connections pushed out of the full table to make room (conntrack -S early_drop).",
            c.early_drops,
        ),
        (
            "rampart_conntrack_errors_total",
            "ICMP errors that failed the error path (conntrack -S error).",
            c.errors,
        ),
        (
            "rampart_conntrack_ignored_total",
            "TCP packets the state machine ignored, the state unchanged.",
            c.ignored,
        ),
        (
            "rampart_conntrack_unchecked_checksums_total",
            "Packets tracked without their checksum verified (cut by the snap length, \
             fragments).",
            c.unchecked,
        ),
    ] {
        e.single(name, Kind::Counter, help, v);
    }
    e.counter_by(
        "rampart_conntrack_invalid_total",
        "Packets connection tracking found invalid, by Linux's reason (whatever the rules then \
         did with them).",
        "reason",
        c.invalid.iter().copied(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        let mut e = Exposition::new();
        e.int("x_total", &[("rule", "a\\b \"c\"\nd")], 3);
        assert_eq!(e.finish(), "x_total{rule=\"a\\\\b \\\"c\\\"\\nd\"} 3\n");
    }

    #[test]
    fn help_text_escapes_backslash_and_newline_only() {
        let mut e = Exposition::new();
        e.family("x", Kind::Gauge, "a \"q\" \\ b\nc");
        assert_eq!(e.finish(), "# HELP x a \"q\" \\\\ b\\nc\n# TYPE x gauge\n");
    }

    #[test]
    fn histogram_buckets_are_cumulative_and_end_with_inf() {
        static B: [f64; 3] = [0.001, 0.01, 0.1];
        let mut h = Histogram::new(&B);
        for v in [0.0005, 0.001, 0.005, 0.05, 0.05, 3.0] {
            h.observe(v);
        }
        let mut e = Exposition::new();
        e.histogram("rtt_seconds", &[("direction", "to_responder")], &h);
        let page = e.finish();
        assert_eq!(
            page,
            "rtt_seconds_bucket{direction=\"to_responder\",le=\"0.001\"} 2\n\
             rtt_seconds_bucket{direction=\"to_responder\",le=\"0.01\"} 3\n\
             rtt_seconds_bucket{direction=\"to_responder\",le=\"0.1\"} 5\n\
             rtt_seconds_bucket{direction=\"to_responder\",le=\"+Inf\"} 6\n\
             rtt_seconds_sum{direction=\"to_responder\"} 3.1065\n\
             rtt_seconds_count{direction=\"to_responder\"} 6\n"
        );
    }

    #[test]
    fn count_equals_the_inf_bucket_and_sum_the_observations() {
        let mut a = Histogram::new(&RTT_BUCKETS);
        let mut b = Histogram::new(&RTT_BUCKETS);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut total = 0.0;
        for i in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = (x % 20_000_000) as f64 * 1e-6;
            total += v;
            if i % 3 == 0 { a.observe(v) } else { b.observe(v) }
        }
        a.merge(&b);
        let cum: Vec<(f64, u64)> = a.cumulative().collect();
        assert!(cum.windows(2).all(|w| w[0].1 <= w[1].1 && w[0].0 < w[1].0));
        assert_eq!(cum.last(), Some(&(f64::INFINITY, 10_000)));
        assert_eq!(a.count(), 10_000);
        assert!((a.sum() - total).abs() < 1e-6 * total);
    }

    /// Interim records (active timeout) are counted apart: they end no flow, so they count
    /// neither as flows ended nor per application, and the live gauge is not lowered.
    #[test]
    fn interim_records_are_not_flows_ended() {
        let mut r =
            crate::tests::ended(6, rampart_flow::KeyKind::Ports, rampart_wire::IpFamily::V4);
        r.app = Some(crate::tests::tls_app());
        let mut f = FlowCounts::default();
        r.end = EndReason::Active;
        f.record(&r);
        f.record(&r);
        assert_eq!((f.flows(), f.interim, f.apps.len()), (0, 2, 0));
        r.end = EndReason::Fin;
        f.record(&r);
        assert_eq!((f.flows(), f.interim, f.apps.len()), (1, 2, 1));
        let mut s = Summary::default();
        s.table.created = 1;
        let page =
            render(&Page { summary: &s, flows: &f, live: None, firewall: None, ended: true });
        assert!(page.contains("rampart_flow_records_interim_total 2\n"), "{page}");
        assert!(page.contains("rampart_flows_ended_total{reason=\"fin\"} 1\n"));
        assert!(page.contains("rampart_flows_active 0\n"));
        let none = render(&Page {
            summary: &s,
            flows: &FlowCounts::default(),
            live: None,
            firewall: None,
            ended: true,
        });
        assert!(!none.contains("interim"), "without interim records the page is as before");
    }

    #[test]
    fn prefix_histograms_are_bounded_and_sum_their_rows() {
        use rampart_rtt::aggregate::{AggConfig, Aggregator};
        let cfg = AggConfig { coarse: rtt_bucket_bounds(), ..AggConfig::default() };
        let mut agg = Aggregator::new(cfg).unwrap();
        let mut prom = PrefixRtt::new(2);
        let addr = |x: u8| {
            let mut a = [0u8; 16];
            a[..4].copy_from_slice(&[10, x, 0, 1]);
            a
        };
        // Two intervals; the third prefix seen in the run goes to other.
        for (t, x, rtt) in [(0, 1, 20_000_000), (1, 2, 150_000), (1, 2, 3_000_000_000)] {
            agg.add(
                rampart_wire::Timestamp::from_nanos(t),
                rampart_wire::IpFamily::V4,
                &addr(x),
                Span::from_nanos(rtt),
            );
        }
        agg.close(|r| {
            prom.add(r);
            Ok(())
        })
        .unwrap();
        for (x, rtt) in [(3, 50_000), (1, 20_000_001)] {
            agg.add(
                rampart_wire::Timestamp::from_nanos(10_000_000_000),
                rampart_wire::IpFamily::V4,
                &addr(x),
                Span::from_nanos(rtt),
            );
        }
        agg.close(|r| {
            prom.add(r);
            Ok(())
        })
        .unwrap();
        assert_eq!(prom.len(), 2);
        let mut e = Exposition::new();
        prom.render(&mut e);
        let page = e.finish();
        for want in [
            "rampart_prefix_rtt_seconds_bucket{prefix=\"10.1.0.0/24\",le=\"0.01\"} 0\n",
            "rampart_prefix_rtt_seconds_bucket{prefix=\"10.1.0.0/24\",le=\"0.02\"} 1\n",
            "rampart_prefix_rtt_seconds_bucket{prefix=\"10.1.0.0/24\",le=\"0.05\"} 2\n",
            "rampart_prefix_rtt_seconds_count{prefix=\"10.1.0.0/24\"} 2\n",
            "rampart_prefix_rtt_seconds_bucket{prefix=\"10.2.0.0/24\",le=\"0.0002\"} 1\n",
            "rampart_prefix_rtt_seconds_bucket{prefix=\"10.2.0.0/24\",le=\"2\"} 1\n",
            "rampart_prefix_rtt_seconds_bucket{prefix=\"10.2.0.0/24\",le=\"5\"} 2\n",
            "rampart_prefix_rtt_seconds_sum{prefix=\"10.2.0.0/24\"} 3.00015\n",
            "rampart_prefix_rtt_seconds_bucket{prefix=\"other\",le=\"0.0001\"} 1\n",
            "rampart_prefix_rtt_seconds_count{prefix=\"other\"} 1\n",
        ] {
            assert!(page.contains(want), "{want} not in\n{page}");
        }
        assert!(page.starts_with("# HELP rampart_prefix_rtt_seconds "));
    }

    #[test]
    fn a_page_has_help_and_type_for_every_family() {
        let mut f = FlowCounts::default();
        f.rtt[1].observe(0.02);
        f.ended[0] = 2;
        let s = Summary { packets: 10, table: Default::default(), ..Summary::default() };
        let fw = FirewallCounts {
            verdicts: vec![("accept", 3, 180)],
            rules: vec![RuleHits {
                chain: "inet filter forward".into(),
                rule: "ssh \"in\"".into(),
                action: "accept".into(),
                packets: 1,
            }],
            conntrack: ConntrackCounts { found: 4, ..ConntrackCounts::default() },
            ..FirewallCounts::default()
        };
        let live = Some(LiveCounts { received: 10, ..LiveCounts::default() });
        let page = render(&Page { summary: &s, flows: &f, live, firewall: Some(&fw), ended: true });
        let mut typed = std::collections::BTreeSet::new();
        for l in page.lines() {
            if let Some(rest) = l.strip_prefix("# TYPE ") {
                typed.insert(rest.split(' ').next().unwrap().to_string());
            } else if !l.starts_with('#') {
                let name = l.split(['{', ' ']).next().unwrap();
                let family = ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|x| name.strip_suffix(x).filter(|f| typed.contains(*f)))
                    .unwrap_or(name);
                assert!(typed.contains(family), "{name} has no TYPE line");
            }
        }
        assert!(page.contains("rampart_packets_total 10\n"));
        assert!(page.contains("rampart_run_ended 1\n"));
        assert!(page.contains(
            "rampart_rule_hits_total{chain=\"inet filter forward\",rule=\"ssh \\\"in\\\"\",action=\"accept\"} 1\n"
        ));
        assert!(page.contains("rampart_firewall_bytes_total{verdict=\"accept\"} 180\n"));
        assert!(page.contains("rampart_conntrack_found_total 4\n"));
        assert!(page.contains("rampart_flows_ended_total{reason=\"idle\"} 2\n"));
        assert!(
            page.contains("rampart_rtt_seconds_bucket{direction=\"to_responder\",le=\"0.02\"} 1\n")
        );
        assert!(page.contains("rampart_rtt_seconds_count{direction=\"to_initiator\"} 0\n"));
    }
}
