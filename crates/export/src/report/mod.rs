//! `rampart report`: one self-contained HTML page about a capture's flows and RTTs.
//!
//! The page is built in two steps. A [`Report`] collects flow records ([`FlowRow`]) and RTT
//! samples ([`SamplePoint`]), from a pass of the engine over a capture or from rampart's own
//! JSON lines ([`read`]); [`Report::render`] then aggregates them (totals, top talkers,
//! applications, TCP flags, end reasons, verdicts and rule hits, RTT percentiles per flow and
//! per host) and writes the page ([`html`]).
//!
//! Design choices, and what they cost:
//!
//! * **Hand-written SVG, no chart library and no JavaScript.** Every chart is a few dozen SVG
//!   elements written here ([`html`]), with text in the browser's `sans-serif`: the page
//!   fetches nothing (a Content-Security-Policy of `default-src 'none'` says so to the
//!   browser), opens from `file://` offline and prints. The cost is no zooming or hovering;
//!   the tables beside the charts carry the exact numbers.
//! * **Bounded size.** The RTT-over-time scatter keeps at most [`Options::max_points`]
//!   points: above that, capture time is cut into equal buckets and each bucket keeps its
//!   smallest and its largest sample ([`downsample`]), so spikes and the floor survive and
//!   the page stays small whatever the capture's size. Tables show the top
//!   [`Options::top`] rows.
//! * **Everything from the data is escaped** ([`html::escape`]): server names, HTTP hosts,
//!   application labels, rule names and addresses are written by whoever sent the packets or
//!   the records.
//! * **One row per flow.** Records that share a `uid` (the interim records an active timeout
//!   writes for a live flow, then its final record) are joined into one row as they arrive
//!   ([`Report::add_flow`]): their packets and bytes add up, their TCP flags join, and the
//!   final record's application, RTT, connection state and end reason stand, so no flow is
//!   counted twice.
//! * **Memory.** Every flow record is kept (a few hundred bytes each) and every sample in 16
//!   bytes, as exact percentiles need them all.

pub mod html;
pub mod read;

use std::collections::HashMap;

/// RTT statistics of one direction of a flow record (seconds).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RttStat {
    /// Samples.
    pub count: u64,
    /// Smallest (s).
    pub min: f64,
    /// Median (s).
    pub median: f64,
    /// Largest (s).
    pub max: f64,
}

/// The fields of a flow record the report uses (the names of [`crate::FlowWriter`]'s JSON).
#[derive(Clone, Debug, PartialEq)]
pub struct FlowRow {
    /// `tcp`, `udp`, `icmp`, `icmp6` or a protocol number.
    pub proto: String,
    /// The initiator's address.
    pub src: String,
    /// The initiator's port (0 where none).
    pub sport: u16,
    /// The responder's address.
    pub dst: String,
    /// The responder's port.
    pub dport: u16,
    /// First packet, epoch seconds.
    pub first: f64,
    /// Last packet, epoch seconds.
    pub last: f64,
    /// Packets initiator to responder, then back.
    pub packets: [u64; 2],
    /// Bytes on the wire initiator to responder, then back.
    pub bytes: [u64; 2],
    /// TCP flags seen each way, as letters `CEUAPRSF` (empty for other protocols).
    pub flags: [String; 2],
    /// Why the record was written (`idle`, `fin`, `rst`, `evicted`, `end`).
    pub end_reason: String,
    /// RTT towards the initiator, then towards the responder, when there were samples.
    pub rtt: [Option<RttStat>; 2],
    /// The application label.
    pub app: Option<String>,
    /// The TLS/QUIC server name, else the HTTP host.
    pub server_name: Option<String>,
    /// The stateful firewall's connection state.
    pub ct_state: Option<String>,
    /// The firewall's verdict.
    pub verdict: Option<String>,
    /// The rule that gave it.
    pub rule: Option<String>,
    /// The flow's `uid`, when the record has one: every record of one flow carries the same.
    pub uid: Option<String>,
}

impl FlowRow {
    /// Whether this is an interim record of a flow that went on (`end_reason` `active`).
    pub fn is_interim(&self) -> bool {
        self.end_reason == "active"
    }

