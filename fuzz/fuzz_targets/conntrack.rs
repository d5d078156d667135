//! Connection tracking fed arbitrary packets: records of (a control byte, then either a raw
//! IP packet of up to 255 bytes, or a TCP segment between two fixed endpoints whose flags,
//! sequence numbers, window, options and length come from the input), through a flow table
//! and the tracker, the rule set's verdict taken from the control byte. No input may panic,
//! and the answers must hang together: an invalid packet never opens an entry, only an
//! accepted one does, entries belong to live flows, related packets name a flow that has an
//! entry, and the counters never exceed the packets.
#![no_main]

use rampart_conntrack::{Config, Conntrack, CtPacket, CtState, Refresh};
use std::collections::HashMap;

use rampart_flow::{EndReason, FlowId, FlowKey, FlowTable, PacketInfo, TableConfig};
use rampart_wire::{LinkType, PacketMeta};

fn segment(b: &[u8], client: bool) -> Vec<u8> {
    let get = |i: usize| b.get(i).copied().unwrap_or(0);
    let (src, dst, sp, dp) =
        if client { ([10, 0, 0, 1], [10, 0, 0, 2], 40000u16, 80u16) } else { ([10, 0, 0, 2], [10, 0, 0, 1], 80, 40000) };
    let opts: Vec<u8> = match get(12) % 4 {
        0 => vec![],
        1 => vec![1, 3, 3, get(13), 1, 1, 4, 2],
        2 => vec![1, 1, 5, 10, get(0), get(1), get(2), get(3), get(4), get(5), get(6), get(7)],
        _ => vec![2, 4, 5, 180],
    };
    let len = usize::from(get(14) % 64);
    let mut t = Vec::new();
    t.extend_from_slice(&sp.to_be_bytes());
    t.extend_from_slice(&dp.to_be_bytes());
    t.extend_from_slice(&[get(0), get(1), get(2), get(3), get(4), get(5), get(6), get(7)]);
    t.push((((20 + opts.len()) / 4) as u8) << 4);
    t.push(get(8));
    t.extend_from_slice(&[get(9), get(10), 0, 0, 0, 0]);
    t.extend_from_slice(&opts);
    t.resize(t.len() + len, 0x61);
    let mut a = [0u8; 16];
    let mut z = [0u8; 16];
    a[..4].copy_from_slice(&src);
    z[..4].copy_from_slice(&dst);
    let acc = rampart_wire::check::sum(
        &t,
        rampart_wire::check::pseudo_header(rampart_wire::Family::V4, &a, &z, 6, t.len() as u32),
    );
    let c = if get(11) == 0xff { 0x1234 } else { rampart_wire::check::finish(acc) };
    t[16..18].copy_from_slice(&c.to_be_bytes());
    let mut ip = vec![0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 6, 0, 0];
    ip[2..4].copy_from_slice(&((20 + t.len()) as u16).to_be_bytes());
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let c = rampart_wire::check::finish(rampart_wire::check::sum(&ip, 0));
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    ip.extend_from_slice(&t);
    ip
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&knobs, mut rest)) = data.split_first() else { return };
    let cfg = Config {
        tcp_loose: knobs & 1 != 0,
        tcp_be_liberal: knobs & 2 != 0,
        tcp_ignore_invalid_rst: knobs & 4 != 0,
        checksum: knobs & 8 != 0,
        ..Config::default()
    };
    let mut table = FlowTable::new(TableConfig { max_flows: 16, ..TableConfig::default() });
    // The table's keys, for looking a flow up without inserting it.
    let mut index: HashMap<FlowKey, FlowId> = HashMap::new();
    let forget = |table: &mut FlowTable, index: &mut HashMap<FlowKey, FlowId>, ct: &mut Conntrack| {
        for e in table.take_ended().collect::<Vec<_>>() {
            if index.get(&e.flow.key) == Some(&e.id) {
                index.remove(&e.flow.key);
            }
            ct.retire(e.id);
        }
    };
    let mut ct = Conntrack::new(cfg);
    let mut ts = rampart_wire::Timestamp::from_nanos(1_000_000_000);
    let mut packets = 0u64;
    while let Some((&ctl, tail)) = rest.split_first() {
        let frame = if ctl & 1 == 0 {
            let n = usize::from(tail.first().copied().unwrap_or(0)).min(tail.len().saturating_sub(1));
            let f = tail.get(1..1 + n).unwrap_or_default().to_vec();
            rest = tail.get(1 + n..).unwrap_or_default();
            f
        } else {
            let f = segment(tail, ctl & 2 != 0);
            rest = tail.get(15..).unwrap_or_default();
            f
        };
        ts += rampart_wire::Span::from_millis(u64::from(ctl >> 4) * 250);
        let meta = PacketMeta::parse(LinkType::Raw, &frame);
        let Some((key, side)) = FlowKey::from_meta(&meta) else { continue };
        packets += 1;
        let p = CtPacket::from_meta(&meta, &frame, cfg.checksum);
        let hash = table.hash(&key);
        let found = index.get(&key).copied();
        let insp = ct.inspect(found, side, &p, ts, |k, _| index.get(k).copied());
        if insp.state == CtState::Invalid {
            assert!(!insp.creates());
            assert!(insp.reason.is_some());
        }
        if insp.state == CtState::Related {
            let id = insp.related_to.expect("related names its flow");
            assert!(ct.entry(id).is_some());
        }
        let accepted = ctl & 4 == 0;
        let id = (accepted || found.is_some()).then(|| {
            let info = PacketInfo { key, side, hash, ts, wire_len: frame.len() as u32, tcp_flags: meta.tcp.flags };
            let t = table.track(&info);
            t.id
        });
        forget(&mut table, &mut index, &mut ct);
        if let Some(id) = id {
            index.insert(key, id);
        }
        let out = ct.commit(&insp, accepted, id);
        if let Some(eid) = out.id {
            assert!(table.get(eid).is_some(), "entries belong to live flows");
            assert!(ct.entry(eid).is_some());
            assert!(ct.timeout(eid).is_some());
            if let Refresh::Set(t) | Refresh::Lower(t) = out.refresh {
                assert!(!t.is_zero());
            }
        }
        if !accepted && insp.creates() {
            assert!(out.id.is_none() || insp.entry_of().is_some());
        }
        if let Some((eid, _)) = out.ended
            && out.id.is_none()
        {
            table.end(eid, EndReason::Rst);
            forget(&mut table, &mut index, &mut ct);
        }
        let s = ct.stats();
        assert!(s.invalid + s.error <= packets);
        assert!(s.insert <= packets);
    }
});
