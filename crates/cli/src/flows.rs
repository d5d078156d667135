//! `rampart flows`: one record per flow.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::ValueEnum;
use rampart_capture::Capture;
use rampart_engine::{FlowsConfig, Outcome, Summary, run_flows};
use rampart_export::{FlowFormat, FlowWriter};
use rampart_flow::TableConfig;

/// Output format.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum Format {
    /// One JSON object per line.
    Json,
    /// CSV with a header line.
    Csv,
}

/// Arguments of `rampart flows`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Capture to read (pcap or pcapng); `-` reads standard input.
    #[arg(short = 'r', long = "read", value_name = "FILE")]
    file: PathBuf,
    /// Record format.
    #[arg(long, value_enum, default_value = "json")]
    format: Format,
    /// Stop after this many packets.
    #[arg(short = 'c', long, value_name = "COUNT")]
    count: Option<u64>,
    /// Most flows tracked at once; beyond it the least recently seen of a sample is evicted.
    #[arg(long, value_name = "N", default_value_t = 1_000_000,
          value_parser = clap::value_parser!(u64).range(1..=4_000_000_000))]
    max_flows: u64,
    /// A flow idle this many seconds (capture time) ends.
    #[arg(long, value_name = "SECONDS", default_value_t = 300.0, value_parser = parse_timeout)]
    flow_timeout: f64,
    /// Write records to this file instead of standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// No summary on standard error.
    #[arg(short, long)]
    quiet: bool,
}

fn parse_timeout(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v < 1e9 => Ok(v),
        _ => Err(format!("'{s}' is not a positive number of seconds")),
    }
}

pub(crate) fn run(args: Args) -> ExitCode {
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        // A second Ctrl-C while the first is being honoured exits at once.
        let _ = ctrlc::set_handler(move || {
            if stop.swap(true, Ordering::Relaxed) {
                std::process::exit(130);
            }
        });
    }
    let mut capture = match Capture::open(&args.file) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("rampart: {e}");
            return ExitCode::from(if e.is_not_a_capture() { 2 } else { 1 });
        }
    };
    let out: Box<dyn Write> = match &args.output {
        Some(p) => match std::fs::File::create(p) {
            Ok(f) => Box::new(f),
            Err(e) => {
                eprintln!("rampart: {}: {e}", p.display());
                return ExitCode::from(2);
            }
        },
        None => Box::new(io::stdout().lock()),
    };
    let format = match args.format {
        Format::Json => FlowFormat::Json,
        Format::Csv => FlowFormat::Csv,
    };
    let mut writer = FlowWriter::new(io::BufWriter::with_capacity(1 << 16, out), format);
    let cfg = FlowsConfig {
        table: TableConfig {
            max_flows: args.max_flows as usize,
            idle_timeout_ns: (args.flow_timeout * 1e9) as u64,
            ..TableConfig::default()
        },
        count: args.count,
        ..FlowsConfig::default()
    };
    let bar = progress_bar(&capture, args.quiet);
    let result = writer.header().and_then(|()| {
        run_flows(&mut capture, &cfg, &stop, &mut |e| writer.write(e), &mut |pos| {
            if let Some(b) = &bar {
                b.set_position(pos);
            }
        })
    });
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let flushed = writer.flush();
    let outcome: Outcome = match result.and_then(|o| flushed.map(|()| o)) {
        Ok(o) => o,
        // A closed pipe (`| head`) is how readers say they have seen enough.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rampart: writing flow records: {e}");
            return ExitCode::from(1);
        }
    };
    if !args.quiet {
        print_summary(capture.name(), &outcome.summary);
    }
    match outcome.error {
        Some(e) => {
            eprintln!("rampart: {e}");
            eprintln!("rampart: the flows seen before that point were written");
            ExitCode::from(if e.is_not_a_capture() { 2 } else { 1 })
        }
        None => ExitCode::SUCCESS,
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

fn print_summary(name: &str, s: &Summary) {
    let secs = s.elapsed.as_secs_f64();
    let rate = if secs > 0.0 { s.packets as f64 / secs / 1e6 } else { 0.0 };
    let ns = if s.packets > 0 { secs * 1e9 / s.packets as f64 } else { 0.0 };
    let t = &s.table;
    let mut err = io::stderr().lock();
    let _ = writeln!(
        err,
        "{name}: {} packets, {} bytes on the wire, {} flows in {secs:.3} s \
         ({rate:.2} Mpps, {ns:.0} ns/packet){}",
        s.packets,
        s.wire_bytes,
        s.flows,
        if s.interrupted { ", interrupted" } else { "" }
    );
    let _ = writeln!(
        err,
        "  flows: {} ended idle, {} evicted, {} at end of input; peak {} live, table {:.1} MiB",
        t.idle,
        t.evicted,
        s.flows - t.idle - t.evicted,
        t.peak,
        s.table_bytes as f64 / (1 << 20) as f64
    );
    if s.non_ip > 0 {
        let _ = writeln!(err, "  not IP: {} frames", s.non_ip);
    }
    let problems: Vec<String> = s.problems().map(|(n, c)| format!("{n} {c}")).collect();
    if !problems.is_empty() {
        let _ = writeln!(err, "  parse problems: {}", problems.join(", "));
    }
}
