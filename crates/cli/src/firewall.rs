//! `rampart firewall`: the stateful data plane over the captures of a router's ports, a
//! verdict per packet as Linux's conntrack and nftables would give it, with reloads and a
//! what-if comparison of two rule sets.

use std::io::{self, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use rampart_capture::{Frame, LinkType, PcapWriter};
use rampart_classify::load::{LoadError, load_hooked};
use rampart_engine::driver::{Input, Limits};
use rampart_engine::replay::{Difference, FirewallSink, Reload, replay};
use rampart_engine::stateful::{Decided, Routes, RuleSet, Stateful, StatefulConfig, Why};
use rampart_engine::{FlowRecord, FlowsConfig, Pipeline, Slot, Summary, Verdict};
use rampart_export::ipfix::Exporter;
use rampart_export::prometheus::{ConntrackCounts, FirewallCounts, MAX_RULES, RuleHits};
use rampart_export::{FlowFormat, FlowWriter, num, text};
use rampart_flow::{FlowKey, Side, TableConfig};
use rampart_wire::{IpFamily, PacketMeta, Timestamp};

use crate::Fail;
use crate::classify::RuleSource;
use crate::input;
use crate::ipfix::{self, IpfixArgs};
use crate::metrics::{Meter, Metrics, MetricsArgs};

/// Arguments of `rampart firewall`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The rule set (nftables, iptables-save or rampart syntax; gzip or zstd compressed
    /// files are read too).
    #[arg(long, value_name = "FILE")]
    rules: PathBuf,
    #[command(flatten)]
    source: RuleSource,
    /// A capture taken on one of the router's ports, named by the port (the name `iifname`
    /// and `oifname` rules match); give one per port. Captures are merged by time.
    #[arg(short = 'r', long = "read", value_name = "IFACE=FILE", required = true)]
    read: Vec<String>,
    /// The MAC address of a port: frames it sent (the router's own output, also in a capture
    /// taken on it) are skipped.
    #[arg(long = "port-mac", value_name = "IFACE=MAC")]
    port_mac: Vec<String>,
    /// Write the packets that leave through a port (forwarded ones, and the replies rejects
    /// send back) to a pcap file (`-`: standard output; one output at most may take it).
    #[arg(short = 'w', long = "write", value_name = "IFACE=FILE")]
    write: Vec<String>,
    /// A route: packets for PREFIX leave through IFACE (longest prefix wins). Without routes,
    /// with two ports, a packet leaves through the other port.
    #[arg(long, value_name = "PREFIX=IFACE")]
    route: Vec<String>,
    /// An address of the router itself: packets to it take the input hook, not forward.
    #[arg(long, value_name = "ADDR")]
    local: Vec<IpAddr>,
    /// At capture time TIME (epoch seconds), load FILE in place of the rule set, keeping
    /// connection state, as `nft -f` does; a file that does not load changes nothing.
    #[arg(long, value_name = "TIME=FILE")]
    reload: Vec<String>,
    /// One JSON object per packet: time, ports, addresses, ct state, verdict, rule, reason
    /// (`-`: standard output, with the records sent to a file by `-o`).
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// A second rule set judged beside the first on the same traffic, with its own
    /// connection state: every flow whose packets the two treat differently is written to
    /// standard output (exit 1 when there is any).
    #[arg(long, value_name = "FILE")]
    compare: Option<PathBuf>,
    /// Write the flow records (as `rampart flows` does, with ct_state, tcp_state, assured,
    /// verdict and rule) to this file (`-`: standard output); without it they go to standard
    /// output, unless `--compare` uses it.
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Most connections tracked at once (`nf_conntrack_max`); a new one beyond it evicts an
    /// unassured connection, else its packet is dropped (Linux's early drop).
    #[arg(long, value_name = "N", default_value_t = 262_144,
          value_parser = clap::value_parser!(u64).range(16..=1 << 32))]
    ct_max: u64,
    /// Also write live flows' records every SECONDS of capture time (interim records,
    /// `end_reason` `active`), as `rampart flows --active-timeout` does.
    #[arg(long, value_name = "SECONDS", value_parser = crate::flows::parse_timeout)]
    active_timeout: Option<f64>,
    /// A conntrack setting by its sysctl name: `tcp_loose`, `tcp_be_liberal`,
    /// `tcp_ignore_invalid_rst`, `checksum` (0 or 1), `tcp_max_retrans`, or a timeout in
    /// seconds (`tcp_timeout_established`, `udp_timeout_stream`, `icmp_timeout`, ...).
    #[arg(long = "ct", value_name = "NAME=VALUE")]
    ct: Vec<String>,
    /// Application identification (for `app` rules and the records' `app` fields):
    /// `rampart` or `off`.
    #[arg(long, value_name = "WHICH", value_parser = ["rampart", "off"], default_value = "rampart")]
    dpi: String,
    /// No summary on standard error.
    #[arg(short, long)]
    quiet: bool,
    #[command(flatten)]
    ipfix: IpfixArgs,
    #[command(flatten)]
    metrics: MetricsArgs,
}

