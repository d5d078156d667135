//! The stateful firewall's per-packet cost through [`Pipeline::process`], frames in memory:
//! a packet of an established connection (its decision cached) against the first packet of a
//! new connection (a SYN: a new flow and conntrack entry, the rule set walked, the decision
//! cached), behind a rule set of 3 rules and behind the same 3 with 10,000 more in front that
//! the traffic must pass (`ip saddr 100.B.C.0/24 tcp dport P drop`), as the target
//! puts it: a new flow's first packet against 10K rules at most 150 ns more than an
//! established packet's; and behind 200 rules wide in both addresses (`tcp dport P drop`),
//! which a firewall's chains are mostly made of.
//!
//! *established*: 65,536 connections set up by a handshake before measuring, then a pure ACK
//! of a random one per packet (the tracker takes a repeated ACK as a retransmission, which runs
//! the same window checks). *new*: SYNs from 262,144 distinct sources and ports, each a new
//! connection; capture time moves 1 ms per batch of 256 and unanswered SYNs time out after
//! 0.5 s (`tcp_timeout_syn_sent`), so about 128 K half-open connections are live, the
//! table's timer ends the oldest as the run goes (as in a flood), and no SYN is seen twice
//! while its connection lives.
//!
//! *flood*: the same SYNs into a table of 10,000 connections, as `rampart run --ct-max 10000`
//! bounds each worker's: the table stays full, so every SYN early-drops a half-open
//! connection and its flow ends, as under the inline SYN flood of `scripts/bench-inline.sh
//! flood`. Twice: with the TCP state stage (Zeek's `conn_state` and `history`, which the
//! flow records carry when they go somewhere) and without it (`rampart run` with no record
//! output).
//!
//! Run: `cargo bench -p rampart-engine --bench firewall`

use std::hint::black_box;
use std::sync::Arc;

use criterion::measurement::WallTime;
use criterion::{
    BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main,
};
use rampart_capture::{Frame, LinkType, Timestamp};
use rampart_engine::stateful::{Routes, RuleSet, Stateful, StatefulConfig};
use rampart_engine::{Events, FlowsConfig, Pipeline, Summary, Verdict};
use rampart_flow::TableConfig;
use rampart_wire::Family;
use rampart_wire::check::{finish, pseudo_header, sum};

const LEN: usize = 54;
const BATCH: usize = 256;
const ESTABLISHED: u32 = 65_536;
const NEW: u32 = 262_144;
/// Connections the flood's table holds.
const FLOOD_TABLE: usize = 10_000;
const MS: u64 = 1_000_000;
const T0: u64 = 1_700_000_000_000_000_000;

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;

/// Ethernet + IPv4 + TCP without options, checksums right.
fn tcp(src: [u8; 4], dst: [u8; 4], ports: (u16, u16), seq: u32, ack: u32, flags: u8) -> Vec<u8> {
    let mut f = vec![0u8; LEN];
    f[..14].copy_from_slice(&[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00]);
    f[14..24].copy_from_slice(&[0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6]);
    f[26..30].copy_from_slice(&src);
    f[30..34].copy_from_slice(&dst);
    let ip = finish(sum(&f[14..34], 0));
    f[24..26].copy_from_slice(&ip.to_be_bytes());
    f[34..36].copy_from_slice(&ports.0.to_be_bytes());
    f[36..38].copy_from_slice(&ports.1.to_be_bytes());
    f[38..42].copy_from_slice(&seq.to_be_bytes());
    f[42..46].copy_from_slice(&ack.to_be_bytes());
    f[46] = 0x50;
    f[47] = flags;
    f[48..50].copy_from_slice(&0xffffu16.to_be_bytes());
    let mut a = [0u8; 16];
    let mut b = [0u8; 16];
    a[..4].copy_from_slice(&src);
    b[..4].copy_from_slice(&dst);
    let l4 = finish(sum(&f[34..54], pseudo_header(Family::V4, &a, &b, 6, 20)));
    f[50..52].copy_from_slice(&l4.to_be_bytes());
    f
}

