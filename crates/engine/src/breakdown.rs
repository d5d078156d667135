//! Where a capture command's time goes, step by step (`rampart bench`).
//!
//! A chain of steps, each doing what the one before it did and one thing more: walking the
//! capture's records, parsing every frame, building and hashing flow keys, the flow table, then
//! each side stage the command runs, then its output. Every step but the first three is a
//! whole [`run`](crate::run) of the capture with the stages up to it turned on, so the
//! chain's last step is the command itself (less its process start and summary), and the
//! difference between two neighbours is what the added step costs in place, cache effects
//! included.
//!
//! Each pass times every step once, in chain order, and the passes repeat; a step's figure is
//! the median over passes of its CPU time per packet, so a machine shared with other work
//! (which steals wall time, not CPU time) moves it little. CPU time is the thread's own (user
//! and system time, the kernel's copy of a read file included), or wall time where the kernel
//! does not tell it. The first pass warms the page cache
//! and the allocator and is not counted.

use std::hint::black_box;
use std::io;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use rampart_capture::{Capture, CaptureError};
use rampart_flow::FlowTable;
use rampart_wire::PacketMeta;

use crate::{FlowsConfig, Sink, Summary};

/// What a step does.
#[derive(Clone, Debug)]
pub enum Work {
    /// Reads the capture, touching every frame's first and last byte.
    Walk,
    /// [`Work::Walk`], and parses every frame's headers (tunnels opened when the
    /// configuration says so).
    Parse(FlowsConfig),
    /// [`Work::Parse`], and builds every packet's flow key and hashes it as the table does.
    Key(FlowsConfig),
    /// A whole [`run`](crate::run) with this configuration; its events go to the sink the
    /// caller makes for the step (one that writes the command's output, or one that drops
    /// everything).
    Run(FlowsConfig),
}

/// One step of a chain.
#[derive(Clone, Debug)]
pub struct Step {
    /// Its name in reports.
    pub name: &'static str,
    /// What it does.
    pub work: Work,
    /// Whether its events are written as the command writes them (else dropped).
    pub output: bool,
}

impl Step {
    fn new(name: &'static str, work: Work) -> Self {
        Self { name, work, output: false }
    }
}

/// The configuration with no side stage.
fn bare(cfg: &FlowsConfig) -> FlowsConfig {
    FlowsConfig { rtt: None, dpi: None, tcp_stats: false, samples: false, ..cfg.clone() }
}

/// The steps common to every chain: walk, parse, key and hash, the table alone.
fn prefix(cfg: &FlowsConfig) -> Vec<Step> {
    let bare = bare(cfg);
    vec![
        Step::new("walk", Work::Walk),
        Step::new("parse", Work::Parse(bare.clone())),
        Step::new("key and hash", Work::Key(bare.clone())),
        Step::new("table", Work::Run(bare)),
    ]
}

/// The chain of `rampart flows` with `cfg`: walk, parse, key and hash, table, then TCP state,
/// RTT and identification (those `cfg` turns on, in that order), then the output.
pub fn flows_steps(cfg: &FlowsConfig) -> Vec<Step> {
    let mut steps = prefix(cfg);
    let mut acc = bare(cfg);
    if cfg.tcp_stats {
        acc.tcp_stats = true;
        steps.push(Step::new("tcp state", Work::Run(acc.clone())));
    }
    if cfg.rtt.is_some() {
        acc.rtt = cfg.rtt;
        steps.push(Step::new("rtt", Work::Run(acc.clone())));
    }
    if cfg.dpi.is_some() {
        acc.dpi = cfg.dpi;
        steps.push(Step::new("identification", Work::Run(acc.clone())));
    }
    steps.push(Step { name: "output", work: Work::Run(cfg.clone()), output: true });
    steps
}

/// The chain of `rampart rtt` with `cfg` (RTT on, samples handed out): walk, parse, key and
/// hash, table, RTT matching with its samples dropped, then the samples written.
pub fn rtt_steps(cfg: &FlowsConfig) -> Vec<Step> {
    let mut steps = prefix(cfg);
    steps.push(Step::new("rtt", Work::Run(cfg.clone())));
    steps.push(Step { name: "output", work: Work::Run(cfg.clone()), output: true });
    steps
}

