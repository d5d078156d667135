//! The default mode's rules, one test each.

use super::*;
use rampart_flow::KeyKind;
use rampart_wire::tcp::flags::{ACK, FIN, SYN};

fn key() -> FlowKey {
    let mut a = [0u8; 16];
    a[..4].copy_from_slice(&[10, 0, 0, 1]);
    let mut b = [0u8; 16];
    b[..4].copy_from_slice(&[10, 0, 0, 2]);
    FlowKey::new(a, 40000, b, 80, 6, rampart_flow::IpFamily::V4, KeyKind::Ports).0
}

fn pkt(flags: u16, ts: Option<(u32, u32)>, seq: u32, ack: u32, payload: u32) -> RttInput {
    let syn_fin = u32::from(flags & SYN != 0) + u32::from(flags & FIN != 0);
    RttInput {
        ts,
        seq,
        ack,
        flags,
        window: 1000,
        seg_len: payload + syn_fin,
        payload,
        wire_len: 66 + payload,
        to_local: false,
    }
}

/// One packet of a flow whose initiator is side A, at `now` ns.
fn observe(
    st: &mut RttStage,
    id: FlowId,
    new: bool,
    k: &FlowKey,
    side: Side,
    now: u64,
    p: &RttInput,
) -> Option<Sample> {
    let dir = if side == Side::A { Dir::Original } else { Dir::Reply };
    st.observe_packet(id, new, k, side, dir, Timestamp::from_nanos(now), p)
}

/// Runs (ms, side, packet) through one flow; returns (ms of the sample, rtt ms, method).
fn run(mode: Mode, pkts: &[(u64, Side, RttInput)]) -> Vec<(u64, f64, Method)> {
    let mut st = RttStage::new(RttConfig { mode, ..RttConfig::default() });
    let k = key();
    let mut out = Vec::new();
    for (i, (ms, side, p)) in pkts.iter().enumerate() {
        if let Some(s) = observe(&mut st, FlowId(3), i == 0, &k, *side, ms * 1_000_000, p) {
            assert_eq!(s.side, *side, "the sample names the packet carrying the echo");
            out.push((*ms, s.rtt.as_millis_f64(), s.method));
        }
    }
    out
}

use Side::{A, B};

#[test]
fn pure_acks_are_not_timestamped() {
    let got = run(
        Mode::Ts,
        &[
            (0, A, pkt(ACK, Some((10, 1)), 0, 0, 0)), // pure ACK: not stamped
            (5, B, pkt(ACK, Some((90, 10)), 0, 0, 100)), // echoes 10: nothing to match
            (6, A, pkt(ACK, Some((11, 90)), 0, 0, 0)), // echoes 90 (data): 1 ms
        ],
    );
    assert_eq!(got, vec![(6, 1.0, Method::Ts)]);
}

#[test]
fn echoes_need_the_ack_flag_and_match_once() {
    let got = run(
        Mode::Ts,
        &[
            (0, A, pkt(ACK, Some((10, 1)), 0, 0, 100)),
            (2, B, pkt(0x08, Some((90, 10)), 0, 0, 0)), // no ACK flag: no match
            (3, B, pkt(ACK, Some((91, 10)), 0, 0, 0)),  // 3 ms, entry deleted
            (4, B, pkt(ACK, Some((92, 10)), 0, 0, 0)),  // nothing left
        ],
    );
    assert_eq!(got, vec![(3, 3.0, Method::Ts)]);
}

#[test]
fn only_a_newer_tsval_is_timestamped() {
    let got = run(
        Mode::Ts,
        &[
            (0, A, pkt(ACK, Some((10, 1)), 0, 0, 100)),
            (1, A, pkt(ACK, Some((10, 1)), 100, 0, 100)), // same TSval: first one stays
            (2, A, pkt(ACK, Some((9, 1)), 200, 0, 100)),  // older: ignored
            (5, B, pkt(ACK, Some((90, 10)), 0, 300, 0)),
            (6, B, pkt(ACK, Some((91, 9)), 0, 300, 0)),
        ],
    );
    assert_eq!(got, vec![(5, 5.0, Method::Ts)]);
}

#[test]
fn the_handshake_is_timed_by_its_syns() {
    let got = run(
        Mode::Ts,
        &[
            (0, A, pkt(SYN, Some((10, 0)), 0, 0, 0)),
            (20, B, pkt(SYN | ACK, Some((90, 10)), 500, 1, 0)),
            (21, A, pkt(ACK, Some((11, 90)), 1, 501, 0)),
        ],
    );
    assert_eq!(got, vec![(20, 20.0, Method::Ts), (21, 1.0, Method::Ts)]);
}

