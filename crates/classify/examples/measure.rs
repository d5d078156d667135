//! Build time, size and lookup time of the compiled classifier on ClassBench sets:
//! `cargo run --release -p rampart-classify --example measure -- DIR SET...`
//! (DIR holds the unpacked sets and traces).
//!
//! - `MEASURE_ONLY=trace|uniform|near`: time only batches of the trace, of 100,000 uniform
//!   headers (`MEASURE_N` distinct ones, cycled) or of 100,000 near misses
//!   ([`near_miss_headers`]; `MEASURE_PASSES` passes), then each tree or table partition
//!   walked alone through the public `start`/`step` API.
//! - `MEASURE_NEAR_OUT=DIR`: only write each set's 100,000 near misses to `DIR/SET_near` in
//!   the trace format (for `compare/compare.sh`, which gives them to rte_acl too).
//! - `MEASURE_WALK=1`: per partition, the visits, node steps and leaf entries of the lookup's
//!   order on uniform headers, on the trace and on near misses.
//! - `RAMPART_CLASSIFY_KERNEL=scalar|avx2|avx512`: the bit-vector kernel.

use std::hint::black_box;
use std::time::Instant;

use rampart_classify::bench::{near_miss_headers, uniform_headers};
use rampart_classify::classbench::{parse_rules, parse_trace};
use rampart_classify::{Compiled, Header};

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().expect("DIR"));
    for set in args {
        let text = std::fs::read_to_string(dir.join(&set)).expect("rule file");
        let rules = parse_rules(&set, &text).expect("rules");
        if let Ok(out) = std::env::var("MEASURE_NEAR_OUT") {
            let text: String = near_miss_headers(&rules, 100_000)
                .iter()
                .map(|h| {
                    let [a, b, c, d, e] = h.0;
                    format!("{a}\t{b}\t{c}\t{d}\t{e}\t0\t0\n")
                })
                .collect();
            let path = std::path::Path::new(&out).join(format!("{set}_near"));
            std::fs::write(&path, text).expect("writing the near misses");
            continue;
        }
        let trace = std::fs::read_to_string(dir.join(format!("{set}_trace"))).expect("trace");
        let headers: Vec<Header> =
            parse_trace(&set, &trace).expect("trace").iter().map(|t| t.header).collect();
        let t = Instant::now();
        let c = Compiled::new(&rules);
        if let Ok(only) = std::env::var("MEASURE_ONLY") {
            let var = |name: &str, default: usize| {
                std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
            };
            let passes = var("MEASURE_PASSES", 30);
            let big: Vec<Header> = if only == "trace" {
                headers.clone()
            } else if only == "near" {
                near_miss_headers(&rules, 100_000)
            } else {
                uniform_headers(var("MEASURE_N", 100_000))
                    .into_iter()
                    .cycle()
                    .take(100_000)
                    .collect()
            };
            let mut out = vec![None; big.len()];
            let t = Instant::now();
            for _ in 0..passes {
                c.classify_batch(black_box(&big), &mut out);
                black_box(&out);
            }
            println!(
                "{set}: {only} only {:.1} ns",
                t.elapsed().as_nanos() as f64 / (passes * big.len()) as f64
            );
            for p in 0..c.partitions() {
                let t = Instant::now();
                let mut x = 0u32;
                for _ in 0..passes {
                    x ^= walk_one(&c, p, black_box(&big));
                }
                black_box(x);
                println!(
                    "  part {p}: {:.1} ns",
                    t.elapsed().as_nanos() as f64 / (passes * big.len()) as f64
                );
            }
            continue;
        }
        let build = t.elapsed();
        let st = c.stats();
        let mut out = vec![None; headers.len()];
        let batch = best_ns(30, headers.len(), || {
            c.classify_batch(black_box(&headers), &mut out);
            black_box(&out);
        });
        for (h, o) in headers.iter().zip(&out) {
            assert_eq!(*o, c.classify(h));
        }
        let inter = best_ns(30, headers.len(), || {
            c.classify_interleaved(black_box(&headers), &mut out);
            black_box(&out);
        });
        let big = uniform_headers(100_000);
        let mut out = vec![None; big.len()];
        let uni_big = best_ns(7, big.len(), || {
            c.classify_batch(black_box(&big), &mut out);
            black_box(&out);
        });
        if std::env::var_os("MEASURE_WALK").is_some() {
            walk(&c, &big[..20_000]);
            println!("  (trace:)");
            walk(&c, &headers[..headers.len().min(50_000)]);
            println!("  (near misses:)");
            walk(&c, &near_miss_headers(&rules, 20_000));
        }
        let random = uniform_headers(4096);
        let mut out = vec![None; random.len()];
        let uni = best_ns(20, random.len(), || {
            c.classify_batch(black_box(&random), &mut out);
            black_box(&out);
        });
        println!(
            "{set}: {} rules, build {:.1} ms, {} B/rule, {} nodes, {} leaf entries, depth {}, trace {:.1} ns (interleaved {:.1}), uniform {:.1} (4,096) and {:.1} (100,000), best of the passes",
            st.rules,
            build.as_secs_f64() * 1e3,
            st.bytes / st.rules.max(1),
            st.nodes,
            st.leaf_entries,
            st.depth,
            batch,
            inter,
            uni,
            uni_big
        );
    }
}