/// A step's measurements.
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    /// The step's name.
    pub name: &'static str,
    /// Packets each pass read.
    pub packets: u64,
    /// CPU nanoseconds per packet, one per counted pass.
    pub ns: Vec<f64>,
}

impl Timing {
    /// The median over passes (the upper one of an even count).
    pub fn median(&self) -> f64 {
        let mut v = self.ns.clone();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    }
}

/// Why a measurement stopped.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The capture could not be opened or read.
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// A run failed (its sink's error).
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// The calling thread's CPU time so far in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`), `None`
/// where the kernel does not tell it.
pub(crate) fn thread_cpu_ns() -> Option<u64> {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID).ok()?;
    Some(t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
}

/// The thread's CPU time so far in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`), or the wall time
/// where the kernel does not tell it.
struct Clock {
    wall: Instant,
    cpu: bool,
}

impl Clock {
    fn new() -> Self {
        Self { wall: Instant::now(), cpu: thread_cpu_ns().is_some() }
    }

    fn now(&self) -> u64 {
        match self.cpu.then(thread_cpu_ns).flatten() {
            Some(ns) => ns,
            None => self.wall.elapsed().as_nanos() as u64,
        }
    }
}

/// Runs `steps` over the capture `open` opens, `passes` counted passes after one warm-up;
/// `sink` makes the sink of a step whose [`Step::output`] is set. Steps run on the calling
/// thread whatever the configuration's worker count.
pub fn measure(
    open: &mut dyn FnMut() -> Result<Capture, CaptureError>,
    steps: &[Step],
    passes: usize,
    sink: &mut dyn FnMut(&Step) -> Box<dyn Sink>,
) -> Result<Vec<Timing>, BenchError> {
    let clock = Clock::new();
    let mut out: Vec<Timing> =
        steps.iter().map(|s| Timing { name: s.name, packets: 0, ns: Vec::new() }).collect();
    for pass in 0..=passes {
        for (step, t) in steps.iter().zip(&mut out) {
            let mut capture = open()?;
            let start = clock.now();
            let packets = one(&mut capture, step, sink)?;
            let ns = clock.now().saturating_sub(start);
            t.packets = packets;
            if pass > 0 {
                t.ns.push(ns as f64 / packets.max(1) as f64);
            }
        }
    }
    Ok(out)
}

/// One step over the whole capture: the packets read.
fn one(
    capture: &mut Capture,
    step: &Step,
    sink: &mut dyn FnMut(&Step) -> Box<dyn Sink>,
) -> Result<u64, BenchError> {
    let mut packets = 0u64;
    let mut s = Summary::default();
    match &step.work {
        Work::Walk => loop {
            let batch = capture.next_batch(256)?;
            if batch.is_empty() {
                break;
            }
            for f in batch.iter() {
                black_box((f.data.first(), f.data.last(), f.ts));
            }
            packets += batch.len() as u64;
        },
        Work::Parse(cfg) => loop {
            let batch = capture.next_batch(256)?;
            if batch.is_empty() {
                break;
            }
            for f in batch.iter() {
                let mut meta = PacketMeta::parse(f.link, f.data);
                if cfg.tunnels {
                    meta.decapsulate(f.data);
                }
                black_box(&meta);
            }
            packets += batch.len() as u64;
        },
        Work::Key(cfg) => {
            let mut parser = cfg.parser();
            let table = FlowTable::new(cfg.table);
            loop {
                let batch = capture.next_batch(256)?;
                if batch.is_empty() {
                    break;
                }
                for (i, f) in batch.iter().enumerate() {
                    if let Some(p) = parser.prepare(&f, i as u32, i as u32, &mut s) {
                        black_box(table.hash(&p.info.key));
                    }
                }
                packets += batch.len() as u64;
            }
        }
        Work::Run(cfg) => {
            let cfg = FlowsConfig { workers: 1, ..cfg.clone() };
            let mut drop = Drop;
            let mut made;
            let sink: &mut dyn Sink = if step.output {
                made = sink(step);
                made.as_mut()
            } else {
                &mut drop
            };
            let o = crate::run(capture, &cfg, None, &AtomicBool::new(false), sink, &mut |_| ())?;
            if let Some(e) = o.error {
                return Err(io::Error::other(e.to_string()).into());
            }
            packets = o.summary.packets;
        }
    }
    Ok(packets)
}

