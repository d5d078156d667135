//! `rampart filter`: a firewall rule set applied to a capture.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

use rampart_capture::{Capture, Frame};
use rampart_classify::firewall::{Firewall, Packet};
use rampart_classify::iptables::Target;
use rampart_wire::PacketMeta;

use crate::RunError;

/// What filtering a capture counted.
#[derive(Clone, Debug, Default)]
pub struct FilterCounts {
    /// Frames read.
    pub packets: u64,
    /// Frames passed on (accepted, and frames that are not IP, which the filter table never
    /// sees).
    pub passed: u64,
    /// Frames that were not IP.
    pub non_ip: u64,
    /// Frames of a link type rampart does not parse: the rules cannot be applied to them, so
    /// they are not passed on.
    pub unsupported: u64,
    /// Packets that matched each entry of [`Firewall::entries`] (as netfilter's counters:
    /// jumps and `RETURN`s count too).
    pub hits: Vec<u64>,
}

/// Evaluates every IP packet of `capture` against `fw` and hands the accepted ones (and every
/// non-IP frame) to `pass`; frames of a link type rampart does not parse are only counted.
/// Connection state is not known yet, so rules with `--ctstate` do not match; input and output
/// interfaces are unknown for a capture file, so `-i`/`-o` rules only match negated.
pub fn filter_capture(
    capture: &mut Capture,
    fw: &Firewall,
    stop: &AtomicBool,
    pass: &mut dyn FnMut(&Frame<'_>) -> io::Result<()>,
) -> io::Result<(FilterCounts, Option<RunError>)> {
    let mut c = FilterCounts { hits: vec![0; fw.entries().len()], ..FilterCounts::default() };
    while !stop.load(Ordering::Relaxed) {
        let batch = match capture.next_batch(256) {
            Ok(b) if b.is_empty() => break,
            Ok(b) => b,
            Err(e) => return Ok((c, Some(e.into()))),
        };
        for frame in batch.iter() {
            c.packets += 1;
            if !frame.link.is_supported() {
                c.unsupported += 1;
                continue;
            }
            let meta = PacketMeta::parse(frame.link, frame.data);
            let (Some(src), Some(dst)) = (meta.src_addr(), meta.dst_addr()) else {
                c.non_ip += 1;
                c.passed += 1;
                pass(&frame)?;
                continue;
            };
            let (sport, dport) = if meta.has_ports() { (meta.sport, meta.dport) } else { (0, 0) };
            let tcp_flags = meta.tcp.flags as u8;
            let p = Packet {
                src,
                dst,
                sport,
                dport,
                proto: meta.proto,
                iif: "",
                oif: "",
                ct: None,
                tcp_flags,
            };
            let d = fw.evaluate_counting(&p, &mut c.hits);
            if d.verdict == Target::Accept {
                c.passed += 1;
                pass(&frame)?;
            }
        }
    }
    Ok((c, None))
}
