//! The inline driver: a pair of ports, every frame received on one either sent out of the
//! other or dropped, by the pipeline's verdict.
//!
//! A port pair is anything that implements [`Ports`]: AF_PACKET or AF_XDP rings on two
//! interfaces, or [`MemoryPorts`] in tests. Frames borrow the ports' receive buffers and stay
//! valid until the port has sent or released each one; the pipeline sees them in between, so
//! nothing is copied to decide. [`run_inline`] runs to completion per batch: receive, decide,
//! transmit, hand the events on.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rampart_capture::{Frame, Timestamp};
use rampart_wire::LinkType;

use crate::driver::{FINISH_CHUNK, Sink, emit, wall_clock};
use crate::pipeline::{Events, Pipeline, Verdict};
use crate::{Outcome, Summary};

/// Two ports of a link the engine sits on.
pub trait Ports {
    /// Receives up to `max` frames from either port (each frame's `interface` is the port it
    /// came in on, 0 or 1) and hands them to `decide`, which fills one verdict per frame.
    /// Then each accepted frame goes out of the other port and every frame's buffer is given
    /// back. Returns how many frames were received (0 when none came within the port's poll
    /// interval).
    fn exchange(
        &mut self,
        max: usize,
        decide: &mut dyn FnMut(&[Frame<'_>], &mut Vec<Verdict>),
    ) -> io::Result<usize>;
}

/// What an inline run counted besides the pipeline's summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InlineCounts {
    /// Frames sent out of the other port.
    pub forwarded: u64,
    /// Frames dropped (or rejected).
    pub dropped: u64,
}

/// Forwards between the two ports of `ports` until `stop` is set, deciding every frame with
/// `pipeline`; non-IP frames (ARP, LLDP) get `non_ip`. While the link is quiet, capture time
/// follows the wall clock so idle flows still end. At the stop, every live flow's record is
/// handed to `sink`.
pub fn run_inline(
    ports: &mut dyn Ports,
    pipeline: &mut Pipeline,
    non_ip: Verdict,
    batch: usize,
    stop: &AtomicBool,
    sink: &mut dyn Sink,
) -> io::Result<(Outcome, InlineCounts)> {
    let started = Instant::now();
    let mut s = Summary::default();
    let mut counts = InlineCounts::default();
    let mut events = Events::default();
    let mut verdicts = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        events.clear();
        let n = ports.exchange(batch, &mut |frames, out| {
            pipeline.process(frames, non_ip, &mut verdicts, &mut events, &mut s);
            out.clear();
            out.extend_from_slice(&verdicts);
        })?;
        if n == 0 {
            pipeline.advance(wall_clock(), u32::MAX, &mut events);
        }
        for v in &verdicts[..n.min(verdicts.len())] {
            match v {
                Verdict::Accept => counts.forwarded += 1,
                Verdict::Drop | Verdict::Reject => counts.dropped += 1,
            }
        }
        emit(&mut s, &events, &[], sink)?;
        sink.tick()?;
    }
    s.interrupted = true;
    let order = pipeline.finish_order();
    for part in order.chunks(FINISH_CHUNK) {
        events.clear();
        pipeline.finish_flows(part, &mut events);
        emit(&mut s, &events, &[], sink)?;
    }
    pipeline.stats_into(&mut s);
    s.elapsed = started.elapsed();
    Ok((Outcome { summary: s, error: None }, counts))
}

/// A frame queued on a [`MemoryPorts`] port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryFrame {
    /// Capture time.
    pub ts: Timestamp,
    /// The bytes.
    pub data: Vec<u8>,
}

/// Two ports in memory: frames queued on a port's receive side come out of
/// [`Ports::exchange`] in time order, and what is forwarded lands on the other port's
/// transmit side. For tests of the inline path without interfaces.
#[derive(Debug, Default)]
pub struct MemoryPorts {
    /// Per port: frames waiting to be received.
    pub rx: [VecDeque<MemoryFrame>; 2],
    /// Per port: frames sent out of it.
    pub tx: [Vec<MemoryFrame>; 2],
    /// The link type of both ports.
    pub link: Option<LinkType>,
}

impl Ports for MemoryPorts {
    fn exchange(
        &mut self,
        max: usize,
        decide: &mut dyn FnMut(&[Frame<'_>], &mut Vec<Verdict>),
    ) -> io::Result<usize> {
        // Take up to `max` frames from both ports, oldest first.
        let mut taken: Vec<(u32, MemoryFrame)> = Vec::new();
        while taken.len() < max {
            let next = match (self.rx[0].front(), self.rx[1].front()) {
                (Some(a), Some(b)) => usize::from(b.ts < a.ts),
                (Some(_), None) => 0,
                (None, Some(_)) => 1,
                (None, None) => break,
            };
            let f = self.rx[next].pop_front().expect("the port has a frame");
            taken.push((next as u32, f));
        }
        let n = taken.len();
        let link = self.link.unwrap_or(LinkType::Ethernet);
        let frames: Vec<Frame<'_>> = taken
            .iter()
            .map(|(port, f)| Frame {
                ts: f.ts,
                origlen: f.data.len() as u32,
                link,
                interface: *port,
                offset: 0,
                data: &f.data,
            })
            .collect();
        let mut verdicts = Vec::with_capacity(frames.len());
        decide(&frames, &mut verdicts);
        drop(frames);
        for (i, (port, f)) in taken.into_iter().enumerate() {
            if verdicts.get(i) == Some(&Verdict::Accept) {
                self.tx[1 - port as usize].push(f);
            }
        }
        Ok(n)
    }
}
