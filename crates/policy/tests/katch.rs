//! Every `check` in KATch's NKPL inputs (`../shared/data/netkat/katch`) holds, as it does in
//! KATch: fig10's Topology Zoo reachability, unreachability and slicing, fig11's flip, inc
//! and nondet families, the fat-tree benchmarks, the Stanford backbone queries and the
//! tutorial.

use std::path::{Path, PathBuf};

use rampart_policy::nkpl::{Event, Session};

fn data() -> Option<PathBuf> {
    rampart_testkit::shared("katch", "netkat/katch")
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "nkpl"))
        .collect();
    out.sort();
    out
}

/// Runs a file; returns (checks holding, checks in all).
fn run(file: &Path) -> (usize, usize) {
    let mut s = Session::new();
    s.set_nesting(5_000);
    let (mut ok, mut all) = (0, 0);
    let mut failures = Vec::new();
    s.run_file(file, &mut |e| {
        if let Event::Check(c) = e {
            all += 1;
            if c.holds() {
                ok += 1;
            } else {
                failures.push(format!("{}:{} {}", c.file.display(), c.line, c.text));
            }
        }
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(failures.is_empty(), "checks fail: {failures:#?}");
    (ok, all)
}

fn run_all() {
    let Some(dir) = data() else { return };
    let mut groups = vec![
        ("fig10", files(&dir.join("fig10")), 33),
        ("fig11/flip", files(&dir.join("fig11/flip")), 11),
        ("fig11/inc", files(&dir.join("fig11/inc")), 10),
        ("fig11/nondet", files(&dir.join("fig11/nondet")), 15),
        ("misc/benchmarks/small", files(&dir.join("misc/benchmarks/small")), 5),
        ("misc/benchmarks/large", files(&dir.join("misc/benchmarks/large")), 2),
    ];
    groups.push(("stanford", vec![dir.join("stanford/query.nkpl")], 16));
    groups.push(("tutorial", vec![dir.join("tutorial.nkpl")], 10));
    for (name, list, want) in groups {
        let mut total = 0;
        for f in &list {
            let (ok, all) = run(f);
            assert_eq!(ok, all);
            total += all;
        }
        assert_eq!(total, want, "{name}: checks found");
    }
}

#[test]
fn every_katch_check_holds() {
    // The Stanford routers nest 870 parentheses deep; parse them on a roomy stack.
    std::thread::Builder::new().stack_size(512 << 20).spawn(run_all).unwrap().join().unwrap();
}

/// The value of field `name` in packet `p`.
fn field(s: &Session, p: &[u32], name: &str) -> i32 {
    let i = s.fields().iter().position(|f| f == name).unwrap();
    rampart_policy::nkpl::decode(p[i])
}

fn run_changed(file: &Path, from: &str, to: &str) -> (Session, rampart_policy::nkpl::Check) {
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains(from), "{} has {from}", file.display());
    let text = text.replace(from, to);
    let mut s = Session::new();
    let mut checks = Vec::new();
    s.run_text(file, &text, &mut |e| {
        if let Event::Check(c) = e {
            checks.push(c);
        }
    })
    .unwrap();
    assert_eq!(checks.len(), 1);
    let c = checks.pop().unwrap();
    (s, c)
}

#[test]
fn reversed_checks_fail_with_a_path() {
    let Some(dir) = data() else { return };
    // Arpa: N28 reaches N11, so claiming no path fails, and the counterexample is a path.
    let (s, c) = run_changed(&dir.join("fig10/Arpa_reachability.nkpl"), "≢ ∅", "≡ ∅");
    assert!(!c.holds());
    let cx = c.counterexample.unwrap();
    assert!(cx.left_has_it);
    assert_eq!(field(&s, &cx.input, "sw"), 28);
    assert_eq!(field(&s, &cx.input, "dst"), 11);
    assert_eq!(field(&s, &cx.output, "sw"), 11);
    assert!(!cx.trace.is_empty());
    for p in &cx.trace {
        assert_eq!(field(&s, p, "dst"), 11, "the destination never changes on the way");
    }
    assert_eq!(cx.trace.last().unwrap(), &cx.output);
    // Slicing with one slice in place of the other differs, on a trace.
    let (_, c) =
        run_changed(&dir.join("fig10/Arpa_slicing.nkpl"), "∪(main2⋅(top⋅δ))⋆", "∪(main1⋅(top⋅δ))⋆");
    assert!(!c.holds());
    assert!(!c.counterexample.unwrap().trace.is_empty());
}
