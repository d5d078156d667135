//! OPC UA binary (UA TCP): a message type (`HEL`, `ACK`, `OPN`, `MSG`, `CLO`, `ERR`), a chunk
//! type, and a little-endian size equal to the message's.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "OPC-UA";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(b"HAOMCER"),
    evidence: "a message type `HEL`, `ACK`, `OPN`, `MSG`, `CLO` or `ERR`, a chunk type `F`, `C` \
               or `A`, and a size equal to the segment's (or larger, continued)",
    source: "OPC 10000-6 (UA Part 6: Mappings), section 7.1.2 (message header)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 8 {
        return Seen::No;
    }
    let kind = matches!(&b[..3], b"HEL" | b"ACK" | b"OPN" | b"MSG" | b"CLO" | b"ERR");
    let size = super::le32(b, 4).unwrap_or(0) as usize;
    if kind && matches!(b[3], b'F' | b'C' | b'A') && size >= 8 && size >= b.len() {
        // HEL and ACK are final and whole.
        if (&b[..3] == b"HEL" || &b[..3] == b"ACK") && size != b.len() {
            return Seen::No;
        }
        return super::is(&NAME);
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn hello() {
        let mut m = b"HELF".to_vec();
        m.extend_from_slice(&[32, 0, 0, 0]);
        m.resize(32, 0);
        assert!(matches!(run(detect, &m, [40000, 4840]), Seen::Is(_)));
        m[4] = 33;
        assert_eq!(run(detect, &m, [40000, 4840]), Seen::No);
        robust(detect, &m, [1, 4840]);
    }
}
