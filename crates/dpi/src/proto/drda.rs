//! DRDA (IBM Db2's distributed relational database protocol): DDM data stream structures
//! with the 0xD0 magic, a format byte, and a length that fits, carrying a known code point.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "DRDA";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0]),
    evidence: "a DSS header (length, magic 0xD0, a request/reply/object format 1-5, a \
               correlation id) whose inner DDM length is the outer minus 6, and a code point \
               of the DDM command or reply range (0x1xxx or 0x2xxx)",
    source: "The Open Group, DRDA Version 5, Volume 3: Distributed Data Management (DSS)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 10 || b[2] != 0xd0 || !(1..=5).contains(&(b[3] & 0x0f)) {
        return Seen::No;
    }
    let outer = usize::from(be16(b, 0).unwrap_or(0));
    let inner = usize::from(be16(b, 6).unwrap_or(0));
    let code = be16(b, 8).unwrap_or(0);
    if outer >= 10 && outer <= b.len() && inner + 6 == outer && matches!(code >> 12, 1 | 2) {
        return super::is(&NAME);
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn exchange_server_attributes() {
        let m = [0, 10, 0xd0, 0x41, 0, 1, 0, 4, 0x10, 0x41];
        assert!(matches!(run(detect, &m, [40000, 50000]), Seen::Is(_)));
        assert_eq!(run(detect, &[0, 10, 0xd0, 0x41, 0, 1, 0, 5, 0x10, 0x41], [1, 2]), Seen::No);
        robust(detect, &m, [40000, 50000]);
    }
}
