//! `rampart rules check` and `rampart classify`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Subcommand, ValueEnum};
use rampart_classify::classbench::{parse_rules, parse_trace};
use rampart_classify::{Classifier, Compiled, Header, Rule};

use crate::input::Fail;

/// Rule file formats.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum RuleFormat {
    /// ClassBench filter sets (`@SIP/LEN DIP/LEN SP : SP DP : DP PROTO/MASK FLAGS/MASK`).
    Classbench,
}

/// `rampart rules` subcommands.
#[derive(Subcommand, Debug)]
pub(crate) enum RulesCmd {
    /// Parse a rule file, report the first error with file:line:column, count the rules.
    Check {
        /// The rule file.
        file: PathBuf,
        /// Its format.
        #[arg(long, value_enum, default_value = "classbench")]
        format: RuleFormat,
    },
}

/// Arguments of `rampart classify`.
#[derive(clap::Args, Debug)]
pub(crate) struct ClassifyArgs {
    /// The rule file.
    #[arg(long, value_name = "FILE")]
    rules: PathBuf,
    /// Its format.
    #[arg(long, value_enum, default_value = "classbench")]
    format: RuleFormat,
    /// A ClassBench header trace: print the 0-based index of the first matching rule for each
    /// header, or -1, one per line.
    #[arg(long, value_name = "TRACE")]
    trace: PathBuf,
    /// Instead, print one JSON object: lookup_ns, build_ms, bytes_per_rule, update_us.
    #[arg(long)]
    bench: bool,
}

fn read(path: &Path) -> Result<String, Fail> {
    std::fs::read_to_string(path).map_err(|e| Fail(format!("{}: {e}", path.display()), 2))
}

fn load_rules(path: &Path, _format: RuleFormat) -> Result<Vec<Rule>, Fail> {
    parse_rules(&path.display().to_string(), &read(path)?).map_err(|e| Fail(e.to_string(), 2))
}

pub(crate) fn rules(cmd: RulesCmd) -> ExitCode {
    match cmd {
        RulesCmd::Check { file, format } => match load_rules(&file, format) {
            Ok(rules) => {
                println!("{}: {} rules", file.display(), rules.len());
                ExitCode::SUCCESS
            }
            Err(e) => e.exit(),
        },
    }
}

pub(crate) fn classify(args: ClassifyArgs) -> ExitCode {
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.1 == 0 => ExitCode::SUCCESS,
        Err(e) => e.exit(),
    }
}

fn run(args: &ClassifyArgs) -> Result<(), Fail> {
    let rules = load_rules(&args.rules, args.format)?;
    let trace = parse_trace(&args.trace.display().to_string(), &read(&args.trace)?)
        .map_err(|e| Fail(e.to_string(), 2))?;
    let headers: Vec<Header> = trace.iter().map(|t| t.header).collect();
    let started = Instant::now();
    let compiled = Compiled::new(&rules);
    let build = started.elapsed();
    let mut out = vec![None; headers.len()];
    if args.bench {
        let mut times = Vec::new();
        for _ in 0..7 {
            let t = Instant::now();
            compiled.classify_batch(std::hint::black_box(&headers), &mut out);
            times.push(t.elapsed().as_nanos() as f64 / headers.len().max(1) as f64);
        }
        times.sort_by(f64::total_cmp);
        let stats = compiled.stats();
        let update = update_us(&rules);
        let json = format!(
            "{{\"rules\":{},\"headers\":{},\"lookup_ns\":{:.1},\"build_ms\":{:.2},\"bytes_per_rule\":{:.1},\"update_us\":{:.2}}}",
            rules.len(),
            headers.len(),
            times[times.len() / 2],
            build.as_secs_f64() * 1e3,
            stats.bytes as f64 / rules.len().max(1) as f64,
            update
        );
        return write_lines(std::iter::once(json));
    }
    compiled.classify_batch(&headers, &mut out);
    write_lines(out.iter().map(|o| o.map_or("-1".to_string(), |i| i.to_string())))
}

/// Mean microseconds for one insert or delete to be published, over 2,000 of each at random
/// places in the list.
fn update_us(rules: &[Rule]) -> f64 {
    let mut c = Classifier::new(rules);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let n = 2000;
    let mut total = 0.0;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let i = x as usize % rules.len().max(1);
        let prio = Classifier::initial_priority(i) + 1 + (x >> 44);
        let rule = rules.get((x >> 20) as usize % rules.len().max(1)).copied().unwrap_or(Rule::ANY);
        let t = Instant::now();
        let inserted = c.insert(prio, rule).is_ok();
        if inserted {
            c.delete(prio).expect("just inserted");
        }
        total += t.elapsed().as_secs_f64();
    }
    total * 1e6 / (2 * n) as f64
}

fn write_lines(lines: impl Iterator<Item = String>) -> Result<(), Fail> {
    let mut out = io::BufWriter::new(io::stdout().lock());
    let r = lines.into_iter().try_for_each(|l| writeln!(out, "{l}")).and_then(|()| out.flush());
    match r {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Err(Fail(String::new(), 0)),
        Err(e) => Err(Fail(format!("writing output: {e}"), 1)),
    }
}
