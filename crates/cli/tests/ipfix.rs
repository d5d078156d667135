//! `--ipfix` checked by real collectors and decoders: nfdump's `nfcapd` stores what rampart
//! sends, and `nfdump` must read back, for every flow, the packets and bytes each way, the
//! first and last times (ms), the ports and the protocol of rampart's own JSON record;
//! Wireshark's dissector (`tshark`) must decode every message without a malformed packet or an
//! expert warning. Each is skipped (one line) when the tool is not installed, and fails
//! instead under `RAMPART_REQUIRE_TOOLS`.

mod common;

use std::collections::BTreeMap;
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// A UDP port nobody is bound to now on 127.0.0.1.
fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Waits (at most 10 s) until a socket is bound to 127.0.0.1:`port` (UDP), as
/// `/proc/net/udp` lists them: binding the port to find out would race the collector's own
/// bind.
fn wait_bound(d: &mut Daemon, port: u16) {
    let want = format!("0100007F:{port:04X} ");
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let table = std::fs::read_to_string("/proc/net/udp").unwrap_or_default();
        if table
            .lines()
            .any(|l| l.trim_start().split_once(": ").is_some_and(|(_, r)| r.starts_with(&want)))
        {
            return;
        }
        assert!(d.0.try_wait().unwrap().is_none(), "the collector exited at start");
        assert!(Instant::now() < until, "the collector did not bind 127.0.0.1:{port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits (at most 10 s) until the UDP socket bound to 127.0.0.1:`port` has read everything
/// sent to it (its receive queue in `/proc/net/udp` is empty), then a moment for the last
/// message to be stored: a collector stopped while messages wait unread loses them, which on a
/// busy machine is not rare.
fn wait_drained(port: u16) {
    let want = format!("0100007F:{port:04X} ");
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let table = std::fs::read_to_string("/proc/net/udp").unwrap_or_default();
        let queued = table.lines().find_map(|l| {
            let (_, rest) = l.trim_start().split_once(": ")?;
            if !rest.starts_with(&want) {
                return None;
            }
            // local remote state tx_queue:rx_queue ...
            let queues = rest.split_whitespace().nth(3)?;
            let rx = queues.split_once(':')?.1;
            u64::from_str_radix(rx, 16).ok()
        });
        if queued.is_none_or(|q| q == 0) || Instant::now() >= until {
            std::thread::sleep(Duration::from_millis(300));
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One flow as both sides must tell it: protocol, source and port, destination and port,
/// first and last (ms), packets and bytes forward, packets and bytes back.
type Flow = (u8, String, u16, String, u16, u64, u64, u64, u64, u64, u64);

/// Epoch milliseconds of a JSON time written as seconds with six decimals, read as text
/// (a float would round).
fn ms(line: &str, key: &str) -> u64 {
    let at = line.find(&format!("\"{key}\":")).unwrap() + key.len() + 3;
    let num: String = line[at..].chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    let (s, frac) = num.split_once('.').unwrap();
    s.parse::<u64>().unwrap() * 1000 + frac[..3].parse::<u64>().unwrap()
}

/// rampart's JSON records as flows.
fn json_flows(text: &str) -> Vec<Flow> {
    let mut out = Vec::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let proto = match &v["proto"] {
            serde_json::Value::String(p) => match p.as_str() {
                "tcp" => 6,
                "udp" => 17,
                "icmp" => 1,
                "icmp6" => 58,
                other => panic!("proto {other}"),
            },
            n => n.as_u64().unwrap() as u8,
        };
        let n = |k: &str| v[k].as_u64().unwrap();
        let a = |k: &str| v[k].as_str().unwrap().parse::<std::net::IpAddr>().unwrap().to_string();
        out.push((
            proto,
            a("src"),
            n("sport") as u16,
            a("dst"),
            n("dport") as u16,
            ms(line, "first"),
            ms(line, "last"),
            n("packets_fwd"),
            n("bytes_fwd"),
            n("packets_rev"),
            n("bytes_rev"),
        ));
    }
    out.sort();
    out
}

/// `nfdump -o raw` records as flows. Raw is the format that prints times as epoch
/// milliseconds (`-o csv` has whole seconds, and nfdump 1.7.1's `%ter` prints the end
/// time's milliseconds wrongly). An ICMP record shows `type.code` where ports would be:
/// rampart sends ports 0, so both must read 0.
fn nfdump_flows(raw: &str) -> Vec<Flow> {
    let mut out = Vec::new();
    for rec in raw.split("Flow Record:").skip(1) {
        let mut f: BTreeMap<&str, &str> = BTreeMap::new();
        for line in rec.lines() {
            if let Some((k, v)) = line.split_once(" = ") {
                f.insert(k.trim(), v.trim());
            }
        }
        let num = |k: &str| -> u64 {
            f.get(k).map_or(0, |v| v.split_whitespace().next().unwrap().parse().unwrap())
        };
        let (sport, dport) = match f.get("ICMP") {
            Some(tc) => {
                let (t, c) = tc.split_whitespace().next().unwrap().split_once('.').unwrap();
                (0, t.parse::<u16>().unwrap() * 256 + c.parse::<u16>().unwrap())
            }
            None => (num("src port") as u16, num("dst port") as u16),
        };
        let addr = |k: &str| {
            f[k].parse::<std::net::IpAddr>().unwrap_or_else(|_| panic!("{k} in {rec}")).to_string()
        };
        out.push((
            num("proto") as u8,
            addr("src addr"),
            sport,
            addr("dst addr"),
            dport,
            num("first"),
            num("last"),
            num("in packets"),
            num("in bytes"),
            num("out packets"),
            num("out bytes"),
        ));
    }
    out.sort();
    out
}

/// Runs rampart with `args` and `--ipfix 127.0.0.1:PORT` into a fresh `nfcapd`, stops it,
/// and returns what `nfdump` reads, with rampart's standard error.
fn through_nfcapd(test: &str, args: &[&std::ffi::OsStr]) -> (Vec<Flow>, String) {
    let (raw, err) = through_nfcapd_raw(test, args);
    (nfdump_flows(&raw), err)
}

/// [`through_nfcapd`], with `nfdump -o raw`'s text.
fn through_nfcapd_raw(test: &str, args: &[&std::ffi::OsStr]) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("nf");
    std::fs::create_dir(&store).unwrap();
    let port = free_udp_port();
    let mut nfcapd = Daemon(
        Command::new("nfcapd")
            .args(["-b", "127.0.0.1", "-p", &port.to_string(), "-t", "3600", "-w"])
            .arg(&store)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_bound(&mut nfcapd, port);
    let out = Command::new(env!("CARGO_BIN_EXE_rampart"))
        .args(args)
        .args(["--ipfix", &format!("127.0.0.1:{port}")])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{test}: {err}");
    assert!(err.contains(&format!("to udp://127.0.0.1:{port}")) && !err.contains("lost"), "{err}");
    // nfcapd writes its file out when it stops; first it reads what waits for it.
    wait_drained(port);
    assert!(nfcapd.stop(), "nfcapd did not stop within 15 s of SIGTERM");
    let raw = Command::new("nfdump").arg("-R").arg(&store).args(["-o", "raw"]).output().unwrap();
    assert!(raw.status.success(), "{}", String::from_utf8_lossy(&raw.stderr));
    (String::from_utf8_lossy(&raw.stdout).into_owned(), err)
}

/// Runs `rampart flows -r CAPTURE --ipfix 127.0.0.1:PORT -o records.json` into a fresh
/// `nfcapd` and compares what `nfdump` reads with the JSON records. Returns the number of
/// flows.
fn through_nfdump(test: &str, capture: &Path) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("records.json");
    let args =
        ["flows".as_ref(), "-r".as_ref(), capture.as_os_str(), "-o".as_ref(), records.as_os_str()];
    let (got, _) = through_nfcapd(test, &args);
    let want = json_flows(&std::fs::read_to_string(&records).unwrap());
    assert!(!want.is_empty());
    for (w, g) in want.iter().zip(&got) {
        assert_eq!(w, g, "{test}: {}: rampart's record, then nfdump's", capture.display());
    }
    assert_eq!(want.len(), got.len(), "{test}: {}: flows", capture.display());
    want.len()
}

/// The captures the comparison runs over: the bundled sample, and larger shared ones (RTT
/// traffic, many TLS/UDP flows, ESP without ports) when the shared data is there.
fn captures(test: &str) -> Vec<PathBuf> {
    let mut v = vec![repo().join("samples/mixed.pcap")];
    if let Some(data) = shared_data(test) {
        for c in [
            "pcaps/rtt/rtt-mixed.pcap",
            "pcaps/dpi/ndpi/pcap/teams.pcap",
            "pcaps/dpi/ndpi/pcap/ipsec_isakmp_esp.pcap",
        ] {
            v.push(data.join(c));
        }
    }
    v
}

/// tshark's output on `pcap` (IPFIX messages to UDP `port`, decoded as IPFIX) with the extra
/// arguments given.
fn tshark_cflow(pcap: &[u8], port: u16, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ipfix.pcap");
    std::fs::write(&file, pcap).unwrap();
    let o = Command::new("tshark")
        .arg("-r")
        .arg(&file)
        .args(["-d", &format!("udp.port=={port},cflow")])
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// tshark's verbose decoding of `pcap` ([`tshark_cflow`]), which must have no malformed
/// packet and no expert info.
fn tshark_clean(pcap: &[u8], port: u16) -> String {
    let verbose = tshark_cflow(pcap, port, &["-V"]);
    assert!(!verbose.contains("Malformed"), "tshark: malformed packet");
    assert!(!verbose.contains("Expert Info"), "tshark: expert info in its decoding");
    verbose
}

#[test]
fn nfdump_reads_every_flow_as_rampart_wrote_it() {
    let test = "nfdump_reads_every_flow_as_rampart_wrote_it";
    if rampart_testkit::tool(test, "nfcapd").is_none()
        || rampart_testkit::tool(test, "nfdump").is_none()
    {
        return;
    }
    let mut total = 0;
    for c in captures(test) {
        let n = through_nfdump(test, &c);
        eprintln!("{test}: {}: nfdump equals rampart on all {n} flows", c.display());
        total += n;
    }
    assert!(total >= 23);
}

/// Appends a pcap record: Ethernet, IPv4 and UDP headers from 127.0.0.1:`sport` to
/// 127.0.0.1:`dport` around `payload` (the UDP checksum is left 0, "none", as IPv4 allows).
fn pcap_udp(file: &mut Vec<u8>, sport: u16, dport: u16, payload: &[u8]) {
    let ip_len = 20 + 8 + payload.len();
    let mut f = vec![0u8; 12];
    f.extend_from_slice(&[0x08, 0x00]);
    let mut ip = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1];
    ip[2..4].copy_from_slice(&(ip_len as u16).to_be_bytes());
    let sum = ip.chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum::<u32>();
    let sum = !((sum & 0xffff) + (sum >> 16)) as u16;
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    for v in [1u32, 0, f.len() as u32, f.len() as u32] {
        file.extend_from_slice(&v.to_le_bytes());
    }
    file.extend_from_slice(&f);
}

#[test]
fn tshark_decodes_every_message_cleanly() {
    let test = "tshark_decodes_every_message_cleanly";
    if rampart_testkit::tool(test, "tshark").is_none() {
        return;
    }
    // rampart's messages, as a collector socket receives them, into a capture file that
    // tshark reads with the IPFIX ("cflow") dissector on that port.
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    rx.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let port = rx.local_addr().unwrap().port();
    let mut all = Vec::new();
    let mut records = 0;
    // Each run is a transport session of its own: its own source port in the capture, and
    // its own observation domain (sequence numbers start again at 0 in each).
    for (run, c) in captures(test).iter().enumerate() {
        let out = rampart(&[
            "flows",
            "-q",
            "-r",
            c.to_str().unwrap(),
            "--ipfix",
            &format!("127.0.0.1:{port}"),
            "--ipfix-domain",
            &(run + 1).to_string(),
        ]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        records += out.stdout.split(|b| *b == b'\n').filter(|l| !l.is_empty()).count();
        // Everything was sent before rampart exited; read what is queued.
        rx.set_nonblocking(true).unwrap();
        let mut buf = vec![0u8; 65536];
        while let Ok(n) = rx.recv(&mut buf) {
            all.push((40000 + run as u16, buf[..n].to_vec()));
        }
        rx.set_nonblocking(false).unwrap();
    }
    let mut pcap = Vec::new();
    for v in [0xa1b2c3d4u32, 0x0004_0002, 0, 0, 65535, 1] {
        if v == 0x0004_0002 {
            pcap.extend_from_slice(&2u16.to_le_bytes());
            pcap.extend_from_slice(&4u16.to_le_bytes());
        } else {
            pcap.extend_from_slice(&v.to_le_bytes());
        }
    }
    for (sport, m) in &all {
        pcap_udp(&mut pcap, *sport, port, m);
    }
    let verbose = tshark_clean(&pcap, port);
    // One flow per data record, each with its reverse octet count.
    let flows = verbose
        .lines()
        .filter(|l| l.strip_prefix("        Flow ").is_some_and(|n| n.parse::<u32>().is_ok()))
        .count();
    let rev = verbose.matches("Octets: ").count();
    assert_eq!(flows, records, "decoded flows");
    assert!(rev >= 2 * records, "forward and reverse octets: {rev}");
    assert!(verbose.contains("PEN: IPFIX Reverse Information Element Private Enterprise (29305)"));
    assert!(verbose.contains("Flow End Reason: "));
    // flows sends Zeek's view of each connection: the templates with the TCP group.
    assert!(verbose.contains("Template Id: 258") && verbose.contains("Template Id: 259"));
    eprintln!("{test}: {} messages, {records} flows decoded cleanly", all.len());
}

/// `rampart rtt --ipfix` sends its flow records (TCP only, with their RTT summaries) while it
/// prints samples as usual: the same TCP flows as `rampart flows` finds.
#[test]
fn rtt_sends_its_tcp_flows() {
    let test = "rtt_sends_its_tcp_flows";
    if rampart_testkit::tool(test, "nfcapd").is_none()
        || rampart_testkit::tool(test, "nfdump").is_none()
    {
        return;
    }
    let sample = repo().join("samples/mixed.pcap");
    let args = ["rtt".as_ref(), "-r".as_ref(), sample.as_os_str()];
    let (got, _) = through_nfcapd(test, &args);
    let flows = rampart(&["flows", "-q", "-r", sample.to_str().unwrap()]);
    let want: Vec<Flow> = json_flows(&String::from_utf8_lossy(&flows.stdout))
        .into_iter()
        .filter(|f| f.0 == 6)
        .collect();
    assert!(want.len() >= 10);
    assert_eq!(got, want);
}

/// A UDP collector nobody listens on: one warning line, the records counted as lost in the
/// summary, the run and its own output complete, status 0.
#[test]
fn an_unreachable_udp_collector_is_said_once() {
    let port = free_udp_port();
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("records.json");
    let sample = repo().join("samples/mixed.pcap");
    let o = Command::new(env!("CARGO_BIN_EXE_rampart"))
        .args(["flows", "-r"])
        .arg(&sample)
        .args(["--ipfix", &format!("127.0.0.1:{port}"), "--ipfix-mtu", "512", "-o"])
        .arg(&out_file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let warning = format!("rampart: IPFIX collector udp://127.0.0.1:{port}: Connection refused");
    assert_eq!(err.matches(&warning).count(), 1, "{err}");
    assert!(err.contains("lost (the system refused to send them)"), "{err}");
    assert_eq!(std::fs::read_to_string(&out_file).unwrap().lines().count(), 23);
}

/// A TCP collector that refuses the connection ends the run before anything is written, with
/// status 2 and the collector's address; one that accepts gets a well-formed stream: one
/// template message, then data messages whose lengths add up to the stream.
#[test]
fn tcp_collectors() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("records.json");
    let sample = repo().join("samples/mixed.pcap");
    let o = Command::new(env!("CARGO_BIN_EXE_rampart"))
        .args(["flows", "-r"])
        .arg(&sample)
        .args(["--ipfix", &format!("tcp://{free}"), "-o"])
        .arg(&out_file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with(&format!("rampart: IPFIX collector tcp://{free}: cannot connect")),
        "{err}"
    );
    assert!(!out_file.exists(), "nothing written");

    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let reader = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut all = Vec::new();
        std::io::Read::read_to_end(&mut s, &mut all).unwrap();
        all
    });
    let o =
        rampart(&["flows", "-r", sample.to_str().unwrap(), "--ipfix", &format!("tcp://{addr}")]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "ipfix: 23 records in 4 messages (and 1 of templates) to tcp://{addr}"
        )),
        "{err}"
    );
    let all = reader.join().unwrap();
    let (mut at, mut messages, mut sets) = (0, 0, Vec::new());
    while at < all.len() {
        assert_eq!(&all[at..at + 2], &[0, 10], "version at {at}");
        let len = usize::from(u16::from_be_bytes([all[at + 2], all[at + 3]]));
        let mut s = at + 16;
        while s < at + len {
            sets.push(u16::from_be_bytes([all[s], all[s + 1]]));
            s += usize::from(u16::from_be_bytes([all[s + 2], all[s + 3]]));
        }
        assert_eq!(s, at + len, "sets fill the message");
        at += len;
        messages += 1;
    }
    assert_eq!(at, all.len());
    assert_eq!(messages, 5);
    assert_eq!(sets[0], 2, "the templates first");
    assert_eq!(sets.iter().filter(|&&s| s == 2).count(), 1, "once over TCP");
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Epoch ms of pmacct's `YYYY-MM-DD HH:MM:SS.ffffff` (UTC, as the test runs it).
fn pmacct_ms(s: &str) -> u64 {
    let n: Vec<i64> = s.split(['-', ' ', ':', '.']).map(|p| p.parse().unwrap()).collect();
    let secs = days_from_civil(n[0], n[1], n[2]) * 86_400 + n[3] * 3600 + n[4] * 60 + n[5];
    secs as u64 * 1000 + n[6] as u64 / 1000
}

