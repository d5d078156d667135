//! An AF_XDP bridge that forwards everything between two interfaces, for measuring
//! [`XdpPair`] on its own.
//!
//! ```text
//! xdpbridge A B SECONDS [--skb] [--copy] [--batch N] [--frames N]
//! ```
//!
//! It bridges A and B for SECONDS, then prints the set-up notes, the counters of both
//! interfaces, the frames forwarded per second and the process's CPU time (user and system)
//! per forwarded frame.

use std::time::{Duration, Instant};

use rampart_capture::xdp::{XdpConfig, XdpPair};

fn fail(msg: &str) -> ! {
    eprintln!("xdpbridge: {msg}");
    std::process::exit(2)
}

/// User and system CPU seconds of this process so far (`/proc/self/stat`, in the kernel's
/// 100 Hz ticks).
fn cpu_seconds() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which ends with the last ')'): utime and stime are
    // the 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0) / 100.0;
    (ticks(11), ticks(12))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        fail("usage: xdpbridge A B SECONDS [--skb] [--copy] [--batch N] [--frames N]");
    }
    let secs: f64 = args[3].parse().unwrap_or_else(|_| fail("SECONDS must be a number"));
    let mut cfg = XdpConfig::default();
    let mut batch = 256;
    let mut i = 4;
    while i < args.len() {
        match args[i].as_str() {
            "--skb" => cfg.skb_mode = true,
            "--copy" => cfg.zero_copy = Some(false),
            "--batch" | "--frames" => {
                let n: u32 = args
                    .get(i + 1)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| fail("a number"));
                if args[i] == "--batch" {
                    batch = n as usize;
                } else {
                    cfg.frames = n;
                }
                i += 1;
            }
            other => fail(&format!("unknown option {other}")),
        }
        i += 1;
    }
    let mut pair = XdpPair::open(&args[1], &args[2], &cfg).unwrap_or_else(|e| fail(&e.to_string()));
    for n in pair.notes() {
        println!("note: {n}");
    }
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut first = None;
    let (u0, s0) = cpu_seconds();
    while Instant::now() < end {
        let n = pair
            .exchange(batch, 100, &mut |frames, v| {
                v.extend(std::iter::repeat_n(true, frames.len()))
            })
            .unwrap_or_else(|e| fail(&e.to_string()));
        if n > 0 && first.is_none() {
            first = Some(Instant::now());
        }
    }
    let (u1, s1) = cpu_seconds();
    let st = pair.stats();
    let fwd = st.ports[0].sent + st.ports[1].sent;
    let active = first.map_or(0.0, |t| t.elapsed().as_secs_f64());
    for (k, p) in st.ports.iter().enumerate() {
        println!("port {k} ({}): {p:?}", pair.interfaces()[k]);
    }
    println!(
        "forwarded {fwd} frames in {active:.2} s from the first ({:.0} per second); cpu user {:.2} s system {:.2} s ({:.0} ns per frame)",
        fwd as f64 / active.max(1e-9),
        u1 - u0,
        s1 - s0,
        (u1 - u0 + s1 - s0) * 1e9 / (fwd.max(1)) as f64
    );
}
