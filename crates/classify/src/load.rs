//! Rule files read the one way every tool reads them: decompressed if need be (see
//! [`source`]), their format told from their text unless given, parsed, and
//! for firewall rule sets the entered chain, every chain it reaches, their jumps and the sets
//! they name checked by lowering them onto [`Firewall`]. Errors name the file (and, where
//! there is one, the line) and say what to give instead.
//!
//! - [`load`]: a ClassBench list, or a firewall rule set lowered from one entered chain.
//! - [`load_hooked`]: a firewall rule set lowered at its hooks, as a stateful data plane
//!   runs it (every nftables base chain, iptables' INPUT and FORWARD, or one chain on every
//!   path).
//! - [`parse`] and [`read`]: the steps before lowering, for tools that lower several rule
//!   sets together (the verifier ranks interfaces over all of them).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::Rule;
use crate::classbench::parse_rules;
use crate::firewall::{Firewall, FirewallError};
use crate::ipset::IpSet;
use crate::iptables::{ChainError, Ruleset};
use crate::nft::{BaseChain, Hook};
use crate::source::{self, Format};

/// How to read a rule file: the options every tool that reads one shares.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// Its format (`None`: told from its text, [`source::detect`]).
    pub format: Option<Format>,
    /// The chain packets enter (`None`: INPUT for iptables, the first table for rampart
    /// syntax, for nftables the forward hook's first base chain, else the only base chain; an
    /// nftables chain may be named `FAMILY TABLE CHAIN`).
    pub chain: Option<String>,
    /// A file of IP sets the rules name (`ipset save` output).
    pub sets: Option<PathBuf>,
}

/// A rule file that could not be read, parsed or lowered: the message names the file (and
/// the line, where there is one).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct LoadError {
    message: String,
}

impl LoadError {
    /// An error with this message (which should name the file).
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into() }
    }

    /// What went wrong.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<source::SourceError> for LoadError {
    fn from(e: source::SourceError) -> Self {
        Self::new(e.to_string())
    }
}

/// IP sets by name.
pub type Sets = HashMap<String, IpSet>;

/// A rule file read and checked.
#[derive(Debug)]
pub enum Loaded {
    /// A ClassBench list.
    ClassBench(Vec<Rule>),
    /// A firewall rule set lowered from its entered chain.
    Firewall {
        /// The rule set as parsed.
        rs: Ruleset,
        /// The sets it names (its own and those of [`LoadOptions::sets`]).
        sets: Sets,
        /// It lowered, from the entered chain.
        fw: Box<Firewall>,
        /// Its format.
        format: Format,
        /// An nftables rule set's base chains (empty for the other formats).
        base: Vec<BaseChain>,
    },
}

/// A rule file parsed, not lowered.
#[derive(Debug)]
pub struct Parsed {
    /// The firewall rule set (`None` for a ClassBench list, which [`load`] reads whole).
    pub rules: Option<Ruleset>,
    /// The sets it names (its own and those of [`LoadOptions::sets`]).
    pub sets: Sets,
    /// The chain packets enter.
    pub chain: String,
    /// Its format.
    pub format: Format,
    /// An nftables rule set's base chains (empty for the other formats).
    pub base: Vec<BaseChain>,
}

/// Reads, parses and checks a rule file: a ClassBench list, or a firewall rule set lowered
/// from its entered chain.
pub fn load(path: &Path, opts: &LoadOptions) -> Result<Loaded, LoadError> {
    load_with_names(path, opts, &[])
}

/// [`load`], ranking interfaces over `names` too (see
/// [`Firewall::from_iptables_with_names`]).
pub fn load_with_names(
    path: &Path,
    opts: &LoadOptions,
    names: &[String],
) -> Result<Loaded, LoadError> {
    let parsed = parse_file(path, opts)?;
    let Some(rs) = parsed.rules else {
        let rules = parse_rules(&path.display().to_string(), &source::read_text(path)?)
            .map_err(|e| LoadError::new(e.to_string()))?;
        if rules.is_empty() {
            return Err(LoadError::new(format!("{}: no rules", path.display())));
        }
        return Ok(Loaded::ClassBench(rules));
    };
    let fw = Firewall::from_iptables_with_names(&rs, &parsed.chain, &parsed.sets, names)
        .map_err(|e| firewall_error(path, &rs, e))?;
    Ok(Loaded::Firewall {
        rs,
        sets: parsed.sets,
        fw: Box::new(fw),
        format: parsed.format,
        base: parsed.base,
    })
}

