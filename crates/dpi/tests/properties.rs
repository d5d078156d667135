//! Properties of the detectors on generated input: a TLS ClientHello gives its server name
//! however it is split over TCP segments; DNS queries give their name; nothing panics on
//! arbitrary bytes, and a finished flow stays as it is; and the flow table's pooled state
//! ([`DpiTable`]) labels every flow as one [`FlowDpi`] per flow does.

use proptest::prelude::*;
use std::collections::BTreeMap;

use rampart_dpi::{By, Config, DpiTable, FlowDpi, FlowInfo, Proto};

fn hello(name: &str) -> Vec<u8> {
    let n = name.as_bytes();
    let mut ext = vec![0, 0];
    ext.extend_from_slice(&((n.len() + 5) as u16).to_be_bytes());
    ext.extend_from_slice(&((n.len() + 3) as u16).to_be_bytes());
    ext.push(0);
    ext.extend_from_slice(&(n.len() as u16).to_be_bytes());
    ext.extend_from_slice(n);
    let mut body = vec![3, 3];
    body.extend_from_slice(&[7; 32]);
    body.extend_from_slice(&[0, 0, 2, 0x13, 0x01, 1, 0]);
    body.extend_from_slice(&(ext.len() as u16).to_be_bytes());
    body.extend_from_slice(&ext);
    let mut hs = vec![1, 0];
    hs.extend_from_slice(&(body.len() as u16).to_be_bytes());
    hs.extend_from_slice(&body);
    let mut rec = vec![0x16, 3, 1];
    rec.extend_from_slice(&(hs.len() as u16).to_be_bytes());
    rec.extend_from_slice(&hs);
    rec
}

fn host() -> impl Strategy<Value = String> {
    prop::collection::vec("[a-z0-9]{1,12}", 1..5).prop_map(|parts| parts.join("."))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn tls_server_names_survive_any_split(name in host(), cut in any::<prop::sample::Index>()) {
        let rec = hello(&name);
        let at = cut.index(rec.len() + 1);
        let mut f = FlowDpi::new(6);
        let cfg = Config::default();
        let ports = [50000, 443];
        let mut done = f.feed(&cfg, true, ports, &rec[..at]);
        if !done {
            done = f.feed(&cfg, true, ports, &rec[at..]);
        }
        prop_assert!(done);
        prop_assert_eq!(f.label().master, Proto::Tls);
        prop_assert_eq!(f.by(), By::Dpi);
        prop_assert_eq!(f.meta().sni.as_deref(), Some(name.as_str()));
    }

    #[test]
    fn dns_query_names(name in host()) {
        let mut q = vec![0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        for part in name.split('.') {
            q.push(part.len() as u8);
            q.extend_from_slice(part.as_bytes());
        }
        q.extend_from_slice(&[0, 0, 1, 0, 1]);
        let mut f = FlowDpi::new(17);
        prop_assert!(f.feed(&Config::default(), true, [40000, 53], &q));
        prop_assert_eq!(f.label().master, Proto::Dns);
        prop_assert_eq!(f.meta().dns_query.as_deref(), Some(name.as_str()));
    }

    #[test]
    fn arbitrary_payloads(
        l4 in prop_oneof![Just(6u8), Just(17u8)],
        ports in (any::<u16>(), prop_oneof![Just(53u16), Just(80), Just(443), Just(123), Just(5353), any::<u16>()]),
        packets in prop::collection::vec((any::<bool>(), prop::collection::vec(any::<u8>(), 0..300)), 0..12),
    ) {
        let cfg = Config::default();
        let ports = [ports.0, ports.1];
        let mut f = FlowDpi::new(l4);
        let mut finished = None;
        for (dir, p) in &packets {
            let done = f.feed(&cfg, *dir, ports, p);
            match finished {
                Some(label) => prop_assert!(done && f.label() == label),
                None if done => finished = Some(f.label()),
                None => {}
            }
        }
        f.give_up(ports);
        prop_assert!(f.is_done());
        let packets_with_payload = packets.iter().filter(|(_, p)| !p.is_empty()).count();
        let limit = usize::from(if l4 == 6 { cfg.tcp_packets } else { cfg.udp_packets });
        // Twice the budget at most, for a flow completing heuristic evidence.
        if packets_with_payload >= 2 * limit {
            prop_assert!(finished.is_some(), "the budget ends inspection");
        }
    }
}

/// One step of a flow table's life, for the [`DpiTable`] property.
#[derive(Clone, Debug)]
enum Step {
    /// A payload for the flow in a slot (its kind picks protocol and ports).
    Feed { slot: u32, kind: u8, forward: bool, payload: Vec<u8> },
    /// The flow in a slot ends.
    Retire { slot: u32, kind: u8 },
}

fn payload() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        host().prop_map(|h| hello(&h)),
        Just(b"SSH-2.0-OpenSSH_9.6\r\n".to_vec()),
        Just(b"GET / HTTP/1.1\r\nHost: www.netflix.com\r\n\r\n".to_vec()),
        Just(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x01a\x00\x00\x01\x00\x01".to_vec()),
        prop::collection::vec(any::<u8>(), 0..64),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0u32..6, 0u8..4, any::<bool>(), payload())
            .prop_map(|(slot, kind, forward, payload)| Step::Feed { slot, kind, forward, payload }),
        1 => (0u32..6, 0u8..4).prop_map(|(slot, kind)| Step::Retire { slot, kind }),
    ]
}

