//! A plain AF_PACKET bridge: every frame received on one interface is sent out of the other,
//! with no decision. The baseline `rampart run` is measured against (`scripts/bench-inline.sh`).
//!
//! ```text
//! bridge IF1 IF2 SECONDS
//! ```
//!
//! It runs for SECONDS (or until killed) and prints its counters on one line at the end.

use std::time::{Duration, Instant};

use rampart_capture::{PacketPair, PairConfig};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: bridge IF1 IF2 SECONDS");
        std::process::exit(2);
    }
    let secs: f64 = args[3].parse().unwrap_or_else(|_| {
        eprintln!("bridge: {:?} is not a number of seconds", args[3]);
        std::process::exit(2)
    });
    let mut pair =
        PacketPair::open(&args[1], &args[2], &PairConfig::default()).unwrap_or_else(|e| {
            eprintln!("bridge: {e}");
            std::process::exit(2)
        });
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut accept = |frames: &[rampart_capture::Frame<'_>], out: &mut Vec<bool>| {
        out.resize(frames.len(), true);
    };
    while Instant::now() < end {
        if let Err(e) = pair.exchange(256, 10, &mut accept) {
            eprintln!("bridge: {e}");
            std::process::exit(1);
        }
    }
    let s = pair.stats();
    println!(
        "received {:?} sent {:?} tx_dropped {:?} kernel_dropped {:?} oversize {:?} checksums {:?}",
        s.received, s.sent, s.tx_dropped, s.kernel_dropped, s.oversize, s.checksums_completed
    );
}