/// A rule file's text (decompressed if need be), its name for messages, and its format:
/// given, or told from the text.
pub fn read(path: &Path, opts: &LoadOptions) -> Result<(String, String, Format), LoadError> {
    let text = source::read_text(path)?;
    let name = path.display().to_string();
    let format = match opts.format {
        Some(f) => f,
        None => source::detect(&text).map_err(|e| LoadError::new(format!("{name}: {e}")))?,
    };
    Ok((name, text, format))
}

/// Reads and parses a rule file without lowering it.
pub fn parse_file(path: &Path, opts: &LoadOptions) -> Result<Parsed, LoadError> {
    let (name, text, format) = read(path, opts)?;
    parse(&name, &text, format, opts)
}

/// Parses a rule file's text (`name` names it in messages) in `format`; an nftables file
/// enters at the chain [`LoadOptions::chain`] names, else its forward hook's first base
/// chain, else its only one.
pub fn parse(
    name: &str,
    text: &str,
    format: Format,
    opts: &LoadOptions,
) -> Result<Parsed, LoadError> {
    let mut base = Vec::new();
    let (rs, mut sets, first) = match format {
        Format::ClassBench => {
            return Ok(Parsed {
                rules: None,
                sets: Sets::new(),
                chain: String::new(),
                format,
                base,
            });
        }
        Format::Nft => {
            let nft = crate::nft::parse(name, text).map_err(|e| LoadError::new(e.to_string()))?;
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
            let chain = match &opts.chain {
                Some(c) => match nft.find_chain(c) {
                    Some(c) => c.to_string(),
                    None => {
                        return Err(LoadError::new(format!(
                            "{name}: no chain {c:?} (base chains: {})",
                            listed()
                        )));
                    }
                },
                None => match nft.default_chain() {
                    Some(b) => b.chain.clone(),
                    None => {
                        return Err(LoadError::new(format!(
                            "{name}: no base chain on the forward hook and not just one base chain; give --chain (base chains: {})",
                            listed()
                        )));
                    }
                },
            };
            base = nft.base;
            (nft.rules, nft.sets, chain)
        }
        Format::Iptables => {
            let rs =
                crate::iptables::parse(name, text).map_err(|e| LoadError::new(e.to_string()))?;
            if rs.chains.is_empty() {
                return Err(LoadError::new(format!(
                    "{name}: no chain in a *filter table (iptables-save output declares them as ':INPUT ACCEPT [0:0]' between '*filter' and 'COMMIT')"
                )));
            }
            (rs, Sets::new(), "INPUT".to_string())
        }
        Format::Rampart => {
            let (rs, sets) =
                crate::syntax::parse(name, text).map_err(|e| LoadError::new(e.to_string()))?;
            let Some(first) = rs.chains.iter().find(|c| c.policy.is_some()) else {
                return Err(LoadError::new(format!(
                    "{name}: no table (packets enter a 'table NAME {{ ... }}')"
                )));
            };
            let first = first.name.clone();
            (rs, sets, first)
        }
    };
    if let Some(p) = &opts.sets {
        sets.extend(load_sets(p)?);
    }
    let chain = if format == Format::Nft { first } else { opts.chain.clone().unwrap_or(first) };
    Ok(Parsed { rules: Some(rs), sets, chain, format, base })
}

/// Reads a file of IP sets (`ipset save` output).
pub fn load_sets(path: &Path) -> Result<Sets, LoadError> {
    crate::ipset::parse_ipset_save(&path.display().to_string(), &source::read_text(path)?)
        .map_err(|e| LoadError::new(e.to_string()))
}

