//! Hand-made segment sequences: one test per history letter, per `conn_state` code and per
//! counter, and a property test against a plain reference model.

use super::*;
use proptest::prelude::*;
use rampart_flow::{FlowKey, IpFamily, KeyKind, PacketInfo};
use rampart_wire::tcp::flags::PSH;

const O: usize = 0;
const R: usize = 1;
const MS: u64 = 1_000_000;

/// The instant `ns` after the epoch.
fn at(ns: u64) -> Timestamp {
    Timestamp::from_nanos(ns)
}

fn flow(p: u8, packets: [u64; 2]) -> Flow {
    let mut a = [0u8; 16];
    a[..4].copy_from_slice(&[10, 0, 0, 1]);
    let mut b = [0u8; 16];
    b[..4].copy_from_slice(&[10, 0, 0, 2]);
    let (key, side) = FlowKey::new(a, 40000, b, 80, p, IpFamily::V4, KeyKind::Ports);
    let info = PacketInfo {
        key,
        side,
        hash: 0,
        ts: rampart_wire::Timestamp::EPOCH,
        wire_len: 60,
        tcp_flags: 0,
    };
    let mut f = Flow::start(&info);
    f.packets = packets;
    f
}

/// A segment: direction, flags, seq, ack, payload, window, time in ms.
type Seg = (usize, u16, u32, u32, u32, u16, u64);

fn run(segs: &[Seg]) -> ConnSummary {
    let mut st = TcpStateStage::new();
    let id = FlowId(3);
    for (i, &(d, flags, seq, ack, payload, window, t)) in segs.iter().enumerate() {
        let dir = if d == O { Dir::Original } else { Dir::Reply };
        st.observe_segment(
            id,
            i == 0,
            dir,
            at(t * MS),
            &TcpSeg { seq, ack, flags, window, payload },
        );
    }
    st.retire(id, &flow(6, [1, 1]))
}

fn hist(segs: &[Seg]) -> (String, &'static str) {
    let s = run(segs);
    (s.history.as_str().to_owned(), s.state.name())
}

const SA: u16 = SYN | ACK;
const PA: u16 = PSH | ACK;
const FA: u16 = FIN | ACK;
const RA: u16 = RST | ACK;

/// The three-way handshake: client ISN 100, server ISN 500, 10 ms apart.
fn handshake() -> Vec<Seg> {
    vec![
        (O, SYN, 100, 0, 0, 1000, 0),
        (R, SA, 500, 101, 0, 1000, 10),
        (O, ACK, 101, 501, 0, 1000, 20),
    ]
}

/// Handshake, a request and a reply, both FINs and the last ACK.
fn full() -> Vec<Seg> {
    let mut s = handshake();
    s.extend([
        (O, PA, 101, 501, 50, 1000, 30),
        (R, ACK, 501, 151, 0, 1000, 35),
        (R, PA, 501, 151, 200, 1000, 40),
        (O, FA, 151, 701, 0, 1000, 50),
        (R, FA, 701, 152, 0, 1000, 60),
        (O, ACK, 152, 702, 0, 1000, 70),
    ]);
    s
}

#[test]
fn a_normal_connection_is_sf_with_zeeks_history() {
    assert_eq!(hist(&full()), ("ShADadFf".into(), "SF"));
    assert_eq!(run(&full()).dirs, [DirCounters::default(); 2]);
}

#[test]
fn letters_s_h_a() {
    assert_eq!(hist(&handshake()), ("ShA".into(), "S1"));
}

#[test]
fn letter_d_with_data_and_the_ack_that_carries_it() {
    let mut s = handshake();
    s.push((R, PA, 501, 101, 10, 1000, 30));
    assert_eq!(hist(&s).0, "ShAd");
}

#[test]
fn letters_f_r_and_states_s2_s3() {
    let mut s = handshake();
    s.push((O, FA, 101, 501, 0, 1000, 30));
    assert_eq!(hist(&s), ("ShAF".into(), "S2"));
    let mut s = handshake();
    s.push((R, FA, 501, 101, 0, 1000, 30));
    assert_eq!(hist(&s), ("ShAf".into(), "S3"));
    let mut s = handshake();
    s.push((O, RST, 101, 0, 0, 0, 30));
    assert_eq!(hist(&s), ("ShAR".into(), "RSTO"));
    let mut s = handshake();
    s.push((R, RA, 501, 101, 0, 0, 30));
    assert_eq!(hist(&s), ("ShAr".into(), "RSTR"));
}

