//! The AF_PACKET bridge for real: three network namespaces, C - r0 [R] r1 - S, joined by veth
//! pairs with offloads off, and a [`PacketPair`] bridging r0 and r1 in R from a thread that
//! entered R. Ping must pass through it, UDP to port 9 (judged `false`) must not arrive while
//! UDP to port 10 does, a frame injected out of r1 must arrive at S, and the counters must add
//! up. Run with the transmit ring (the default) and with `sendmmsg`.
//!
//! Needs root, `ip`, `ethtool` and `ping`; says why and skips otherwise, or fails under
//! `RAMPART_REQUIRE_TOOLS=1`. It creates its own namespaces (names with the process id) and
//! deletes them by name, also when it fails; it uses only 10.233.0.0/24.
#![allow(unsafe_code)]

mod common;

use std::time::{Duration, Instant};

use common::{Namespaces, SENT, bridge_loop, can_run, check_delivery, drive, enter, spawn_bridge};
use rampart_capture::{PacketPair, PairConfig, PairStats};

const TEST: &str = "packet_pair_bridges_two_veths";

/// What the bridge thread saw.
struct Bridged {
    stats: PairStats,
    judged_false: u64,
    injected: bool,
}

/// Moves the calling thread into network namespace `name` with a view of its interfaces in
/// /sys (the pair reads an interface's type and MTU there), as `ip netns exec` does: a mount
/// namespace of the thread's own with sysfs mounted again.
fn enter_with_sysfs(name: &str) {
    enter(name);
    let c = |s: &str| std::ffi::CString::new(s).unwrap();
    let (none, root, sys, sysfs) = (c("none"), c("/"), c("/sys"), c("sysfs"));
    // SAFETY: unshare and mount with valid NUL-terminated strings; they change the calling
    // thread's mount namespace only (the test's other threads keep theirs).
    unsafe {
        assert_eq!(
            libc::unshare(libc::CLONE_NEWNS),
            0,
            "unshare: {}",
            std::io::Error::last_os_error()
        );
        let slave = libc::MS_SLAVE | libc::MS_REC;
        assert_eq!(
            libc::mount(none.as_ptr(), root.as_ptr(), std::ptr::null(), slave, std::ptr::null()),
            0
        );
        libc::umount2(sys.as_ptr(), libc::MNT_DETACH);
        let rc = libc::mount(sysfs.as_ptr(), sys.as_ptr(), sysfs.as_ptr(), 0, std::ptr::null());
        assert_eq!(rc, 0, "mounting sysfs: {}", std::io::Error::last_os_error());
    }
}

fn run(ns: &Namespaces, cfg: PairConfig) {
    let mode = if cfg.tx_ring { "transmit ring" } else { "sendmmsg" };
    let r = ns.r.clone();
    let tx_ring = cfg.tx_ring;
    let bridge = spawn_bridge(
        mode,
        move || {
            enter_with_sysfs(&r);
            PacketPair::open("r0", "r1", &cfg)
        },
        move |mut pair, stop, inject| {
            assert_eq!(pair.tx_ring(), tx_ring, "the transmit ring as asked");
            let (judged_false, injected) = bridge_loop(&mut pair, stop, inject);
            Bridged { stats: pair.stats(), judged_false, injected }
        },
    );
    let (ping, got) = drive(ns, &bridge.inject, &bridge.stop);
    let b = bridge.thread.join().expect("bridge thread").expect("the pair opened");
    check_delivery(mode, &ping, &got, b.injected);
    let s = b.stats;
    for i in 0..2 {
        assert_eq!(s.tx_dropped[i] + s.kernel_dropped[i] + s.oversize[i], 0, "{mode}: {s:?}");
    }
    // What came in on one port and was not judged false went out of the other (plus the one
    // injected out of r1).
    assert_eq!(
        s.received[0] + s.received[1],
        s.sent[0] + s.sent[1] - 1 + b.judged_false,
        "{mode}: {s:?}"
    );
    assert!(b.judged_false >= SENT as u64, "{mode}: {s:?}");
    assert!(s.received[0] >= 3 + 2 * SENT as u64 && s.received[1] >= 3, "{mode}: {s:?}");
    eprintln!("{mode}: {s:?}");
}

#[test]
fn packet_pair_bridges_two_veths() {
    if !can_run(TEST, "not root (it creates network namespaces)") {
        return;
    }
    let started = Instant::now();
    let ns = Namespaces::create("rpkt");
    let small = PairConfig { ring_bytes: 4 << 20, ..PairConfig::default() };
    run(&ns, small.clone());
    run(&ns, PairConfig { tx_ring: false, ..small });
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
}
