//! One test per pping behaviour that an identical implementation must keep.

use super::*;
use rampart_wire::tcp::flags::{ACK, SYN};

/// An Ethernet frame: IPv4 (or IPv6) TCP between host `a` and host `b` (last address byte),
/// with NOP NOP TS options and `payload` zero bytes, cut to `snap` bytes.
#[allow(clippy::too_many_arguments)]
fn frame(
    v6: bool,
    a: u8,
    ap: u16,
    b: u8,
    bp: u16,
    fl: u16,
    ts: (u32, u32),
    payload: usize,
    snap: usize,
) -> Vec<u8> {
    let mut tcp = vec![0u8; 32];
    tcp[..2].copy_from_slice(&ap.to_be_bytes());
    tcp[2..4].copy_from_slice(&bp.to_be_bytes());
    tcp[12] = 8 << 4;
    tcp[13] = fl as u8;
    tcp[20..24].copy_from_slice(&[1, 1, 8, 10]);
    tcp[24..28].copy_from_slice(&ts.0.to_be_bytes());
    tcp[28..32].copy_from_slice(&ts.1.to_be_bytes());
    tcp.resize(32 + payload, 0);
    let mut f = vec![0u8; 12];
    if v6 {
        f.extend_from_slice(&0x86ddu16.to_be_bytes());
        let mut ip = vec![0u8; 40];
        ip[0] = 0x60;
        ip[4..6].copy_from_slice(&(tcp.len() as u16).to_be_bytes());
        ip[6] = 6;
        ip[7] = 64;
        ip[8] = 0xfd;
        ip[23] = a;
        ip[24] = 0xfd;
        ip[39] = b;
        f.extend_from_slice(&ip);
    } else {
        f.extend_from_slice(&0x0800u16.to_be_bytes());
        let mut ip = vec![0u8; 20];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&((20 + tcp.len()) as u16).to_be_bytes());
        ip[8] = 64;
        ip[9] = 6;
        ip[12..16].copy_from_slice(&[10, 0, 0, a]);
        ip[16..20].copy_from_slice(&[10, 0, 0, b]);
        f.extend_from_slice(&ip);
    }
    f.extend_from_slice(&tcp);
    f.truncate(snap);
    f
}

fn view(f: &[u8]) -> CompatView {
    let meta = PacketMeta::parse(LinkType::Ethernet, f);
    compat_view(LinkType::Ethernet, f, &meta)
}

fn v4(a: u8, b: u8, fl: u16, ts: (u32, u32), payload: usize) -> CompatView {
    let (ap, bp) = if a < b { (40000, 80) } else { (80, 40000) };
    view(&frame(false, a, ap, b, bp, fl, ts, payload, 1500))
}

/// The capture time `secs` and `micros` after the epoch.
fn at(secs: i64, micros: u32) -> Timestamp {
    Timestamp::from_parts(secs as u64, micros * 1000)
}

/// Feeds (seconds, µs, view) and returns the samples' (rtt, min, side sender) in order.
fn run(p: &mut PpingCompat, pkts: &[(i64, u32, CompatView)]) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    for (s, us, v) in pkts {
        if p.packet(at(*s, *us), v).sample {
            let x = p.sample().unwrap();
            out.push((x.rtt, x.min));
        }
    }
    out
}

#[test]
fn handshake_then_data_gives_samples_in_both_directions() {
    let mut p = PpingCompat::new(CompatConfig::default());
    let got = run(
        &mut p,
        &[
            (100, 1, v4(1, 2, SYN, (10, 0), 0)), // never timestamped: no reverse yet
            (100, 20_001, v4(2, 1, SYN | ACK, (500, 10), 0)), // echoes 10: no entry
            (100, 20_101, v4(1, 2, ACK, (11, 500), 0)), // echoes 500: 100 µs
            (100, 40_101, v4(2, 1, ACK, (501, 11), 10)), // echoes 11: 20 ms
        ],
    );
    assert_eq!(got.len(), 2);
    assert!((got[0].0 - 100e-6).abs() < 1e-9 && (got[1].0 - 0.020).abs() < 1e-9, "{got:?}");
}

#[test]
fn tsval_zero_and_tsecr_zero_without_a_bare_syn_are_skipped() {
    assert_eq!(v4(1, 2, ACK, (0, 5), 0), CompatView::Skip);
    assert_eq!(v4(1, 2, ACK, (5, 0), 0), CompatView::Skip);
    // The SYN test is on the exact flags: SYN|ECE|CWR with TSecr 0 is skipped too.
    assert_eq!(v4(1, 2, SYN | 0x40 | 0x80, (5, 0), 0), CompatView::Skip);
    assert!(matches!(v4(1, 2, SYN, (5, 0), 0), CompatView::Usable(_)));
}

