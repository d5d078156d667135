//! `rampart rtt`: passive TCP round-trip times, with pping's options.

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use clap::ValueEnum;
use rampart_engine::{CompatEvent, Event, FlowsConfig, Outcome, SampleText, Sink, run_pping};
use rampart_export::prometheus::{PrefixRtt, rtt_bucket_bounds};
use rampart_export::rtt::{RttFormat, RttWriter, SampleLines, pping_captured, pping_summary};
use rampart_flow::{Side, TableConfig};
use rampart_rtt::aggregate::{AggConfig, AggStats, Aggregator};
use rampart_rtt::{CompatConfig, Mode, RttConfig, Sample};
use rampart_wire::{Span, Timestamp};

use crate::Fail;
use crate::input::{self, LiveArgs, Source};
use crate::ipfix::{self, IpfixArgs};
use crate::metrics::{Metered, Metrics, MetricsArgs};
use rampart_export::ipfix::Exporter;

/// Compatibility targets.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum Compat {
    /// Upstream pollere/pping: the same samples and output, quirks included.
    Pping,
}

/// Matching methods.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum ModeArg {
    /// TSval/TSecr only.
    Ts,
    /// SEQ/ACK only (Karn's rule).
    Seq,
    /// TSval/TSecr where the option is present, SEQ/ACK elsewhere.
    Hybrid,
}

/// Output formats.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum FormatArg {
    /// pping's default: `HH:MM:SS rtt min_rtt flow`.
    Text,
    /// pping's `-m`: `epoch.usec rtt min_rtt fBytes dBytes pBytes flow`.
    Machine,
    /// One JSON object per line.
    Json,
}

/// Which address of a sample `--aggregate` keys by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ByArg {
    /// The sample's `src`: the end the RTT runs to from the capture point (ePPing's default).
    Src,
    /// The sample's `dst`: the other end (ePPing's `--aggregate-reverse`).
    Dst,
}

impl ByArg {
    fn name(self) -> &'static str {
        match self {
            ByArg::Src => "src",
            ByArg::Dst => "dst",
        }
    }
}