/// A sink that drops every event.
struct Drop;

impl Sink for Drop {
    fn event(&mut self, e: crate::Event<'_>) -> io::Result<()> {
        black_box(&e);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Event;

    fn sample() -> Vec<u8> {
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../samples/mixed.pcap")).unwrap()
    }

    #[test]
    fn chains_add_one_stage_at_a_time() {
        let cfg = FlowsConfig::default();
        let names: Vec<_> = flows_steps(&cfg).iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "walk",
                "parse",
                "key and hash",
                "table",
                "tcp state",
                "rtt",
                "identification",
                "output"
            ]
        );
        let steps = flows_steps(&cfg);
        let Work::Run(last) = &steps[steps.len() - 1].work else { panic!("output is a run") };
        assert!(steps[steps.len() - 1].output && last.dpi.is_some() && last.rtt.is_some());
        let Work::Run(table) = &steps[3].work else { panic!("table is a run") };
        assert!(table.rtt.is_none() && table.dpi.is_none() && !table.tcp_stats);
        let off = FlowsConfig { dpi: None, tcp_stats: false, ..cfg };
        let names: Vec<_> = flows_steps(&off).iter().map(|s| s.name).collect();
        assert_eq!(names, ["walk", "parse", "key and hash", "table", "rtt", "output"]);
        let rtt = FlowsConfig { samples: true, tcp_only: true, ..off };
        let steps = rtt_steps(&rtt);
        let Work::Run(r) = &steps[4].work else { panic!("rtt is a run") };
        assert!(r.samples && r.tcp_only && !steps[4].output && steps[5].output);
    }

    #[test]
    fn every_step_reads_every_packet_and_only_output_writes() {
        let bytes = sample();
        let cfg = FlowsConfig { samples: true, ..FlowsConfig::default() };
        let steps = flows_steps(&cfg);
        let mut made = 0;
        let written = std::rc::Rc::new(std::cell::Cell::new(0u64));
        let w = written.clone();
        let t = measure(
            &mut || Capture::from_bytes("mixed.pcap", bytes.clone()),
            &steps,
            2,
            &mut |step| {
                assert_eq!(step.name, "output");
                made += 1;
                struct Count(std::rc::Rc<std::cell::Cell<u64>>);
                impl Sink for Count {
                    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
                        if let Event::Flow(_) = e {
                            self.0.set(self.0.get() + 1);
                        }
                        Ok(())
                    }
                }
                Box::new(Count(w.clone()))
            },
        )
        .unwrap();
        // One warm-up pass and two counted.
        assert_eq!(made, 3);
        assert_eq!(written.get(), 3 * 23, "the sample's 23 flow records, each pass");
        assert_eq!(t.len(), steps.len());
        for s in &t {
            assert_eq!(s.packets, 3226, "{} {}", s.name, s.packets);
            assert_eq!(s.ns.len(), 2);
            assert!(s.median() > 0.0, "{}", s.name);
        }
    }

    #[test]
    fn a_bad_capture_is_an_error() {
        let mut bytes = sample();
        bytes.truncate(10_000);
        bytes.extend_from_slice(&[0xff; 16]);
        let steps = flows_steps(&FlowsConfig::default());
        let r =
            measure(&mut || Capture::from_bytes("cut.pcap", bytes.clone()), &steps, 1, &mut |_| {
                Box::new(Drop)
            });
        assert!(r.is_err());
        let r =
            measure(&mut || Capture::from_bytes("empty.pcap", Vec::new()), &steps, 1, &mut |_| {
                Box::new(Drop)
            });
        assert!(matches!(r, Err(BenchError::Capture(_))));
    }

    #[test]
    fn the_median_is_the_middle_pass() {
        let t = Timing { name: "x", packets: 1, ns: vec![5.0, 1.0, 3.0] };
        assert_eq!(t.median(), 3.0);
        let t = Timing { name: "x", packets: 1, ns: vec![] };
        assert!(t.median().is_nan());
    }
}