#[test]
fn first_write_wins_and_a_matched_entry_blocks_reuse() {
    let mut p = PpingCompat::new(CompatConfig::default());
    let got = run(
        &mut p,
        &[
            (100, 1, v4(2, 1, ACK, (7, 50), 0)),
            (100, 2, v4(1, 2, ACK, (1, 7), 0)), // reverse seen; echoes 7 (no entry yet for 2)
            (100, 10, v4(2, 1, ACK, (8, 50), 0)), // TSval 8 stamped at .000010
            (100, 20, v4(2, 1, ACK, (8, 50), 0)), // same TSval: the first one stays
            (100, 1010, v4(1, 2, ACK, (2, 8), 0)), // 1000 µs after the first
            (100, 2010, v4(1, 2, ACK, (3, 8), 0)), // second echo: entry negated, no sample
            (100, 3000, v4(2, 1, ACK, (8, 50), 0)), // TSval 8 again: still blocked
            (100, 4000, v4(1, 2, ACK, (4, 8), 0)),
        ],
    );
    assert_eq!(got.len(), 1);
    assert!((got[0].0 - 0.001).abs() < 1e-9, "{got:?}");
}

#[test]
fn ack_flag_is_not_required_to_match() {
    let mut p = PpingCompat::new(CompatConfig::default());
    let got = run(
        &mut p,
        &[
            (100, 1, v4(2, 1, ACK, (7, 50), 0)),
            (100, 2, v4(1, 2, ACK, (1, 7), 0)),
            (100, 10, v4(2, 1, ACK, (8, 50), 0)),
            (100, 510, v4(1, 2, 0x08, (2, 8), 0)), // PSH only
        ],
    );
    assert_eq!(got.len(), 1);
}

#[test]
fn an_entry_stamped_at_time_zero_never_matches() {
    // The first usable packet at µs 0 defines the offset: its capture time is 0.0, and pping
    // only matches entries with t > 0.
    let mut p = PpingCompat::new(CompatConfig::default());
    let got = run(
        &mut p,
        &[
            (100, 5, v4(2, 1, ACK, (6, 50), 0)),
            (100, 6, v4(1, 2, ACK, (1, 6), 0)),
            (101, 0, v4(2, 1, ACK, (7, 50), 0)), // t = 1.0: fine
            (101, 100, v4(1, 2, ACK, (2, 7), 0)),
        ],
    );
    assert_eq!(got.len(), 1);
    let mut p = PpingCompat::new(CompatConfig::default());
    let got = run(
        &mut p,
        &[
            (100, 0, v4(1, 2, ACK, (1, 9), 0)),  // offset second 100, µs 0
            (100, 0, v4(2, 1, ACK, (7, 50), 0)), // reverse: TSval 7 stamped at t = 0.0
            (100, 100, v4(1, 2, ACK, (2, 7), 0)),
        ],
    );
    assert!(got.is_empty(), "{got:?}");
}

#[test]
fn min_is_per_direction_and_printed_with_each_sample() {
    let mut p = PpingCompat::new(CompatConfig::default());
    let got = run(
        &mut p,
        &[
            (100, 1, v4(2, 1, ACK, (7, 50), 0)),
            (100, 2, v4(1, 2, ACK, (1, 7), 0)),
            (100, 10, v4(2, 1, ACK, (8, 50), 0)),
            (100, 3010, v4(1, 2, ACK, (2, 8), 0)),
            (100, 3020, v4(2, 1, ACK, (9, 2), 0)),
            (100, 4020, v4(1, 2, ACK, (3, 9), 0)),
        ],
    );
    assert_eq!(got.len(), 3, "{got:?}");
    let last = got[2];
    assert!((last.0 - 0.001).abs() < 1e-9 && (last.1 - 0.001).abs() < 1e-9);
}

#[test]
fn the_flow_limit_is_max_flows_plus_one() {
    let cfg = CompatConfig { max_flows: 2, ..CompatConfig::default() };
    let mut p = PpingCompat::new(cfg);
    for host in 1..=5u8 {
        let _ = p.packet(at(100, 1), &v4(10 + host, 9, ACK, (1, 1), 0));
    }
    assert_eq!(p.counters().flows, 3);
}