/// Arguments of `rampart rtt`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(flatten)]
    source: Source,
    /// A tcpdump filter expression (compiled by libpcap); only TCP is ever matched.
    #[arg(short = 'f', long = "filter", value_name = "EXPR")]
    filter: Option<String>,
    /// Packets inside tunnels (IP in IP, GRE, VXLAN, GTP-U, CAPWAP): `inner` (the default)
    /// takes the inner packets' flows, marked with their tunnel; `outer` the tunnel's own.
    #[arg(long, value_name = "WHICH", value_parser = ["inner", "outer"], default_value = "inner")]
    tunnels: String,
    /// Stop after this many packets.
    #[arg(short = 'c', long, value_name = "COUNT")]
    count: Option<u64>,
    /// Stop after this many seconds (capture time from the first packet; wall time live).
    #[arg(short = 's', long, value_name = "SECONDS", value_parser = crate::flows::parse_timeout)]
    seconds: Option<f64>,
    /// Machine-readable output (pping's `-m`); same as `--format machine`.
    #[arg(short = 'm', long)]
    machine: bool,
    /// Output format.
    #[arg(long, value_enum, conflicts_with = "machine")]
    format: Option<FormatArg>,
    /// No summaries on standard error.
    #[arg(short, long)]
    quiet: bool,
    /// Accepted for pping compatibility (summaries are on unless -q).
    #[arg(short, long)]
    verbose: bool,
    /// Summary interval in seconds of capture time (`--compat pping`).
    #[arg(long = "sumInt", value_name = "SECONDS", default_value_t = 10.0, value_parser = non_negative)]
    sum_int: f64,
    /// Unmatched TSvals older than this many seconds are forgotten.
    #[arg(long = "tsvalMaxAge", value_name = "SECONDS", default_value_t = 10.0, value_parser = crate::flows::parse_timeout)]
    tsval_max_age: f64,
    /// Flows idle longer than this many seconds are forgotten.
    #[arg(long = "flowMaxIdle", value_name = "SECONDS", default_value_t = 300.0, value_parser = crate::flows::parse_timeout)]
    flow_max_idle: f64,
    /// With --ipfix: also send live flows' records every SECONDS of capture time (interim
    /// records, flowEndReason 2, with the interval's delta counters), as `rampart flows
    /// --active-timeout` does. Not with --compat.
    #[arg(long, value_name = "SECONDS", value_parser = crate::flows::parse_timeout,
          conflicts_with = "compat", requires = "ipfix")]
    active_timeout: Option<f64>,
    /// Also time packets addressed to the capturing host (live capture).
    #[arg(short = 'l', long = "showLocal")]
    show_local: bool,
    /// Reproduce another tool exactly.
    #[arg(long, value_enum)]
    compat: Option<Compat>,
    /// Matching methods (not with --compat).
    #[arg(long, value_enum, default_value = "hybrid", conflicts_with = "compat")]
    mode: ModeArg,
    /// Print one RTT summary per flow (count, min, median, max each way) instead of samples.
    #[arg(long, conflicts_with = "compat")]
    summary: bool,
    /// Most flows tracked at once (not with --compat, which keeps pping's 10,000).
    #[arg(long, value_name = "N", default_value_t = 1_000_000,
          value_parser = clap::value_parser!(u64).range(1..=4_000_000_000))]
    max_flows: u64,
    /// Threads to shard flows over (by a symmetric Toeplitz hash); the output is the same for
    /// any number. Not with --compat: pping's flow limit, clean-up clock and counters are
    /// global, so its algorithm runs on one thread.
    #[arg(long, value_name = "N", default_value_t = 1, conflicts_with = "compat",
          value_parser = clap::value_parser!(u16).range(1..=256))]
    workers: u16,
    /// Aggregate samples per subnet instead of printing them: every --interval seconds of
    /// capture time, one JSON line per prefix (IPv4 addresses cut to /V4LEN, IPv6 to /V6LEN)
    /// that had samples, with count, min, mean, median, 95th percentile, max and a histogram.
    /// Without a value: 24,48.
    #[arg(long, value_name = "V4LEN,V6LEN", num_args = 0..=1, default_missing_value = "24,48",
          value_parser = parse_lens, conflicts_with_all = ["compat", "summary"])]
    aggregate: Option<(u8, u8)>,
    /// Length of the --aggregate intervals in seconds of capture time (boundaries at
    /// multiples of it since the epoch) [default: 10].
    #[arg(long, value_name = "SECONDS", requires = "aggregate", value_parser = parse_interval)]
    interval: Option<Span>,
    /// Most prefixes with a row of their own per interval; samples of further prefixes add up
    /// in one `other` row [default: 65536].
    #[arg(long, value_name = "N", requires = "aggregate",
          value_parser = clap::value_parser!(u32).range(1..=rampart_rtt::aggregate::MAX_PREFIXES as i64))]
    aggregate_max: Option<u32>,
    /// Which address of each sample --aggregate keys by: src (the end the RTT runs to) or dst
    /// [default: src].
    #[arg(long, value_enum, value_name = "SIDE", requires = "aggregate")]
    aggregate_by: Option<ByArg>,
    #[command(flatten)]
    live: LiveArgs,
    #[command(flatten)]
    ipfix: IpfixArgs,
    #[command(flatten)]
    metrics: MetricsArgs,
}

fn non_negative(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..1e9).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a number of seconds")),
    }
}

/// `--aggregate V4LEN,V6LEN`: two prefix lengths (IPv4 0 to 32, IPv6 0 to 128).
fn parse_lens(s: &str) -> Result<(u8, u8), String> {
    let Some((a, b)) = s.split_once(',') else {
        return Err(format!("'{s}' is not V4LEN,V6LEN (two prefix lengths, such as 24,48)"));
    };
    let v4 = match a.trim().parse::<u8>() {
        Ok(v) if v <= 32 => v,
        _ => return Err(format!("'{a}' is not an IPv4 prefix length (0 to 32)")),
    };
    let v6 = match b.trim().parse::<u8>() {
        Ok(v) if v <= 128 => v,
        _ => return Err(format!("'{b}' is not an IPv6 prefix length (0 to 128)")),
    };
    Ok((v4, v6))
}