pub(crate) fn run(args: Args) -> Result<ExitCode, Fail> {
    go(&args)
}

/// `NAME=VALUE`, split at the first `=`.
fn pair<'a>(s: &'a str, what: &str, flag: &str) -> Result<(&'a str, &'a str), Fail> {
    match s.split_once('=') {
        Some((a, b)) if !a.is_empty() && !b.is_empty() => Ok((a, b)),
        _ => Err(Fail(format!("{flag} {s:?}: expected {what}"), 2)),
    }
}

fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let parts: Vec<&str> = s.split([':', '-']).collect();
    if parts.len() != 6 {
        return None;
    }
    let mut m = [0u8; 6];
    for (b, p) in m.iter_mut().zip(parts) {
        if p.is_empty() || p.len() > 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    Some(m)
}

/// Epoch seconds (a decimal number) as a time.
fn parse_time(s: &str) -> Option<Timestamp> {
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) || frac.len() > 9 {
        return None;
    }
    let w: u64 = whole.parse().ok()?;
    let f: u64 = if frac.is_empty() { 0 } else { format!("{frac:0<9}").parse().ok()? };
    w.checked_mul(1_000_000_000)?.checked_add(f).map(Timestamp::from_nanos)
}

/// Connection tracking's settings from `--ct NAME=VALUE` options (Linux's defaults else).
pub(crate) fn ct_config(knobs: &[String]) -> Result<rampart_conntrack::Config, Fail> {
    let mut ct = rampart_conntrack::Config::default();
    for k in knobs {
        let (n, v) = pair(k, "NAME=VALUE", "--ct")?;
        let v: u64 =
            v.parse().map_err(|_| Fail(format!("--ct {k:?}: {v:?} is not a number"), 2))?;
        ct.set(n, v).map_err(|e| Fail(format!("--ct {k:?}: {e}"), 2))?;
    }
    Ok(ct)
}