    /// Joins another record of the same flow into this row: packets and bytes add up, the
    /// times span both, TCP flags join; the other's end reason, application, RTT, firewall
    /// fields and server name take over unless it is an interim record and this row is not.
    pub fn merge(&mut self, o: FlowRow) {
        for i in 0..2 {
            self.packets[i] = self.packets[i].saturating_add(o.packets[i]);
            self.bytes[i] = self.bytes[i].saturating_add(o.bytes[i]);
            let (a, b) = (&self.flags[i], &o.flags[i]);
            let joined: String =
                "CEUAPRSF".chars().filter(|c| a.contains(*c) || b.contains(*c)).collect();
            self.flags[i] = joined;
        }
        self.first = self.first.min(o.first);
        self.last = self.last.max(o.last);
        if !o.is_interim() || self.is_interim() {
            self.end_reason = o.end_reason;
            self.rtt = [o.rtt[0].or(self.rtt[0]), o.rtt[1].or(self.rtt[1])];
            let take = |mine: &mut Option<String>, theirs: Option<String>| {
                if theirs.is_some() {
                    *mine = theirs;
                }
            };
            take(&mut self.app, o.app);
            take(&mut self.server_name, o.server_name);
            take(&mut self.ct_state, o.ct_state);
            take(&mut self.verdict, o.verdict);
            take(&mut self.rule, o.rule);
        }
    }

    /// Packets both ways.
    pub fn total_packets(&self) -> u64 {
        self.packets[0].saturating_add(self.packets[1])
    }

    /// Bytes both ways.
    pub fn total_bytes(&self) -> u64 {
        self.bytes[0].saturating_add(self.bytes[1])
    }
}

/// One RTT sample: the time from the capture point to `src` and back.
#[derive(Clone, Debug, PartialEq)]
pub struct SamplePoint {
    /// When it was made, epoch seconds.
    pub time: f64,
    /// The round-trip time (s).
    pub rtt: f64,
    /// The host the RTT is measured to (sender of the packet carrying the echo or ACK).
    pub src: String,
    /// Its port.
    pub sport: u16,
    /// The other end.
    pub dst: String,
    /// Its port.
    pub dport: u16,
}

/// What the run over the input saw, for the page's header.
#[derive(Clone, Debug, Default)]
pub struct RunInfo {
    /// The input's name (capture or record file).
    pub source: String,
    /// Frames read, when a capture was read (else the records' packets are added up).
    pub packets: Option<u64>,
    /// Bytes on the wire read, when a capture was read.
    pub wire_bytes: Option<u64>,
    /// The run was stopped (Ctrl-C) before the end of the input.
    pub interrupted: bool,
}

/// How the page is drawn.
#[derive(Clone, Debug)]
pub struct Options {
    /// The page's title.
    pub title: String,
    /// Rows in each table and bars in each top-N chart.
    pub top: usize,
    /// Most points drawn in the RTT-over-time chart (see [`downsample`]).
    pub max_points: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self { title: "rampart report".into(), top: 10, max_points: 20_000 }
    }
}

/// A sample as kept: time, RTT and the index of its `src:sport>dst:dport`.
#[derive(Clone, Copy, Debug)]
struct Kept {
    time: f64,
    rtt: f32,
    key: u32,
}

/// An RTT sample's direction: the initiator's end of its flow, or the responder's.
type Dir = (String, u16, String, u16);

/// Flow records and RTT samples collected for one page.
#[derive(Default)]
pub struct Report {
    flows: Vec<FlowRow>,
    /// The row of each `uid` seen, to join the records of one flow.
    by_uid: HashMap<Box<str>, usize>,
    samples: Vec<Kept>,
    keys: Vec<Dir>,
    key_index: HashMap<Dir, u32>,
}

impl Report {
    /// An empty report.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a flow record; a record whose `uid` an earlier one had (another interval of the
    /// same flow, `--active-timeout`) is joined into that row ([`FlowRow::merge`]).
    pub fn add_flow(&mut self, f: FlowRow) {
        if let Some(uid) = f.uid.as_deref() {
            if let Some(&i) = self.by_uid.get(uid) {
                self.flows[i].merge(f);
                return;
            }
            self.by_uid.insert(uid.into(), self.flows.len());
        }
        self.flows.push(f);
    }