#[test]
fn attempts_s0_rej_rstos0_sh() {
    assert_eq!(hist(&[(O, SYN, 100, 0, 0, 1000, 0)]), ("S".into(), "S0"));
    // A retransmitted SYN: still S0, counted as a retransmission (no `T`: no payload).
    let s = run(&[(O, SYN, 100, 0, 0, 1000, 0), (O, SYN, 100, 0, 0, 1000, 1000)]);
    assert_eq!((s.history.as_str(), s.state, s.dirs[O].retrans), ("S", ConnState::S0, 1));
    assert_eq!(
        hist(&[(O, SYN, 100, 0, 0, 1000, 0), (R, RA, 0, 101, 0, 0, 1)]),
        ("Sr".into(), "REJ")
    );
    assert_eq!(
        hist(&[(O, SYN, 100, 0, 0, 1000, 0), (O, RST, 101, 0, 0, 0, 1)]),
        ("SR".into(), "RSTOS0")
    );
    assert_eq!(
        hist(&[(O, SYN, 100, 0, 0, 1000, 0), (O, FIN, 101, 0, 0, 1000, 1)]),
        ("SF".into(), "SH")
    );
}

#[test]
fn midstream_oth_rstrh_shr() {
    let mid = [(O, PA, 1000, 9000, 10, 1000, 0), (R, ACK, 9000, 1010, 0, 1000, 1)];
    assert_eq!(hist(&mid), ("Da".into(), "OTH"));
    let mut s = mid.to_vec();
    s.push((R, RA, 9000, 1010, 0, 0, 2));
    assert_eq!(hist(&s), ("Dar".into(), "RSTRH"));
    let mut s = mid.to_vec();
    s.push((R, FA, 9000, 1010, 0, 1000, 2));
    assert_eq!(hist(&s), ("Daf".into(), "SHR"));
    // Established, then both sides reset before any data: REJ by Zeek's rule.
    let mut s = handshake();
    s.extend([(O, RST, 101, 0, 0, 0, 30), (R, RST, 501, 0, 0, 0, 31)]);
    assert_eq!(hist(&s).1, "REJ");
}

#[test]
fn letters_q_and_i() {
    // Two or more of SYN, FIN and RST: only `Q`, or `I` when FIN and RST are both set.
    assert_eq!(hist(&[(O, SYN | FIN, 100, 0, 0, 1000, 0)]).0, "Q");
    assert_eq!(hist(&[(O, SYN | FIN | RST, 100, 0, 0, 1000, 0)]).0, "I");
    let mut s = handshake();
    s.push((R, FIN | RST | ACK, 501, 101, 0, 0, 30));
    assert_eq!(hist(&s).0, "ShAi");
}

#[test]
fn a_fin_with_data_is_f_alone() {
    let mut s = handshake();
    s.push((O, FIN | PA, 101, 501, 20, 1000, 30));
    assert_eq!(hist(&s), ("ShAF".into(), "S2"));
    // Data before it still gives `D`.
    let mut s = handshake();
    s.extend([(O, PA, 101, 501, 20, 1000, 30), (O, FIN | PA, 121, 501, 20, 1000, 31)]);
    assert_eq!(hist(&s).0, "ShADF");
}

#[test]
fn a_flag_at_a_new_sequence_number_repeats_its_letter() {
    // A SYN with a new ISN repeats `S`; a resent one (same number) does not.
    let s = [
        (O, SYN, 100, 0, 0, 1000, 0),
        (O, SYN, 100, 0, 0, 1000, 1000),
        (O, SYN, 50, 0, 0, 1000, 2000),
    ];
    assert_eq!(hist(&s).0, "SS");
    // RSTs at two numbers: `RR`; the same RST twice: `R`.
    let mut s = handshake();
    s.extend([(O, RST, 101, 0, 0, 0, 30), (O, RST, 101, 0, 0, 0, 31)]);
    assert_eq!(hist(&s).0, "ShAR");
    s.push((O, RST, 151, 0, 0, 0, 32));
    assert_eq!(hist(&s).0, "ShARR");
    // A FIN is placed after its payload: a resent FIN with the same end adds nothing, a FIN
    // after more data adds `F` again.
    let mut s = handshake();
    s.extend([
        (O, FA, 101, 501, 0, 1000, 30),
        (O, FA, 101, 501, 0, 1000, 330),
        (O, FIN | PA, 102, 501, 10, 1000, 630),
    ]);
    assert_eq!(hist(&s).0, "ShAFF");
}

