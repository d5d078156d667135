//! `rampart run` on a live link: a client and a server namespace joined through a middle one
//! where rampart bridges two address-less veths, all created and deleted by the tests.
//!
//! - The same traffic (ping, ping6, HTTP, a rejected and a dropped port, UDP to a closed port
//!   whose ICMP error is RELATED, a connection the rules allow one way only, and crafted
//!   invalid segments) goes through Linux as the middlebox (forwarding, proxy ARP/NDP, the
//!   rule set loaded with `nft -f`) and then through rampart with the same file: every step's
//!   outcome and every crafted segment's fate must be the same.
//! - Privileges are dropped (uid nobody, no capabilities), the control socket is its owner's
//!   only, `status` and `reload` work, a broken file changes nothing, and a killed rampart
//!   forwards nothing (fail-closed). Over AF_XDP, the redirect programs are detached when
//!   rampart ends, stopped or killed, although it no longer has the privileges to do so.
//! - A TCP transfer survives a stream of reloads; an `app bittorrent drop` rule cuts a
//!   BitTorrent handshake while HTTP passes; two workers see both directions of each flow.
//!
//! Needs root, `ip`, `nft`, `python3`, `curl`, `ping`, `iperf3` and `setpriv`; without them
//! each test says why in one line and passes, or fails under `RAMPART_REQUIRE_DATA=1`, as CI
//! runs it. Addresses: 10.77.0.0/24, 10.78.0.1 and fd77::/64 only, inside the namespaces.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use common::{can_run_live as can_run, sh};

fn live_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/live")
}

fn rules_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/inline/bridge.nft")
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p).unwrap_or_default().lines().map(str::to_string).collect()
}

