//! KATch's NKPL inputs run end to end in process (read, parse, build, check), one file per
//! benchmark: the fig10 extremes (Layer42 and Deltacom reachability and slicing), the large
//! fat tree (ft6 slicing), the largest fig11 members, and the Stanford backbone queries.
//! `cargo bench -p rampart-policy --bench nkpl` (needs `../shared/data/netkat/katch` or
//! `RAMPART_DATA`; prints one line and measures nothing without it). KATch's own times on
//! the same files are in `../shared/notes/netkat.md` §6 and BENCHMARKS.md.

use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use rampart_policy::nkpl::{Event, Session};

fn run(file: &Path) -> usize {
    let mut s = Session::new();
    s.set_nesting(5_000);
    let mut held = 0;
    s.run_file(file, &mut |e| {
        if let Event::Check(c) = e {
            assert!(c.holds(), "{}:{}", c.file.display(), c.line);
            held += 1;
        }
    })
    .expect("the file runs");
    held
}

fn bench(c: &mut Criterion) {
    let dir = std::env::var_os("RAMPART_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data").into())
        .join("netkat/katch");
    if !dir.is_dir() {
        println!("skipped: no KATch inputs at {}", dir.display());
        return;
    }
    let mut g = c.benchmark_group("nkpl");
    g.sample_size(10);
    for file in [
        "fig10/Layer42_reachability.nkpl",
        "fig10/Layer42_slicing.nkpl",
        "fig10/Deltacom_reachability.nkpl",
        "fig10/Deltacom_unreachability.nkpl",
        "fig10/Deltacom_slicing.nkpl",
        "misc/benchmarks/large/ft6_reachability.nkpl",
        "misc/benchmarks/large/ft6_slicing.nkpl",
        "fig11/flip/flip11.nkpl",
        "fig11/inc/inc10.nkpl",
        "fig11/nondet/nondet15-swptdst.nkpl",
        "stanford/query.nkpl",
    ] {
        let path = dir.join(file);
        let name = Path::new(file).file_stem().unwrap().to_string_lossy().into_owned();
        // The Stanford routers nest deeply: run on a roomy stack, as `rampart verify nkpl`.
        g.bench_function(&name, |b| {
            b.iter(|| {
                let p = path.clone();
                std::thread::Builder::new()
                    .stack_size(256 << 20)
                    .spawn(move || run(&p))
                    .unwrap()
                    .join()
                    .unwrap()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
