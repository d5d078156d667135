//! DPI detectors on a flow to port 443 over IP protocol 17 (see `dpi/common.rs`).
#![no_main]

#[path = "dpi/common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    common::run(data, 17, [40000, 443]);
    // The same bytes with the ports the other way round, and on unrelated ports.
    common::run(data, 17, [443, 40000]);
    common::run(data, 17, [40000, 40001]);
});
