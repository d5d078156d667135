//! Key parsing never panics, and every kernel agrees with the definition on whatever input
//! and key the fuzzer finds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rampart_rss::{Key, Toeplitz, kernels, reference};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(k) = Key::parse(text) {
            assert_eq!(Key::parse(&k.to_string()), Ok(k));
        }
    }
    let Some((&len, rest)) = data.split_first() else { return };
    let klen = if len & 1 == 0 { 40 } else { 52 };
    if rest.len() < klen {
        return;
    }
    let key = Key::new(&rest[..klen]).expect("40 or 52 bytes");
    let input = &rest[klen..];
    let input = &input[..input.len().min(key.max_input())];
    let want = reference::spec(&key, input);
    for k in kernels() {
        assert_eq!(Toeplitz::with_kernel(key, k).unwrap().hash(input), want);
    }
});
