//! Properties of the detectors on generated input: a TLS ClientHello gives its server name
//! however it is split over TCP segments; DNS queries give their name; nothing panics on
//! arbitrary bytes, and a finished flow stays as it is.

use proptest::prelude::*;
use rampart_dpi::{By, Config, FlowDpi, Proto};

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
        if packets_with_payload >= limit {
            prop_assert!(finished.is_some(), "the budget ends inspection");
        }
    }
}
