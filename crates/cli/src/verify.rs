//! `rampart verify`: questions about rule sets, answered on decision diagrams, with every
//! packet answer replayed through the classifier that runs the rules.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Subcommand;
use rampart_classify::firewall::{Firewall, Packet as FwPacket};
use rampart_classify::linear::first_match;
use rampart_classify::{Header, Rule};
use rampart_policy::dd::Manager;
use rampart_policy::questions::{self, Comparison, Packet, Reason};
use rampart_policy::rules::{self, Action, Layout, Model};

use crate::classify::{Loaded as Read, RuleSource as Source, firewall_error, load, read_rule_set};
use crate::input::Fail;

/// `rampart verify` subcommands.
#[derive(Subcommand, Debug)]
pub(crate) enum VerifyCmd {
    /// The action a packet gets and the rule that decides it.
    Test {
        /// The rule file.
        rules: PathBuf,
        /// The packet: `PROTO SRC[:PORT] -> DST[:PORT] [iif N] [oif N] [ct S] [flags F] [app A]`.
        #[arg(long)]
        packet: String,
        #[command(flatten)]
        source: Source,
    },
    /// Rules no packet can reach, each with a minimal set of earlier rules covering it.
    Shadowed {
        /// The rule file.
        rules: PathBuf,
        #[command(flatten)]
        source: Source,
    },
    /// Whether two rule sets give every packet the same action; if not, a packet where they
    /// differ (exit status 1).
    Compare {
        /// The first rule file.
        a: PathBuf,
        /// The second.
        b: PathBuf,
        #[command(flatten)]
        source: Source,
    },
    /// A packet meeting a constraint that gets an action (exit status 1 when there is none).
    Search {
        /// The rule file.
        rules: PathBuf,
        /// The constraint: words such as `tcp dst 10.0.0.0/8 dport 22-23 iif eth0 ct new`.
        #[arg(long = "where", default_value = "")]
        constraint: String,
        /// The action.
        #[arg(long, value_parser = ["accept", "drop", "reject"])]
        action: String,
        #[command(flatten)]
        source: Source,
    },
    /// Runs NKPL files (KATch's NetKAT language): one line per `check`, starting `ok` or
    /// `fail`, with its time; exit status 1 if a check fails, 2 if a file has an error or
    /// no check was found.
    Nkpl {
        /// NKPL files, or directories whose `.nkpl` files (sub-folders included) run in path
        /// order.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Write each `graphviz "name" e` statement's diagram to DIR/name.dot (without it,
        /// those statements are skipped).
        #[arg(long, value_name = "DIR")]
        dot: Option<PathBuf>,
        /// Diagram nodes one file may build before its checks give up.
        #[arg(long, default_value_t = rampart_policy::spp::DEFAULT_LIMIT)]
        limit: usize,
    },
}

/// A rule set ready for questions: its model and what runs it.
enum Loaded {
    ClassBench(Vec<Rule>),
    Firewall(Box<Firewall>),
}