fn go(args: &Args) -> Result<ExitCode, Fail> {
    // Rule sets know the router's own addresses (`-m addrtype --dst-type LOCAL`).
    let opts = args.source.options();
    let load = |p: &Path| -> Result<Arc<RuleSet>, LoadError> {
        let mut r = RuleSet::from_hooked(load_hooked(p, &opts)?);
        r.set_local(&args.local);
        Ok(Arc::new(r))
    };
    let rules = load(&args.rules)?;
    let other = match &args.compare {
        Some(p) => Some(load(p)?),
        None => None,
    };
    let ct = ct_config(&args.ct)?;
    let dpi = args.dpi != "off";
    if !dpi && (rules.uses_app() || other.as_ref().is_some_and(|o| o.uses_app())) {
        return Err(Fail(
            "the rules match applications (app ...): identification cannot be off".into(),
            2,
        ));
    }

    // Ports, their captures and their addresses.
    let mut names: Vec<String> = Vec::new();
    let mut inputs: Vec<Input> = Vec::new();
    for r in &args.read {
        let (iface, file) = pair(r, "IFACE=FILE", "-r")?;
        if names.iter().any(|n| n == iface) {
            return Err(Fail(format!("-r {r:?}: port {iface} is read twice"), 2));
        }
        names.push(iface.to_string());
        let capture = input::open_file(Path::new(file))?;
        inputs.push(Input { capture, own_mac: None });
    }
    let port = |flag: &str, s: &str, iface: &str| {
        names.iter().position(|n| n == iface).map(|i| i as u32).ok_or_else(|| {
            Fail(format!("{flag} {s:?}: no port {iface} (ports: {})", names.join(", ")), 2)
        })
    };
    for m in &args.port_mac {
        let (iface, mac) = pair(m, "IFACE=MAC", "--port-mac")?;
        let i = port("--port-mac", m, iface)?;
        let mac = parse_mac(mac)
            .ok_or_else(|| Fail(format!("--port-mac {m:?}: {mac:?} is not a MAC address"), 2))?;
        inputs[i as usize].own_mac = Some(mac);
    }
    let mut routes = Vec::new();
    for r in &args.route {
        let (prefix, iface) = pair(r, "PREFIX=IFACE", "--route")?;
        let (net, len) = rampart_classify::ipset::read_prefix(prefix)
            .ok_or_else(|| Fail(format!("--route {r:?}: {prefix:?} is not a prefix"), 2))?;
        routes.push((net, len, port("--route", r, iface)?));
    }
    let mut reloads = Vec::new();
    for r in &args.reload {
        let (time, file) = pair(r, "TIME=FILE", "--reload")?;
        let at = parse_time(time).ok_or_else(|| {
            Fail(format!("--reload {r:?}: {time:?} is not a time in epoch seconds"), 2)
        })?;
        let rules = load(Path::new(file)).map_err(|e| e.to_string());
        reloads.push(Reload { at, source: file.to_string(), rules });
    }
    reloads.sort_by_key(|r| r.at);
    // At most one output takes standard output (`-`, or the records' default).
    let mut on_stdout = Vec::new();
    for w in &args.write {
        if pair(w, "IFACE=FILE", "-w")?.1 == "-" {
            on_stdout.push(format!("-w {w}"));
        }
    }
    if args.log.as_deref().is_some_and(input::is_stdout) {
        on_stdout.push("--log -".into());
    }
    match args.output.as_deref() {
        Some(p) if input::is_stdout(p) => on_stdout.push("-o -".into()),
        None if args.compare.is_none() => on_stdout.push("the flow records (no -o)".into()),
        _ => {}
    }
    if args.compare.is_some() {
        on_stdout.push("--compare's differences".into());
    }
    input::one_stdout(&on_stdout.iter().map(String::as_str).collect::<Vec<_>>())?;
    let mut writers: Vec<Option<PcapOut>> = names.iter().map(|_| None).collect();
    for w in &args.write {
        let (iface, file) = pair(w, "IFACE=FILE", "-w")?;
        let i = port("-w", w, iface)?;
        for inp in &inputs {
            input::refuse_overwrite(&inp.capture, Some(Path::new(file)))?;
        }
        writers[i as usize] = Some(PcapOut::new(input::create_output(Path::new(file))?));
    }

    let routes =
        Arc::new(Routes { names: names.clone(), routes, local: args.local.clone(), bridge: false });
    let pipeline = |rules: Arc<RuleSet>| {
        let cfg = StatefulConfig { ct, routes: Arc::clone(&routes), ..StatefulConfig::default() };
        let table = TableConfig {
            max_flows: usize::try_from(args.ct_max).unwrap_or(usize::MAX),
            ..TableConfig::default()
        };
        let dpi = if dpi { FlowsConfig::default().dpi } else { None };
        let active_timeout = args.active_timeout.map(crate::flows::secs_span);
        Pipeline::new(&FlowsConfig {
            table,
            rtt: None,
            dpi,
            active_timeout,
            ..FlowsConfig::default()
        })
        .with_stateful(Stateful::new(cfg, rules))
    };
    // The collector and the endpoint before the outputs: a TCP collector that cannot be
    // reached, or an address that cannot be bound, stops the run before a file is emptied.
    let groups = rampart_export::ipfix::Config {
        tcp: true,
        firewall: true,
        ..rampart_export::ipfix::Config::default()
    };
    let exporter = ipfix::open_with(&args.ipfix, groups)?;
    let metrics = Metrics::start(&args.metrics, None)?;
    let create = |p: &Path| {
        for inp in &inputs {
            input::refuse_overwrite(&inp.capture, Some(p))?;
        }
        input::create_output(p)
    };
    let log = match &args.log {
        Some(p) => Some(Named::new(input::output_name(p), create(p)?)),
        None => None,
    };
    let stdout = || -> Box<dyn Write + Send> {
        Box::new(io::BufWriter::with_capacity(1 << 16, io::stdout()))
    };
    let records: Option<Named<Box<dyn Write + Send>>> = match &args.output {
        Some(p) => Some(Named::new(input::output_name(p), Box::new(create(p)?))),
        // The differences take standard output.
        None if args.compare.is_some() => None,
        None => Some(Named::new("standard output".into(), stdout())),
    };
    let mut sink = Out {
        names: &names,
        log,
        log_drops_only: false,
        records: records
            .map(|n| Named { name: n.name, out: FlowWriter::new(n.out, FlowFormat::Json) }),
        diffs: args.compare.is_some().then(|| Named::new("standard output".into(), stdout())),
        writers,
        counts: Counts::default(),
        ipfix: exporter,
        metrics: metrics.as_ref().map(|m| Published::new(m, 1, args.ct_max)),
        line: Vec::new(),
    };
    let stop = input::stop_flag();
    let main = pipeline(rules);
    let other = other.map(&pipeline);
    let result = replay(&mut inputs, main, other, reloads, &Limits::none(256), &stop, &mut sink);
    // Whatever happened, what was produced is written out (and each port's capture has at
    // least its header).
    let finished = sink.writers.iter_mut().zip(&inputs).try_for_each(|(w, inp)| match w {
        Some(w) => w.finish(inp.capture.link_type()),
        None => Ok(()),
    });
    let flushed = finished.and_then(|()| sink.flush());
    let (outcome, main) = match result.and_then(|o| flushed.map(|()| o)) {
        Ok(o) => o,
        Err(e) => {
            // A closed pipe (`| head`) is how readers say they have seen enough.
            // The firewall's writers name their file in the error.
            if !crate::closed_pipe(&e) {
                ipfix::report_failure(&e, "packets", None);
            }
            let code = crate::output_status(&e);
            // The collector gets what waits (unless it failed itself), and the endpoint
            // serves what was counted, whatever ended the run.
            ipfix::end(sink.ipfix.as_mut(), Some(&e), args.quiet);
            if let Some(p) = sink.metrics.take() {
                p.metrics.end(Some(p.meter), &stop);
            }
            return Ok(code);
        }
    };
    if let Some(p) = &mut sink.metrics {
        // The final values: the summary's, published at once.
        p.metrics.board().finish(&outcome.summary);
        p.fill(0, &main, &sink.counts);
        p.metrics.publish_firewall(&p.counts);
    }
    if !args.quiet {
        summary(&names, &outcome.summary, &[&main], &sink.counts, "packet", false);
    }
    for inp in &mut inputs {
        input::report_end(&mut inp.capture, input::Tell::Alone);
    }
    let mut code = match &outcome.error {
        Some(e) => {
            input::print_run_error(e, "packets");
            ExitCode::from(crate::run_error_status(e))
        }
        None if outcome.summary.differing_flows == 0 => ExitCode::SUCCESS,
        None => ExitCode::from(1),
    };
    if !ipfix::end(sink.ipfix.as_mut(), None, args.quiet) && outcome.error.is_none() {
        code = ExitCode::from(1);
    }
    if let Some(p) = sink.metrics.take() {
        p.metrics.end(Some(p.meter), &stop);
    }
    Ok(code)
}

