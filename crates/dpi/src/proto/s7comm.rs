//! Siemens S7 communication over ISO-on-TCP: TPKT, a COTP data TPDU, then the S7comm
//! protocol id (0x32) or S7comm-plus (0x72) with a defined message type.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "S7Comm";
const PLUS: &str = "S7CommPlus";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME), crate::Proto::Other(&PLUS)],
    transport: Transport::Tcp,
    first: First::Bytes(&[3]),
    evidence: "TPKT (version 3, length equal to the segment's), a COTP DT TPDU, then protocol \
               id 0x32 with a message type 1, 2, 3 or 7, or 0x72 with version 1-3",
    source: "RFC 1006 (TPKT), ISO 8073 (COTP), Wireshark's S7comm and S7comm-plus dissector \
             documentation",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 10 || b[0] != 3 || b[1] != 0 || be16(b, 2) != Some(b.len() as u16) {
        return Seen::No;
    }
    // COTP DT: length indicator 2, code 0xf0, then the EOT/number byte.
    if b[4] != 2 || b[5] != 0xf0 {
        return Seen::No;
    }
    match (b[7], b.get(8)) {
        (0x32, Some(1 | 2 | 3 | 7)) => super::is(&NAME),
        (0x72, Some(1..=3)) => super::is(&PLUS),
        _ => Seen::No,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn setup_communication() {
        let m = [
            3, 0, 0, 25, 2, 0xf0, 0x80, 0x32, 1, 0, 0, 0, 0, 0, 8, 0, 0, 0xf0, 0, 0, 1, 0, 1, 1,
            0xe0,
        ];
        assert!(matches!(run(detect, &m, [40000, 102]), Seen::Is(_)));
        assert_eq!(run(detect, &m[..24], [40000, 102]), Seen::No);
        robust(detect, &m, [1, 102]);
    }
}
