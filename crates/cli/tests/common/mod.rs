//! Helpers shared by the command-line integration tests.
#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[allow(unused_imports)]
pub use rampart_testkit::repo;

/// The shared data folder (`RAMPART_DATA`, else `../shared/data` beside the repository), or
/// `None` after printing one line saying the test is skipped (a failure under
/// `RAMPART_REQUIRE_DATA`).
pub fn shared_data(test: &str) -> Option<PathBuf> {
    rampart_testkit::shared(test, "")
}

/// Whether libpcap loads here, so `-f` works; otherwise the test is skipped (one line), or
/// fails under `RAMPART_REQUIRE_LIBPCAP`.
pub fn libpcap(test: &str) -> bool {
    if rampart_capture::filter::available() {
        return true;
    }
    rampart_testkit::skip(rampart_testkit::REQUIRE_LIBPCAP, test, "libpcap cannot be loaded");
    false
}

/// Runs `rampart` with `args`.
pub fn rampart(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rampart")).args(args).output().unwrap()
}

/// A conversation key as in the tshark fixtures: protocol label, then the two endpoints in
/// ascending order.
pub type ConvKey = (String, (IpAddr, u16), (IpAddr, u16));
/// Packets and bytes A->B, then B->A.
pub type Counts = [u64; 4];

/// Reads a fixture made by scripts/tshark-flows.py.
pub fn read_fixture(path: &Path) -> BTreeMap<ConvKey, Counts> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut m = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let f: Vec<&str> = line.split('\t').collect();
        let ep = |a: &str, p: &str| (a.parse::<IpAddr>().unwrap(), p.parse::<u16>().unwrap());
        let counts = [f[5], f[6], f[7], f[8]].map(|v| v.parse::<u64>().unwrap());
        m.insert((f[0].to_owned(), ep(f[1], f[2]), ep(f[3], f[4])), counts);
    }
    m
}

/// Groups `rampart flows --format json` output the way the fixtures are grouped (flows with the
/// same key, if the timeout split any, are added up).
pub fn group_json(stdout: &[u8]) -> BTreeMap<ConvKey, Counts> {
    let mut m: BTreeMap<ConvKey, Counts> = BTreeMap::new();
    for line in std::str::from_utf8(stdout).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let num = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {line}"));
        let addr = |k: &str| v[k].as_str().unwrap().parse::<IpAddr>().unwrap();
        let echo = v.get("icmp_id").and_then(|i| i.as_u64()).map(|i| i as u16);
        let (label, sp, dp) = match (&v["proto"], echo) {
            (serde_json::Value::String(p), Some(id)) => (format!("{p}-echo"), id, id),
            (serde_json::Value::String(p), None)
                if (p == "tcp" || p == "udp") && (num("sport"), num("dport")) != (0, 0) =>
            {
                (p.clone(), num("sport") as u16, num("dport") as u16)
            }
            (serde_json::Value::String(p), None) => {
                let n = match p.as_str() {
                    "tcp" => 6,
                    "udp" => 17,
                    "icmp" => 1,
                    "icmp6" => 58,
                    other => panic!("unknown proto {other}"),
                };
                (format!("ip-{n}"), 0, 0)
            }
            (n, _) => (format!("ip-{n}"), 0, 0),
        };
        let (s, d) = ((addr("src"), sp), (addr("dst"), dp));
        let fwd = [num("packets_fwd"), num("bytes_fwd"), num("packets_rev"), num("bytes_rev")];
        let (key, c) = if s <= d {
            ((label, s, d), fwd)
        } else {
            ((label, d, s), [fwd[2], fwd[3], fwd[0], fwd[1]])
        };
        let e = m.entry(key).or_default();
        for i in 0..4 {
            e[i] += c[i];
        }
    }
    m
}

/// Compares rampart's flows of `capture` with a tshark fixture; returns the differences.
pub fn diff_against_fixture(capture: &Path, fixture: &Path) -> Vec<String> {
    // tshark's conversations are the outer packets'.
    let out = rampart(&["flows", "-q", "--tunnels", "outer", "-r", capture.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}: {}",
        capture.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let got = group_json(&out.stdout);
    let want = read_fixture(fixture);
    let mut diffs = Vec::new();
    for (k, w) in &want {
        match got.get(k) {
            Some(g) if g == w => {}
            g => diffs.push(format!("{k:?}: tshark {w:?}, rampart {g:?}")),
        }
    }
    for (k, g) in &got {
        if !want.contains_key(k) {
            diffs.push(format!("{k:?}: tshark none, rampart {g:?}"));
        }
    }
    diffs
}

/// A process a test started (a collector, a server, rampart itself), stopped by its PID when
/// dropped, also when the test fails.
pub struct Daemon(pub std::process::Child);

impl Daemon {
    /// SIGTERM, then waits for it to exit: whether it did within 15 s (else it is killed).
    pub fn stop(&mut self) -> bool {
        use std::time::{Duration, Instant};
        let pid = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let until = Instant::now() + Duration::from_secs(15);
        while Instant::now() < until {
            if self.0.try_wait().ok().flatten().is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
        false
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Runs rampart with `args`, feeding `capture` on standard input as a live `tcpdump -w -`
/// would (the header and first records, then a trickle through a pipe kept open), and
/// interrupts it (SIGINT) `after` that long: what it wrote and its exit.
pub fn interrupted_while_reading(
    capture: impl AsRef<Path>,
    args: &[&str],
    after: std::time::Duration,
) -> Output {
    use std::io::Write as _;
    use std::process::Stdio;
    let bytes = std::fs::read(capture).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rampart"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&bytes[..60_000]);
        for chunk in bytes[60_000..].chunks(200) {
            std::thread::sleep(std::time::Duration::from_millis(20));
            if stdin.write_all(chunk).is_err() {
                return;
            }
        }
        std::thread::sleep(std::time::Duration::from_secs(30));
    });
    std::thread::sleep(after);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    drop(feeder);
    out
}

/// Whether the machine can run a live test (root, for network namespaces and CAP_NET_RAW, and
/// every tool in `tools` on the PATH); if not, `test` is skipped with one line, or fails under
/// `RAMPART_REQUIRE_DATA`, as CI runs it.
pub fn can_run_live(test: &str, tools: &[&str]) -> bool {
    if !nix::unistd::geteuid().is_root() {
        rampart_testkit::skip(
            rampart_testkit::REQUIRE_DATA,
            test,
            "not root (it creates network namespaces and needs CAP_NET_RAW)",
        );
        return false;
    }
    for tool in tools {
        let found = Command::new("which")
            .arg(tool)
            .stdout(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            rampart_testkit::skip(
                rampart_testkit::REQUIRE_DATA,
                test,
                &format!("{tool} is not installed"),
            );
            return false;
        }
    }
    true
}

/// Runs a bash script, failing the test with its standard error if it fails.
pub fn sh(script: &str) {
    let out = Command::new("bash").args(["-ec", script]).output().unwrap();
    assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Deletes network namespace `name` and kills whatever still runs in it (quietly: it may be
/// gone already).
pub fn delete_namespace(name: &str) {
    let _ = Command::new("bash")
        .args([
            "-c",
            &format!(
                "ip netns pids {name} 2>/dev/null | xargs -r kill -9; ip netns del {name} 2>/dev/null"
            ),
        ])
        .status();
}
