//! Nest's Weave protocol over TCP (port 11095, which IANA registers for it), which nDPI
//! names after the service seen on it, NestLogSink.
//!
//! Over TCP each Weave message is prefixed by its 16-bit little-endian length. The message
//! header is a 16-bit little-endian field (message version in the top four bits, 1 or 2;
//! encryption type in bits 4-7; flags saying whether the destination (0x0100) and source
//! (0x0200) node ids follow), a 32-bit message id, then the 64-bit node ids that are
//! present. A reply carries the same two node ids, swapped.
//!
//! Sources: openweave-core (`WeaveMessageLayer.h`: header field masks, flags, version and
//! encryption types; its TCP framing), IANA's port registry; nDPI's `nest_log_sink.c`
//! (the port, and three matching messages before a label).

use crate::registry::{Detector, First, Transport};
use crate::{Label, Meta, Packet, Proto, Seen};

const NAME: &str = "NestLogSink";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Any,
    evidence: "on port 11095, messages whose length prefix is the segment's, with message \
               version 1 or 2, a defined encryption type and room for the node ids the flags \
               announce; three such messages, both sides, the same pair of node ids",
    source: "openweave-core (WeaveMessageLayer.h, TCP framing), IANA port registry, nDPI's \
             nest_log_sink.c",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !p.port(11095) || b.len() < 8 {
        return Seen::No;
    }
    let len = usize::from(u16::from_le_bytes([b[0], b[1]]));
    let field = u16::from_le_bytes([b[2], b[3]]);
    let version = field >> 12;
    let encryption = (field >> 4) & 0xf;
    let ids = usize::from(field & 0x0100 != 0) + usize::from(field & 0x0200 != 0);
    if len + 2 != b.len() || !(1..=2).contains(&version) || encryption > 4 || len < 6 + 8 * ids {
        return Seen::No;
    }
    // The node ids, the same pair whichever side sends (XOR is symmetric).
    let id = |at: usize| {
        b.get(at..at + 8).map_or(0, |s| {
            let v = u64::from_le_bytes(s.try_into().unwrap_or([0; 8]));
            (v ^ (v >> 32)) as u32
        })
    };
    let key = if ids == 2 { id(8) ^ id(16) } else { 0 };
    Seen::Maybe(Label { master: Proto::Other(&NAME), app: None }, key, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};
    use crate::{Config, FlowDpi};

    fn message(field: u16, src: u64, dst: u64, body: usize) -> Vec<u8> {
        let mut m = field.to_le_bytes().to_vec();
        m.extend_from_slice(&0x0308u32.to_le_bytes());
        m.extend_from_slice(&src.to_le_bytes());
        m.extend_from_slice(&dst.to_le_bytes());
        m.extend((0..body).map(|i| i as u8));
        let mut out = (m.len() as u16).to_le_bytes().to_vec();
        out.extend_from_slice(&m);
        out
    }

    #[test]
    fn messages_between_two_nodes() {
        let (a, b) = (0x18b4_3000_0027_9e36u64, 0x18b4_3002_0000_0004u64);
        let m = message(0x1300, a, b, 40);
        assert!(matches!(run(detect, &m, [63342, 11095]), Seen::Maybe(..)));
        assert_eq!(run(detect, &m, [63342, 11096]), Seen::No);
        assert_eq!(run(detect, &m[..m.len() - 1], [63342, 11095]), Seen::No);
        assert_eq!(run(detect, &message(0x3300, a, b, 40), [63342, 11095]), Seen::No);
        robust(detect, &m, [63342, 11095]);
        // A conversation: the reply swaps the node ids.
        let cfg = Config::default();
        let mut f = FlowDpi::new(6);
        f.feed(&cfg, true, [63342, 11095], &m);
        f.feed(&cfg, false, [63342, 11095], &message(0x1300, b, a, 60));
        f.feed(&cfg, true, [63342, 11095], &message(0x1310, a, b, 10));
        assert_eq!(f.label().master.name(), "NestLogSink");
    }
}
