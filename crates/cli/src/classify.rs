//! `rampart rules check` and `rampart classify`.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Subcommand, ValueEnum};
use rampart_classify::bench;
use rampart_classify::classbench::parse_trace;
use rampart_classify::firewall::Firewall;
use rampart_classify::iptables::Ruleset;
use rampart_classify::load::{LoadOptions, Loaded, load};
use rampart_classify::source::Format;
use rampart_classify::{Compiled, Header, Rule};
use rampart_policy::rules::Layout;

use crate::Fail;

/// Rule file formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum RuleFormat {
    /// ClassBench filter sets (`@SIP/LEN DIP/LEN SP : SP DP : DP PROTO/MASK FLAGS/MASK`).
    Classbench,
    /// `iptables-save` output (the filter table).
    Iptables,
    /// rampart's own syntax (`set`, `table`, `chain`; see the README).
    Rampart,
    /// nftables: what `nft -f` loads and `nft list ruleset` prints.
    Nft,
}

impl From<RuleFormat> for Format {
    fn from(f: RuleFormat) -> Self {
        match f {
            RuleFormat::Classbench => Format::ClassBench,
            RuleFormat::Iptables => Format::Iptables,
            RuleFormat::Rampart => Format::Rampart,
            RuleFormat::Nft => Format::Nft,
        }
    }
}

/// How to read a rule file: the options every command that reads one shares.
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct RuleSource {
    /// Its format (default: told from its first line: `@` is ClassBench, `*filter`, `:CHAIN`
    /// or `-A` iptables-save, `table FAMILY NAME`, `flush`, `define` or `add` nftables,
    /// `table`, `chain` or `set` rampart syntax).
    #[arg(long, value_enum)]
    pub format: Option<RuleFormat>,
    /// The chain packets enter (default: INPUT for iptables, the first table for rampart,
    /// for nftables the forward hook's first base chain, else the only base chain; an
    /// nftables chain may be named `FAMILY TABLE CHAIN`).
    #[arg(long)]
    pub chain: Option<String>,
    /// IP sets the rules name (`ipset save` output).
    #[arg(long, value_name = "FILE")]
    pub sets: Option<PathBuf>,
}

impl RuleSource {
    /// The loader's options.
    pub(crate) fn options(&self) -> LoadOptions {
        LoadOptions {
            format: self.format.map(Format::from),
            chain: self.chain.clone(),
            sets: self.sets.clone(),
        }
    }
}

/// `rampart rules` subcommands.
#[derive(Subcommand, Debug)]
pub(crate) enum RulesCmd {
    /// Read a rule file as `filter`, `classify` and `verify` do (the same format detection,
    /// the same checks of chains, jumps and sets), report the first error with its place,
    /// count the rules.
    Check {
        /// The rule file (gzip or zstd compressed files are read too).
        file: PathBuf,
        #[command(flatten)]
        source: RuleSource,
    },
}

/// Arguments of `rampart classify`.
#[derive(clap::Args, Debug)]
pub(crate) struct ClassifyArgs {
    /// The rule file (gzip or zstd compressed files are read too).
    #[arg(long, value_name = "FILE")]
    rules: PathBuf,
    #[command(flatten)]
    source: RuleSource,
    /// A ClassBench header trace (gzip or zstd compressed traces are read too): print the 0-based index of the first matching rule for each
    /// header, or -1, one per line.
    #[arg(long, value_name = "TRACE")]
    trace: PathBuf,
    /// Instead, print one JSON object: lookup_ns, build_ms, bytes_per_rule, update_us (and,
    /// with --verify, proof_us: the mean time to prove the classifier after each update;
    /// full_proofs: how many of those proofs were whole ones, after a compile; their mean
    /// full_proof_ms, and region_proof_us, the mean of the others, by one rule's box).
    #[arg(long)]
    bench: bool,
    /// First prove the compiled classifier equal to the rule list (exit 3 with a packet if
    /// it is not).
    #[arg(long)]
    verify: bool,
}

