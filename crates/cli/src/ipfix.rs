//! `--ipfix`: every flow record also goes to an IPFIX collector, besides the command's own
//! output (`rampart flows`, `rampart rtt`, `rampart firewall`).

use std::io::{self, Write as _};
use std::time::Duration;

use rampart_engine::FlowRecord;
use rampart_export::ipfix::{self, Config, Exporter, Target};

use crate::Fail;

/// IPFIX options, shared by `flows`, `rtt` and `firewall`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct IpfixArgs {
    /// Also send every flow record to this IPFIX collector (RFC 7011, biflows as RFC 5103):
    /// HOST:PORT or udp://HOST:PORT over UDP, tcp://HOST:PORT over TCP.
    #[arg(long, value_name = "[tcp://]HOST:PORT", value_parser = Target::parse)]
    pub ipfix: Option<Target>,
    /// Over UDP, send the templates again every this many seconds (and every 4,800
    /// messages). Over TCP they are sent once.
    #[arg(long, value_name = "SECONDS", default_value_t = 600, requires = "ipfix",
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub ipfix_template_refresh: u64,
    /// The observation domain id in every IPFIX message header.
    #[arg(long, value_name = "ID", default_value_t = 1, requires = "ipfix")]
    pub ipfix_domain: u32,
    /// Largest IPFIX message, octets: keep it under the path MTU for UDP.
    #[arg(long, value_name = "BYTES", default_value_t = 1400, requires = "ipfix",
          value_parser = clap::value_parser!(u16).range(512..))]
    pub ipfix_mtu: u16,
    /// Enterprise number of rampart's own elements (RTT, application source, Community ID,
    /// Zeek's state and the TCP counters, the firewall's verdict, rule and connection).
    /// The default, 32473, is reserved for documentation (RFC 5612) until rampart has its own.
    #[arg(long, value_name = "PEN", default_value_t = ipfix::DOCUMENTATION_PEN,
          requires = "ipfix", value_parser = clap::value_parser!(u32).range(1..))]
    pub ipfix_pen: u32,
}

/// How long a TCP collector may take to accept the connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Connects to the collector `--ipfix` names, if any. A TCP collector that cannot be reached
/// is a failure (status 2, as an output that cannot be opened); UDP has no connection to
/// fail.
pub(crate) fn open(args: &IpfixArgs) -> Result<Option<Exporter>, Fail> {
    open_with(args, Config::default())
}

/// [`open`], with the element groups `groups` turns on (`tcp`, `firewall`): what the
/// command's records carry beyond the base elements.
pub(crate) fn open_with(args: &IpfixArgs, groups: Config) -> Result<Option<Exporter>, Fail> {
    let Some(target) = args.ipfix.clone() else { return Ok(None) };
    let cfg = Config {
        domain: args.ipfix_domain,
        mtu: usize::from(args.ipfix_mtu),
        pen: args.ipfix_pen,
        template_refresh_secs: args.ipfix_template_refresh,
        ..groups
    };
    Exporter::connect(target, cfg, CONNECT_TIMEOUT).map(Some).map_err(|e| Fail(e.to_string(), 2))
}

/// Exports one record. A TCP failure comes back as an error that [`describe`] recognises; a
/// UDP one is said once, on standard error, and the run goes on.
pub(crate) fn record(x: &mut Exporter, r: &FlowRecord) -> io::Result<()> {
    let sent = x.record(r).map_err(io::Error::other);
    warn(x);
    sent
}

/// Sends what is waiting (after each batch of a live capture, and at the end).
pub(crate) fn flush(x: &mut Exporter) -> io::Result<()> {
    let sent = x.flush().map_err(io::Error::other);
    warn(x);
    sent
}

fn warn(x: &mut Exporter) {
    if let Some(w) = x.take_warning() {
        let _ = writeln!(io::stderr(), "rampart: {w}");
    }
}

/// The error's text when it is an export failure (`IPFIX collector tcp://...: ...`).
pub(crate) fn describe(e: &io::Error) -> Option<String> {
    e.get_ref().and_then(|i| i.downcast_ref::<ipfix::Error>()).map(|e| e.to_string())
}

/// Says why a run's output failed: an export failure names the collector, and the `seen`
/// ("flows", "samples") before it were still written; anything else is an error writing the
/// `output` ("flow records", "RTT samples"; `None` where the error names its file itself).
pub(crate) fn report_failure(e: &io::Error, seen: &str, output: Option<&str>) {
    match (describe(e), output) {
        (Some(export), _) => {
            eprintln!("rampart: {export}");
            eprintln!("rampart: the {seen} seen before that point were written");
        }
        (None, Some(output)) => eprintln!("rampart: writing {output}: {e}"),
        (None, None) => eprintln!("rampart: writing {e}"),
    }
}

/// The collector at the end of a run that ended with `failure` (already reported), if any:
/// what is waiting is sent unless the collector itself failed, with the summary line
/// ([`finish`]) only when the run succeeded. Whether every record went out.
pub(crate) fn end(x: Option<&mut Exporter>, failure: Option<&io::Error>, quiet: bool) -> bool {
    let Some(x) = x else { return true };
    match failure {
        None => finish(x, quiet),
        Some(e) if describe(e).is_some() => false,
        Some(_) => match flush(x) {
            Ok(()) => true,
            Err(e) => {
                eprintln!("rampart: {}", describe(&e).unwrap_or_else(|| e.to_string()));
                false
            }
        },
    }
}

/// Sends what is left and says what was sent: a summary line unless `quiet`, and even then
/// when records were lost. An error (TCP) is printed; the result says whether all went out.
pub(crate) fn finish(x: &mut Exporter, quiet: bool) -> bool {
    let ok = match flush(x) {
        Ok(()) => true,
        Err(e) => {
            eprintln!("rampart: {}", describe(&e).unwrap_or_else(|| e.to_string()));
            false
        }
    };
    let s = x.stats();
    if !quiet || s.lost > 0 {
        let lost = if s.lost > 0 {
            format!(", {} lost (the system refused to send them)", s.lost)
        } else {
            String::new()
        };
        let _ = writeln!(
            io::stderr(),
            "{}ipfix: {} records in {} messages (and {} of templates) to {}{lost}",
            if quiet { "rampart: " } else { "  " },
            s.records,
            s.messages,
            s.template_messages,
            x.target()
        );
    }
    ok
}