/// Why a packet was dropped or rejected, in the order of [`Counts::drops`].
pub(crate) const DROP_REASONS: [&str; 5] = ["rule", "policy", "ct_invalid", "table_full", "not_ip"];

/// What the sink counts of the packets (on the reading thread, plain numbers).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counts {
    /// Packets accepted, dropped, rejected.
    pub(crate) verdicts: [u64; 3],
    /// Their bytes on the wire.
    pub(crate) bytes: [u64; 3],
    /// Packets dropped or rejected by why ([`DROP_REASONS`]).
    pub(crate) drops: [u64; 5],
    /// Reloads applied, and refused.
    pub(crate) reloads: [u64; 2],
    /// New connections accepted untracked because the table was full (failing open).
    pub(crate) fail_open: u64,
}

impl Counts {
    /// Counts one decided packet of `bytes` octets on the wire.
    #[inline]
    fn packet(&mut self, d: &Decided, rules: &RuleSet, bytes: u32) {
        let v = d.verdict as usize;
        self.verdicts[v] += 1;
        self.bytes[v] += u64::from(bytes);
        if d.verdict == Verdict::Accept && matches!(d.reason, Some(Why::TableFull)) {
            self.fail_open += 1;
        }
        if d.verdict != Verdict::Accept {
            let why = if d.ct.is_none() {
                4
            } else if matches!(d.reason, Some(Why::TableFull)) {
                3
            } else if d.ct == Some(rampart_conntrack::CtState::Invalid) {
                2
            } else if d.rule.is_some_and(|r| is_policy(rules, r)) {
                1
            } else {
                0
            };
            self.drops[why] += 1;
        }
    }
}

/// Whether `r` is its base chain's policy (the last entry).
fn is_policy(rules: &RuleSet, r: rampart_engine::stateful::RuleRef) -> bool {
    rules
        .chains()
        .get(usize::from(r.chain))
        .is_some_and(|c| c.rules.entries().len() == r.entry as usize + 1)
}

/// What an entry does, as the summary and the metrics say it.
fn action_name(c: &rampart_engine::stateful::BaseChain, e: usize) -> String {
    use rampart_classify::firewall::Action;
    match &c.rules.entries()[e].action {
        Action::Verdict(t) => format!("{t:?}").to_lowercase(),
        Action::Jump(k) => format!("jump {}", c.rules.chains()[*k].name),
        Action::Goto(k) => format!("goto {}", c.rules.chains()[*k].name),
        Action::Return => "return".into(),
        Action::Continue => "continue".into(),
    }
}

/// The metrics endpoint of a run, and what the deciding threads publish on it.
pub(crate) struct Published<'m> {
    pub(crate) metrics: &'m Metrics,
    /// Each deciding thread's slot on the board (its [`Summary`]; the board sums them).
    pub(crate) slots: Vec<Slot>,
    /// Flow records by end reason and application.
    pub(crate) meter: Meter,
    /// The firewall's counters, refilled in place at each publication.
    pub(crate) counts: FirewallCounts,
    /// Each deciding thread's data plane counters (rules, connection tracking), summed into
    /// `counts`.
    pub(crate) workers: Vec<FirewallCounts>,
    pub(crate) ct_max: u64,
}

impl<'m> Published<'m> {
    /// Publication for `workers` deciding threads on `metrics`.
    pub(crate) fn new(metrics: &'m Metrics, workers: usize, ct_max: u64) -> Self {
        Self {
            metrics,
            slots: (0..workers.max(1)).map(|_| metrics.board().slot()).collect(),
            meter: metrics.meter(),
            counts: FirewallCounts::default(),
            workers: vec![FirewallCounts::default(); workers.max(1)],
            ct_max,
        }
    }