pub(crate) fn rules(cmd: RulesCmd) -> Result<ExitCode, Fail> {
    let RulesCmd::Check { file, source } = cmd;
    match load(&file, &source.options())? {
        Loaded::ClassBench(rules) => {
            println!("{}: {}", file.display(), crate::input::count(rules.len() as u64, "rule"));
        }
        Loaded::Firewall { rs, sets, fw, format, base } => {
            let reached: Vec<&str> = fw.chains().iter().map(|c| c.name.as_str()).collect();
            for c in &rs.chains {
                // A user chain no jump from the entered chain leads to is worth saying; an
                // nftables base chain says where it hooks.
                let note = match base.iter().find(|b| b.chain == c.name) {
                    Some(b) => format!(
                        " (base chain: {} {}, {} hook, priority {}, policy {})",
                        b.family.name(),
                        b.table,
                        b.hook.name(),
                        b.priority,
                        if b.policy == rampart_classify::iptables::Target::Drop {
                            "drop"
                        } else {
                            "accept"
                        }
                    ),
                    None if c.policy.is_none() && !reached.contains(&c.name.as_str()) => {
                        format!(" (not reached from {})", reached[0])
                    }
                    None => String::new(),
                };
                println!("{}: {}{note}", c.name, crate::input::count(c.rules.len() as u64, "rule"));
            }
            if format == Format::Rampart || format == Format::Nft || !sets.is_empty() {
                println!("{}", crate::input::count(sets.len() as u64, "set"));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Arguments of `rampart filter`.
#[derive(clap::Args, Debug)]
pub(crate) struct FilterArgs {
    /// Capture to filter.
    #[arg(short = 'r', long = "read", value_name = "IN")]
    input: PathBuf,
    /// The rule file (gzip or zstd compressed files are read too).
    #[arg(long, value_name = "FILE")]
    rules: PathBuf,
    #[command(flatten)]
    source: RuleSource,
    /// Where to write the packets the rules accept (classic pcap; `-`: standard output, and
    /// the rules' hit counts then go to standard error).
    #[arg(short = 'w', long = "write", value_name = "OUT")]
    output: PathBuf,
    /// First prove the compiled structure equal to the lowered rules (exit 3 with a packet if
    /// it is not).
    #[arg(long)]
    verify: bool,
    /// Pass frames that are not IP packets rampart parses (ARP, malformed headers) instead of
    /// dropping them.
    #[arg(long)]
    pass_unparsed: bool,
    /// A conntrack setting by its sysctl name (as for `rampart firewall`), e.g. `checksum=0`
    /// for a capture taken where checksums are offloaded.
    #[arg(long = "ct", value_name = "NAME=VALUE")]
    ct: Vec<String>,
}

pub(crate) fn filter(args: FilterArgs) -> Result<ExitCode, Fail> {
    let args = &args;
    let Loaded::Firewall { fw, base, .. } = load(&args.rules, &args.source.options())? else {
        return Err(Fail(
            format!(
                "{}: rampart filter takes iptables-save, nftables or rampart rules, not a ClassBench list",
                args.rules.display()
            ),
            2,
        ));
    };
    if args.verify {
        for c in fw.chains() {
            prove(&c.boxes(), c.compiled(), Layout::Firewall)?;
        }
    }
    let ct = crate::firewall::ct_config(&args.ct)?;
    // The entered chain, on every packet's path; an nftables chain sees its table's family.
    let entered = fw.chains()[0].name.clone();
    let family = base
        .iter()
        .find(|b| b.chain == entered)
        .and_then(|b| b.family.version())
        .and_then(rampart_wire::IpFamily::from_version);
    let entries: Vec<(String, String)> = fw
        .entries()
        .iter()
        .map(|e| {
            let verdict = match &e.action {
                rampart_classify::firewall::Action::Verdict(t) => format!("{t:?}").to_uppercase(),
                _ => "-".into(),
            };
            (e.name.clone(), verdict)
        })
        .collect();
    let rules = rampart_engine::stateful::RuleSet::everywhere_for(
        args.rules.display().to_string(),
        &entered,
        family,
        *fw,
    );
    let mut capture = crate::input::open_file(&args.input)?;
    crate::input::refuse_overwrite(&capture, Some(&args.output))?;
    let mut out = crate::firewall::PcapOut::new(crate::input::create_output(&args.output)?);
    let stop = crate::input::stop_flag();
    let opts = rampart_engine::FilterOptions {
        non_ip: if args.pass_unparsed {
            rampart_engine::Verdict::Accept
        } else {
            rampart_engine::Verdict::Drop
        },
        ct,
        ..rampart_engine::FilterOptions::default()
    };
    let result = rampart_engine::filter_capture(
        &mut capture,
        std::sync::Arc::new(rules),
        opts,
        &stop,
        &mut |f| out.write(f, f.data, f.origlen),
    );
    // No packet accepted: still a capture, with no records (as `tcpdump -w` leaves one).
    let flushed = out.finish(capture.link_type());
    let (counts, error) = match result.and_then(|r| flushed.map(|()| r)) {
        Ok(r) => r,
        // A reader of standard output that closed it (`| head`) has seen enough.
        Err(e) if crate::input::is_stdout(&args.output) && crate::closed_pipe(&e) => {
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => {
            return Err(Fail(format!("{}: {e}", crate::input::output_name(&args.output)), 1));
        }
    };
    // The rules' hit counts go to standard output, unless the packets went there.
    let mut out: Box<dyn Write> = if crate::input::is_stdout(&args.output) {
        Box::new(io::stderr().lock())
    } else {
        Box::new(io::stdout().lock())
    };
    let hits = counts.hits.first().map_or(&[][..], Vec::as_slice);
    for ((name, verdict), n) in entries.iter().zip(hits) {
        let _ = writeln!(out, "{name}\t{verdict}\t{n}");
    }
    let t = &counts.conntrack;
    eprintln!(
        "{}: {}, {} passed ({} not IP, {}){}",
        args.input.display(),
        crate::input::count(counts.packets, "packet"),
        counts.passed,
        counts.non_ip,
        if args.pass_unparsed { "passed" } else { "dropped" },
        if counts.unsupported > 0 {
            format!(", {} not filtered and not passed (link type not parsed)", counts.unsupported)
        } else {
            String::new()
        }
    );
    eprintln!(
        "  conntrack: {} connections, invalid={} error={} (checksums not verifiable {}); {} \
         packets decided by the rules, {} from their flow's cached decision",
        t.insert, t.invalid, t.error, t.unchecked, counts.decided.1, counts.decided.0
    );
    crate::input::report_end(&mut capture, crate::input::Tell::Alone);
    match error {
        Some(e) => Err(Fail(
            format!("{e}\nrampart: the packets before that point were filtered"),
            crate::run_error_status(&e),
        )),
        None => Ok(ExitCode::SUCCESS),
    }
}

pub(crate) fn classify(args: ClassifyArgs) -> Result<ExitCode, Fail> {
    run(&args).map(|()| ExitCode::SUCCESS)
}

fn run(args: &ClassifyArgs) -> Result<(), Fail> {
    let trace = parse_trace(
        &args.trace.display().to_string(),
        &rampart_classify::source::read_text(&args.trace)?,
    )
    .map_err(|e| Fail(e.to_string(), 2))?;
    let headers: Vec<Header> = trace.iter().map(|t| t.header).collect();
    let started = Instant::now();
    let rules = match load(&args.rules, &args.source.options())? {
        Loaded::ClassBench(rules) => rules,
        Loaded::Firewall { rs, fw, .. } => {
            return run_firewall(args, &headers, &rs, &fw, started.elapsed());
        }
    };
    let started = Instant::now();
    let compiled = Compiled::new(&rules);
    let build = started.elapsed();
    if args.verify {
        prove(&rules, &compiled, Layout::ClassBench)?;
    }
    let mut out = vec![None; headers.len()];
    if args.bench {
        let times = bench::passes(headers.len(), || {
            compiled.classify_batch(std::hint::black_box(&headers), &mut out);
        });
        let stats = compiled.stats();
        let update = updates(&rules, args.verify)?;
        let proof = match update.checks {
            Some(p) => format!(
                ",\"proof_us\":{:.1},\"full_proofs\":{},\"full_proof_ms\":{:.1},\"region_proof_us\":{:.1}",
                p.per_update_us, p.full, p.full_ms, p.region_us
            ),
            None => String::new(),
        };
        let json = format!(
            "{{\"rules\":{},\"headers\":{},\"kernel\":\"{}\",\"lookup_ns\":{:.1},\"build_ms\":{:.2},\"bytes_per_rule\":{:.1},\"update_us\":{:.2},\"update_median_us\":{:.2},\"update_p99_us\":{:.2}{proof}}}",
            rules.len(),
            headers.len(),
            compiled.kernel().name(),
            times[times.len() / 2],
            build.as_secs_f64() * 1e3,
            stats.bytes as f64 / rules.len().max(1) as f64,
            update.per_update_us,
            update.median_us,
            update.p99_us,
        );
        return write_lines(std::iter::once(json));
    }
    compiled.classify_batch(&headers, &mut out);
    write_lines(out.iter().map(|o| o.map_or("-1".to_string(), |i| i.to_string())))
}

/// A trace through a firewall rule set: the index of the deciding rule among the rules of the
/// entered chain and then of each chain it reaches (in file order), or -1 when the policy
/// decided.
fn run_firewall(
    args: &ClassifyArgs,
    headers: &[Header],
    rs: &Ruleset,
    fw: &Firewall,
    build: std::time::Duration,
) -> Result<(), Fail> {
    if args.verify {
        for c in fw.chains() {
            prove(&c.boxes(), c.compiled(), Layout::Firewall)?;
        }
    }
    let packet = |h: &Header| rampart_classify::firewall::Packet {
        src: std::net::IpAddr::from(h.0[0].to_be_bytes()),
        dst: std::net::IpAddr::from(h.0[1].to_be_bytes()),
        sport: h.0[2] as u16,
        dport: h.0[3] as u16,
        proto: h.0[4] as u8,
        iif: "",
        oif: "",
        ct: None,
        tcp_flags: 0,
        app: &[],
        time: 0,
    };
    let policy = fw.entries().len() - 1;
    if args.bench {
        let times = bench::passes(headers.len(), || {
            for h in headers {
                std::hint::black_box(fw.evaluate(&packet(std::hint::black_box(h))));
            }
        });
        let rules: usize = rs.chains.iter().map(|c| c.rules.len()).sum();
        let json = format!(
            "{{\"rules\":{rules},\"headers\":{},\"lookup_ns\":{:.1},\"build_ms\":{:.2},\"bytes_per_rule\":{:.1},\"update_us\":null,\"update_median_us\":null,\"update_p99_us\":null}}",
            headers.len(),
            times[times.len() / 2],
            build.as_secs_f64() * 1e3,
            fw.stats().bytes as f64 / rules.max(1) as f64
        );
        return write_lines(std::iter::once(json));
    }
    write_lines(headers.iter().map(|h| {
        let d = fw.evaluate(&packet(h));
        if d.entry == policy { "-1".to_string() } else { d.entry.to_string() }
    }))
}

/// The update timings of [`bench::updates`], with each update proved when `prove` is set.
fn updates(rules: &[Rule], prove: bool) -> Result<bench::UpdateTimes, Fail> {
    let times = if prove {
        bench::updates(rules, Some(&mut rampart_policy::live::LiveProver::new()))
            .map_err(|e| Fail(format!("after an update: {e}"), 3))?
    } else {
        let Ok(t) = bench::updates(rules, None::<&mut bench::NoCheck>);
        t
    };
    Ok(times)
}

/// Proves a compiled structure equal to the rules it was built from, saying so on standard
/// error; a mismatch is an error naming a packet (exit status 3).
fn prove<const N: usize>(rules: &[Rule<N>], c: &Compiled<N>, layout: Layout) -> Result<(), Fail> {
    let started = Instant::now();
    let mut m = rampart_policy::rules::manager_for(layout, N);
    match rampart_policy::validate::prove(&mut m, rules, c) {
        Ok(()) => {
            eprintln!(
                "rampart: proved: the compiled classifier returns the first matching rule for every packet ({} rules, {:.1} ms)",
                rules.len(),
                started.elapsed().as_secs_f64() * 1e3
            );
            Ok(())
        }
        Err(e @ rampart_policy::validate::ProofError::Mismatch(_)) => Err(Fail(e.to_string(), 3)),
        Err(e) => Err(Fail(format!("{e} (not proved either way)"), 1)),
    }
}

fn write_lines(lines: impl Iterator<Item = String>) -> Result<(), Fail> {
    crate::input::write_stdout(|out| lines.into_iter().try_for_each(|l| writeln!(out, "{l}")))
}
