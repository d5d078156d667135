//! Build time, size and lookup time of the compiled classifier on ClassBench sets:
//! `cargo run --release -p rampart-classify --example measure -- DIR SET...`
//! (DIR holds the unpacked sets and traces).

use std::hint::black_box;
use std::time::Instant;

use rampart_classify::classbench::{parse_rules, parse_trace};
use rampart_classify::{Compiled, Header};

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().expect("DIR"));
    for set in args {
        let text = std::fs::read_to_string(dir.join(&set)).expect("rule file");
        let rules = parse_rules(&set, &text).expect("rules");
        let trace = std::fs::read_to_string(dir.join(format!("{set}_trace"))).expect("trace");
        let headers: Vec<Header> =
            parse_trace(&set, &trace).expect("trace").iter().map(|t| t.header).collect();
        let t = Instant::now();
        let c = Compiled::new(&rules);
        let build = t.elapsed();
        let st = c.stats();
        let mut best = f64::MAX;
        for _ in 0..30 {
            let t = Instant::now();
            let mut x = 0usize;
            for h in &headers {
                x ^= c.classify(black_box(h)).unwrap_or(usize::MAX);
            }
            black_box(x);
            best = best.min(t.elapsed().as_nanos() as f64 / headers.len() as f64);
        }
        let mut batch = f64::MAX;
        let mut out = vec![None; headers.len()];
        for _ in 0..30 {
            let t = Instant::now();
            c.classify_batch(black_box(&headers), &mut out);
            black_box(&out);
            batch = batch.min(t.elapsed().as_nanos() as f64 / headers.len() as f64);
        }
        for (h, o) in headers.iter().zip(&out) {
            assert_eq!(*o, c.classify(h));
        }
        let mut inter = f64::MAX;
        for _ in 0..30 {
            let t = Instant::now();
            c.classify_interleaved(black_box(&headers), &mut out);
            black_box(&out);
            inter = inter.min(t.elapsed().as_nanos() as f64 / headers.len() as f64);
        }
        println!("{set}: interleaved {inter:.1}");
        let random = uniform(4096);
        let mut out = vec![None; random.len()];
        let mut uni = f64::MAX;
        for _ in 0..20 {
            let t = Instant::now();
            c.classify_batch(black_box(&random), &mut out);
            black_box(&out);
            uni = uni.min(t.elapsed().as_nanos() as f64 / random.len() as f64);
        }
        println!(
            "{set}: {} rules, build {:.1} ms, {} B/rule, {} nodes, {} leaf entries, depth {}, {:.1} ns/lookup, {:.1} batched (trace, best of 5), {:.1} uniform",
            st.rules,
            build.as_secs_f64() * 1e3,
            st.bytes / st.rules.max(1),
            st.nodes,
            st.leaf_entries,
            st.depth,
            best,
            batch,
            uni
        );
    }
}

/// Uniformly random 5-tuples (xorshift, fixed seed), protocols TCP, UDP and ICMP.
fn uniform(n: usize) -> Vec<Header> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    (0..n)
        .map(|_| {
            Header([
                next() as u32,
                next() as u32,
                next() as u32 & 0xffff,
                next() as u32 & 0xffff,
                [6, 17, 1][next() as usize % 3],
            ])
        })
        .collect()
}
