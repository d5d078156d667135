//! `rampart run`: the stateful firewall inline, a transparent bridge between pairs of
//! interfaces; `rampart reload` and `rampart status` talk to it through its control socket.
//!
//! Start-up goes in an order that never forwards half-configured: the configuration is read
//! and checked, the rule set loaded and proved (the compiled classifier equals its rules),
//! the interfaces checked (no addresses, no forwarding, up), the outputs and every port of
//! every worker opened, the control socket bound; then privileges are dropped to `--user`
//! and only then do the workers start. Anything that fails before says what and exits 2.
//!
//! The data plane is `rampart firewall`'s (the same `Pipeline` with connection tracking and
//! the rule set), driven by `rampart_engine::inline`. A reload (SIGHUP, or `rampart reload`)
//! reads and proves the rule file on the control thread, off the packet path, and publishes
//! it; each worker takes it between two batches and keeps its connections. A file that does
//! not load or prove changes nothing.
//!
//! Failure is closed: the ports are address-less, so when rampart stops nothing crosses.
//! `--fail-open` lets new connections through untracked when the connection table is full,
//! and frames through undecided while a worker falls behind (each counted), for links where
//! availability matters more.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, BufRead, BufReader, Write};
use std::net::IpAddr;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::ValueEnum;
use rampart_capture::{Frame, PacketPair, PairConfig, Timestamp, XdpConfig, XdpPair};
use rampart_engine::inline::{InlineConfig, InlineEnd, Ports, RuleSlot, WorkerBoard, run_inline};
use rampart_engine::replay::FirewallSink;
use rampart_engine::stateful::{Decided, Routes, RuleSet, Stateful, StatefulConfig};
use rampart_engine::{FlowRecord, FlowsConfig, Pipeline, Summary, Verdict};
use rampart_export::{FlowFormat, FlowWriter};
use rampart_flow::TableConfig;

use crate::Fail;
use crate::classify::{RuleFormat, RuleSource};
use crate::firewall::{Counts, Named, Out, Published};
use crate::ipfix::{self, IpfixArgs};
use crate::metrics::{Metrics, MetricsArgs, lock};

/// The control socket when none is given.
const DEFAULT_CONTROL: &str = "/run/rampart.sock";

/// Arguments of `rampart run`. Every option is also a key of the `--config` file (the
/// option's long name: `rules = "fw.nft"`, `pair = ["eth1:eth2"]`, `ct-max = 100000`,
/// `[ct]` with `tcp_loose = 0`); an option given on the command line wins over the file.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// A TOML file of settings (keys as the long options; relative paths in it are from
    /// the file's directory).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The rule set (nftables, iptables-save or rampart syntax). Its forward chains see
    /// every packet crossing a pair.
    #[arg(long, value_name = "FILE")]
    rules: Option<PathBuf>,
    #[command(flatten)]
    source: RuleSource,
    /// Two interfaces to bridge (no addresses, forwarding off); give more than one pair to
    /// bridge each. Rules name them with `iifname` and `oifname`.
    #[arg(long, value_name = "IF1:IF2")]
    pair: Vec<String>,
    /// How frames are received and sent: `af_packet` (the default) or `af_xdp`.
    #[arg(long, value_name = "DRIVER", value_parser = ["af_packet", "af_xdp"])]
    driver: Option<String>,
    /// Worker threads per pair (default 1); the kernel's symmetric flow hash sends both
    /// directions of a flow to the same worker, which keeps its share of the connections.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    workers: Option<u16>,
    /// Most connections tracked at once, shared out evenly over the workers
    /// (`nf_conntrack_max`; default 262,144).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(16..=1 << 32))]
    ct_max: Option<u64>,
    /// A conntrack setting by its sysctl name (`tcp_loose=0`, `tcp_timeout_established=86400`,
    /// ...), as `rampart firewall --ct`.
    #[arg(long = "ct", value_name = "NAME=VALUE")]
    ct: Vec<String>,
    /// Fail open (each case counted): `table-full` lets a new connection that finds the
    /// connection table full through untracked instead of dropping it; `overload` forwards
    /// frames undecided while a worker's receive ring is more than half full instead of
    /// letting it overflow; `all` (the value when none is given) both.
    #[arg(long, value_name = "WHEN", num_args = 0..=1, default_missing_value = "all",
          value_parser = ["all", "table-full", "overload"])]
    fail_open: Option<String>,
    /// Flow records (JSON lines, as `rampart firewall -o`), written as flows end (`-`:
    /// standard output).
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// One JSON line per frame decided (as `rampart firewall --log`; `-`: standard output).
    #[arg(long, value_name = "FILE", conflicts_with = "drop_log")]
    log: Option<PathBuf>,
    /// One JSON line per frame dropped or rejected (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    drop_log: Option<PathBuf>,
    /// The control socket `rampart reload` and `rampart status` use (mode 0600; default
    /// /run/rampart.sock).
    #[arg(long, value_name = "PATH")]
    control: Option<PathBuf>,
    /// The user to run as once every socket is open (default `nobody`; `root` keeps root).
    #[arg(long, value_name = "NAME")]
    user: Option<String>,
    /// Application identification for `app` rules and the records: `rampart` or `off`.
    #[arg(long, value_name = "WHICH", value_parser = ["rampart", "off"])]
    dpi: Option<String>,
    /// Receive ring per interface and worker, in MiB (default 64).
    #[arg(short = 'B', long = "buffer-size", value_name = "MIB",
          value_parser = clap::value_parser!(u64).range(1..=65_536))]
    buffer_size: Option<u64>,
    /// Most frames taken from the receive rings and decided together (default 256; from 1
    /// to 4,096). Fewer shortens the time a frame waits for its batch; more wakes the
    /// kernel to transmit less often.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=4096))]
    batch: Option<u16>,
    /// Check the configuration and the rule set (and prove it) without touching an
    /// interface, then exit.
    #[arg(long)]
    check: bool,
    /// No summary on standard error.
    #[arg(short, long)]
    quiet: bool,
    #[command(flatten)]
    ipfix: IpfixArgs,
    #[command(flatten)]
    metrics: MetricsArgs,
}