#[test]
fn clean_up_runs_on_capture_time_ticks() {
    // An unmatched TSval survives until the first tick more than tsvalMaxAge after it.
    let cfg = CompatConfig { tsval_max_age: 2.0, ..CompatConfig::default() };
    let mut p = PpingCompat::new(cfg);
    let _ =
        run(&mut p, &[(100, 10, v4(2, 1, ACK, (7, 50), 0)), (100, 20, v4(1, 2, ACK, (1, 7), 0))]);
    let _ = p.packet(at(100, 30), &v4(2, 1, ACK, (8, 50), 0)); // stamped at 0.00003
    assert_eq!(p.ts_entries(), 2);
    // Next tick is at capture time >= 0.00001 + 2 (set by the first packet's clean-up).
    // The first packet's clean-up set the next tick to 0.00001 + 2: not reached at 2.0.
    let _ = p.packet(at(102, 0), &v4(2, 1, ACK, (8, 50), 0));
    assert_eq!(p.ts_entries(), 2);
    // At 4.5 the packet comes first, then the tick: the old entry still blocks TSval 8, and
    // the tick then removes both old entries.
    let _ = p.packet(at(104, 500_000), &v4(2, 1, ACK, (8, 50), 0));
    assert_eq!(p.ts_entries(), 0);
    let _ = p.packet(at(104, 600_000), &v4(2, 1, ACK, (8, 50), 0));
    assert_eq!(p.ts_entries(), 1, "TSval 8 can be stamped again");
}

#[test]
fn truncated_ipv6_is_dropped_but_truncated_ipv4_is_not() {
    let full6 = frame(true, 1, 40000, 2, 80, ACK, (1, 1), 100, 1500);
    assert!(matches!(view(&full6), CompatView::Usable(_)));
    let cut6 = frame(true, 1, 40000, 2, 80, ACK, (1, 1), 100, 144);
    assert_eq!(view(&cut6), CompatView::Filtered);
    let cut4 = frame(false, 1, 40000, 2, 80, ACK, (1, 1), 100, 144);
    let CompatView::Usable(p) = view(&cut4) else { panic!("IPv4 is trimmed, not refused") };
    // libtins' PDU size: link header plus the IP bytes captured.
    assert_eq!(p.pdu_size, 144);
    let CompatView::Usable(p) = view(&frame(false, 1, 40000, 2, 80, ACK, (1, 1), 100, 1500)) else {
        panic!()
    };
    assert_eq!(p.pdu_size, 14 + 20 + 32 + 100);
}

#[test]
fn ethernet_padding_is_not_counted() {
    let mut f = frame(false, 1, 40000, 2, 80, ACK, (1, 1), 0, 1500);
    f.resize(f.len() + 6, 0);
    let CompatView::Usable(p) = view(&f) else { panic!() };
    assert_eq!(p.pdu_size, 14 + 20 + 32);
}

#[test]
fn vlan_tagged_tcp_never_reaches_pping() {
    let f = frame(false, 1, 40000, 2, 80, ACK, (1, 1), 0, 1500);
    let mut tagged = f[..12].to_vec();
    tagged.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
    tagged.extend_from_slice(&f[12..]);
    assert_eq!(view(&tagged), CompatView::Filtered);
}

#[test]
fn ip_fragments_count_as_not_tcp_and_options_without_ts_as_no_ts() {
    let mut f = frame(false, 1, 40000, 2, 80, ACK, (1, 1), 0, 1500);
    f[14 + 6] = 0x20; // more fragments
    assert_eq!(view(&f), CompatView::NotTcp);
    let mut f = frame(false, 1, 40000, 2, 80, ACK, (1, 1), 0, 1500);
    f[34 + 22] = 1; // the TS option becomes NOP NOP NOP ... (kind 1)
    f[34 + 23..34 + 32].fill(1);
    assert_eq!(view(&f), CompatView::NoTs);
    let mut p = PpingCompat::new(CompatConfig::default());
    let _ = p.packet(at(1, 1), &CompatView::NoTs);
    let _ = p.packet(at(1, 1), &CompatView::NotTcp);
    let c = p.counters();
    assert_eq!((c.packets, c.no_ts, c.not_tcp), (2, 1, 1));
}

#[test]
fn local_destination_is_not_timestamped() {
    let cfg = CompatConfig { local: Some([10, 0, 0, 1]), ..CompatConfig::default() };
    let mut p = PpingCompat::new(cfg);
    let got = run(
        &mut p,
        &[
            (100, 1, v4(2, 1, ACK, (7, 50), 0)),
            (100, 2, v4(1, 2, ACK, (1, 7), 0)),
            (100, 10, v4(2, 1, ACK, (8, 50), 0)), // to the local host: not stamped
            (100, 510, v4(1, 2, ACK, (2, 8), 0)),
            (100, 600, v4(2, 1, ACK, (9, 2), 0)), // from it: stamped TSval 2 was; echo matches
        ],
    );
    assert_eq!(got.len(), 1);
}

