//! Port-for-queue against the bit-serial definition.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use rampart_rss::{Key, PortPicker, Reta, Toeplitz, reference, v4_input, v6_input};

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        std::array::from_fn(|_| self.next() as u8)
    }
}

/// The queue of a return tuple by the definition itself.
fn oracle_queue(key: &Key, reta: &Reta, remote: SocketAddr, local: IpAddr, p: u16) -> usize {
    let h = match (remote.ip(), local) {
        (IpAddr::V4(r), IpAddr::V4(l)) => {
            reference::incremental(key, &v4_input(r.octets(), l.octets(), remote.port(), p))
        }
        (IpAddr::V6(r), IpAddr::V6(l)) => {
            reference::incremental(key, &v6_input(r.octets(), l.octets(), remote.port(), p))
        }
        _ => unreachable!(),
    };
    reta.queue(h)
}

fn keys(rng: &mut Rng) -> Vec<Key> {
    vec![Key::ms(), Key::symmetric(40).unwrap(), Key::new(&rng.bytes::<52>()).unwrap()]
}

fn endpoints(rng: &mut Rng, v6: bool) -> (SocketAddr, IpAddr) {
    let port = rng.next() as u16;
    if v6 {
        let r = Ipv6Addr::from(rng.bytes::<16>());
        (SocketAddr::new(r.into(), port), Ipv6Addr::from(rng.bytes::<16>()).into())
    } else {
        let r = Ipv4Addr::from(rng.bytes::<4>());
        (SocketAddr::new(r.into(), port), Ipv4Addr::from(rng.bytes::<4>()).into())
    }
}

#[test]
fn picks_are_exact_on_many_random_tuples() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut checked = 0;
    for key in keys(&mut rng) {
        for (size, queues, range) in [
            (128, 4, 1..=65535),
            (128, 6, 32768..=60999),
            (512, 6, 1..=65535),
            (512, 16, 49152..=65535),
        ] {
            let picker = PortPicker::new(
                Toeplitz::new(key),
                Reta::round_robin(size, queues).unwrap(),
                range.clone(),
            );
            let reta = picker.reta().clone();
            for i in 0..9000 {
                let (remote, local) = endpoints(&mut rng, i % 2 == 1);
                let q = rng.next() as usize % queues;
                let p = picker.pick(q, remote, local, rng.next());
                let p = p.unwrap_or_else(|| panic!("no port for {remote} {local} queue {q}"));
                assert!(range.contains(&p));
                assert_eq!(
                    oracle_queue(&key, &reta, remote, local, p),
                    q,
                    "{key} {remote} {local} {p}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 100_000, "{checked}");
}

#[test]
fn listings_equal_brute_force() {
    let mut rng = Rng(42);
    for key in keys(&mut rng) {
        for (size, queues) in [(128, 6), (512, 3)] {
            let reta = Reta::round_robin(size, queues).unwrap();
            let picker = PortPicker::new(Toeplitz::new(key), reta.clone(), 1024..=65535);
            for v6 in [false, true] {
                let (remote, local) = endpoints(&mut rng, v6);
                let q = rng.next() as usize % queues;
                let got = picker.ports(q, remote, local);
                let want: Vec<u16> = (1024..=65535)
                    .filter(|&p| oracle_queue(&key, &reta, remote, local, p) == q)
                    .collect();
                assert_eq!(got, want, "{key} {remote} {local} queue {q}");
            }
        }
    }
}

#[test]
fn full_rank_keys_fill_every_bucket() {
    for key in [Key::ms(), Key::symmetric(40).unwrap()] {
        for size in [128, 512] {
            let reta = Reta::round_robin(size, 6).unwrap();
            let picker = PortPicker::new(Toeplitz::new(key), reta, 0..=65535);
            for v6 in [false, true] {
                let index = picker.port_index(v6);
                assert_eq!(1usize << index.rank(), size);
                assert!(!index.is_deficient());
                assert!((0..size as u32).all(|b| index.bucket(b).len() == 65536 / size));
                assert!(picker.starved_queues(v6).is_empty());
            }
        }
    }
}

#[test]
fn a_key_blind_to_the_port_starves_queues() {
    // Zero key bits where the local port sits (bits 80..95 plus the 31 after, bytes 10..15)
    // leave L(p) = 0: every port lands on one slot, so all other queues starve.
    let mut bytes = rampart_rss::MS_KEY;
    bytes[10..16].fill(0);
    let reta = Reta::round_robin(128, 4).unwrap();
    let picker = PortPicker::new(Toeplitz::new(Key::new(&bytes).unwrap()), reta, 1..=65535);
    let index = picker.port_index(false);
    assert_eq!(index.rank(), 0);
    assert_eq!(picker.starved_queues(false), vec![0, 1, 2, 3]);
    let remote = SocketAddr::from(([10, 0, 0, 1], 80));
    let local = IpAddr::from([192, 168, 1, 1]);
    let found: usize = (0..4).map(|q| picker.ports(q, remote, local).len()).sum();
    assert_eq!(found, 65535);
    let empty = (0..4).filter(|&q| picker.ports(q, remote, local).is_empty()).count();
    assert_eq!(empty, 3);
    assert!((0..4).filter_map(|q| picker.pick(q, remote, local, 7)).count() == 1);
}
