//! The carry-less-multiply kernel (x86-64 with PCLMULQDQ and SSSE3), for CPUs without GFNI.
//!
//! Toeplitz is a correlation of the input bits with the key bits. With each input byte's bits
//! reversed, 64 input bits become a polynomial `A` whose coefficient `j` is input bit `j`; the
//! 96 key bits a 64-bit chunk needs, read as one big-endian number, are a polynomial `B` whose
//! coefficient `95 - m` is key bit `m`. Coefficient `95 - t` of `A * B` is then hash bit `t`, so
//! bits 64..96 of the product are the chunk's share of the hash, most significant bit first.
//! Two `pclmulqdq` per 8 input bytes compute them (the 96-bit `B` split 64 + 32); `pshufb` with
//! a nibble table reverses the bits of 16 input bytes at a time.
//!
//! The `unsafe` here is the buffer load in the slice kernel and the calls into the
//! `#[target_feature]` functions, made only after [`supported`] checked the CPU at run time.

/// Whether this CPU runs the carry-less-multiply kernel.
pub(crate) fn supported() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("pclmulqdq")
            && std::arch::is_x86_feature_detected!("ssse3")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) use imp::{Windows, hash, hash_v6};

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod imp {
    use std::arch::x86_64::*;

    use crate::key::Key;

    /// Chunks of 8 input bytes for the longest input (48 bytes).
    const CHUNKS: usize = 6;

    /// Per chunk: the low 64 and high 32 bits of its 96-bit key window.
    #[derive(Clone)]
    pub(crate) struct Windows {
        lo: [i64; CHUNKS],
        hi: [i64; CHUNKS],
    }

    impl Windows {
        pub(crate) fn new(key: &Key) -> Self {
            let byte = |i: usize| key.as_bytes().get(i).copied().unwrap_or(0);
            let mut lo = [0; CHUNKS];
            let mut hi = [0; CHUNKS];
            for c in 0..CHUNKS {
                let w: [u8; 12] = std::array::from_fn(|i| byte(8 * c + i));
                hi[c] = i64::from(u32::from_be_bytes([w[0], w[1], w[2], w[3]]));
                lo[c] = i64::from_be_bytes([w[4], w[5], w[6], w[7], w[8], w[9], w[10], w[11]]);
            }
            Self { lo, hi }
        }
    }

    /// The hash of `x` (at most 48 bytes; the caller checked the key covers it).
    #[inline]
    pub(crate) fn hash(w: &Windows, x: &[u8]) -> u32 {
        // SAFETY: a `Windows` is only used by a `Toeplitz` whose kernel is `Clmul`, which is
        // chosen only when `supported()` found every feature these functions enable.
        unsafe { slice_kernel(w, x) }
    }

    /// The IPv6 4-tuple hash, input built in registers.
    #[inline]
    pub(crate) fn hash_v6(w: &Windows, src: [u8; 16], dst: [u8; 16], ports: [u8; 4]) -> u32 {
        // SAFETY: as in `hash`.
        unsafe { v6_kernel(w, src, dst, ports) }
    }

    #[target_feature(enable = "pclmulqdq,ssse3,sse4.1")]
    fn v6_kernel(w: &Windows, src: [u8; 16], dst: [u8; 16], ports: [u8; 4]) -> u32 {
        let s = u128::from_le_bytes(src);
        let d = u128::from_le_bytes(dst);
        let a = _mm_set_epi64x((s >> 64) as i64, s as i64);
        let b = _mm_set_epi64x((d >> 64) as i64, d as i64);
        let c = _mm_set_epi32(0, 0, 0, i32::from_le_bytes(ports));
        let acc = _mm_xor_si128(chunks(w, 0, a), chunks(w, 2, b));
        fold(_mm_xor_si128(acc, chunks(w, 4, c)))
    }

    #[target_feature(enable = "pclmulqdq,ssse3,sse4.1")]
    fn slice_kernel(w: &Windows, x: &[u8]) -> u32 {
        let mut buf = [0u8; 48];
        let n = x.len().min(48);
        buf[..n].copy_from_slice(&x[..n]);
        let mut acc = _mm_setzero_si128();
        for v in 0..n.div_ceil(16) {
            // SAFETY: `buf` has 48 bytes and v < 3, so the 16 bytes at 16v are inside it.
            let bytes = unsafe { _mm_loadu_si128(buf.as_ptr().add(16 * v).cast()) };
            acc = _mm_xor_si128(acc, chunks(w, 2 * v, bytes));
        }
        fold(acc)
    }

    /// The shares of the two 8-byte chunks `c` and `c + 1` held in `x` (in bits 64..96 of the
    /// two products, XORed).
    #[inline]
    #[target_feature(enable = "pclmulqdq,ssse3,sse4.1")]
    fn chunks(w: &Windows, c: usize, x: __m128i) -> __m128i {
        let a = reverse_bits_in_bytes(x);
        let k0 = _mm_set_epi64x(w.hi[c], w.lo[c]);
        let k1 = _mm_set_epi64x(w.hi[c + 1], w.lo[c + 1]);
        // A0 * B0_lo (bits 64..96 in the high half), A0 * B0_hi (bits 0..32, moved up below).
        let p = _mm_clmulepi64_si128::<0x00>(a, k0);
        let q = _mm_clmulepi64_si128::<0x10>(a, k0);
        let r = _mm_clmulepi64_si128::<0x01>(a, k1);
        let s = _mm_clmulepi64_si128::<0x11>(a, k1);
        // Bring the low products' bits 0..32 up to bits 64..96 to line up with the others.
        let low = _mm_slli_si128::<8>(_mm_xor_si128(q, s));
        _mm_xor_si128(_mm_xor_si128(p, r), low)
    }

    /// Bits 64..96 of the accumulated products: the hash.
    #[inline]
    #[target_feature(enable = "pclmulqdq,ssse3,sse4.1")]
    fn fold(acc: __m128i) -> u32 {
        _mm_extract_epi32::<2>(acc) as u32
    }

    /// Reverses the bit order within each byte (two nibble lookups with `pshufb`).
    #[inline]
    #[target_feature(enable = "pclmulqdq,ssse3,sse4.1")]
    fn reverse_bits_in_bytes(x: __m128i) -> __m128i {
        let table = _mm_setr_epi8(
            0b0000, 0b1000, 0b0100, 0b1100, 0b0010, 0b1010, 0b0110, 0b1110, 0b0001, 0b1001, 0b0101,
            0b1101, 0b0011, 0b1011, 0b0111, 0b1111,
        );
        let mask = _mm_set1_epi8(0x0f);
        let lo = _mm_and_si128(x, mask);
        let hi = _mm_and_si128(_mm_srli_epi16::<4>(x), mask);
        _mm_or_si128(_mm_slli_epi16::<4>(_mm_shuffle_epi8(table, lo)), _mm_shuffle_epi8(table, hi))
    }
}
