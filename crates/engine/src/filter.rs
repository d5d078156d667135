//! `rampart filter`: a firewall rule set applied to a capture of one link by the stateful
//! data plane (connection tracking, so `ct state established` matches the replies of
//! connections the rules accepted), writing out what it accepts.

use std::io;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use rampart_capture::{Capture, Frame};
use rampart_flow::TableConfig;

use crate::FlowsConfig;
use crate::driver::{Consumer, Limits, read_batches};
use crate::pipeline::{Events, Pipeline, Verdict};
use crate::stateful::{RuleSet, Stateful, StatefulConfig};
use crate::{RunError, Summary};

/// What filtering a capture counted.
#[derive(Clone, Debug, Default)]
pub struct FilterCounts {
    /// Frames read.
    pub packets: u64,
    /// Frames passed on (accepted, and frames that are not IP when those pass).
    pub passed: u64,
    /// Frames that are not IP packets rampart parses (passed or dropped as asked).
    pub non_ip: u64,
    /// Frames of link types rampart does not parse (never passed: the rules could not be
    /// applied to them).
    pub unsupported: u64,
    /// Per base chain, per entry: how many packets matched it.
    pub hits: Vec<Vec<u64>>,
    /// Connection tracking's counters.
    pub conntrack: rampart_conntrack::Stats,
    /// Packets decided from their flow's cached decision, and by the rule set.
    pub decided: (u64, u64),
}

/// How to filter.
#[derive(Clone, Copy, Debug)]
pub struct FilterOptions {
    /// The verdict for frames that are not IP packets rampart parses (ARP, malformed headers).
    pub non_ip: Verdict,
    /// Connection tracking's settings.
    pub ct: rampart_conntrack::Config,
    /// Most connections tracked at once.
    pub max_flows: usize,
}

impl Default for FilterOptions {
    fn default() -> Self {
        Self { non_ip: Verdict::Drop, ct: rampart_conntrack::Config::default(), max_flows: 262_144 }
    }
}

struct Filtering<'p> {
    pipeline: Pipeline,
    verdicts: Vec<Verdict>,
    events: Events,
    pass: &'p mut dyn FnMut(&Frame<'_>) -> io::Result<()>,
    passed: u64,
    unsupported: u64,
}

impl Consumer for Filtering<'_> {
    fn batch(&mut self, frames: &[Frame<'_>], s: &mut Summary) -> io::Result<()> {
        self.events.clear();
        // The data plane's own `non_ip` setting decides frames without a flow.
        self.pipeline.process(frames, Verdict::Drop, &mut self.verdicts, &mut self.events, s);
        for (f, v) in frames.iter().zip(&self.verdicts) {
            if !f.link.is_supported() {
                self.unsupported += 1;
            } else if *v == Verdict::Accept {
                self.passed += 1;
                (self.pass)(f)?;
            }
        }
        Ok(())
    }
}

/// Applies `rules` to every frame of `capture` as a stateful firewall on one link (each
/// packet meets the rule set once, with its connection's `ct state`), calling `pass` with
/// each frame it accepts (and, with [`FilterOptions::non_ip`] `Accept`, each frame that is
/// not IP). Frames of link types rampart does not parse are never passed. Returns the counts
/// and the error that ended the capture early, if any (every frame before it was filtered).
pub fn filter_capture(
    capture: &mut Capture,
    rules: Arc<RuleSet>,
    opts: FilterOptions,
    stop: &AtomicBool,
    pass: &mut dyn FnMut(&Frame<'_>) -> io::Result<()>,
) -> io::Result<(FilterCounts, Option<RunError>)> {
    let cfg = StatefulConfig { ct: opts.ct, non_ip: opts.non_ip, ..StatefulConfig::default() };
    let table = TableConfig { max_flows: opts.max_flows, ..TableConfig::default() };
    // Identification only when a rule asks for an application.
    let dpi = if rules.uses_app() { FlowsConfig::default().dpi } else { None };
    let pipeline = Pipeline::new(&FlowsConfig { table, rtt: None, dpi, ..FlowsConfig::default() })
        .with_stateful(Stateful::new(cfg, rules));
    let mut f = Filtering {
        pipeline,
        verdicts: Vec::new(),
        events: Events::default(),
        pass,
        passed: 0,
        unsupported: 0,
    };
    let mut s = Summary::default();
    let error = read_batches(capture, &Limits::none(256), None, stop, &mut s, &mut f, &mut |_| {})?;
    let st = f.pipeline.stateful().expect("the filter is stateful");
    let counts = FilterCounts {
        packets: s.packets,
        passed: f.passed,
        non_ip: s.non_ip,
        unsupported: f.unsupported,
        hits: st.hits(),
        conntrack: st.conntrack().stats(),
        decided: st.decided_counts(),
    };
    Ok((counts, error))
}