/// The `--config` file: the options by their long names.
#[derive(serde::Deserialize, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct FileConfig {
    rules: Option<PathBuf>,
    format: Option<String>,
    chain: Option<String>,
    sets: Option<PathBuf>,
    pair: Option<Vec<String>>,
    driver: Option<String>,
    workers: Option<u16>,
    ct_max: Option<u64>,
    ct: Option<BTreeMap<String, u64>>,
    fail_open: Option<String>,
    output: Option<PathBuf>,
    log: Option<PathBuf>,
    drop_log: Option<PathBuf>,
    control: Option<PathBuf>,
    user: Option<String>,
    dpi: Option<String>,
    buffer_size: Option<u64>,
    batch: Option<u16>,
    quiet: Option<bool>,
    ipfix: Option<String>,
    metrics: Option<String>,
}

/// Arguments of `rampart reload` and `rampart status`.
#[derive(clap::Args, Debug)]
pub(crate) struct ControlArgs {
    /// The control socket of the running `rampart run`.
    #[arg(long, value_name = "PATH", default_value = DEFAULT_CONTROL)]
    control: PathBuf,
}

/// Settings after the file and the command line are merged and checked.
struct Settings {
    rules: PathBuf,
    source: RuleSource,
    pairs: Vec<(String, String)>,
    driver: String,
    workers: usize,
    ct_max: u64,
    ct: Vec<String>,
    /// Fail open when the table is full, and under overload.
    fail_open: (bool, bool),
    output: Option<PathBuf>,
    log: Option<(PathBuf, bool)>,
    control: PathBuf,
    user: String,
    dpi: bool,
    buffer_mib: u64,
    batch: usize,
    quiet: bool,
    check: bool,
}

pub(crate) fn run(args: Args) -> Result<ExitCode, Fail> {
    go(args)
}

