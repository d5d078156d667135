//! Live capture an operator can leave running, on veth pairs between network namespaces the
//! tests create and delete: the interface going away (status 1, one line, every record
//! written), `--wait-for-interface`, a link going down and up, `-B` sizing the ring, loss said
//! even with `-q` and `--fail-on-drop`, the snap length each command defaults to, and `rtt` on
//! a loopback interface.
//!
//! Needs root (namespaces, CAP_NET_RAW), `ip` and `python3` (and `curl` for the snap-length
//! test). Without them each test says why in one line and passes, or fails under
//! `RAMPART_REQUIRE_DATA=1`, as CI runs it. Addresses: 10.232.0.0/16 only.

mod common;

use std::io::Read;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use common::{can_run_live as can_run, sh};

/// Two namespaces, `a` and `b`, deleted (with whatever runs in them) when dropped. `net`
/// picks the /24 inside 10.232.0.0/16, so tests running at once do not share addresses.
struct Pair {
    a: String,
    b: String,
    net: u8,
}

impl Pair {
    fn new(tag: &str, net: u8) -> Self {
        let id = std::process::id();
        let p = Self { a: format!("rl{id}{tag}a"), b: format!("rl{id}{tag}b"), net };
        sh(&format!("ip netns add {}; ip netns add {}", p.a, p.b));
        sh(&format!("ip -n {} link set lo up; ip -n {} link set lo up", p.a, p.b));
        p
    }

    /// Creates the veth pair a0 (in a) and b0 (in b), with addresses, up.
    fn link(&self) {
        let (a, b, n) = (&self.a, &self.b, self.net);
        sh(&format!(
            "ip link add a0 netns {a} type veth peer name b0 netns {b}
             ip -n {a} addr add 10.232.{n}.1/24 dev a0
             ip -n {b} addr add 10.232.{n}.2/24 dev b0
             ip -n {a} link set a0 up; ip -n {b} link set b0 up
             ip netns exec {a} sysctl -qw net.ipv6.conf.a0.disable_ipv6=1 || true
             ip netns exec {b} sysctl -qw net.ipv6.conf.b0.disable_ipv6=1 || true"
        ));
    }

    /// Deletes the pair from a's side (b0 goes with it).
    fn unlink(&self) {
        sh(&format!("ip -n {} link del a0", self.a));
    }

