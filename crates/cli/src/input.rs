//! Opening what `-r`/`-i`/`-f` name, shared by the subcommands; refusing to write over the
//! input; and what a run says about its input besides its results: loss on a live interface
//! (while it runs and at the end), the interface's comings and goings, and records it could not
//! take as they are.

use std::io::Write as _;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::Fail;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rampart_capture::live::{DEFAULT_BUFFER, MIN_BUFFER};
use rampart_capture::{
    Capture, ErrorKind, FileAccess, FileId, Filter, LinkState, LinkType, LiveConfig, LiveMonitor,
    LiveStats,
};

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
    /// Bytes kept of each live packet (default: whole packets for `flows`, 144 for `rtt` as
    /// pping).
    #[arg(long, value_name = "BYTES",
          value_parser = clap::value_parser!(u32).range(64..=262_144))]
    pub snaplen: Option<u32>,
    /// Put the interface in promiscuous mode while capturing.
    #[arg(long)]
    pub promisc: bool,
    /// The kernel's capture buffer (the ring), in KiB as tcpdump's -B; with a suffix M or G,
    /// in MiB or GiB. Default 256 MiB, at least 256 KiB.
    #[arg(short = 'B', long = "buffer-size", value_name = "SIZE", value_parser = parse_buffer)]
    pub buffer_size: Option<u64>,
    /// When the interface does not exist or goes away, wait for one of that name and go on
    /// capturing (for daemons) instead of exiting with status 1.
    #[arg(long)]
    pub wait_for_interface: bool,
    /// Exit with status 3 when any packet was dropped (by the kernel or by rampart).
    #[arg(long)]
    pub fail_on_drop: bool,
}

/// A ring size: KiB as tcpdump's `-B`, or with a unit (`K`, `M`, `G`, optionally `iB`).
fn parse_buffer(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "k" | "kib" | "kb" => 10,
        "m" | "mib" | "mb" => 20,
        "g" | "gib" | "gb" => 30,
        _ => return Err(format!("'{s}': a size in KiB, or with a unit K, M or G")),
    };
    let n: u64 = num.parse().map_err(|_| format!("'{s}' is not a size"))?;
    let bytes = n.checked_shl(shift).filter(|b| b >> shift == n).ok_or("too large")?;
    if bytes < MIN_BUFFER {
        return Err(format!("'{s}': the ring takes at least {} KiB", MIN_BUFFER >> 10));
    }
    if bytes > 64 << 30 {
        return Err(format!("'{s}': at most 64 GiB"));
    }
    Ok(bytes)
}