/// Client `i`'s address and port; the server is 192.0.2.1:443.
fn client(i: u32) -> ([u8; 4], u16) {
    ([10, (i >> 16) as u8, (i >> 8) as u8, i as u8], 1024 + (i % 50_000) as u16)
}

const SERVER: [u8; 4] = [192, 0, 2, 1];

fn frame(data: &[u8], ts: u64) -> Frame<'_> {
    Frame {
        ts: Timestamp::from_nanos(ts),
        origlen: data.len() as u32,
        link: LinkType::Ethernet,
        interface: 0,
        offset: 0,
        data,
    }
}

/// The rule set: established traffic and new connections to ports 80 and 443 accepted, the
/// rest dropped; `extra` rules in front that no packet here matches (each small in the source
/// address), and `wide` more (`tcp dport P drop`, wide in both addresses) after them.
fn rules(extra: u32, wide: u32) -> Arc<RuleSet> {
    let mut text = String::from(
        "table inet bench {\n chain forward {\n  type filter hook forward priority filter; policy drop;\n  ct state established,related accept\n",
    );
    for r in 0..extra {
        text.push_str(&format!(
            "  ip saddr 100.{}.{}.0/24 tcp dport {} drop\n",
            (r >> 8) & 0xff,
            r & 0xff,
            1 + r % 1000
        ));
    }
    for r in 0..wide {
        text.push_str(&format!("  tcp dport {} drop\n", 1000 + r));
    }
    text.push_str("  ct state new tcp dport { 80, 443 } accept\n }\n}\n");
    let nft = rampart_classify::nft::parse("bench.nft", &text).expect("the bench rule set reads");
    Arc::new(RuleSet::from_nft("bench.nft", &nft).expect("the bench rule set lowers"))
}

fn pipeline(rules: Arc<RuleSet>) -> Pipeline {
    pipeline_with(rules, 1 << 20, true)
}

/// A stateful pipeline of at most `max_flows` connections, with the TCP state stage or not.
fn pipeline_with(rules: Arc<RuleSet>, max_flows: usize, tcp_stats: bool) -> Pipeline {
    let routes = Routes { names: vec!["eth0".into(), "eth1".into()], ..Routes::default() };
    let mut ct = rampart_conntrack::Config::default();
    ct.timeouts.tcp_syn_sent = rampart_wire::Span::from_nanos(500 * MS);
    let cfg = StatefulConfig { ct, routes: Arc::new(routes), ..StatefulConfig::default() };
    let table = TableConfig { max_flows, ..TableConfig::default() };
    Pipeline::new(&FlowsConfig { table, rtt: None, dpi: None, tcp_stats, ..FlowsConfig::default() })
        .with_stateful(Stateful::new(cfg, rules))
}

/// Frames `frames` through `p` in batches, at capture time `ts`.
fn run(p: &mut Pipeline, frames: &[Vec<u8>], ts: u64, out: &mut (Vec<Verdict>, Events, Summary)) {
    for chunk in frames.chunks(BATCH) {
        let batch: Vec<Frame<'_>> = chunk.iter().map(|f| frame(f, ts)).collect();
        out.1.clear();
        p.process(&batch, Verdict::Accept, &mut out.0, &mut out.1, &mut out.2);
    }
}

/// Times `p` deciding `frames` in batches of [`BATCH`], round and round, capture time moving
/// 1 ms per batch from `t0`.
fn measure(
    g: &mut BenchmarkGroup<'_, WallTime>,
    id: BenchmarkId,
    p: &mut Pipeline,
    frames: &[Vec<u8>],
    t0: u64,
    out: &mut (Vec<Verdict>, Events, Summary),
) {
    let (mut at, mut ts) = (0, t0);
    g.bench_function(id, |b| {
        b.iter(|| {
            let batch: Vec<Frame<'_>> =
                frames[at..at + BATCH].iter().map(|f| frame(f, ts)).collect();
            out.1.clear();
            p.process(&batch, Verdict::Accept, &mut out.0, &mut out.1, &mut out.2);
            at = (at + BATCH) % frames.len();
            ts += MS;
            black_box((out.0.len(), out.1.records.len()));
        })
    });
}

