//! `rampart verify test|shadowed|compare|search` on hand-written rule sets.

mod common;

use common::{rampart, repo};

fn fixture(dir: &str, name: &str) -> String {
    repo().join("crates/cli/tests/fixtures").join(dir).join(name).display().to_string()
}

fn stdout(args: &[&str]) -> (Option<i32>, String, String) {
    let out = rampart(args);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn shadowed_rules_with_their_covers() {
    let (code, out, _) = stdout(&["verify", "shadowed", &fixture("verify", "a.rampart")]);
    assert_eq!(code, Some(0));
    assert_eq!(
        out,
        "shadowed input:3 by input:1; actions differ\nshadowed input:4 by input:2; same action\n"
    );
    // The shared sample has none; its iptables twin needs its set file.
    let (code, out, _) = stdout(&["verify", "shadowed", &fixture("classify", "sample.rampart")]);
    assert_eq!((code, out.as_str()), (Some(0), ""));
    let (code, _, err) = stdout(&["verify", "shadowed", &fixture("classify", "sample.iptables")]);
    assert_eq!(code, Some(2));
    assert!(err.contains("uses set blocked, which is not defined"), "{err}");
}

#[test]
fn test_names_the_deciding_rule() {
    let a = fixture("verify", "a.rampart");
    for (packet, want) in [
        ("tcp 10.1.2.3:5000 -> 10.0.0.1:22", "accept input:1\n"),
        ("tcp 10.1.2.3:5000 -> 10.0.0.1:25", "drop input:2\n"),
        ("udp 192.0.2.1:5000 -> 10.0.0.1:53 iif eth1", "accept input:5\n"),
        ("udp [2001:db8::1]:5000 -> [2001:db8::2]:53", "accept input:policy\n"),
    ] {
        let (code, out, err) = stdout(&["verify", "test", &a, "--packet", packet]);
        assert_eq!((code, out.as_str()), (Some(0), want), "{packet}: {err}");
    }
    let (code, _, err) = stdout(&["verify", "test", &a, "--packet", "tcp 10.1.2.3 -> x"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("at word 4: expected a destination"), "{err}");
    // The sample through the jump into `web` and its RETURN.
    let s = fixture("classify", "sample.rampart");
    let (_, out, _) =
        stdout(&["verify", "test", &s, "--packet", "tcp 10.77.0.3:1 -> 10.0.0.2:5201"]);
    assert_eq!(out, "drop input:5\n");
    let (_, out, _) =
        stdout(&["verify", "test", &s, "--packet", "tcp 10.77.0.4:1 -> 10.0.0.2:5201"]);
    assert_eq!(out, "accept web:2\n");
}

#[test]
fn compare_reports_a_packet_both_sides_and_the_size() {
    let (a, b, c, d) = (
        fixture("verify", "a.rampart"),
        fixture("verify", "b.rampart"),
        fixture("verify", "c.rampart"),
        fixture("verify", "d.rampart"),
    );
    for other in [&b, &c] {
        let (code, out, _) = stdout(&["verify", "compare", &a, other]);
        assert_eq!(code, Some(0));
        assert!(out.starts_with("equivalent"), "{out}");
    }
    let (code, out, _) = stdout(&["verify", "compare", &a, &d]);
    assert_eq!(code, Some(1));
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("differ: 2^"), "{out}");
    let packet = lines[1].strip_prefix("packet: ").expect("a packet line");
    assert!(packet.starts_with("tcp ") && packet.ends_with(":23"), "{packet}");
    assert!(lines[2].ends_with("a.rampart: accept input:policy"), "{out}");
    assert!(lines[3].ends_with("d.rampart: drop input:3"), "{out}");
    // The witness replays: each side does what compare said.
    let (_, out, _) = stdout(&["verify", "test", &a, "--packet", packet]);
    assert_eq!(out, "accept input:policy\n");
    let (_, out, _) = stdout(&["verify", "test", &d, "--packet", packet]);
    assert_eq!(out, "drop input:3\n");
    // The same policy in both syntaxes.
    let (code, out, _) = stdout(&[
        "verify",
        "compare",
        &fixture("classify", "sample.rampart"),
        &fixture("classify", "sample.iptables"),
        "--sets",
        &fixture("classify", "sample.ipset"),
    ]);
    assert_eq!(
        (code, out.as_str()),
        (Some(0), "equivalent: every packet gets the same action from both\n")
    );
}

#[test]
fn search_finds_a_packet_or_says_none() {
    let a = fixture("verify", "a.rampart");
    let (code, out, _) = stdout(&[
        "verify",
        "search",
        &a,
        "--where",
        "tcp src 10.1.0.0/16 dport 25",
        "--action",
        "drop",
    ]);
    assert_eq!(code, Some(0));
    assert_eq!(out, "packet: tcp 10.1.0.0:40000 -> 10.0.0.2:25\ndrop input:2\n");
    let (code, out, _) = stdout(&[
        "verify",
        "search",
        &a,
        "--where",
        "tcp src 10.1.0.0/16 dport 25",
        "--action",
        "accept",
    ]);
    assert_eq!(code, Some(1));
    assert!(out.starts_with("none"), "{out}");
    let (code, _, err) =
        stdout(&["verify", "search", &a, "--where", "tcp sport x", "--action", "drop"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("at word 3"), "{err}");
}

#[test]
fn filter_verify_proves_the_compiled_rules() {
    let dir = tempfile::tempdir().unwrap();
    let out_pcap = dir.path().join("out.pcap");
    let sample = repo().join("samples/mixed.pcap");
    let out = rampart(&[
        "filter",
        "-r",
        sample.to_str().unwrap(),
        "--rules",
        &fixture("classify", "sample.rampart"),
        "-w",
        out_pcap.to_str().unwrap(),
        "--verify",
    ]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("proved: the compiled classifier returns the first matching rule"),
        "{err}"
    );
}

#[test]
fn nkpl_checks_one_line_each_with_a_counterexample_trace() {
    let (code, out, err) = stdout(&["verify", "nkpl", &fixture("verify", "ring.nkpl")]);
    assert_eq!(code, Some(1), "one check is wrong on purpose: {out}{err}");
    let verdicts: Vec<&str> = out
        .lines()
        .filter(|l| !l.starts_with(' '))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(verdicts, ["ok", "ok", "fail", "ok", "ok", "ok", "ok"]);
    for l in out.lines().filter(|l| !l.starts_with(' ')) {
        assert!(l.contains(" ms  "), "each check has its time: {l}");
    }
    assert!(out.contains("ring.nkpl:8  check @sw=0 ⋅ net⋆ ⋅ @sw=3 ≡ ∅"), "{out}");
    assert!(out.contains("[i=2]"), "loop checks say their variable: {out}");
    let trace: Vec<&str> = out.lines().filter(|l| l.trim_start().starts_with("dup ")).collect();
    assert_eq!(trace.len(), 3, "0 → 1 → 2 → 3 is three hops: {out}");
    assert!(trace[2].ends_with("@pt=2 @sw=3"), "{out}");
    assert!(out.contains("from input @pt=0 @sw=0"), "{out}");
    assert!(err.contains("7 checks in 1 file: 6 hold, 1 fail"), "{err}");
}

#[test]
fn nkpl_errors_name_the_place_and_exit_2() {
    let (code, out, err) = stdout(&["verify", "nkpl", &fixture("verify", "broken.nkpl")]);
    assert_eq!(code, Some(2));
    assert!(out.starts_with("ok "), "the check before the error still reports: {out}");
    assert!(err.contains("broken.nkpl:2:18: expected )"), "{err}");
    let (code, _, err) = stdout(&["verify", "nkpl", "/nonexistent.nkpl"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("/nonexistent.nkpl: cannot read"), "{err}");
}

#[test]
fn nkpl_on_the_katch_inputs() {
    let Some(dir) = common::shared_data("nkpl_on_the_katch_inputs") else { return };
    let dir = dir.join("netkat/katch");
    let (code, out, err) = stdout(&["verify", "nkpl", &dir.join("fig10").display().to_string()]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(out.lines().filter(|l| l.starts_with("ok ")).count(), 33, "{out}");
}

#[test]
fn verify_nkpl_reads_a_multi_line_file_and_recurses_into_sub_folders() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("sub/deeper")).unwrap();
    std::fs::write(
        dir.path().join("multi.nkpl"),
        "-- statements over several lines, as KATch allows\nnet =\n  @sw=0 ⋅ @sw←1\n  ∪ @sw=1 ⋅ @sw←2\ncheck\n\t@sw=0 ⋅ (net ⋅ δ)⋆ ⋅ @sw=2\n  ≢ ∅\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("sub/deeper/left.nkpl"),
        "a = @sw=1 ∪ @sw=2 ∪ @sw=3\ncheck a - @sw=1 - @sw=2 ≡ @sw=3\ncheck @sw=3?⋆ ≡ ε\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("sub/notes.txt"), "not NKPL").unwrap();
    let (code, out, err) = stdout(&["verify", "nkpl", dir.path().to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(err.contains("3 checks in 2 files: 3 hold, 0 fail"), "{err}");
    assert!(out.contains("multi.nkpl:5  check @sw=0 ⋅ (net ⋅ δ)⋆ ⋅ @sw=2 ≢ ∅"), "{out}");
    assert!(out.contains("left.nkpl:2  check a - @sw=1 - @sw=2 ≡ @sw=3"), "{out}");
}

#[test]
fn verify_nkpl_without_a_check_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let only = dir.path().join("bindings.nkpl");
    std::fs::write(&only, "x = @a=1\n-- no check here\n").unwrap();
    let (code, _, err) = stdout(&["verify", "nkpl", only.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no check found in 1 file"), "{err}");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let (code, _, err) = stdout(&["verify", "nkpl", empty.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no .nkpl file"), "{err}");
}

#[test]
fn nftables_rule_sets_by_base_chain_with_nft_rule_names() {
    let a = fixture("verify", "router.nft");
    let b = fixture("verify", "router-b.nft");
    let (code, out, err) = stdout(&["rules", "check", &a]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        out,
        "input: 3 rules (base chain: inet filter, input hook, priority 0, policy drop)\n\
         forward: 8 rules (base chain: inet filter, forward hook, priority 0, policy drop)\n\
         lan_out: 3 rules\n1 set\n"
    );
    // The forward hook's chain by default; --chain picks another.
    for (chain, packet, want) in [
        (
            None,
            "tcp 192.168.1.5:4000 -> 8.8.8.8:443 iif lan0 oif wan ct new",
            "accept lan_out:1 web\n",
        ),
        (
            None,
            "tcp 192.168.1.5:4000 -> 8.8.8.8:22 iif lan0 oif wan ct new",
            "reject lan_out:3 no ssh out\n",
        ),
        (
            None,
            "udp 203.0.113.9:53 -> 192.168.1.5:4000 iif wan oif lan0 ct new",
            "drop forward:3 blocked\n",
        ),
        (
            None,
            "icmp 192.168.1.5:8 -> 8.8.8.8:0 iif lan0 oif eth9 ct new",
            "accept forward:6 ping\n",
        ),
        (None, "icmpv6 [fd00::1]:8 -> [fd00::2]:0 ct new", "drop forward:policy\n"),
        (
            Some("input"),
            "tcp 192.168.1.5:4000 -> 192.168.1.1:22 iif eth0",
            "accept input:3 ssh from lan\n",
        ),
        (
            Some("inet filter input"),
            "tcp 10.0.0.5:4000 -> 192.168.1.1:22 iif eth0",
            "drop input:policy\n",
        ),
    ] {
        let mut args = vec!["verify", "test", &a, "--packet", packet];
        if let Some(c) = chain {
            args.extend(["--chain", c]);
        }
        let (code, out, err) = stdout(&args);
        assert_eq!((code, out.as_str()), (Some(0), want), "{packet}: {err}");
    }
    let (code, out, _) = stdout(&["verify", "shadowed", &a]);
    assert_eq!(
        (code, out.as_str()),
        (Some(0), "shadowed forward:5 dup by forward:4; actions differ\n")
    );
    let (code, out, _) = stdout(&["verify", "compare", &a, &b]);
    assert_eq!(code, Some(1));
    assert!(
        out.contains(": reject lan_out:3 no ssh out\n")
            && out.contains(": accept lan_out:3 ssh out\n"),
        "{out}"
    );
    let (code, out, _) =
        stdout(&["verify", "search", &a, "--where", "udp ct new", "--action", "accept"]);
    assert_eq!(code, Some(0));
    assert!(out.ends_with("accept lan_out:2 dns\n"), "{out}");
    let (code, _, err) = stdout(&[
        "verify",
        "test",
        &a,
        "--chain",
        "nope",
        "--packet",
        "tcp 1.2.3.4:1 -> 5.6.7.8:2",
    ]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no chain \"nope\" (base chains: input (input hook, priority 0), forward (forward hook, priority 0))"), "{err}");
    // A broken file: its place, and nothing run.
    let dir = std::env::temp_dir().join(format!("rampart-nft-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.nft");
    std::fs::write(
        &bad,
        "table inet t {\n\tchain c {\n\t\ttcp dport 22 limit rate over 5/second drop\n\t}\n}\n",
    )
    .unwrap();
    let (code, _, err) = stdout(&["rules", "check", bad.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains(
            "bad.nft:3:27: expected a construct rampart reads ('limit rate over' is not supported)"
        ),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