/// The least ns per header over `passes` runs of `pass` (each over `n` headers).
fn best_ns(passes: usize, n: usize, mut pass: impl FnMut()) -> f64 {
    (0..passes)
        .map(|_| {
            let t = Instant::now();
            pass();
            t.elapsed().as_nanos() as f64 / n as f64
        })
        .fold(f64::MAX, f64::min)
}

/// Where `h`'s walk of tree or table partition `p` starts; `None` for an empty slice of a
/// table and for bit-vector partitions.
fn start_of(c: &Compiled, p: usize, h: &Header) -> Option<u32> {
    use rampart_classify::Start;
    match c.start(p) {
        Start::Root(r) => Some(r),
        Start::Table { field, shift, slots } => {
            let v = h.0[field];
            let slot = slots[(v >> shift) as usize];
            (slot >> (32 + ((v >> (shift - 5)) & 31)) & 1 != 0).then_some(slot as u32)
        }
        Start::Vectors(_) => None,
    }
}

fn walk_one(c: &Compiled, p: usize, hs: &[Header]) -> u32 {
    use rampart_classify::Step;
    let mut x = 0;
    for h in hs {
        let Some(mut r) = start_of(c, p, h) else { continue };
        loop {
            match c.step(p, r) {
                Step::Test { field, cuts, kids } => {
                    r = kids[cuts.iter().filter(|&&x| h.0[field] >= x).count()];
                }
                Step::Leaf(list) => {
                    for &i in list {
                        if c.rule(i as usize).unwrap().matches(h) {
                            x ^= i;
                            break;
                        }
                    }
                    break;
                }
            }
        }
    }
    x
}

/// Per partition, what headers do when the lookup's order and early stop are followed:
/// visits, node steps and leaf entries scanned, on average.
fn walk(c: &Compiled, hs: &[Header]) {
    use rampart_classify::{Start, Step};
    let parts = c.partitions();
    let (mut visits, mut steps, mut entries) =
        (vec![0usize; parts], vec![0usize; parts], vec![0usize; parts]);
    for h in hs {
        let mut best = u32::MAX;
        for p in 0..parts {
            if c.members(p)[0] >= best {
                break;
            }
            visits[p] += 1;
            if let Start::Vectors(_) = c.start(p) {
                let rule = |i: &&u32| c.rule(**i as usize).unwrap().matches(h);
                if let Some(&i) = c.members(p).iter().find(rule) {
                    best = best.min(i);
                }
                continue;
            }
            let Some(mut r) = start_of(c, p, h) else { continue };
            loop {
                match c.step(p, r) {
                    Step::Test { field, cuts, kids } => {
                        steps[p] += 1;
                        r = kids[cuts.iter().filter(|&&x| h.0[field] >= x).count()];
                    }
                    Step::Leaf(list) => {
                        for &i in list {
                            if i >= best {
                                break;
                            }
                            entries[p] += 1;
                            if c.rule(i as usize).unwrap().matches(h) {
                                best = i;
                                break;
                            }
                        }
                        break;
                    }
                }
            }
        }
    }
    let n = hs.len() as f64;
    for p in 0..parts {
        println!(
            "  partition {p}: {} rules, {:.2} visits, {:.2} steps, {:.2} entries",
            c.members(p).len(),
            visits[p] as f64 / n,
            steps[p] as f64 / n,
            entries[p] as f64 / n,
        );
    }
}
