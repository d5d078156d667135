//! The definitions, kept slow on purpose: the test oracle and the benchmark baseline.

use crate::key::Key;

/// The Toeplitz hash exactly as the Microsoft specification states it: for every set input
/// bit, most significant bit of byte 0 first, XOR in the 32 key bits that start at that bit's
/// position. The 32-bit window is rebuilt bit by bit for every input bit; nothing is cached.
///
/// # Panics
/// If `input` is longer than the key covers ([`Key::max_input`]).
pub fn spec(key: &Key, input: &[u8]) -> u32 {
    assert!(input.len() <= key.max_input(), "input longer than the key covers");
    let mut hash = 0;
    for i in 0..input.len() * 8 {
        if (input[i / 8] >> (7 - i % 8)) & 1 == 1 {
            hash ^= key.window(i);
        }
    }
    hash
}

/// The incremental bit-serial loop that FreeBSD's `toeplitz_hash` and F-Stack's `ff_rss_check`
/// run: keep the current 32-bit key window, XOR it in for each set input bit, and shift the
/// next key bit into it after every input bit. The benchmark baseline.
pub fn incremental(key: &Key, input: &[u8]) -> u32 {
    let k = key.as_bytes();
    let mut window = u32::from_be_bytes([k[0], k[1], k[2], k[3]]);
    let mut hash = 0;
    for (i, &byte) in input.iter().enumerate() {
        let next = k.get(i + 4).copied().unwrap_or(0);
        for b in 0..8 {
            if byte & (0x80 >> b) != 0 {
                hash ^= window;
            }
            window = (window << 1) | u32::from(next & (0x80 >> b) != 0);
        }
    }
    hash
}
