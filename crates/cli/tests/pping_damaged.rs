//! `rampart rtt --compat pping` on damaged packets, against upstream pping's own output.
//!
//! tests/fixtures/pping/damaged.pcap (made by scripts/make-pping-damaged.py) holds one TCP
//! connection per kind of damage libtins (pping's parser, Debian's libtins 4.0) is lax or
//! strict about: a wrong IP version nibble, an EOL option before the timestamps, an IPv4 total
//! length below the header or 0, a timestamps option of the wrong length, a malformed MSS
//! option, IP options with END before their end or at it, a header length below 5 words, a
//! malformed option after EOL, a fragment, a packet cut after the IP header, IPv6 with a
//! version nibble of 4. The expected outputs are upstream pping's (built from source against
//! libtins 4.0 and libpcap 1.10.3), run with `TZ=UTC` and the arguments in [`RUNS`]; rampart
//! must print the same bytes to standard output and standard error.

mod common;

use std::process::Command;

use common::*;

/// Fixture suffix and pping arguments.
const RUNS: [(&str, &[&str]); 5] = [
    ("m", &["-m"]),
    ("default", &[]),
    ("m-sum1", &["-m", "--sumInt", "1"]),
    ("c2", &["-c", "2"]),
    ("c60-sum3", &["-c", "60", "--sumInt", "3"]),
];

#[test]
fn damaged_packets_as_pping_sees_them() {
    let dir = repo().join("tests/fixtures/pping");
    let capture = dir.join("damaged.pcap");
    for (name, args) in RUNS {
        let out = Command::new(env!("CARGO_BIN_EXE_rampart"))
            .args(["rtt", "--compat", "pping"])
            .args(args)
            .arg("-r")
            .arg(&capture)
            .env("TZ", "UTC")
            .output()
            .unwrap();
        let want = |ext: &str| std::fs::read_to_string(dir.join(format!("damaged.{name}.{ext}")));
        assert_eq!(String::from_utf8_lossy(&out.stdout), want("out").unwrap(), "stdout, {args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), want("err").unwrap(), "stderr, {args:?}");
    }
}
