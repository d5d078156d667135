//! Live capture for real: two network namespaces joined through a third that delays every
//! frame, real TCP (curl against `python3 -m http.server`) between them, and `rampart rtt -i`
//! capturing in the client's namespace. The samples' floor must match the delay.
//!
//! Needs root (namespaces, CAP_NET_RAW), `ip`, `ethtool`, `python3` and `curl`; says why and
//! skips otherwise (fails instead under `RAMPART_REQUIRE_DATA=1`, as CI runs it). It creates
//! and deletes its own namespaces and uses only the addresses it gives them (10.231.0.0/24).

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

/// Half of the round-trip delay the bridge adds, in ms (each direction is held this long).
const HALF_MS: u32 = 10;

struct Namespaces {
    names: [String; 3],
}

impl Namespaces {
    fn sh(script: &str) -> bool {
        Command::new("bash").args(["-ec", script]).status().is_ok_and(|s| s.success())
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in &self.names {
            // Killing what runs inside, then deleting the namespace, removes its interfaces.
            let _ = Command::new("bash")
                .args(["-c", &format!("ip netns pids {n} 2>/dev/null | xargs -r kill -9; ip netns del {n} 2>/dev/null")])
                .status();
        }
    }
}

fn skip(why: &str) {
    rampart_testkit::skip(
        rampart_testkit::REQUIRE_DATA,
        "rtt_on_a_live_interface_sees_the_injected_delay",
        why,
    );
}

#[test]
fn rtt_on_a_live_interface_sees_the_injected_delay() {
    if !nix::unistd::geteuid().is_root() {
        return skip("not root (it creates network namespaces and needs CAP_NET_RAW)");
    }
    for tool in ["ip", "ethtool", "python3", "curl"] {
        if !Command::new("which")
            .arg(tool)
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
        {
            return skip(&format!("{tool} is not installed"));
        }
    }
    // The capture filters with `-f`, which loads libpcap.
    if !common::libpcap("rtt_on_a_live_interface_sees_the_injected_delay") {
        return;
    }
    let id = std::process::id();
    let ns = Namespaces { names: [format!("rl{id}c"), format!("rl{id}m"), format!("rl{id}s")] };
    let [c, m, s] = &ns.names;
    let www = tempfile::tempdir().unwrap();
    std::fs::write(www.path().join("big"), vec![b'x'; 400_000]).unwrap();
    let setup = format!(
        "ip netns add {c}; ip netns add {m}; ip netns add {s}
         ip link add c0 netns {c} type veth peer name m0 netns {m}
         ip link add m1 netns {m} type veth peer name s0 netns {s}
         ip -n {c} addr add 10.231.0.1/24 dev c0
         ip -n {s} addr add 10.231.0.2/24 dev s0
         for x in '{c} c0' '{m} m0' '{m} m1' '{s} s0'; do
           set -- $x
           ip -n $1 link set $2 up
           ip netns exec $1 ethtool -K $2 tx off sg off tso off gso off gro off >/dev/null 2>&1 || true
         done
         ip -n {c} link set lo up; ip -n {s} link set lo up"
    );
    assert!(Namespaces::sh(&setup), "namespace setup failed");
    let delay = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/live/delay.py");
    let mut bridge = Command::new("ip")
        .args(["netns", "exec", m, "python3", delay, "m0", "m1", &HALF_MS.to_string(), "40"])
        .spawn()
        .unwrap();
    let mut server = Command::new("ip")
        .args(["netns", "exec", s, "python3", "-m", "http.server", "8080", "--bind", "10.231.0.2"])
        .current_dir(www.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let capture = Command::new("ip")
        .args(["netns", "exec", c, env!("CARGO_BIN_EXE_rampart"), "rtt", "-i", "c0"])
        .args(["--format", "json", "-s", "12", "-f", "tcp port 8080"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let mut fetched = 0;
    for _ in 0..4 {
        let ok = Command::new("ip")
            .args(["netns", "exec", c, "curl", "-sf", "-m", "5", "-o", "/dev/null"])
            .arg("http://10.231.0.2:8080/big")
            .status()
            .is_ok_and(|s| s.success());
        fetched += usize::from(ok);
    }
    let out = capture.wait_with_output().unwrap();
    let _ = server.kill();
    let _ = bridge.kill();
    let _ = server.wait();
    let _ = bridge.wait();
    drop(ns);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "rampart failed: {stderr}");
    assert!(fetched > 0, "no transfer went through the delay bridge");
    assert!(stderr.contains("0 dropped by the kernel, 0 dropped by rampart"), "{stderr}");
    let samples: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The default mode times data segments only (ePPing's rule), and towards the server the
    // client sends little data: each fetch yields the handshake and the request.
    assert!(samples.len() >= 2 * fetched, "{} samples; stderr: {stderr}", samples.len());
    // Capturing on the client: the client's own address is local, so only the server side is
    // timed (capture point -> server -> capture point, through the bridge twice).
    assert!(samples.iter().all(|v| v["src"] == "10.231.0.2"), "{samples:?}");
    let floor = samples.iter().map(|v| v["rtt"].as_f64().unwrap()).fold(f64::MAX, f64::min);
    let want = f64::from(2 * HALF_MS) / 1000.0;
    assert!(floor >= want && floor < want + 0.010, "lowest RTT {floor:.6} s, delay {want} s");
}