    /// `rampart ARGS` inside b.
    fn rampart(&self, args: &[&str]) -> Child {
        Command::new("ip")
            .args(["netns", "exec", &self.b, env!("CARGO_BIN_EXE_rampart")])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Sends `n` UDP datagrams from a to b, one flow per destination port from `port`.
    fn send(&self, n: u32, port: u16, flows: u16) {
        let dst = format!("10.232.{}.2", self.net);
        let script = format!(
            "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
             for i in range({n}):\n    s.sendto(b'x' * 18, ('{dst}', {port} + i % {flows}))\n"
        );
        let st = Command::new("ip")
            .args(["netns", "exec", &self.a, "python3", "-c", &script])
            .status()
            .unwrap();
        assert!(st.success());
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        for n in [&self.a, &self.b] {
            common::delete_namespace(n);
        }
    }
}

/// Waits up to `secs` for the child to exit; kills it and fails if it does not.
fn wait(mut child: Child, secs: u64) -> Output {
    let until = Instant::now() + Duration::from_secs(secs);
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > until {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "rampart did not exit within {secs} s; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn interrupt(child: &Child) {
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
}

/// UDP flow records in JSON lines, by destination port: packets.
fn udp_flows(stdout: &[u8]) -> std::collections::BTreeMap<u64, u64> {
    let mut m = std::collections::BTreeMap::new();
    for l in String::from_utf8_lossy(stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        if v["proto"] == "udp" {
            *m.entry(v["dport"].as_u64().unwrap()).or_default() +=
                v["packets_fwd"].as_u64().unwrap();
        }
    }
    m
}

/// Packets in all flow records, both ways.
fn all_packets(stdout: &[u8]) -> u64 {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["packets_fwd"].as_u64().unwrap() + v["packets_rev"].as_u64().unwrap()
        })
        .sum()
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn an_interface_that_goes_away_ends_the_capture_with_every_record() {
    let test = "an_interface_that_goes_away_ends_the_capture_with_every_record";
    if !can_run(test, &["ip", "python3"]) {
        return;
    }
    let p = Pair::new("g", 1);
    p.link();
    let child = p.rampart(&["flows", "-q", "-i", "b0"]);
    std::thread::sleep(Duration::from_millis(800));
    p.send(100, 7000, 10);
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    p.unlink();
    let out = wait(child, 10);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    // One line, naming the interface.
    assert_eq!(
        err.trim_end(),
        "rampart: b0: the interface went away (deleted, or moved to another network \
         namespace); every flow seen was written",
        "{err}"
    );
    let flows = udp_flows(&out.stdout);
    assert_eq!(flows.len(), 10, "{flows:?}");
    assert!(flows.values().all(|&n| n == 10), "{flows:?}");
}

#[test]
fn wait_for_interface_goes_on_when_it_comes_back() {
    let test = "wait_for_interface_goes_on_when_it_comes_back";
    if !can_run(test, &["ip", "python3"]) {
        return;
    }
    let p = Pair::new("w", 2);
    // Not there yet when rampart starts.
    let child = p.rampart(&["flows", "-q", "-i", "b0", "--wait-for-interface"]);
    std::thread::sleep(Duration::from_millis(500));
    p.link();
    std::thread::sleep(Duration::from_millis(1000));
    p.send(50, 7100, 5);
    std::thread::sleep(Duration::from_millis(300));
    p.unlink();
    std::thread::sleep(Duration::from_millis(500));
    p.link();
    std::thread::sleep(Duration::from_millis(1000));
    p.send(30, 7200, 3);
    std::thread::sleep(Duration::from_millis(300));
    assert!(child_running(&child), "exited early");
    interrupt(&child);
    let out = wait(child, 10);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    for line in [
        "rampart: b0: no such interface yet; waiting for it (--wait-for-interface)",
        "rampart: b0: the interface is back; capturing again",
        "rampart: b0: the interface went away; waiting for an interface of that name",
    ] {
        assert!(err.contains(line), "{line}: {err}");
    }
    assert_eq!(err.matches("the interface is back").count(), 2, "{err}");
    let flows = udp_flows(&out.stdout);
    let want: std::collections::BTreeMap<u64, u64> =
        (7100..7105).map(|p| (p, 10)).chain((7200..7203).map(|p| (p, 10))).collect();
    assert_eq!(flows, want);
}

fn child_running(child: &Child) -> bool {
    kill(Pid::from_raw(child.id() as i32), None).is_ok()
}

#[test]
fn a_link_that_goes_down_and_up_is_not_a_loss() {
    let test = "a_link_that_goes_down_and_up_is_not_a_loss";
    if !can_run(test, &["ip", "python3"]) {
        return;
    }
    let p = Pair::new("d", 3);
    p.link();
    let child = p.rampart(&["rtt", "-i", "b0", "--format", "json"]);
    std::thread::sleep(Duration::from_millis(800));
    sh(&format!("ip -n {} link set b0 down", p.b));
    std::thread::sleep(Duration::from_millis(800));
    sh(&format!("ip -n {} link set b0 up", p.b));
    std::thread::sleep(Duration::from_millis(1500));
    p.send(40, 7300, 4);
    std::thread::sleep(Duration::from_millis(300));
    assert!(child_running(&child), "a link going down ended the capture");
    interrupt(&child);
    let out = wait(child, 10);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("rampart: b0: link down; capturing again when it comes up"), "{err}");
    assert!(err.contains("rampart: b0: link up"), "{err}");
    // The packets after the link came back were captured (rtt times TCP only, but counts all).
    let received: u64 = err
        .split("capture: ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    assert!(received >= 40, "{err}");
}

/// Runs `flows -q -i b0 ARGS` in b, stops it (SIGSTOP) while `n` packets arrive, lets it go on,
/// then interrupts it.
fn burst_while_stopped(p: &Pair, args: &[&str], n: u32) -> Output {
    let mut all = vec!["flows", "-q", "-i", "b0"];
    all.extend_from_slice(args);
    let child = p.rampart(&all);
    std::thread::sleep(Duration::from_millis(800));
    let pid = Pid::from_raw(child.id() as i32);
    kill(pid, Signal::SIGSTOP).unwrap();
    p.send(n, 7400, 20);
    std::thread::sleep(Duration::from_millis(200));
    kill(pid, Signal::SIGCONT).unwrap();
    // Time to read what the ring holds, even for a debug build on a busy machine.
    std::thread::sleep(Duration::from_millis(2500));
    interrupt(&child);
    wait(child, 20)
}

#[test]
fn the_ring_size_decides_what_a_burst_loses_and_loss_is_always_said() {
    let test = "the_ring_size_decides_what_a_burst_loses_and_loss_is_always_said";
    if !can_run(test, &["ip", "python3"]) {
        return;
    }
    let p = Pair::new("b", 4);
    p.link();
    let n = 20_000;
    // A tiny ring (256 KiB, tcpdump's units) holds about 1,600 of these packets.
    let out = burst_while_stopped(&p, &["-B", "256"], n);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("rampart: b0: ") && l.contains("packets received"))
        .unwrap_or_else(|| panic!("no loss line with -q: {err}"));
    let nums: Vec<u64> = line.split(' ').filter_map(|w| w.parse().ok()).collect();
    let (received, kernel, ours) = (nums[0], nums[1], nums[2]);
    assert!(kernel > u64::from(n) / 2, "{line}");
    assert_eq!(ours, 0, "{line}");
    assert!(received + kernel >= u64::from(n), "{line}");
    assert!(received < 5_000, "{line}");
    // What was received is what the records hold (besides a few ARP frames).
    let flowed = all_packets(&out.stdout);
    assert!(flowed <= received && flowed + 20 >= received, "{flowed} in records; {line}");
    // --fail-on-drop makes it an exit status.
    let out = burst_while_stopped(&p, &["-B", "256", "--fail-on-drop"], n);
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    // A ring of 64 MiB absorbs the same burst; -q then says nothing, and the summary says so.
    let out = burst_while_stopped(&p, &["-B", "64M", "--fail-on-drop"], n);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("dropped"), "{err}");
    let flowed: u64 = udp_flows(&out.stdout).values().sum();
    assert_eq!(flowed, u64::from(n), "{err}");
    let mut child = p.rampart(&["flows", "-i", "b0", "-B", "64M", "-o", "/dev/null"]);
    std::thread::sleep(Duration::from_millis(500));
    interrupt(&child);
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let _ = wait(child, 10);
    assert!(err.contains(", 0 dropped by the kernel, 0 dropped by rampart; ring 64 MiB"), "{err}");
    // No rate over wall time for a live run.
    assert!(!err.contains("Mpps") && !err.contains("ns/packet"), "{err}");
}