    /// Adds an RTT sample.
    pub fn add_sample(&mut self, s: SamplePoint) {
        let key = (s.src, s.sport, s.dst, s.dport);
        let next = self.keys.len() as u32;
        let idx = *self.key_index.entry(key).or_insert_with_key(|k| {
            self.keys.push(k.clone());
            next
        });
        self.samples.push(Kept { time: s.time, rtt: s.rtt as f32, key: idx });
    }

    /// Flows collected (records of one flow count once).
    pub fn flows(&self) -> usize {
        self.flows.len()
    }

    /// RTT samples collected.
    pub fn samples(&self) -> usize {
        self.samples.len()
    }

    /// The page.
    pub fn render(&self, run: &RunInfo, opts: &Options) -> String {
        html::page(&Model::build(self, opts), run, opts)
    }
}

/// Nearest-rank percentile `p` (0..=100) of sorted values; 0 for none.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The `n` entries with the largest values, largest first (ties by name, for a stable page).
pub fn top_n<K: Ord + Clone>(items: impl IntoIterator<Item = (K, f64)>, n: usize) -> Vec<(K, f64)> {
    let mut v: Vec<(K, f64)> = items.into_iter().collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v.truncate(n);
    v
}

/// At most about `max` of `points` (time, value), in time order: all of them when there are
/// few enough; otherwise the time range is cut into `max / 2` equal buckets and each keeps
/// its smallest and largest value (once if they are the same point), so the extremes the eye
/// looks for survive.
pub fn downsample(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    let mut sorted = points.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    if sorted.len() <= max.max(2) {
        return sorted;
    }
    let buckets = (max / 2).max(1);
    let (t0, t1) = (sorted[0].0, sorted[sorted.len() - 1].0);
    let width = (t1 - t0).max(f64::MIN_POSITIVE);
    let mut out = Vec::with_capacity(buckets * 2);
    let mut i = 0;
    while i < sorted.len() {
        let b = (((sorted[i].0 - t0) / width * buckets as f64) as usize).min(buckets - 1);
        let (mut lo, mut hi) = (i, i);
        let mut j = i;
        while j < sorted.len()
            && (((sorted[j].0 - t0) / width * buckets as f64) as usize).min(buckets - 1) == b
        {
            if sorted[j].1 < sorted[lo].1 {
                lo = j;
            }
            if sorted[j].1 > sorted[hi].1 {
                hi = j;
            }
            j += 1;
        }
        let (a, c) = if lo <= hi { (lo, hi) } else { (hi, lo) };
        out.push(sorted[a]);
        if c != a {
            out.push(sorted[c]);
        }
        i = j;
    }
    out
}

/// RTT statistics of a set of samples (seconds).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spread {
    /// Samples.
    pub count: u64,
    /// Smallest.
    pub min: f64,
    /// Median.
    pub median: f64,
    /// 95th percentile (`None` when only per-flow summaries were available).
    pub p95: Option<f64>,
    /// Largest.
    pub max: f64,
}

impl Spread {
    fn of(mut v: Vec<f64>) -> Self {
        v.sort_by(f64::total_cmp);
        Self {
            count: v.len() as u64,
            min: v.first().copied().unwrap_or(0.0),
            median: percentile(&v, 50.0),
            p95: Some(percentile(&v, 95.0)),
            max: v.last().copied().unwrap_or(0.0),
        }
    }

    /// Combines per-flow summaries (no samples): min of mins, max of maxes, and the median
    /// of the medians weighted by their counts.
    fn of_summaries(s: &[RttStat]) -> Self {
        let mut by_median: Vec<&RttStat> = s.iter().collect();
        by_median.sort_by(|a, b| a.median.total_cmp(&b.median));
        let count: u64 = s.iter().map(|r| r.count).sum();
        let mut seen = 0;
        let mut median = 0.0;
        for r in by_median {
            seen += r.count;
            if seen * 2 >= count {
                median = r.median;
                break;
            }
        }
        Self {
            count,
            min: s.iter().map(|r| r.min).fold(f64::INFINITY, f64::min),
            median,
            p95: None,
            max: s.iter().map(|r| r.max).fold(0.0, f64::max),
        }
    }
}

