//! `rampart flows`: one record per flow.

use rampart_wire::Span;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use clap::ValueEnum;
use rampart_capture::Capture;
use rampart_engine::{Event, FlowsConfig, Sink, Summary};
use rampart_export::ipfix::Exporter;
use rampart_export::{FlowFormat, FlowWriter, Schema};
use rampart_flow::TableConfig;

use crate::Fail;
use crate::input::{self, LiveArgs, Source};
use crate::ipfix::{self, IpfixArgs};
use crate::metrics::{Metered, Metrics, MetricsArgs};

/// Output format.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum Format {
    /// One JSON object per line.
    Json,
    /// CSV with a header line.
    Csv,
    /// A Parquet dataset: typed columns, files under `DIR/date=YYYY-MM-DD/hour=HH/` (needs
    /// `-o DIR`).
    Parquet,
}

/// Record schemas.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum SchemaArg {
    /// rampart's names: CSV's 37 columns unchanged; JSON (and Parquet) add `community_id`,
    /// `uid`, `conn_state`, `history` and the TCP health counters.
    Rampart,
    /// Zeek-style orig/resp names with units in names, the same fields in JSON and CSV.
    V2,
}

/// Arguments of `rampart flows`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(flatten)]
    source: Inputs,
    /// A tcpdump filter expression (compiled by libpcap): only matching packets are counted.
    #[arg(short = 'f', long = "filter", value_name = "EXPR")]
    filter: Option<String>,
    /// Record format.
    #[arg(long, value_enum, default_value = "json")]
    format: Format,
    /// Record fields: `rampart` (rampart's names; the default) or `v2` (Zeek-style `orig_h`,
    /// `resp_p`, `orig_pkts`, `rtt_orig_min_us`, ...).
    #[arg(long, value_enum, value_name = "SCHEMA")]
    schema: Option<SchemaArg>,
    /// Seed of the records' `uid`s: the same capture and seed give the same uids.
    #[arg(long, value_name = "N", default_value_t = 0)]
    uid_seed: u64,
    /// Leave out Zeek's `conn_state` and `history` and the TCP health counters.
    #[arg(long)]
    no_tcp_stats: bool,
    /// Packets inside tunnels (IP in IP, GRE, VXLAN, GTP-U, CAPWAP): `inner` (the default)
    /// takes the inner packets' flows, marked with their tunnel; `outer` the tunnel's own.
    #[arg(long, value_name = "WHICH", value_parser = ["inner", "outer"], default_value = "inner")]
    tunnels: String,
    /// Stop after this many packets.
    #[arg(short = 'c', long, value_name = "COUNT")]
    count: Option<u64>,
    /// Stop after this many seconds (capture time from the first packet; wall time live).
    #[arg(short = 's', long, value_name = "SECONDS", value_parser = parse_timeout)]
    seconds: Option<f64>,
    /// Leave out the passive RTT fields (`rtt_src_*`, `rtt_dst_*`).
    #[arg(long)]
    no_rtt: bool,
    /// Most flows tracked at once; beyond it the least recently seen of a sample is evicted.
    #[arg(long, value_name = "N", default_value_t = 1_000_000,
          value_parser = clap::value_parser!(u64).range(1..=4_000_000_000))]
    max_flows: u64,
    /// A flow idle this many seconds (capture time) ends.
    #[arg(long, value_name = "SECONDS", default_value_t = 300.0, value_parser = parse_timeout)]
    flow_timeout: f64,
    /// A TCP connection closed by a FIN each way or a reset ends after this many quiet
    /// seconds (late retransmissions and the last ACKs still count in it).
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0, value_parser = parse_timeout)]
    tcp_linger: f64,
    /// Also report live flows every SECONDS of capture time: a flow's packet that comes more
    /// than this after the start of its current interval first writes an interim record
    /// (`end_reason` `active`) with the interval's packets and bytes; a flow's records add
    /// up to its totals and share its `uid`. Off by default.
    #[arg(long, value_name = "SECONDS", value_parser = parse_timeout)]
    active_timeout: Option<f64>,
    /// Write records to this file instead of standard output (`-`: standard output); with
    /// `--format parquet`, the dataset directory (created if missing; new files go beside the
    /// ones there).
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// No summary on standard error.
    #[arg(short, long)]
    quiet: bool,
    /// Threads to shard flows over (by a symmetric Toeplitz hash); the records are the same,
    /// in the same order, for any number.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=256))]
    workers: u16,
    /// Application identification: `rampart` (the `app`, `app_by` and metadata fields) or
    /// `off`.
    #[arg(long, value_name = "WHICH", value_parser = ["rampart", "off"], default_value = "rampart")]
    dpi: String,
    /// TCP packets with payload inspected per flow before giving up.
    #[arg(long, value_name = "N", default_value_t = 8,
          value_parser = clap::value_parser!(u8).range(1..=64))]
    dpi_tcp_packets: u8,
    /// UDP packets with payload inspected per flow before giving up.
    #[arg(long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u8).range(1..=64))]
    dpi_udp_packets: u8,
    /// Payload bytes buffered per flow and direction to join a message split over packets.
    #[arg(long, value_name = "BYTES", default_value_t = 16384,
          value_parser = clap::value_parser!(u32).range(256..=1 << 20))]
    dpi_bytes: u32,
    /// MiB that identification may hold for all the flows it inspects at once; a flow that
    /// takes it past this stops being inspected (counted in the summary).
    #[arg(long, value_name = "MIB", default_value_t = 256,
          value_parser = clap::value_parser!(u32).range(1..=1 << 20))]
    dpi_memory: u32,
    #[command(flatten)]
    live: LiveArgs,
    #[command(flatten)]
    ipfix: IpfixArgs,
    #[command(flatten)]
    metrics: MetricsArgs,
}

