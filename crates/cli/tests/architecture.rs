//! The crate graph follows the design: stages never depend on the engine or the command line,
//! and each crate depends only on the stages listed for it in ARCHITECTURE.md.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

#[test]
fn dependencies_point_one_way() {
    let allowed: BTreeMap<&str, &[&str]> = BTreeMap::from([
        ("rampart-wire", &[][..]),
        ("rampart-capture", &["rampart-wire"][..]),
        ("rampart-flow", &["rampart-wire"][..]),
        ("rampart-rtt", &["rampart-wire", "rampart-flow"][..]),
        ("rampart-tcpstate", &["rampart-wire", "rampart-flow"][..]),
        ("rampart-conntrack", &["rampart-wire", "rampart-flow"][..]),
        (
            "rampart-export",
            &[
                "rampart-wire",
                "rampart-flow",
                "rampart-rtt",
                "rampart-tcpstate",
                "rampart-dpi",
                "rampart-engine",
            ][..],
        ),
        ("rampart-rss", &[][..]),
        ("rampart-classify", &[][..]),
        // The verifier reads the classifier's rule model; the classifier never reads it.
        ("rampart-policy", &["rampart-classify"][..]),
        ("rampart-dpi", &["rampart-flow"][..]),
        // Test support only (a dev-dependency): the shared data's place and skip rules.
        ("rampart-testkit", &[][..]),
        (
            "rampart-engine",
            &[
                "rampart-wire",
                "rampart-capture",
                "rampart-flow",
                "rampart-rtt",
                "rampart-tcpstate",
                "rampart-rss",
                "rampart-classify",
                "rampart-conntrack",
                "rampart-dpi",
            ][..],
        ),
        (
            "rampart",
            &[
                "rampart-capture",
                "rampart-engine",
                "rampart-export",
                "rampart-flow",
                "rampart-rtt",
                "rampart-rss",
                "rampart-classify",
                "rampart-policy",
                "rampart-dpi",
                "rampart-conntrack",
                "rampart-wire",
            ][..],
        ),
    ]);
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut seen = BTreeSet::new();
    for pkg in meta["packages"].as_array().unwrap() {
        let name = pkg["name"].as_str().unwrap();
        let Some(ok) = allowed.get(name) else {
            panic!("crate {name} is not in the design's table; add it here and to ARCHITECTURE.md")
        };
        seen.insert(name);
        for dep in pkg["dependencies"].as_array().unwrap() {
            let dname = dep["name"].as_str().unwrap();
            if dname.starts_with("rampart") && dep["kind"].is_null() {
                assert!(ok.contains(&dname), "{name} must not depend on {dname}");
            }
        }
    }
    assert_eq!(seen.len(), allowed.len());
}
