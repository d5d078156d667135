//! AMQP: the protocol header a client sends first (`AMQP` and a version).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "AMQP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[b'A', 1, 2, 3, 8]),
    evidence: "the 8-byte protocol header `AMQP` then 0-9-1, 0-9, 0-8 or 1.0's id and version; \
               or, on a connection picked up later, 0-9-1 frames (type 1-3 or 8, a size equal \
               to the rest, the frame-end octet 0xCE) filling the segment",
    source: "AMQP 0-9-1 specification, section 4.2.2; OASIS AMQP 1.0, section 2.2",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() >= 8
        && b.starts_with(b"AMQP")
        && matches!(
            &b[4..8],
            [0, 0, 9, 1]
                | [1, 1, 0, 9]
                | [1, 1, 8, 0]
                | [0, 1, 0, 0]
                | [2, 1, 0, 0]
                | [3, 1, 0, 0]
                | [0, 0, 9, 0]
        )
    {
        return super::is(&NAME);
    }
    // Frames: type, channel, size, payload, 0xCE.
    let mut at = 0;
    while at < b.len() {
        let (Some(&kind), Some(size)) = (b.get(at), crate::be32(b, at + 3)) else {
            return Seen::No;
        };
        let end = at + 7 + size as usize;
        if !matches!(kind, 1..=3 | 8) || b.get(end) != Some(&0xce) {
            return Seen::No;
        }
        at = end + 1;
    }
    if at == b.len() && at > 0 { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn header() {
        assert!(matches!(run(detect, b"AMQP\x00\x00\x09\x01", [40000, 5672]), Seen::Is(_)));
        assert_eq!(run(detect, b"AMQP\x07\x00\x09\x01", [40000, 5672]), Seen::No);
        // A heartbeat frame, and one without its end octet.
        assert!(matches!(run(detect, &[8, 0, 0, 0, 0, 0, 0, 0xce], [40000, 5672]), Seen::Is(_)));
        assert_eq!(run(detect, &[8, 0, 0, 0, 0, 0, 0, 0xcf], [40000, 5672]), Seen::No);
        robust(detect, b"AMQP\x00\x00\x09\x01", [1, 5672]);
    }
}