/// pmacct's `nfacctd` (the notes' recipe: the print plugin writing JSON, stopped by SIGINT)
/// reads the forward side of every flow as rampart wrote it: addresses, ports, protocol,
/// start and end (ms), the initiator's TCP flags, packets and bytes. pmacct ignores RFC 5103
/// reverse counters, so the reverse side is not compared.
#[test]
fn pmacct_reads_the_forward_side_of_every_flow() {
    let test = "pmacct_reads_the_forward_side_of_every_flow";
    if rampart_testkit::tool(test, "nfacctd").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let port = free_udp_port();
    let conf = dir.path().join("nfacctd.conf");
    std::fs::write(
        &conf,
        format!(
            "daemonize: false\nnfacctd_ip: 127.0.0.1\nnfacctd_port: {port}\nplugins: print[flows]\n\
             aggregate[flows]: src_host, dst_host, src_port, dst_port, proto, tcpflags, \
             timestamp_start, timestamp_end\nprint_output[flows]: json\n\
             print_output_file[flows]: {}/flows-%s.json\nprint_refresh_time[flows]: 1\n\
             print_history[flows]: 1m\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let mut nfacctd = Daemon(
        Command::new("nfacctd")
            .arg("-f")
            .arg(&conf)
            .env("TZ", "UTC")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_bound(&mut nfacctd, port);
    let sample = repo().join("samples/mixed.pcap");
    let out = rampart(&[
        "flows",
        "-q",
        "-r",
        sample.to_str().unwrap(),
        "--ipfix",
        &format!("127.0.0.1:{port}"),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The print plugin writes what it holds every second, and on SIGINT (SIGTERM does not
    // stop it).
    wait_drained(port);
    std::thread::sleep(Duration::from_millis(2500));
    let pid = nix::unistd::Pid::from_raw(nfacctd.0.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let until = Instant::now() + Duration::from_secs(15);
    while nfacctd.0.try_wait().unwrap().is_none() {
        assert!(Instant::now() < until, "nfacctd did not stop within 15 s of SIGINT");
        std::thread::sleep(Duration::from_millis(50));
    }
    let flags = |s: &str| {
        s.bytes().fold(0u64, |acc, c| {
            acc | match c {
                b'C' => 0x80,
                b'E' => 0x40,
                b'U' => 0x20,
                b'A' => 0x10,
                b'P' => 0x08,
                b'R' => 0x04,
                b'S' => 0x02,
                b'F' => 0x01,
                _ => 0,
            }
        })
    };
    let mut want = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let n = |k: &str| v[k].as_u64().unwrap();
        let a = |k: &str| v[k].as_str().unwrap().parse::<std::net::IpAddr>().unwrap();
        let f = v.get("tcp_flags_fwd").and_then(|f| f.as_str()).map_or(0, flags);
        want.push((
            a("src"),
            n("sport"),
            a("dst"),
            n("dport"),
            ms(line, "first"),
            ms(line, "last"),
            f,
            n("packets_fwd"),
            n("bytes_fwd"),
        ));
    }
    let mut got = Vec::new();
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let p = e.unwrap().path();
        if !p.file_name().unwrap().to_string_lossy().starts_with("flows-") {
            continue;
        }
        for line in std::fs::read_to_string(&p).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let n = |k: &str| v[k].as_u64().unwrap();
            let a = |k: &str| v[k].as_str().unwrap().parse::<std::net::IpAddr>().unwrap();
            let s = |k: &str| v[k].as_str().unwrap();
            got.push((
                a("ip_src"),
                n("port_src"),
                a("ip_dst"),
                n("port_dst"),
                pmacct_ms(s("timestamp_start")),
                pmacct_ms(s("timestamp_end")),
                s("tcp_flags").parse::<u64>().unwrap(),
                n("packets"),
                n("bytes"),
            ));
        }
    }
    want.sort();
    got.sort();
    assert_eq!(want.len(), 23);
    assert_eq!(got, want);
}

/// The router oracle's rule set and captures (with a reload to rule set B, so flows end with
/// drops too), as `rampart firewall` arguments.
fn firewall_args(test: &str) -> Option<Vec<std::ffi::OsString>> {
    let d = shared_data(test)?.join("conntrack");
    let timeline = std::fs::read_to_string(d.join("timeline.tsv")).unwrap();
    let at = rampart_testkit::router::timeline_at(&timeline, "load ruleset B");
    let mut a: Vec<std::ffi::OsString> = vec!["firewall".into(), "--rules".into()];
    a.push(d.join("ruleset.nft").into());
    for (port, file) in [("r0", "client-side.pcap"), ("r1", "server-side.pcap")] {
        a.push("-r".into());
        a.push(format!("{port}={}", d.join(file).display()).into());
    }
    for mac in ["r0=9a:c0:d6:7f:03:86", "r1=d2:62:18:ba:51:94"] {
        a.push("--port-mac".into());
        a.push(mac.into());
    }
    a.push("--reload".into());
    a.push(format!("{at}={}", d.join("ruleset-B.nft").display()).into());
    Some(a)
}

/// `rampart firewall --ipfix`: nfdump reads every flow (IPv4 and IPv6, through the
/// firewall's own templates) with the packets and bytes each way, the times, the ports and
/// the protocol of the firewall's own JSON records.
#[test]
fn nfdump_reads_every_firewall_flow_as_rampart_wrote_it() {
    let test = "nfdump_reads_every_firewall_flow_as_rampart_wrote_it";
    if rampart_testkit::tool(test, "nfcapd").is_none()
        || rampart_testkit::tool(test, "nfdump").is_none()
    {
        return;
    }
    let Some(mut args) = firewall_args(test) else { return };
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("records.json");
    args.push("-o".into());
    args.push(records.clone().into());
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let (got, err) = through_nfcapd(test, &args);
    let text = std::fs::read_to_string(&records).unwrap();
    let want = json_flows(&text);
    assert!(want.len() >= 30, "{err}");
    assert!(want.iter().any(|f| f.1.contains(':')) && want.iter().any(|f| f.1.contains('.')));
    assert!(text.contains("\"verdict\":\"drop\""), "a flow whose last packet was dropped");
    for (w, g) in want.iter().zip(&got) {
        assert_eq!(w, g, "{test}: rampart's record, then nfdump's");
    }
    assert_eq!(want.len(), got.len(), "{test}: flows");
}

/// Receives on a fresh UDP socket what `rampart` sends with `args` and `--ipfix` to it;
/// returns the messages and rampart's standard output.
fn received(args: &[&std::ffi::OsStr], port_args: &[&str]) -> (Vec<Vec<u8>>, Vec<u8>) {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = rx.local_addr().unwrap().port();
    let out = Command::new(env!("CARGO_BIN_EXE_rampart"))
        .args(args)
        .args(["--ipfix", &format!("127.0.0.1:{port}")])
        .args(port_args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !err.contains("lost"), "{err}");
    rx.set_nonblocking(true).unwrap();
    let mut buf = vec![0u8; 65536];
    let mut all = Vec::new();
    while let Ok(n) = rx.recv(&mut buf) {
        all.push(buf[..n].to_vec());
    }
    (all, out.stdout)
}

/// The firewall's messages decoded by Wireshark's IPFIX dissector: both templates (IPv4 262
/// and IPv6 263, with the TCP and firewall element groups) and every data record, at the
/// default message size and at 512 octets (where the two templates go in two messages),
/// without a malformed packet or an expert warning; forwardingStatus decoded by name, rampart's
/// reverse TCP counters under its own enterprise number.
#[test]
fn tshark_decodes_the_firewall_templates_cleanly() {
    let test = "tshark_decodes_the_firewall_templates_cleanly";
    if rampart_testkit::tool(test, "tshark").is_none() {
        return;
    }
    let Some(mut args) = firewall_args(test) else { return };
    args.push("-q".into());
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let mut pcap = Vec::new();
    for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 1] {
        if v == 0x0004_0002 {
            pcap.extend_from_slice(&2u16.to_le_bytes());
            pcap.extend_from_slice(&4u16.to_le_bytes());
        } else {
            pcap.extend_from_slice(&v.to_le_bytes());
        }
    }
    let collector = 4739;
    let mut records = 0;
    let mut messages = 0;
    for (run, mtu) in ["1400", "512"].iter().enumerate() {
        let domain = (run + 1).to_string();
        let (msgs, stdout) =
            received(&args, &["--ipfix-mtu", mtu, "--ipfix-domain", domain.as_str()]);
        records += stdout.split(|b| *b == b'\n').filter(|l| !l.is_empty()).count();
        for m in &msgs {
            assert!(m.len() <= mtu.parse::<usize>().unwrap());
            pcap_udp(&mut pcap, 40000 + run as u16, collector, m);
        }
        messages += msgs.len();
    }
    let tshark = |extra: &[&str]| tshark_cflow(&pcap, collector, extra);
    let verbose = tshark_clean(&pcap, collector);
    let flagged = tshark(&["-Y", "_ws.malformed || _ws.expert"]);
    assert!(flagged.trim().is_empty(), "tshark flags: {flagged}");
    for t in ["Template Id: 262", "Template Id: 263", "FlowSet Id: (Data) (262)"] {
        assert!(verbose.contains(t), "{t}");
    }
    assert!(verbose.contains("FlowSet Id: (Data) (263)"), "IPv6 records");
    let flows = verbose
        .lines()
        .filter(|l| l.strip_prefix("        Flow ").is_some_and(|n| n.parse::<u32>().is_ok()))
        .count();
    assert_eq!(flows, records, "decoded flows");
    assert_eq!(
        verbose.matches("ForwardingStatus: Forward (1)").count()
            + verbose.matches("ForwardingStatus: Drop (2)").count(),
        records
    );
    assert!(
        verbose.contains("ForwardingStatus: Drop (2)"),
        "the flows whose last packet was dropped"
    );
    // rampart's reverse retransmissions: its enterprise number, the id with 0x4000.
    assert!(verbose.contains("Type 16398: Value"), "reverse TCP counters");
    assert!(!verbose.contains("Type 16398 [Reverse]"));
    eprintln!("{test}: {messages} messages, {records} flows decoded cleanly");
}

/// A firewall's collector failures as `flows` has them: over UDP one warning, the records
/// counted as lost, the run and its records complete, status 0; over TCP a refused connection
/// is status 2 naming the collector, before any output file is created.
#[test]
fn firewall_collector_failures() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules");
    std::fs::write(&rules, "table filter {\n  default accept\n}\n").unwrap();
    let out_file = dir.path().join("records.json");
    let sample = repo().join("samples/mixed.pcap");
    let run = |collector: &str| {
        Command::new(env!("CARGO_BIN_EXE_rampart"))
            .arg("firewall")
            .arg("--rules")
            .arg(&rules)
            .arg("-r")
            .arg(format!("eth0={}", sample.display()))
            .args(["--ipfix", collector, "--ipfix-mtu", "512", "-o"])
            .arg(&out_file)
            .output()
            .unwrap()
    };
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let o = run(&format!("tcp://{free}"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with(&format!("rampart: IPFIX collector tcp://{free}: cannot connect")),
        "{err}"
    );
    assert!(!out_file.exists(), "nothing written");

    let port = free_udp_port();
    let o = run(&format!("127.0.0.1:{port}"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let warning = format!("rampart: IPFIX collector udp://127.0.0.1:{port}: Connection refused");
    assert_eq!(err.matches(&warning).count(), 1, "{err}");
    assert!(err.contains("lost (the system refused to send them)"), "{err}");
    let flows = std::fs::read_to_string(&out_file).unwrap().lines().count();
    assert!(flows >= 20, "{flows} records");
    assert!(err.contains(&format!(" {flows} flows in ")), "{err}");
}

/// Flows summed by their key (protocol, endpoints): packets and bytes each way, the first
/// record's start and the last record's end (ms).
fn summed(flows: &[Flow]) -> BTreeMap<(u8, String, u16, String, u16), [u64; 6]> {
    let mut m: BTreeMap<_, [u64; 6]> = BTreeMap::new();
    for f in flows {
        let s =
            m.entry((f.0, f.1.clone(), f.2, f.3.clone(), f.4)).or_insert([u64::MAX, 0, 0, 0, 0, 0]);
        s[0] = s[0].min(f.5);
        s[1] = s[1].max(f.6);
        for (i, v) in [f.7, f.8, f.9, f.10].into_iter().enumerate() {
            s[2 + i] += v;
        }
    }
    m
}

/// `--active-timeout`: nfdump stores each interim record as rampart wrote it (flowEndReason
/// 2, the interval's times and delta counters each way), and its per-flow sums are the
/// flow's totals of a run without the option; `rampart rtt --ipfix` sends the same intervals.
#[test]
fn nfdump_sums_interim_records_to_the_flows_totals() {
    let test = "nfdump_sums_interim_records_to_the_flows_totals";
    if rampart_testkit::tool(test, "nfcapd").is_none()
        || rampart_testkit::tool(test, "nfdump").is_none()
    {
        return;
    }
    for c in captures(test) {
        let dir = tempfile::tempdir().unwrap();
        let records = dir.path().join("records.json");
        let args = [
            "flows".as_ref(),
            "-r".as_ref(),
            c.as_os_str(),
            "--active-timeout".as_ref(),
            "1".as_ref(),
            "-o".as_ref(),
            records.as_os_str(),
        ];
        let (raw, _) = through_nfcapd_raw(test, &args);
        let got = nfdump_flows(&raw);
        let text = std::fs::read_to_string(&records).unwrap();
        let interim = text.lines().filter(|l| l.contains("\"end_reason\":\"active\"")).count();
        // nfdump names flowEndReason 2 ("0x02 active timeout").
        let reasons: Vec<&str> =
            raw.lines().filter_map(|l| l.split_once("end reason")).map(|(_, r)| r).collect();
        assert_eq!(reasons.len(), got.len(), "{test}: every record has an end reason");
        assert_eq!(reasons.iter().filter(|r| r.contains("0x02 active timeout")).count(), interim);
        // Record for record: what rampart wrote is what nfdump read.
        assert_eq!(json_flows(&text), got, "{test}: {}", c.display());
        let plain = rampart(&["flows", "-q", "-r", c.to_str().unwrap()]);
        let whole = json_flows(&String::from_utf8_lossy(&plain.stdout));
        assert_eq!(got.len(), whole.len() + interim, "{}", c.display());
        assert_eq!(
            summed(&got),
            summed(&whole),
            "{test}: {}: nfdump's sums, then rampart's",
            c.display()
        );
        eprintln!("{test}: {}: {} flows in {} records add up", c.display(), whole.len(), got.len());
        if c.ends_with("samples/mixed.pcap") {
            assert!(interim >= 10, "{interim}");
            let rtt = [
                "rtt".as_ref(),
                "-r".as_ref(),
                c.as_os_str(),
                "--active-timeout".as_ref(),
                "1".as_ref(),
            ];
            let (rtt_got, _) = through_nfcapd(test, &rtt);
            let tcp: Vec<Flow> = json_flows(&text).into_iter().filter(|f| f.0 == 6).collect();
            assert_eq!(rtt_got, tcp, "rtt sends the same interval records");
        }
    }
}
