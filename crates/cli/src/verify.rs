//! `rampart verify`: questions about rule sets, answered on decision diagrams, with every
//! packet answer replayed through the classifier that runs the rules.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Subcommand;
use rampart_policy::load::{agree, load_models, within_limit};
use rampart_policy::questions::{self, Comparison, Packet, Reason};
use rampart_policy::rules::{Action, Model};

use crate::Fail;
use crate::classify::RuleSource as Source;

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

fn outcome_line(model: &Model, o: &questions::Outcome) -> String {
    format!("{} {}", o.action.name(), model.entries[o.entry].name)
}

pub(crate) fn run(cmd: VerifyCmd) -> Result<ExitCode, Fail> {
    match cmd {
        VerifyCmd::Nkpl { files, dot, limit } => crate::nkpl::run(&files, dot.as_deref(), limit),
        VerifyCmd::Test { rules, packet, source } => {
            let p = Packet::parse(&packet).map_err(|e| Fail(e.to_string(), 2))?;
            let (m, loaded) = load_models(&[&rules], &source.options())?;
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
            let (mut m, loaded) = load_models(&[&rules], &source.options())?;
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
            let (mut m, mut loaded) = load_models(&[&a, &b], &source.options())?;
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
            let (mut m, mut loaded) = load_models(&[&rules], &source.options())?;
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