/// Where `flows` reads packets: capture files, or one interface.
#[derive(clap::Args, Debug, Clone)]
#[group(required = true, multiple = false)]
pub(crate) struct Inputs {
    /// Capture file to read (pcap or pcapng); `-` reads standard input; a directory reads every
    /// `*.pcap`, `*.pcapng` and `*.cap` file in it, by name. Repeat for more inputs: each is
    /// read on its own (its flows end with it), in order, into one output; `-c` and `-s`
    /// apply to each.
    #[arg(short = 'r', long = "read", value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Capture live from this interface (AF_PACKET; needs CAP_NET_RAW).
    #[arg(short = 'i', long = "interface", value_name = "IFACE")]
    interface: Option<String>,
}

impl Inputs {
    /// One [`Source`] per input: directories expanded into their capture files, by name.
    fn sources(&self) -> Result<Vec<Source>, Fail> {
        if let Some(i) = &self.interface {
            return Ok(vec![Source { file: None, interface: Some(i.clone()) }]);
        }
        let mut out = Vec::new();
        for f in &self.files {
            if f.as_os_str() != "-" && f.is_dir() {
                let found = capture_files_in(f)?;
                if found.is_empty() {
                    return Err(Fail(
                        format!(
                            "{}: no capture files (*.pcap, *.pcapng, *.cap) in this directory",
                            f.display()
                        ),
                        2,
                    ));
                }
                out.extend(found.into_iter().map(|p| Source { file: Some(p), interface: None }));
            } else {
                out.push(Source { file: Some(f.clone()), interface: None });
            }
        }
        Ok(out)
    }
}

/// The capture files directly in `dir` (`*.pcap`, `*.pcapng`, `*.cap`, any case), sorted by
/// name.
fn capture_files_in(dir: &Path) -> Result<Vec<PathBuf>, Fail> {
    let fail = |e: io::Error| Fail(format!("{}: {e}", dir.display()), 1);
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(fail)? {
        let p = e.map_err(fail)?.path();
        let ext = p.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        if matches!(ext.as_deref(), Some("pcap" | "pcapng" | "cap")) && p.is_file() {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

/// Where records go: a text stream, or a Parquet dataset.
enum Output {
    Text(FlowWriter<input::Output>),
    #[cfg(feature = "parquet")]
    Parquet(rampart_export::parquet::DatasetWriter),
}

impl Output {
    fn write(&mut self, r: &rampart_engine::FlowRecord) -> io::Result<()> {
        match self {
            Self::Text(w) => w.write(r),
            #[cfg(feature = "parquet")]
            Self::Parquet(w) => w.write(r),
        }
    }

    /// Hands over what is buffered: text at once; Parquet files appear when they are closed
    /// (full, out of date, or at the end), so nothing to do.
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Self::Text(w) => w.flush(),
            #[cfg(feature = "parquet")]
            Self::Parquet(_) => Ok(()),
        }
    }

    /// Writes everything out: text flushed, every Parquet file closed under its final name.
    fn finish(&mut self) -> io::Result<()> {
        match self {
            Self::Text(w) => w.flush(),
            #[cfg(feature = "parquet")]
            Self::Parquet(w) => w.finish().map(|_| ()),
        }
    }
}

/// Opens the output: the file or standard output, or the Parquet dataset directory.
fn open_output(args: &Args, schema: Schema) -> Result<Output, Fail> {
    let format = match args.format {
        Format::Json => FlowFormat::Json,
        Format::Csv => FlowFormat::Csv,
        Format::Parquet => return open_dataset(args.output.as_deref(), schema, args.uid_seed),
    };
    let out = input::create_output(args.output.as_deref().unwrap_or(Path::new("-")))?;
    Ok(Output::Text(FlowWriter::with_schema(out, format, schema).with_uid_seed(args.uid_seed)))
}

#[cfg(feature = "parquet")]
fn open_dataset(dir: Option<&Path>, schema: Schema, uid_seed: u64) -> Result<Output, Fail> {
    let Some(dir) = dir.filter(|d| !input::is_stdout(d)) else {
        return Err(Fail(
            "--format parquet writes a dataset directory: name it with -o DIR".into(),
            2,
        ));
    };
    rampart_export::parquet::DatasetWriter::create(dir, schema)
        .map(|w| Output::Parquet(w.with_uid_seed(uid_seed)))
        .map_err(|e| Fail(e.to_string(), 2))
}

#[cfg(not(feature = "parquet"))]
fn open_dataset(_: Option<&Path>, _: Schema, _: u64) -> Result<Output, Fail> {
    Err(Fail(
        "--format parquet: this rampart was built without the `parquet` cargo feature".into(),
        2,
    ))
}

/// A positive number of seconds (below 10^9).
pub(crate) fn parse_timeout(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v < 1e9 => Ok(v),
        _ => Err(format!("'{s}' is not a positive number of seconds")),
    }
}