/// A lowering error, naming the file and, for a jump loop or a missing set, the line of the
/// rule.
pub fn firewall_error(path: &Path, rs: &Ruleset, e: FirewallError) -> LoadError {
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
    LoadError::new(format!("{}{at}: {e}{hint}", path.display()))
}

/// A chain of a [`Hooked`] rule set: lowered, and where packets enter it.
#[derive(Clone, Debug)]
pub struct HookedChain {
    /// Its name.
    pub name: String,
    /// The hook it is entered at.
    pub hook: Hook,
    /// Its priority at the hook (lower first).
    pub priority: i32,
    /// Whether every packet enters it once, whatever its path (forwarded or for the host).
    pub every_path: bool,
    /// The address family (4 or 6) whose packets enter it; `None`: both.
    pub family: Option<u8>,
    /// Its rules, lowered.
    pub rules: Firewall,
}

/// A firewall rule set lowered at its hooks, as a stateful data plane runs it.
#[derive(Clone, Debug)]
pub struct Hooked {
    /// The file it came from, for messages.
    pub source: String,
    /// Its base chains, in file order.
    pub chains: Vec<HookedChain>,
}

/// Reads a rule file for a stateful data plane: an nftables file's base chains at their
/// hooks; an iptables-save file's INPUT and FORWARD chains at theirs (or the chain
/// [`LoadOptions::chain`] names, on every path); a rampart-syntax table (or the named chain)
/// on every path. A ClassBench list, which has no verdicts, is refused.
pub fn load_hooked(path: &Path, opts: &LoadOptions) -> Result<Hooked, LoadError> {
    let (name, text, format) = read(path, opts)?;
    let chain = |name: String, hook, priority, family, rules| HookedChain {
        name,
        hook,
        priority,
        every_path: false,
        family,
        rules,
    };
    if format == Format::Nft && opts.chain.is_none() {
        // Every base chain at its hook: no chain is "the" entered one.
        let mut nft = crate::nft::parse(&name, &text).map_err(|e| LoadError::new(e.to_string()))?;
        if let Some(p) = &opts.sets {
            nft.sets.extend(load_sets(p)?);
        }
        if nft.base.is_empty() {
            return Err(LoadError::new(format!(
                "{name}: no base chain (nothing would see a packet)"
            )));
        }
        let mut chains = Vec::with_capacity(nft.base.len());
        for b in &nft.base {
            let rules = Firewall::from_iptables(&nft.rules, &b.chain, &nft.sets)
                .map_err(|e| firewall_error(path, &nft.rules, e))?;
            chains.push(chain(b.chain.clone(), b.hook, b.priority, b.family.version(), rules));
        }
        return Ok(Hooked { source: name, chains });
    }
    let Parsed { rules: rs, sets, chain: entered, format, base } =
        parse(&name, &text, format, opts)?;
    let Some(rs) = rs else {
        return Err(LoadError::new(format!(
            "{name}: a ClassBench list has no verdicts; give a firewall rule set"
        )));
    };
    let lower =
        |c: &str| Firewall::from_iptables(&rs, c, &sets).map_err(|e| firewall_error(path, &rs, e));
    if format == Format::Iptables && opts.chain.is_none() {
        let mut chains = Vec::new();
        for (c, hook) in [("INPUT", Hook::Input), ("FORWARD", Hook::Forward)] {
            if rs.chains.iter().any(|x| x.name == c) {
                chains.push(chain(c.to_string(), hook, 0, None, lower(c)?));
            }
        }
        if chains.is_empty() {
            return Err(LoadError::new(format!("{name}: no INPUT or FORWARD chain; give --chain")));
        }
        return Ok(Hooked { source: name, chains });
    }
    // One chain every packet meets; an nftables chain only its table's family.
    let family = base.iter().find(|b| b.chain == entered).and_then(|b| b.family.version());
    let mut one = chain(entered.clone(), Hook::Forward, 0, family, lower(&entered)?);
    one.every_path = true;
    Ok(Hooked { source: name, chains: vec![one] })
}
