//! The GFNI kernel (x86-64 with GFNI, AVX-512F/BW and AVX-512 VBMI), after DPDK's design.
//!
//! Hash byte `k` (most significant first) takes from input byte `j` the bits
//! `key[8(j+k) .. 8(j+k)+15)`, so the contribution is an 8x8 bit matrix that depends on `j + k`
//! alone: one matrix per key byte. A 512-bit register holds eight such matrices, one per
//! 64-bit lane; `vpermb` puts input bytes `s, s-1, s-2, s-3` into bytes 0..3 of lane `s`,
//! `vgf2p8affineqb` multiplies each by its lane's matrix, and XORing all lanes leaves the four
//! hash bytes. A 12-byte IPv4 input takes two registers, a 36-byte IPv6 input five.
//!
//! The `unsafe` here is the three loads (each reads only memory a reference covers, see the
//! comments) and the calls into the `#[target_feature]` functions, made only after
//! [`supported`] checked the CPU at run time.

/// Whether this CPU runs the GFNI kernel.
pub(crate) fn supported() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("gfni")
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vbmi")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) use imp::{Matrices, hash, hash_v4, hash_v6};

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod imp {
    use std::arch::x86_64::*;

    use crate::key::Key;

    /// Registers needed for the longest input (48 bytes: lanes 0..=50).
    const REGS: usize = 7;

    #[derive(Clone, Copy)]
    #[repr(C, align(64))]
    struct Zmm([u8; 64]);

    /// The key's matrices and the constant byte-gather pattern, eight lanes per register.
    #[derive(Clone)]
    pub(crate) struct Matrices {
        mats: [Zmm; REGS],
        idx: [Zmm; REGS],
        masks: [u64; REGS],
    }

    impl Matrices {
        pub(crate) fn new(key: &Key) -> Self {
            let mut mats = [Zmm([0; 64]); REGS];
            let mut idx = [Zmm([0; 64]); REGS];
            let mut masks = [0u64; REGS];
            for s in 0..REGS * 8 {
                let (r, lane) = (s / 8, s % 8);
                // Row for output bit i (bit 0 least significant) sits in byte 7 - i; input bit
                // with value 0x80 >> c meets key bit 8s + c + (7 - i).
                for i in 0..8 {
                    let row = (0..8)
                        .fold(0u8, |row, c| row | ((key.bit(8 * s + c + 7 - i) as u8) << (7 - c)));
                    mats[r].0[lane * 8 + 7 - i] = row;
                }
                for k in 0..4 {
                    if let Some(j) = s.checked_sub(k) {
                        idx[r].0[lane * 8 + k] = j as u8;
                        masks[r] |= 1 << (lane * 8 + k);
                    }
                }
            }
            Self { mats, idx, masks }
        }
    }

    /// The hash of `x` (at most 48 bytes; the caller checked the key covers it).
    #[inline]
    pub(crate) fn hash(m: &Matrices, x: &[u8]) -> u32 {
        debug_assert!(x.len() <= 48);
        // SAFETY: a `Matrices` is only used by a `Toeplitz` whose kernel is `Gfni`, which is
        // chosen only when `supported()` found every feature this function enables.
        unsafe { slice_kernel(m, x) }
    }

    /// The IPv4 4-tuple hash; the input is built in registers, not stored and reloaded (a wide
    /// load of bytes just written by narrow stores would stall store forwarding).
    #[inline]
    pub(crate) fn hash_v4(m: &Matrices, src: [u8; 4], dst: [u8; 4], ports: [u8; 4]) -> u32 {
        // SAFETY: as in `hash`.
        unsafe { v4_kernel(m, src, dst, ports) }
    }

    /// The IPv6 4-tuple hash, input built in registers.
    #[inline]
    pub(crate) fn hash_v6(m: &Matrices, src: [u8; 16], dst: [u8; 16], ports: [u8; 4]) -> u32 {
        // SAFETY: as in `hash`.
        unsafe { v6_kernel(m, src, dst, ports) }
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,gfni,avx2")]
    fn v4_kernel(m: &Matrices, src: [u8; 4], dst: [u8; 4], ports: [u8; 4]) -> u32 {
        let x = _mm_set_epi32(
            0,
            i32::from_le_bytes(ports),
            i32::from_le_bytes(dst),
            i32::from_le_bytes(src),
        );
        regs::<2>(m, _mm512_zextsi128_si512(x))
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,gfni,avx2")]
    fn v6_kernel(m: &Matrices, src: [u8; 16], dst: [u8; 16], ports: [u8; 4]) -> u32 {
        let s = u128::from_le_bytes(src);
        let d = u128::from_le_bytes(dst);
        let lo = _mm256_set_epi64x((d >> 64) as i64, d as i64, (s >> 64) as i64, s as i64);
        let hi = _mm256_set_epi32(0, 0, 0, 0, 0, 0, 0, i32::from_le_bytes(ports));
        let x = _mm512_inserti64x4::<1>(_mm512_zextsi256_si512(lo), hi);
        regs::<5>(m, x)
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,gfni,avx2")]
    fn slice_kernel(m: &Matrices, x: &[u8]) -> u32 {
        let n = x.len().min(48);
        let load = (1u64 << n) - 1;
        // SAFETY: the mask selects the first n <= x.len() bytes, all inside `x`; masked-off
        // bytes are neither read nor able to fault.
        let data = unsafe { _mm512_maskz_loadu_epi8(load as __mmask64, x.as_ptr().cast()) };
        let mut acc = _mm512_setzero_si512();
        for r in 0..(n + 3).div_ceil(8) {
            acc = _mm512_xor_si512(acc, lanes(m, r, data));
        }
        fold(acc)
    }

    /// `R` registers of lanes, unrolled (inputs of up to `8R - 3` bytes).
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,gfni,avx2")]
    fn regs<const R: usize>(m: &Matrices, data: __m512i) -> u32 {
        let mut acc = _mm512_setzero_si512();
        for r in 0..R {
            acc = _mm512_xor_si512(acc, lanes(m, r, data));
        }
        fold(acc)
    }

    /// Lanes `8r..8r+8`: gather input bytes `s, s-1, s-2, s-3` into lane `s` and multiply them
    /// by the lane's matrix.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,gfni,avx2")]
    fn lanes(m: &Matrices, r: usize, data: __m512i) -> __m512i {
        // SAFETY: `Zmm` is 64 bytes, 64-byte aligned, borrowed for the whole load.
        let (mat, idx) = unsafe {
            (
                _mm512_load_si512((&raw const m.mats[r]).cast()),
                _mm512_load_si512((&raw const m.idx[r]).cast()),
            )
        };
        let bytes = _mm512_maskz_permutexvar_epi8(m.masks[r], idx, data);
        _mm512_gf2p8affine_epi64_epi8::<0>(bytes, mat)
    }

    /// XORs the eight lanes; bytes 0..3 are the hash, most significant first.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,gfni,avx2")]
    fn fold(acc: __m512i) -> u32 {
        let v = _mm256_xor_si256(_mm512_castsi512_si256(acc), _mm512_extracti64x4_epi64::<1>(acc));
        let v = _mm_xor_si128(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
        let q = _mm_cvtsi128_si64(v) ^ _mm_extract_epi64::<1>(v);
        (q as u32).swap_bytes()
    }
}