#[test]
fn rstos0_needs_the_syn_first_else_oth() {
    // Zeek's pattern `S[^HAFGIQ]*R`: a data segment between is allowed, an ACK is not.
    assert_eq!(
        hist(&[
            (O, SYN, 100, 0, 0, 1000, 0),
            (O, PA, 101, 0, 5, 1000, 1),
            (O, RST, 106, 0, 0, 0, 2)
        ])
        .1,
        "RSTOS0"
    );
    assert_eq!(
        hist(&[
            (O, SYN, 100, 0, 0, 1000, 0),
            (O, ACK, 101, 9, 0, 1000, 1),
            (O, RST, 101, 0, 0, 0, 2)
        ]),
        ("SAR".into(), "OTH")
    );
    // Mid-stream: data, the responder's ACK, then the originator's RST.
    assert_eq!(
        hist(&[
            (O, PA, 1000, 9000, 10, 1000, 0),
            (R, ACK, 9000, 1010, 0, 1000, 1),
            (O, RST, 1010, 0, 0, 0, 2)
        ]),
        ("DaR".into(), "OTH")
    );
}

#[test]
fn the_handshake_rtt_counts_from_the_latest_syn() {
    // SYN at 0, resent at 1000 ms, SYN-ACK at 1010, ACK at 1020: RTT 20 ms, not 1020. A
    // segment 30 ms late is then a retransmission, not out of order.
    let mut s = vec![
        (O, SYN, 100, 0, 0, 1000, 0),
        (O, SYN, 100, 0, 0, 1000, 1000),
        (R, SA, 500, 101, 0, 1000, 1010),
        (O, ACK, 101, 501, 0, 1000, 1020),
    ];
    s.extend([(O, PA, 201, 501, 100, 1000, 1030), (O, PA, 101, 501, 100, 1000, 1060)]);
    let r = run(&s);
    assert_eq!(r.dirs[O].retrans, 2, "{:?}", r.dirs[O]);
    assert_eq!(r.dirs[O].out_of_order, 0);
}

#[test]
fn retransmission_is_t_and_counted() {
    let mut s = handshake();
    s.extend([(O, PA, 101, 501, 100, 1000, 30), (O, PA, 101, 501, 100, 1000, 330)]);
    let r = run(&s);
    assert_eq!(r.history.as_str(), "ShADT");
    assert_eq!(r.dirs[O], DirCounters { retrans: 1, ..DirCounters::default() });
}

#[test]
fn a_late_segment_within_the_handshake_rtt_is_out_of_order() {
    // Handshake RTT 20 ms: the segment sent before arrives 5 ms after the one after it.
    let mut s = handshake();
    s.extend([(O, PA, 201, 501, 100, 1000, 30), (O, PA, 101, 501, 100, 1000, 35)]);
    let r = run(&s);
    assert_eq!(r.dirs[O], DirCounters { out_of_order: 1, lost: 1, ..DirCounters::default() });
    assert_eq!(r.history.as_str(), "ShADG");
}

#[test]
fn a_gap_is_g_each_time_logarithmically() {
    let mut s = handshake();
    for i in 0..12u32 {
        // Every other 100-byte segment is missing.
        s.push((O, PA, 101 + 200 * i, 501, 100, 1000, 30 + u64::from(i)));
    }
    let r = run(&s);
    assert_eq!(r.dirs[O].lost, 11);
    assert_eq!(r.history.as_str(), "ShADGG");
}

#[test]
fn fast_retransmission_after_duplicate_acks() {
    let mut s = handshake();
    s.extend([
        (O, PA, 101, 501, 100, 1000, 30),
        (O, PA, 301, 501, 100, 1000, 31), // 201..301 lost
        (R, ACK, 501, 201, 0, 1000, 40),
        (R, ACK, 501, 201, 0, 1000, 41),  // duplicate
        (R, ACK, 501, 201, 0, 1000, 42),  // duplicate
        (O, PA, 201, 501, 100, 1000, 43), // within the 20 ms rule and the handshake RTT
    ]);
    let r = run(&s);
    assert_eq!(r.dirs[O], DirCounters { retrans: 1, lost: 1, ..DirCounters::default() });
}

#[test]
fn zero_window_is_w_and_a_probe_is_not_a_retransmission() {
    let mut s = handshake();
    s.extend([
        (O, PA, 101, 501, 100, 1000, 30),
        (R, ACK, 501, 201, 0, 0, 40),     // zero window
        (O, ACK, 201, 501, 1, 1000, 300), // probe
        (O, ACK, 201, 501, 1, 1000, 600), // probe again
        (R, ACK, 501, 201, 0, 0, 601),
    ]);
    let r = run(&s);
    assert_eq!(r.dirs[R].zero_window, 2);
    assert_eq!(r.dirs[O], DirCounters::default());
    assert_eq!(r.history.as_str(), "ShADaw");
}