/// Reads the configuration file (if any) under the command line's options.
fn settings(mut a: Args) -> Result<(Settings, IpfixArgs, MetricsArgs), Fail> {
    let mut f = FileConfig::default();
    let mut base = PathBuf::new();
    if let Some(p) = &a.config {
        let text =
            std::fs::read_to_string(p).map_err(|e| Fail(format!("{}: {e}", p.display()), 2))?;
        f = toml::from_str(&text)
            .map_err(|e| Fail(format!("{}: {}", p.display(), e.to_string().trim_end()), 2))?;
        base = p.parent().map(Path::to_path_buf).unwrap_or_default();
    }
    // Paths in the file are relative to it; an output named `-` (standard output) stays
    // itself.
    let rel = |p: PathBuf| if p.is_relative() { base.join(p) } else { p };
    let rel_out = |p: PathBuf| if crate::input::is_stdout(&p) { p } else { rel(p) };
    let rules = a.rules.take().or(f.rules.map(rel)).ok_or_else(|| {
        Fail("no rule set: give --rules FILE (or `rules` in the --config file)".into(), 2)
    })?;
    let mut source = a.source.clone();
    if source.format.is_none()
        && let Some(fmt) = &f.format
    {
        source.format = Some(RuleFormat::from_str(fmt, true).map_err(|_| {
            Fail(format!("format {fmt:?}: one of classbench, iptables, rampart, nft"), 2)
        })?);
    }
    source.chain = source.chain.or(f.chain);
    source.sets = source.sets.or(f.sets.map(rel));
    let pair_list = if a.pair.is_empty() { f.pair.unwrap_or_default() } else { a.pair };
    if pair_list.is_empty() {
        return Err(Fail(
            "no interfaces: give --pair IF1:IF2 (or `pair` in the --config file)".into(),
            2,
        ));
    }
    let mut pairs: Vec<(String, String)> = Vec::new();
    for p in &pair_list {
        let Some((x, y)) = p.split_once(':').filter(|(x, y)| !x.is_empty() && !y.is_empty()) else {
            return Err(Fail(format!("--pair {p:?}: expected IF1:IF2"), 2));
        };
        if x == y || pairs.iter().any(|(a, b)| [a, b].iter().any(|n| *n == x || *n == y)) {
            return Err(Fail(format!("--pair {p:?}: an interface is bridged once"), 2));
        }
        pairs.push((x.to_string(), y.to_string()));
    }
    let driver = a.driver.or(f.driver).unwrap_or_else(|| "af_packet".into());
    if !["af_packet", "af_xdp"].contains(&driver.as_str()) {
        return Err(Fail(format!("driver {driver:?}: af_packet or af_xdp"), 2));
    }
    let workers = usize::from(a.workers.or(f.workers).unwrap_or(1));
    if !(1..=64).contains(&workers) {
        return Err(Fail(format!("workers {workers}: from 1 to 64"), 2));
    }
    let ct_max = a.ct_max.or(f.ct_max).unwrap_or(262_144);
    if !(16..=1 << 32).contains(&ct_max) {
        return Err(Fail(format!("ct-max {ct_max}: from 16 to 4294967296"), 2));
    }
    let ct = if a.ct.is_empty() {
        f.ct.unwrap_or_default().into_iter().map(|(k, v)| format!("{k}={v}")).collect()
    } else {
        a.ct
    };
    let log = match (a.log.or(f.log.map(rel_out)), a.drop_log.or(f.drop_log.map(rel_out))) {
        (Some(_), Some(_)) => {
            return Err(Fail("log and drop-log: give one (drop-log is the log's drops)".into(), 2));
        }
        (Some(p), None) => Some((p, false)),
        (None, Some(p)) => Some((p, true)),
        (None, None) => None,
    };
    let output = a.output.or(f.output.map(rel_out));
    let mut on_stdout = Vec::new();
    if output.as_deref().is_some_and(crate::input::is_stdout) {
        on_stdout.push("output -");
    }
    if let Some((p, drops)) = &log
        && crate::input::is_stdout(p)
    {
        on_stdout.push(if *drops { "drop-log -" } else { "log -" });
    }
    crate::input::one_stdout(&on_stdout)?;
    let dpi = a.dpi.or(f.dpi).unwrap_or_else(|| "rampart".into());
    if !["rampart", "off"].contains(&dpi.as_str()) {
        return Err(Fail(format!("dpi {dpi:?}: rampart or off"), 2));
    }
    let fail_open = match a.fail_open.or(f.fail_open).as_deref() {
        None | Some("none") => (false, false),
        Some("all") => (true, true),
        Some("table-full") => (true, false),
        Some("overload") => (false, true),
        Some(x) => {
            return Err(Fail(format!("fail-open {x:?}: all, table-full, overload or none"), 2));
        }
    };
    let buffer_mib = a.buffer_size.or(f.buffer_size).unwrap_or(64);
    if !(1..=65_536).contains(&buffer_mib) {
        return Err(Fail(format!("buffer-size {buffer_mib}: from 1 to 65536 MiB"), 2));
    }
    let batch = a.batch.or(f.batch).map_or(InlineConfig::default().batch, usize::from);
    if !(1..=4096).contains(&batch) {
        return Err(Fail(format!("batch {batch}: from 1 to 4096 frames"), 2));
    }
    let mut ipfix = a.ipfix;
    if ipfix.ipfix.is_none()
        && let Some(t) = &f.ipfix
    {
        ipfix.ipfix = Some(
            rampart_export::ipfix::Target::parse(t)
                .map_err(|e| Fail(format!("ipfix {t:?}: {e}"), 2))?,
        );
    }
    let mut metrics = a.metrics;
    if metrics.metrics.is_none() {
        metrics.metrics = f.metrics;
    }
    let s = Settings {
        rules,
        source,
        pairs,
        driver,
        workers,
        ct_max,
        ct,
        fail_open,
        output,
        log,
        control: a.control.or(f.control.map(rel)).unwrap_or_else(|| DEFAULT_CONTROL.into()),
        user: a.user.or(f.user).unwrap_or_else(|| "nobody".into()),
        dpi: dpi != "off",
        buffer_mib,
        batch,
        quiet: a.quiet || f.quiet.unwrap_or(false),
        check: a.check,
    };
    Ok((s, ipfix, metrics))
}

/// Loads the rule file and proves every chain's compiled classifier equal to its rules.
fn load_and_prove(s: &Settings) -> Result<(Arc<RuleSet>, usize), String> {
    let rules = RuleSet::from_hooked(
        rampart_classify::load::load_hooked(&s.rules, &s.source.options())
            .map_err(|e| e.to_string())?,
    );
    let mut proved = 0;
    for base in rules.chains() {
        for chain in base.rules.chains() {
            let boxes = chain.boxes();
            let mut m = rampart_policy::rules::manager_for(
                rampart_policy::rules::Layout::Firewall,
                rampart_classify::firewall::FW,
            );
            rampart_policy::validate::prove(&mut m, &boxes, chain.compiled()).map_err(|e| {
                format!("{}: chain {} of {}: {e}", s.rules.display(), chain.name, base.name)
            })?;
            proved += boxes.len();
        }
    }
    if !s.dpi && rules.uses_app() {
        return Err(format!(
            "{}: the rules match applications (app ...): identification cannot be off",
            s.rules.display()
        ));
    }
    Ok((Arc::new(rules), proved))
}

/// Whether `a` is an IPv6 link-local address (which every interface with IPv6 gets, and
/// which the host does not route).
fn link_local(a: &IpAddr) -> bool {
    matches!(a, IpAddr::V6(v6) if v6.segments()[0] & 0xffc0 == 0xfe80)
}

