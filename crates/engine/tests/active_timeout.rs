//! The active timeout through the pipeline: a long TCP conversation made in memory is
//! reported in intervals whose records add up to the one record of a run without it, with
//! the side stages' facts on every record; and workers write the same records as one.

use std::sync::atomic::AtomicBool;

use rampart_capture::{Capture, Frame, Span, Timestamp};
use rampart_engine::{Events, FlowRecord, FlowsConfig, Pipeline, Verdict};
use rampart_flow::EndReason;
use rampart_wire::LinkType;

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const FIN: u8 = 0x01;
const PSH: u8 = 0x08;
const S: u64 = 1_000_000_000;
const BASE: u64 = 1_700_000_000 * S;

/// An Ethernet/IPv4/TCP frame with the timestamps option and `payload` bytes (`head` first).
#[allow(clippy::too_many_arguments)]
fn tcp(
    src: [u8; 4],
    sport: u16,
    dst: [u8; 4],
    dport: u16,
    flags: u8,
    seq: u32,
    ts: (u32, u32),
    payload: usize,
    head: &[u8],
) -> Vec<u8> {
    let tcp_len = 20 + 12;
    let ip_len = 20 + tcp_len + payload;
    let mut f = vec![0u8; 14 + ip_len];
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut f[14..];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&(ip_len as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = 6;
    ip[12..16].copy_from_slice(&src);
    ip[16..20].copy_from_slice(&dst);
    let t = &mut ip[20..];
    t[0..2].copy_from_slice(&sport.to_be_bytes());
    t[2..4].copy_from_slice(&dport.to_be_bytes());
    t[4..8].copy_from_slice(&seq.to_be_bytes());
    t[12] = ((tcp_len / 4) as u8) << 4;
    t[13] = flags;
    t[14..16].copy_from_slice(&65535u16.to_be_bytes());
    t[20..24].copy_from_slice(&[1, 1, 8, 10]);
    t[24..28].copy_from_slice(&ts.0.to_be_bytes());
    t[28..32].copy_from_slice(&ts.1.to_be_bytes());
    t[32..32 + head.len()].copy_from_slice(head);
    f
}

/// An HTTP download from `c:port` to `s:80` lasting `secs` seconds from `start` (ns): the
/// handshake, a request, then a data segment and its ACK every 200 ms, then a FIN each way.
fn download(c: [u8; 4], port: u16, s: [u8; 4], start: u64, secs: u64) -> Vec<(u64, Vec<u8>)> {
    let ms = |n: u64| start + n * 1_000_000;
    let req = b"GET / HTTP/1.1\r\nHost: example.net\r\n\r\n";
    let (mut cs, mut ss) = (100u32, 900u32);
    let mut v = vec![
        (ms(0), tcp(c, port, s, 80, SYN, cs, (1, 0), 0, b"")),
        (ms(10), tcp(s, 80, c, port, SYN | ACK, ss, (50, 1), 0, b"")),
        (ms(11), tcp(c, port, s, 80, ACK, cs + 1, (2, 50), 0, b"")),
        (ms(12), tcp(c, port, s, 80, ACK | PSH, cs + 1, (3, 50), req.len(), req)),
    ];
    cs += 1 + req.len() as u32;
    ss += 1;
    let mut t = 20;
    let mut tsv = 4;
    while t < secs * 1000 {
        let len = 1000 + (t % 7) as usize * 50;
        v.push((ms(t), tcp(s, 80, c, port, ACK | PSH, ss, (60 + tsv, tsv), len, b"")));
        ss += len as u32;
        v.push((ms(t + 9), tcp(c, port, s, 80, ACK, cs, (tsv + 1, 60 + tsv), 0, b"")));
        t += 200;
        tsv += 2;
    }
    v.push((ms(t), tcp(c, port, s, 80, ACK | FIN, cs, (tsv, 60), 0, b"")));
    v.push((ms(t + 10), tcp(s, 80, c, port, ACK | FIN, ss, (70 + tsv, tsv), 0, b"")));
    v.push((ms(t + 11), tcp(c, port, s, 80, ACK, cs + 1, (tsv + 1, 70 + tsv), 0, b"")));
    v
}

fn frames(owned: &[(u64, Vec<u8>)]) -> Vec<Frame<'_>> {
    owned
        .iter()
        .map(|(ns, data)| Frame {
            ts: Timestamp::from_nanos(*ns),
            origlen: data.len() as u32,
            link: LinkType::Ethernet,
            interface: 0,
            offset: 0,
            data,
        })
        .collect()
}

/// Every record of a pipeline over `owned` in batches of 5, then the end of input.
fn records(owned: &[(u64, Vec<u8>)], active: Option<u64>) -> Vec<FlowRecord> {
    let cfg =
        FlowsConfig { active_timeout: active.map(Span::from_nanos), ..FlowsConfig::default() };
    let mut p = Pipeline::new(&cfg);
    let (mut verdicts, mut events, mut s) = (Vec::new(), Events::default(), Default::default());
    let all = frames(owned);
    let mut out = Vec::new();
    for batch in all.chunks(5) {
        p.process(batch, Verdict::Accept, &mut verdicts, &mut events, &mut s);
        out.extend(events.records.drain(..).map(|o| o.record));
    }
    p.finish(&mut events);
    out.extend(events.records.drain(..).map(|o| o.record));
    out
}

