use std::sync::atomic::{AtomicBool, Ordering};

use super::*;
use rampart_capture::Capture;
use rampart_flow::{EndReason, Flow};

fn sample() -> Vec<u8> {
    std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../samples/mixed.pcap")).unwrap()
}

fn run(bytes: Vec<u8>, cfg: FlowsConfig) -> (Vec<FlowRecord>, Outcome) {
    let mut cap = Capture::from_bytes("sample", bytes).unwrap();
    let mut flows = Vec::new();
    let stop = AtomicBool::new(false);
    let out = run_flows(
        &mut cap,
        &cfg,
        &stop,
        &mut |r| {
            flows.push(r.clone());
            Ok(())
        },
        &mut |_| {},
    )
    .unwrap();
    (flows, out)
}

#[test]
fn batch_size_does_not_change_the_result() {
    let (want, out) = run(sample(), FlowsConfig::default());
    assert_eq!(out.summary.packets, 3226);
    assert_eq!(out.summary.flows, want.len() as u64);
    assert_eq!(out.summary.tracked, 3226);
    for batch in [1, 7, 1000] {
        let (got, _) = run(sample(), FlowsConfig { batch, ..FlowsConfig::default() });
        let strip = |v: &[FlowRecord]| {
            v.iter().map(|e| (e.flow, e.end)).collect::<Vec<(Flow, EndReason)>>()
        };
        assert_eq!(strip(&got), strip(&want), "batch {batch}");
    }
}

#[test]
fn a_bad_record_still_yields_every_flow_before_it() {
    let mut bytes = sample();
    let cut = bytes.len() - 1000;
    bytes.truncate(cut);
    let (flows, out) = run(bytes, FlowsConfig::default());
    let Some(RunError::Capture(e)) = out.error else { panic!("the cut is reported") };
    assert!(e.offset.unwrap() < cut as u64);
    let packets: u64 = flows.iter().map(|f| f.flow.packets[0] + f.flow.packets[1]).sum();
    assert_eq!(packets, out.summary.packets);
    assert!(out.summary.packets > 3000);
}

#[test]
fn stop_flag_ends_the_run_with_flows_flushed() {
    let mut cap = Capture::from_bytes("sample", sample()).unwrap();
    let stop = AtomicBool::new(false);
    let mut n = 0;
    let mut seen = 0;
    let out = run_flows(
        &mut cap,
        &FlowsConfig { batch: 100, ..FlowsConfig::default() },
        &stop,
        &mut |r| {
            n += r.flow.packets[0] + r.flow.packets[1];
            Ok(())
        },
        &mut |_| {
            seen += 1;
            if seen == 3 {
                stop.store(true, Ordering::Relaxed);
            }
        },
    )
    .unwrap();
    assert!(out.summary.interrupted);
    assert_eq!(out.summary.packets, 300);
    assert_eq!(n, 300);
}

#[test]
fn tcp_only_keeps_no_other_flow() {
    // Hardening item 10: `rtt` keeps only what RTT needs in its table.
    let (all, _) = run(sample(), FlowsConfig::default());
    let tcp = all.iter().filter(|r| r.flow.key.proto() == 6).count();
    assert!(tcp < all.len(), "the sample has other flows too");
    let (got, out) = run(sample(), FlowsConfig { tcp_only: true, ..FlowsConfig::default() });
    assert_eq!(got.len(), tcp);
    assert_eq!(out.summary.table.created as usize, tcp);
    let other: u64 = all
        .iter()
        .filter(|r| r.flow.key.proto() != 6)
        .map(|r| r.flow.packets[0] + r.flow.packets[1])
        .sum();
    assert_eq!(out.summary.not_tcp, other);
}
