//! Cassandra's native (CQL binary) protocol: a frame header of version 3-5 (0x80 set on
//! responses), flags, stream, a defined opcode and a body length equal to the rest.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be32};

const NAME: &str = "Cassandra";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[3, 4, 5, 0x83, 0x84, 0x85]),
    evidence: "protocol version 3-5 (request, or response with the high bit), flags < 0x20, an \
               opcode 0x00-0x10 fitting the direction, and a body length equal to the rest",
    source: "Apache Cassandra native protocol specification v4 (native_protocol_v4.spec)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 9 || b[1] >= 0x20 {
        return Seen::No;
    }
    let response = b[0] & 0x80 != 0;
    let op_ok = if response {
        matches!(b[4], 0x00 | 0x02 | 0x03 | 0x06 | 0x08 | 0x0c | 0x0e | 0x10)
    } else {
        matches!(b[4], 0x01 | 0x05 | 0x07 | 0x09 | 0x0a | 0x0b | 0x0d | 0x0f)
    };
    if op_ok && be32(b, 5).is_some_and(|l| l as usize + 9 == b.len()) {
        return super::is(&NAME);
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn options() {
        let m = [4, 0, 0, 1, 5, 0, 0, 0, 0];
        assert!(matches!(run(detect, &m, [40000, 9042]), Seen::Is(_)));
        assert_eq!(run(detect, &[4, 0, 0, 1, 5, 0, 0, 0, 1], [40000, 9042]), Seen::No);
        robust(detect, &m, [1, 9042]);
    }
}