/// Checks that `name` can be an inline port: it exists, is Ethernet, is up, carries no
/// address and does not forward.
fn check_port(name: &str) -> Result<(), Fail> {
    let sys = |f: &str| std::fs::read_to_string(format!("/sys/class/net/{name}/{f}"));
    let Ok(kind) = sys("type") else {
        return Err(Fail(format!("interface {name:?} does not exist"), 2));
    };
    if kind.trim() != "1" {
        return Err(Fail(format!("interface {name}: not an Ethernet interface"), 2));
    }
    let flags = sys("flags")
        .ok()
        .and_then(|f| u32::from_str_radix(f.trim().trim_start_matches("0x"), 16).ok())
        .unwrap_or(0);
    if flags & 1 == 0 {
        return Err(Fail(format!("interface {name} is down (ip link set {name} up)"), 2));
    }
    let addrs: Vec<String> = rampart_capture::live::interface_addresses(name)
        .iter()
        .filter(|a| !link_local(a))
        .map(IpAddr::to_string)
        .collect();
    if !addrs.is_empty() {
        return Err(Fail(
            format!(
                "interface {name} has addresses ({}): the host would answer and route copies \
                 of the frames rampart bridges; remove them (ip address flush dev {name})",
                addrs.join(", ")
            ),
            2,
        ));
    }
    for (v, path) in [
        ("IPv4", format!("/proc/sys/net/ipv4/conf/{name}/forwarding")),
        ("IPv6", format!("/proc/sys/net/ipv6/conf/{name}/forwarding")),
    ] {
        if std::fs::read_to_string(&path).is_ok_and(|x| x.trim() == "1") {
            return Err(Fail(
                format!(
                    "interface {name} forwards {v} ({path} is 1): the host would route copies \
                     of the frames rampart bridges; turn it off"
                ),
                2,
            ));
        }
    }
    Ok(())
}

/// AF_XDP programs to detach at the end: interface index, program id.
type XdpPrograms = BTreeSet<(u32, u32)>;

/// A worker's ports.
type BoxPorts = Box<dyn Ports + Send>;

/// Opens every port of every worker, before anything is forwarded. With them, when
/// `releasing` (a helper detaches them: [`start_xdp_release`]), the AF_XDP programs to
/// detach at the end (interface index, program id).
fn open_ports(
    s: &Settings,
    releasing: bool,
) -> Result<(Vec<(usize, BoxPorts)>, XdpPrograms), Fail> {
    let mut out = Vec::new();
    let mut programs = BTreeSet::new();
    // Fanout group ids: one per interface, from the process id so two runs do not meet.
    let base = (std::process::id() as u16).wrapping_mul(64);
    for (p, (a, b)) in s.pairs.iter().enumerate() {
        for w in 0..s.workers {
            let fanout = (s.workers > 1).then_some(base.wrapping_add(2 * p as u16));
            let ports: BoxPorts = match s.driver.as_str() {
                "af_xdp" => {
                    // Worker w bridges queue w of both interfaces: both directions of a flow
                    // meet when the interfaces' receive hashing is symmetric (one queue each
                    // is the simple case).
                    let frames = ((s.buffer_mib << 20) / 2048).clamp(64, 1 << 20);
                    let cfg = XdpConfig {
                        queue: w as u32,
                        frames: 1 << (63 - frames.leading_zeros()),
                        first_interface: 2 * p as u32,
                        ..XdpConfig::default()
                    };
                    let mut pair = XdpPair::open(a, b, &cfg).map_err(|e| {
                        Fail(format!("{e} (pair {a}:{b}, worker {w}, queue {w})"), 2)
                    })?;
                    if releasing {
                        pair.released_elsewhere();
                        programs.extend(
                            pair.programs().into_iter().filter_map(|(i, id)| Some((i, id?))),
                        );
                    }
                    if !s.quiet {
                        for n in pair.notes() {
                            eprintln!("rampart run: {a}:{b} queue {w}: {n}");
                        }
                    }
                    Box::new(pair)
                }
                _ => {
                    let cfg = PairConfig {
                        ring_bytes: s.buffer_mib << 20,
                        fanout,
                        max_frame: None,
                        first_interface: 2 * p as u32,
                        tx_ring: true,
                    };
                    // Each interface its own group: ids id (first) and id + 1 (second).
                    let pair = PacketPair::open(a, b, &cfg);
                    Box::new(pair.map_err(|e| Fail(format!("{e} (pair {a}:{b}, worker {w})"), 2))?)
                }
            };
            out.push((p, ports));
        }
    }
    Ok((out, programs))
}

/// When `rampart run` drops its privileges over AF_XDP, it can no longer detach the
/// redirect programs libxdp attached to its interfaces when it ends. So before it opens any
/// port (the helper must not inherit the AF_XDP sockets, which libxdp opens without
/// close-on-exec) it starts itself again as a helper, `rampart xdp-release`, which keeps
/// root and does nothing but wait, in a process group of its own (a Ctrl-C at the terminal
/// does not reach it). Once the ports are open, and still as root, it writes each
/// interface's index and program id to the helper's standard input, then `end`; the helper
/// ignores anything written after that (so the unprivileged bridge cannot add to the list).
/// When `rampart run` ends, however it ends (a clean stop, a crash, SIGKILL), the pipe
/// closes and the helper detaches each of those programs that is still libxdp's AF_XDP
/// program on its interface, then exits. `None` when there will be nothing to release (not
/// AF_XDP, or not started as root, or staying root).
fn start_xdp_release(s: &Settings) -> Result<Option<std::process::Child>, Fail> {
    if s.driver != "af_xdp" || s.user == "root" || !nix::unistd::geteuid().is_root() {
        return Ok(None);
    }
    use std::os::unix::process::CommandExt;
    // This very executable, even if its file was replaced or removed since it started (an
    // upgrade while it runs); named as it was started.
    let name = std::env::args_os().next().unwrap_or_else(|| "rampart".into());
    let child = std::process::Command::new("/proc/self/exe")
        .arg0(name)
        .arg("xdp-release")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| Fail(format!("starting the AF_XDP release helper: {e}"), 1))?;
    Ok(Some(child))
}

