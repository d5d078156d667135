//! Every kernel against the Microsoft vectors and the bit-serial definition.

use std::net::IpAddr;

use proptest::prelude::*;
use rampart_rss::{Kernel, Key, Toeplitz, Tuple, kernels, reference};

fn vectors() -> Vec<(Tuple, u32)> {
    let text = include_str!("rss_vectors.csv");
    let rows: Vec<_> = text
        .lines()
        .skip(1)
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            let src: IpAddr = f[1].parse().unwrap();
            let dst: IpAddr = f[2].parse().unwrap();
            let ports = (f[5] == "1").then(|| (f[3].parse().unwrap(), f[4].parse().unwrap()));
            let want = u32::from_str_radix(f[6].trim_start_matches("0x"), 16).unwrap();
            (Tuple::new(src, dst, ports).unwrap(), want)
        })
        .collect();
    assert_eq!(rows.len(), 16);
    rows
}

#[test]
fn microsoft_vectors_every_kernel() {
    let key = Key::ms();
    for (t, want) in vectors() {
        let (x, n) = t.input();
        assert_eq!(reference::spec(&key, &x[..n]), want, "spec {t:?}");
        assert_eq!(reference::incremental(&key, &x[..n]), want, "incremental {t:?}");
        for k in kernels() {
            let h = Toeplitz::with_kernel(key, k).unwrap();
            assert_eq!(h.kernel(), k);
            assert_eq!(h.hash_tuple(&t), want, "{k:?} {t:?}");
            assert_eq!(h.hash(&x[..n]), want, "{k:?} slice {t:?}");
            let fixed = match (t.src, t.dst, t.ports) {
                (IpAddr::V4(s), IpAddr::V4(d), Some((sp, dp))) => {
                    h.hash_v4(s.octets(), d.octets(), sp, dp)
                }
                (IpAddr::V4(s), IpAddr::V4(d), None) => h.hash_v4_l3(s.octets(), d.octets()),
                (IpAddr::V6(s), IpAddr::V6(d), Some((sp, dp))) => {
                    h.hash_v6(s.octets(), d.octets(), sp, dp)
                }
                (IpAddr::V6(s), IpAddr::V6(d), None) => h.hash_v6_l3(s.octets(), d.octets()),
                _ => unreachable!(),
            };
            assert_eq!(fixed, want, "{k:?} fixed layout {t:?}");
        }
    }
}

#[test]
fn shared_vectors_match_the_copy() {
    let Some(path) =
        rampart_testkit::shared("shared_vectors_match_the_copy", "rss/rss_vectors.csv")
    else {
        return;
    };
    let shared = std::fs::read_to_string(path).unwrap();
    assert_eq!(shared, include_str!("rss_vectors.csv"));
}

#[test]
fn gfni_is_used_where_the_cpu_has_it() {
    let h = Toeplitz::new(Key::ms());
    assert_eq!(h.kernel(), *kernels().last().unwrap());
    assert!(Toeplitz::with_kernel(Key::ms(), Kernel::Table).is_some());
}

#[test]
fn symmetric_key_properties() {
    let h = Toeplitz::new(Key::symmetric(40).unwrap());
    let (a, b) = ([66, 9, 149, 187], [161, 142, 100, 80]);
    let x = h.hash_v4(a, b, 2794, 1766);
    assert_eq!(x, h.hash_v4(b, a, 1766, 2794));
    assert_eq!(x >> 16, x & 0xffff);
    let a6: [u8; 16] = std::array::from_fn(|i| i as u8 * 7 + 1);
    let b6: [u8; 16] = std::array::from_fn(|i| 200 - i as u8 * 3);
    let y = h.hash_v6(a6, b6, 40000, 443);
    assert_eq!(y, h.hash_v6(b6, a6, 443, 40000));
    assert_eq!(y >> 16, y & 0xffff);
}

fn key_strategy() -> impl Strategy<Value = Key> {
    prop_oneof![
        Just(Key::ms()),
        Just(Key::symmetric(40).unwrap()),
        Just(Key::symmetric(52).unwrap()),
        prop::collection::vec(any::<u8>(), 40).prop_map(|b| Key::new(&b).unwrap()),
        prop::collection::vec(any::<u8>(), 52).prop_map(|b| Key::new(&b).unwrap()),
    ]
}

fn key_and_input() -> impl Strategy<Value = (Key, Vec<u8>)> {
    key_strategy()
        .prop_flat_map(|k| (Just(k), prop::collection::vec(any::<u8>(), 0..=k.max_input())))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn kernels_equal_the_definition((key, x) in key_and_input()) {
        let want = reference::spec(&key, &x);
        prop_assert_eq!(reference::incremental(&key, &x), want);
        for k in kernels() {
            let h = Toeplitz::with_kernel(key, k).unwrap();
            prop_assert_eq!(h.hash(&x), want, "{:?}", k);
        }
    }

    #[test]
    fn linear_over_gf2((key, a) in key_and_input(), seed in any::<u64>()) {
        let b: Vec<u8> = a.iter().enumerate().map(|(i, _)| (seed >> (i % 8 * 8)) as u8 ^ i as u8).collect();
        let ab: Vec<u8> = a.iter().zip(&b).map(|(x, y)| x ^ y).collect();
        for k in kernels() {
            let h = Toeplitz::with_kernel(key, k).unwrap();
            prop_assert_eq!(h.hash(&ab), h.hash(&a) ^ h.hash(&b));
        }
    }

    #[test]
    fn symmetric_key_swaps_and_folds(
        a in any::<[u8; 16]>(), b in any::<[u8; 16]>(), p in any::<u16>(), q in any::<u16>(),
        len in prop_oneof![Just(40usize), Just(52)],
    ) {
        for k in kernels() {
            let h = Toeplitz::with_kernel(Key::symmetric(len).unwrap(), k).unwrap();
            let v4 = |x: [u8; 16]| [x[0], x[1], x[2], x[3]];
            let x = h.hash_v4(v4(a), v4(b), p, q);
            prop_assert_eq!(x, h.hash_v4(v4(b), v4(a), q, p));
            prop_assert_eq!(x >> 16, x & 0xffff);
            let y = h.hash_v6(a, b, p, q);
            prop_assert_eq!(y, h.hash_v6(b, a, q, p));
            prop_assert_eq!(y >> 16, y & 0xffff);
            // 16-bit period: the hash depends only on the XOR of all 16-bit words.
            let fold = |x: &[u8]| x.chunks(2).fold(0u16, |f, c| f ^ u16::from_be_bytes([c[0], c[1]]));
            let input = rampart_rss::v6_input(a, b, p, q);
            let mut folded = [0u8; 36];
            folded[..2].copy_from_slice(&fold(&input).to_be_bytes());
            prop_assert_eq!(y, h.hash(&folded));
        }
    }
}