#[test]
fn a_long_conversation_comes_out_in_intervals_that_add_up_to_its_record() {
    let owned = download([10, 0, 0, 1], 40000, [10, 0, 0, 2], BASE, 10);
    let plain = records(&owned, None);
    assert_eq!(plain.len(), 1);
    let whole = &plain[0];
    assert_eq!(whole.end, EndReason::End);
    let parts = records(&owned, Some(S));
    assert!(parts.len() >= 9, "{} records", parts.len());
    let (last, interim) = parts.split_last().unwrap();
    assert!(interim.iter().all(|r| r.end == EndReason::Active));
    assert_eq!(last.end, whole.end);
    // Counters are deltas: they add up to the flow's totals, in intervals that do not overlap.
    let mut sum = ([0u64; 2], [0u64; 2], [0u8; 2]);
    for r in &parts {
        for d in 0..2 {
            sum.0[d] += r.flow.packets[d];
            sum.1[d] += r.flow.bytes[d];
            sum.2[d] |= r.flow.tcp_flags[d];
        }
        assert_eq!(r.start, whole.flow.first, "every record knows the flow's first packet");
        assert!(r.flow.last - r.flow.first <= Span::from_nanos(S));
        assert!(r.flow.first >= whole.flow.first && r.flow.last <= whole.flow.last);
    }
    assert_eq!(sum, (whole.flow.packets, whole.flow.bytes, whole.flow.tcp_flags));
    for w in parts.windows(2) {
        assert!(w[0].flow.last < w[1].flow.first);
    }
    assert_eq!(parts[0].flow.first, whole.flow.first);
    assert_eq!(last.flow.last, whole.flow.last);
    // What the whole flow knows: the same application on every record (decided by the
    // request, in the first interval); the final record's RTT and connection state are the
    // plain record's, the interim ones' what was known so far.
    for r in &parts {
        assert_eq!(r.app.as_ref().unwrap().label.to_string(), "HTTP");
    }
    assert_eq!(last.app, whole.app);
    assert_eq!(last.rtt, whole.rtt);
    assert_eq!(last.conn, whole.conn);
    let count = |r: &FlowRecord| r.rtt.unwrap().dirs.iter().map(|d| d.count).sum::<u64>();
    for w in parts.windows(2) {
        assert!(count(&w[0]) <= count(&w[1]), "RTT summaries so far only grow");
    }
    assert!(count(&parts[0]) > 0);
    let conn = parts[0].conn.as_ref().unwrap();
    assert!(conn.history.as_str().starts_with("ShAD"), "{}", conn.history.as_str());
}

/// A pcap file of `owned` frames (Ethernet, microseconds).
fn pcap(owned: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut b = Vec::new();
    for w in [0xa1b2_c3d4u32.to_le_bytes(), [2, 0, 4, 0], [0; 4], [0; 4]] {
        b.extend_from_slice(&w);
    }
    b.extend_from_slice(&65535u32.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes());
    for (ns, f) in owned {
        b.extend_from_slice(&((ns / S) as u32).to_le_bytes());
        b.extend_from_slice(&((ns % S / 1000) as u32).to_le_bytes());
        b.extend_from_slice(&(f.len() as u32).to_le_bytes());
        b.extend_from_slice(&(f.len() as u32).to_le_bytes());
        b.extend_from_slice(f);
    }
    b
}

fn run(bytes: Vec<u8>, workers: usize, active: Option<u64>) -> Vec<FlowRecord> {
    let mut cap = Capture::from_bytes("mem", bytes).unwrap();
    let cfg = FlowsConfig {
        workers,
        active_timeout: active.map(Span::from_nanos),
        batch: 16,
        ..FlowsConfig::default()
    };
    let mut out = Vec::new();
    let stop = AtomicBool::new(false);
    let mut sink = |r: &FlowRecord| {
        out.push(r.clone());
        Ok(())
    };
    rampart_engine::run_flows(&mut cap, &cfg, &stop, &mut sink, &mut |_| {}).unwrap();
    out
}

#[test]
fn workers_write_the_interim_records_one_pipeline_writes() {
    // Twelve overlapping downloads of different lengths, merged by time.
    let mut owned = Vec::new();
    for i in 0..12u8 {
        let start = BASE + u64::from(i) * 137_000_000;
        owned.extend(download(
            [10, 0, 1, i],
            40000 + 11 * u16::from(i),
            [10, 0, 0, 2],
            start,
            3 + u64::from(i % 5),
        ));
    }
    owned.sort_by_key(|(ts, _)| *ts);
    let one = run(pcap(&owned), 1, Some(S / 2));
    assert!(one.iter().filter(|r| r.end == EndReason::Active).count() > 50);
    for n in [2, 3] {
        assert!(run(pcap(&owned), n, Some(S / 2)) == one, "{n} workers");
    }
    // And they add up to the plain run's records, flow by flow.
    let plain = run(pcap(&owned), 1, None);
    assert_eq!(plain.len(), 12);
    for whole in &plain {
        let parts: Vec<&FlowRecord> = one
            .iter()
            .filter(|r| r.flow.key == whole.flow.key && r.start == whole.flow.first)
            .collect();
        let packets =
            parts.iter().fold([0, 0], |a, r| [a[0] + r.flow.packets[0], a[1] + r.flow.packets[1]]);
        let bytes =
            parts.iter().fold([0, 0], |a, r| [a[0] + r.flow.bytes[0], a[1] + r.flow.bytes[1]]);
        assert_eq!((packets, bytes), (whole.flow.packets, whole.flow.bytes));
    }
}
