//! The oracle replay: the router-ingress packets of the shared conntrack oracle
//! (`shared/data/conntrack`: captures on both ports of a Linux router running `ruleset.nft`)
//! go through a flow table and the tracker, judged by a hand-written mirror of the rule set's
//! forward chain, with the reload to rule set B replayed at its capture time. Every verdict of
//! `packets.tsv`, every crafted packet's reason (with Linux's logged values), every flow's
//! final TCP state, ASSURED and reply flags in `flows.tsv`, and the `conntrack -S` deltas must
//! come out as the kernel's did.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;

use rampart_capture::Capture;
use rampart_conntrack::{Config, Conntrack, CtPacket, CtState, Inspection, Reason, Summary};
use rampart_flow::{EndReason, FlowId, FlowKey, FlowReport, FlowTable, PacketInfo, TableConfig};
use rampart_testkit::router::{
    R0_MAC, R1_MAC, invalid_reasons, micros, tag, timeline_ns, verdicts,
};
use rampart_wire::{Family, PacketMeta, proto};

/// The flow table with a key index beside it, for looking a flow up without inserting it.
struct Flows {
    table: FlowTable,
    index: HashMap<FlowKey, FlowId>,
}

impl Flows {
    fn lookup(&self, key: &FlowKey) -> Option<FlowId> {
        self.index.get(key).copied()
    }

    fn forget(&mut self) -> Vec<FlowReport> {
        let ended: Vec<FlowReport> = self.table.take_ended().collect();
        for e in &ended {
            if self.index.get(&e.flow.key) == Some(&e.id) {
                self.index.remove(&e.flow.key);
            }
        }
        ended
    }

    /// Accounts a packet (inserting its flow if new): its flow's id, and the flows that ended.
    fn track(&mut self, p: &PacketInfo) -> (FlowId, Vec<FlowReport>) {
        let id = self.table.track(p).id;
        let ended = self.forget();
        self.index.insert(p.key, id);
        (id, ended)
    }

    fn end(&mut self, id: FlowId, why: EndReason) {
        self.table.end(id, why);
        self.forget();
    }
}

/// One ingress packet.
struct In {
    ts: rampart_wire::Timestamp,
    /// Came in on r0 (the client side).
    from_client: bool,
    frame: Vec<u8>,
}

fn ingress(path: &Path, port: [u8; 6], from_client: bool, out: &mut Vec<In>) {
    let mut cap = Capture::open(path).unwrap();
    loop {
        let batch = cap.next_batch(256).unwrap();
        if batch.is_empty() {
            break;
        }
        for f in batch.iter() {
            if f.data.get(6..12) != Some(&port[..]) {
                out.push(In { ts: f.ts, from_client, frame: f.data.to_vec() });
            }
        }
    }
}

/// Whether a packet is for the router itself (or link-local chatter), not forwarded: the
/// router's addresses, multicast, link-local and unspecified sources.
fn to_router(m: &PacketMeta) -> bool {
    match m.family {
        Family::V4 => {
            let d = &m.dst[..4];
            d == [10, 66, 1, 1] || d == [10, 66, 2, 1] || d[0] >= 224
        }
        Family::V6 => {
            let router = |net: u8| {
                let mut a = [0u8; 16];
                a[..4].copy_from_slice(&[0xfd, 0x66, 0, net]);
                a[15] = 1;
                a
            };
            m.dst[0] == 0xff
                || (m.dst[0] == 0xfe && m.dst[1] & 0xc0 == 0x80)
                || m.src == [0; 16]
                || m.dst == router(1)
                || m.dst == router(2)
        }
        Family::None => true,
    }
}

/// The forward chain of `ruleset.nft` (and `ruleset-B.nft` when `b`), written out by hand:
/// true for accept; reject counts as a drop (the packet does not go through).
fn forward(ct: CtState, m: &PacketMeta, from_client: bool, b: bool) -> bool {
    let echo_req = m.family == Family::V4 && m.proto == proto::ICMP && m.icmp_type == 8;
    if ct == CtState::Invalid {
        return false; // "invalid"
    }
    if b && m.family == Family::V4 && m.dst[..4] == [10, 66, 2, 2] && echo_req {
        return false; // "reload-B"
    }
    if matches!(ct, CtState::Established | CtState::Related) {
        return true; // "est-rel"
    }
    if !(from_client && ct == CtState::New) {
        return false; // the "new" rules need iifname r0, oifname r1
    }
    match m.proto {
        proto::TCP if [5201, 8080].contains(&m.dport) => true, // "new-tcp"
        proto::UDP if [5201, 5300, 7777].contains(&m.dport) => true, // "new-udp"
        proto::ICMP if echo_req => true,                       // "new-ping"
        proto::ICMPV6 if m.family == Family::V6 && m.icmp_type == 128 => true, // "new-ping6"
        _ => false, // "reject-9999", then the drop policy
    }
}