/// Traffic of one host.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostTraffic {
    /// Bytes it sent.
    pub bytes_out: u64,
    /// Bytes it received.
    pub bytes_in: u64,
    /// Packets it sent.
    pub packets_out: u64,
    /// Packets it received.
    pub packets_in: u64,
    /// Flows it took part in.
    pub flows: u64,
}

/// What the page shows, aggregated from a [`Report`].
#[derive(Debug, Default)]
pub struct Model {
    /// Flow records.
    pub flows: u64,
    /// Packets in the records.
    pub packets: u64,
    /// Bytes in the records.
    pub bytes: u64,
    /// First and last packet (epoch s), if any flow.
    pub span: Option<(f64, f64)>,
    /// RTT samples.
    pub samples: u64,
    /// RTT over time (seconds since the span's start, RTT s), towards responders then
    /// towards initiators, down-sampled.
    pub series: [Vec<(f64, f64)>; 2],
    /// Samples drawn before down-sampling, per series.
    pub series_total: [usize; 2],
    /// Every RTT, sorted (samples, else each record's median once per direction).
    pub rtts: Vec<f64>,
    /// Whether `rtts` are samples (true) or per-flow medians.
    pub rtts_are_samples: bool,
    /// Flows with the most samples: label (`host:port` measured to, and the other end) and
    /// spread.
    pub rtt_flows: Vec<(String, Spread)>,
    /// Hosts with the most samples (the host measured to).
    pub rtt_hosts: Vec<(String, Spread)>,
    /// Hosts by bytes (both ways).
    pub hosts_by_bytes: Vec<(String, HostTraffic)>,
    /// Hosts by packets (both ways).
    pub hosts_by_packets: Vec<(String, HostTraffic)>,
    /// Flows by bytes (indexes into the report's flows).
    pub flows_by_bytes: Vec<FlowRow>,
    /// Flows by packets.
    pub flows_by_packets: Vec<FlowRow>,
    /// Applications: label, flows, bytes; by bytes, largest first.
    pub apps: Vec<(String, u64, u64)>,
    /// Whether any record had an application label.
    pub has_apps: bool,
    /// TCP flows with each flag seen (either way), in the order `SYN FIN RST PSH ACK URG ECE
    /// CWR`, and TCP flows in all.
    pub tcp_flags: ([u64; 8], u64),
    /// End reasons and their flows, most first.
    pub end_reasons: Vec<(String, u64)>,
    /// Verdicts: name, flows, bytes (only when records carry verdicts).
    pub verdicts: Vec<(String, u64, u64)>,
    /// Rules: name, verdict, flows, bytes; most flows first.
    pub rules: Vec<(String, String, u64, u64)>,
    /// Connection states and their flows.
    pub ct_states: Vec<(String, u64)>,
}

/// Flag names in [`Model::tcp_flags`] order, with their letters in records.
pub const FLAGS: [(&str, char); 8] = [
    ("SYN", 'S'),
    ("FIN", 'F'),
    ("RST", 'R'),
    ("PSH", 'P'),
    ("ACK", 'A'),
    ("URG", 'U'),
    ("ECE", 'E'),
    ("CWR", 'C'),
];

/// `host:port`, IPv6 in brackets.
pub fn endpoint(host: &str, port: u16) -> String {
    if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") }
}