/// `n` and the noun, plural unless `n` is 1 ("1 flow", "2 flows").
pub(crate) fn count(n: u64, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// A run's speed for its summary, when the run was long enough for one to mean something
/// (at least 10 ms and 1,000 packets) and not a live capture, which waits for packets.
pub(crate) fn speed(packets: u64, elapsed: std::time::Duration, live: bool) -> Option<f64> {
    let secs = elapsed.as_secs_f64();
    (!live && secs >= 0.01 && packets >= 1000).then(|| secs * 1e9 / packets as f64)
}

/// Writes to standard output through a buffer, flushed at the end (see [`Fail::write`]).
pub(crate) fn write_stdout(
    f: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), Fail> {
    use std::io::Write as _;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    f(&mut out).and_then(|()| out.flush()).map_err(|e| Fail::write("writing output", &e))
}

/// Opens the source; for a live capture the filter (if any) is also attached in the kernel.
/// `snaplen` is the command's default snap length for live capture; `workers` the threads that
/// will read the frames.
fn open(
    src: &Source,
    live: &LiveArgs,
    snaplen: u32,
    workers: u16,
    filter: Option<&mut Filter>,
) -> Result<Capture, Fail> {
    if let Some(iface) = &src.interface {
        let snaplen = live.snaplen.unwrap_or(snaplen);
        let mut cfg = LiveConfig {
            snaplen,
            promisc: live.promisc,
            program: None,
            buffer_bytes: live.buffer_size.unwrap_or(DEFAULT_BUFFER),
            wait_for_interface: live.wait_for_interface,
        };
        if let Some(f) = filter {
            let link = rampart_capture::live::interface_link(iface).unwrap_or(LinkType::Ethernet);
            cfg.program =
                Some(f.kernel_program(link, snaplen).map_err(|e| Fail(e.to_string(), 2))?);
        }
        return Capture::live(iface, &cfg).map_err(|e| Fail(e.to_string(), 2));
    }
    let path = src.file.as_ref().expect("clap requires -r or -i");
    // Workers read the frames of a mapped file themselves; one thread reads fastest through a
    // buffer (BENCHMARKS.md).
    let access = if workers > 1 { FileAccess::Handed } else { FileAccess::Buffered };
    open_with(path, access)
}

/// Opens a capture file for one thread: exit status 2 when it is no capture, 1 when it cannot
/// be read.
pub(crate) fn open_file(path: &Path) -> Result<Capture, Fail> {
    open_with(path, FileAccess::Buffered)
}

fn open_with(path: &Path, access: FileAccess) -> Result<Capture, Fail> {
    Capture::open_with(path, access).map_err(|e| {
        let code = if e.is_not_a_capture() { 2 } else { 1 };
        Fail(e.to_string(), code)
    })
}

/// Compiles `-f` and opens the source. The filter comes back only for files: a live capture's
/// filter already runs in the kernel. `snaplen` is the command's default live snap length,
/// `workers` the number of threads the frames go to.
pub(crate) fn prepare(
    src: &Source,
    live: &LiveArgs,
    snaplen: u32,
    workers: u16,
    expr: Option<&str>,
) -> Result<(Capture, Option<Filter>), Fail> {
    let mut filter = filter(expr, src)?;
    let capture = open(src, live, snaplen, workers, filter.as_mut())?;
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

/// Whether an output named on the command line is standard output: `-`, as in tcpdump's
/// `-w -` (and as `-r -` reads standard input).
pub(crate) fn is_stdout(p: &Path) -> bool {
    p.as_os_str() == "-"
}

/// An output opened by [`create_output`]: a file or standard output, buffered.
pub(crate) type Output = std::io::BufWriter<Box<dyn std::io::Write + Send>>;

/// Creates (or empties) the output file `p`, or takes standard output for `-`; an error names
/// the file.
pub(crate) fn create_output(p: &Path) -> Result<Output, Fail> {
    let out: Box<dyn std::io::Write + Send> = if is_stdout(p) {
        Box::new(std::io::stdout())
    } else {
        Box::new(std::fs::File::create(p).map_err(|e| Fail(format!("{}: {e}", p.display()), 2))?)
    };
    Ok(std::io::BufWriter::with_capacity(1 << 16, out))
}

/// The name of output `p` in messages: its path, or "standard output" for `-`.
pub(crate) fn output_name(p: &Path) -> String {
    if is_stdout(p) { "standard output".into() } else { p.display().to_string() }
}

/// The file output `out` writes to (standard output's for `None` or `-`), if it exists yet,
/// and its name for messages.
pub(crate) fn output_id(out: Option<&Path>) -> (Option<FileId>, String) {
    match out.filter(|p| !is_stdout(p)) {
        Some(p) => (FileId::of_path(p), p.display().to_string()),
        None => {
            let stdout = std::io::stdout();
            (FileId::of_fd(std::os::fd::AsFd::as_fd(&stdout)), "standard output".to_string())
        }
    }
}

/// Refuses two outputs on standard output: `uses` names each output that would write there
/// (an option given `-`, or one that writes there by default), and more than one is an error
/// naming them.
pub(crate) fn one_stdout(uses: &[&str]) -> Result<(), Fail> {
    match uses {
        [] | [_] => Ok(()),
        _ => Err(Fail(
            format!(
                "{} would all write to standard output; give all but one a file",
                uses.join(", ")
            ),
            2,
        )),
    }
}

/// Refuses an output that is the capture being read, however it is named (another path, a
/// symbolic or hard link): `out`, or standard output when `out` is `None` or `-` and it is a
/// file.
/// Checked before the output is opened, since opening it for writing would empty the input.
pub(crate) fn refuse_overwrite(capture: &Capture, out: Option<&Path>) -> Result<(), Fail> {
    let Some(input) = capture.file_id() else { return Ok(()) };
    let (target, name) = output_id(out);
    if target == Some(input) {
        return Err(Fail(
            format!(
                "{}: the output ({name}) is the input capture itself; refusing to write over it",
                capture.name()
            ),
            2,
        ));
    }
    Ok(())
}

/// Refuses an output file that is one of the input files (by device and inode, so another
/// name or a link is caught too), or standard output when `out` is `None` or `-` and it is
/// one of them. For several inputs, checked before the output is opened.
pub(crate) fn refuse_overwrite_paths(inputs: &[&Path], out: Option<&Path>) -> Result<(), Fail> {
    let (target, name) = output_id(out);
    let Some(target) = target else { return Ok(()) };
    match inputs.iter().find(|p| p.as_os_str() != "-" && FileId::of_path(p) == Some(target)) {
        Some(p) => Err(Fail(
            format!(
                "{}: the output ({name}) is this input capture itself; refusing to write over it",
                p.display()
            ),
            2,
        )),
        None => Ok(()),
    }
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

/// `rtt -i` on a loopback interface without `-l`: every packet is addressed to a local
/// address, so none would be timed. Says so, once, before capturing.
pub(crate) fn note_loopback(src: &Source, show_local: bool) {
    if let Some(iface) = &src.interface
        && !show_local
        && rampart_capture::live::is_loopback(iface)
    {
        eprintln!(
            "rampart: {iface} is a loopback interface: both ends of every connection on it are \
             local addresses, which are not timed without -l (--showLocal); add -l to time them"
        );
    }
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

/// Reports on a live capture while it runs: loss as it happens (at most one line per
/// [`Watch::EVERY`] while the kernel keeps dropping) and the interface going down, up, away
/// and back. A link is called down once it has stayed down from one look to the next (an
/// interface being deleted goes down first, and is then only said to have gone away). Its
/// [`Watch::tick`] is cheap enough to call for every batch; it does nothing for files.
pub(crate) struct Watch {
    monitor: Option<Arc<LiveMonitor>>,
    name: String,
    last_look: Instant,
    last_report: Option<(Instant, u64)>,
    seen: LiveStats,
    /// "link down" was said, and "link up" is owed.
    down_said: bool,
}

impl Watch {
    /// The shortest time between two loss lines.
    const EVERY: Duration = Duration::from_secs(10);

    pub(crate) fn new(capture: &Capture) -> Self {
        let monitor = capture.live_monitor();
        let seen = monitor.as_ref().map(|m| m.stats()).unwrap_or(LiveStats {
            received: 0,
            kernel_dropped: 0,
            rampart_dropped: 0,
            freezes: 0,
            ring_bytes: 0,
            state: LinkState::Up,
            lost: 0,
            found: 0,
        });
        let w = Self {
            monitor,
            name: capture.name().to_string(),
            last_look: Instant::now(),
            last_report: None,
            seen,
            down_said: false,
        };
        if w.seen.state == LinkState::Gone {
            w.say("no such interface yet; waiting for it (--wait-for-interface)");
        }
        w
    }

    fn say(&self, what: &str) {
        let _ = writeln!(std::io::stderr(), "rampart: {}: {what}", self.name);
    }

    /// Looks at the counters (at most every 200 ms) and says what changed.
    pub(crate) fn tick(&mut self) {
        let Some(m) = &self.monitor else { return };
        if self.last_look.elapsed() < Duration::from_millis(200) {
            return;
        }
        self.last_look = Instant::now();
        let now = m.stats();
        let was = std::mem::replace(&mut self.seen, now);
        if now.lost > was.lost {
            self.say("the interface went away; waiting for an interface of that name");
        }
        if now.found > was.found {
            self.say("the interface is back; capturing again");
            self.down_said = false;
        } else {
            match (was.state, now.state) {
                (LinkState::Down, LinkState::Down) if !self.down_said => {
                    self.say("link down; capturing again when it comes up");
                    self.down_said = true;
                }
                (LinkState::Down, LinkState::Up) if self.down_said => {
                    self.say("link up");
                    self.down_said = false;
                }
                _ => {}
            }
        }
        let drops = now.kernel_dropped + now.rampart_dropped;
        let before = self.last_report.map_or(0, |(_, d)| d);
        let due = self.last_report.is_none_or(|(t, _)| t.elapsed() >= Self::EVERY);
        if drops > before && due {
            let since = match self.last_report {
                Some((t, _)) => format!("in the last {:.0} s", t.elapsed().as_secs_f64()),
                None => "so far".to_string(),
            };
            self.say(&format!(
                "dropping packets: {} lost {since} ({} by the kernel and {} by rampart in all, \
                 of {} received); the ring is {} (-B sets it)",
                drops - before,
                now.kernel_dropped,
                now.rampart_dropped,
                now.received,
                mib(now.ring_bytes)
            ));
            self.last_report = Some((Instant::now(), drops));
        }
    }
}

fn mib(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

/// How [`report_end`] gives a live capture's counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tell {
    /// As a line of the summary just printed.
    Summary,
    /// As a line of its own (no summary was printed).
    Alone,
    /// Only if packets were dropped (`-q`).
    Quiet,
}

/// What a command says when its run ends: for a live capture, the packets received and those
/// dropped by the kernel and by rampart (see [`Tell`]: even `-q` gets one line when any were
/// dropped); for any capture, the records it could not take as they are, once each. Returns
/// whether packets were dropped.
pub(crate) fn report_end(capture: &mut Capture, tell: Tell) -> bool {
    let mut err = std::io::stderr().lock();
    let name = capture.name().to_string();
    let mut dropped = false;
    if let Some(m) = capture.live_monitor() {
        let _ = capture.kernel_stats();
        let s = m.stats();
        dropped = s.kernel_dropped + s.rampart_dropped > 0;
        let line = format!(
            "{} packets received, {} dropped by the kernel, {} dropped by rampart",
            s.received, s.kernel_dropped, s.rampart_dropped
        );
        match tell {
            Tell::Summary => {
                let _ = writeln!(err, "  capture: {line}; ring {}", mib(s.ring_bytes));
            }
            Tell::Quiet if !dropped => {}
            Tell::Alone | Tell::Quiet => {
                let _ = writeln!(err, "rampart: {name}: {line}");
            }
        }
    }
    let st = capture.record_stats();
    for (link, n) in &st.unsupported {
        let _ = writeln!(
            err,
            "rampart: {name}: {n} frame{} of link type {link}{} not analysed: rampart does not \
             parse that link type",
            plural(*n),
            link_name(*link).map(|s| format!(" ({s})")).unwrap_or_default()
        );
    }
    if st.over_snaplen > 0 {
        let _ = writeln!(
            err,
            "rampart: {name}: {} record{} longer than the snap length the file declares, read \
             whole (libpcap reads records up to 256 KiB)",
            st.over_snaplen,
            plural(st.over_snaplen)
        );
    }
    if st.origlen_short + st.origlen_absurd > 0 {
        let _ = writeln!(
            err,
            "rampart: {name}: {} record{} with an original length below the captured length \
             and {} above 1 MiB: their captured length was counted instead",
            st.origlen_short,
            plural(st.origlen_short),
            st.origlen_absurd
        );
    }
    dropped
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Names of common link types rampart does not parse (tcpdump.org's LINKTYPE_ registry).
fn link_name(link: u32) -> Option<&'static str> {
    Some(match link {
        6 => "IEEE 802.5 Token Ring",
        9 => "PPP",
        10 => "FDDI",
        50 => "PPP in HDLC framing",
        51 => "PPPoE",
        104 => "Cisco HDLC",
        105 => "IEEE 802.11",
        107 => "Frame Relay",
        119 => "Prism 802.11",
        127 => "802.11 radiotap",
        147..=162 => "user-defined",
        187 => "Bluetooth HCI H4",
        189 => "USB (Linux)",
        192 => "PPI",
        195 => "IEEE 802.15.4",
        201 => "Bluetooth HCI with direction",
        204 => "PPP with direction",
        215 => "IEEE 802.15.4 (non-ASK PHY)",
        220 => "USB (Linux, memory-mapped)",
        227 => "SocketCAN",
        231 => "D-Bus",
        249 => "USBPcap",
        253 => "Netlink",
        _ => return None,
    })
}

/// The exit status for a run that otherwise succeeded: 3 when packets were dropped and
/// `--fail-on-drop` asks for it.
pub(crate) fn drop_status(live: &LiveArgs, dropped: bool) -> ExitCode {
    if dropped && live.fail_on_drop { ExitCode::from(3) } else { ExitCode::SUCCESS }
}

/// Prints the error that stopped a run, then what was still written (`what`: "flows",
/// "samples"). A live interface that went away takes one line, naming it.
pub(crate) fn print_run_error(e: &rampart_engine::RunError, what: &str) {
    if let rampart_engine::RunError::Capture(c) = e
        && matches!(c.kind, ErrorKind::InterfaceGone)
    {
        eprintln!("rampart: {e}; every {} seen was written", what.trim_end_matches('s'));
        return;
    }
    eprintln!("rampart: {e}");
    eprintln!("rampart: the {what} seen before that point were written");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_sizes_as_tcpdump_with_units() {
        assert_eq!(parse_buffer("4096"), Ok(4 << 20));
        assert_eq!(parse_buffer("256"), Ok(256 << 10));
        assert_eq!(parse_buffer("512K"), Ok(512 << 10));
        assert_eq!(parse_buffer("64M"), Ok(64 << 20));
        assert_eq!(parse_buffer("64MiB"), Ok(64 << 20));
        assert_eq!(parse_buffer("2g"), Ok(2 << 30));
        assert!(parse_buffer("100").unwrap_err().contains("at least 256 KiB"));
        assert!(parse_buffer("65G").unwrap_err().contains("at most"));
        assert!(parse_buffer("12T").is_err());
        assert!(parse_buffer("-1").is_err());
        assert!(parse_buffer("").is_err());
        assert!(parse_buffer("99999999999999999999").is_err());
    }

    #[test]
    fn ring_sizes_print_in_mib_or_kib() {
        assert_eq!(mib(256 << 20), "256 MiB");
        assert_eq!(mib(256 << 10), "256 KiB");
        assert_eq!(mib((1 << 20) + (512 << 10)), "1536 KiB");
    }
}