/// Hands the helper the programs to detach (see [`start_xdp_release`]), closing the list.
fn hand_xdp_programs(helper: &mut std::process::Child, programs: &XdpPrograms) -> Result<(), Fail> {
    let mut text = String::new();
    for (ifindex, id) in programs {
        text.push_str(&format!("{ifindex} {id}\n"));
    }
    text.push_str("end\n");
    let stdin = helper.stdin.as_mut().expect("piped when started");
    stdin
        .write_all(text.as_bytes())
        .and_then(|()| stdin.flush())
        .map_err(|e| Fail(format!("writing to the AF_XDP release helper: {e}"), 1))
}

/// At a stop `rampart run` makes itself (every port closed): closes the helper's pipe and
/// waits a few seconds for it to detach the programs, saying so if it fails or does not end.
fn finish_xdp_release(helper: Option<std::process::Child>) -> bool {
    let Some(mut helper) = helper else { return true };
    drop(helper.stdin.take());
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        match helper.try_wait() {
            Ok(Some(st)) if st.success() => return true,
            Ok(Some(st)) => {
                eprintln!("rampart run: the AF_XDP release helper ended with {st}");
                return false;
            }
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                eprintln!("rampart run: the AF_XDP release helper has not ended after 5 s");
                return false;
            }
            Err(e) => {
                eprintln!("rampart run: waiting for the AF_XDP release helper: {e}");
                return false;
            }
        }
    }
}

