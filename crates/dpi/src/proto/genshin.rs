//! Genshin Impact (miHoYo/HoYoverse) game traffic. Over UDP its KCP variant opens with a
//! 20-byte handshake: the client's starts `000000ff` and a zero conversation, the server's
//! `00000145` and the conversation it assigns, both with the handshake constant
//! 1234567890 (0x499602d2) at offset 12. Over TCP its messages start with 0x01, a 32-bit
//! length of the whole message, a type (1 or 7) and the constant 0x4da6 at offset 16.
//!
//! Sources: the handshake and message layouts as nDPI's `genshin_impact.c` gives them.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16, be32};

const NAME: &str = "GenshinImpact";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Bytes(&[0x00, 0x01]),
    evidence: "over UDP, the 20-byte handshake (client 0xff with a zero conversation and \
               0xffffffff, server 0x145) with the constant 0x499602d2 at offset 12; over \
               TCP, 0x01, a length equal to the segment's, type 1 or 7 and 0x4da6 at 16",
    source: "nDPI's genshin_impact.c (handshake and message layouts)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() == 20 && be32(b, 12) == Some(0x4996_02d2) {
        let client = p.from_initiator
            && be32(b, 0) == Some(0xff)
            && be32(b, 4) == Some(0)
            && be32(b, 16) == Some(0xffff_ffff);
        let server = !p.from_initiator && be32(b, 0) == Some(0x145);
        if client || server {
            return super::is(&NAME);
        }
    }
    if b.len() >= 18
        && b[0] == 0x01
        && be32(b, 1).map(|l| l as usize) == Some(b.len())
        && matches!(b[5], 1 | 7)
        && be16(b, 16) == Some(0x4da6)
    {
        return super::is(&NAME);
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn handshakes() {
        let hello =
            [0, 0, 0, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0x49, 0x96, 0x02, 0xd2, 0xff, 0xff, 0xff, 0xff];
        assert!(matches!(run(detect, &hello, [58766, 22101]), Seen::Is(_)));
        robust(detect, &hello, [58766, 22101]);
        let mut reply = hello;
        reply[..4].copy_from_slice(&[0, 0, 1, 0x45]);
        reply[4..8].copy_from_slice(&[0, 3, 0x18, 0x32]);
        let p = Packet { payload: &reply, from_initiator: false, ports: [58766, 22101], index: 1 };
        assert!(matches!(detect(&p, &mut Meta::default()), Seen::Is(_)));
        // Another constant, or the client's hello from the server.
        let mut other = hello;
        other[15] = 0xd3;
        assert_eq!(run(detect, &other, [58766, 22101]), Seen::No);
        let p = Packet { payload: &hello, from_initiator: false, ports: [58766, 22101], index: 1 };
        assert_eq!(detect(&p, &mut Meta::default()), Seen::No);
        // The TCP message.
        let mut m = vec![0x01, 0, 0, 0, 24, 0x07];
        m.extend_from_slice(&[0; 10]);
        m.extend_from_slice(&[0x4d, 0xa6, 0, 0, 0, 0, 0, 0]);
        assert!(matches!(run(detect, &m, [50000, 22102]), Seen::Is(_)));
        assert_eq!(run(detect, &m[..23], [50000, 22102]), Seen::No);
    }
}