#[test]
fn rampart_decides_the_oracle_traffic_as_linux_does() {
    let test = "rampart_decides_the_oracle_traffic_as_linux_does";
    if !can_run(test, &["ip", "nft", "python3", "ping", "ethtool"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = live_dir().join("inline-oracle.sh");
    let mut got = Vec::new();
    let mut modes = vec!["linux", "af_packet"];
    if rampart_capture::xdp::available() {
        modes.push("af_xdp");
    } else {
        rampart_testkit::skip(
            rampart_testkit::REQUIRE_TOOLS,
            test,
            "af_xdp part: libxdp1 is not installed",
        );
    }
    for mode in &modes {
        let out = dir.path().join(mode);
        let st = Command::new("bash")
            .arg(&script)
            .args([mode, rules_file().to_str().unwrap(), out.to_str().unwrap()])
            .arg(env!("CARGO_BIN_EXE_rampart"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert!(st.status.success(), "{mode}: {}", String::from_utf8_lossy(&st.stderr));
        let mut r = lines(&out.join("results.tsv"));
        r.extend(lines(&out.join("seen.tsv")));
        got.push(r);
    }
    let linux = &got[0];
    assert_eq!(linux.len(), 16, "every step and crafted segment: {linux:?}");
    // What Linux did is what the rule set says: the steps that must pass passed.
    for must in ["ping\tok", "ping6\tok", "http\tok", "tcp-reject-reset\trefused"] {
        assert!(linux.iter().any(|l| l == must), "Linux: {must:?} not in {linux:?}");
    }
    for (mode, rampart) in modes.iter().zip(&got).skip(1) {
        assert_eq!(rampart, linux, "rampart ({mode}) and Linux differ");
        // rampart's own account: it ran, logged every decision and wrote the flows.
        let r = dir.path().join(mode);
        let err = std::fs::read_to_string(r.join("rampart.err")).unwrap();
        assert!(!err.contains("rampart exit"), "{mode}: {err}");
        let log = lines(&r.join("log.json"));
        assert!(log.iter().any(|l| l.contains("\"verdict\":\"reject\"")), "{log:?}");
        assert!(log.iter().any(|l| l.contains("\"ct_state\":\"invalid\"")), "{log:?}");
        assert!(!lines(&r.join("flows.json")).is_empty());
    }
}

/// Client, middle and server namespaces: c0 (10.77.0.1, fd77::1) -- r0 | r1 -- s0
/// (10.77.0.2, fd77::2); the middle's ports carry no addresses. Deleted when dropped.
struct Topo {
    c: String,
    r: String,
    s: String,
    dir: tempfile::TempDir,
}

impl Topo {
    fn new(tag: &str) -> Self {
        let id = std::process::id();
        let t = Self {
            c: format!("ri{id}{tag}c"),
            r: format!("ri{id}{tag}r"),
            s: format!("ri{id}{tag}s"),
            dir: tempfile::tempdir().unwrap(),
        };
        let (c, r, s) = (&t.c, &t.r, &t.s);
        sh(&format!(
            "for n in {c} {r} {s}; do ip netns add $n; ip -n $n link set lo up; done
             ip link add c0 netns {c} type veth peer name r0 netns {r}
             ip link add s0 netns {s} type veth peer name r1 netns {r}
             ip -n {c} addr add 10.77.0.1/24 dev c0; ip -n {s} addr add 10.77.0.2/24 dev s0
             ip -n {c} addr add fd77::1/64 dev c0 nodad; ip -n {s} addr add fd77::2/64 dev s0 nodad
             for x in '{c} c0' '{s} s0' '{r} r0' '{r} r1'; do set -- $x
               ip netns exec $1 ethtool -K $2 tso off gso off gro off >/dev/null 2>&1 || true
               ip -n $1 link set $2 up; done
             ip netns exec {r} sysctl -qw net.ipv6.conf.r0.disable_ipv6=1 net.ipv6.conf.r1.disable_ipv6=1"
        ));
        t
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn control(&self) -> String {
        self.path("control.sock").display().to_string()
    }

    /// `rampart run` in the middle, with `args` after the pair and control socket; returns
    /// once the control socket is there.
    fn run(&self, rules: &Path, args: &[&str]) -> Child {
        let child = Command::new("ip")
            .args(["netns", "exec", &self.r, env!("CARGO_BIN_EXE_rampart"), "run", "--rules"])
            .arg(rules)
            .args(["--pair", "r0:r1", "--control", &self.control()])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut child = child;
        let until = Instant::now() + Duration::from_secs(10);
        while !self.path("control.sock").exists() {
            if child.try_wait().unwrap().is_some() {
                let out = child.wait_with_output().unwrap();
                panic!("rampart run exited: {}", String::from_utf8_lossy(&out.stderr));
            }
            assert!(Instant::now() < until, "rampart run did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        child
    }

    /// A command in namespace `ns`.
    fn exec(&self, ns: &str, cmd: &[&str]) -> Output {
        Command::new("ip").args(["netns", "exec", ns]).args(cmd).output().unwrap()
    }

    fn ping(&self) -> bool {
        self.exec(&self.c, &["ping", "-c", "2", "-i", "0.2", "-W", "1", "10.77.0.2"])
            .status
            .success()
    }

    /// Whether a ping gets through within three tries: a bridge just started on a machine
    /// busy with the other tests' transfers may take its first frames late.
    fn pings_through(&self) -> bool {
        (0..3).any(|_| self.ping())
    }

    fn rampart(&self, cmd: &str) -> Output {
        Command::new(env!("CARGO_BIN_EXE_rampart"))
            .args([cmd, "--control", &self.control()])
            .output()
            .unwrap()
    }
}

impl Drop for Topo {
    fn drop(&mut self) {
        for n in [&self.c, &self.r, &self.s] {
            common::delete_namespace(n);
        }
    }
}

fn stop(child: Child) -> Output {
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let mut child = child;
    let until = Instant::now() + Duration::from_secs(15);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            panic!("rampart run did not stop on SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// The `/proc/PID/status` line `key`, for the rampart process inside namespace `ns` (the
/// child is `ip netns exec`, which execs rampart: the same pid).
fn proc_status(pid: u32, key: &str) -> String {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines().find(|l| l.starts_with(key)).unwrap_or("").to_string()
}

#[test]
fn run_drops_privileges_answers_its_owner_reloads_and_fails_closed() {
    let test = "run_drops_privileges_answers_its_owner_reloads_and_fails_closed";
    if !can_run(test, &["ip", "ping", "ethtool", "setpriv"]) {
        return;
    }
    let t = Topo::new("p");
    let rules = t.path("rules.nft");
    std::fs::copy(rules_file(), &rules).unwrap();
    // Readable by the unprivileged user rampart becomes, for reloads.
    sh(&format!("chmod 755 {}; chmod 644 {}", t.dir.path().display(), rules.display()));
    let child = t.run(&rules, &["-o", t.path("flows.json").to_str().unwrap()]);
    let pid = child.id();
    assert!(t.pings_through(), "ping through rampart");
    // Unprivileged, with no capabilities.
    std::thread::sleep(Duration::from_millis(200));
    let uid = proc_status(pid, "Uid:");
    assert!(uid.split_whitespace().skip(1).all(|u| u == "65534"), "{uid}");
    for key in ["CapEff:", "CapPrm:", "CapAmb:"] {
        let caps = proc_status(pid, key);
        assert!(caps.ends_with("0000000000000000"), "{caps}");
    }
    // The control socket is its owner's only.
    let mode = std::fs::metadata(t.path("control.sock")).unwrap();
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    assert_eq!(mode.permissions().mode() & 0o777, 0o600);
    assert_eq!(mode.uid(), 0);
    let other = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_rampart"))
        .args(["status", "--control", &t.control()])
        .output()
        .unwrap();
    assert!(!other.status.success(), "another user read the status");
    let status = t.rampart("status");
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    assert!(text.contains("generation 1") && text.contains("r0:r1 worker 0: received"), "{text}");
    // A reload proves and swaps; a broken file changes nothing.
    let ok = t.rampart("reload");
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    assert!(String::from_utf8_lossy(&ok.stdout).contains("generation 2"));
    std::fs::write(&rules, "table inet filter {\n  chain forward {\n    bogus\n").unwrap();
    let bad = t.rampart("reload");
    assert!(!bad.status.success());
    let why = String::from_utf8_lossy(&bad.stderr);
    assert!(why.contains("rules.nft:3:"), "the error names the line: {why}");
    assert!(String::from_utf8_lossy(&t.rampart("status").stdout).contains("generation 2"));
    assert!(t.pings_through(), "the rule set in force stays");
    // Killed, it forwards nothing: the link fails closed.
    kill(Pid::from_raw(pid as i32), Signal::SIGKILL).unwrap();
    let mut child = child;
    let _ = child.wait();
    assert!(!t.ping(), "frames crossed with rampart dead");
}

/// Whether interface `dev` of namespace `ns` has an XDP program attached.
fn xdp_attached(t: &Topo, dev: &str) -> bool {
    let out = t.exec(&t.r, &["ip", "link", "show", dev]);
    String::from_utf8_lossy(&out.stdout).contains("prog/xdp")
}

#[test]
fn af_xdp_programs_are_detached_however_run_ends() {
    let test = "af_xdp_programs_are_detached_however_run_ends";
    if !can_run(test, &["ip", "ping", "ethtool"]) {
        return;
    }
    if !rampart_capture::xdp::available() {
        rampart_testkit::skip(rampart_testkit::REQUIRE_TOOLS, test, "libxdp1 is not installed");
        return;
    }
    let t = Topo::new("x");
    let rules = t.path("rules.nft");
    std::fs::copy(rules_file(), &rules).unwrap();
    sh(&format!("chmod 755 {}; chmod 644 {}", t.dir.path().display(), rules.display()));
    for how in [Signal::SIGINT, Signal::SIGKILL] {
        let child = t.run(&rules, &["--driver", "af_xdp"]);
        assert!(t.pings_through(), "ping through rampart ({how})");
        assert!(xdp_attached(&t, "r0") && xdp_attached(&t, "r1"), "no program while running");
        if how == Signal::SIGINT {
            // The status shows how deep the fill rings are kept: the first depth, since a
            // few pings in copy mode never take three quarters of it between two refills.
            let status = String::from_utf8_lossy(&t.rampart("status").stdout).into_owned();
            let want = format!("fill rings {0}/{0} frames", rampart_capture::xdp::FILL_START);
            assert!(status.contains(&want), "{status}");
        }
        // The bridge runs as nobody, which cannot detach them itself: the helper that kept
        // root does, once the bridge has ended (cleanly or killed).
        // (The control socket is bound just before the privileges are dropped.)
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            let uid = proc_status(child.id(), "Uid:");
            if uid.split_whitespace().skip(1).all(|u| u == "65534") {
                break;
            }
            assert!(Instant::now() < until, "still {uid}");
            std::thread::sleep(Duration::from_millis(20));
        }
        let err = if how == Signal::SIGINT {
            // A stop it makes itself waits for the helper: the programs are gone by the
            // time it exits, and it says nothing about them.
            let out = stop(child);
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            assert!(out.status.success(), "{err}");
            assert!(!err.contains("release helper") && !err.contains("detach"), "{err}");
            assert!(!xdp_attached(&t, "r0") && !xdp_attached(&t, "r1"), "attached at exit");
            err
        } else {
            kill(Pid::from_raw(child.id() as i32), how).unwrap();
            let mut child = child;
            let _ = child.wait();
            String::new()
        };
        let until = Instant::now() + Duration::from_secs(5);
        while xdp_attached(&t, "r0") || xdp_attached(&t, "r1") {
            assert!(Instant::now() < until, "an XDP program stayed attached after {how}: {err}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn a_transfer_survives_reloads_and_app_rules_cut_bittorrent() {
    let test = "a_transfer_survives_reloads_and_app_rules_cut_bittorrent";
    if !can_run(test, &["ip", "iperf3", "python3", "ethtool"]) {
        return;
    }
    let t = Topo::new("r");
    let rules = t.path("rules");
    // rampart syntax: app rules act once identification has decided the flow.
    std::fs::write(
        &rules,
        "table filter {\n  app bittorrent drop\n  ct state invalid drop\n  default accept\n}\n",
    )
    .unwrap();
    let child = t.run(&rules, &["--user", "root", "-o", t.path("flows.json").to_str().unwrap()]);
    let iperf_s = t.exec(&t.s, &["iperf3", "-s", "-1", "-D", "-B", "10.77.0.2"]);
    assert!(iperf_s.status.success());
    std::thread::sleep(Duration::from_millis(300));
    let client = Command::new("ip")
        .args(["netns", "exec", &t.c, "iperf3", "-c", "10.77.0.2", "-t", "3", "-J"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Reloads while the transfer runs.
    let mut reloads = 0;
    let until = Instant::now() + Duration::from_millis(2500);
    while Instant::now() < until {
        let r = t.rampart("reload");
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        reloads += 1;
    }
    let out = client.wait_with_output().unwrap();
    assert!(out.status.success(), "iperf3 failed under reloads");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let bytes = v["end"]["sum_received"]["bytes"].as_f64().unwrap();
    assert!(reloads >= 20, "only {reloads} reloads");
    assert!(bytes > 1e6, "{bytes} bytes moved");
    // HTTP passes; a BitTorrent handshake is cut once identified.
    let script = "import socket,sys\n\
        srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n\
        srv.bind(('10.77.0.2', int(sys.argv[1]))); srv.listen(4)\n\
        while True:\n    c, _ = srv.accept(); d = c.recv(1000)\n    c.sendall(d)\n    c.close()\n";
    let mut echo = Command::new("ip")
        .args(["netns", "exec", &t.s, "python3", "-c", script, "6881"])
        .spawn()
        .unwrap();
    let mut web = Command::new("ip")
        .args(["netns", "exec", &t.s, "python3", "-m", "http.server", "80", "--bind", "10.77.0.2"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    let client = "import socket,sys\n\
        s = socket.create_connection(('10.77.0.2', 6881), timeout=2)\n\
        s.sendall(b'\\x13BitTorrent protocol' + bytes(8) + b'I' * 20 + b'P' * 20)\n\
        try:\n    d = s.recv(100)\n    print('answered' if d else 'closed')\n\
        except OSError:\n    print('cut')\n";
    let bt = t.exec(&t.c, &["python3", "-c", client]);
    let http = t.exec(&t.c, &["curl", "-s", "-o", "/dev/null", "-m", "3", "http://10.77.0.2/"]);
    for c in [&mut echo, &mut web] {
        let _ = c.kill();
        let _ = c.wait();
    }
    let summary = stop(child);
    let err = String::from_utf8_lossy(&summary.stderr);
    assert_eq!(String::from_utf8_lossy(&bt.stdout).trim(), "cut", "{err}");
    assert!(http.status.success(), "HTTP did not pass: {err}");
    let flows = std::fs::read_to_string(t.path("flows.json")).unwrap();
    assert!(flows.lines().any(|l| l.contains("\"app\":\"BitTorrent\"")), "{flows}");
    assert!(err.contains(&format!("{reloads} reloads")) || err.contains("reloads"), "{err}");
}

#[test]
fn two_workers_see_both_directions_of_every_flow() {
    let test = "two_workers_see_both_directions_of_every_flow";
    if !can_run(test, &["ip", "python3", "ethtool"]) {
        return;
    }
    let t = Topo::new("w");
    let rules = t.path("rules");
    std::fs::write(&rules, "table filter {\n  default accept\n}\n").unwrap();
    let child = t.run(
        &rules,
        &["--user", "root", "--workers", "2", "-o", t.path("flows.json").to_str().unwrap()],
    );
    let echo = "import socket\n\
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('10.77.0.2', 7))\n\
        while True:\n    d, a = s.recvfrom(100); s.sendto(d, a)\n";
    let _echo = Command::new("ip").args(["netns", "exec", &t.s, "python3", "-c", echo]).spawn();
    std::thread::sleep(Duration::from_millis(500));
    // 200 flows (one source port each), a request and its answer each.
    let client = "import socket\n\
        ok = 0\n\
        for i in range(200):\n\
        \x20   s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(1)\n\
        \x20   s.bind(('10.77.0.1', 20000 + i)); s.sendto(b'x', ('10.77.0.2', 7))\n\
        \x20   try:\n        s.recv(10); ok += 1\n    except OSError:\n        pass\n\
        \x20   s.close()\n\
        print(ok)\n";
    let out = t.exec(&t.c, &["python3", "-c", client]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "200");
    // The workers publish their counters between batches: on a busy machine a moment after
    // the traffic.
    let received = |status: &str, w: &str| -> u64 {
        status
            .split(w)
            .nth(1)
            .and_then(|x| x.split_whitespace().next())
            .and_then(|x| x.parse().ok())
            .unwrap_or(0)
    };
    let until = Instant::now() + Duration::from_secs(10);
    let status = loop {
        let status = String::from_utf8_lossy(&t.rampart("status").stdout).to_string();
        if received(&status, "total: received ") >= 400 || Instant::now() > until {
            break status;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let summary = stop(child);
    assert!(summary.status.success(), "{}", String::from_utf8_lossy(&summary.stderr));
    // Every flow once, with packets both ways: its two directions met on one worker.
    let mut seen = std::collections::HashSet::new();
    for l in std::fs::read_to_string(t.path("flows.json")).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        if v["proto"] != "udp" || v["dport"] != 7 {
            continue;
        }
        let sport = v["sport"].as_u64().unwrap();
        assert!(seen.insert(sport), "flow from port {sport} recorded twice: split over workers");
        assert_eq!((v["packets_fwd"].as_u64(), v["packets_rev"].as_u64()), (Some(1), Some(1)));
    }
    assert_eq!(seen.len(), 200);
    // Both workers had a share.
    for w in ["worker 0: received ", "worker 1: received "] {
        let n = received(&status, w);
        assert!(n > 20, "{w}{n}: {status}");
    }
}

#[test]
fn run_checks_its_configuration_and_its_interfaces() {
    let test = "run_checks_its_configuration_and_its_interfaces";
    let dir = tempfile::tempdir().unwrap();
    let rampart =
        |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_rampart")).args(args).output().unwrap();
    // --check: the rule set is loaded and proved, no interface is touched.
    let good =
        rampart(&["run", "--rules", rules_file().to_str().unwrap(), "--pair", "x0:x1", "--check"]);
    assert!(good.status.success(), "{}", String::from_utf8_lossy(&good.stderr));
    assert!(String::from_utf8_lossy(&good.stdout).contains("proved"));
    // A configuration file: keys as the options, relative paths from the file.
    std::fs::copy(rules_file(), dir.path().join("fw.nft")).unwrap();
    let cfg = dir.path().join("run.toml");
    std::fs::write(
        &cfg,
        "rules = \"fw.nft\"\npair = [\"x0:x1\"]\nworkers = 2\n[ct]\ntcp_loose = 0\n",
    )
    .unwrap();
    let from_file = rampart(&["run", "--config", cfg.to_str().unwrap(), "--check"]);
    assert!(from_file.status.success(), "{}", String::from_utf8_lossy(&from_file.stderr));
    assert!(String::from_utf8_lossy(&from_file.stdout).contains("2 workers"));
    // Bad input: exit 2, naming the key or the line.
    std::fs::write(&cfg, "rules = \"fw.nft\"\npair = [\"x0:x1\"]\nworker = 2\n").unwrap();
    let unknown = rampart(&["run", "--config", cfg.to_str().unwrap(), "--check"]);
    assert_eq!(unknown.status.code(), Some(2));
    let e = String::from_utf8_lossy(&unknown.stderr);
    assert!(e.contains("line 3") && e.contains("worker"), "{e}");
    let bad_rules = dir.path().join("bad.nft");
    std::fs::write(&bad_rules, "table inet f {\n  chain forward {\n    type filter hook forward priority 0;\n    tcp dport 99999 accept\n  }\n}\n").unwrap();
    let bad =
        rampart(&["run", "--rules", bad_rules.to_str().unwrap(), "--pair", "x0:x1", "--check"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("bad.nft:4:"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    let pair =
        rampart(&["run", "--rules", rules_file().to_str().unwrap(), "--pair", "x0", "--check"]);
    assert_eq!(pair.status.code(), Some(2));
    // Interfaces: one with an address is refused before anything opens.
    if !can_run(test, &["ip"]) {
        return;
    }
    let t = Topo::new("k");
    let c = Command::new("ip")
        .args(["netns", "exec", &t.c, env!("CARGO_BIN_EXE_rampart"), "run", "--rules"])
        .arg(rules_file())
        .args(["--pair", "c0:lo", "--control", &t.control()])
        .output()
        .unwrap();
    assert_eq!(c.status.code(), Some(2));
    let e = String::from_utf8_lossy(&c.stderr);
    assert!(e.contains("c0 has addresses (10.77.0.1"), "{e}");
    assert!(!t.path("control.sock").exists());
}
