//! The NKPL reader and checker never panic on any text: every error names a line of it, and
//! a check either holds, fails with a counterexample, or gives up at the node limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rampart_policy::nkpl::{Event, Session};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if text.len() > 2_000 {
        return;
    }
    let mut s = Session::new();
    s.set_limit(50_000);
    s.set_imports(false);
    let lines = text.split('\n').count();
    let r = s.run_text(std::path::Path::new("fuzz.nkpl"), text, &mut |e| {
        if let Event::Check(c) = e {
            assert!(c.line >= 1 && c.line <= lines);
            if c.equal == Some(false) {
                assert!(c.counterexample.is_some(), "a difference comes with its packet");
            }
        }
    });
    if let Err(e) = r {
        assert!(e.line >= 1 && e.line <= lines, "{e}");
    }
});