impl Model {
    /// Aggregates `r` for the page.
    pub fn build(r: &Report, opts: &Options) -> Self {
        let top = opts.top.max(1);
        let mut m = Self { flows: r.flows.len() as u64, ..Self::default() };
        let mut hosts: HashMap<&str, HostTraffic> = HashMap::new();
        let mut apps: HashMap<&str, (u64, u64)> = HashMap::new();
        let mut ends: HashMap<&str, u64> = HashMap::new();
        let mut verdicts: HashMap<&str, (u64, u64)> = HashMap::new();
        let mut rules: HashMap<(&str, &str), (u64, u64)> = HashMap::new();
        let mut cts: HashMap<&str, u64> = HashMap::new();
        let mut initiators: HashMap<(&str, u16, &str, u16), ()> = HashMap::new();
        let (mut t0, mut t1) = (f64::INFINITY, f64::NEG_INFINITY);
        for f in &r.flows {
            m.packets = m.packets.saturating_add(f.total_packets());
            m.bytes = m.bytes.saturating_add(f.total_bytes());
            t0 = t0.min(f.first);
            t1 = t1.max(f.last);
            for (host, i) in [(&f.src, 0), (&f.dst, 1)] {
                let h = hosts.entry(host).or_default();
                h.flows += 1;
                h.bytes_out = h.bytes_out.saturating_add(f.bytes[i]);
                h.bytes_in = h.bytes_in.saturating_add(f.bytes[1 - i]);
                h.packets_out = h.packets_out.saturating_add(f.packets[i]);
                h.packets_in = h.packets_in.saturating_add(f.packets[1 - i]);
            }
            if let Some(app) = &f.app {
                m.has_apps = true;
                let a = apps.entry(app).or_default();
                a.0 += 1;
                a.1 = a.1.saturating_add(f.total_bytes());
            }
            if f.proto == "tcp" {
                m.tcp_flags.1 += 1;
                for (i, (_, letter)) in FLAGS.iter().enumerate() {
                    if f.flags.iter().any(|s| s.contains(*letter)) {
                        m.tcp_flags.0[i] += 1;
                    }
                }
                initiators.insert((&f.src, f.sport, &f.dst, f.dport), ());
            }
            *ends.entry(&f.end_reason).or_default() += 1;
            if let Some(v) = &f.verdict {
                let e = verdicts.entry(v).or_default();
                e.0 += 1;
                e.1 = e.1.saturating_add(f.total_bytes());
                let rule = f.rule.as_deref().unwrap_or("(policy)");
                let e = rules.entry((rule, v)).or_default();
                e.0 += 1;
                e.1 = e.1.saturating_add(f.total_bytes());
            }
            if let Some(c) = &f.ct_state {
                *cts.entry(c).or_default() += 1;
            }
        }
        for s in &r.samples {
            t0 = t0.min(s.time);
            t1 = t1.max(s.time);
        }
        if t0.is_finite() {
            m.span = Some((t0, t1.max(t0)));
        }
        m.samples = r.samples.len() as u64;

        // RTT: from the samples when there are any, else from the records' summaries.
        if !r.samples.is_empty() {
            m.rtts_are_samples = true;
            // A sample measures the path to its `src`: towards the initiator when `src` is
            // the flow's initiator; flows not among the records go by port (the lower port
            // is the server's).
            let to_initiator: Vec<bool> = r
                .keys
                .iter()
                .map(|(s, sp, d, dp)| {
                    if initiators.contains_key(&(s.as_str(), *sp, d.as_str(), *dp)) {
                        true
                    } else if initiators.contains_key(&(d.as_str(), *dp, s.as_str(), *sp)) {
                        false
                    } else {
                        sp > dp
                    }
                })
                .collect();
            let mut series: [Vec<(f64, f64)>; 2] = [Vec::new(), Vec::new()];
            let mut per_key: Vec<Vec<f64>> = vec![Vec::new(); r.keys.len()];
            for s in &r.samples {
                let dir = usize::from(to_initiator[s.key as usize]);
                series[dir].push((s.time - t0, f64::from(s.rtt)));
                per_key[s.key as usize].push(f64::from(s.rtt));
                m.rtts.push(f64::from(s.rtt));
            }
            let n = series.iter().filter(|s| !s.is_empty()).count().max(1);
            for (i, s) in series.iter().enumerate() {
                m.series_total[i] = s.len();
                m.series[i] = downsample(s, opts.max_points / n);
            }
            let mut per_host: HashMap<&str, Vec<f64>> = HashMap::new();
            for (k, v) in r.keys.iter().zip(&per_key) {
                per_host.entry(&k.0).or_default().extend_from_slice(v);
            }
            let flows = top_n((0..r.keys.len()).map(|i| (i, per_key[i].len() as f64)), top);
            m.rtt_flows = flows
                .into_iter()
                .map(|(i, _)| {
                    let (s, sp, d, dp) = &r.keys[i];
                    let label = format!("{} ↔ {}", endpoint(s, *sp), endpoint(d, *dp));
                    (label, Spread::of(per_key[i].clone()))
                })
                .collect();
            let hosts_n = top_n(per_host.iter().map(|(h, v)| (*h, v.len() as f64)), top);
            m.rtt_hosts = hosts_n
                .into_iter()
                .map(|(h, _)| (h.to_string(), Spread::of(per_host[h].clone())))
                .collect();
        } else {
            let mut per_host: HashMap<&str, Vec<RttStat>> = HashMap::new();
            let mut per_flow: Vec<(String, Vec<RttStat>)> = Vec::new();
            for f in &r.flows {
                let mut both = Vec::new();
                for (stat, host) in f.rtt.iter().zip([&f.src, &f.dst]) {
                    if let Some(s) = stat {
                        per_host.entry(host).or_default().push(*s);
                        m.rtts.push(s.median);
                        both.push(*s);
                    }
                }
                if !both.is_empty() {
                    let label =
                        format!("{} ↔ {}", endpoint(&f.src, f.sport), endpoint(&f.dst, f.dport));
                    per_flow.push((label, both));
                }
            }
            let order = top_n(
                per_flow
                    .iter()
                    .enumerate()
                    .map(|(i, (_, v))| (i, v.iter().map(|s| s.count).sum::<u64>() as f64)),
                top,
            );
            m.rtt_flows = order
                .into_iter()
                .map(|(i, _)| (per_flow[i].0.clone(), Spread::of_summaries(&per_flow[i].1)))
                .collect();
            let hosts_n = top_n(
                per_host.iter().map(|(h, v)| (*h, v.iter().map(|s| s.count).sum::<u64>() as f64)),
                top,
            );
            m.rtt_hosts = hosts_n
                .into_iter()
                .map(|(h, _)| (h.to_string(), Spread::of_summaries(&per_host[h])))
                .collect();
        }
        m.rtts.sort_by(f64::total_cmp);

        let host_rows = |by: fn(&HostTraffic) -> u64| -> Vec<(String, HostTraffic)> {
            top_n(hosts.iter().map(|(h, t)| (*h, by(t) as f64)), top)
                .into_iter()
                .map(|(h, _)| (h.to_string(), hosts[h].clone()))
                .collect()
        };
        m.hosts_by_bytes = host_rows(|t| t.bytes_out.saturating_add(t.bytes_in));
        m.hosts_by_packets = host_rows(|t| t.packets_out.saturating_add(t.packets_in));
        let flow_rows = |by: fn(&FlowRow) -> u64| -> Vec<FlowRow> {
            top_n(r.flows.iter().enumerate().map(|(i, f)| (i, by(f) as f64)), top)
                .into_iter()
                .map(|(i, _)| r.flows[i].clone())
                .collect()
        };
        m.flows_by_bytes = flow_rows(FlowRow::total_bytes);
        m.flows_by_packets = flow_rows(FlowRow::total_packets);
        m.apps = top_n(apps.iter().map(|(a, (_, b))| (*a, *b as f64)), top)
            .into_iter()
            .map(|(a, _)| (a.to_string(), apps[a].0, apps[a].1))
            .collect();
        m.end_reasons = top_n(ends.iter().map(|(e, n)| (e.to_string(), *n as f64)), usize::MAX)
            .into_iter()
            .map(|(e, n)| (e, n as u64))
            .collect();
        m.verdicts = top_n(verdicts.iter().map(|(v, (n, _))| (*v, *n as f64)), usize::MAX)
            .into_iter()
            .map(|(v, _)| (v.to_string(), verdicts[v].0, verdicts[v].1))
            .collect();
        m.rules = top_n(rules.iter().map(|(k, (n, _))| (*k, *n as f64)), top)
            .into_iter()
            .map(|(k, _)| (k.0.to_string(), k.1.to_string(), rules[&k].0, rules[&k].1))
            .collect();
        m.ct_states = top_n(cts.iter().map(|(c, n)| (c.to_string(), *n as f64)), usize::MAX)
            .into_iter()
            .map(|(c, n)| (c, n as u64))
            .collect();
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(src: &str, dst: &str, bytes: u64, packets: u64) -> FlowRow {
        FlowRow {
            proto: "tcp".into(),
            src: src.into(),
            sport: 40000,
            dst: dst.into(),
            dport: 443,
            first: 100.0,
            last: 101.0,
            packets: [packets, 1],
            bytes: [bytes, 60],
            flags: ["SA".into(), "SAF".into()],
            end_reason: "fin".into(),
            rtt: [None, None],
            app: Some("TLS".into()),
            server_name: None,
            ct_state: None,
            verdict: None,
            rule: None,
            uid: None,
        }
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 95.0), 95.0);
        assert_eq!(percentile(&v, 100.0), 100.0);
        assert_eq!(percentile(&v, 0.0), 1.0);
        assert_eq!(percentile(&[7.0], 95.0), 7.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
        let s = Spread::of(vec![3.0, 1.0, 2.0]);
        assert_eq!((s.count, s.min, s.median, s.p95, s.max), (3, 1.0, 2.0, Some(3.0), 3.0));
    }