/// Seconds as a span of whole nanoseconds (at least one).
pub(crate) fn secs_span(s: f64) -> Span {
    Span::from_nanos(((s * 1e9) as u64).max(1))
}

pub(crate) fn run(args: Args) -> Result<ExitCode, Fail> {
    let stop = input::stop_flag();
    let sources = args.source.sources()?;
    // The first input is opened before the output, so that an input that is no capture stops
    // the run before an output file is emptied; the later ones as their turn comes.
    let Some(first_source) = sources.first() else {
        return Err(Fail("no input: give -r FILE or -i IFACE".into(), 2));
    };
    let first =
        input::prepare(first_source, &args.live, 262_144, args.workers, args.filter.as_deref())?;
    let text_out = !matches!(args.format, Format::Parquet);
    if text_out {
        input::refuse_overwrite(&first.0, args.output.as_deref())?;
        let files: Vec<&Path> = sources.iter().filter_map(|s| s.file.as_deref()).collect();
        input::refuse_overwrite_paths(&files, args.output.as_deref())?;
    }
    // The collector before the output: a TCP collector that cannot be reached stops the run
    // before an output file is emptied. Records carry Zeek's state, history and TCP health
    // counters (the TCP element group) unless --no-tcp-stats.
    let groups = rampart_export::ipfix::Config {
        tcp: !args.no_tcp_stats,
        ..rampart_export::ipfix::Config::default()
    };
    let mut exporter = ipfix::open_with(&args.ipfix, groups)?;
    // One endpoint serves one run's counters: they only go up, which a second input's run,
    // counting from zero, would break.
    if args.metrics.metrics.is_some() && sources.len() > 1 {
        return Err(Fail("--metrics serves one input's counters: give one -r or -i".into(), 2));
    }
    let metrics = Metrics::start(&args.metrics, Some(&first.0))?;
    let schema = match (args.schema, args.format) {
        (Some(SchemaArg::Rampart), _) => Schema::Rampart,
        (Some(SchemaArg::V2), _) => Schema::V2,
        (None, Format::Csv) => Schema::default_for(FlowFormat::Csv),
        (None, Format::Json | Format::Parquet) => Schema::default_for(FlowFormat::Json),
    };
    let mut writer = open_output(&args, schema)?;
    let cfg = FlowsConfig {
        table: TableConfig {
            max_flows: args.max_flows as usize,
            idle_timeout: Span::from_nanos((args.flow_timeout * 1e9) as u64),
            close_linger: Span::from_nanos((args.tcp_linger * 1e9) as u64),
            ..TableConfig::default()
        },
        active_timeout: args.active_timeout.map(secs_span),
        count: args.count,
        seconds: args.seconds,
        rtt: if args.no_rtt { None } else { FlowsConfig::default().rtt },
        workers: usize::from(args.workers),
        dpi: (args.dpi != "off").then_some(rampart_dpi::Config {
            tcp_packets: args.dpi_tcp_packets,
            udp_packets: args.dpi_udp_packets,
            max_bytes: args.dpi_bytes as usize,
            max_total_bytes: (args.dpi_memory as usize) << 20,
        }),
        // The RTT histograms are made of the samples; records do not carry them.
        samples: metrics.is_some() && !args.no_rtt,
        tcp_stats: !args.no_tcp_stats,
        tunnels: args.tunnels == "inner",
        metrics: metrics.as_ref().map(Metrics::board),
        // A live capture makes room for --max-flows at start, so that a flood of new flows
        // never waits for a store to grow.
        reserve: first.0.is_live(),
        ..FlowsConfig::default()
    };
    let mut meter = metrics.as_ref().map(Metrics::meter);
    let mut header = match &mut writer {
        Output::Text(w) => w.header(),
        #[cfg(feature = "parquet")]
        Output::Parquet(_) => Ok(()),
    };
    // The worst exit status of the inputs read so far (0 while all went well).
    let mut status = 0u8;
    let mut first = Some(first);
    let mut write_error = None;
    for source in &sources {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let (mut capture, mut filter) = match first.take() {
            Some(c) => c,
            None => match input::prepare(
                source,
                &args.live,
                262_144,
                args.workers,
                args.filter.as_deref(),
            ) {
                Ok(c) => c,
                // An input that cannot be read is named and skipped; the others are read.
                Err(e) => {
                    status = status.max(e.1);
                    e.say();
                    continue;
                }
            },
        };
        if text_out && let Err(e) = input::refuse_overwrite(&capture, args.output.as_deref()) {
            status = status.max(e.1);
            e.say();
            continue;
        }
        let bar = progress_bar(&capture, args.quiet);
        // Live and streamed input (`-r -`) write each record as its flow ends (as `tcpdump -l`
        // users expect): what a batch produced is flushed before the next read, which may wait
        // for packets. A file is written in big blocks.
        let by_batch = capture.is_live() || capture.size().is_none();
        let mut watch = input::Watch::new(&capture);
        let result = std::mem::replace(&mut header, Ok(())).and_then(|()| {
            let mut records =
                Records { writer: &mut writer, ipfix: exporter.as_mut(), by_batch, dirty: false };
            let mut sink = Metered { inner: &mut records, meter: meter.take(), samples: false };
            let r = rampart_engine::run(
                &mut capture,
                &cfg,
                filter.as_mut(),
                &stop,
                &mut sink,
                &mut |pos| {
                    if let Some(b) = &bar {
                        b.set_position(pos);
                    }
                    watch.tick();
                },
            );
            meter = sink.meter;
            r
        });
        if let Some(b) = &bar {
            b.finish_and_clear();
        }
        let outcome = match result {
            Ok(o) => o,
            Err(e) => {
                write_error = Some(e);
                break;
            }
        };
        if !args.quiet {
            print_summary(capture.name(), &outcome.summary, capture.is_live());
        }
        let tell = if args.quiet { input::Tell::Quiet } else { input::Tell::Summary };
        let dropped = input::report_end(&mut capture, tell);
        match outcome.error {
            Some(e) => {
                input::print_run_error(&e, "flows");
                status = status.max(crate::run_error_status(&e));
            }
            None if dropped && args.live.fail_on_drop => status = status.max(3),
            None => {}
        }
    }
    // Whatever ended the run (the end of the inputs, Ctrl-C, a bad record, a closed pipe),
    // what was produced is written out: text flushed, Parquet files closed.
    let finished = writer.finish();
    let failure = write_error.map_or(finished, Err).err();
    let mut code = match &failure {
        None => ExitCode::from(status),
        Some(e) if crate::closed_pipe(e) => ExitCode::SUCCESS,
        Some(e) => {
            ipfix::report_failure(e, "flows", Some("flow records"));
            ExitCode::from(1)
        }
    };
    #[cfg(feature = "parquet")]
    if let (Output::Parquet(w), false, None) = (&writer, args.quiet, &failure) {
        let done = w.written();
        eprintln!(
            "  parquet: {} written in {} under {} (run {})",
            input::count(done.rows, "record"),
            input::count(done.files.len() as u64, "file"),
            args.output.as_deref().unwrap_or(Path::new(".")).display(),
            w.run_id()
        );
    }
    // The collector gets what is waiting whatever ended the run, unless it failed itself.
    if !ipfix::end(exporter.as_mut(), failure.as_ref(), args.quiet) && failure.is_none() {
        code = ExitCode::from(1);
    }
    if let Some(m) = &metrics {
        m.end(meter, &stop);
    }
    Ok(code)
}

