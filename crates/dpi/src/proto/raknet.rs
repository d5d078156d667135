//! RakNet (game networking over UDP): offline messages carry a fixed 16-byte magic
//! ("OFFLINE_MESSAGE_DATA_ID") at a position set by the message id.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "RakNet";

const MAGIC: [u8; 16] = [
    0x00, 0xff, 0xff, 0x00, 0xfe, 0xfe, 0xfe, 0xfe, 0xfd, 0xfd, 0xfd, 0xfd, 0x12, 0x34, 0x56, 0x78,
];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[
        0x01, 0x02, 0x05, 0x06, 0x07, 0x08, 0x1c, 0x19, 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86,
        0x87, 0x88, 0x89, 0x8a, 0x8b, 0x8c, 0x8d, 0x8e, 0x8f, 0xa0, 0xc0,
    ]),
    evidence: "an offline message id (ping, pong, open-connection request/reply, \
               incompatible version) with the 16-byte offline magic where that id puts it; or \
               connected frame sets (a valid datagram, a reliability 0-7 and a frame length \
               that fits) whose 24-bit sequence numbers advance, three from a side or from both; \
               or acknowledgements (ACK 0xc0, NAK 0xa0: a record count and single or range \
               records that end exactly with the datagram), three",
    source: "RakNet's MessageIdentifiers.h and the documented offline message layouts",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let at = match b.first() {
        // Unconnected ping: id, time (8), magic.
        Some(0x01 | 0x02) => 9,
        // Open connection request 1 and 2, replies, incompatible version: id, magic.
        Some(0x05..=0x08) => 1,
        // Incompatible protocol version: id, version, magic.
        Some(0x19) => 2,
        // Unconnected pong: id, time (8), server guid (8), magic.
        Some(0x1c) => 17,
        // A frame set: flags, a 24-bit little-endian sequence number, then a frame with its
        // reliability and a length in bits.
        Some(0x80..=0x8f) if b.len() >= 8 => {
            let reliability = b[4] >> 5;
            let bytes = usize::from(crate::be16(b, 5).unwrap_or(0)).div_ceil(8);
            if reliability <= 7 && bytes > 0 && 7 + bytes <= b.len() {
                let seq = u16::from_le_bytes([b[1], b[2]]);
                return Seen::Maybe(
                    crate::Label { master: crate::Proto::Other(&NAME), app: None },
                    0,
                    Some(seq),
                );
            }
            return Seen::No;
        }
        // ACK and NAK: a record count, then records (1 and a 24-bit sequence number, or 0
        // and a range of two) that end exactly with the datagram.
        Some(0xa0 | 0xc0) => {
            let count = crate::be16(b, 1).unwrap_or(0);
            let mut at = 3;
            for _ in 0..count {
                at += match b.get(at) {
                    Some(1) => 4,
                    Some(0) => 7,
                    _ => return Seen::No,
                };
            }
            if count == 0 || at != b.len() {
                return Seen::No;
            }
            return Seen::Maybe(
                crate::Label { master: crate::Proto::Other(&NAME), app: None },
                0,
                None,
            );
        }
        _ => return Seen::No,
    };
    if b.get(at..at + 16) == Some(&MAGIC[..]) { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn acknowledgements() {
        // One range record (1-2), and five single records.
        let range = [0xc0, 0, 1, 0, 1, 0, 0, 2, 0, 0];
        assert!(matches!(run(detect, &range, [60005, 32951]), Seen::Maybe(..)));
        let mut singles = vec![0xa0, 0, 5];
        for n in 1..=5u8 {
            singles.extend_from_slice(&[1, n, 0, 0]);
        }
        assert!(matches!(run(detect, &singles, [1, 2]), Seen::Maybe(..)));
        robust(detect, &singles, [1, 2]);
        assert_eq!(run(detect, &range[..9], [1, 2]), Seen::No);
        assert_eq!(run(detect, &[0xc0, 0, 0], [1, 2]), Seen::No);
        let mut kind = range;
        kind[3] = 2;
        assert_eq!(run(detect, &kind, [1, 2]), Seen::No);
    }

    #[test]
    fn open_connection_request() {
        let mut m = vec![0x05];
        m.extend_from_slice(&MAGIC);
        m.push(10);
        m.resize(1400, 0);
        assert!(matches!(run(detect, &m, [40000, 19132]), Seen::Is(_)));
        m[5] = 0;
        assert_eq!(run(detect, &m, [40000, 19132]), Seen::No);
        robust(detect, &m[..20], [1, 2]);
    }
}