#[test]
fn hybrid_falls_back_to_seq_ack_without_timestamps() {
    let pkts = [
        (0, A, pkt(SYN, None, 1000, 0, 0)),
        (20, B, pkt(SYN | ACK, None, 5000, 1001, 0)),
        (21, A, pkt(ACK, None, 1001, 5001, 0)),
        (22, A, pkt(ACK, None, 1001, 5001, 500)),
        (42, B, pkt(ACK, None, 5001, 1501, 0)),
    ];
    let got = run(Mode::Hybrid, &pkts);
    assert_eq!(got, vec![(20, 20.0, Method::Seq), (21, 1.0, Method::Seq), (42, 20.0, Method::Seq)]);
    assert!(run(Mode::Ts, &pkts).is_empty());
}

#[test]
fn karn_skips_retransmitted_segments() {
    let got = run(
        Mode::Seq,
        &[
            (0, A, pkt(ACK, None, 1000, 1, 500)),
            (200, A, pkt(ACK, None, 1000, 1, 500)), // retransmission
            (210, B, pkt(ACK, None, 1, 1500, 0)),   // ambiguous: no sample
            (211, A, pkt(ACK, None, 1500, 1, 100)),
            (221, B, pkt(ACK, None, 1, 1600, 0)),
        ],
    );
    assert_eq!(got, vec![(221, 10.0, Method::Seq)]);
}

#[test]
fn a_new_flow_in_a_reused_slot_does_not_see_old_entries() {
    let mut st = RttStage::new(RttConfig::default());
    let k = key();
    let data = pkt(ACK, Some((10, 1)), 0, 0, 100);
    assert!(observe(&mut st, FlowId(3), true, &k, A, 0, &data).is_none());
    let s = st.retire(FlowId(3));
    assert_eq!(s.dirs, [DirSummary::default(); 2]);
    // The slot now holds another flow: its echo of TSval 10 must not match.
    let echo = pkt(ACK, Some((90, 10)), 0, 0, 0);
    assert!(observe(&mut st, FlowId(3), true, &k, B, 1_000_000, &echo).is_none());
}

#[test]
fn summaries_count_each_side() {
    let mut st = RttStage::new(RttConfig::default());
    let k = key();
    for (i, ms) in [3u64, 5, 4].into_iter().enumerate() {
        let t = i as u64 * 100;
        let tsval = 10 + i as u32;
        let _ = observe(
            &mut st,
            FlowId(0),
            i == 0,
            &k,
            A,
            t * 1_000_000,
            &pkt(ACK, Some((tsval, 1)), 0, 0, 10),
        );
        let s = observe(
            &mut st,
            FlowId(0),
            false,
            &k,
            B,
            (t + ms) * 1_000_000,
            &pkt(ACK, Some((90, tsval)), 0, 0, 0),
        );
        assert!(s.is_some());
    }
    let sum = st.retire(FlowId(0));
    assert_eq!(sum.dirs[0], DirSummary::default());
    let b = sum.dirs[1];
    assert_eq!((b.count, b.min, b.max), (3, Span::from_millis(3), Span::from_millis(5)));
    assert!(b.median.as_nanos().abs_diff(4_000_000) <= 4_000_000 / 32);
}

#[test]
fn expired_tsvals_do_not_match() {
    let mut st =
        RttStage::new(RttConfig { tsval_max_age: Span::from_secs(1), ..RttConfig::default() });
    let k = key();
    let _ = observe(&mut st, FlowId(0), true, &k, A, 0, &pkt(ACK, Some((10, 1)), 0, 0, 10));
    assert!(
        observe(
            &mut st,
            FlowId(0),
            false,
            &k,
            B,
            1_500_000_000,
            &pkt(ACK, Some((90, 10)), 0, 0, 0)
        )
        .is_none()
    );
    assert_eq!(st.ts_entries(), 0, "the sweep removed it");
}

#[test]
fn state_per_flow_id() {
    assert_eq!(std::mem::size_of::<super::FlowRtt>(), 48);
    assert_eq!(std::mem::size_of::<super::FlowBytes>(), 80);
}

