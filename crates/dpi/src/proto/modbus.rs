//! Modbus/TCP: the MBAP header (transaction, protocol id 0, length, unit) and a function
//! code; a segment holds whole ADUs.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "Modbus";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Any,
    evidence: "ADUs that fill the segment exactly, each with protocol id 0, a length of \
               2-254 and a public function code (or its exception), on port 502 or in both \
               directions",
    source: "Modbus Messaging on TCP/IP Implementation Guide v1.0b; Modbus Application \
             Protocol Specification v1.1b3",
    detect,
};

fn function(code: u8) -> bool {
    matches!(code & 0x7f, 1..=8 | 11 | 12 | 15..=17 | 20..=24 | 43 | 90)
}

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let mut at = 0;
    let mut tid = 0;
    while at < b.len() {
        let (Some(proto), Some(len)) = (be16(b, at + 2), be16(b, at + 4)) else {
            return Seen::No;
        };
        let len = usize::from(len);
        if proto != 0 || !(2..=254).contains(&len) || at + 6 + len > b.len() {
            return Seen::No;
        }
        if !b.get(at + 7).is_some_and(|&f| function(f)) {
            return Seen::No;
        }
        tid = u32::from(be16(b, at).unwrap_or(0));
        at += 6 + len;
    }
    let _ = tid;
    if p.port(502) { super::is(&NAME) } else { super::maybe(&NAME, 0) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn read_holding_registers() {
        let m = [0, 1, 0, 0, 0, 6, 1, 3, 0, 0, 0, 10];
        assert!(matches!(run(detect, &m, [40000, 502]), Seen::Is(_)));
        assert!(matches!(run(detect, &m, [40000, 5020]), Seen::Maybe(..)));
        assert_eq!(run(detect, &m[..11], [40000, 502]), Seen::No);
        let mut bad = m;
        bad[7] = 0x50;
        assert_eq!(run(detect, &bad, [40000, 502]), Seen::No);
        robust(detect, &m, [1, 502]);
    }
}
