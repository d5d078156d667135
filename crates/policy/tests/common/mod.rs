//! Where the tests and benchmarks find the shared ClassBench sets.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// `RAMPART_DATA/classbench` or `../shared/data/classbench`; `None` (after saying so) when
/// absent.
pub(crate) fn data() -> Option<PathBuf> {
    rampart_testkit::shared("classbench", "classbench")
}

/// A file's text, unpacking `NAME.gz` when only that exists.
pub(crate) fn read(dir: &Path, name: &str) -> String {
    read_if_there(dir, name).unwrap_or_else(|| panic!("{name} (or {name}.gz) in {}", dir.display()))
}

/// [`read`], or `None` when the file is not there or cannot be unpacked.
pub(crate) fn read_if_there(dir: &Path, name: &str) -> Option<String> {
    let plain = dir.join(name);
    if plain.exists() {
        return std::fs::read_to_string(plain).ok();
    }
    let out = Command::new("gzip").arg("-dc").arg(dir.join(format!("{name}.gz"))).output().ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8(out.stdout).ok()
}