fn firewall(c: &mut Criterion) {
    let mut g = c.benchmark_group("firewall");
    g.throughput(Throughput::Elements(BATCH as u64));
    for (extra, wide) in [(0u32, 0u32), (10_000, 0), (0, 200)] {
        let set = rules(extra, wide);
        let n_rules = extra + wide + 3;
        let mut out = (Vec::new(), Events::default(), Summary::default());

        // Established: handshake every connection, then ACKs of random ones.
        let mut p = pipeline(Arc::clone(&set));
        let iss = |i: u32| i.wrapping_mul(2_654_435_761);
        let hello: Vec<Vec<u8>> = (0..ESTABLISHED)
            .flat_map(|i| {
                let (a, port) = client(i);
                let (c, s) = (iss(i), iss(i) ^ 0x5555_5555);
                [
                    tcp(a, SERVER, (port, 443), c, 0, SYN),
                    tcp(SERVER, a, (443, port), s, c.wrapping_add(1), SYN | ACK),
                    tcp(a, SERVER, (port, 443), c.wrapping_add(1), s.wrapping_add(1), ACK),
                ]
            })
            .collect();
        run(&mut p, &hello, T0, &mut out);
        let st = p.stateful().expect("a stateful pipeline");
        assert_eq!(st.conntrack().stats().insert, u64::from(ESTABLISHED), "every connection");
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let acks: Vec<Vec<u8>> = (0..1 << 18)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let i = (x % u64::from(ESTABLISHED)) as u32;
                let (a, port) = client(i);
                let (c, s) = (iss(i), iss(i) ^ 0x5555_5555);
                tcp(a, SERVER, (port, 443), c.wrapping_add(1), s.wrapping_add(1), ACK)
            })
            .collect();
        measure(&mut g, BenchmarkId::new("established", n_rules), &mut p, &acks, T0 + MS, &mut out);
        // Every packet after the handshakes took its flow's cached decision.
        let (_, walked) = p.stateful().expect("stateful").decided_counts();
        assert!(walked <= u64::from(ESTABLISHED) * 3, "established packets were cached");
        assert!(out.0.iter().all(|&v| v == Verdict::Accept));

        // New: SYNs from distinct clients, each a new connection.
        let mut p = pipeline(Arc::clone(&set));
        let syns: Vec<Vec<u8>> = (0..NEW)
            .map(|i| {
                let (a, port) = client(i + ESTABLISHED);
                tcp([a[0] + 1, a[1], a[2], a[3]], SERVER, (port, 443), iss(i), 0, SYN)
            })
            .collect();
        measure(&mut g, BenchmarkId::new("new", n_rules), &mut p, &syns, T0, &mut out);
        let st = p.stateful().expect("stateful");
        let (_, walked) = st.decided_counts();
        assert_eq!(walked, st.conntrack().stats().insert, "every SYN was a new connection");
        assert!(out.0.iter().all(|&v| v == Verdict::Accept));

        // Flood: the same SYNs into a full table of 10,000 connections.
        if extra == 0 && wide == 0 {
            for (name, tcp_stats) in [("flood, records", true), ("flood, no records", false)] {
                let mut p = pipeline_with(Arc::clone(&set), FLOOD_TABLE, tcp_stats);
                measure(&mut g, BenchmarkId::new(name, n_rules), &mut p, &syns, T0, &mut out);
                let st = p.stateful().expect("stateful");
                let ct = st.conntrack().stats();
                // Each connection beyond the table's room pushed one out (none timed out:
                // the table holds 39 batches, 39 ms of capture time).
                let beyond = ct.insert.saturating_sub(FLOOD_TABLE as u64);
                assert_eq!(ct.early_drop, beyond, "the full table pushed connections out");
                assert!(p.table().len() <= FLOOD_TABLE, "the table stays bounded");
                assert!(out.0.iter().all(|&v| v == Verdict::Accept));
            }
        }
    }
    g.finish();
}

criterion_group!(benches, firewall);
criterion_main!(benches);