    /// Fills [`Published::counts`] from worker `w`'s data plane, the other workers' last
    /// counters and the sink's counts: the values the summary prints.
    pub(crate) fn fill(&mut self, w: usize, main: &Pipeline, c: &Counts) {
        if let Some(own) = self.workers.get_mut(w) {
            Self::data_plane(own, main, self.ct_max);
        }
        let f = &mut self.counts;
        *f = FirewallCounts::default();
        for own in &self.workers {
            f.add_data_plane(own);
        }
        f.conntrack.limit = self.ct_max;
        f.verdicts.clear();
        for v in [Verdict::Accept, Verdict::Drop, Verdict::Reject] {
            f.verdicts.push((v.name(), c.verdicts[v as usize], c.bytes[v as usize]));
        }
        f.drops.clear();
        f.drops.extend(DROP_REASONS.iter().copied().zip(c.drops));
        f.reloads = c.reloads;
    }

    /// One data plane's rule and connection tracking counters.
    fn data_plane(f: &mut FirewallCounts, main: &Pipeline, ct_max: u64) {
        let Some(st) = main.stateful() else { return };
        let (cached, evaluated) = st.decided_counts();
        f.decisions = [evaluated, cached];
        // Rules by (chain, name, action); a name met twice in a chain adds up.
        f.rules.clear();
        f.other_rules = None;
        let mut at: std::collections::HashMap<(usize, &str, String), usize> = Default::default();
        for (i, (chain, hits)) in st.rules().chains().iter().zip(st.hits()).enumerate() {
            let last = hits.len().saturating_sub(1);
            for (e, n) in hits.into_iter().enumerate() {
                let name = chain.entry_name(e).as_ref();
                let action = action_name(chain, e);
                match at.get(&(i, name, action.clone())) {
                    Some(&k) => f.rules[k].packets += n,
                    // Each base chain's policy is always named.
                    None if f.rules.len() < MAX_RULES || e == last => {
                        at.insert((i, name, action.clone()), f.rules.len());
                        f.rules.push(RuleHits {
                            chain: chain.name.clone(),
                            rule: name.to_string(),
                            action,
                            packets: n,
                        });
                    }
                    None => *f.other_rules.get_or_insert(0) += n,
                }
            }
        }
        let t = st.conntrack().stats();
        f.conntrack = ConntrackCounts {
            entries: st.conntrack().entries(),
            limit: ct_max,
            found: t.found,
            inserted: t.insert,
            insert_failed: t.insert_failed,
            table_full: t.drop,
            early_drops: t.early_drop,
            errors: t.error,
            ignored: t.ignored,
            unchecked: t.unchecked,
            invalid: rampart_conntrack::Reason::ALL
                .iter()
                .map(|r| (r.name(), t.by_reason[*r as usize]))
                .collect(),
        };
    }
}

/// An output capture (a port's, or `rampart filter`'s), created with the link type of its
/// first frame.
pub(crate) struct PcapOut {
    file: Option<input::Output>,
    pcap: Option<PcapWriter<input::Output>>,
}

impl PcapOut {
    /// A capture to be written to `file`, its header with its first frame.
    pub(crate) fn new(file: input::Output) -> Self {
        Self { file: Some(file), pcap: None }
    }

    /// Writes the file header, of link type `link`, unless it is written.
    fn start(&mut self, link: LinkType) -> io::Result<()> {
        if self.pcap.is_none()
            && let Some(file) = self.file.take()
        {
            self.pcap = Some(PcapWriter::new(file, link, 262_144, true)?);
        }
        Ok(())
    }

    /// Writes `data` (of `origlen` bytes on the wire) at `f`'s time and link type.
    pub(crate) fn write(&mut self, f: &Frame<'_>, data: &[u8], origlen: u32) -> io::Result<()> {
        self.start(f.link)?;
        match &mut self.pcap {
            Some(p) => p.write(f.ts, origlen, data),
            None => Ok(()),
        }
    }

    /// Flushes what was written.
    fn flush(&mut self) -> io::Result<()> {
        match (&mut self.pcap, &mut self.file) {
            (Some(p), _) => p.flush(),
            (None, Some(f)) => f.flush(),
            (None, None) => Ok(()),
        }
    }

    /// Ends the capture: one nothing was written to still gets a header and no records (as
    /// `tcpdump -w` leaves one), of its input's link type `link` (Ethernet when unknown).
    pub(crate) fn finish(&mut self, link: Option<LinkType>) -> io::Result<()> {
        self.start(link.unwrap_or(LinkType::Ethernet))?;
        self.flush()
    }
}

/// An output and its name for messages.
pub(crate) struct Named<W> {
    pub(crate) name: String,
    pub(crate) out: W,
}

impl<W> Named<W> {
    pub(crate) fn new(name: String, out: W) -> Self {
        Named { name, out }
    }

    /// `e`, naming the output (the kind kept, so a closed pipe is still told apart).
    fn error(&self, e: io::Error) -> io::Error {
        io::Error::new(e.kind(), format!("{}: {e}", self.name))
    }
}

