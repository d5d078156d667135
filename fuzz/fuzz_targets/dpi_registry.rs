//! Every detector of the registry (about 165 protocols): the first byte picks TCP or UDP,
//! the next four the initiator's and the responder's ports (so detectors bound to a port are
//! reached), the rest is a run of packets as in `dpi/common.rs`.
#![no_main]

#[path = "dpi/common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 5 {
        return;
    }
    let l4 = if data[0] & 1 == 0 { 6 } else { 17 };
    let ports = [u16::from_be_bytes([data[1], data[2]]), u16::from_be_bytes([data[3], data[4]])];
    common::run(&data[5..], l4, ports);
});
