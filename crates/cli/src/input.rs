//! Opening what `-r`/`-i`/`-f` name, shared by the subcommands.

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rampart_capture::{Capture, Filter, LinkType, LiveConfig};

/// Where packets come from.
#[derive(clap::Args, Debug, Clone)]
#[group(required = true, multiple = false)]
pub(crate) struct Source {
    /// Capture file to read (pcap or pcapng); `-` reads standard input.
    #[arg(short = 'r', long = "read", value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Capture live from this interface (AF_PACKET; needs CAP_NET_RAW).
    #[arg(short = 'i', long = "interface", value_name = "IFACE")]
    pub interface: Option<String>,
}

/// Live-capture options.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct LiveArgs {
    /// Bytes kept of each live packet.
    #[arg(long, value_name = "BYTES", default_value_t = 144,
          value_parser = clap::value_parser!(u32).range(64..=262_144))]
    pub snaplen: u32,
    /// Put the interface in promiscuous mode while capturing.
    #[arg(long)]
    pub promisc: bool,
}

/// A failure before any packet was read: the message, and the exit status.
pub(crate) struct Fail(pub String, pub u8);

impl Fail {
    pub(crate) fn exit(self) -> ExitCode {
        eprintln!("rampart: {}", self.0);
        ExitCode::from(self.1)
    }
}

/// Opens the source; for a live capture the filter (if any) is also attached in the kernel.
fn open(src: &Source, live: &LiveArgs, filter: Option<&mut Filter>) -> Result<Capture, Fail> {
    if let Some(iface) = &src.interface {
        let mut cfg = LiveConfig { snaplen: live.snaplen, promisc: live.promisc, program: None };
        if let Some(f) = filter {
            let link = rampart_capture::live::interface_link(iface).unwrap_or(LinkType::Ethernet);
            cfg.program =
                Some(f.kernel_program(link, live.snaplen).map_err(|e| Fail(e.to_string(), 2))?);
        }
        return Capture::live(iface, &cfg).map_err(|e| Fail(e.to_string(), 2));
    }
    let path = src.file.as_ref().expect("clap requires -r or -i");
    Capture::open(path).map_err(|e| {
        let code = if e.is_not_a_capture() { 2 } else { 1 };
        Fail(e.to_string(), code)
    })
}

/// Compiles `-f` and opens the source. The filter comes back only for files: a live capture's
/// filter already runs in the kernel.
pub(crate) fn prepare(
    src: &Source,
    live: &LiveArgs,
    expr: Option<&str>,
) -> Result<(Capture, Option<Filter>), Fail> {
    let mut filter = filter(expr, src)?;
    let capture = open(src, live, filter.as_mut())?;
    Ok(if capture.is_live() { (capture, None) } else { (capture, filter) })
}

/// Compiles `-f` for the link type the capture will most likely show (Ethernet), so a bad
/// expression is reported before anything is read.
fn filter(expr: Option<&str>, src: &Source) -> Result<Option<Filter>, Fail> {
    let Some(expr) = expr else { return Ok(None) };
    let link = src
        .interface
        .as_deref()
        .and_then(rampart_capture::live::interface_link)
        .unwrap_or(LinkType::Ethernet);
    Filter::new(expr, link).map(Some).map_err(|e| Fail(e.to_string(), 2))
}

/// The addresses of a live interface (for the local filter); empty for files.
pub(crate) fn local_addresses(src: &Source) -> Vec<IpAddr> {
    src.interface.as_deref().map(rampart_capture::live::interface_addresses).unwrap_or_default()
}

/// What the process holds, from `/proc/self/status`.
pub(crate) struct ProcessMemory {
    /// Peak resident set (bytes).
    pub peak: usize,
    /// Resident pages that are mapped files now (bytes): a mapped capture counts here.
    pub file: usize,
}

/// The process's peak resident memory and its file-backed part, where the system says
/// (Linux); `None` elsewhere.
pub(crate) fn process_memory() -> Option<ProcessMemory> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<usize> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        let kb: usize = line[name.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kb * 1024)
    };
    Some(ProcessMemory { peak: field("VmHWM:")?, file: field("RssFile:").unwrap_or(0) })
}

/// A stop flag set by Ctrl-C (or SIGTERM); a second one exits at once.
pub(crate) fn stop_flag() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let _ = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::Relaxed) {
            std::process::exit(130);
        }
    });
    stop
}