    #[test]
    fn top_n_is_largest_first_and_stable() {
        let t = top_n([("b", 2.0), ("a", 2.0), ("c", 9.0), ("d", 1.0)], 3);
        assert_eq!(t, vec![("c", 9.0), ("a", 2.0), ("b", 2.0)]);
        assert!(top_n(Vec::<(u8, f64)>::new(), 3).is_empty());
    }

    #[test]
    fn downsampling_keeps_the_extremes_and_bounds_the_size() {
        let mut pts: Vec<(f64, f64)> =
            (0..100_000).map(|i| (f64::from(i) * 0.001, 0.010 + f64::from(i % 7) * 1e-4)).collect();
        pts[54_321].1 = 0.900; // a spike
        pts[77_777].1 = 0.0001; // the floor
        let d = downsample(&pts, 2_000);
        assert!(d.len() <= 2_000, "{}", d.len());
        assert!(d.len() > 1_000);
        assert!(d.contains(&pts[54_321]) && d.contains(&pts[77_777]));
        assert!(d.windows(2).all(|w| w[0].0 <= w[1].0));
        let few = [(2.0, 1.0), (1.0, 3.0)];
        assert_eq!(downsample(&few, 10), vec![(1.0, 3.0), (2.0, 1.0)]);
        assert_eq!(downsample(&[(5.0, 1.0); 10], 2).len(), 1);
    }

