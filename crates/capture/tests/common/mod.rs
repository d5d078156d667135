//! What the bridge tests share: three network namespaces C - r0 [R] r1 - S joined by veth
//! pairs, and UDP traffic from C to S (ports 9 and 10) through whatever bridges R.
#![allow(unsafe_code, dead_code)]

use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

/// C's address.
pub(crate) const C_IP: [u8; 4] = [10, 233, 0, 1];
/// S's address.
pub(crate) const S_IP: [u8; 4] = [10, 233, 0, 2];
/// Datagrams sent to each port.
pub(crate) const SENT: usize = 20;

/// The test's namespaces, deleted by name when dropped.
pub(crate) struct Namespaces {
    /// The client's.
    pub(crate) c: String,
    /// The bridge's.
    pub(crate) r: String,
    /// The server's.
    pub(crate) s: String,
}

impl Namespaces {
    /// Namespaces `{prefix}{pid}c`, `...r` and `...s`, joined by veth pairs with offloads off.
    pub(crate) fn create(prefix: &str) -> Self {
        let pid = std::process::id();
        let ns = Self {
            c: format!("{prefix}{pid}c"),
            r: format!("{prefix}{pid}r"),
            s: format!("{prefix}{pid}s"),
        };
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
pub(crate) fn enter(name: &str) {
    let f = std::fs::File::open(format!("/run/netns/{name}")).expect("the namespace exists");
    // SAFETY: setns on an open namespace file affects the calling thread only.
    let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(rc, 0, "setns {name}: {}", std::io::Error::last_os_error());
}

/// The UDP destination port of an Ethernet/IPv4 frame.
pub(crate) fn udp_dport(f: &[u8]) -> Option<u16> {
    if f.len() < 34 || f[12..14] != [0x08, 0x00] || f[23] != 17 {
        return None;
    }
    let ihl = usize::from(f[14] & 0x0f) * 4;
    let udp = f.get(14 + ihl..14 + ihl + 4)?;
    Some(u16::from_be_bytes([udp[2], udp[3]]))
}

/// An Ethernet/IPv4/UDP frame from C to S port 10 (UDP checksum 0: none).
pub(crate) fn udp_frame(dst_mac: [u8; 6], src_mac: [u8; 6], payload: &[u8]) -> Vec<u8> {
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

/// Datagrams S receives on ports 9 and 10 until `stop` (port, payload), counting those to
/// port 10 in `on_10` as they come.
pub(crate) fn receive(
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
pub(crate) fn send(c: String) {
    enter(&c);
    let u = UdpSocket::bind("10.233.0.1:0").expect("bind in C");
    for i in 0..SENT {
        u.send_to(format!("pass {i}").as_bytes(), "10.233.0.2:10").unwrap();
        u.send_to(format!("drop {i}").as_bytes(), "10.233.0.2:9").unwrap();
        thread::sleep(Duration::from_millis(2));
    }
}

/// Drives the test traffic through whatever bridges R: starts S's receiver, pings S from C
/// (three echoes), sends the datagrams, sets `inject` (the bridge then injects one datagram
/// out of r1), waits for port 10's datagrams and the injected one (at most 5 s, then 200 ms
/// more for anything that should not arrive), and sets `stop`. Returns ping's output and
/// what S received.
pub(crate) fn drive(
    ns: &Namespaces,
    inject: &AtomicBool,
    stop: &AtomicBool,
) -> (std::process::Output, Vec<(u16, Vec<u8>)>) {
    let rstop = Arc::new(AtomicBool::new(false));
    let (rready_tx, rready_rx) = std::sync::mpsc::channel();
    let on_10 = Arc::new(AtomicUsize::new(0));
    let receiver = {
        let (s, rstop, on_10) = (ns.s.clone(), rstop.clone(), on_10.clone());
        thread::spawn(move || receive(s, rstop, rready_tx, on_10))
    };
    rready_rx.recv_timeout(Duration::from_secs(5)).expect("the receiver starts");
    let ping = Command::new("ip")
        .args(["netns", "exec", &ns.c, "ping", "-q", "-c", "3", "-i", "0.2", "-W", "2"])
        .arg("10.233.0.2")
        .output()
        .expect("ping runs");
    let c = ns.c.clone();
    thread::spawn(move || send(c)).join().expect("sender");
    inject.store(true, Ordering::Relaxed);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while on_10.load(Ordering::Relaxed) < SENT + 1 && std::time::Instant::now() < deadline {
        thread::sleep(Duration::from_millis(10));
    }
    thread::sleep(Duration::from_millis(200));
    rstop.store(true, Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    (ping, receiver.join().expect("receiver"))
}

/// Checks what [`drive`] saw: ping passed, every datagram to port 10 and the injected one
/// arrived, none to port 9.
pub(crate) fn check_delivery(
    mode: &str,
    ping: &std::process::Output,
    got: &[(u16, Vec<u8>)],
    injected: bool,
) {
    assert!(
        ping.status.success(),
        "{mode}: ping through the bridge failed: {}",
        String::from_utf8_lossy(&ping.stdout)
    );
    let passed = got.iter().filter(|(p, d)| *p == 10 && d.starts_with(b"pass")).count();
    let dropped = got.iter().filter(|(p, _)| *p == 9).count();
    assert_eq!(passed, SENT, "{mode}: UDP to port 10 through the bridge");
    assert_eq!(dropped, 0, "{mode}: UDP to port 9 was judged false and must not arrive");
    assert!(injected, "{mode}: the frame was not injected");
    assert!(
        got.iter().any(|(p, d)| *p == 10 && d == b"injected"),
        "{mode}: the injected frame did not arrive"
    );
}

/// The two calls the bridge loop makes, on either kind of pair.
pub(crate) trait Pair {
    /// `exchange` of the pair.
    fn exchange(
        &mut self,
        max: usize,
        timeout_ms: i32,
        decide: &mut dyn FnMut(&[rampart_capture::Frame<'_>], &mut Vec<bool>),
    ) -> std::io::Result<usize>;
    /// `inject` of the pair.
    fn inject(&mut self, port: u32, data: &[u8]) -> std::io::Result<bool>;
}

impl Pair for rampart_capture::PacketPair {
    fn exchange(
        &mut self,
        max: usize,
        timeout_ms: i32,
        decide: &mut dyn FnMut(&[rampart_capture::Frame<'_>], &mut Vec<bool>),
    ) -> std::io::Result<usize> {
        rampart_capture::PacketPair::exchange(self, max, timeout_ms, decide)
    }
    fn inject(&mut self, port: u32, data: &[u8]) -> std::io::Result<bool> {
        rampart_capture::PacketPair::inject(self, port, data)
    }
}

impl Pair for rampart_capture::xdp::XdpPair {
    fn exchange(
        &mut self,
        max: usize,
        timeout_ms: i32,
        decide: &mut dyn FnMut(&[rampart_capture::Frame<'_>], &mut Vec<bool>),
    ) -> std::io::Result<usize> {
        rampart_capture::xdp::XdpPair::exchange(self, max, timeout_ms, decide)
    }
    fn inject(&mut self, port: u32, data: &[u8]) -> std::io::Result<bool> {
        rampart_capture::xdp::XdpPair::inject(self, port, data)
    }
}

/// Bridges until `stop`, dropping UDP to port 9; once `inject` is set (and both MACs have
/// been seen), sends one UDP datagram to S out of port 1. Returns the frames judged false
/// and whether the datagram was injected.
pub(crate) fn bridge_loop(
    pair: &mut dyn Pair,
    stop: &AtomicBool,
    inject: &AtomicBool,
) -> (u64, bool) {
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
    (judged_false, injected)
}

/// The stop and inject flags a bridge thread and the traffic share, and the bridge thread.
pub(crate) struct Bridge<T> {
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) inject: Arc<AtomicBool>,
    pub(crate) thread: thread::JoinHandle<Option<T>>,
}

/// Starts a bridge on a thread of its own: `open` runs there (after the thread entered
/// namespace R, which `open` does) and opens the pair, and `serve` then bridges with it until
/// the stop flag is set, returning what the test checks. Returns once the pair is open, or
/// panics naming `mode` with the error it failed to open with.
pub(crate) fn spawn_bridge<P, E: std::fmt::Display, T: Send + 'static>(
    mode: &str,
    open: impl FnOnce() -> Result<P, E> + Send + 'static,
    serve: impl FnOnce(P, &AtomicBool, &AtomicBool) -> T + Send + 'static,
) -> Bridge<T> {
    let stop = Arc::new(AtomicBool::new(false));
    let inject = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let thread = {
        let (stop, inject) = (stop.clone(), inject.clone());
        thread::spawn(move || {
            let pair = match open() {
                Ok(p) => p,
                Err(e) => {
                    let _ = ready_tx.send(Err(e.to_string()));
                    return None;
                }
            };
            let _ = ready_tx.send(Ok(()));
            Some(serve(pair, &stop, &inject))
        })
    };
    let opened = ready_rx.recv_timeout(Duration::from_secs(10)).expect("the bridge opens in time");
    if let Err(e) = opened {
        panic!("{mode}: opening the pair failed: {e}");
    }
    Bridge { stop, inject, thread }
}

/// Whether a bridge test can run here: root (to create namespaces: `root_for` says what else
/// needs it) and `ip`, `ethtool` and `ping`; says why not, through the test kit (which fails
/// instead under `RAMPART_REQUIRE_TOOLS=1`).
pub(crate) fn can_run(test: &str, root_for: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        rampart_testkit::skip(rampart_testkit::REQUIRE_TOOLS, test, root_for);
        return false;
    }
    ["ip", "ethtool", "ping"].iter().all(|tool| rampart_testkit::tool(test, tool).is_some())
}
