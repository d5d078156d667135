//! The AF_XDP bridge for real: three network namespaces, C - r0 [R] r1 - S, joined by veth
//! pairs with offloads off, and an [`XdpPair`] bridging r0 and r1 in R from a thread that
//! entered R. Ping must pass through it, UDP to port 9 (judged `false`) must not arrive while
//! UDP to port 10 does, a frame injected out of r1 must arrive at S, and the counters must add
//! up. Run in native XDP and in generic (skb) XDP, both in copy mode (veth has no AF_XDP zero
//! copy, which is checked to fail with a clear message).
//!
//! Needs root, libxdp (Debian's libxdp1), `ip`, `ethtool` and `ping`; says why and skips
//! otherwise, or fails under `RAMPART_REQUIRE_TOOLS=1`. It creates its own namespaces (names
//! with the process id) and deletes them by name, also when it fails; it uses only
//! 10.233.0.0/24.
#![allow(unsafe_code)]

use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::thread;
use std::time::{Duration, Instant};

use rampart_capture::xdp::{self, XdpConfig, XdpPair, XdpStats};

mod common;

use common::{Namespaces, SENT, bridge_loop, can_run, check_delivery, drive, enter, spawn_bridge};

const TEST: &str = "xdp_pair_bridges_two_veths";

/// What the bridge thread saw.
struct Bridged {
    stats: XdpStats,
    notes: Vec<String>,
    zero_copy: bool,
    judged_false: u64,
    injected: bool,
}

/// Bridges with `pair` until `stop`, dropping UDP to port 9 and injecting once `inject` is
/// set; then lets the last completions come back.
fn serve(mut pair: XdpPair, stop: &AtomicBool, inject: &AtomicBool) -> Bridged {
    let (judged_false, injected) = bridge_loop(&mut pair, stop, inject);
    // Let the last completions come back.
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        pair.exchange(0, 0, &mut |_, _| {}).expect("exchange");
        let s = pair.stats();
        if (0..2).all(|i| s.ports[i].completed == s.ports[i].sent) {
            break;
        }
        thread::sleep(Duration::from_millis(10));
    }
    Bridged {
        stats: pair.stats(),
        notes: pair.notes().to_vec(),
        zero_copy: pair.zero_copy(),
        judged_false,
        injected,
    }
}

fn run(ns: &Namespaces, cfg: XdpConfig) {
    let mode = if cfg.skb_mode { "skb" } else { "native" };
    let cfg_skb = cfg.skb_mode;
    let r = ns.r.clone();
    let bridge = spawn_bridge(
        mode,
        move || {
            enter(&r);
            XdpPair::open("r0", "r1", &cfg)
        },
        serve,
    );
    if !cfg_skb {
        // A second pair on the same queues finds them busy, after trying for a while.
        let r = ns.r.clone();
        let t = Instant::now();
        let e = thread::spawn(move || {
            enter(&r);
            let cfg = XdpConfig { zero_copy: Some(false), ..XdpConfig::default() };
            XdpPair::open("r0", "r1", &cfg).map(|_| ()).map_err(|e| e.to_string())
        })
        .join()
        .unwrap()
        .expect_err("the queue is taken");
        assert!(e.contains("'r0'") && e.contains("already bound"), "{e}");
        assert!(t.elapsed() >= Duration::from_millis(1900), "gave up after {:?}", t.elapsed());
    }
    let (ping, got) = drive(ns, &bridge.inject, &bridge.stop);
    let b = bridge.thread.join().expect("bridge thread").expect("the pair opened");
    check_delivery(mode, &ping, &got, b.injected);
    assert!(!b.zero_copy, "{mode}: veth has no AF_XDP zero copy");
    assert!(!b.notes.is_empty());

    let s = b.stats;
    for i in 0..2 {
        let (p, o) = (&s.ports[i], &s.ports[1 - i]);
        assert_eq!(
            p.received,
            p.dropped + p.tx_full + o.sent - o.injected,
            "{mode}: port {i}: received = dropped + tx_full + forwarded: {s:?}"
        );
        assert_eq!(p.tx_full, 0, "{mode}: {s:?}");
        assert_eq!(p.completed, p.sent, "{mode}: every sent frame completed: {s:?}");
        assert_eq!(p.kernel.rx_ring_full + p.kernel.tx_invalid_descs, 0, "{mode}: {s:?}");
        // The first interface's fill ring is filled before its program is attached; a frame
        // may reach the second in the instant between its attachment and its first fill.
        let empty = p.kernel.rx_fill_ring_empty_descs;
        assert!(if i == 0 { empty == 0 } else { empty <= 3 }, "{mode}: port {i}: {s:?}");
        assert_eq!(p.kernel.rx_dropped, empty, "{mode}: port {i}: {s:?}");
    }
    assert_eq!(s.ports[0].dropped + s.ports[1].dropped, b.judged_false, "{mode}: {s:?}");
    assert!(b.judged_false >= SENT as u64, "{mode}: {s:?}");
    assert_eq!((s.ports[1].injected, s.ports[0].injected), (1, 0), "{mode}: {s:?}");
    // C's ping requests, datagrams and ARP came in on r0; S's replies on r1.
    assert!(s.ports[0].received >= 3 + 2 * SENT as u64, "{mode}: {s:?}");
    assert!(s.ports[1].received >= 3, "{mode}: {s:?}");

    // The pair is gone: the program is detached from both interfaces.
    let link = Command::new("ip").args(["-n", &ns.r, "link", "show"]).output().expect("ip runs");
    let link = String::from_utf8_lossy(&link.stdout);
    assert!(!link.contains("prog/xdp"), "{mode}: an XDP program is still attached:\n{link}");
    eprintln!("{mode}: {s:?}\n{mode}: notes: {:?}", b.notes);
}

#[test]
fn xdp_pair_bridges_two_veths() {
    if !can_run(TEST, "not root (it creates network namespaces and attaches XDP programs)") {
        return;
    }
    if !xdp::available() {
        return rampart_testkit::skip(
            rampart_testkit::REQUIRE_TOOLS,
            TEST,
            "libxdp is not installed (Debian's libxdp1)",
        );
    }
    let started = Instant::now();
    let ns = Namespaces::create("rxdp");

    // Zero copy is refused on veth, naming the interface.
    let (tx, rx) = std::sync::mpsc::channel();
    let r = ns.r.clone();
    thread::spawn(move || {
        enter(&r);
        let cfg = XdpConfig { zero_copy: Some(true), ..XdpConfig::default() };
        let _ = tx.send(XdpPair::open("r0", "r1", &cfg).map(|_| ()).map_err(|e| e.to_string()));
    });
    let e = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("open returns")
        .expect_err("zero copy on veth");
    assert!(e.contains("'r0'") && e.contains("zero copy"), "{e}");

    run(&ns, XdpConfig::default());
    run(
        &ns,
        XdpConfig {
            skb_mode: true,
            zero_copy: Some(false),
            frames: 256,
            frame_size: 4096,
            ..XdpConfig::default()
        },
    );
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
}