/// The firewall's outputs: the per-packet log, flow records, what-if differences, port
/// captures, IPFIX and metrics, with the counts its summary prints.
pub(crate) struct Out<'a> {
    pub(crate) names: &'a [String],
    pub(crate) log: Option<Named<input::Output>>,
    /// Log only packets dropped or rejected.
    pub(crate) log_drops_only: bool,
    pub(crate) records: Option<Named<FlowWriter<Box<dyn Write + Send>>>>,
    /// With a second rule set: where the flows it treats differently go, as they are found.
    pub(crate) diffs: Option<Named<Box<dyn Write + Send>>>,
    pub(crate) writers: Vec<Option<PcapOut>>,
    /// Packets by verdict and drop reason, reloads.
    pub(crate) counts: Counts,
    /// The IPFIX collector the flow records also go to.
    pub(crate) ipfix: Option<Exporter>,
    /// The metrics endpoint, with what the deciding threads publish on it.
    pub(crate) metrics: Option<Published<'a>>,
    /// The line being built.
    pub(crate) line: Vec<u8>,
}

impl Out<'_> {
    /// Publishes deciding thread `w`'s counters (its data plane `main`, its summary `s`) on
    /// the metrics endpoint, when due.
    pub(crate) fn publish(&mut self, w: usize, main: &Pipeline, s: &Summary) {
        if let Some(p) = &mut self.metrics
            && let Some(slot) = p.slots.get_mut(w)
            && slot.due()
        {
            slot.publish(|copy| {
                copy.clone_from(s);
                main.stats_into(copy);
            });
            p.fill(w, main, &self.counts);
            p.metrics.publish_firewall(&p.counts);
            p.meter.tick();
        }
    }

    /// Flushes every output; the first error, naming its output.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        let mut first = Ok(());
        let mut keep = |r: io::Result<()>| {
            if first.is_ok() {
                first = r;
            }
        };
        for w in self.writers.iter_mut().flatten() {
            keep(w.flush());
        }
        if let Some(l) = &mut self.log {
            keep(l.out.flush().map_err(|e| l.error(e)));
        }
        if let Some(r) = &mut self.records {
            keep(r.out.flush().map_err(|e| r.error(e)));
        }
        if let Some(d) = &mut self.diffs {
            keep(d.out.flush().map_err(|e| d.error(e)));
        }
        if let Some(x) = &mut self.ipfix {
            keep(ipfix::flush(x));
        }
        first
    }
}

/// Appends `"name"` for a protocol records name, else its number.
fn proto(l: &mut Vec<u8>, p: u8, family: IpFamily) {
    match rampart_export::proto_name(p, family) {
        Some(n) => text::json_string(l, n),
        None => num::int(l, p),
    }
}

/// Appends a JSON string, or `null`.
fn string_or_null(l: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => text::json_string(l, s),
        None => l.extend_from_slice(b"null"),
    }
}

impl FirewallSink for Out<'_> {
    fn packet(
        &mut self,
        frame: &Frame<'_>,
        d: &Decided,
        rules: &RuleSet,
        reply: Option<&[u8]>,
    ) -> io::Result<()> {
        self.counts.packet(d, rules, frame.origlen);
        if d.verdict == Verdict::Accept
            && let Some(o) = d.oif
            && let Some(Some(w)) = self.writers.get_mut(o as usize)
        {
            w.write(frame, frame.data, frame.origlen)?;
        }
        if let Some(r) = reply
            && let Some(Some(w)) = self.writers.get_mut(d.iif as usize)
        {
            w.write(frame, r, r.len() as u32)?;
        }
        let Some(log) = &mut self.log else { return Ok(()) };
        let Some(state) = d.ct else { return Ok(()) };
        if self.log_drops_only && d.verdict == Verdict::Accept {
            return Ok(());
        }
        let m = PacketMeta::parse(frame.link, frame.data);
        let family = m.family.ip().unwrap_or(IpFamily::V6);
        let name = |i: Option<u32>| i.and_then(|i| self.names.get(i as usize)).map(String::as_str);
        let l = &mut self.line;
        l.clear();
        l.extend_from_slice(b"{\"time\":");
        rampart_export::epoch(l, frame.ts.as_nanos());
        l.extend_from_slice(b",\"iif\":");
        text::json_string(l, name(Some(d.iif)).unwrap_or(""));
        l.extend_from_slice(b",\"oif\":");
        string_or_null(l, name(d.oif));
        l.extend_from_slice(b",\"proto\":");
        proto(l, m.proto, family);
        let (sport, dport) = if m.has_ports() { (m.sport, m.dport) } else { (0, 0) };
        l.extend_from_slice(b",\"src\":\"");
        num::slot_addr(l, family, &m.src);
        l.extend_from_slice(b"\",\"sport\":");
        num::int(l, sport);
        l.extend_from_slice(b",\"dst\":\"");
        num::slot_addr(l, family, &m.dst);
        l.extend_from_slice(b"\",\"dport\":");
        num::int(l, dport);
        if matches!(m.proto, 1 | 58) {
            l.extend_from_slice(b",\"icmp_type\":");
            num::int(l, m.icmp_type);
            l.extend_from_slice(b",\"icmp_code\":");
            num::int(l, m.icmp_code);
        }
        l.extend_from_slice(b",\"ct_state\":");
        text::json_string(l, &state.to_string());
        l.extend_from_slice(b",\"verdict\":");
        text::json_string(l, d.verdict.name());
        l.extend_from_slice(b",\"rule\":");
        string_or_null(l, d.rule.map(|r| rules.rule_name(r).as_ref()));
        if let Some(reason) = &d.reason {
            l.extend_from_slice(b",\"reason\":");
            text::json_string(l, &reason.message());
        }
        l.extend_from_slice(b"}\n");
        log.out.write_all(l).map_err(|e| log.error(e))
    }

    fn record(&mut self, r: &FlowRecord) -> io::Result<()> {
        if let Some(p) = &mut self.metrics {
            p.meter.record(r);
        }
        if let Some(w) = &mut self.records {
            w.out.write(r).map_err(|e| w.error(e))?;
        }
        match &mut self.ipfix {
            Some(x) => ipfix::record(x, r),
            None => Ok(()),
        }
    }

    fn batch_done(&mut self, main: &Pipeline, s: &Summary) -> io::Result<()> {
        self.publish(0, main, s);
        Ok(())
    }

    fn reload(&mut self, at: Timestamp, source: &str, result: Result<(), &str>) -> io::Result<()> {
        self.counts.reloads[usize::from(result.is_err())] += 1;
        let mut t = Vec::new();
        rampart_export::epoch(&mut t, at.as_nanos());
        let when = String::from_utf8_lossy(&t);
        match result {
            Ok(()) => eprintln!("rampart: at {when}: loaded {source}"),
            Err(e) => eprintln!("rampart: at {when}: {e}\nrampart: the rule set in force stays"),
        }
        Ok(())
    }

    fn differs(&mut self, d: &Difference) -> io::Result<()> {
        let Some(out) = &mut self.diffs else { return Ok(()) };
        difference(&mut self.line, d);
        out.out.write_all(&self.line).map_err(|e| out.error(e))
    }
}

