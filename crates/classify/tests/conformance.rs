//! Each rule front end against its reference on a corpus of files (`tests/conformance/`):
//!
//! - `iptables-save` input against `iptables-restore --test` (Debian's `iptables` package,
//!   both its backends: `iptables-legacy-restore` checks chains, targets and policies,
//!   `iptables-nft-restore` the protocols matches need; a file either refuses is refused),
//!   run as root in a network namespace of its own: both accept or both refuse, at the same
//!   line. Where rampart reads less than iptables (files named `unsupported-*`), its
//!   error names the construct it does not support; it never accepts what iptables refuses.
//!   `--test` cannot see jump loops (the kernel refuses them when the table is committed):
//!   rampart refuses them itself.
//! - rampart's own syntax against its documented grammar: each file's first line says
//!   `# expect: ok` or `# expect: LINE:COLUMN` of the first error.
//! - every shared ClassBench filter set and trace, plain or gzipped, against the counts its
//!   README gives.
//!
//! File names say what each case is: `ok-*`, `bad-*` (iptables refuses it) or
//! `unsupported-*`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use rampart_classify::firewall::Firewall;
use rampart_classify::ipset::{IpSet, parse_ipset_save};
use rampart_classify::{iptables, syntax};

fn corpus(dir: &str, ext: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance").join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "the corpus is there: {}", root.display());
    files
}

/// The repository's iptables-save fixtures (with their sets) join the corpus.
fn fixtures() -> Vec<(PathBuf, Option<PathBuf>)> {
    let dir = rampart_testkit::repo().join("crates/cli/tests/fixtures/classify");
    vec![(dir.join("sample.iptables"), Some(dir.join("sample.ipset")))]
}

/// What rampart makes of an iptables-save file: accepted, or the line and message of its
/// first error.
fn rampart_iptables(path: &Path, sets: &HashMap<String, IpSet>) -> Result<(), (usize, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    let rs = iptables::parse("f", &text).map_err(|e| (e.line, e.to_string()))?;
    for chain in ["INPUT", "FORWARD", "OUTPUT"] {
        if rs.chains.iter().any(|c| c.name == chain) {
            Firewall::from_iptables(&rs, chain, sets).map_err(|e| {
                let line = match &e {
                    rampart_classify::firewall::FirewallError::Chain(
                        iptables::ChainError::Loop { rules },
                    ) => rules[0].1,
                    _ => 0,
                };
                (line, e.to_string())
            })?;
        }
    }
    Ok(())
}

/// A network namespace for the reference tool, removed when dropped.
struct Netns(String);

impl Netns {
    fn new() -> Option<Self> {
        let name = format!("rampart-conformance-{}", std::process::id());
        let ok = Command::new("ip").args(["netns", "add", &name]).status().ok()?.success();
        ok.then_some(Netns(name))
    }

    fn run(&self, program: &Path, args: &[&str], stdin: Option<&Path>) -> std::process::Output {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.0]).arg(program).args(args);
        if let Some(f) = stdin {
            c.stdin(std::fs::File::open(f).unwrap());
        }
        c.output().unwrap()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "delete", &self.0]).status();
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// The line `iptables-restore` names in its error ("Error occurred at line: N", "line N
/// failed", "COMMIT expected at line N").
fn reference_line(stderr: &str) -> Option<usize> {
    let words: Vec<&str> = stderr.split_whitespace().collect();
    words.windows(2).find_map(|w| {
        (w[0] == "line" || w[0] == "line:").then(|| w[1].trim_end_matches(':').parse().ok())?
    })
}