/// `--interval SECONDS`: 1 ms to a year, kept to the microsecond.
fn parse_interval(s: &str) -> Result<Span, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.001..=31_536_000.0).contains(&v) => {
            Ok(Span::from_micros((v * 1e6).round() as u64))
        }
        _ => Err(format!("'{s}' is not an interval in seconds (0.001 to 31536000)")),
    }
}

/// How long after an interval's end, by the clock, a live capture closes it (the ring hands
/// packets over within a block timeout; a later sample counts as late).
const LIVE_GRACE: Duration = Duration::from_secs(1);

/// `--aggregate`: the aggregator, which address it keys by, the metrics' per-prefix
/// histograms it feeds when intervals close.
struct Agg {
    a: Aggregator,
    by: ByArg,
    prom: Option<Arc<Mutex<PrefixRtt>>>,
    live: bool,
}

impl Agg {
    #[inline]
    fn sample<W: Write>(&mut self, w: &mut RttWriter<W>, s: &Sample) -> io::Result<()> {
        if self.a.due(s.ts) {
            self.close(w)?;
        }
        // `side` sent the packet that carried the echo: the sample's `src`.
        let addr = match (self.by, s.side) {
            (ByArg::Src, Side::A) | (ByArg::Dst, Side::B) => s.key.addr_a_bytes(),
            (ByArg::Src, Side::B) | (ByArg::Dst, Side::A) => s.key.addr_b_bytes(),
        };
        self.a.add(s.ts, s.key.family(), addr, s.rtt);
        Ok(())
    }

    /// Writes the open interval's rows (and adds them to the metrics).
    fn close<W: Write>(&mut self, w: &mut RttWriter<W>) -> io::Result<()> {
        let by = self.by.name();
        let mut prom = self.prom.as_ref().map(|p| crate::metrics::lock(p));
        self.a.close(|r| {
            if let Some(p) = &mut prom {
                p.add(r);
            }
            w.write_interval(r, by)
        })
    }

    /// Live: closes the open interval once the clock is past its end (and the grace).
    fn tick<W: Write>(&mut self, w: &mut RttWriter<W>) -> io::Result<()> {
        if !self.live || !self.a.is_open() {
            return Ok(());
        }
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
        let now = Timestamp::from_nanos(now.saturating_sub(LIVE_GRACE).as_nanos() as u64);
        if self.a.due(now) { self.close(w) } else { Ok(()) }
    }
}

/// Standard output, flushed after every batch when capturing live or reading a stream, so a
/// sample shows as soon as its packet has been read.
struct Out<W: Write> {
    w: RttWriter<W>,
    by_batch: bool,
}

impl<W: Write> Out<W> {
    /// After each batch (and each quiet spell of a live capture): what it wrote goes out now
    /// on live or streamed input (an empty buffer costs nothing).
    fn tick(&mut self) -> io::Result<()> {
        if self.by_batch {
            self.w.flush()?;
        }
        Ok(())
    }
}

struct Samples<'a, W: Write> {
    out: &'a mut Out<W>,
    summary: bool,
    /// Every flow record (with its RTT summary) also goes here.
    ipfix: Option<&'a mut Exporter>,
    /// Samples are aggregated here instead of printed.
    agg: Option<&'a mut Agg>,
}

impl<W: Write> Samples<'_, W> {
    /// The input has ended (or the run stopped): the open interval's rows go out.
    fn finish(&mut self) -> io::Result<()> {
        match &mut self.agg {
            Some(a) => a.close(&mut self.out.w),
            None => Ok(()),
        }
    }
}