/// A flow two rule sets treat differently, as one JSON line (into `l`, cleared first).
fn difference(l: &mut Vec<u8>, d: &Difference) {
    let k: &FlowKey = &d.key;
    let (src, dst, sport, dport) = match d.side {
        Side::A => (k.addr_a_bytes(), k.addr_b_bytes(), k.port_a(), k.port_b()),
        Side::B => (k.addr_b_bytes(), k.addr_a_bytes(), k.port_b(), k.port_a()),
    };
    let (sport, dport) =
        if k.kind() == rampart_flow::KeyKind::Ports { (sport, dport) } else { (0, 0) };
    l.clear();
    l.extend_from_slice(b"{\"proto\":");
    proto(l, k.proto(), k.family());
    l.extend_from_slice(b",\"src\":\"");
    num::slot_addr(l, k.family(), src);
    l.extend_from_slice(b"\",\"sport\":");
    num::int(l, sport);
    l.extend_from_slice(b",\"dst\":\"");
    num::slot_addr(l, k.family(), dst);
    l.extend_from_slice(b"\",\"dport\":");
    num::int(l, dport);
    l.extend_from_slice(b",\"packets\":");
    num::int(l, d.packets);
    l.extend_from_slice(b",\"first\":");
    rampart_export::epoch(l, d.first.as_nanos());
    for (side, (v, rule)) in [("a", &d.a), ("b", &d.b)] {
        l.extend_from_slice(format!(",\"verdict_{side}\":").as_bytes());
        text::json_string(l, v.name());
        l.extend_from_slice(format!(",\"rule_{side}\":").as_bytes());
        string_or_null(l, rule.as_deref());
    }
    l.extend_from_slice(b"}\n");
}