/// Flow records to the writer (and the IPFIX collector), flushed after each batch that wrote
/// any when `by_batch`.
struct Records<'w> {
    writer: &'w mut Output,
    ipfix: Option<&'w mut Exporter>,
    by_batch: bool,
    dirty: bool,
}

impl Sink for Records<'_> {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        match e {
            Event::Flow(r) => {
                self.dirty = true;
                self.writer.write(r)?;
                match &mut self.ipfix {
                    Some(x) => ipfix::record(x, r),
                    None => Ok(()),
                }
            }
            Event::Sample(_) => Ok(()),
        }
    }

    fn tick(&mut self) -> io::Result<()> {
        if self.by_batch && std::mem::take(&mut self.dirty) {
            self.writer.flush()?;
            if let Some(x) = &mut self.ipfix {
                ipfix::flush(x)?;
            }
        }
        Ok(())
    }
}

/// A progress bar on standard error for large files, when it is a terminal.
fn progress_bar(capture: &Capture, quiet: bool) -> Option<indicatif::ProgressBar> {
    let size = capture.size()?;
    if quiet || size < (64 << 20) || !io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(size);
    let style = indicatif::ProgressStyle::with_template(
        "{spinner} {bytes}/{total_bytes} [{wide_bar}] {bytes_per_sec}, {eta} left",
    )
    .ok()?;
    bar.set_style(style.progress_chars("=> "));
    Some(bar)
}

