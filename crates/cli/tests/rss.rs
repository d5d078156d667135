//! `rampart rss` in the forms users (and scripts) call it.

mod common;

use common::{rampart, repo};

fn stdout(args: &[&str]) -> String {
    let out = rampart(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn hash_prints_the_microsoft_vectors() {
    let csv = include_str!("../../rss/tests/rss_vectors.csv");
    for line in csv.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let mut args = vec!["rss", "hash", f[1], f[2]];
        if f[5] == "1" {
            args.extend([f[3], f[4]]);
        }
        assert_eq!(stdout(&args).trim(), f[6], "{line}");
        args.insert(2, "--key");
        args.insert(3, "ms");
        assert_eq!(stdout(&args).trim(), f[6], "{line}");
    }
}

#[test]
fn symmetric_key_and_queue() {
    let a = stdout(&["rss", "hash", "--key", "symmetric", "10.0.0.1", "10.0.0.2", "1234", "80"]);
    let b = stdout(&["rss", "hash", "--key", "symmetric", "10.0.0.2", "10.0.0.1", "80", "1234"]);
    assert_eq!(a, b);
    // 0x51ccc178 & 127 = 120, and 120 mod 6 = 0; 120 mod 7 = 1.
    let q = |queues: &str| {
        stdout(&[
            "rss",
            "queue",
            "--reta-size",
            "128",
            "--queues",
            queues,
            "66.9.149.187",
            "161.142.100.80",
            "2794",
            "1766",
        ])
    };
    assert_eq!(q("6").trim(), "0");
    assert_eq!(q("7").trim(), "1");
}

#[test]
fn ports_land_on_the_queue_asked_for() {
    for (remote, local) in [("10.0.0.1:80", "192.168.1.1"), ("[2001:db8::1]:443", "fe80::1")] {
        let out = stdout(&[
            "rss",
            "ports",
            "--reta-size",
            "512",
            "--queues",
            "6",
            "--queue",
            "5",
            "--local",
            local,
            "--remote",
            remote,
            "--range",
            "40000-40400",
        ]);
        let ports: Vec<u16> = out.lines().map(|l| l.parse().unwrap()).collect();
        assert!(ports.len() > 30 && ports.len() < 110, "{} ports", ports.len());
        assert!(ports.windows(2).all(|w| w[0] < w[1]));
        let (raddr, rport) = remote.rsplit_once(':').unwrap();
        let raddr = raddr.trim_matches(['[', ']']);
        let on = |p: u16| {
            let p = p.to_string();
            let q = stdout(&[
                "rss",
                "queue",
                "--reta-size",
                "512",
                "--queues",
                "6",
                raddr,
                local,
                rport,
                &p,
            ]);
            q.trim() == "5"
        };
        for &p in ports.iter().take(10) {
            assert!(on(p), "{remote} {local} {p}");
        }
        let missing = (40000..=40400u16).find(|p| !ports.contains(p)).unwrap();
        assert!(!on(missing), "{missing} is not listed but lands on queue 5");
    }
}

#[test]
fn balance_counts_every_packet() {
    let sample = repo().join("samples/mixed.pcap");
    let out = stdout(&["rss", "balance", "-r", sample.to_str().unwrap(), "--queues", "3"]);
    let total: u64 = out
        .lines()
        .skip(1)
        .take(3)
        .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(out.contains(&format!("{total} packets hashed")), "{out}");
    assert_eq!(total, 3226);
    let sym = stdout(&[
        "rss",
        "balance",
        "-r",
        sample.to_str().unwrap(),
        "--queues",
        "3",
        "--key",
        "symmetric",
    ]);
    assert!(sym.contains(", 0 with packets on more than one queue"), "{sym}");
}

#[test]
fn bad_input_is_a_usage_error() {
    for args in [
        &["rss", "hash", "1.2.3.4", "::1"][..],
        &["rss", "hash", "--key", "6d5a", "1.2.3.4", "1.2.3.5"],
        &["rss", "hash", "1.2.3.4", "1.2.3.5", "80"],
        &["rss", "queue", "--reta-size", "100", "--queues", "4", "1.2.3.4", "1.2.3.5"],
        &[
            "rss",
            "ports",
            "--queues",
            "4",
            "--queue",
            "4",
            "--local",
            "1.1.1.1",
            "--remote",
            "2.2.2.2:80",
        ],
        &[
            "rss",
            "ports",
            "--queues",
            "4",
            "--queue",
            "1",
            "--local",
            "::1",
            "--remote",
            "2.2.2.2:80",
        ],
        &[
            "rss",
            "ports",
            "--queues",
            "4",
            "--queue",
            "1",
            "--local",
            "1.1.1.1",
            "--remote",
            "2.2.2.2:80",
            "--range",
            "9-3",
        ],
        &["rss", "balance", "-r", "/nonexistent.pcap", "--queues", "2"],
    ] {
        let out = rampart(args);
        assert!(matches!(out.status.code(), Some(1 | 2)), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