/// Loads one or two rule sets (two share interface ranks and application names) into one
/// manager, read and checked as every command reads rule files.
fn load_models(paths: &[&Path], src: &Source) -> Result<(Manager, Vec<(Loaded, Model)>), Fail> {
    let parsed = paths.iter().map(|p| read_rule_set(p, src)).collect::<Result<Vec<_>, _>>()?;
    let classbench = parsed.iter().all(|p| p.0.is_none());
    if !classbench && parsed.iter().any(|p| p.0.is_none()) {
        return Err(Fail(
            "a ClassBench list and a firewall rule set have different fields".into(),
            2,
        ));
    }
    if classbench {
        let mut m = rules::manager(Layout::ClassBench);
        let mut out = Vec::new();
        for p in paths {
            let Read::ClassBench(rs) = load(p, src)? else { unreachable!("told ClassBench above") };
            let model = rules::classbench(&mut m, &rs);
            out.push((Loaded::ClassBench(rs), model));
        }
        return Ok((m, out));
    }
    let mut names = Vec::new();
    for ((rs, _, chain, _, _), p) in parsed.iter().zip(paths) {
        let rs = rs.as_ref().expect("a firewall rule set");
        names.extend(Firewall::interface_names(rs, chain).map_err(|e| firewall_error(p, rs, e))?);
    }
    let mut apps: Vec<String> = Vec::new();
    for (rs, _, _, _, _) in &parsed {
        for c in &rs.as_ref().expect("a firewall rule set").chains {
            for r in &c.rules {
                for a in &r.app {
                    if !apps.iter().any(|x| x.eq_ignore_ascii_case(a)) {
                        apps.push(a.to_ascii_lowercase());
                    }
                }
            }
        }
    }
    names.sort();
    names.dedup();
    let mut m = rules::firewall_manager(names.len(), apps.len());
    let mut out = Vec::new();
    for ((rs, sets, chain, _, _), p) in parsed.iter().zip(paths) {
        let rs = rs.as_ref().expect("a firewall rule set");
        let fw = Firewall::from_iptables_with_names(rs, chain, sets, &names)
            .map_err(|e| firewall_error(p, rs, e))?;
        // What a rule matches must be a property of the packet for the diagrams to hold it.
        if let Some(b) =
            fw.boxes().find(|b| b.limit.is_some() || b.addr_types.iter().any(Option::is_some))
        {
            let e = &fw.entries()[b.entry];
            let what = if b.limit.is_some() {
                "-m limit (its matches depend on the packet rate)"
            } else {
                "-m addrtype (its matches depend on the host's addresses)"
            };
            return Err(Fail(
                format!(
                    "{}:{}: rule {} uses {what}, which verify does not model; rampart filter and rampart firewall run it",
                    p.display(),
                    e.line,
                    e.name
                ),
                2,
            ));
        }
        let model = rules::firewall(&mut m, &fw, &mut apps);
        out.push((Loaded::Firewall(Box::new(fw)), model));
    }
    // Both models must know every application name for printing.
    for (_, model) in &mut out {
        model.apps.clone_from(&apps);
    }
    Ok((m, out))
}

/// What the running classifier does to a packet: the deciding entry.
fn replay(l: &Loaded, p: &Packet) -> Option<usize> {
    match l {
        Loaded::ClassBench(rs) => {
            let (std::net::IpAddr::V4(s), std::net::IpAddr::V4(d)) = (p.src, p.dst) else {
                return None;
            };
            let h = Header([
                u32::from(s),
                u32::from(d),
                u32::from(p.sport),
                u32::from(p.dport),
                u32::from(p.proto),
            ]);
            Some(first_match(rs, &h).unwrap_or(rs.len()))
        }
        Loaded::Firewall(fw) => {
            // The running classifier does not identify applications yet.
            if p.app.is_some() {
                return None;
            }
            let pk = FwPacket {
                src: p.src,
                dst: p.dst,
                sport: p.sport,
                dport: p.dport,
                proto: p.proto,
                iif: p.iif.as_deref().unwrap_or(""),
                oif: p.oif.as_deref().unwrap_or(""),
                ct: p.ct,
                tcp_flags: p.flags,
                app: &[],
                time: 0,
            };
            Some(fw.evaluate(&pk).entry)
        }
    }
}

fn outcome_line(model: &Model, o: &questions::Outcome) -> String {
    format!("{} {}", o.action.name(), model.entries[o.entry].name)
}

/// Checks that the classifier agrees with the diagram on a packet; a disagreement is a bug
/// in one of them, reported with the packet.
fn agree(l: &Loaded, model: &Model, p: &Packet, o: &questions::Outcome) -> Result<(), Fail> {
    match replay(l, p) {
        Some(e) if e != o.entry => Err(Fail(
            format!(
                "verifier and classifier disagree on packet {p}: the diagram says {}, the classifier {}",
                model.entries[o.entry].name, model.entries[e].name
            ),
            3,
        )),
        _ => Ok(()),
    }
}

/// A manager that ran past its node limit answered nothing.
fn within_limit(m: &Manager) -> Result<(), Fail> {
    if m.exceeded() {
        return Err(Fail(
            format!(
                "gave up: the decision diagrams passed {} nodes; no answer either way",
                m.len()
            ),
            1,
        ));
    }
    Ok(())
}

pub(crate) fn run(cmd: VerifyCmd) -> ExitCode {
    match run_cmd(cmd) {
        Ok(code) => code,
        Err(e) => e.exit(),
    }
}

