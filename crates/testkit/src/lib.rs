//! What rampart's tests share: where the large shared data lies, and how a test that cannot
//! run says so.
//!
//! A test that needs something the machine may lack (the shared captures and rule sets, or a
//! system library loaded at run time) prints one line saying it was skipped and passes, so
//! `cargo test` works on a fresh clone. CI sets the matching `RAMPART_REQUIRE_*` variable,
//! and there the same test fails instead: a suite cannot pass in CI by skipping.

pub mod flood;
pub mod router;

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The variable that makes a missing shared data folder a failure.
pub const REQUIRE_DATA: &str = "RAMPART_REQUIRE_DATA";
/// The variable that makes a missing libpcap a failure.
pub const REQUIRE_LIBPCAP: &str = "RAMPART_REQUIRE_LIBPCAP";
/// The variable that makes a missing reference tool (`iptables-restore`, `gzip`, `zstd`) a
/// failure.
pub const REQUIRE_TOOLS: &str = "RAMPART_REQUIRE_TOOLS";

/// The program `name` on the `PATH`, if it is there. Otherwise `test` is skipped (one line),
/// or, under `RAMPART_REQUIRE_TOOLS`, the test fails.
pub fn tool(test: &str, name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths).map(|d| d.join(name)).find(|p| p.is_file())
    });
    if found.is_none() {
        skip(REQUIRE_TOOLS, test, &format!("{name} is not installed"));
    }
    found
}

/// The repository root.
pub fn repo() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    here.canonicalize().unwrap_or(here)
}

/// The shared data folder: `RAMPART_DATA`, else `../shared/data` beside the repository.
pub fn data_root() -> PathBuf {
    std::env::var_os("RAMPART_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("../shared/data"))
}

/// `SUB` inside the shared data folder, if it is there. Otherwise `test` is skipped (one
/// line on standard error) and `None` comes back, or, under `RAMPART_REQUIRE_DATA`, the test
/// fails.
pub fn shared(test: &str, sub: &str) -> Option<PathBuf> {
    let dir = data_root().join(sub);
    if dir.exists() {
        return Some(dir);
    }
    skip(REQUIRE_DATA, test, &format!("no shared data at {} (set RAMPART_DATA)", dir.display()));
    None
}

/// Says that `test` is skipped and why, in one line on standard error, or panics with the
/// same words when the environment variable `require` is set.
pub fn skip(require: &str, test: &str, why: &str) {
    let set = std::env::var_os(require).is_some_and(|v| !v.is_empty() && v != "0");
    skip_or_fail(set.then_some(require), test, why);
}

fn skip_or_fail(required_by: Option<&str>, test: &str, why: &str) {
    if let Some(var) = required_by {
        panic!("{test}: {why}, and {var} is set");
    }
    // Straight to the stream: libtest captures eprintln!, and a skip must show.
    let _ = writeln!(std::io::stderr(), "skipped {test}: {why}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_folder_is_none() {
        // Only meaningful when the requirement is off: under it the call panics by design.
        if std::env::var_os(REQUIRE_DATA).is_none() {
            assert!(shared("a_missing_folder_is_none", "no/such/folder/here").is_none());
        }
    }

    #[test]
    #[should_panic(expected = "a_required_skip_fails: nothing here, and RAMPART_X is set")]
    fn a_required_skip_fails() {
        skip_or_fail(Some("RAMPART_X"), "a_required_skip_fails", "nothing here");
    }
}