/// `rampart xdp-release` (see [`start_xdp_release`]): reads `IFINDEX PROGRAM-ID` lines up to
/// `end` (anything after it is ignored), waits for standard input to close, then detaches
/// each program still attached to its interface as libxdp's AF_XDP program.
pub(crate) fn xdp_release() -> Result<ExitCode, Fail> {
    // The stop signals are for the bridge, which closes the pipe as it ends: here they only
    // set a flag no one reads.
    let ignored = Arc::new(AtomicBool::new(false));
    for sig in
        [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP]
    {
        let _ = signal_hook::flag::register(sig, Arc::clone(&ignored));
    }
    let mut programs = Vec::new();
    let mut failed = false;
    let mut closed = false;
    for line in io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if closed {
            continue;
        }
        if line == "end" {
            closed = true;
            continue;
        }
        let mut w = line.split_whitespace().map(str::parse::<u32>);
        match (w.next(), w.next(), w.next()) {
            (Some(Ok(ifindex)), Some(Ok(id)), None) => programs.push((ifindex, id)),
            _ => {
                eprintln!("rampart xdp-release: bad line {line:?}");
                failed = true;
            }
        }
    }
    for (ifindex, id) in programs {
        if let Err(e) = rampart_capture::xdp::release(ifindex, id) {
            eprintln!(
                "rampart run: detaching XDP program {id} from interface {ifindex} failed: {e}"
            );
            failed = true;
        }
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// Drops to `user` (and every capability) now that every socket is open.
fn drop_privileges(user: &str) -> Result<String, Fail> {
    use nix::unistd::{Gid, User, geteuid, setgid, setgroups, setuid};
    if user == "root" {
        return Ok("running as root (--user root)".into());
    }
    if geteuid().is_root() {
        let u = User::from_name(user)
            .map_err(|e| Fail(format!("--user {user}: {e}"), 2))?
            .ok_or_else(|| Fail(format!("--user {user}: no such user"), 2))?;
        setgroups(&[] as &[Gid]).map_err(|e| Fail(format!("dropping groups: {e}"), 1))?;
        setgid(u.gid).map_err(|e| Fail(format!("setgid({}): {e}", u.gid), 1))?;
        setuid(u.uid).map_err(|e| Fail(format!("setuid({}): {e}", u.uid), 1))?;
    }
    // Leaving root clears the capabilities; a start without root (file capabilities) drops
    // them here.
    for set in [
        caps::CapSet::Effective,
        caps::CapSet::Permitted,
        caps::CapSet::Inheritable,
        caps::CapSet::Ambient,
    ] {
        let _ = caps::clear(None, set);
    }
    let left = caps::read(None, caps::CapSet::Effective).map(|c| c.len()).unwrap_or(0);
    if left > 0 {
        return Err(Fail(format!("{left} capabilities are still held after dropping them"), 1));
    }
    Ok(format!("running as {user} with no capabilities"))
}

/// A worker's view of the shared outputs: each call takes the lock.
struct Shared<'o, 'a> {
    out: &'o Mutex<Out<'a>>,
    worker: usize,
}

impl FirewallSink for Shared<'_, '_> {
    fn packet(
        &mut self,
        frame: &Frame<'_>,
        decided: &Decided,
        rules: &RuleSet,
        reply: Option<&[u8]>,
    ) -> io::Result<()> {
        lock(self.out).packet(frame, decided, rules, reply)
    }

    fn packets(
        &mut self,
        frames: &[Frame<'_>],
        decided: &[Decided],
        rules: &RuleSet,
        replies: &[(usize, Vec<u8>)],
    ) -> io::Result<()> {
        lock(self.out).packets(frames, decided, rules, replies)
    }

    fn record(&mut self, r: &FlowRecord) -> io::Result<()> {
        lock(self.out).record(r)
    }

    fn reload(&mut self, at: Timestamp, source: &str, result: Result<(), &str>) -> io::Result<()> {
        // Every worker takes the rule set; one says so.
        if self.worker == 0 {
            lock(self.out).reload(at, source, result)?;
        }
        Ok(())
    }

    fn batch_done(&mut self, main: &Pipeline, s: &Summary) -> io::Result<()> {
        lock(self.out).publish(self.worker, main, s);
        Ok(())
    }
}

/// What the control thread needs to reload and report.
struct Control<'a, 'o> {
    settings: &'a Settings,
    slot: &'a RuleSlot,
    boards: &'a [WorkerBoard],
    out: &'a Mutex<Out<'o>>,
    started: Instant,
    reloads: Mutex<(u64, u64)>,
    /// Who may use the socket: root and the user that started the run.
    owner: u32,
}

impl Control<'_, '_> {
    /// Reads, proves and publishes the rule file; the reply's lines.
    fn reload(&self) -> Result<String, String> {
        let started = Instant::now();
        let result = load_and_prove(self.settings);
        let mut counts = lock(&self.reloads);
        match result {
            Ok((rules, proved)) => {
                let g = self.slot.publish(rules);
                counts.0 += 1;
                Ok(format!(
                    "reloaded {} (generation {g}; {proved} rules proved in {:.1} ms); \
                     connections kept",
                    self.settings.rules.display(),
                    started.elapsed().as_secs_f64() * 1e3
                ))
            }
            Err(e) => {
                counts.1 += 1;
                let _ = lock(self.out).reload(
                    rampart_engine::driver::wall_clock(),
                    &self.settings.rules.display().to_string(),
                    Err(&e),
                );
                Err(e)
            }
        }
    }

    /// The live counters, one line per worker and a total.
    fn status(&self) -> String {
        let s = self.settings;
        let (ok, refused) = *lock(&self.reloads);
        let mut t = format!(
            "rampart run: up {:.1} s, pid {}, rules {} (generation {}; {ok} reloads, {refused} refused)\n",
            self.started.elapsed().as_secs_f64(),
            std::process::id(),
            s.rules.display(),
            self.slot.generation(),
        );
        let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        let mut total = [0u64; 13];
        for (i, b) in self.boards.iter().enumerate() {
            let (p, w) = (i / s.workers, i % s.workers);
            let v = [
                get(&b.received),
                get(&b.bytes),
                get(&b.forwarded),
                get(&b.dropped),
                get(&b.rejected),
                get(&b.replies),
                get(&b.fail_open),
                get(&b.bypassed),
                get(&b.kernel_dropped),
                get(&b.tx_dropped),
                get(&b.oversize),
                get(&b.flows),
                get(&b.connections),
            ];
            for (a, x) in total.iter_mut().zip(v) {
                *a += x;
            }
            let (x, y) = &s.pairs[p];
            let fill = [get(&b.fill_depth[0]), get(&b.fill_depth[1])];
            t.push_str(&format!("{x}:{y} worker {w}: {}{}\n", counters(&v), fill_rings(fill)));
        }
        t.push_str(&format!("total: {}\n", counters(&total)));
        t
    }

    /// Answers one connection: a command line in, the reply out.
    fn serve(&self, stream: UnixStream) {
        use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
        let allowed = getsockopt(&stream, PeerCredentials)
            .is_ok_and(|c| c.uid() == 0 || c.uid() == self.owner);
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
        let mut w = &stream;
        if !allowed {
            let _ = writeln!(w, "error: permission denied");
            return;
        }
        let mut line = String::new();
        let _ = BufReader::new(&stream).read_line(&mut line);
        let reply = match line.trim() {
            "reload" => match self.reload() {
                Ok(m) => format!("{m}\nok\n"),
                Err(e) => format!("error: {e}\nthe rule set in force stays\n"),
            },
            "status" => format!("{}ok\n", self.status()),
            other => format!("error: unknown command {other:?} (reload, status)\n"),
        };
        let _ = w.write_all(reply.as_bytes());
    }
}

fn counters(v: &[u64; 13]) -> String {
    format!(
        "received {} ({} bytes), forwarded {}, dropped {}, rejected {} ({} replies), \
         fail-open {} (table full) {} (overload), kernel dropped {}, tx dropped {}, \
         oversize {}, flows {}, connections {}",
        v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12]
    )
}

/// AF_XDP's fill-ring depths, for a worker's line (nothing for AF_PACKET, where they are 0).
fn fill_rings(depth: [u64; 2]) -> String {
    if depth == [0, 0] {
        String::new()
    } else {
        format!(", fill rings {}/{} frames", depth[0], depth[1])
    }
}

/// Binds the control socket: mode 0600, a stale socket (no one listening) replaced.
fn bind_control(path: &Path) -> Result<UnixListener, Fail> {
    if path.exists() {
        if UnixStream::connect(path).is_ok() {
            return Err(Fail(
                format!("{}: another rampart run is listening there (--control)", path.display()),
                2,
            ));
        }
        std::fs::remove_file(path).map_err(|e| Fail(format!("{}: {e}", path.display()), 2))?;
    }
    let l = UnixListener::bind(path).map_err(|e| Fail(format!("{}: {e}", path.display()), 2))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| Fail(format!("{}: {e}", path.display()), 2))?;
    l.set_nonblocking(true).map_err(|e| Fail(format!("{}: {e}", path.display()), 2))?;
    Ok(l)
}