#[test]
fn loss_is_said_while_it_happens() {
    let test = "loss_is_said_while_it_happens";
    if !can_run(test, &["ip", "python3"]) {
        return;
    }
    let p = Pair::new("p", 5);
    p.link();
    let child = p.rampart(&["flows", "-q", "-i", "b0", "-B", "256", "-o", "/dev/null"]);
    std::thread::sleep(Duration::from_millis(800));
    let pid = Pid::from_raw(child.id() as i32);
    kill(pid, Signal::SIGSTOP).unwrap();
    p.send(10_000, 7500, 10);
    kill(pid, Signal::SIGCONT).unwrap();
    // The running capture says so within a second or two, before it ends.
    std::thread::sleep(Duration::from_millis(2000));
    assert!(child_running(&child));
    interrupt(&child);
    let out = wait(child, 10);
    let err = stderr_of(&out);
    let during = err
        .lines()
        .position(|l| l.starts_with("rampart: b0: dropping packets: "))
        .unwrap_or_else(|| panic!("{err}"));
    let end = err.lines().position(|l| l.contains("packets received")).unwrap();
    assert!(during < end, "{err}");
}

#[test]
fn flows_keeps_whole_packets_and_rtt_keeps_144_bytes() {
    let test = "flows_keeps_whole_packets_and_rtt_keeps_144_bytes";
    if !can_run(test, &["ip", "python3", "curl"]) {
        return;
    }
    let p = Pair::new("s", 6);
    p.link();
    let www = tempfile::tempdir().unwrap();
    let mut server = Command::new("ip")
        .args(["netns", "exec", &p.b, "python3", "-m", "http.server", "8080"])
        .args(["--bind", "10.232.6.2"])
        .current_dir(www.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The Host header follows a 300-byte path: past byte 144 of the request.
    let url = format!("http://10.232.6.2:8080/{}", "p".repeat(300));
    let host_seen = |args: &[&str]| {
        let mut all = vec!["flows", "-q", "-i", "b0"];
        all.extend_from_slice(args);
        let child = p.rampart(&all);
        std::thread::sleep(Duration::from_millis(800));
        let _ = Command::new("ip")
            .args(["netns", "exec", &p.a, "curl", "-s", "-m", "5", "-o", "/dev/null", &url])
            .status();
        std::thread::sleep(Duration::from_millis(300));
        interrupt(&child);
        let out = wait(child, 10);
        assert!(out.status.success(), "{}", stderr_of(&out));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(text.contains("\"dport\":8080"), "{text}");
        text.contains("\"http_host\":\"10.232.6.2:8080\"")
    };
    assert!(host_seen(&[]), "the default snap length hid the Host header");
    assert!(!host_seen(&["--snaplen", "144"]), "--snaplen 144 should cut it off");
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
fn rtt_on_a_loopback_interface_points_to_show_local() {
    let test = "rtt_on_a_loopback_interface_points_to_show_local";
    if !can_run(test, &["ip"]) {
        return;
    }
    let p = Pair::new("l", 7);
    let out = Command::new("ip")
        .args(["netns", "exec", &p.b, env!("CARGO_BIN_EXE_rampart"), "rtt", "-i", "lo", "-s"])
        .arg("0.3")
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.starts_with(
            "rampart: lo is a loopback interface: both ends of every connection on it are local"
        ) && err.contains("add -l to time them"),
        "{err}"
    );
    let out = Command::new("ip")
        .args(["netns", "exec", &p.b, env!("CARGO_BIN_EXE_rampart"), "rtt", "-l", "-i", "lo"])
        .args(["-s", "0.3"])
        .output()
        .unwrap();
    assert!(!stderr_of(&out).contains("loopback interface"), "{}", stderr_of(&out));
}
