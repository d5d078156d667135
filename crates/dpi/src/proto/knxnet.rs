//! KNXnet/IP: a 6-byte header (length 6, version 1.0), a service type, and a total length
//! equal to the datagram's.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "KNXnet_IP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Bytes(&[6]),
    evidence: "header length 6, protocol version 0x10, a service type family 0x02-0x09 and a \
               total length: one frame filling the datagram, or frames filling the segment",
    source: "KNX Standard, KNXnet/IP Core (03_08_02), section 2.3 (frame format)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    // One frame per datagram; over TCP a segment may carry several, back to back.
    let mut at = 0;
    while at < b.len() {
        let frame = &b[at..];
        let len = usize::from(be16(frame, 4).unwrap_or(0));
        if frame.len() < 6
            || frame[0] != 6
            || frame[1] != 0x10
            || !(0x02..=0x09).contains(&frame[2])
            || len < 6
            || len > frame.len()
        {
            return Seen::No;
        }
        at += len;
    }
    if b.is_empty() { Seen::No } else { super::is(&NAME) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn search_request() {
        let m = [6, 0x10, 2, 1, 0, 14, 8, 1, 192, 168, 1, 10, 0x0e, 0x57];
        assert!(matches!(run(detect, &m, [3671, 3671]), Seen::Is(_)));
        assert_eq!(run(detect, &m[..13], [3671, 3671]), Seen::No);
        robust(detect, &m, [3671, 3671]);
        // Two tunnelling frames in one TCP segment.
        let t = [6, 0x10, 4, 0x23, 0, 14, 4, 1, 2, 0, 6, 0, 0x10, 0x87];
        let two = [t, t].concat();
        assert!(matches!(run(detect, &two, [54445, 3671]), Seen::Is(_)));
        assert_eq!(run(detect, &two[..27], [54445, 3671]), Seen::No);
    }
}