#[test]
fn a_keep_alive_is_not_a_retransmission() {
    let mut s = handshake();
    s.extend([(O, ACK, 100, 501, 0, 1000, 5000), (O, ACK, 100, 501, 1, 1000, 9000)]);
    assert_eq!(run(&s).dirs[O], DirCounters::default());
}

#[test]
fn udp_and_other_protocols() {
    let mut st = TcpStateStage::new();
    let s = st.retire(FlowId(0), &flow(17, [2, 1]));
    assert_eq!((s.state, s.history.as_str()), (ConnState::SF, "Dd"));
    let s = st.retire(FlowId(0), &flow(17, [2, 0]));
    assert_eq!((s.state, s.history.as_str()), (ConnState::S0, "D"));
    let s = st.retire(FlowId(9), &flow(1, [2, 2]));
    assert_eq!((s.state, s.history.as_str()), (ConnState::Oth, ""));
}

#[test]
fn a_slot_starts_clean_for_its_next_flow() {
    let mut st = TcpStateStage::new();
    let id = FlowId(1);
    st.observe_segment(id, true, Dir::Original, at(0), &TcpSeg { flags: SYN, ..TcpSeg::default() });
    let _ = st.retire(id, &flow(6, [1, 0]));
    let s = st.retire(id, &flow(6, [1, 0]));
    assert_eq!((s.state, s.history.as_str()), (ConnState::Oth, ""));
    let ack = TcpSeg { flags: ACK, window: 9, ..TcpSeg::default() };
    st.observe_segment(id, true, Dir::Original, at(0), &ack);
    assert_eq!(st.retire(id, &flow(6, [1, 0])).history.as_str(), "A");
}

#[test]
fn memory_per_flow() {
    assert_eq!(std::mem::size_of::<FlowTcp>(), 192);
}

#[test]
fn history_is_bounded() {
    let mut s = handshake();
    for i in 0..200_000u32 {
        s.push((O, PA, 101, 501, 100, 0, 30 + u64::from(i)));
        s.push((R, ACK, 501, 101, 0, 0, 30 + u64::from(i)));
    }
    let r = run(&s);
    assert!(r.history.as_str().starts_with("ShADWawT"), "{:?}", r.history);
    let mut h = History::default();
    for _ in 0..HISTORY_MAX + 5 {
        h.push(b'T');
    }
    assert_eq!(h.as_str().len(), HISTORY_MAX);
}

/// The reference: the same definitions written as plainly as possible over the whole list of
/// segments of one direction (no keep-alives, probes, zero windows or duplicate ACKs: data
/// segments only, sent more than the handshake RTT apart so nothing is out of order).
fn reference(segs: &[(u32, u32)]) -> (u32, u32) {
    let (mut retrans, mut lost) = (0, 0);
    let mut next: Option<u32> = None;
    for &(seq, len) in segs {
        if let Some(n) = next {
            if lt(n, seq) {
                lost += 1;
            }
            if lt(seq, n) && !(len <= 1 && seq == n.wrapping_sub(1)) {
                retrans += 1;
            }
        }
        let end = seq.wrapping_add(len);
        if next.is_none_or(|n| lt(n, end)) {
            next = Some(end);
        }
    }
    (retrans, lost)
}

proptest! {
    #[test]
    fn counts_match_the_reference(
        base in any::<u32>(),
        segs in prop::collection::vec((0u32..3000, 2u32..500), 1..60),
    ) {
        let segs: Vec<(u32, u32)> =
            segs.into_iter().map(|(off, len)| (base.wrapping_add(off), len)).collect();
        let mut st = TcpStateStage::new();
        for (i, &(seq, len)) in segs.iter().enumerate() {
            let s = TcpSeg { seq, ack: 1, flags: ACK, window: 1000, payload: len };
            st.observe_segment(FlowId(0), i == 0, Dir::Original, at(i as u64 * 100 * MS), &s);
        }
        let r = st.retire(FlowId(0), &flow(6, [1, 0]));
        let (retrans, lost) = reference(&segs);
        prop_assert_eq!((r.dirs[O].retrans, r.dirs[O].lost), (retrans, lost));
        prop_assert_eq!(r.dirs[O].out_of_order, 0);
    }
}