/// A usable IPv4 frame (10.0.0.1:40000 -> 10.0.0.2:80, TSval 7, TSecr 3), changed by `f`.
fn damaged(f: impl FnOnce(&mut Vec<u8>)) -> CompatView {
    let mut fr = frame(false, 1, 40000, 2, 80, ACK, (7, 3), 10, 1500);
    f(&mut fr);
    view(&fr)
}

const IP: usize = 14;
const TCP: usize = 34;

fn usable(v: CompatView) -> bool {
    matches!(v, CompatView::Usable(p) if p.tsval == 7 && p.tsecr == 3)
}

#[test]
fn libtins_ignores_the_ipv4_version_nibble() {
    assert!(usable(damaged(|_| {})));
    assert!(usable(damaged(|f| f[IP] = 0x55)));
    assert!(usable(damaged(|f| f[IP] = 0x65)));
    // Under EtherType IPv6, an IPv6 header with version 4 is still IPv6 to libtins.
    let mut f = frame(true, 1, 40000, 2, 80, ACK, (7, 3), 10, 1500);
    f[IP] = 0x40;
    assert!(matches!(view(&f), CompatView::Usable(p) if p.tsval == 7));
}

#[test]
fn libtins_reads_tcp_options_after_eol() {
    // EOL, NOP, then the timestamps: libtins finds them.
    assert!(usable(damaged(|f| f[TCP + 20] = 0)));
    // A malformed option after EOL (kind 5, length 1) makes libtins throw: the packet is gone.
    let v = damaged(|f| f[TCP + 20..TCP + 24].copy_from_slice(&[0, 5, 1, 1]));
    assert_eq!(v, CompatView::Filtered);
}

#[test]
fn libtins_takes_a_short_or_zero_ipv4_total_length_as_all_captured() {
    for total in [0u16, 1, 10, 19] {
        let v = damaged(|f| f[IP + 2..IP + 4].copy_from_slice(&total.to_be_bytes()));
        assert!(usable(v), "total length {total}: {v:?}");
        if let CompatView::Usable(p) = v {
            assert_eq!(p.pdu_size as usize, 14 + 20 + 32 + 10, "total length {total}");
        }
    }
    // A total length inside the TCP header cuts it: libtins throws.
    let v = damaged(|f| f[IP + 2..IP + 4].copy_from_slice(&30u16.to_be_bytes()));
    assert_eq!(v, CompatView::Filtered);
}

#[test]
fn a_timestamps_option_of_the_wrong_length_is_no_ts_opt() {
    // Length 8: the option parses (its 6 bytes fit, NOPs after it) but `timestamp()` throws.
    let v = damaged(|f| {
        f[TCP + 22..TCP + 24].copy_from_slice(&[8, 8]);
        f[TCP + 30..TCP + 32].copy_from_slice(&[1, 1]);
    });
    assert_eq!(v, CompatView::NoTs);
    // Whatever follows is read as options too: here the last TSecr bytes, EOL then kind 3
    // whose length would lie in the payload, so libtins throws.
    let v = damaged(|f| f[TCP + 22..TCP + 24].copy_from_slice(&[8, 8]));
    assert_eq!(v, CompatView::Filtered);
    // A malformed MSS (length 3) before good timestamps is kept: libtins checks no lengths.
    let v = damaged(|f| f[TCP + 20..TCP + 22].copy_from_slice(&[2, 2]));
    assert!(usable(v), "{v:?}");
}

#[test]
fn libtins_ipv4_header_and_options() {
    // A header length below 5 words.
    assert_eq!(damaged(|f| f[IP] = 0x44), CompatView::Filtered);
    // IP options (IHL 6): END as the last byte is fine, END before the end is not.
    let with_opts = |opts: [u8; 4]| {
        damaged(|f| {
            f[IP] = 0x46;
            let total = u16::from_be_bytes([f[IP + 2], f[IP + 3]]) + 4;
            f[IP + 2..IP + 4].copy_from_slice(&total.to_be_bytes());
            f.splice(IP + 20..IP + 20, opts);
        })
    };
    assert!(usable(with_opts([1, 1, 1, 0])));
    assert_eq!(with_opts([0, 1, 1, 1]), CompatView::Filtered);
    assert_eq!(with_opts([7, 1, 1, 1]), CompatView::Filtered, "length 1 is malformed");
    // A fragment is not TCP; nothing after the IP header is not TCP either.
    assert_eq!(damaged(|f| f[IP + 6] = 0x20), CompatView::NotTcp);
    assert_eq!(damaged(|f| f.truncate(TCP)), CompatView::NotTcp);
    // A TCP header cut short is dropped unseen.
    assert_eq!(damaged(|f| f.truncate(TCP + 10)), CompatView::Filtered);
}
