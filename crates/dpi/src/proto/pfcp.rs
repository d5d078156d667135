//! PFCP (3GPP TS 29.244, the 5G/4G user-plane control protocol on UDP 8805): version 1, a
//! defined message type, and a length equal to the rest of the datagram.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "PFCP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Range(0x20, 0x3f),
    evidence: "version 1 with zero spare bits, a node (1-15) or session (50-57) message type, \
               a length equal to the rest of the datagram, and a SEID present for session \
               messages",
    source: "3GPP TS 29.244, clause 7.2 (message header) and 7.3 (message types)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 8 || b[0] >> 5 != 1 || b[0] & 0x18 != 0 {
        return Seen::No;
    }
    let seid = b[0] & 1 != 0;
    let kind_ok = match b[1] {
        1..=15 => !seid,
        50..=57 => seid,
        _ => false,
    };
    if kind_ok && usize::from(be16(b, 2).unwrap_or(0)) + 4 == b.len() {
        return super::is(&NAME);
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn heartbeat_request() {
        let m = [0x20, 1, 0, 12, 0, 0, 1, 0, 0, 0x60, 0, 4, 0xe0, 0, 0, 0];
        assert!(matches!(run(detect, &m, [8805, 8805]), Seen::Is(_)));
        assert_eq!(run(detect, &m[..15], [8805, 8805]), Seen::No);
        robust(detect, &m, [8805, 8805]);
    }
}
