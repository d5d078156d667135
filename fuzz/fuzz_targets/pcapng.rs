//! pcapng input (seeded with pcapng files): mapped and streamed reading agree, no panic.
#![no_main]

#[path = "capture_common.rs"]
mod capture_common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| capture_common::check(data));
