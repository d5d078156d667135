//! `rampart report`: one self-contained HTML page about a capture, or about flow records
//! (and RTT samples) written before.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rampart_capture::FileId;
use rampart_engine::{Event, FlowsConfig, Sink};
use rampart_export::report::{Options, Report, RunInfo, read};
use rampart_export::rtt::{RttFormat, RttWriter};
use rampart_export::{FlowFormat, FlowWriter};

use crate::Fail;
use crate::input;

/// Arguments of `rampart report`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(flatten)]
    input: Input,
    /// RTT samples to draw with `--records`: `rampart rtt --format json` lines.
    #[arg(long, value_name = "FILE", requires = "records")]
    samples: Option<PathBuf>,
    /// The HTML page to write (`-`: standard output).
    #[arg(short = 'o', long, value_name = "FILE")]
    output: PathBuf,
    /// The page's title (default: `rampart report: ` and the input's name).
    #[arg(long, value_name = "TEXT")]
    title: Option<String>,
    /// Rows in each table and bars in each top-N chart.
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    top: u16,
    /// Stop reading the capture after this many packets.
    #[arg(short = 'c', long, value_name = "COUNT", requires = "read")]
    count: Option<u64>,
    /// Stop after this many seconds of capture time.
    #[arg(short = 's', long, value_name = "SECONDS", value_parser = crate::flows::parse_timeout,
          requires = "read")]
    seconds: Option<f64>,
    /// No summary on standard error.
    #[arg(short, long)]
    quiet: bool,
}

/// Where the flows come from.
#[derive(clap::Args, Debug)]
#[group(required = true, multiple = false)]
struct Input {
    /// Capture file to read (pcap or pcapng); `-` reads standard input.
    #[arg(short = 'r', long = "read", value_name = "FILE")]
    read: Option<PathBuf>,
    /// Flow records to read instead: `rampart flows` JSON lines.
    #[arg(long, value_name = "FILE")]
    records: Option<PathBuf>,
}

pub(crate) fn run(args: Args) -> Result<ExitCode, Fail> {
    report(&args).map(|()| ExitCode::SUCCESS)
}

/// Refuses an output that is one of the inputs, however it is named (`-`: standard output,
/// when it is that file).
fn refuse_input(out: &Path, input: &Path) -> Result<(), Fail> {
    let (target, name) = input::output_id(Some(out));
    match (target, FileId::of_path(input)) {
        (Some(a), Some(b)) if a == b => Err(Fail(
            format!(
                "{}: the output ({name}) is an input; refusing to write over it",
                input.display()
            ),
            2,
        )),
        _ => Ok(()),
    }
}

fn report(args: &Args) -> Result<(), Fail> {
    let mut report = Report::new();
    let mut run = RunInfo::default();
    if let Some(path) = &args.input.read {
        let mut capture = input::open_file(path)?;
        input::refuse_overwrite(&capture, Some(&args.output))?;
        run.source = capture.name().to_string();
        let cfg = FlowsConfig {
            count: args.count,
            seconds: args.seconds,
            samples: true,
            // The page uses no connection state, history or TCP health counter.
            tcp_stats: false,
            ..FlowsConfig::default()
        };
        let stop = input::stop_flag();
        let mut sink = Collect {
            report: &mut report,
            flows: FlowWriter::new(Vec::new(), FlowFormat::Json),
            samples: RttWriter::new(Vec::new(), RttFormat::Json),
        };
        let outcome = rampart_engine::run(&mut capture, &cfg, None, &stop, &mut sink, &mut |_| {})
            .map_err(|e| Fail(format!("{}: {e}", capture.name()), 1))?;
        run.packets = Some(outcome.summary.packets);
        run.wire_bytes = Some(outcome.summary.wire_bytes);
        run.interrupted = outcome.summary.interrupted;
        if let Some(e) = &outcome.error {
            // What was read before the error still makes a page; the error is reported
            // after it is written.
            input::print_run_error(e, "report");
        }
    } else if let Some(path) = &args.input.records {
        refuse_input(&args.output, path)?;
        run.source = path.display().to_string();
        read_file(path, read::parse_flow, &mut |f| report.add_flow(f))?;
        if let Some(s) = &args.samples {
            refuse_input(&args.output, s)?;
            read_file(s, read::parse_sample, &mut |x| report.add_sample(x))?;
        }
    }
    let title = args.title.clone().unwrap_or_else(|| {
        let name = Path::new(&run.source)
            .file_name()
            .map_or(run.source.clone(), |n| n.to_string_lossy().into_owned());
        format!("rampart report: {name}")
    });
    let opts = Options { title, top: usize::from(args.top), ..Options::default() };
    let page = report.render(&run, &opts);
    let mut w = input::create_output(&args.output)?;
    if let Err(e) = w.write_all(page.as_bytes()).and_then(|()| w.flush()) {
        // A closed pipe (`-o - | head`) ends quietly, with status 0.
        return Err(Fail::write(&input::output_name(&args.output), &e));
    }
    if !args.quiet {
        eprintln!(
            "{}: {} flows, {} RTT samples; wrote {} ({} KiB)",
            run.source,
            report.flows(),
            report.samples(),
            input::output_name(&args.output),
            page.len().div_ceil(1024)
        );
    }
    Ok(())
}

/// Reads JSON lines from `path`; an error names the file and the line.
fn read_file<T>(
    path: &Path,
    parse: fn(&[u8]) -> Result<T, String>,
    each: &mut dyn FnMut(T),
) -> Result<u64, Fail> {
    let file =
        std::fs::File::open(path).map_err(|e| Fail(format!("{}: {e}", path.display()), 1))?;
    read::read_lines(io::BufReader::new(file), parse, each)
        .map_err(|e| Fail(format!("{}:{}: {}", path.display(), e.line, e.message), 2))
}

/// Flow records and samples into the report, through the same JSON lines `rampart flows`
/// and `rampart rtt --format json` write, so a page made from a capture and one made from
/// those files agree.
struct Collect<'r> {
    report: &'r mut Report,
    flows: FlowWriter<Vec<u8>>,
    samples: RttWriter<Vec<u8>>,
}

impl Sink for Collect<'_> {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        let bad = |e: String| io::Error::new(io::ErrorKind::InvalidData, e);
        match e {
            Event::Flow(r) => {
                self.flows.get_mut().clear();
                self.flows.write(r)?;
                let row = read::parse_flow(trim(self.flows.get_mut())).map_err(bad)?;
                self.report.add_flow(row);
            }
            Event::Sample(s) => {
                self.samples.get_mut().clear();
                self.samples.write_sample(s)?;
                let p = read::parse_sample(trim(self.samples.get_mut())).map_err(bad)?;
                self.report.add_sample(p);
            }
        }
        Ok(())
    }
}

fn trim(l: &[u8]) -> &[u8] {
    l.strip_suffix(b"\n").unwrap_or(l)
}
