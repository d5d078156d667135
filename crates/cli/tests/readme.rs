//! Every `rampart` example in the README's code blocks runs as written: the files it names
//! are given (the README's own rule set for `rules.txt`, the bundled sample for a capture,
//! the shared data where an example names it), and it must exit as the README says (0, or
//! 1 where the README says a difference exits 1), print what its comment promises where the
//! comment is an output, and never panic.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The README's shell examples, continuation lines joined, each with its trailing comment.
fn examples(readme: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    // Inside a block, and whether it is one of shell commands (`sh` or no language).
    let (mut block, mut shell) = (false, false);
    let mut pending = String::new();
    for line in readme.lines() {
        if line.starts_with("```") {
            shell = !block && (line == "```sh" || line == "```");
            block = !block;
            continue;
        }
        if !shell {
            continue;
        }
        if let Some(head) = line.strip_suffix('\\') {
            pending.push_str(head);
            continue;
        }
        pending.push_str(line);
        let full = std::mem::take(&mut pending);
        let (cmd, comment) = match full.find(" #") {
            Some(at) => (full[..at].trim().to_string(), full[at + 2..].trim().to_string()),
            None => (full.trim().to_string(), String::new()),
        };
        // A synopsis (`-r FILE | -i IFACE`, `...`) shows the form, not a command to run.
        let synopsis = cmd.contains(['(', '|'])
            || cmd.contains("...")
            || cmd.split(' ').any(|w| w.len() > 1 && w.bytes().all(|b| b.is_ascii_uppercase()));
        if cmd.starts_with("rampart ") && !synopsis {
            out.push((cmd, comment));
        }
    }
    out
}

/// Splits a command line as the shell would for these examples (double quotes only).
fn words(cmd: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in cmd.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            ' ' if !quoted => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            c => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The README's rampart-syntax rule set (the block that defines `table input`).
fn readme_rules(readme: &str) -> String {
    let start = readme.find("set blocked = {").expect("the README's rule set");
    let end = start + readme[start..].find("```").unwrap();
    readme[start..end].to_string()
}

#[test]
fn the_readme_examples_run_as_written() {
    let repo = common::repo();
    let readme = std::fs::read_to_string(repo.join("README.md")).unwrap();
    let list = examples(&readme);
    assert!(list.len() >= 15, "found {} examples", list.len());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("rules.txt"), readme_rules(&readme)).unwrap();
    let fixtures = repo.join("crates/cli/tests/fixtures");
    let sample = repo.join("samples/mixed.pcap");
    let data = common::shared_data("the_readme_examples_run_as_written");
    let conntrack = data.as_ref().map(|p| p.join("conntrack"));
    // File names the examples use, and what stands for them.
    let mut files: Vec<(&str, PathBuf)> = vec![
        ("in.pcap", sample.clone()),
        ("capture.pcap", sample.clone()),
        ("saved.txt", fixtures.join("classify/sample.iptables")),
        ("ipset.txt", fixtures.join("classify/sample.ipset")),
        ("old.txt", fixtures.join("verify/a.rampart")),
        ("new.txt", fixtures.join("verify/b.rampart")),
    ];
    if let (Some(data), Some(ct)) = (&data, &conntrack) {
        files.extend([
            ("acl1_10k", data.join("classbench/acl1_10k")),
            ("acl1_10k_trace.gz", data.join("classbench/acl1_10k_trace.gz")),
            ("ruleset.nft", ct.join("ruleset.nft")),
            ("ruleset-B.nft", ct.join("ruleset-B.nft")),
            ("today.nft", ct.join("ruleset.nft")),
            ("tomorrow.nft", ct.join("ruleset-B.nft")),
            ("client-side.pcap", ct.join("client-side.pcap")),
            ("server-side.pcap", ct.join("server-side.pcap")),
            ("a.pcap", ct.join("client-side.pcap")),
            ("b.pcap", ct.join("server-side.pcap")),
        ]);
    }
    let mut ran = 0;
    for (cmd, comment) in &list {
        let mut args: Vec<String> = words(cmd).into_iter().skip(1).collect();
        // Optional flags in brackets are shown, not typed.
        args.retain(|a| !(a.starts_with('[') && a.ends_with(']')));
        let mut missing = false;
        for a in &mut args {
            let (prefix, name) = match a.split_once('=') {
                Some((p, n)) if !a.starts_with('-') => (format!("{p}="), n.to_string()),
                _ => (String::new(), a.clone()),
            };
            if let Some(rest) = name.strip_prefix("../shared/data/") {
                match &data {
                    Some(data) => *a = format!("{prefix}{}", data.join(rest).display()),
                    None => missing = true,
                }
                continue;
            }
            let looks_like_file =
                [".pcap", ".nft", ".txt", ".gz"].iter().any(|e| name.ends_with(e))
                    || name == "acl1_10k";
            if !looks_like_file || Path::new(&name).is_absolute() {
                continue;
            }
            match files.iter().find(|(n, _)| *n == name) {
                Some((_, p)) => *a = format!("{prefix}{}", p.display()),
                // Outputs (accepted.pcap, verdicts.json, ...) and rules.txt stay in the
                // temporary folder the examples run in.
                None if name == "rules.txt" || is_output(&args_before(cmd, &name)) => {}
                None => missing = true,
            }
        }
        if missing {
            continue;
        }
        let o = Command::new(env!("CARGO_BIN_EXE_rampart"))
            .args(&args)
            .current_dir(d)
            .output()
            .unwrap();
        let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        let may_differ = comment.contains("exit 1") || cmd.contains("--compare");
        let code = o.status.code();
        assert!(code == Some(0) || (may_differ && code == Some(1)), "{cmd}: exit {code:?}\n{err}");
        assert!(!err.contains("panicked"), "{cmd}: {err}");
        // Comments that show output: a hash, or the rules a verdict names.
        if comment.starts_with("0x") {
            assert!(out.contains(comment.as_str()), "{cmd}: {out}");
        }
        for rule in comment.split([' ', ';']).filter(|w| w.starts_with("input:")) {
            assert!(out.contains(rule), "{cmd}: the README says {comment:?}, it printed {out}");
        }
        ran += 1;
    }
    if data.is_some() {
        assert_eq!(ran, list.len(), "every example ran");
    } else {
        assert!(ran >= list.len() / 2, "ran only {ran} of {}", list.len());
    }
}

/// The flag before a file name in an example: `-w`, `-o` and `--log` name outputs.
fn args_before(cmd: &str, name: &str) -> String {
    let w = words(cmd);
    let at = w.iter().position(|a| a == name || a.ends_with(&format!("={name}")));
    at.and_then(|i| i.checked_sub(1)).map(|i| w[i].clone()).unwrap_or_default()
}

fn is_output(flag: &str) -> bool {
    matches!(flag, "-w" | "--write" | "-o" | "--output" | "--log")
}

#[test]
fn examples_are_split_as_the_shell_would() {
    assert_eq!(
        words(r#"rampart verify test r.txt --packet "tcp 10.0.0.1:1 -> 10.0.0.2:2""#),
        ["rampart", "verify", "test", "r.txt", "--packet", "tcp 10.0.0.1:1 -> 10.0.0.2:2"]
    );
    let ex =
        examples("```sh\nrampart a \\\n    b  # c\ncargo x\nrampart x -r FILE\n```\nrampart no\n");
    assert_eq!(ex, [("rampart a     b".to_string(), "c".to_string())]);
}
