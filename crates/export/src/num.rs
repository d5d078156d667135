//! Number and address text, written by hand into reused buffers.
//!
//! [`fixed`] prints an `f64` with a fixed number of decimals exactly as C's `printf("%.*f")`
//! does (the exact binary value, rounded half to even), without going through `fmt`: the value
//! is scaled in 128-bit integer arithmetic, which is exact for every number an RTT tool prints.
//! Values outside that range fall back to Rust's formatter, which rounds the same way.

use std::io::Write;
use std::net::Ipv6Addr;

use rampart_wire::IpFamily;

/// Appends an integer.
#[inline]
pub fn int(l: &mut Vec<u8>, v: impl itoa::Integer) {
    l.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// The two-digit numbers `00` to `99`, one after another.
const PAIRS: [u8; 200] = {
    let mut t = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        t[2 * i] = b'0' + (i / 10) as u8;
        t[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

/// Writes the last `out.len()` decimal digits of `v` into `out`, zero-padded, two at a time.
#[inline(always)]
fn digits_into(out: &mut [u8], mut v: u64) {
    let mut i = out.len();
    while i >= 2 {
        let r = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        out[i] = PAIRS[r];
        out[i + 1] = PAIRS[r + 1];
    }
    if i == 1 {
        out[0] = b'0' + (v % 10) as u8;
    }
}

/// The number of decimal digits of `v`.
#[inline(always)]
fn digit_count(v: u64) -> usize {
    v.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// Appends `N` zero bytes (a copy of fixed length, which needs no call to `memcpy`) and
/// returns them, to be written in place and cut to length with `truncate`. Writing the text
/// in place rather than in a stack array appended afterwards spares the load of freshly
/// stored bytes that the processor cannot forward.
#[inline(always)]
fn room<const N: usize>(l: &mut Vec<u8>) -> (usize, &mut [u8]) {
    let at = l.len();
    l.extend_from_slice(&[0; N]);
    (at, &mut l[at..])
}

/// Appends an unsigned integer, as [`int`] does, written in place (the records' numbers are
/// many and short).
#[inline]
pub fn uint(l: &mut Vec<u8>, v: u64) {
    let n = digit_count(v);
    let (at, out) = room::<20>(l);
    digits_into(&mut out[..n], v);
    l.truncate(at + n);
}

/// Appends nanoseconds as seconds with six decimals (microseconds, truncated): the seconds'
/// digits, a point and six digits, written in place as [`uint`] writes a number.
#[inline]
pub fn secs_micros(l: &mut Vec<u8>, ns: u64) {
    let secs = ns / 1_000_000_000;
    let us = (ns % 1_000_000_000) / 1000;
    let n = digit_count(secs);
    let (at, out) = room::<32>(l);
    digits_into(&mut out[..n], secs);
    out[n] = b'.';
    digits_into(&mut out[n + 1..n + 7], us);
    l.truncate(at + n + 7);
}

/// Appends nanoseconds as seconds with `prec` decimals (at most 9, truncated), written in
/// place as [`secs_micros`] does; with 0 decimals, the seconds without a point.
#[inline]
pub fn secs_frac(l: &mut Vec<u8>, ns: u64, prec: usize) {
    let prec = prec.min(9);
    let secs = ns / 1_000_000_000;
    let frac = (ns % 1_000_000_000) / POW10[9 - prec];
    let n = digit_count(secs);
    let (at, out) = room::<32>(l);
    digits_into(&mut out[..n], secs);
    if prec == 0 {
        l.truncate(at + n);
        return;
    }
    out[n] = b'.';
    digits_into(&mut out[n + 1..n + 1 + prec], frac);
    l.truncate(at + n + 1 + prec);
}

/// Appends the first `len` bytes of `src` (at most `N`) with a copy of fixed length `N` cut
/// back to `len`: for short texts of varying length, which would otherwise each cost a call
/// to `memcpy`. The bytes of `src` past `len` are scratch.
#[inline(always)]
pub(crate) fn short<const N: usize>(l: &mut Vec<u8>, src: &[u8; N], len: usize) {
    let len = len.min(N);
    let at = l.len();
    l.extend_from_slice(src);
    l.truncate(at + len);
}

/// Appends `v` zero-padded to `width` digits.
#[inline]
pub fn padded(l: &mut Vec<u8>, v: u64, width: usize) {
    let mut buf = itoa::Buffer::new();
    let digits = buf.format(v);
    l.extend(std::iter::repeat_n(b'0', width.saturating_sub(digits.len())));
    l.extend_from_slice(digits.as_bytes());
}

const POW10: [u64; 10] =
    [1, 10, 100, 1000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000];

/// Appends `x` with `prec` decimals (at most 9), as `printf("%.{prec}f", x)` would.
pub fn fixed(l: &mut Vec<u8>, x: f64, prec: usize) {
    match scaled(x, prec) {
        Some(n) => {
            if x.is_sign_negative() {
                l.push(b'-');
            }
            let p = POW10[prec];
            int(l, n / u128::from(p));
            if prec > 0 {
                l.push(b'.');
                padded(l, (n % u128::from(p)) as u64, prec);
            }
        }
        None => {
            let _ = write!(l, "{x:.prec$}");
        }
    }
}

/// `|x| × 10^prec` rounded half to even, computed exactly; `None` when out of range.
fn scaled(x: f64, prec: usize) -> Option<u128> {
    if !x.is_finite() || prec > 9 {
        return None;
    }
    let bits = x.abs().to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1 << 52) - 1);
    // x = mant × 2^e exactly.
    let (mant, e) = if exp == 0 { (frac, -1074) } else { (frac | (1 << 52), exp - 1075) };
    let num = u128::from(mant) * u128::from(POW10[prec]);
    if e >= 0 {
        return if e <= 40 { Some(num << e) } else { None };
    }
    let s = (-e) as u32;
    if s >= 127 {
        // Below 2^-53 after scaling: rounds to zero.
        return Some(0);
    }
    let q = num >> s;
    let r = num & ((1u128 << s) - 1);
    let half = 1u128 << (s - 1);
    Some(if r > half || (r == half && q & 1 == 1) { q + 1 } else { q })
}

/// pping's `fmtTimeDiff`: seconds scaled to µs below 1 ms and to ms below 1 s, with two, one or
/// no decimals by size (the last with a leading space), cut to the 9 characters its buffer
/// holds.
pub fn time_diff(l: &mut Vec<u8>, mut dt: f64) {
    let start = l.len();
    let unit: &[u8] = if dt < 1e-3 {
        dt *= 1e6;
        b"us"
    } else if dt < 1.0 {
        dt *= 1e3;
        b"ms"
    } else {
        b"s"
    };
    if dt < 10.0 {
        fixed(l, dt, 2);
    } else if dt < 100.0 {
        fixed(l, dt, 1);
    } else {
        l.push(b' ');
        fixed(l, dt, 0);
    }
    l.extend_from_slice(unit);
    l.truncate(start + 9.min(l.len() - start));
}

/// Appends an IPv4 address in dotted decimal.
#[inline]
pub fn ipv4(l: &mut Vec<u8>, a: [u8; 4]) {
    // At most 15 bytes, written in place.
    let (at, buf) = room::<16>(l);
    let mut n = 0;
    for (i, b) in a.into_iter().enumerate() {
        if i > 0 {
            buf[n] = b'.';
            n += 1;
        }
        if b >= 100 {
            buf[n] = b'0' + b / 100;
            n += 1;
        }
        if b >= 10 {
            buf[n] = b'0' + b / 10 % 10;
            n += 1;
        }
        buf[n] = b'0' + b % 10;
        n += 1;
    }
    l.truncate(at + n);
}

/// Appends an IPv6 address as glibc's `inet_ntop` writes it: RFC 5952 compression, and the
/// last 32 bits dotted for IPv4-mapped (`::ffff:a.b.c.d`) and IPv4-compatible (`::a.b.c.d`)
/// addresses.
pub fn ipv6(l: &mut Vec<u8>, a: [u8; 16]) {
    let ip = Ipv6Addr::from(a);
    let w = ip.segments();
    let compat = w[..6] == [0; 6] && w[6] != 0;
    if compat {
        l.extend_from_slice(b"::");
        ipv4(l, [a[12], a[13], a[14], a[15]]);
    } else if w[..5] == [0; 5] && w[5] == 0xffff {
        l.extend_from_slice(b"::ffff:");
        ipv4(l, [a[12], a[13], a[14], a[15]]);
    } else {
        // RFC 5952: the first longest run of two or more zero groups becomes "::", hex digits
        // in lower case without leading zeros.
        let (mut best, mut run) = ((0, 0), (0, 0));
        for (i, g) in w.iter().enumerate() {
            if *g == 0 {
                run = if run.1 == 0 { (i, 1) } else { (run.0, run.1 + 1) };
                if run.1 > best.1 {
                    best = run;
                }
            } else {
                run = (0, 0);
            }
        }
        let skip = if best.1 >= 2 { best } else { (8, 0) };
        let mut i = 0;
        while i < 8 {
            if i == skip.0 {
                l.extend_from_slice(b"::");
                i += skip.1;
                continue;
            }
            if i > 0 && i != skip.0 + skip.1 {
                l.push(b':');
            }
            hex16(l, w[i]);
            i += 1;
        }
    }
}

/// A 16-bit group in lower-case hex without leading zeros.
#[inline]
fn hex16(l: &mut Vec<u8>, g: u16) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digits = (16 - g.leading_zeros()).div_ceil(4).max(1);
    for k in (0..digits).rev() {
        l.push(HEX[usize::from((g >> (4 * k)) as u8 & 0xf)]);
    }
}

/// Appends the address in a key slot: IPv4 in the first four bytes.
#[inline]
pub fn slot_addr(l: &mut Vec<u8>, family: IpFamily, a: &[u8; 16]) {
    if family == IpFamily::V4 {
        ipv4(l, [a[0], a[1], a[2], a[3]]);
    } else {
        ipv6(l, *a);
    }
}

/// The address in a key slot as a std address.
pub fn slot_ip(family: IpFamily, a: &[u8; 16]) -> std::net::IpAddr {
    family.addr(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn s(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut l = Vec::new();
        f(&mut l);
        String::from_utf8(l).unwrap()
    }

    #[test]
    fn ties_round_to_even_like_printf() {
        // 1/128 = 0.0078125 exactly: a tie at six decimals.
        assert_eq!(s(|l| fixed(l, 0.0078125, 6)), "0.007812");
        assert_eq!(s(|l| fixed(l, 0.0234375, 6)), "0.023438");
        assert_eq!(s(|l| fixed(l, 0.5, 0)), "0");
        assert_eq!(s(|l| fixed(l, 1.5, 0)), "2");
        assert_eq!(s(|l| fixed(l, 2.5, 0)), "2");
        assert_eq!(s(|l| fixed(l, -0.0, 6)), "-0.000000");
        assert_eq!(s(|l| fixed(l, -1e-9, 6)), "-0.000000");
        assert_eq!(s(|l| fixed(l, 1e30, 6)), format!("{:.6}", 1e30));
    }

    #[test]
    fn time_diff_matches_pping() {
        assert_eq!(s(|l| time_diff(l, 0.020480)), "20.5ms");
        assert_eq!(s(|l| time_diff(l, 0.000083)), "83.0us");
        assert_eq!(s(|l| time_diff(l, 0.000007)), "7.00us");
        assert_eq!(s(|l| time_diff(l, 0.2401)), " 240ms");
        assert_eq!(s(|l| time_diff(l, 1.5)), "1.50s");
        assert_eq!(s(|l| time_diff(l, 0.0099999)), "10.00ms");
        // Cut to 9 characters, as pping's 10-byte buffer does.
        assert_eq!(s(|l| time_diff(l, 123_456_789.0)), " 12345678");
    }

    #[test]
    fn ipv6_like_inet_ntop() {
        let v6 = |t: &str| s(|l| ipv6(l, t.parse::<Ipv6Addr>().unwrap().octets()));
        assert_eq!(v6("fd77::1"), "fd77::1");
        assert_eq!(v6("::1"), "::1");
        assert_eq!(v6("::"), "::");
        assert_eq!(v6("::ffff:10.1.2.3"), "::ffff:10.1.2.3");
        assert_eq!(v6("::10.1.2.3"), "::10.1.2.3");
        assert_eq!(v6("2001:db8:0:1:0:0:0:1"), "2001:db8:0:1::1");
        assert_eq!(v6("2001:0:0:1:0:0:0:1"), "2001:0:0:1::1");
        assert_eq!(v6("1:0:1:1:1:1:1:1"), "1:0:1:1:1:1:1:1");
        for a in [[0, 0, 0, 0], [10, 9, 100, 255], [1, 20, 199, 7]] {
            assert_eq!(s(|l| ipv4(l, a)), std::net::Ipv4Addr::from(a).to_string());
        }
    }

    /// The fixed-array forms write what `itoa` and the plain formatting write.
    #[test]
    fn uint_and_secs_micros_edges() {
        let mut edges = vec![0, 1, 9, u64::MAX, u64::MAX - 1];
        for p in 1..20u32 {
            let t = 10u64.pow(p);
            edges.extend([t - 1, t, t + 1]);
        }
        for v in edges {
            assert_eq!(s(|l| uint(l, v)), v.to_string());
            assert_eq!(s(|l| int(l, v)), v.to_string());
            assert_eq!(
                s(|l| secs_micros(l, v)),
                format!("{}.{:06}", v / 1_000_000_000, v % 1_000_000_000 / 1000)
            );
        }
        for ns in [999, 1000, 999_999_999, 1_000_000_000, 1_700_000_000_000_001_000] {
            assert_eq!(
                s(|l| secs_micros(l, ns)),
                format!("{}.{:06}", ns / 1_000_000_000, ns % 1_000_000_000 / 1000)
            );
        }
        // Every width, zero-padded, as `{:0w$}` cut to its last `w` digits.
        for v in [0, 7, 12_345, 99_999_999, 100_000_000, 1_234_567_890_123_456_789, u64::MAX] {
            for w in 1..=20 {
                let mut out = vec![b'x'; w];
                digits_into(&mut out, v);
                let full = format!("{v:020}");
                assert_eq!(out, &full.as_bytes()[20 - w..], "{v} {w}");
            }
        }
        for ns in [0, 999, 1000, 999_999_999, 1_000_000_000, 1_700_000_000_123_456_789, u64::MAX] {
            for prec in 0..=9usize {
                let frac = ns % 1_000_000_000 / 10u64.pow(9 - prec as u32);
                let want = if prec == 0 {
                    (ns / 1_000_000_000).to_string()
                } else {
                    format!("{}.{frac:0prec$}", ns / 1_000_000_000)
                };
                assert_eq!(s(|l| secs_frac(l, ns, prec)), want, "{ns} {prec}");
            }
        }
        let mut l = b"ab".to_vec();
        short(&mut l, b"xyz-----", 3);
        short(&mut l, b"12345678", 8);
        assert_eq!(l, b"abxyz12345678");
        // Appending keeps what is there.
        let mut l = b"x".to_vec();
        uint(&mut l, 42);
        secs_micros(&mut l, 5_000_123_999);
        assert_eq!(l, b"x425.000123");
    }

    proptest! {
        #[test]
        fn uint_agrees_with_rust_formatting(v in any::<u64>()) {
            prop_assert_eq!(s(|l| uint(l, v)), v.to_string());
            prop_assert_eq!(
                s(|l| secs_micros(l, v)),
                format!("{}.{:06}", v / 1_000_000_000, v % 1_000_000_000 / 1000)
            );
            prop_assert_eq!(s(|l| secs_frac(l, v, 6)), s(|l| secs_micros(l, v)));
        }

        #[test]
        fn secs_frac_agrees_with_rust_formatting(v in any::<u64>(), prec in 1usize..=9) {
            let frac = v % 1_000_000_000 / 10u64.pow(9 - prec as u32);
            prop_assert_eq!(
                s(|l| secs_frac(l, v, prec)),
                format!("{}.{frac:0prec$}", v / 1_000_000_000)
            );
        }

        /// The hand-written RFC 5952 form equals the standard library's (outside the two
        /// IPv4-embedding forms, where glibc's dotted tail is kept on purpose).
        #[test]
        fn ipv6_agrees_with_rust_formatting(groups in proptest::collection::vec(
            prop_oneof![3 => Just(0u16), 1 => Just(1u16), 2 => any::<u16>()], 8)) {
            let w: [u16; 8] = groups.try_into().unwrap();
            let ip = Ipv6Addr::from(w);
            let compat = w[..6] == [0; 6] && w[6] != 0;
            let mapped = w[..5] == [0; 5] && w[5] == 0xffff;
            prop_assume!(!compat && !mapped);
            prop_assert_eq!(s(|l| ipv6(l, ip.octets())), ip.to_string());
        }

        #[test]
        fn fixed_agrees_with_rust_formatting(bits in any::<u64>(), prec in 0usize..=9) {
            let x = f64::from_bits(bits);
            prop_assume!(x.is_finite());
            prop_assert_eq!(s(|l| fixed(l, x, prec)), format!("{x:.prec$}"));
        }

        #[test]
        fn fixed_agrees_on_rtt_sized_values(us in 0u64..100_000_000, frac in 0u32..1000, prec in 0usize..=9) {
            let x = us as f64 * 1e-6 + f64::from(frac) * 1e-9;
            prop_assert_eq!(s(|l| fixed(l, x, prec)), format!("{x:.prec$}"));
            prop_assert_eq!(s(|l| fixed(l, -x, prec)), format!("{:.prec$}", -x));
        }
    }
}