    #[test]
    fn aggregates_talkers_apps_flags_and_rtt() {
        let mut r = Report::new();
        r.add_flow(flow("10.0.0.1", "10.0.0.9", 5000, 10));
        r.add_flow(flow("10.0.0.2", "10.0.0.9", 100, 50));
        let mut f = flow("10.0.0.3", "10.0.0.8", 10, 1);
        f.app = Some("DNS".into());
        f.proto = "udp".into();
        f.end_reason = "idle".into();
        f.verdict = Some("drop".into());
        f.rule = Some("<b>deny</b>".into());
        r.add_flow(f);
        for (i, rtt) in [0.010, 0.020, 0.030, 0.500].into_iter().enumerate() {
            r.add_sample(SamplePoint {
                time: 100.0 + i as f64,
                rtt,
                src: "10.0.0.9".into(),
                sport: 443,
                dst: "10.0.0.1".into(),
                dport: 40000,
            });
        }
        r.add_sample(SamplePoint {
            time: 100.5,
            rtt: 0.001,
            src: "10.0.0.1".into(),
            sport: 40000,
            dst: "10.0.0.9".into(),
            dport: 443,
        });
        let m = Model::build(&r, &Options { top: 2, ..Options::default() });
        assert_eq!((m.flows, m.packets, m.bytes), (3, 64, 5290));
        assert_eq!(m.hosts_by_bytes[0].0, "10.0.0.9");
        assert_eq!(m.hosts_by_bytes[0].1.bytes_in, 5100);
        assert_eq!(m.hosts_by_bytes.len(), 2);
        assert_eq!(m.hosts_by_packets[0].0, "10.0.0.9");
        assert_eq!(m.flows_by_bytes[0].src, "10.0.0.1");
        assert_eq!(m.flows_by_packets[0].src, "10.0.0.2");
        assert_eq!(m.apps[0], ("TLS".to_string(), 2, 5220));
        assert_eq!(m.tcp_flags, ([2, 2, 0, 0, 2, 0, 0, 0], 2));
        assert_eq!(m.end_reasons, vec![("fin".to_string(), 2), ("idle".to_string(), 1)]);
        assert_eq!(m.verdicts, vec![("drop".to_string(), 1, 70)]);
        assert_eq!(m.rules[0].0, "<b>deny</b>");
        // Four samples towards the responder, one towards the initiator.
        assert_eq!(m.series_total, [4, 1]);
        assert_eq!(m.rtt_hosts[0].0, "10.0.0.9");
        let s = m.rtt_hosts[0].1;
        // Samples are kept as f32 seconds: well under a microsecond off.
        let near = |a: f64, b: f64| (a - b).abs() < 1e-7;
        assert_eq!(s.count, 4);
        assert!(near(s.min, 0.010) && near(s.median, 0.020), "{s:?}");
        assert!(near(s.p95.unwrap(), 0.5) && near(s.max, 0.5), "{s:?}");
        assert_eq!(m.span, Some((100.0, 103.0)));
        let page = r.render(&RunInfo::default(), &Options::default());
        assert!(page.contains("&lt;b&gt;deny&lt;/b&gt;") && !page.contains("<b>deny"));
    }