impl<W: Write> Sink for Samples<'_, W> {
    /// Printed samples are lines of their own: with `--workers`, each worker writes its
    /// samples' lines (aggregated samples are not printed).
    fn sample_text(&self) -> Option<Box<dyn SampleText>> {
        match self.agg {
            Some(_) => None,
            None => Some(Box::new(SampleLines::new(self.out.w.format()))),
        }
    }

    fn lines(&mut self, text: &[u8]) -> io::Result<()> {
        self.out.w.get_mut().write_all(text)
    }

    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        match e {
            Event::Sample(s) => match &mut self.agg {
                Some(a) => a.sample(&mut self.out.w, s),
                None => self.out.w.write_sample(s),
            },
            Event::Flow(r) => {
                match &r.rtt {
                    // One summary per flow: an interim record's (active timeout) is left out.
                    Some(rtt)
                        if self.summary
                            && r.end.is_final()
                            && rtt.dirs.iter().any(|d| d.count > 0) =>
                    {
                        self.out.w.write_summary(&r.flow, rtt)?
                    }
                    _ => {}
                }
                match &mut self.ipfix {
                    Some(x) => ipfix::record(x, r),
                    None => Ok(()),
                }
            }
        }
    }

    fn tick(&mut self) -> io::Result<()> {
        if self.out.by_batch
            && let Some(x) = &mut self.ipfix
        {
            ipfix::flush(x)?;
        }
        if let Some(a) = &mut self.agg {
            a.tick(&mut self.out.w)?;
        }
        self.out.tick()
    }
}

