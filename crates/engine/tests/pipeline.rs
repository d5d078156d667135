//! The pipeline without the binary: frames made in memory go in, verdicts and events come out
//! (the engine-level harness), and the inline driver forwards between two ports in memory.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rampart_capture::{Frame, Timestamp};
use rampart_classify::firewall::Firewall;
use rampart_engine::inline::{InlineConfig, MemoryFrame, MemoryPorts, Ports, RuleSlot, run_inline};
use rampart_engine::replay::FirewallSink;
use rampart_engine::stateful::{Decided, Routes, RuleSet, Stateful, StatefulConfig};
use rampart_engine::{Events, FlowRecord, FlowsConfig, Pipeline, Policy, Verdict};
use rampart_flow::EndReason;
use rampart_wire::LinkType;

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const FIN: u8 = 0x01;
const PSH: u8 = 0x08;

/// An Ethernet/IPv4/TCP frame with the timestamps option (`tsval`, `tsecr`) and `payload`
/// bytes of payload.
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
    // NOP, NOP, timestamps.
    t[20..24].copy_from_slice(&[1, 1, 8, 10]);
    t[24..28].copy_from_slice(&ts.0.to_be_bytes());
    t[28..32].copy_from_slice(&ts.1.to_be_bytes());
    f
}

fn arp() -> Vec<u8> {
    let mut f = vec![0u8; 42];
    f[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    f
}

/// The web request: 100 bytes of HTTP.
fn request() -> Vec<u8> {
    let mut f = tcp(C, 40000, S, 80, ACK | PSH, 101, (3, 50), 100);
    let head = b"GET / HTTP/1.1\r\nHost: example.net\r\nUser-Agent: test\r\n\r\n";
    let at = f.len() - 100;
    f[at..at + head.len()].copy_from_slice(head);
    f
}

const C: [u8; 4] = [10, 0, 0, 1];
const S: [u8; 4] = [10, 0, 0, 2];

/// A web fetch (handshake, request, reply, FIN each way), a telnet attempt and an ARP frame,
/// one millisecond apart, with each frame's capture time in ms.
fn conversation() -> Vec<(u64, Vec<u8>)> {
    let ms = |n: u64| 1_700_000_000_000 + n;
    vec![
        (ms(0), tcp(C, 40000, S, 80, SYN, 100, (1, 0), 0)),
        (ms(10), tcp(S, 80, C, 40000, SYN | ACK, 900, (50, 1), 0)),
        (ms(11), tcp(C, 40000, S, 80, ACK, 101, (2, 50), 0)),
        (ms(12), request()),
        (ms(22), tcp(S, 80, C, 40000, ACK | PSH, 901, (60, 3), 1000)),
        (ms(23), tcp(C, 40000, S, 23, SYN, 7, (9, 0), 0)),
        (ms(24), arp()),
        (ms(30), tcp(C, 40000, S, 80, ACK | FIN, 201, (4, 60), 0)),
        (ms(40), tcp(S, 80, C, 40000, ACK | FIN, 1901, (70, 4), 0)),
        (ms(41), tcp(C, 40000, S, 80, ACK, 202, (5, 70), 0)),
    ]
}

fn frames(owned: &[(u64, Vec<u8>)]) -> Vec<Frame<'_>> {
    owned
        .iter()
        .map(|(ms, data)| Frame {
            ts: Timestamp::from_nanos(ms * 1_000_000),
            origlen: data.len() as u32,
            link: LinkType::Ethernet,
            interface: 0,
            offset: 0,
            data,
        })
        .collect()
}

fn no_telnet() -> Policy {
    let rules = "table filter {\n  tcp dport 23 drop\n  default accept\n}\n";
    let (rs, sets) = rampart_classify::syntax::parse("rules", rules).unwrap();
    Policy::new(Arc::new(Firewall::from_iptables(&rs, "filter", &sets).unwrap()))
}