/// The summary on standard error: what the run decided (`what`: `packet`, `frame`), by verdict
/// and reason, then the data planes' rule counters and connection tracking, summed over
/// `mains` (one per deciding thread).
pub(crate) fn summary(
    names: &[String],
    s: &Summary,
    mains: &[&Pipeline],
    counts: &Counts,
    what: &str,
    live: bool,
) {
    let verdicts = &counts.verdicts;
    let mut err = io::stderr().lock();
    let secs = s.elapsed.as_secs_f64();
    let speed = crate::input::speed(s.packets, s.elapsed, live)
        .map_or(String::new(), |ns| format!(" ({ns:.0} ns/packet)"));
    let skipped = if s.filtered > 0 || what == "packet" {
        format!(" ({} frames the ports sent skipped)", s.filtered)
    } else {
        String::new()
    };
    let _ = writeln!(
        err,
        "{}: {}, {} accepted, {} dropped, {} rejected{skipped}; {} \
         in {secs:.3} s{speed}{}",
        names.join(", "),
        crate::input::count(s.packets, what),
        verdicts[Verdict::Accept as usize],
        verdicts[Verdict::Drop as usize],
        verdicts[Verdict::Reject as usize],
        crate::input::count(s.flows, "flow"),
        if s.interrupted { ", interrupted" } else { "" }
    );
    let _ = writeln!(
        err,
        "  bytes: {} accepted, {} dropped, {} rejected",
        counts.bytes[Verdict::Accept as usize],
        counts.bytes[Verdict::Drop as usize],
        counts.bytes[Verdict::Reject as usize],
    );
    if counts.drops.iter().any(|&n| n > 0) {
        let by: Vec<String> =
            DROP_REASONS.iter().zip(counts.drops).map(|(r, n)| format!("{r} {n}")).collect();
        let _ = writeln!(err, "  dropped or rejected by: {}", by.join(", "));
    }
    if counts.fail_open > 0 {
        let _ = writeln!(
            err,
            "  failing open: {} new connections accepted untracked (the table was full)",
            counts.fail_open
        );
    }
    let sts: Vec<&Stateful> = mains.iter().filter_map(|m| m.stateful()).collect();
    let Some(st) = sts.first() else { return };
    if s.non_ip > 0 {
        let fate = if st.non_ip() == Verdict::Accept {
            "passed, as a bridge passes them"
        } else {
            "dropped as a router does not forward them"
        };
        let _ = writeln!(err, "  not IP (or not parsed): {} frames, {fate}", s.non_ip);
    }
    let (mut cached, mut evaluated) = (0, 0);
    for st in &sts {
        let (c, e) = st.decided_counts();
        (cached, evaluated) = (cached + c, evaluated + e);
    }
    let _ = writeln!(
        err,
        "  decisions: {evaluated} by the rule set, {cached} from the flow's cached decision"
    );
    // Every worker ends on the same rule set; their counters add up.
    let rules = st.rules();
    let mut hits = st.hits();
    for other in &sts[1..] {
        if Arc::ptr_eq(other.rules(), rules) {
            for (h, o) in hits.iter_mut().zip(other.hits()) {
                for (a, b) in h.iter_mut().zip(o) {
                    *a += b;
                }
            }
        }
    }
    let _ = writeln!(err, "  rule counters ({}):", rules.source);
    for (c, hits) in rules.chains().iter().zip(hits) {
        let _ = writeln!(
            err,
            "    chain {} ({} hook, priority {}{}):",
            c.name,
            c.hook.name(),
            c.priority,
            c.family.map_or(String::new(), |f| format!(", IPv{}", f.version()))
        );
        for (e, n) in hits.into_iter().enumerate() {
            let verdict = action_name(c, e);
            let _ = writeln!(
                err,
                "      {:<32} {verdict:<10} counter packets {n}",
                c.entry_name(e).as_ref()
            );
        }
    }
    let mut t = rampart_conntrack::Stats::default();
    let mut memory = 0;
    for st in &sts {
        t += st.conntrack().stats();
        memory += st.memory_bytes();
    }
    let _ = writeln!(
        err,
        "  conntrack: found={} invalid={} insert={} insert_failed={} drop={} early_drop={} \
         error={} (ignored {}, checksums not verifiable {})",
        t.found,
        t.invalid,
        t.insert,
        t.insert_failed,
        t.drop,
        t.early_drop,
        t.error,
        t.ignored,
        t.unchecked
    );
    let reasons: Vec<String> = t.reasons().map(|(r, n)| format!("{} {n}", r.name())).collect();
    if !reasons.is_empty() {
        let _ = writeln!(err, "  invalid by reason: {}", reasons.join(", "));
    }
    let _ = writeln!(
        err,
        "  memory: {:.1} MiB of connection state and cached decisions, table {:.1} MiB",
        memory as f64 / (1 << 20) as f64,
        s.table_bytes as f64 / (1 << 20) as f64
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_parse_or_say_what_they_expected() {
        assert_eq!(parse_mac("9a:c0:d6:7f:03:86"), Some([0x9a, 0xc0, 0xd6, 0x7f, 0x03, 0x86]));
        assert_eq!(parse_mac("9a-c0-d6-7f-03-86"), Some([0x9a, 0xc0, 0xd6, 0x7f, 0x03, 0x86]));
        assert_eq!(parse_mac("9a:c0:d6:7f:03"), None);
        assert_eq!(parse_mac("9a:c0:d6:7f:03:866"), None);
        assert_eq!(
            parse_time("1795395502.899122192").map(Timestamp::as_nanos),
            Some(1_795_395_502_899_122_192)
        );
        assert_eq!(parse_time("12").map(Timestamp::as_nanos), Some(12_000_000_000));
        assert_eq!(parse_time("12.5").map(Timestamp::as_nanos), Some(12_500_000_000));
        assert_eq!(parse_time("-1"), None);
        assert_eq!(parse_time("1e9"), None);
        assert!(pair("r0", "IFACE=FILE", "-r").is_err());
        assert_eq!(pair("r0=a=b", "IFACE=FILE", "-r").ok(), Some(("r0", "a=b")));
    }
}