#[test]
fn byte_counts_are_kept_only_when_asked_for() {
    let k = key();
    let data = |tsval| pkt(ACK, Some((tsval, 1)), 0, 0, 100);
    let echo = |tsecr| pkt(ACK, Some((90, tsecr)), 0, 0, 0);
    let mut on = RttStage::new(RttConfig::default());
    let mut off = RttStage::new(RttConfig { byte_counts: false, ..RttConfig::default() });
    for st in [&mut on, &mut off] {
        for (n, tsval) in [10, 11].into_iter().enumerate() {
            let _ = observe(st, FlowId(0), n == 0, &k, A, n as u64, &data(tsval));
        }
    }
    let a = observe(&mut on, FlowId(0), false, &k, B, 5_000_000, &echo(10)).unwrap();
    let b = observe(&mut off, FlowId(0), false, &k, B, 5_000_000, &echo(10)).unwrap();
    // TSval 10 left the ring for the shared table carrying the bytes A had sent by then.
    assert_eq!((a.fbytes, a.dbytes, a.pbytes), (166, 0, 66));
    assert_eq!((b.fbytes, b.dbytes, b.pbytes), (0, 0, 0));
    assert_eq!(Sample { fbytes: 0, pbytes: 0, ..a }, b);
    let a = observe(&mut on, FlowId(0), false, &k, B, 6_000_000, &echo(11)).unwrap();
    // dBytes is what the previous sample had left when TSval 11 was timestamped: none yet.
    assert_eq!((a.fbytes, a.dbytes, a.pbytes), (332, 0, 66), "from the ring");
    assert!(on.memory_bytes() > off.memory_bytes());
}

#[test]
fn a_direction_with_many_entries_in_the_shared_table_always_looks_there() {
    let mut st = RttStage::new(RttConfig::default());
    let k = key();
    let data = |tsval| pkt(ACK, Some((tsval, 1)), 0, 0, 10);
    let echo = |tsecr| pkt(ACK, Some((90_000, tsecr)), 0, 0, 0);
    // 300 TSvals outstanding: 299 in the shared table, more than the count holds.
    for tsval in 1..=300u32 {
        let _ = observe(&mut st, FlowId(0), tsval == 1, &k, A, u64::from(tsval), &data(tsval));
    }
    assert_eq!(st.flows.get(0).unwrap().spilled, [MANY, 0]);
    // Every one is still found, after the count stopped counting.
    for tsecr in (1..=300u32).rev() {
        let s = observe(&mut st, FlowId(0), false, &k, B, 1_000_000, &echo(tsecr));
        assert!(s.is_some(), "TSval {tsecr}");
    }
    assert_eq!(st.ts_entries(), 0);
    // A new flow in the slot counts again.
    let _ = observe(&mut st, FlowId(0), true, &k, A, 2_000_000, &data(1));
    assert_eq!(st.flows.get(0).unwrap().spilled, [0, 0]);
}

#[test]
fn a_reply_is_matched_in_the_ring_and_older_tsvals_in_the_shared_table() {
    let mut st = RttStage::new(RttConfig::default());
    let k = key();
    let data = |tsval| pkt(ACK, Some((tsval, 1)), 0, 0, 10);
    let echo = |tsecr| pkt(ACK, Some((90, tsecr)), 0, 0, 0);
    assert!(observe(&mut st, FlowId(0), true, &k, A, 0, &data(10)).is_none());
    assert_eq!((st.ts.len(), st.ts_entries()), (0, 1), "in the flow's ring");
    let s = observe(&mut st, FlowId(0), false, &k, B, 2_000_000, &echo(10)).unwrap();
    assert_eq!(s.rtt, Span::from_millis(2));
    assert_eq!(st.ts_entries(), 0);
    // Three TSvals outstanding: the two older ones move to the shared table.
    for (i, tsval) in [11, 12, 13].into_iter().enumerate() {
        let _ = observe(&mut st, FlowId(0), false, &k, A, 3_000_000 + i as u64, &data(tsval));
    }
    assert_eq!((st.ts.len(), st.ts_entries()), (2, 3));
    assert_eq!(st.flows.get(0).unwrap().spilled, [2, 0]);
    for tsecr in [12, 11, 13] {
        assert!(observe(&mut st, FlowId(0), false, &k, B, 9_000_000, &echo(tsecr)).is_some());
    }
    assert_eq!((st.ts_entries(), st.flows.get(0).unwrap().spilled), (0, [0, 0]));
}

/// One packet of the property test: flow, whether it starts the flow, sender, milliseconds
/// since the previous packet (negative: capture time going back), timestamps option, flags,
/// payload.
type Step = (u32, bool, bool, i64, Option<(u32, u32)>, u16, u32);

