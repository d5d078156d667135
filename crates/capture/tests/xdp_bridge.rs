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

use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use rampart_capture::xdp::{self, XdpConfig, XdpPair, XdpStats};

const TEST: &str = "xdp_pair_bridges_two_veths";
const C_IP: [u8; 4] = [10, 233, 0, 1];
const S_IP: [u8; 4] = [10, 233, 0, 2];
const SENT: usize = 20;

/// The test's namespaces, deleted by name when dropped.
struct Namespaces {
    c: String,
    r: String,
    s: String,
}

impl Namespaces {
    fn create() -> Self {
        let pid = std::process::id();
        let ns =
            Self { c: format!("rxdp{pid}c"), r: format!("rxdp{pid}r"), s: format!("rxdp{pid}s") };
        let (c, r, s) = (&ns.c, &ns.r, &ns.s);
        let script = format!(
            "ip netns add {c}; ip netns add {r}; ip netns add {s}
             ip -n {c} link add c0 type veth peer name r0 netns {r}
             ip -n {s} link add s0 type veth peer name r1 netns {r}
             ip -n {c} addr add 10.233.0.1/24 dev c0
             ip -n {s} addr add 10.233.0.2/24 dev s0
             for x in '{c} c0' '{r} r0' '{r} r1' '{s} s0'; do
                 set -- $x
                 ip -n $1 link set lo up
                 ip -n $1 link set $2 up
                 ip netns exec $1 ethtool -K $2 tx off tso off gso off gro off >/dev/null
             done"
        );
        let out = Command::new("bash").args(["-ec", &script]).output().expect("bash runs");
        assert!(
            out.status.success(),
            "setting up the namespaces failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        ns
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in [&self.c, &self.r, &self.s] {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
    }
}

/// Moves the calling thread into network namespace `name`.
fn enter(name: &str) {
    let f = std::fs::File::open(format!("/run/netns/{name}")).expect("the namespace exists");
    // SAFETY: setns on an open namespace file affects the calling thread only.
    let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(rc, 0, "setns {name}: {}", std::io::Error::last_os_error());
}

/// The UDP destination port of an Ethernet/IPv4 frame.
fn udp_dport(f: &[u8]) -> Option<u16> {
    if f.len() < 34 || f[12..14] != [0x08, 0x00] || f[23] != 17 {
        return None;
    }
    let ihl = usize::from(f[14] & 0x0f) * 4;
    let udp = f.get(14 + ihl..14 + ihl + 4)?;
    Some(u16::from_be_bytes([udp[2], udp[3]]))
}

/// An Ethernet/IPv4/UDP frame from C to S port 10 (UDP checksum 0: none).
fn udp_frame(dst_mac: [u8; 6], src_mac: [u8; 6], payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&src_mac);
    f.extend_from_slice(&[0x08, 0x00]);
    let total = (20 + 8 + payload.len()) as u16;
    let mut ip = vec![0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 17, 0, 0];
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&C_IP);
    ip.extend_from_slice(&S_IP);
    let mut sum: u32 = ip.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], c[1]]))).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&4000u16.to_be_bytes());
    f.extend_from_slice(&10u16.to_be_bytes());
    f.extend_from_slice(&(8 + payload.len() as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    f
}

/// What the bridge thread saw.
struct Bridged {
    stats: XdpStats,
    notes: Vec<String>,
    zero_copy: bool,
    judged_false: u64,
    injected: bool,
}

/// Bridges r0 and r1 in namespace `r` until `stop`, dropping UDP to port 9; once `inject` is
/// set (and both MACs have been seen), sends one UDP datagram to S out of r1.
fn bridge(
    r: String,
    cfg: XdpConfig,
    ready: std::sync::mpsc::Sender<Result<(), String>>,
    stop: Arc<AtomicBool>,
    inject: Arc<AtomicBool>,
) -> Option<Bridged> {
    enter(&r);
    let mut pair = match XdpPair::open("r0", "r1", &cfg) {
        Ok(p) => p,
        Err(e) => {
            let _ = ready.send(Err(e.to_string()));
            return None;
        }
    };
    let _ = ready.send(Ok(()));
    let mut macs: [Option<[u8; 6]>; 2] = [None, None];
    let mut judged_false = 0;
    let mut injected = false;
    while !stop.load(Ordering::Relaxed) {
        pair.exchange(64, 20, &mut |frames, verdicts| {
            for f in frames {
                assert!(f.interface < 2);
                if f.data.len() >= 14 && f.data[12..14] == [0x08, 0x00] {
                    macs[f.interface as usize] = Some(f.data[6..12].try_into().unwrap());
                }
                let pass = udp_dport(f.data) != Some(9);
                judged_false += u64::from(!pass);
                verdicts.push(pass);
            }
        })
        .expect("exchange");
        if !injected
            && inject.load(Ordering::Relaxed)
            && let [Some(c), Some(s)] = macs
        {
            injected = pair.inject(1, &udp_frame(s, c, b"injected")).expect("inject");
        }
    }
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
    Some(Bridged {
        stats: pair.stats(),
        notes: pair.notes().to_vec(),
        zero_copy: pair.zero_copy(),
        judged_false,
        injected,
    })
}

/// Datagrams S receives on ports 9 and 10 until `stop` (port, payload), counting those to
/// port 10 in `on_10` as they come.
fn receive(
    s: String,
    stop: Arc<AtomicBool>,
    ready: std::sync::mpsc::Sender<()>,
    on_10: Arc<AtomicUsize>,
) -> Vec<(u16, Vec<u8>)> {
    enter(&s);
    let socks: Vec<UdpSocket> = [9u16, 10]
        .iter()
        .map(|p| {
            let u = UdpSocket::bind(("10.233.0.2", *p)).expect("bind in S");
            u.set_nonblocking(true).unwrap();
            u
        })
        .collect();
    let _ = ready.send(());
    let mut got = Vec::new();
    let mut buf = [0u8; 2048];
    while !stop.load(Ordering::Relaxed) {
        let mut any = false;
        for (sock, port) in socks.iter().zip([9u16, 10]) {
            while let Ok(n) = sock.recv(&mut buf) {
                got.push((port, buf[..n].to_vec()));
                if port == 10 {
                    on_10.fetch_add(1, Ordering::Relaxed);
                }
                any = true;
            }
        }
        if !any {
            thread::sleep(Duration::from_millis(5));
        }
    }
    got
}

/// Sends `SENT` datagrams to S port 10 and as many to port 9, from C.
fn send(c: String) {
    enter(&c);
    let u = UdpSocket::bind("10.233.0.1:0").expect("bind in C");
    for i in 0..SENT {
        u.send_to(format!("pass {i}").as_bytes(), "10.233.0.2:10").unwrap();
        u.send_to(format!("drop {i}").as_bytes(), "10.233.0.2:9").unwrap();
        thread::sleep(Duration::from_millis(2));
    }
}

fn run(ns: &Namespaces, cfg: XdpConfig) {
    let mode = if cfg.skb_mode { "skb" } else { "native" };
    let cfg_skb = cfg.skb_mode;
    let stop = Arc::new(AtomicBool::new(false));
    let inject = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let router = {
        let (r, stop, inject) = (ns.r.clone(), stop.clone(), inject.clone());
        thread::spawn(move || bridge(r, cfg, ready_tx, stop, inject))
    };
    let opened = ready_rx.recv_timeout(Duration::from_secs(10)).expect("the bridge opens in time");
    if let Err(e) = opened {
        panic!("{mode}: opening the pair failed: {e}");
    }
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
    let rstop = Arc::new(AtomicBool::new(false));
    let (rready_tx, rready_rx) = std::sync::mpsc::channel();
    let on_10 = Arc::new(AtomicUsize::new(0));
    let receiver = {
        let (s, rstop, on_10) = (ns.s.clone(), rstop.clone(), on_10.clone());
        thread::spawn(move || receive(s, rstop, rready_tx, on_10))
    };
    rready_rx.recv_timeout(Duration::from_secs(5)).expect("the receiver starts");

    let ping = Command::new("ip")
        .args([
            "netns",
            "exec",
            &ns.c,
            "ping",
            "-q",
            "-c",
            "3",
            "-i",
            "0.2",
            "-W",
            "2",
            "10.233.0.2",
        ])
        .output()
        .expect("ping runs");
    let c = ns.c.clone();
    thread::spawn(move || send(c)).join().expect("sender");
    inject.store(true, Ordering::Relaxed);
    // Until the datagrams to port 10 and the injected one are in (or time is up), then a
    // moment more for anything that should not arrive.
    let deadline = Instant::now() + Duration::from_secs(5);
    while on_10.load(Ordering::Relaxed) < SENT + 1 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(10));
    }
    thread::sleep(Duration::from_millis(200));
    rstop.store(true, Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    let got = receiver.join().expect("receiver");
    let b = router.join().expect("bridge thread").expect("the pair opened");

    assert!(
        ping.status.success(),
        "{mode}: ping through the bridge failed: {}",
        String::from_utf8_lossy(&ping.stdout)
    );
    let passed = got.iter().filter(|(p, d)| *p == 10 && d.starts_with(b"pass")).count();
    let dropped = got.iter().filter(|(p, _)| *p == 9).count();
    assert_eq!(passed, SENT, "{mode}: UDP to port 10 through the bridge");
    assert_eq!(dropped, 0, "{mode}: UDP to port 9 was judged false and must not arrive");
    assert!(b.injected, "{mode}: no frame was free to inject");
    assert!(
        got.iter().any(|(p, d)| *p == 10 && d == b"injected"),
        "{mode}: the injected frame did not arrive"
    );
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
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return rampart_testkit::skip(
            rampart_testkit::REQUIRE_TOOLS,
            TEST,
            "not root (it creates network namespaces and attaches XDP programs)",
        );
    }
    if !xdp::available() {
        return rampart_testkit::skip(
            rampart_testkit::REQUIRE_TOOLS,
            TEST,
            "libxdp is not installed (Debian's libxdp1)",
        );
    }
    for tool in ["ip", "ethtool", "ping"] {
        if rampart_testkit::tool(TEST, tool).is_none() {
            return;
        }
    }
    let started = Instant::now();
    let ns = Namespaces::create();

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