fn run_cmd(cmd: VerifyCmd) -> Result<ExitCode, Fail> {
    match cmd {
        VerifyCmd::Nkpl { files, dot, limit } => crate::nkpl::run(&files, dot.as_deref(), limit),
        VerifyCmd::Test { rules, packet, source } => {
            let p = Packet::parse(&packet).map_err(|e| Fail(e.to_string(), 2))?;
            let (m, loaded) = load_models(&[&rules], &source)?;
            let (l, model) = &loaded[0];
            let v = p.fields(model).ok_or_else(|| {
                Fail("an IPv6 packet cannot be classified against ClassBench rules".into(), 2)
            })?;
            within_limit(&m)?;
            let o = questions::test(&m, model, &v);
            agree(l, model, &p, &o)?;
            println!("{}", outcome_line(model, &o));
            Ok(ExitCode::SUCCESS)
        }
        VerifyCmd::Shadowed { rules, source } => {
            let started = Instant::now();
            let (mut m, loaded) = load_models(&[&rules], &source)?;
            let (_, model) = &loaded[0];
            let found = questions::shadowed(&mut m, model);
            within_limit(&m)?;
            for s in &found {
                let name = &model.entries[s.entry].name;
                let names = |v: &[usize]| {
                    v.iter().map(|&j| model.entries[j].name.as_str()).collect::<Vec<_>>().join(",")
                };
                match s.reason {
                    Reason::Unmatchable => {
                        println!("unmatchable {name}: no packet meets its conditions");
                    }
                    Reason::Unreached => {
                        let chain = &model.chains[model.entries[s.entry].chain];
                        let why = if chain.arrive == rampart_policy::dd::FALSE {
                            format!("no packet reaches chain {}", chain.name)
                        } else {
                            format!(
                                "no packet that reaches chain {} meets its conditions",
                                chain.name
                            )
                        };
                        println!("unreachable {name}: {why} (jumps: {})", names(&s.by));
                    }
                    Reason::Covered => {
                        let how = if s.actions_differ { "actions differ" } else { "same action" };
                        println!("shadowed {name} by {}; {how}", names(&s.by));
                    }
                }
            }
            eprintln!(
                "rampart: {} of {} rules can never decide a packet ({:.1} ms)",
                found.len(),
                model.entries.len().saturating_sub(1),
                started.elapsed().as_secs_f64() * 1e3
            );
            Ok(ExitCode::SUCCESS)
        }
        VerifyCmd::Compare { a, b, source } => {
            let (mut m, mut loaded) = load_models(&[&a, &b], &source)?;
            let (second, first) = loaded.split_at_mut(1);
            let (la, ma) = &mut second[0];
            let (lb, mb) = &mut first[0];
            let answer = questions::compare(&mut m, ma, mb);
            within_limit(&m)?;
            match answer {
                Comparison::Equivalent => {
                    println!("equivalent: every packet gets the same action from both");
                    Ok(ExitCode::SUCCESS)
                }
                Comparison::Differ { witness, a: oa, b: ob, count } => {
                    let p = Packet::from_fields(ma, &witness);
                    agree(la, ma, &p, &oa)?;
                    agree(lb, mb, &p, &ob)?;
                    let all = m.count(ma.valid, &|v| v == 1);
                    let pct = 100.0 * count / all;
                    let pct =
                        if pct >= 0.001 { format!("{pct:.3}%") } else { format!("{pct:.2e}%") };
                    println!(
                        "differ: {} of {} packets get different actions ({pct})",
                        big(count),
                        big(all)
                    );
                    println!("packet: {p}");
                    println!("{}: {}", a.display(), outcome_line(ma, &oa));
                    println!("{}: {}", b.display(), outcome_line(mb, &ob));
                    Ok(ExitCode::from(1))
                }
            }
        }
        VerifyCmd::Search { rules, constraint, action, source } => {
            let (mut m, mut loaded) = load_models(&[&rules], &source)?;
            let (l, model) = &mut loaded[0];
            let set = questions::constraint(&mut m, model, &constraint)
                .map_err(|e| Fail(e.to_string(), 2))?;
            let act = match action.as_str() {
                "accept" => Action::Accept,
                "drop" => Action::Drop,
                _ => Action::Reject,
            };
            let found = questions::search(&mut m, model, set, act);
            within_limit(&m)?;
            match found {
                Some(v) => {
                    let p = Packet::from_fields(model, &v);
                    let o = questions::test(&m, model, &v);
                    agree(l, model, &p, &o)?;
                    println!("packet: {p}");
                    println!("{}", outcome_line(model, &o));
                    Ok(ExitCode::SUCCESS)
                }
                None => {
                    println!("none: no packet meeting the constraint gets {action}");
                    Ok(ExitCode::from(1))
                }
            }
        }
    }
}

/// A packet count: exact below 2^53, else as a power of two.
fn big(x: f64) -> String {
    if x < 9.0e15 { format!("{x:.0}") } else { format!("2^{:.1}", x.log2()) }
}
