//! A stream of frames through both RTT engines: input is a sequence of records (2-byte length,
//! 1-byte time step in ms, Ethernet frame). Neither engine may panic; every compat sample's
//! flow must be one the packets carried, and no default-mode sample may be negative or exceed
//! the time the stream covered.
#![no_main]

use rampart_flow::{FlowKey, FlowTable, PacketInfo, TableConfig};
use rampart_rtt::{CompatConfig, PpingCompat, RttConfig, RttInput, RttStage, compat_view};
use rampart_wire::{LinkType, PacketMeta, Span, Timestamp};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut pping = PpingCompat::new(CompatConfig { tsval_max_age: 0.05, ..CompatConfig::default() });
    let mut table = FlowTable::new(TableConfig { max_flows: 4, ..TableConfig::default() });
    let mut stage = RttStage::new(RttConfig { tsval_max_age: Span::from_millis(50), ..RttConfig::default() });
    let mut keys = Vec::new();
    let mut now = Timestamp::from_nanos(1_700_000_000_000_000_000);
    let start = now;
    let mut rest = data;
    while rest.len() >= 3 {
        let len = usize::from(u16::from_le_bytes([rest[0], rest[1]])) % 200;
        now += Span::from_millis(u64::from(rest[2]));
        rest = &rest[3..];
        let frame = &rest[..len.min(rest.len())];
        rest = &rest[frame.len()..];
        let meta = PacketMeta::parse(LinkType::Ethernet, frame);
        let view = compat_view(LinkType::Ethernet, frame, &meta);
        if let Some((key, _)) = FlowKey::from_meta(&meta) {
            keys.push(key);
        }
        let step = pping.packet(now, &view);
        if step.sample {
            let s = pping.sample().unwrap();
            assert!(keys.contains(&s.key));
        }
        let Some((key, side)) = FlowKey::from_meta(&meta) else { continue };
        let Some(input) = RttInput::from_meta(&meta, frame.len() as u32) else { continue };
        let p = PacketInfo { key, side, hash: table.hash(&key), ts: now, wire_len: 0, tcp_flags: meta.tcp.flags };
        let t = table.track(&p);
        for e in table.take_ended() {
            let _ = stage.retire(e.id);
        }
        if let Some(s) = stage.observe_packet(t.id, t.new, &key, side, t.dir, now, &input) {
            assert!(s.rtt <= now - start && s.min <= s.rtt);
        }
    }
});