fn print_summary(name: &str, s: &Summary, live: bool) {
    let secs = s.elapsed.as_secs_f64();
    // A live capture waits for packets most of the time: a rate over wall time would say
    // nothing about rampart's speed, so none is shown; nor for a run too short to time.
    let speed = input::speed(s.packets, s.elapsed, live)
        .map_or(String::new(), |ns| format!(" ({:.2} Mpps, {ns:.0} ns/packet)", 1e3 / ns));
    let t = &s.table;
    let mut err = io::stderr().lock();
    let _ = writeln!(
        err,
        "{name}: {}, {} bytes on the wire, {} in {secs:.3} s{speed}{}",
        input::count(s.packets, "packet"),
        s.wire_bytes,
        input::count(s.flows, "flow"),
        if s.interrupted { ", interrupted" } else { "" }
    );
    let _ = writeln!(
        err,
        "  flows: {} ended idle, {} closed (FIN), {} reset (RST), {} evicted, {} at end of \
         input; peak {} live, table {:.1} MiB",
        t.idle,
        t.fin,
        t.rst,
        t.evicted,
        s.flows.saturating_sub(t.idle + t.fin + t.rst + t.evicted),
        t.peak,
        s.table_bytes as f64 / (1 << 20) as f64
    );
    if s.interim > 0 {
        let _ = writeln!(err, "  interim records of live flows (active timeout): {}", s.interim);
    }
    if s.filtered > 0 {
        let _ = writeln!(err, "  filtered out: {} packets", s.filtered);
    }
    let d = &s.dpi;
    if d.inspected + d.by_dpi + d.by_port + d.by_address + d.unknown > 0 {
        let _ = writeln!(
            err,
            "  applications: {} by their packets, {} by port, {} by address, {} unknown; \
             {} flows inspected ({} payloads), peak {} at once, {:.1} MiB",
            d.by_dpi,
            d.by_port,
            d.by_address,
            d.unknown,
            d.inspected,
            d.packets,
            d.peak_inspecting,
            s.dpi_bytes as f64 / (1 << 20) as f64
        );
        if d.memory_capped > 0 {
            let _ = writeln!(
                err,
                "  identification stopped early for {} flows: --dpi-memory was reached",
                d.memory_capped
            );
        }
    }
    if s.non_ip > 0 {
        let _ = writeln!(err, "  not IP: {} frames", s.non_ip);
    }
    let mib = |b: usize| b as f64 / (1 << 20) as f64;
    if let Some(m) = input::process_memory() {
        let _ = writeln!(
            err,
            "  memory: peak {:.1} MiB resident ({:.1} MiB of it the mapped input now); table \
             {:.1}, RTT {:.1}, identification {:.1}, TCP state {:.1} MiB at the end",
            mib(m.peak),
            mib(m.file),
            mib(s.table_bytes),
            mib(s.rtt_bytes),
            mib(s.dpi_bytes),
            mib(s.tcp_bytes)
        );
    }
    let problems: Vec<String> = s.problems().map(|(n, c)| format!("{n} {c}")).collect();
    if !problems.is_empty() {
        let _ = writeln!(err, "  parse problems: {}", problems.join(", "));
    }
}
