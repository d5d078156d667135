//! `rampart bench`: where the time of `rampart flows` and `rampart rtt` goes on a capture,
//! step by step ([`rampart_engine::breakdown`]).

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueEnum;
use rampart_capture::Capture;
use rampart_engine::breakdown::{self, Step, Timing};
use rampart_engine::{Event, FlowFn, FlowRecord, FlowsConfig, Sink};
use rampart_export::rtt::{RttFormat, RttWriter};
use rampart_export::{FlowFormat, FlowWriter, Schema};
use rampart_rtt::RttConfig;

use crate::Fail;

/// Which command's chain to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Which {
    /// `rampart flows -o /dev/null` (every stage on, JSON records).
    Flows,
    /// `rampart rtt -m` (RTT samples in pping's machine format).
    Rtt,
    /// Both.
    Both,
}

/// `rampart bench`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// The capture (pcap or pcapng), best page-cached: it is read once per step and pass.
    #[arg(short = 'r', long = "read", value_name = "FILE")]
    file: PathBuf,
    /// Which command's steps to measure.
    #[arg(long, value_enum, default_value = "both")]
    command: Which,
    /// Counted passes over every step (after one warm-up pass); figures are their medians.
    #[arg(long, value_name = "N", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    passes: u32,
    /// One JSON object on standard output instead of a table.
    #[arg(long)]
    json: bool,
}

/// The rtt chain's output: every sample in pping's machine format, as `rtt -m` writes them.
struct SampleOut(RttWriter<BufWriter<io::Sink>>);

impl Sink for SampleOut {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        match e {
            Event::Sample(s) => self.0.write_sample(s),
            Event::Flow(_) => Ok(()),
        }
    }
}

/// What `rampart rtt` runs by default (its table, RTT in hybrid mode, samples out, TCP only).
fn rtt_config() -> FlowsConfig {
    FlowsConfig {
        samples: true,
        dpi: None,
        tcp_only: true,
        tcp_stats: false,
        // The machine format prints pping's byte columns.
        rtt: Some(RttConfig::default()),
        ..FlowsConfig::default()
    }
}

pub(crate) fn run(args: Args) -> Result<ExitCode, Fail> {
    let mut chains: Vec<(&str, Vec<Step>)> = Vec::new();
    if args.command != Which::Rtt {
        chains.push(("flows", breakdown::flows_steps(&FlowsConfig::default())));
    }
    if args.command != Which::Flows {
        chains.push(("rtt", breakdown::rtt_steps(&rtt_config())));
    }
    let name = args.file.display().to_string();
    let mut open = || Capture::open(&args.file);
    // Named before any pass: a file that is no capture stops here.
    open().map_err(|e| Fail(e.to_string(), 2))?;
    let mut results = Vec::new();
    for (command, steps) in &chains {
        let t = breakdown::measure(&mut open, steps, args.passes as usize, &mut |step| {
            let sink: Box<dyn Sink> = match *command {
                "flows" => {
                    // JSON records, as `flows -o /dev/null` writes them.
                    let format = FlowFormat::Json;
                    let w = BufWriter::with_capacity(1 << 16, io::sink());
                    let mut w = FlowWriter::with_schema(w, format, Schema::default_for(format));
                    Box::new(FlowFn(move |r: &FlowRecord| w.write(r)))
                }
                _ => {
                    let w = BufWriter::with_capacity(1 << 20, io::sink());
                    Box::new(SampleOut(RttWriter::new(w, RttFormat::Machine)))
                }
            };
            debug_assert!(step.output);
            sink
        })
        .map_err(|e| Fail(e.to_string(), 1))?;
        results.push((*command, t));
    }
    let mut out = io::stdout().lock();
    let packets = results.first().and_then(|(_, t)| t.first()).map_or(0, |s| s.packets);
    let report = Report { name: &name, packets, passes: args.passes, results: &results };
    let r = if args.json { json(&mut out, &report) } else { table(&mut out, &report) };
    match r.and_then(|()| out.flush()) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if crate::closed_pipe(&e) => Ok(ExitCode::SUCCESS),
        Err(e) => Err(Fail(format!("standard output: {e}"), 1)),
    }
}

/// Each step's median, what it adds to the step before it, and the spread of its passes.
fn rows(t: &[Timing]) -> Vec<(&'static str, f64, f64, f64, f64)> {
    let mut prev = 0.0;
    t.iter()
        .map(|s| {
            let m = s.median();
            let lo = s.ns.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = s.ns.iter().copied().fold(0.0, f64::max);
            let r = (s.name, m, m - prev, lo, hi);
            prev = m;
            r
        })
        .collect()
}

/// What a run measured: the file, its packets, the passes, each chain's steps.
struct Report<'a> {
    name: &'a str,
    packets: u64,
    passes: u32,
    results: &'a [(&'a str, Vec<Timing>)],
}

fn table(out: &mut impl Write, r: &Report<'_>) -> io::Result<()> {
    let &Report { name, packets, passes, results } = r;
    writeln!(
        out,
        "{name}: {packets} packets; CPU time per packet, median of {passes} passes \
         (each step includes the ones above it)"
    )?;
    for (command, t) in results {
        let total = t.last().map_or(f64::NAN, Timing::median);
        writeln!(out)?;
        writeln!(
            out,
            "{command:<16} {:>10} {:>10} {:>7} {:>17}",
            "ns/packet", "step", "share", "passes (min-max)"
        )?;
        for (step, m, add, lo, hi) in rows(t) {
            writeln!(
                out,
                "  {step:<14} {m:>10.1} {add:>10.1} {:>6.0}% {:>8.1}-{:<8.1}",
                100.0 * add / total,
                lo,
                hi
            )?;
        }
    }
    Ok(())
}

fn json(out: &mut impl Write, r: &Report<'_>) -> io::Result<()> {
    let &Report { name, packets, passes, results } = r;
    write!(out, "{{\"file\":{},\"packets\":{packets},\"passes\":{passes}", quote(name))?;
    for (command, t) in results {
        write!(out, ",\"{command}\":[")?;
        for (i, (row, s)) in rows(t).into_iter().zip(t).enumerate() {
            let (step, m, add, _, _) = row;
            let runs: Vec<String> = s.ns.iter().map(|v| format!("{v:.2}")).collect();
            write!(
                out,
                "{}{{\"step\":\"{step}\",\"ns_per_packet\":{m:.2},\"added\":{add:.2},\"passes\":[{}]}}",
                if i > 0 { "," } else { "" },
                runs.join(",")
            )?;
        }
        write!(out, "]")?;
    }
    writeln!(out, "}}")
}

/// `s` as a JSON string.
fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            c if (c as u32) < 0x20 => q.push_str(&format!("\\u{:04x}", c as u32)),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_names_are_quoted() {
        assert_eq!(quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }

    #[test]
    fn rows_give_what_each_step_adds() {
        let t = vec![
            Timing { name: "walk", packets: 10, ns: vec![2.0, 1.0, 3.0] },
            Timing { name: "parse", packets: 10, ns: vec![5.0, 4.0, 6.0] },
        ];
        let r = rows(&t);
        assert_eq!(r[0], ("walk", 2.0, 2.0, 1.0, 3.0));
        assert_eq!(r[1], ("parse", 5.0, 3.0, 4.0, 6.0));
    }
}
