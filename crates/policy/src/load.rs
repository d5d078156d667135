//! Rule files loaded for [`questions`](crate::questions), and answers replayed through the
//! classifier that runs the rules.
//!
//! [`load_models`] reads one or more rule files as every rampart tool reads them
//! ([`rampart_classify::load`]), lowers them together (two rule sets share interface ranks
//! and application names, so their diagrams compare) and builds each one's [`Model`] in one
//! [`Manager`]. A packet the diagrams answer with goes back through the running classifier
//! ([`replay`], [`agree`]): a disagreement is a bug in one of them, reported with the packet.

use std::net::IpAddr;
use std::path::Path;

use rampart_classify::firewall::{Firewall, Packet as FwPacket};
use rampart_classify::linear::first_match;
use rampart_classify::load::{LoadError, LoadOptions, Loaded as Read, firewall_error};
use rampart_classify::{Header, Rule};

use crate::dd::Manager;
use crate::questions::{Outcome, Packet};
use crate::rules::{self, Layout, Model};

/// A rule set ready for questions: what runs it (its model comes beside it).
#[derive(Debug)]
pub enum Loaded {
    /// A ClassBench list (run by the first-match scan).
    ClassBench(Vec<Rule>),
    /// A firewall rule set, lowered.
    Firewall(Box<Firewall>),
}

/// Why rule sets could not be loaded or an answer not trusted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// A rule file could not be read, parsed or lowered.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A ClassBench list and a firewall rule set were given together.
    #[error("a ClassBench list and a firewall rule set have different fields")]
    Mixed,
    /// A rule matches on something that is not a property of the packet (its message names
    /// the file, line and rule).
    #[error("{0}")]
    Unmodelled(String),
    /// The diagram and the running classifier disagree on a packet.
    #[error("{0}")]
    Disagree(String),
    /// The manager ran past its node limit: no answer either way.
    #[error("gave up: the decision diagrams passed {0} nodes; no answer either way")]
    GaveUp(usize),
}

/// Loads one or more rule sets into one manager, read and checked as every tool reads rule
/// files; several firewall rule sets share interface ranks and application names.
pub fn load_models(
    paths: &[&Path],
    opts: &LoadOptions,
) -> Result<(Manager, Vec<(Loaded, Model)>), VerifyError> {
    let parsed = paths
        .iter()
        .map(|p| rampart_classify::load::parse_file(p, opts))
        .collect::<Result<Vec<_>, _>>()?;
    let classbench = parsed.iter().all(|p| p.rules.is_none());
    if !classbench && parsed.iter().any(|p| p.rules.is_none()) {
        return Err(VerifyError::Mixed);
    }
    if classbench {
        let mut m = rules::manager(Layout::ClassBench);
        let mut out = Vec::new();
        for p in paths {
            let Read::ClassBench(rs) = rampart_classify::load::load(p, opts)? else {
                unreachable!("told ClassBench above")
            };
            let model = rules::classbench(&mut m, &rs);
            out.push((Loaded::ClassBench(rs), model));
        }
        return Ok((m, out));
    }
    let mut names = Vec::new();
    for (pr, p) in parsed.iter().zip(paths) {
        let rs = pr.rules.as_ref().expect("a firewall rule set");
        names.extend(
            Firewall::interface_names(rs, &pr.chain).map_err(|e| firewall_error(p, rs, e))?,
        );
    }
    let mut apps: Vec<String> = Vec::new();
    for pr in &parsed {
        for c in &pr.rules.as_ref().expect("a firewall rule set").chains {
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
    for (pr, p) in parsed.iter().zip(paths) {
        let rs = pr.rules.as_ref().expect("a firewall rule set");
        let fw = Firewall::from_iptables_with_names(rs, &pr.chain, &pr.sets, &names)
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
            return Err(VerifyError::Unmodelled(format!(
                "{}:{}: rule {} uses {what}, which verify does not model; rampart filter and rampart firewall run it",
                p.display(),
                e.line,
                e.name
            )));
        }
        let model = rules::firewall(&mut m, &fw, &mut apps);
        out.push((Loaded::Firewall(Box::new(fw)), model));
    }
    // Every model must know every application name for printing.
    for (_, model) in &mut out {
        model.apps.clone_from(&apps);
    }
    Ok((m, out))
}

/// What the running classifier does to a packet: the deciding entry (`None` when it cannot
/// say: an IPv6 packet for a ClassBench list, an application for a firewall rule set).
pub fn replay(l: &Loaded, p: &Packet) -> Option<usize> {
    match l {
        Loaded::ClassBench(rs) => {
            let (IpAddr::V4(s), IpAddr::V4(d)) = (p.src, p.dst) else {
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

/// Checks that the classifier agrees with the diagram's outcome `o` for a packet.
pub fn agree(l: &Loaded, model: &Model, p: &Packet, o: &Outcome) -> Result<(), VerifyError> {
    match replay(l, p) {
        Some(e) if e != o.entry => Err(VerifyError::Disagree(format!(
            "verifier and classifier disagree on packet {p}: the diagram says {}, the classifier {}",
            model.entries[o.entry].name, model.entries[e].name
        ))),
        _ => Ok(()),
    }
}

/// An error when the manager ran past its node limit (it answered nothing).
pub fn within_limit(m: &Manager) -> Result<(), VerifyError> {
    if m.exceeded() { Err(VerifyError::GaveUp(m.len())) } else { Ok(()) }
}
