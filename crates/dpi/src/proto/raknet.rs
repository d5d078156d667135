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
    first: First::Bytes(&[0x01, 0x02, 0x05, 0x06, 0x07, 0x08, 0x1c, 0x19]),
    evidence: "an offline message id (ping, pong, open-connection request/reply, \
               incompatible version) with the 16-byte offline magic where that id puts it",
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
        _ => return Seen::No,
    };
    if b.get(at..at + 16) == Some(&MAGIC[..]) { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

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
