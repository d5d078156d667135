//! `rampart filter`: a firewall rule set applied to a capture, through the pipeline.

use std::io;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use rampart_capture::{Capture, Frame};
use rampart_classify::firewall::Firewall;
use rampart_flow::TableConfig;

use crate::driver::{Consumer, Limits, read_batches};
use crate::pipeline::{Events, Pipeline, Policy, Verdict};
use crate::{RunError, Summary};

/// What filtering a capture counted.
#[derive(Clone, Debug, Default)]
pub struct FilterCounts {
    /// Frames read.
    pub packets: u64,
    /// Frames passed on (accepted, and frames that are not IP when those pass).
    pub passed: u64,
    /// Frames that were not IP.
    pub non_ip: u64,
    /// Frames of a link type rampart does not parse: the rules cannot be applied to them, so
    /// they are not passed on.
    pub unsupported: u64,
    /// Packets that reached each entry of [`Firewall::entries`] (as netfilter's counters:
    /// jumps and `RETURN`s count too).
    pub hits: Vec<u64>,
}

/// How [`filter_capture`] treats what the rule set does not see.
#[derive(Clone, Copy, Debug)]
pub struct FilterOptions {
    /// Frames that are not IP (ARP, LLDP, ...), which an IP filter table never sees: passed
    /// (as a Linux bridge without `br_netfilter` does) or dropped.
    pub non_ip: Verdict,
}

impl Default for FilterOptions {
    fn default() -> Self {
        Self { non_ip: Verdict::Accept }
    }
}

struct Filtering<'p> {
    pipeline: Pipeline,
    non_ip: Verdict,
    verdicts: Vec<Verdict>,
    events: Events,
    pass: &'p mut dyn FnMut(&Frame<'_>) -> io::Result<()>,
    passed: u64,
    unsupported: u64,
}

impl Consumer for Filtering<'_> {
    fn batch(&mut self, frames: &[Frame<'_>], s: &mut Summary) -> io::Result<()> {
        self.events.clear();
        self.pipeline.process(frames, self.non_ip, &mut self.verdicts, &mut self.events, s);
        for (f, v) in frames.iter().zip(&self.verdicts) {
            if !f.link.is_supported() {
                // The rules cannot be applied to what rampart cannot parse: not passed on.
                self.unsupported += 1;
            } else if *v == Verdict::Accept {
                self.passed += 1;
                (self.pass)(f)?;
            }
        }
        Ok(())
    }
}

/// Evaluates every IP packet of `capture` against `fw` and hands the accepted ones (and,
/// as `opts` says, the frames that are not IP) to `pass`, in capture order; frames of a link
/// type rampart does not parse are only counted. Connection state is not known yet, so rules
/// with `--ctstate` do not match; input and output interfaces are unknown for a capture file,
/// so `-i`/`-o` rules only match negated.
pub fn filter_capture(
    capture: &mut Capture,
    fw: &Firewall,
    stop: &AtomicBool,
    pass: &mut dyn FnMut(&Frame<'_>) -> io::Result<()>,
) -> io::Result<(FilterCounts, Option<RunError>)> {
    filter_capture_with(capture, fw, FilterOptions::default(), stop, pass)
}

/// [`filter_capture`] with options.
pub fn filter_capture_with(
    capture: &mut Capture,
    fw: &Firewall,
    opts: FilterOptions,
    stop: &AtomicBool,
    pass: &mut dyn FnMut(&Frame<'_>) -> io::Result<()>,
) -> io::Result<(FilterCounts, Option<RunError>)> {
    let pipeline =
        Pipeline::table_only(TableConfig::default()).with_policy(Policy::new(Arc::new(fw.clone())));
    let mut f = Filtering {
        pipeline,
        non_ip: opts.non_ip,
        verdicts: Vec::new(),
        events: Events::default(),
        pass,
        passed: 0,
        unsupported: 0,
    };
    let mut s = Summary::default();
    let error = read_batches(capture, &Limits::none(256), None, stop, &mut s, &mut f, &mut |_| {})?;
    f.pipeline.stats_into(&mut s);
    let counts = FilterCounts {
        packets: s.packets,
        passed: f.passed,
        non_ip: s.non_ip,
        unsupported: f.unsupported,
        hits: std::mem::take(&mut s.rule_hits),
    };
    Ok((counts, error))
}
