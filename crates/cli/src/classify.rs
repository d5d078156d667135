//! `rampart rules check` and `rampart classify`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Subcommand, ValueEnum};
use rampart_classify::classbench::{parse_rules, parse_trace};
use rampart_classify::firewall::{Firewall, FirewallError};
use rampart_classify::iptables::{ChainError, Ruleset};
use rampart_classify::nft::BaseChain;
use rampart_classify::source::Format;
use rampart_classify::{Classifier, Compiled, Header, Rule};

use crate::input::Fail;
use rampart_policy::rules::Layout;

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

impl RuleFormat {
    fn of(f: Format) -> Self {
        match f {
            Format::ClassBench => RuleFormat::Classbench,
            Format::Iptables => RuleFormat::Iptables,
            Format::Rampart => RuleFormat::Rampart,
            Format::Nft => RuleFormat::Nft,
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

/// A rule file read and checked.
pub(crate) enum Loaded {
    /// A ClassBench list.
    ClassBench(Vec<Rule>),
    /// A firewall rule set, its sets, and it lowered (from the chain `base` names, for an
    /// nftables rule set).
    Firewall {
        rs: Ruleset,
        sets: Sets,
        fw: Box<Firewall>,
        format: RuleFormat,
        base: Vec<BaseChain>,
    },
}

/// Reads a rule file the one way every command does: decompressed if need be, its format
/// told from its text unless given, parsed, and for firewall rule sets the entered chain,
/// every chain it reaches, their jumps and the sets they name checked by lowering them.
pub(crate) fn load(path: &Path, src: &RuleSource) -> Result<Loaded, Fail> {
    load_with_names(path, src, &[])
}

/// [`load`], ranking interfaces over `names` too (see
/// [`Firewall::from_iptables_with_names`]).
pub(crate) fn load_with_names(
    path: &Path,
    src: &RuleSource,
    names: &[String],
) -> Result<Loaded, Fail> {
    let (rs, sets, chain, format, base) = read_rule_set(path, src)?;
    let Some((rs, sets, chain)) = rs.map(|rs| (rs, sets, chain)) else {
        let rules = parse_rules(&path.display().to_string(), &read(path)?)
            .map_err(|e| Fail(e.to_string(), 2))?;
        if rules.is_empty() {
            return Err(Fail(format!("{}: no rules", path.display()), 2));
        }
        return Ok(Loaded::ClassBench(rules));
    };
    let fw = Firewall::from_iptables_with_names(&rs, &chain, &sets, names)
        .map_err(|e| firewall_error(path, &rs, e))?;
    Ok(Loaded::Firewall { rs, sets, fw: Box::new(fw), format, base })
}

/// A firewall rule set parsed, with its sets and entered chain (`None` for ClassBench), and
/// an nftables rule set's base chains.
type Parsed = (Option<Ruleset>, Sets, String, RuleFormat, Vec<BaseChain>);

/// A rule file's text (decompressed if need be), its name for messages, and its format:
/// given, or told from the text.
pub(crate) fn read_text(
    path: &Path,
    src: &RuleSource,
) -> Result<(String, String, RuleFormat), Fail> {
    let text = read(path)?;
    let name = path.display().to_string();
    let format = match src.format {
        Some(f) => f,
        None => RuleFormat::of(
            rampart_classify::source::detect(&text).map_err(|e| Fail(format!("{name}: {e}"), 2))?,
        ),
    };
    Ok((name, text, format))
}

/// Parses a rule file without lowering it.
pub(crate) fn read_rule_set(path: &Path, src: &RuleSource) -> Result<Parsed, Fail> {
    let (name, text, format) = read_text(path, src)?;
    parse_rule_set(&name, &text, format, src)
}

/// Parses a rule file's text in `format`; an nftables file enters at the chain `--chain`
/// names, else its forward hook's first base chain, else its only one.
pub(crate) fn parse_rule_set(
    name: &str,
    text: &str,
    format: RuleFormat,
    src: &RuleSource,
) -> Result<Parsed, Fail> {
    let mut base = Vec::new();
    let (rs, mut sets, first) = match format {
        RuleFormat::Classbench => return Ok((None, Sets::new(), String::new(), format, base)),
        RuleFormat::Nft => {
            let nft =
                rampart_classify::nft::parse(name, text).map_err(|e| Fail(e.to_string(), 2))?;
            let listed = || {
                let v: Vec<String> = nft
                    .base
                    .iter()
                    .map(|b| {
                        format!("{} ({} hook, priority {})", b.chain, b.hook.name(), b.priority)
                    })
                    .collect();
                if v.is_empty() { "none".to_string() } else { v.join(", ") }
            };
            let chain = match &src.chain {
                Some(c) => match nft.find_chain(c) {
                    Some(c) => c.to_string(),
                    None => {
                        return Err(Fail(
                            format!("{name}: no chain {c:?} (base chains: {})", listed()),
                            2,
                        ));
                    }
                },
                None => match nft.default_chain() {
                    Some(b) => b.chain.clone(),
                    None => {
                        return Err(Fail(
                            format!(
                                "{name}: no base chain on the forward hook and not just one base chain; give --chain (base chains: {})",
                                listed()
                            ),
                            2,
                        ));
                    }
                },
            };
            base = nft.base;
            (nft.rules, nft.sets, chain)
        }
        RuleFormat::Iptables => {
            let rs = rampart_classify::iptables::parse(name, text)
                .map_err(|e| Fail(e.to_string(), 2))?;
            if rs.chains.is_empty() {
                return Err(Fail(
                    format!(
                        "{name}: no chain in a *filter table (iptables-save output declares them as ':INPUT ACCEPT [0:0]' between '*filter' and 'COMMIT')"
                    ),
                    2,
                ));
            }
            (rs, Sets::new(), "INPUT".to_string())
        }
        RuleFormat::Rampart => {
            let (rs, sets) =
                rampart_classify::syntax::parse(name, text).map_err(|e| Fail(e.to_string(), 2))?;
            let Some(first) = rs.chains.iter().find(|c| c.policy.is_some()) else {
                return Err(Fail(
                    format!("{name}: no table (packets enter a 'table NAME {{ ... }}')"),
                    2,
                ));
            };
            let first = first.name.clone();
            (rs, sets, first)
        }
    };
    if let Some(p) = &src.sets {
        sets.extend(load_sets(p)?);
    }
    let chain = if format == RuleFormat::Nft { first } else { src.chain.clone().unwrap_or(first) };
    Ok((Some(rs), sets, chain, format, base))
}

/// A lowering error, with the file and, for a jump loop, the line of its first rule.
pub(crate) fn firewall_error(path: &Path, rs: &Ruleset, e: FirewallError) -> Fail {
    let at = match &e {
        FirewallError::Chain(ChainError::Loop { rules }) => {
            rules.first().map_or(String::new(), |(_, line)| format!(":{line}"))
        }
        FirewallError::Set { rule, .. } => rs
            .chains
            .iter()
            .flat_map(|c| &c.rules)
            .find(|r| &r.name == rule)
            .map_or(String::new(), |r| format!(":{}", r.line)),
        FirewallError::Chain(ChainError::Missing { .. }) => String::new(),
    };
    let hint = if matches!(e, FirewallError::Chain(ChainError::Missing { .. })) {
        "; give --chain"
    } else {
        ""
    };
    Fail(format!("{}{at}: {e}{hint}", path.display()), 2)
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

fn read(path: &Path) -> Result<String, Fail> {
    rampart_classify::source::read_text(path).map_err(|e| Fail(e.to_string(), 2))
}

pub(crate) fn rules(cmd: RulesCmd) -> ExitCode {
    let RulesCmd::Check { file, source } = cmd;
    match load(&file, &source) {
        Ok(Loaded::ClassBench(rules)) => {
            println!("{}: {}", file.display(), crate::input::count(rules.len() as u64, "rule"));
            ExitCode::SUCCESS
        }
        Ok(Loaded::Firewall { rs, sets, fw, format, base }) => {
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
            if format == RuleFormat::Rampart || format == RuleFormat::Nft || !sets.is_empty() {
                println!("{}", crate::input::count(sets.len() as u64, "set"));
            }
            ExitCode::SUCCESS
        }
        Err(e) => e.exit(),
    }
}

pub(crate) type Sets = std::collections::HashMap<String, rampart_classify::ipset::IpSet>;

pub(crate) fn load_sets(path: &Path) -> Result<Sets, Fail> {
    rampart_classify::ipset::parse_ipset_save(&path.display().to_string(), &read(path)?)
        .map_err(|e| Fail(e.to_string(), 2))
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
    /// Where to write the packets the rules accept (classic pcap).
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

pub(crate) fn filter(args: FilterArgs) -> ExitCode {
    match run_filter(&args) {
        Ok(code) => code,
        Err(e) => e.exit(),
    }
}

fn run_filter(args: &FilterArgs) -> Result<ExitCode, Fail> {
    let Loaded::Firewall { fw, base, .. } = load(&args.rules, &args.source)? else {
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
    let family = base.iter().find(|b| b.chain == entered).and_then(|b| b.family.version());
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
    let file = std::fs::File::create(&args.output)
        .map_err(|e| Fail(format!("{}: {e}", args.output.display()), 2))?;
    let mut writer: Option<rampart_capture::PcapWriter<io::BufWriter<std::fs::File>>> = None;
    let mut file = Some(io::BufWriter::new(file));
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
        &mut |f| {
            if writer.is_none() {
                let out = file.take().expect("one writer");
                writer = Some(rampart_capture::PcapWriter::new(out, f.link, 262_144, true)?);
            }
            writer.as_mut().expect("just made").write(f.ts, f.origlen, f.data)
        },
    );
    let flushed = match writer.as_mut() {
        Some(w) => w.flush(),
        None => file.as_mut().map_or(Ok(()), |f| f.flush()),
    };
    let (counts, error) = result
        .and_then(|r| flushed.map(|()| r))
        .map_err(|e| Fail(format!("{}: {e}", args.output.display()), 1))?;
    let mut out = io::stdout().lock();
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
            if e.is_usage() { 2 } else { 1 },
        )),
        None => Ok(ExitCode::SUCCESS),
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
    let trace = parse_trace(&args.trace.display().to_string(), &read(&args.trace)?)
        .map_err(|e| Fail(e.to_string(), 2))?;
    let headers: Vec<Header> = trace.iter().map(|t| t.header).collect();
    let started = Instant::now();
    let rules = match load(&args.rules, &args.source)? {
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
        let times = passes(headers.len(), || {
            compiled.classify_batch(std::hint::black_box(&headers), &mut out);
        });
        let stats = compiled.stats();
        let (update, proof) = updates(&rules, args.verify)?;
        let proof = match proof {
            Some(p) => format!(
                ",\"proof_us\":{:.1},\"full_proofs\":{},\"full_proof_ms\":{:.1},\"region_proof_us\":{:.1}",
                p.per_update_us, p.full, p.full_ms, p.region_us
            ),
            None => String::new(),
        };
        let json = format!(
            "{{\"rules\":{},\"headers\":{},\"lookup_ns\":{:.1},\"build_ms\":{:.2},\"bytes_per_rule\":{:.1},\"update_us\":{:.2}{proof}}}",
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
        let times = passes(headers.len(), || {
            for h in headers {
                std::hint::black_box(fw.evaluate(&packet(std::hint::black_box(h))));
            }
        });
        let rules: usize = rs.chains.iter().map(|c| c.rules.len()).sum();
        let json = format!(
            "{{\"rules\":{rules},\"headers\":{},\"lookup_ns\":{:.1},\"build_ms\":{:.2},\"bytes_per_rule\":{:.1},\"update_us\":null}}",
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

/// Mean microseconds for one insert or delete to be published, over 2,000 of each at random
/// places in the list.
/// Times `pass` (one lookup per header of `n`): one warm-up pass, then at least 7 passes and
/// at least 200 ms of them; returns the ns per header of each, sorted (take the median).
fn passes(n: usize, mut pass: impl FnMut()) -> Vec<f64> {
    pass();
    let started = Instant::now();
    let mut times = Vec::new();
    while times.len() < 7 || started.elapsed().as_millis() < 200 {
        let t = Instant::now();
        pass();
        times.push(t.elapsed().as_nanos() as f64 / n.max(1) as f64);
    }
    times.sort_by(f64::total_cmp);
    times
}

/// Mean time for one update to become visible, over a stream of 4,000 that alternate inserts
/// (the set's rules again, at new priorities between the old ones) and deletes (of random
/// rules, old or new), so background compiles start and are installed as they would in use.
/// With `prove`, each update is also proved (by its rule's box, or in full after a compile):
/// the mean proof time per update and the number of full proofs come back too.
/// Proof times over an update stream.
struct Proofs {
    /// All proof time over the updates.
    per_update_us: f64,
    /// Full proofs (after compiles).
    full: usize,
    /// Mean time of a full proof.
    full_ms: f64,
    /// Mean time of a proof by one rule's box.
    region_us: f64,
}

fn updates(rules: &[Rule], prove: bool) -> Result<(f64, Option<Proofs>), Fail> {
    struct Proving {
        on: bool,
        prover: rampart_policy::live::LiveProver,
        time: f64,
        full: usize,
        full_time: f64,
    }
    impl Proving {
        fn check(&mut self, c: &Classifier) -> Result<(), Fail> {
            if !self.on {
                return Ok(());
            }
            let t = Instant::now();
            let proof =
                self.prover.check(c).map_err(|e| Fail(format!("after an update: {e}"), 3))?;
            let took = t.elapsed().as_secs_f64();
            self.time += took;
            self.full += usize::from(proof.full);
            if proof.full {
                self.full_time += took;
            }
            Ok(())
        }
    }
    let mut c = Classifier::new(rules);
    let mut p =
        Proving { on: prove, prover: Default::default(), time: 0.0, full: 0, full_time: 0.0 };
    if prove {
        // New bases are proved by the compiling thread; the writer proves the changes.
        p.prover.attach(&mut c);
    }
    p.check(&c)?;
    let (first_proof, first_full) = (p.time, p.full);
    p.full_time = 0.0;
    let mut present: Vec<u64> = (0..rules.len()).map(Classifier::initial_priority).collect();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let n = 4000;
    let (mut total, mut done) = (0.0, 0u32);
    for k in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if k % 2 == 0 || present.is_empty() {
            let i = x as usize % rules.len().max(1);
            let prio = Classifier::initial_priority(i) + 1 + (x >> 44);
            let rule = rules.get((x >> 20) as usize % rules.len().max(1)).copied();
            let t = Instant::now();
            let ok = c.insert(prio, rule.unwrap_or(Rule::ANY)).is_ok();
            total += t.elapsed().as_secs_f64();
            if ok {
                present.push(prio);
                done += 1;
                p.check(&c)?;
            }
        } else {
            let prio = present.swap_remove(x as usize % present.len());
            let t = Instant::now();
            c.delete(prio).expect("present");
            total += t.elapsed().as_secs_f64();
            done += 1;
            p.check(&c)?;
        }
    }
    let per = |t: f64| t * 1e6 / f64::from(done.max(1));
    // The first proof (of the set as loaded) is not an update's.
    let fulls = p.full - first_full;
    let regions = (done as usize).saturating_sub(fulls).max(1);
    let proof = prove.then(|| Proofs {
        per_update_us: per(p.time - first_proof),
        full: fulls,
        full_ms: p.full_time * 1e3 / fulls.max(1) as f64,
        region_us: (p.time - first_proof - p.full_time) * 1e6 / regions as f64,
    });
    Ok((per(total), proof))
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