#[test]
fn verdicts_samples_and_records_come_out_of_one_batch() {
    let owned = conversation();
    let cfg = FlowsConfig { samples: true, ..FlowsConfig::default() };
    let mut p = Pipeline::new(&cfg).with_policy(no_telnet());
    let (mut verdicts, mut events, mut s) = (Vec::new(), Events::default(), Default::default());
    p.process(&frames(&owned), Verdict::Drop, &mut verdicts, &mut events, &mut s);
    use Verdict::{Accept, Drop};
    assert_eq!(
        verdicts,
        [Accept, Accept, Accept, Accept, Accept, Drop, Drop, Accept, Accept, Accept]
    );
    // The handshake's SYN-ACK echoes TSval 1 (10 ms), the reply echoes 3 (10 ms), the last
    // ACK echoes the server's FIN (1 ms).
    let rtts: Vec<u64> = events.samples.iter().map(|(_, x)| x.rtt.as_millis()).collect();
    assert!(rtts.contains(&10), "{rtts:?}");
    assert!(events.records.is_empty(), "nothing has ended yet");
    // 5 s of silence: the closed web flow ends (FIN each way), the telnet SYN does not.
    p.advance(Timestamp::from_nanos(1_700_000_006_000 * 1_000_000), u32::MAX, &mut events);
    let ended: Vec<&FlowRecord> = events.records.iter().map(|o| &o.record).collect();
    assert_eq!(ended.len(), 1);
    let web = ended[0];
    assert_eq!((web.end, web.flow.packets, web.flow.key.port_b()), (EndReason::Fin, [5, 3], 80));
    let rtt = web.rtt.unwrap();
    assert_eq!(rtt.dirs[1].count, 2, "two samples towards the server");
    assert_eq!(web.app.as_ref().unwrap().label.to_string(), "HTTP");
    // The end of input ends the rest.
    events.clear();
    p.finish(&mut events);
    assert_eq!(events.records.len(), 1);
    assert_eq!(events.records[0].record.end, EndReason::End);
    let mut s = rampart_engine::Summary::default();
    p.stats_into(&mut s);
    assert_eq!((s.table.created, s.table.fin), (2, 1));
    assert!(s.rule_hits.iter().sum::<u64>() > 0);
}

#[test]
fn batch_boundaries_do_not_change_the_events() {
    let owned = conversation();
    let cfg = FlowsConfig { samples: true, ..FlowsConfig::default() };
    let run = |size: usize| {
        let mut p = Pipeline::new(&cfg);
        let (mut v, mut events, mut s) = (Vec::new(), Events::default(), Default::default());
        let all = frames(&owned);
        let mut samples = Vec::new();
        for chunk in all.chunks(size) {
            events.clear();
            p.process(chunk, Verdict::Accept, &mut v, &mut events, &mut s);
            samples.extend(events.samples.iter().map(|(_, x)| (x.ts, x.rtt)));
        }
        events.clear();
        p.finish(&mut events);
        let records: Vec<FlowRecord> = events.records.iter().map(|o| o.record.clone()).collect();
        (samples, records)
    };
    let one = run(owned.len());
    for size in [1, 2, 3, 7] {
        assert_eq!(run(size), one, "batches of {size}");
    }
}

/// Ports that set the stop flag once both receive queues are empty.
struct Drain<'a>(MemoryPorts, &'a AtomicBool);

