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
//! applications, rule names), never addresses or ports.

use std::fmt::Write as _;

use rampart_dpi::Label;
use rampart_engine::{FlowRecord, Summary};
use rampart_flow::{Dir, EndReason};
use rampart_rtt::Sample;
use rampart_wire::Status;

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
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.sum += o.sum;
        self.count += o.count;
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
        self.rtt[s.dir as usize].observe(s.rtt as f64 * 1e-9);
    }

    /// Flows ended (their final records).
    pub fn flows(&self) -> u64 {
        self.ended.iter().sum()
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

/// The stateful firewall's counters.
#[derive(Clone, Debug, Default)]
pub struct FirewallCounts {
    /// Packets per verdict name (`accept`, `drop`, `reject`).
    pub verdicts: Vec<(&'static str, u64)>,
    /// Packets that reached each rule, by the rule's name as the log shows it.
    pub rule_hits: Vec<(String, u64)>,
    /// Connection tracking's counters, by the names `conntrack -S` gives them.
    pub conntrack: Vec<(&'static str, u64)>,
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
    for (part, b) in [("flow_table", s.table_bytes), ("rtt", s.rtt_bytes), ("dpi", s.dpi_bytes)] {
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
        e.counter_by(
            "rampart_verdicts_total",
            "Packets decided by the firewall, by verdict.",
            "verdict",
            f.verdicts.iter().map(|(v, n)| (*v, *n)),
        );
        e.counter_by(
            "rampart_rule_hits_total",
            "Packets that reached a rule of the rule set (as netfilter counts), by rule.",
            "rule",
            f.rule_hits.iter().map(|(r, n)| (r.as_str(), *n)),
        );
        e.counter_by(
            "rampart_conntrack_total",
            "Connection tracking's counters, named as `conntrack -S` names them.",
            "counter",
            f.conntrack.iter().map(|(c, n)| (*c, *n)),
        );
    }
    e.finish()
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
        let mut r = crate::tests::ended(6, rampart_flow::KeyKind::Ports, 4);
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
    fn a_page_has_help_and_type_for_every_family() {
        let mut f = FlowCounts::default();
        f.rtt[1].observe(0.02);
        f.ended[0] = 2;
        let s = Summary { packets: 10, table: Default::default(), ..Summary::default() };
        let fw = FirewallCounts {
            verdicts: vec![("accept", 3)],
            rule_hits: vec![("ssh \"in\"".into(), 1)],
            conntrack: vec![("found", 4)],
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
        assert!(page.contains("rampart_rule_hits_total{rule=\"ssh \\\"in\\\"\"} 1\n"));
        assert!(page.contains("rampart_flows_ended_total{reason=\"idle\"} 2\n"));
        assert!(
            page.contains("rampart_rtt_seconds_bucket{direction=\"to_responder\",le=\"0.02\"} 1\n")
        );
        assert!(page.contains("rampart_rtt_seconds_count{direction=\"to_initiator\"} 0\n"));
    }
}
