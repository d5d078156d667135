//! `rampart report --records` / `--samples`: any bytes as JSON lines of flow records and of
//! RTT samples. The reader must return a line-numbered error or rows, never panic; whatever
//! it accepts must render to a page in which nothing from the input stands unescaped.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rampart_export::report::{Options, Report, RunInfo, read};

fuzz_target!(|data: &[u8]| {
    let mut report = Report::new();
    let flows = read::read_lines(data, read::parse_flow, &mut |f| report.add_flow(f));
    let samples = read::read_lines(data, read::parse_sample, &mut |s| report.add_sample(s));
    for r in [flows.err(), samples.err()].into_iter().flatten() {
        assert!(r.line >= 1);
    }
    let page = report
        .render(&RunInfo::default(), &Options { top: 5, max_points: 100, ..Options::default() });
    assert!(!page.contains("<script"));
});
