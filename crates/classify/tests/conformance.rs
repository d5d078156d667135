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
//! - nftables files against `nft` (Debian's `nftables` package), run as root in a network
//!   namespace of its own: `nft -c -f FILE` and rampart accept or refuse alike, at the same
//!   line (where rampart reads less than nft, files named `unsupported-*`, its error names the
//!   construct); each accepted file is then loaded for real, `nft list ruleset` read back, and
//!   its rules, base chains and sets compared with the file's, rule by rule. The shared
//!   oracle's rule sets join the corpus.
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
use rampart_classify::iptables::IptRule;
use rampart_classify::nft::NftRuleset;
use rampart_classify::{iptables, nft, syntax};

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
    /// A namespace of its own for each test (`tag`), as the tests run at once.
    fn new(tag: &str) -> Option<Self> {
        let name = format!("rampart-{tag}-{}", std::process::id());
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
    let Some(ns) = Netns::new("iptables") else {
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

/// The line and column nft names in its error (`FILE:LINE:COL-COL: Error: ...`).
fn nft_place(stderr: &str, file: &Path) -> Option<(usize, usize)> {
    let name = file.to_str()?;
    let at = stderr.find(&format!("{name}:"))? + name.len() + 1;
    let mut parts = stderr[at..].splitn(3, [':', '-']);
    let line = parts.next()?.parse().ok()?;
    let col = parts.next()?.parse().ok()?;
    Some((line, col))
}

/// A rule as a listing must give it back: lines and the order of set elements aside.
fn normal(r: &IptRule) -> IptRule {
    let mut r = IptRule { line: 0, ..r.clone() };
    for t in &mut r.tuples {
        t.elems.sort_by_key(|e| format!("{e:?}"));
    }
    r.tuples.sort_by_key(|t| format!("{t:?}"));
    if let Some((names, _)) = &mut r.iif {
        names.sort();
    }
    if let Some((names, _)) = &mut r.oif {
        names.sort();
    }
    r
}

fn same_rules(name: &str, a: &NftRuleset, b: &NftRuleset, listing: &str) {
    let chains = |rs: &NftRuleset| -> Vec<(String, Option<iptables::Target>, Vec<IptRule>)> {
        let mut v: Vec<_> = rs
            .rules
            .chains
            .iter()
            .map(|c| (c.name.clone(), c.policy.clone(), c.rules.iter().map(normal).collect()))
            .collect();
        v.sort_by(|x: &(String, _, _), y| x.0.cmp(&y.0));
        v
    };
    let (ca, cb) = (chains(a), chains(b));
    assert_eq!(ca.len(), cb.len(), "{name}: chains\n{listing}");
    for (x, y) in ca.iter().zip(&cb) {
        assert_eq!((&x.0, &x.1), (&y.0, &y.1), "{name}: chain\n{listing}");
        assert_eq!(x.2.len(), y.2.len(), "{name}: rules of {}\n{listing}", x.0);
        for (r, s) in x.2.iter().zip(&y.2) {
            assert_eq!(r, s, "{name}: rule {}\n{listing}", r.name);
        }
    }
    let mut ba = a.base.clone();
    let mut bb = b.base.clone();
    ba.sort_by(|x, y| x.chain.cmp(&y.chain));
    bb.sort_by(|x, y| x.chain.cmp(&y.chain));
    assert_eq!(ba, bb, "{name}: base chains\n{listing}");
    assert_eq!(a.sets, b.sets, "{name}: sets\n{listing}");
}

#[test]
fn nft_corpus_agrees_with_nft() {
    const TEST: &str = "nft_corpus_agrees_with_nft";
    let Some(nft_bin) = rampart_testkit::tool(TEST, "nft") else { return };
    if !is_root() {
        rampart_testkit::skip(
            rampart_testkit::REQUIRE_TOOLS,
            TEST,
            "needs root for a network namespace",
        );
        return;
    }
    let Some(ns) = Netns::new("nft") else {
        rampart_testkit::skip(
            rampart_testkit::REQUIRE_TOOLS,
            TEST,
            "cannot add a network namespace",
        );
        return;
    };
    let mut cases = corpus("nft", "nft");
    if let Some(dir) = rampart_testkit::shared(TEST, "conntrack") {
        for f in ["ruleset.nft", "ruleset-B.nft", "ruleset-broken.nft"] {
            cases.push(dir.join(f));
        }
    }
    let mut loaded = 0;
    for path in &cases {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).unwrap();
        let check = ns.run(&nft_bin, &["-c", "-f", path.to_str().unwrap()], None);
        let stderr = String::from_utf8_lossy(&check.stderr).into_owned();
        let reference = if check.status.success() {
            Ok(())
        } else {
            Err(nft_place(&stderr, path).unwrap_or_else(|| panic!("{name}: no place in {stderr}")))
        };
        let ours = nft::parse(&name, &text);
        let bad = name.starts_with("bad-") || name.ends_with("-broken.nft");
        match (&reference, &ours) {
            (Ok(()), Ok(rs)) => {
                assert!(!bad && !name.starts_with("unsupported-"), "{name}: accepted by both");
                // Loaded for real, listed, and read back: the same rules.
                let out = ns.run(&nft_bin, &["flush", "ruleset"], None);
                assert!(out.status.success(), "{name}: flush");
                let out = ns.run(&nft_bin, &["-f", path.to_str().unwrap()], None);
                assert!(
                    out.status.success(),
                    "{name}: nft -f: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let out = ns.run(&nft_bin, &["list", "ruleset"], None);
                assert!(out.status.success(), "{name}: nft list ruleset");
                let listing = String::from_utf8_lossy(&out.stdout).into_owned();
                let back = nft::parse(&format!("{name} (listed)"), &listing).unwrap_or_else(|e| {
                    panic!("{name}: the listing does not read: {e}\n{listing}")
                });
                same_rules(&name, rs, &back, &listing);
                loaded += 1;
            }
            (Err((line, _)), Err(e)) => {
                assert!(bad, "{name}: refused by both: {e}");
                assert_eq!(*line, e.line, "{name}: nft says {stderr}\nrampart: {e}");
            }
            (Err(at), Ok(_)) => {
                panic!("{name}: nft refuses it at {at:?} ({stderr}), rampart accepts it")
            }
            (Ok(()), Err(e)) => {
                assert!(
                    e.to_string().contains("not supported"),
                    "{name}: nft accepts it; rampart's refusal must name what it does not support: {e}"
                );
                assert!(name.starts_with("unsupported-"), "{name}: {e}");
            }
        }
    }
    assert!(loaded >= 12, "{loaded} files loaded and listed");
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