pub(crate) fn run(args: Args) -> Result<ExitCode, Fail> {
    let stop = input::stop_flag();
    let (mut capture, mut filter) =
        input::prepare(&args.source, &args.live, 144, args.workers, args.filter.as_deref())?;
    input::refuse_overwrite(&capture, None)?;
    input::note_loopback(&args.source, args.show_local);
    if args.ipfix.ipfix.is_some() && args.compat.is_some() {
        return Err(Fail(
            "--ipfix sends flow records, which --compat pping does not make".into(),
            2,
        ));
    }
    if args.metrics.metrics.is_some() && args.compat.is_some() {
        return Err(Fail(
            "--metrics counts rampart's own pipeline, which --compat pping does not run".into(),
            2,
        ));
    }
    if args.aggregate.is_some()
        && (args.machine || matches!(args.format, Some(FormatArg::Text | FormatArg::Machine)))
    {
        return Err(Fail(
            "--aggregate writes JSON lines (one per prefix and interval); --format text and \
             machine (-m) print samples"
                .into(),
            2,
        ));
    }
    let mut exporter = ipfix::open(&args.ipfix)?;
    let metrics = Metrics::start(&args.metrics, Some(&capture))?;
    let mut meter = metrics.as_ref().map(Metrics::meter);
    let live = capture.is_live();
    let mut watch = input::Watch::new(&capture);
    let filter = filter.as_mut();
    let mut agg = match args.aggregate {
        Some((v4_len, v6_len)) => {
            let d = AggConfig::default();
            let cfg = AggConfig {
                v4_len,
                v6_len,
                interval: args.interval.unwrap_or(d.interval),
                max_prefixes: args.aggregate_max.map_or(d.max_prefixes, |n| n as usize),
                coarse: if metrics.is_some() { rtt_bucket_bounds() } else { Vec::new() },
            };
            let a = match Aggregator::new(cfg) {
                Ok(a) => a,
                Err(e) => return Err(Fail(format!("--aggregate: {e}"), 2)),
            };
            let prom = metrics.as_ref().map(|m| m.prefix_rtt(a.config().max_prefixes));
            Some(Agg { a, by: args.aggregate_by.unwrap_or(ByArg::Src), prom, live })
        }
        None => None,
    };
    let format = match (args.machine, args.format) {
        _ if agg.is_some() => RttFormat::Json,
        (true, _) => RttFormat::Machine,
        (false, Some(FormatArg::Machine)) => RttFormat::Machine,
        (false, Some(FormatArg::Json)) => RttFormat::Json,
        (false, Some(FormatArg::Text) | None) => RttFormat::Text,
    };
    // Live and streamed input (`-r -`) are flushed after each batch that wrote anything
    // (the next read may wait for packets); a file is written in big blocks.
    let mut out = Out {
        w: RttWriter::new(io::BufWriter::with_capacity(1 << 20, io::stdout().lock()), format),
        by_batch: live || capture.size().is_none(),
    };
    let locals = if args.show_local { Vec::new() } else { input::local_addresses(&args.source) };
    let result = match args.compat {
        Some(Compat::Pping) => {
            if format == RttFormat::Json {
                return Err(Fail("--compat pping prints pping's formats only, not JSON".into(), 2));
            }
            // pping's local filter: the interface's first IPv4 address.
            let local = locals.iter().find_map(|a| match a {
                std::net::IpAddr::V4(v) => Some(v.octets()),
                std::net::IpAddr::V6(_) => None,
            });
            let cfg = CompatConfig {
                tsval_max_age: args.tsval_max_age,
                flow_max_idle: args.flow_max_idle,
                sum_int: if args.quiet { 0.0 } else { args.sum_int },
                count: args.count.unwrap_or(0),
                seconds: args.seconds.unwrap_or(0.0),
                local,
                ..CompatConfig::default()
            };
            run_pping(
                &mut capture,
                &cfg,
                filter,
                &stop,
                &mut |ev| match ev {
                    CompatEvent::Sample(s) => out.w.write_compat(s),
                    CompatEvent::First(secs) => {
                        eprintln!("First packet at {}\n", out.w.clock().asctime(secs));
                        Ok(())
                    }
                    CompatEvent::Summary(c) => {
                        out.w.flush()?;
                        eprint!("{}", pping_summary(&c));
                        Ok(())
                    }
                    CompatEvent::Stop(c, secs) => {
                        out.w.flush()?;
                        eprint!("{}", pping_summary(&c));
                        eprint!("{}", pping_captured(c.packets, secs));
                        Ok(())
                    }
                    CompatEvent::Tick => out.tick(),
                },
                &mut |_| watch.tick(),
            )
        }
        None => {
            let cfg = FlowsConfig {
                table: TableConfig {
                    max_flows: args.max_flows as usize,
                    idle_timeout: rampart_wire::Span::from_nanos((args.flow_max_idle * 1e9) as u64),
                    ..TableConfig::default()
                },
                active_timeout: args.active_timeout.map(crate::flows::secs_span),
                count: args.count,
                seconds: args.seconds,
                rtt: Some(RttConfig {
                    mode: match args.mode {
                        ModeArg::Ts => Mode::Ts,
                        ModeArg::Seq => Mode::Seq,
                        ModeArg::Hybrid => Mode::Hybrid,
                    },
                    tsval_max_age: Span::from_nanos((args.tsval_max_age * 1e9) as u64),
                    // Only the machine format prints pping's byte columns.
                    byte_counts: format == RttFormat::Machine,
                    ..RttConfig::default()
                }),
                // The RTT histograms are made of the samples, also with --summary.
                samples: !args.summary || metrics.is_some(),
                local: locals,
                workers: usize::from(args.workers),
                // RTT output carries no application labels, and needs no flow but TCP's.
                dpi: None,
                tcp_only: true,
                // Its reports use no flow record fields.
                tcp_stats: false,
                tunnels: args.tunnels == "inner",
                metrics: metrics.as_ref().map(Metrics::board),
                reserve: live,
                ..FlowsConfig::default()
            };
            let mut samples = Samples {
                out: &mut out,
                summary: args.summary,
                ipfix: exporter.as_mut(),
                agg: agg.as_mut(),
            };
            let mut sink =
                Metered { inner: &mut samples, meter: meter.take(), samples: !args.summary };
            let r = rampart_engine::run(&mut capture, &cfg, filter, &stop, &mut sink, &mut |_| {
                watch.tick()
            });
            meter = sink.meter;
            // The last interval is written whatever ended the run (a collector that failed
            // included); if the output itself failed, writing fails again and the first error
            // is the one reported.
            let finished = samples.finish();
            r.and_then(|o| finished.map(|()| o))
        }
    };
    let flushed = out.w.flush();
    let outcome: io::Result<Outcome> = result.and_then(|o| flushed.map(|()| o));
    let failure = outcome.as_ref().err();
    if let Some(e) = failure
        && !crate::closed_pipe(e)
    {
        ipfix::report_failure(e, "samples", Some("RTT samples"));
    }
    if let Ok(o) = &outcome
        && !args.quiet
        && args.compat.is_none()
    {
        print_summary(capture.name(), o, live);
        if let Some(a) = &agg {
            print_aggregated(&a.a.stats(), a.a.config(), a.by);
        }
    }
    // The collector gets what is waiting whatever ended the run, unless it failed itself.
    let sent = ipfix::end(exporter.as_mut(), failure, args.quiet);
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            if let Some(m) = &metrics {
                m.end(meter, &stop);
            }
            return Ok(crate::output_status(&e));
        }
    };
    // With --compat pping, the capture's line stands alone (pping's summary is not ours).
    let tell = match (args.quiet, args.compat) {
        (true, _) => input::Tell::Quiet,
        (false, Some(_)) => input::Tell::Alone,
        (false, None) => input::Tell::Summary,
    };
    let dropped = input::report_end(&mut capture, tell);
    if let Some(m) = &metrics {
        m.end(meter, &stop);
    }
    Ok(match outcome.error {
        Some(e) => {
            input::print_run_error(&e, "samples");
            ExitCode::from(crate::run_error_status(&e))
        }
        None if !sent => ExitCode::from(1),
        None => input::drop_status(&args.live, dropped),
    })
}