fn addr(m: &PacketMeta, a: &[u8; 16]) -> String {
    match m.family {
        Family::V4 => std::net::Ipv4Addr::new(a[0], a[1], a[2], a[3]).to_string(),
        _ => std::net::Ipv6Addr::from(*a).to_string(),
    }
}

/// How flows.tsv writes a flow's original tuple.
fn tuple(m: &PacketMeta) -> String {
    let (s, d) = (addr(m, &m.src), addr(m, &m.dst));
    if m.has_ports() {
        format!("src={s} dst={d} sport={} dport={}", m.sport, m.dport)
    } else {
        format!("src={s} dst={d} type={} code={} id={}", m.icmp_type, m.icmp_code, m.icmp_id)
    }
}

#[test]
fn linux_router_oracle() {
    let Some(dir) = rampart_testkit::shared("linux_router_oracle", "conntrack") else { return };
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();

    let mut packets = Vec::new();
    // A frame whose source is one of the router's ports is its own, not an ingress packet.
    ingress(&dir.join("client-side.pcap"), R0_MAC, true, &mut packets);
    ingress(&dir.join("server-side.pcap"), R1_MAC, false, &mut packets);
    packets.sort_by_key(|p| p.ts);

    // Ground truth: verdicts by (time, ingress side, src, dst).
    let mut truth = verdicts(&read("packets.tsv"));
    let timeline = read("timeline.tsv");
    let (b_from, b_to) =
        (timeline_ns(&timeline, "load ruleset B"), timeline_ns(&timeline, "load ruleset A"));

    let table = FlowTable::new(TableConfig {
        max_flows: 1 << 16,
        idle_timeout: rampart_wire::Span::from_nanos(u64::MAX / 4),
        close_linger: rampart_wire::Span::from_nanos(u64::MAX / 4),
        seed: 7,
        evict_protected: true,
    });
    let mut flows = Flows { table, index: HashMap::new() };
    let mut ct = Conntrack::new(Config::default());
    let mut deadline: HashMap<FlowId, rampart_wire::Timestamp> = HashMap::new();
    let mut opened: HashMap<FlowId, String> = HashMap::new();
    let mut finals: Vec<(String, Summary)> = Vec::new();
    let mut crafted: BTreeMap<u32, (Inspection, bool)> = BTreeMap::new();
    let (mut checked, mut forwarded, mut dropped, mut mismatches) = (0, 0, 0, Vec::new());
    let mut seen_ingress = 0;

    for p in &packets {
        // Every connection opened and not yet ended, as the tracker counts them.
        assert_eq!(ct.entries(), opened.len() as u64, "entries() before packet {}", p.ts);
        let m = PacketMeta::parse(rampart_wire::LinkType::Ethernet, &p.frame);
        let Some((key, side)) = FlowKey::from_meta(&m) else { continue };
        seen_ingress += 1;
        if to_router(&m) {
            continue;
        }
        let hash = flows.table.hash(&key);
        let mut found = flows.lookup(&key);
        if let Some(id) = found
            && deadline.get(&id).is_some_and(|&d| p.ts > d)
        {
            // The entry timed out: the flow ends before this packet.
            if let Some(s) = ct.retire(id) {
                finals.push((opened.remove(&id).unwrap(), s));
            }
            flows.end(id, EndReason::Idle);
            deadline.remove(&id);
            found = None;
        }
        let ctp = CtPacket::from_meta(&m, &p.frame, true);
        let insp = ct.inspect(found, side, &ctp, p.ts, |k, _| flows.lookup(k));
        let in_b = p.ts.as_nanos() >= b_from && p.ts.as_nanos() < b_to;
        let accepted = forward(insp.state, &m, p.from_client, in_b);

        let t = tag(&p.frame, usize::from(m.l3_offset));
        if (0xc0d1..=0xc0de).contains(&t) {
            crafted.insert(t, (insp, accepted));
        }

        let (id, ended) = if accepted || found.is_some() {
            let info = PacketInfo {
                key,
                side,
                hash,
                ts: p.ts,
                wire_len: p.frame.len() as u32,
                tcp_flags: m.tcp.flags,
            };
            let (id, ended) = flows.track(&info);
            (Some(id), ended)
        } else {
            (None, Vec::new())
        };
        for e in ended {
            if let Some(s) = ct.retire(e.id) {
                finals.push((opened.remove(&e.id).unwrap(), s));
            }
        }
        let out = ct.commit(&insp, accepted, id);
        if let Some((eid, s)) = out.ended {
            finals.push((opened.remove(&eid).unwrap(), s));
            deadline.remove(&eid);
        }
        if let Some(eid) = out.id {
            if insp.creates() {
                opened.insert(eid, tuple(&m));
            }
            if let Some(t) = out.refresh.timeout(p.ts, || deadline.get(&eid).copied()) {
                deadline.insert(eid, p.ts + t);
            }
        }
        if out.ended.is_some()
            && out.id.is_none()
            && let Some(eid) = id
        {
            // The entry is gone (a reset answered first): so is the flow.
            flows.end(eid, EndReason::Rst);
        }

        let k = (micros(p.ts.as_nanos()), p.from_client, addr(&m, &m.src), addr(&m, &m.dst));
        let Some(want) = truth.get_mut(&k).and_then(VecDeque::pop_front) else { continue };
        if want != "forwarded" && want != "dropped" {
            continue;
        }
        checked += 1;
        let got = if accepted { "forwarded" } else { "dropped" };
        forwarded += usize::from(accepted);
        dropped += usize::from(!accepted);
        if got != want {
            mismatches.push(format!("{} {} {}: {got}, Linux {want} ({:?})", k.0, k.2, k.3, insp));
        }
    }
    for id in flows.table.live_in_order() {
        if let Some(s) = ct.retire(id) {
            finals.push((opened.remove(&id).unwrap(), s));
        }
    }

    // The port addresses select the ingress packets (the files' ARP frames have no flow).
    assert_eq!(seen_ingress, 4728);
    assert!(
        mismatches.is_empty(),
        "{} verdicts differ:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert_eq!((checked, forwarded, dropped), (4709, 4688, 21));

    // Crafted packets: the kernel's reasons, with its logged values.
    let logged = invalid_reasons(&read("invalid-log.txt"));
    let expect: [(u32, Option<Reason>); 14] = [
        (0xc0d1, Some(Reason::TcpFlags)),
        (0xc0d2, Some(Reason::BadChecksum)),
        (0xc0d3, Some(Reason::TcpInvalidNew)),
        (0xc0d4, Some(Reason::TcpFlags)),
        (0xc0d5, None),
        (0xc0d6, Some(Reason::BadChecksum)),
        (0xc0d7, Some(Reason::IcmpNotNew)),
        (0xc0d8, Some(Reason::IcmpOrphan)),
        (0xc0d9, Some(Reason::TcpFlags)),
        (0xc0da, None),
        (0xc0db, Some(Reason::SeqOver)),
        (0xc0dc, Some(Reason::AckOver)),
        (0xc0dd, Some(Reason::SeqOver)),
        (0xc0de, None),
    ];
    let crafted_file = read("crafted.tsv");
    let crafted_rows: Vec<&str> = crafted_file.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(crafted_rows.len(), expect.len());
    for ((tag, reason), row) in expect.iter().zip(&crafted_rows) {
        let (insp, accepted) =
            crafted.get(tag).unwrap_or_else(|| panic!("crafted {tag:#x} not replayed"));
        assert_eq!(insp.reason, *reason, "{row}");
        let linux_says_invalid = row.split('\t').nth(4).unwrap().starts_with("invalid");
        assert_eq!(insp.state == CtState::Invalid, linux_says_invalid, "{row}");
        assert_eq!(*accepted, !linux_says_invalid, "{row}");
        if let Some(msg) = logged.get(tag) {
            assert_eq!(insp.message().as_deref(), Some(msg.as_str()), "{row}");
        }
    }
    assert_eq!(logged.len(), 9, "every logged reason was compared");
    assert_eq!(crafted[&0xc0d5].0.state, CtState::New, "a bare ACK is picked up as new");
    assert_eq!(crafted[&0xc0de].0.state, CtState::Established);

    // conntrack -S: invalid rose by 10 and error by 1 over the run.
    let st = ct.stats();
    assert_eq!((st.invalid, st.error), (10, 1), "{st:?}");

    // Every flow's final state and flags.
    let mut ours: HashMap<String, Vec<Summary>> = HashMap::new();
    for (t, s) in finals {
        ours.entry(t).or_default().push(s);
    }
    let mut flows = 0;
    for line in read("flows.tsv").lines().skip(1) {
        let c: Vec<&str> = line.split('\t').collect();
        let (tuple, states, assured, reply) = (c[3], c[4], c[6] == "yes", c[7] == "yes");
        let got = ours
            .get(tuple)
            .and_then(|v| v.first())
            .unwrap_or_else(|| panic!("no entry for {tuple}"));
        let last = states.rsplit('>').next().unwrap();
        let want_tcp = (last != "-").then_some(last);
        assert_eq!(got.tcp_state.map(|s| s.name()), want_tcp, "{line}");
        assert_eq!((got.assured, got.seen_reply), (assured, reply), "{line}");
        flows += 1;
    }
    assert_eq!(flows, 20);
}