fn go(args: Args) -> Result<ExitCode, Fail> {
    let (s, ipfix_args, metrics_args) = settings(args)?;
    let (rules, proved) = load_and_prove(&s).map_err(|e| Fail(e, 2))?;
    let ct = crate::firewall::ct_config(&s.ct)?;
    if s.check {
        println!(
            "{}: {} chains, {proved} rules, proved; pairs {}; driver {}, {} worker{} per pair",
            s.rules.display(),
            rules.chains().iter().map(|c| c.rules.chains().len()).sum::<usize>(),
            s.pairs.iter().map(|(a, b)| format!("{a}:{b}")).collect::<Vec<_>>().join(", "),
            s.driver,
            s.workers,
            if s.workers == 1 { "" } else { "s" }
        );
        return Ok(ExitCode::SUCCESS);
    }
    for (a, b) in &s.pairs {
        check_port(a)?;
        check_port(b)?;
    }
    let names: Vec<String> = s.pairs.iter().flat_map(|(a, b)| [a.clone(), b.clone()]).collect();
    // Outputs first: a file that cannot be written stops the run before a port opens.
    let create = crate::input::create_output;
    let log = match &s.log {
        Some((p, _)) => Some(Named::new(crate::input::output_name(p), create(p)?)),
        None => None,
    };
    let records: Option<Named<FlowWriter<Box<dyn Write + Send>>>> = match &s.output {
        Some(p) => Some(Named::new(
            crate::input::output_name(p),
            FlowWriter::new(Box::new(create(p)?) as Box<dyn Write + Send>, FlowFormat::Json),
        )),
        None => None,
    };
    let groups = rampart_export::ipfix::Config {
        tcp: true,
        firewall: true,
        ..rampart_export::ipfix::Config::default()
    };
    let exporter = ipfix::open_with(&ipfix_args, groups)?;
    let metrics = Metrics::start(&metrics_args, None)?;
    // Started before any port is open; its standard input closing is its signal.
    let mut helper = start_xdp_release(&s)?;
    let (mut ports, programs) = open_ports(&s, helper.is_some())?;
    if let Some(h) = &mut helper {
        hand_xdp_programs(h, &programs)?;
    }
    let threads = ports.len();
    let control = bind_control(&s.control)?;
    let owner = nix::unistd::getuid().as_raw();
    // Every socket is open: nothing privileged is needed from here on.
    let who = drop_privileges(&s.user)?;
    if !s.quiet {
        eprintln!(
            "rampart run: bridging {} with {} ({} worker{} per pair, {}); control {}; {who}",
            s.pairs.iter().map(|(a, b)| format!("{a}:{b}")).collect::<Vec<_>>().join(", "),
            s.rules.display(),
            s.workers,
            if s.workers == 1 { "" } else { "s" },
            s.driver,
            s.control.display(),
        );
    }

    let out = Mutex::new(Out {
        names: &names,
        log,
        log_drops_only: s.log.as_ref().is_some_and(|l| l.1),
        records,
        diffs: None,
        writers: Vec::new(),
        counts: Counts::default(),
        ipfix: exporter,
        metrics: metrics.as_ref().map(|m| Published::new(m, threads, s.ct_max)),
        line: Vec::new(),
    });
    let slot = RuleSlot::new(Arc::clone(&rules));
    let boards: Vec<WorkerBoard> = (0..threads).map(|_| WorkerBoard::default()).collect();
    let stop = crate::input::stop_flag();
    let hup = Arc::new(AtomicBool::new(false));
    let _ = signal_hook::flag::register(signal_hook::consts::SIGHUP, Arc::clone(&hup));
    let routes = Arc::new(Routes { names: names.clone(), bridge: true, ..Routes::default() });
    let per_thread = (s.ct_max / threads as u64).max(16);
    // Zeek's `conn_state` and `history` exist only for the flow records: with no record
    // output (`-o`) and no IPFIX collector, the TCP state stage would keep them for nobody.
    let tcp_stats = s.output.is_some() || ipfix_args.ipfix.is_some();
    let pipeline = || {
        let cfg = StatefulConfig {
            ct,
            routes: Arc::clone(&routes),
            non_ip: Verdict::Accept,
            fail_open: s.fail_open.0,
            ..StatefulConfig::default()
        };
        let table = TableConfig {
            max_flows: usize::try_from(per_thread).unwrap_or(usize::MAX),
            ..TableConfig::default()
        };
        let dpi = if s.dpi { FlowsConfig::default().dpi } else { None };
        Pipeline::new(&FlowsConfig {
            table,
            rtt: None,
            dpi,
            tcp_stats,
            reserve: true,
            ..FlowsConfig::default()
        })
        .with_stateful(Stateful::new(cfg, slot.current().1))
    };
    let ctl = Control {
        settings: &s,
        slot: &slot,
        boards: &boards,
        out: &out,
        started: Instant::now(),
        reloads: Mutex::new((0, 0)),
        owner,
    };
    let inline = InlineConfig {
        batch: s.batch,
        fail_open_overload: s.fail_open.1,
        ..InlineConfig::default()
    };
    let results: Vec<(io::Result<InlineEnd>, Pipeline)> = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for (i, (_, mut p)) in ports.drain(..).enumerate() {
            let mut pipe = pipeline();
            let (slot, board, out, stop) = (&slot, &boards[i], &out, &stop);
            handles.push(scope.spawn(move || {
                let mut sink = Shared { out, worker: i };
                let r = run_inline(
                    p.as_mut(),
                    &mut pipe,
                    &inline,
                    Some(slot),
                    Some(board),
                    stop,
                    &mut sink,
                );
                // A worker that ends (a port failed) ends the run.
                stop.store(true, Ordering::Relaxed);
                (r, pipe)
            }));
        }
        let mut flushed = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            if hup.swap(false, Ordering::Relaxed) {
                match ctl.reload() {
                    Ok(m) => eprintln!("rampart run: SIGHUP: {m}"),
                    Err(e) => eprintln!("rampart run: SIGHUP: {e}; the rule set in force stays"),
                }
            }
            match control.accept() {
                Ok((stream, _)) => {
                    let _ = stream.set_nonblocking(false);
                    ctl.serve(stream);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
            if flushed.elapsed() >= Duration::from_secs(1) {
                flushed = Instant::now();
                if let Err(e) = lock(&out).flush() {
                    eprintln!("rampart run: {e}");
                    stop.store(true, Ordering::Relaxed);
                }
            }
        }
        handles.into_iter().map(|h| h.join().expect("a worker thread panicked")).collect()
    });
    let _ = std::fs::remove_file(&s.control);
    let mut out = out.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    let flushed = out.flush();
    let mut total = Summary::default();
    let mut code = ExitCode::SUCCESS;
    let mut mains = Vec::new();
    let mut ports_line = Vec::new();
    for (i, (r, pipe)) in results.into_iter().enumerate() {
        match r {
            Ok(end) => {
                total.add(&end.summary);
                total.elapsed = total.elapsed.max(end.summary.elapsed);
                total.interrupted |= end.summary.interrupted;
                let p = &end.counts.ports;
                let (x, y) = &s.pairs[i / s.workers];
                ports_line.push(format!(
                    "  worker {} of {x}:{y}: received {}/{}, sent {}/{}, kernel dropped {}/{}, \
                     tx dropped {}/{}, oversize {}/{}{}, {} replies, {} reloads{}",
                    i % s.workers,
                    p.received[0],
                    p.received[1],
                    p.sent[0],
                    p.sent[1],
                    p.kernel_dropped[0],
                    p.kernel_dropped[1],
                    p.tx_dropped[0],
                    p.tx_dropped[1],
                    p.oversize[0],
                    p.oversize[1],
                    fill_rings(p.fill_depth.map(u64::from)),
                    end.counts.replies,
                    end.counts.reloads,
                    if end.counts.bypassed > 0 {
                        format!(", {} frames forwarded undecided (overloaded)", end.counts.bypassed)
                    } else {
                        String::new()
                    },
                ));
                if let Some(e) = end.error {
                    eprintln!("rampart run: {e}");
                    code = ExitCode::from(1);
                }
            }
            Err(e) => {
                ipfix::report_failure(&e, "frames", None);
                code = ExitCode::from(1);
            }
        }
        mains.push(pipe);
    }
    if let Err(e) = flushed {
        eprintln!("rampart run: {e}");
        code = ExitCode::from(1);
    }
    if let Some(p) = &mut out.metrics {
        p.metrics.board().finish(&total);
        for (w, m) in mains.iter().enumerate() {
            p.fill(w, m, &out.counts);
        }
        p.metrics.publish_firewall(&p.counts);
    }
    if !s.quiet {
        let refs: Vec<&Pipeline> = mains.iter().collect();
        crate::firewall::summary(&names, &total, &refs, &out.counts, "frame", true);
        for l in &ports_line {
            eprintln!("{l}");
        }
    }
    if !ipfix::end(out.ipfix.as_mut(), None, s.quiet) {
        code = ExitCode::from(1);
    }
    if let Some(p) = out.metrics.take() {
        p.metrics.end(Some(p.meter), &stop);
    }
    // Every port is closed: the helper may detach the programs now.
    if !finish_xdp_release(helper) {
        code = ExitCode::from(1);
    }
    Ok(code)
}

/// `rampart reload` and `rampart status`: sends `command` to the control socket and prints
/// the reply; exit 1 when it is an error.
pub(crate) fn control(args: &ControlArgs, command: &str) -> Result<ExitCode, Fail> {
    let mut stream = UnixStream::connect(&args.control).map_err(|e| {
        Fail(
            format!(
                "{}: {e} (is `rampart run` running, with this --control?)",
                args.control.display()
            ),
            2,
        )
    })?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
    writeln!(stream, "{command}")
        .map_err(|e| Fail(format!("{}: {e}", args.control.display()), 1))?;
    let mut ok = false;
    let mut reply = String::new();
    for line in BufReader::new(&stream).lines() {
        let Ok(line) = line else { break };
        if line == "ok" {
            ok = true;
        } else {
            reply.push_str(&line);
            reply.push('\n');
        }
    }
    if ok {
        print!("{reply}");
        Ok(ExitCode::SUCCESS)
    } else {
        eprint!("rampart: {}", if reply.is_empty() { "no reply\n".into() } else { reply });
        Ok(ExitCode::from(1))
    }
}