/// Protocol and ports of a flow kind: TCP to 443 or 40001, UDP to 53 or 40001.
fn flow_of(kind: u8) -> FlowInfo<'static> {
    const SERVER: [u8; 16] = [192, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    let (l4, port) = match kind {
        0 => (6, 443),
        1 => (6, 40001),
        2 => (17, 53),
        _ => (17, 40001),
    };
    FlowInfo { l4, ports: [50000, port], family: rampart_flow::IpFamily::V4, responder: &SERVER }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The table's pooled, slot-indexed state gives every flow exactly the label, source and
    /// metadata one `FlowDpi` per flow gives (the oracle), whatever the interleaving of
    /// flows, slot reuse and ends.
    #[test]
    fn dpi_table_agrees_with_one_state_per_flow(steps in prop::collection::vec(step(), 1..80)) {
        let cfg = Config { tcp_packets: 3, udp_packets: 2, ..Config::default() };
        let mut table = DpiTable::new(cfg);
        // The oracle: the live flow in each slot, with its kind.
        let mut oracle: BTreeMap<u32, (u8, FlowDpi)> = BTreeMap::new();
        let end = |f: &mut FlowDpi, info: &FlowInfo<'_>| {
            f.give_up(info.ports);
            let meta = f.meta().clone();
            (f.label(), f.by(), meta)
        };
        for s in steps {
            match s {
                Step::Feed { slot, kind, forward, payload } => {
                    // A slot keeps the kind its flow started with.
                    let (kind, f) = oracle.entry(slot).or_insert_with(|| {
                        let info = flow_of(kind);
                        let mut f = FlowDpi::new(info.l4);
                        f.set_responder(info.family, info.responder);
                        (kind, f)
                    });
                    let info = flow_of(*kind);
                    f.feed(&cfg, forward, info.ports, &payload);
                    table.feed(slot, &info, forward, &payload);
                    prop_assert_eq!(table.wants(slot), !f.is_done());
                }
                Step::Retire { slot, kind } => {
                    let (kind, mut f) = oracle.remove(&slot).unwrap_or_else(|| {
                        let info = flow_of(kind);
                        let mut f = FlowDpi::new(info.l4);
                        f.set_responder(info.family, info.responder);
                        (kind, f)
                    });
                    let info = flow_of(kind);
                    let want = end(&mut f, &info);
                    let got = table.retire(slot, &info);
                    prop_assert_eq!((got.label, got.by, got.meta().clone()), want);
                    prop_assert!(table.wants(slot));
                }
            }
        }
        let inspecting = oracle.values().filter(|(_, f)| !f.is_done()).count();
        prop_assert!(table.inspecting() <= inspecting);
    }
}