fn print_summary(name: &str, o: &Outcome, live: bool) {
    let s = &o.summary;
    let secs = s.elapsed.as_secs_f64();
    // No rate for a live capture, which waits for packets most of the time, nor for a run
    // too short to time.
    let speed = input::speed(s.packets, s.elapsed, live)
        .map_or(String::new(), |ns| format!(" ({ns:.0} ns/packet)"));
    let r = &s.rtt;
    let mut err = io::stderr().lock();
    let _ = writeln!(
        err,
        "{name}: {} ({} TCP), {} ({} ts, {} seq), {} in {secs:.3} s{speed}{}",
        input::count(s.packets, "packet"),
        r.tcp_packets,
        input::count(r.ts_samples + r.seq_samples, "RTT sample"),
        r.ts_samples,
        r.seq_samples,
        input::count(s.flows, "flow"),
        if s.interrupted { ", interrupted" } else { "" }
    );
    if s.filtered > 0 {
        let _ = writeln!(err, "  filtered out: {} packets", s.filtered);
    }
    if r.expired + r.table_full + r.backwards > 0 {
        let _ = writeln!(
            err,
            "  unmatched: {} echoes of expired TSvals, {} TSvals not stored (table full), \
             {} echoes earlier than their TSval",
            r.expired, r.table_full, r.backwards
        );
    }
    let problems: Vec<String> = s.problems().map(|(n, c)| format!("{n} {c}")).collect();
    if !problems.is_empty() {
        let _ = writeln!(err, "  parse problems: {}", problems.join(", "));
    }
}

/// The summary's line about `--aggregate`: rows, intervals, and what did not fit.
fn print_aggregated(st: &AggStats, cfg: &AggConfig, by: ByArg) {
    let mut line = format!(
        "  aggregated: {} over {} of {} s (/{} and /{} by {})",
        input::count(st.rows, "row"),
        input::count(st.intervals, "interval"),
        cfg.interval.as_secs_f64(),
        cfg.v4_len,
        cfg.v6_len,
        by.name()
    );
    if st.other > 0 {
        line.push_str(&format!(
            "; {} of prefixes beyond --aggregate-max {} counted in 'other' rows ({})",
            input::count(st.other, "sample"),
            cfg.max_prefixes,
            input::count(st.overflowed, "interval")
        ));
    }
    if st.late > 0 {
        line.push_str(&format!(
            "; {} earlier than the open interval counted in it",
            input::count(st.late, "sample")
        ));
    }
    let _ = writeln!(io::stderr().lock(), "{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregate_lengths_and_intervals_are_checked() {
        assert_eq!(parse_lens("24,48"), Ok((24, 48)));
        assert_eq!(parse_lens("0,128"), Ok((0, 128)));
        assert_eq!(parse_lens("32,0"), Ok((32, 0)));
        assert!(parse_lens("33,48").unwrap_err().contains("'33' is not an IPv4 prefix length"));
        assert!(parse_lens("24,129").unwrap_err().contains("'129' is not an IPv6 prefix length"));
        assert!(parse_lens("24").unwrap_err().contains("V4LEN,V6LEN"));
        assert!(parse_lens("-1,48").is_err());
        assert_eq!(parse_interval("10"), Ok(Span::from_secs(10)));
        assert_eq!(parse_interval("0.25"), Ok(Span::from_millis(250)));
        assert!(parse_interval("0").is_err());
        assert!(parse_interval("nan").is_err());
    }
}