impl Ports for Drain<'_> {
    fn exchange(
        &mut self,
        max: usize,
        decide: &mut dyn FnMut(&[Frame<'_>], &mut Vec<Verdict>),
    ) -> std::io::Result<usize> {
        let n = self.0.exchange(max, decide)?;
        if self.0.rx.iter().all(|q| q.is_empty()) {
            self.1.store(true, Ordering::Relaxed);
        }
        Ok(n)
    }

    fn inject(&mut self, port: u32, data: &[u8]) -> std::io::Result<bool> {
        self.0.inject(port, data)
    }
}

#[derive(Default)]
struct Collected {
    verdicts: Vec<Verdict>,
    replies: usize,
    records: Vec<FlowRecord>,
    reloads: Vec<String>,
}

impl FirewallSink for Collected {
    fn packet(
        &mut self,
        _: &Frame<'_>,
        d: &Decided,
        _: &RuleSet,
        reply: Option<&[u8]>,
    ) -> std::io::Result<()> {
        // A reply goes with the frame whose reject made it (batches hand them out by index).
        assert!(reply.is_none() || d.verdict == Verdict::Reject, "a reply beside its reject");
        self.verdicts.push(d.verdict);
        self.replies += usize::from(reply.is_some());
        Ok(())
    }

    fn record(&mut self, r: &FlowRecord) -> std::io::Result<()> {
        self.records.push(r.clone());
        Ok(())
    }

    fn reload(&mut self, _: Timestamp, source: &str, _: Result<(), &str>) -> std::io::Result<()> {
        self.reloads.push(source.to_string());
        Ok(())
    }
}

fn rule_set(name: &str, text: &str) -> Arc<RuleSet> {
    let (rs, sets) = rampart_classify::syntax::parse(name, text).unwrap();
    Arc::new(RuleSet::everywhere(
        name,
        "filter",
        Firewall::from_iptables(&rs, "filter", &sets).unwrap(),
    ))
}

/// A bridge between ports 0 and 1 with the stateful data plane and `rules`.
fn bridge(rules: Arc<RuleSet>) -> Pipeline {
    // The frames made here carry no checksums.
    let mut ct = rampart_conntrack::Config::default();
    ct.set("checksum", 0).unwrap();
    let routes =
        Routes { names: vec!["p0".into(), "p1".into()], bridge: true, ..Routes::default() };
    let cfg = StatefulConfig {
        ct,
        routes: Arc::new(routes),
        non_ip: Verdict::Accept,
        ..StatefulConfig::default()
    };
    Pipeline::new(&FlowsConfig { rtt: None, ..FlowsConfig::default() })
        .with_stateful(Stateful::new(cfg, rules))
}

fn queued() -> MemoryPorts {
    let mut ports = MemoryPorts::default();
    for (ms, data) in conversation() {
        // The client sits on port 0, the server on port 1; ARP from the client.
        let from_server = data.len() > 34 && data[26..30] == S;
        let f = MemoryFrame { ts: Timestamp::from_nanos(ms * 1_000_000), data };
        ports.rx[usize::from(from_server)].push_back(f);
    }
    ports
}

#[test]
fn the_inline_driver_forwards_what_the_rules_accept_and_answers_rejects() {
    let stop = AtomicBool::new(false);
    let mut drain = Drain(queued(), &stop);
    let mut p =
        bridge(rule_set("r", "table filter {\n  tcp dport 23 reject\n  default accept\n}\n"));
    let mut sink = Collected::default();
    let cfg = InlineConfig { batch: 4, ..InlineConfig::default() };
    let end = run_inline(&mut drain, &mut p, &cfg, None, None, &stop, &mut sink).unwrap();
    assert!(end.error.is_none());
    let ports = drain.0;
    // Client frames out of the server's port, except the telnet SYN; the ARP frame passes.
    assert_eq!(ports.tx[1].len(), 6);
    assert!(ports.tx[1].iter().all(|f| f.data.len() < 36 || f.data[36..38] != 23u16.to_be_bytes()));
    // The server's three frames, and the reset for the telnet SYN, back out of the client's.
    assert_eq!(ports.tx[0].len(), 4);
    // The reject's reply (ICMP administratively prohibited, as nft's `reject`) goes back to
    // the client: from the server's address, to the client's.
    let icmp =
        ports.tx[0].iter().find(|f| f.data.len() > 34 && f.data[23] == 1).expect("an ICMP error");
    assert_eq!((&icmp.data[26..30], &icmp.data[30..34]), (&S[..], &C[..]));
    assert_eq!(icmp.data[34], 3, "destination unreachable");
    assert_eq!((end.counts.forwarded, end.counts.rejected, end.counts.replies), (9, 1, 1));
    assert_eq!(sink.verdicts.len(), 10);
    assert_eq!(sink.replies, 1);
    assert_eq!(end.summary.packets, 10);
    // At the stop every flow is written: the web connection's (the rejected SYN left no
    // state, as in Linux).
    assert_eq!(sink.records.len(), 1);
}

/// Ports that publish a rule set in a slot after their first exchange.
struct Reloading<'a>(Drain<'a>, &'a RuleSlot, Option<Arc<RuleSet>>);

impl Ports for Reloading<'_> {
    fn exchange(
        &mut self,
        max: usize,
        decide: &mut dyn FnMut(&[Frame<'_>], &mut Vec<Verdict>),
    ) -> std::io::Result<usize> {
        let n = self.0.exchange(max, decide)?;
        if let Some(r) = self.2.take() {
            assert_eq!(self.1.publish(r), 2);
        }
        Ok(n)
    }

    fn inject(&mut self, port: u32, data: &[u8]) -> std::io::Result<bool> {
        self.0.inject(port, data)
    }
}

#[test]
fn a_published_rule_set_is_taken_between_batches_and_state_is_kept() {
    let stop = AtomicBool::new(false);
    let open = rule_set("open", "table filter {\n  default accept\n}\n");
    let closed = rule_set(
        "closed",
        "table filter {\n  ct state established,related accept\n  default drop\n}\n",
    );
    let slot = RuleSlot::new(open);
    let mut p = bridge(slot.current().1);
    let mut sink = Collected::default();
    // The handshake (the first batch of three) under the open set, the rest under the
    // closed one.
    let cfg = InlineConfig { batch: 3, ..InlineConfig::default() };
    let mut ports = Reloading(Drain(queued(), &stop), &slot, Some(closed));
    let end = run_inline(&mut ports, &mut p, &cfg, Some(&slot), None, &stop, &mut sink).unwrap();
    assert_eq!(sink.reloads, ["closed"]);
    assert_eq!(end.counts.reloads, 1);
    // The web connection goes on, the new telnet SYN is dropped, and ARP (not IP) passes.
    use Verdict::{Accept, Drop};
    assert_eq!(
        sink.verdicts,
        [Accept, Accept, Accept, Accept, Accept, Drop, Accept, Accept, Accept, Accept]
    );
}

#[test]
fn a_bridge_passes_frames_that_are_not_ip_and_drops_broken_ip_headers() {
    let mut p = bridge(rule_set("open", "table filter {\n  default accept\n}\n"));
    let mut broken = arp();
    broken[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    broken[14] = 0x41; // IPv4 with a 4-byte header
    let owned = vec![(0, arp()), (1, broken)];
    let (mut v, mut events, mut s) = (Vec::new(), Events::default(), Default::default());
    p.process(&frames(&owned), Verdict::Accept, &mut v, &mut events, &mut s);
    assert_eq!(v, [Verdict::Accept, Verdict::Drop]);
}

/// Ports whose receive buffers are always backlogged.
struct Behind<'a>(Drain<'a>);

impl Ports for Behind<'_> {
    fn exchange(
        &mut self,
        max: usize,
        decide: &mut dyn FnMut(&[Frame<'_>], &mut Vec<Verdict>),
    ) -> std::io::Result<usize> {
        self.0.exchange(max, decide)
    }

    fn inject(&mut self, port: u32, data: &[u8]) -> std::io::Result<bool> {
        self.0.inject(port, data)
    }

    fn backlogged(&self) -> bool {
        true
    }
}

#[test]
fn failing_open_under_overload_forwards_undecided_frames_and_counts_them() {
    let closed = "table filter {\n  default drop\n}\n";
    for fail_open in [false, true] {
        let stop = AtomicBool::new(false);
        let mut ports = Behind(Drain(queued(), &stop));
        let mut p = bridge(rule_set("closed", closed));
        let mut sink = Collected::default();
        let cfg =
            InlineConfig { batch: 4, fail_open_overload: fail_open, ..InlineConfig::default() };
        let end = run_inline(&mut ports, &mut p, &cfg, None, None, &stop, &mut sink).unwrap();
        let sent = ports.0.0.tx[0].len() + ports.0.0.tx[1].len();
        if fail_open {
            assert_eq!((sent as u64, end.counts.bypassed), (10, 10));
            assert!(sink.verdicts.is_empty(), "nothing was decided");
        } else {
            // Only ARP (not IP) crosses a closed rule set.
            assert_eq!((sent, end.counts.bypassed), (1, 0));
        }
    }
}
