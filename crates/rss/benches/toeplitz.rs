//! Toeplitz kernels against the incremental bit-serial loop FreeBSD and F-Stack run, in the
//! same run; and a port pick against one hash. `cargo bench -p rampart-rss --bench toeplitz`.

use std::hint::black_box;
use std::net::{IpAddr, SocketAddr};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rampart_rss::{Key, PortPicker, Reta, Toeplitz, kernels, reference, v4_input, v6_input};

const N: usize = 4096;

fn tuples() -> Vec<([u8; 16], [u8; 16], u16, u16)> {
    let mut s = 0x1234_5678_9abc_def0u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    (0..N)
        .map(|_| {
            let a: [u8; 16] = std::array::from_fn(|_| next() as u8);
            let b: [u8; 16] = std::array::from_fn(|_| next() as u8);
            (a, b, next() as u16, next() as u16)
        })
        .collect()
}

fn v4(a: [u8; 16]) -> [u8; 4] {
    [a[0], a[1], a[2], a[3]]
}

fn bench(c: &mut Criterion) {
    let key = Key::ms();
    let t = tuples();
    let mut g = c.benchmark_group("toeplitz");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("ipv4/incremental-bit-serial", |b| {
        b.iter(|| {
            t.iter().fold(0u32, |acc, &(s, d, p, q)| {
                acc ^ reference::incremental(&key, black_box(&v4_input(v4(s), v4(d), p, q)))
            })
        })
    });
    g.bench_function("ipv6/incremental-bit-serial", |b| {
        b.iter(|| {
            t.iter().fold(0u32, |acc, &(s, d, p, q)| {
                acc ^ reference::incremental(&key, black_box(&v6_input(s, d, p, q)))
            })
        })
    });
    for k in kernels() {
        let h = Toeplitz::with_kernel(key, k).unwrap();
        g.bench_function(format!("ipv4/{}", k.name()), |b| {
            b.iter(|| {
                t.iter()
                    .fold(0u32, |acc, &(s, d, p, q)| acc ^ h.hash_v4(black_box(v4(s)), v4(d), p, q))
            })
        });
        g.bench_function(format!("ipv6/{}", k.name()), |b| {
            b.iter(|| {
                t.iter().fold(0u32, |acc, &(s, d, p, q)| acc ^ h.hash_v6(black_box(s), d, p, q))
            })
        });
    }
    for (size, queues) in [(128usize, 4usize), (512, 6)] {
        let reta = Reta::round_robin(size, queues).unwrap();
        let picker = PortPicker::new(Toeplitz::new(key), reta, 32768..=60999);
        let ends: Vec<(usize, SocketAddr, IpAddr, u64)> = t
            .iter()
            .enumerate()
            .map(|(i, &(s, d, p, q))| {
                let r = SocketAddr::from((v4(s), p));
                (i % queues, r, IpAddr::from(v4(d)), u64::from(q) * 0x9e37_79b9_7f4a_7c15)
            })
            .collect();
        g.bench_function(format!("ipv4/pick-port-reta{size}-q{queues}"), |b| {
            b.iter(|| {
                ends.iter().fold(0u32, |acc, &(q, r, l, rand)| {
                    let p = picker.pick(q, black_box(r), l, rand);
                    acc ^ u32::from(p.unwrap_or(0))
                })
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
