//! The `rampart` command.
#![forbid(unsafe_code)]

mod bench;
mod classify;
mod dpi;
mod firewall;
mod flows;
mod input;
mod ipfix;
mod metrics;
mod nkpl;
mod report;
mod rss;
mod rtt;
mod run;
mod verify;

use std::io;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use rampart_classify::load::LoadError;
use rampart_classify::source::SourceError;
use rampart_policy::load::VerifyError;

/// mimalloc rather than the system allocator: the verifier's decision diagrams allocate a
/// small edge list per node and free them all at the end, and spend a third of their time in
/// glibc's malloc and free otherwise (BENCHMARKS.md); the packet paths do not allocate.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// rampart: a stateful firewall and flow-telemetry engine.
#[derive(Parser)]
#[command(name = "rampart", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Summarise a capture as one record per flow (JSON lines or CSV on standard output).
    Flows(flows::Args),
    /// Passive TCP round-trip times from a capture or an interface (pping's options).
    Rtt(rtt::Args),
    /// Toeplitz RSS: hashes, queues, local ports for a queue, a capture's queue balance.
    #[command(subcommand)]
    Rss(rss::Cmd),
    /// Rule files: check them.
    #[command(subcommand)]
    Rules(classify::RulesCmd),
    /// Classify a ClassBench header trace against a rule file (or benchmark it).
    Classify(classify::ClassifyArgs),
    /// Apply a firewall rule set to a capture: write what it accepts, count hits per rule.
    Filter(classify::FilterArgs),
    /// A stateful firewall (connection tracking and an nftables, iptables or rampart rule
    /// set) over the captures of a router's ports: a verdict per packet, reloads, what-if.
    Firewall(firewall::Args),
    /// The stateful firewall inline: a transparent bridge between pairs of interfaces that
    /// forwards what the rule set accepts (reload with SIGHUP or `rampart reload`).
    Run(run::Args),
    /// Reload the rule set of a running `rampart run` (read, proved, swapped; connections
    /// kept; a file that does not load changes nothing).
    Reload(run::ControlArgs),
    /// The live counters of a running `rampart run`, per worker.
    Status(run::ControlArgs),
    /// Questions about rule sets: a packet's fate, shadowed rules, differences, search.
    #[command(subcommand)]
    Verify(verify::VerifyCmd),
    /// Application identification: label each flow of a capture, list what is recognised.
    #[command(subcommand)]
    Dpi(dpi::Cmd),
    /// One self-contained HTML page (SVG charts, no script, nothing fetched) about a capture
    /// or flow records: RTT over time and per flow and host, top talkers, applications, TCP
    /// flags, end reasons, verdicts and rule hits.
    Report(report::Args),
    /// Where the time of `rampart flows` and `rampart rtt` goes on a capture: CPU time per
    /// packet of each step (walk, parse, key and hash, table, each stage, output).
    Bench(bench::Args),
    /// (Internal) Detaches the AF_XDP programs of a `rampart run` that dropped its
    /// privileges once that process has ended: reads `IFINDEX PROGRAM-ID` lines up to `end`
    /// from standard input, then waits for it to close.
    #[command(name = "xdp-release", hide = true)]
    XdpRelease,
}

fn main() -> ExitCode {
    // A reader that closes the pipe (`| head`) has seen enough: whichever command was
    // printing, rampart stops there, silently, with status 0. Writes that return errors map a
    // broken pipe to that too ([`closed_pipe`]); `println!` panics on one, and this catches it.
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // Only the print macros' own panic on a closed standard output or error.
        let text = info.payload_as_str().unwrap_or("");
        if text.starts_with("failed printing to std") && text.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Flows(args) => flows::run(args),
        Command::Rtt(args) => rtt::run(args),
        Command::Rss(cmd) => rss::run(cmd),
        Command::Rules(cmd) => classify::rules(cmd),
        Command::Classify(args) => classify::classify(args),
        Command::Filter(args) => classify::filter(args),
        Command::Firewall(args) => firewall::run(args),
        Command::Run(args) => run::run(args),
        Command::Reload(args) => run::control(&args, "reload"),
        Command::Status(args) => run::control(&args, "status"),
        Command::Verify(cmd) => verify::run(cmd),
        Command::Dpi(cmd) => dpi::run(cmd),
        Command::Report(args) => report::run(args),
        Command::Bench(args) => bench::run(args),
        Command::XdpRelease => run::xdp_release(),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            e.say();
            ExitCode::from(e.1)
        }
    }
}

/// A failure that ends a command: the message, and the exit status (0: a reader closed the
/// pipe, nothing to say). The statuses: 1 a run that failed (an input that cannot be read, an
/// output that cannot be written, a collector gone), 2 a usage error (bad arguments, a file
/// that is not what it should be), 3 a proof that failed (a packet the verifier and the
/// classifier disagree on) or packets dropped under `--fail-on-drop`.
pub(crate) struct Fail(pub String, pub u8);

impl Fail {
    /// Says why on standard error, unless the status is 0 (a reader that closed the pipe).
    pub(crate) fn say(&self) {
        if self.1 != 0 {
            eprintln!("rampart: {}", self.0);
        }
    }

    /// A failure to write standard output or a file: `what` and the error, exit 1; a closed
    /// pipe ([`closed_pipe`]) is a silent exit 0.
    pub(crate) fn write(what: &str, e: &io::Error) -> Self {
        if closed_pipe(e) { Fail(String::new(), 0) } else { Fail(format!("{what}: {e}"), 1) }
    }
}

/// Whether an output failed because its reader closed the pipe (`| head`): how readers say
/// they have seen enough, so rampart stops there with status 0 and says nothing.
pub(crate) fn closed_pipe(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}

/// The status of a run whose output failed with `e`: 0 for a closed pipe, else 1.
pub(crate) fn output_status(e: &io::Error) -> ExitCode {
    if closed_pipe(e) { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// The status of a run the engine stopped with `e`: 2 for a usage error (an input that is
/// no capture, a link type not parsed), else 1.
pub(crate) fn run_error_status(e: &rampart_engine::RunError) -> u8 {
    if e.is_usage() { 2 } else { 1 }
}

/// A rule file that cannot be read as text: a usage error.
impl From<SourceError> for Fail {
    fn from(e: SourceError) -> Self {
        Fail(e.to_string(), 2)
    }
}

/// A rule file that cannot be read, parsed or lowered: a usage error.
impl From<LoadError> for Fail {
    fn from(e: LoadError) -> Self {
        Fail(e.to_string(), 2)
    }
}

/// The verifier's failures: a rule file (or a rule it cannot model) is a usage error, a
/// disagreement with the classifier a failed proof (3), a diagram too large no answer (1).
impl From<VerifyError> for Fail {
    fn from(e: VerifyError) -> Self {
        let status = match &e {
            VerifyError::Load(_) | VerifyError::Mixed | VerifyError::Unmodelled(_) => 2,
            VerifyError::Disagree(_) => 3,
            VerifyError::GaveUp(_) => 1,
        };
        Fail(e.to_string(), status)
    }
}