#[test]
fn iptables_corpus_agrees_with_iptables_restore() {
    const TEST: &str = "iptables_corpus_agrees_with_iptables_restore";
    let Some(legacy) = rampart_testkit::tool(TEST, "iptables-legacy-restore") else { return };
    let Some(nft) = rampart_testkit::tool(TEST, "iptables-nft-restore") else { return };
    let Some(ipset) = rampart_testkit::tool(TEST, "ipset") else { return };
    if !is_root() {
        rampart_testkit::skip(
            rampart_testkit::REQUIRE_TOOLS,
            TEST,
            "needs root for a network namespace",
        );
        return;
    }
    let Some(ns) = Netns::new() else {
        rampart_testkit::skip(
            rampart_testkit::REQUIRE_TOOLS,
            TEST,
            "cannot add a network namespace",
        );
        return;
    };
    let mut cases: Vec<(PathBuf, Option<PathBuf>)> =
        corpus("iptables", "ipt").into_iter().map(|p| (p, None)).collect();
    cases.extend(fixtures());
    let mut checked = 0;
    for (path, set_file) in &cases {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let mut sets = HashMap::new();
        if let Some(s) = set_file {
            let out = ns.run(&ipset, &["restore", "-exist"], Some(s));
            assert!(
                out.status.success(),
                "ipset restore: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            sets = parse_ipset_save("sets", &std::fs::read_to_string(s).unwrap()).unwrap();
        }
        let mut stderr = String::new();
        let mut reference = Ok(());
        for tool in [&legacy, &nft] {
            let out = ns.run(tool, &["--test", path.to_str().unwrap()], None);
            if out.status.success() {
                continue;
            }
            let text = String::from_utf8_lossy(&out.stderr).into_owned();
            let line = reference_line(&text).unwrap_or_else(|| panic!("{name}: no line in {text}"));
            reference = Err(match reference {
                Err(l) if l <= line => l,
                _ => line,
            });
            stderr.push_str(&text);
        }
        let ours = rampart_iptables(path, &sets);
        match (&reference, &ours) {
            (Ok(()), Ok(())) => assert!(
                !name.starts_with("bad-") && !name.starts_with("unsupported-"),
                "{name}: accepted by both"
            ),
            (Err(line), Err((ours_line, msg))) => {
                assert!(name.starts_with("bad-"), "{name}: refused by both: {msg}");
                assert_eq!(
                    line, ours_line,
                    "{name}: iptables says line {line}: {stderr}\nrampart: {msg}"
                );
            }
            (Err(line), Ok(())) => {
                panic!("{name}: iptables refuses it at line {line} ({stderr}), rampart accepts it")
            }
            (Ok(()), Err((_, msg))) => {
                let loop_only_the_kernel_sees = msg.contains("chains jump in a loop");
                assert!(
                    msg.contains("not supported") || loop_only_the_kernel_sees,
                    "{name}: iptables accepts it; rampart's refusal must name what it does not support: {msg}"
                );
                assert!(
                    name.starts_with("unsupported-")
                        || (loop_only_the_kernel_sees && name.starts_with("bad-")),
                    "{name}: {msg}"
                );
            }
        }
        checked += 1;
    }
    assert_eq!(checked, cases.len());
}

#[test]
fn rampart_syntax_corpus_meets_its_grammar() {
    for path in corpus("rampart", "rules") {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let expect = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# expect: "))
            .unwrap_or_else(|| panic!("{name}: first line says what to expect"))
            .trim()
            .to_string();
        let got = syntax::parse(&name, &text).map(|(rs, sets)| {
            for c in rs.chains.iter().filter(|c| c.policy.is_some()) {
                Firewall::from_iptables(&rs, &c.name, &sets)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
            }
        });
        match (expect.as_str(), got) {
            ("ok", Ok(())) => assert!(name.starts_with("ok-"), "{name}"),
            ("ok", Err(e)) => panic!("{name}: {e}"),
            (at, Ok(())) => panic!("{name}: accepted, expected an error at {at}"),
            (at, Err(e)) => {
                assert!(name.starts_with("bad-"), "{name}: {e}");
                assert_eq!(at, format!("{}:{}", e.line, e.column), "{name}: {e}");
            }
        }
    }
}

/// Every shared ClassBench file, plain or gzipped, reads as its README counts it: rules per
/// filter set, headers per trace.
#[test]
fn classbench_corpus_matches_its_readme() {
    let Some(dir) = rampart_testkit::shared("classbench_corpus_matches_its_readme", "classbench")
    else {
        return;
    };
    let sets = [
        ("acl1_1k", 878, "acl1_1k_trace", 8_780),
        ("fw1_1k", 761, "fw1_1k_trace", 7_610),
        ("ipc1_1k", 923, "ipc1_1k_trace", 9_325),
        ("acl1_10k", 9_761, "acl1_10k_trace.gz", 97_611),
        ("fw1_10k", 9_416, "fw1_10k_trace.gz", 94_182),
        ("ipc1_10k", 8_739, "ipc1_10k_trace.gz", 87_474),
        ("acl1_100k.gz", 99_800, "acl1_100k_trace.gz", 347_911),
        ("fw1_100k.gz", 96_446, "fw1_100k_trace.gz", 289_338),
        ("ipc1_100k.gz", 99_761, "ipc1_100k_trace.gz", 299_285),
    ];
    for (rules, n, trace, m) in sets {
        let text = rampart_classify::source::read_text(&dir.join(rules)).unwrap();
        assert_eq!(
            rampart_classify::source::detect(&text),
            Ok(rampart_classify::source::Format::ClassBench),
            "{rules}"
        );
        let r = rampart_classify::classbench::parse_rules(rules, &text).unwrap();
        assert_eq!(r.len(), n, "{rules}");
        let text = rampart_classify::source::read_text(&dir.join(trace)).unwrap();
        let t = rampart_classify::classbench::parse_trace(trace, &text).unwrap();
        assert_eq!(t.len(), m, "{trace}");
    }
}