fn step() -> impl Strategy<Value = Step> {
    (
        0u32..3,
        prop::bool::weighted(0.05),
        any::<bool>(),
        prop_oneof![8 => 0i64..40, 1 => -30i64..0, 1 => 900i64..2500],
        prop::option::weighted(0.9, (0u32..12, 0u32..12)),
        prop_oneof![6 => Just(ACK), 2 => Just(SYN), 1 => Just(SYN | ACK), 1 => Just(RST | ACK)],
        prop_oneof![Just(0u32), Just(10u32)],
    )
}

use proptest::prelude::*;
use rampart_wire::tcp::flags::RST;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Rings change where TSvals wait, and SEQ/ACK timing made only once a segment uses
    /// sequence space changes nothing either: the samples, counters and summaries equal those
    /// of the stage with every TSval in the shared table and timing for every flow. Without
    /// byte counts, only the byte fields differ (they are 0).
    #[test]
    fn rings_and_lazy_timing_match_the_reference(
        steps in prop::collection::vec(step(), 1..300),
        seq in any::<bool>(),
        byte_counts in any::<bool>(),
    ) {
        let cfg = RttConfig {
            mode: if seq { Mode::Hybrid } else { Mode::Ts },
            tsval_max_age: Span::from_secs(1),
            byte_counts,
            ..RttConfig::default()
        };
        let mut ring = RttStage::new(cfg);
        let mut table = RttStage::new(RttConfig { byte_counts: true, ..cfg });
        table.reference = true;
        let k = key();
        let mut now = 5_000_000_000i64;
        let mut started = [false; 3];
        for (n, &(flow, new, a, dt, ts, flags, payload)) in steps.iter().enumerate() {
            now += dt * 1_000_000;
            let new = new || !started[flow as usize];
            started[flow as usize] = true;
            let side = if a { A } else { B };
            let mut p = pkt(flags, ts, n as u32 * 10, n as u32 * 10, payload);
            p.seq = (n as u32 / 2) * 10;
            p.ack = p.seq + 10;
            let id = FlowId(flow);
            let x = observe(&mut ring, id, new, &k, side, now as u64, &p);
            let mut y = observe(&mut table, id, new, &k, side, now as u64, &p);
            if let (Some(y), false) = (y.as_mut(), byte_counts) {
                (y.fbytes, y.dbytes, y.pbytes) = (0, 0, 0);
            }
            prop_assert_eq!(x, y, "packet {}", n);
            prop_assert_eq!(ring.counters(), table.counters());
            prop_assert_eq!(ring.summary(id), table.summary(id));
        }
        for f in 0..3 {
            prop_assert_eq!(ring.retire(FlowId(f)), table.retire(FlowId(f)));
        }
    }
}

#[test]
fn a_full_shared_table_sweeps_an_aged_tsval_on_its_way_out_of_the_ring() {
    // One slot of shared table, TSvals age out after 1 s (ms below).
    let cfg =
        RttConfig { tsval_max_age: Span::from_secs(1), max_tsvals: 1, ..RttConfig::default() };
    let mut st = RttStage::new(cfg);
    let k = key();
    let ms = |t: u64| t * 1_000_000;
    let data = |tsval| pkt(ACK, Some((tsval, 1)), 0, 0, 10);
    // 500 ms: flow 2's TSval 20 waits in its ring (and the first periodic sweep runs).
    let _ = observe(&mut st, FlowId(2), true, &k, A, ms(500), &data(20));
    // Flow 1 fills the shared table: 10 moves there when 11 is timestamped.
    let _ = observe(&mut st, FlowId(1), true, &k, A, ms(550), &data(10));
    let _ = observe(&mut st, FlowId(1), false, &k, A, ms(560), &data(11));
    assert_eq!((st.ts.len(), st.ts_entries()), (1, 3));
    // 1,500 ms: the next periodic sweep; nothing is older than 1 s yet.
    let _ = observe(&mut st, FlowId(3), true, &k, B, ms(1500), &pkt(ACK, None, 0, 0, 0));
    assert_eq!(st.ts_entries(), 3);
    // 1,600 ms: flow 2's TSval 21 pushes 20 (now 1.1 s old) out of its ring into the full
    // table. The sweep that makes room drops flow 1's aged entries, and 20 is dropped as that
    // sweep would have dropped it in the table, not filed.
    let _ = observe(&mut st, FlowId(2), false, &k, A, ms(1600), &data(21));
    assert_eq!(st.ts.len(), 0, "nothing aged was filed");
    assert_eq!(st.ts_entries(), 1, "flow 2's newest TSval waits in its ring");
    let echo = pkt(ACK, Some((90, 21)), 0, 0, 0);
    assert!(observe(&mut st, FlowId(2), false, &k, B, ms(1610), &echo).is_some());
}