    /// The records of one flow (interim ones, then the final one) make one row: counters
    /// add up, flags join, the final record's fields stand; records without a uid stay rows
    /// of their own.
    #[test]
    fn records_sharing_a_uid_are_one_flow() {
        let mut r = Report::new();
        let mut a = flow("10.0.0.1", "10.0.0.9", 1000, 10);
        a.uid = Some("CAAAAAAAAAA1".into());
        a.end_reason = "active".into();
        a.flags = ["S".into(), "SA".into()];
        a.app = Some("TLS".into());
        a.rtt[1] = Some(RttStat { count: 1, min: 0.01, median: 0.01, max: 0.01 });
        let mut b = a.clone();
        b.first = 101.5;
        b.last = 102.0;
        b.flags = ["AF".into(), "A".into()];
        b.end_reason = "fin".into();
        b.app = Some("TLS.YouTube".into());
        b.rtt[1] = Some(RttStat { count: 3, min: 0.01, median: 0.02, max: 0.05 });
        r.add_flow(a.clone());
        r.add_flow(b);
        r.add_flow(flow("10.0.0.2", "10.0.0.9", 100, 5));
        r.add_flow(flow("10.0.0.2", "10.0.0.9", 100, 5));
        assert_eq!(r.flows(), 3);
        let m = Model::build(&r, &Options::default());
        assert_eq!(m.flows, 3);
        assert_eq!(m.packets, 10 + 10 + 1 + 1 + 2 * (5 + 1));
        let row = &r.flows[0];
        assert_eq!((row.packets, row.bytes), ([20, 2], [2000, 120]));
        assert_eq!((row.first, row.last), (100.0, 102.0));
        assert_eq!(row.flags, ["ASF".to_string(), "AS".to_string()]);
        assert_eq!(row.end_reason, "fin");
        assert_eq!(row.app.as_deref(), Some("TLS.YouTube"));
        assert_eq!(row.rtt[1].unwrap().count, 3);
        assert_eq!(m.end_reasons, vec![("fin".to_string(), 3)]);
        // A final record read before an interim one of its flow keeps its word.
        let mut r = Report::new();
        let mut fin = a.clone();
        fin.end_reason = "fin".into();
        r.add_flow(fin);
        r.add_flow(a);
        assert_eq!((r.flows(), r.flows[0].end_reason.as_str()), (1, "fin"));
    }

    #[test]
    fn without_samples_the_records_summaries_are_used() {
        let mut r = Report::new();
        let mut f = flow("10.0.0.1", "10.0.0.9", 1, 1);
        f.rtt[1] = Some(RttStat { count: 3, min: 0.01, median: 0.02, max: 0.05 });
        r.add_flow(f.clone());
        f.rtt[1] = Some(RttStat { count: 1, min: 0.001, median: 0.001, max: 0.001 });
        r.add_flow(f);
        let m = Model::build(&r, &Options::default());
        assert!(!m.rtts_are_samples);
        let (h, s) = &m.rtt_hosts[0];
        assert_eq!(h, "10.0.0.9");
        assert_eq!((s.count, s.min, s.median, s.p95, s.max), (4, 0.001, 0.02, None, 0.05));
    }
}
