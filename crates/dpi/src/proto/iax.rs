//! IAX2 (Inter-Asterisk eXchange, UDP 4569): full frames carry a source call number, a
//! destination call number, a timestamp, sequence numbers, and a frame type and subclass.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "IAX";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Range(0x80, 0xff),
    evidence: "on port 4569: a full frame (F bit set, a non-zero source call number), a frame \
               type 1-14 and, for IAX control frames (type 6), a defined subclass",
    source: "RFC 5456, sections 8.1.1 and 8.2-8.4",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !p.port(4569) || b.len() < 12 || b[0] & 0x80 == 0 || (b[0] & 0x7f == 0 && b[1] == 0) {
        return Seen::No;
    }
    let kind = b[10];
    let ok = match kind {
        6 => (1..=0x26).contains(&b[11]),
        1..=14 => true,
        _ => false,
    };
    if ok { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn new_call() {
        let m = [0x80, 0x01, 0, 0, 0, 0, 0, 3, 0, 0, 6, 1, 0x0b, 2, 0, 2];
        assert!(matches!(run(detect, &m, [4569, 4569]), Seen::Is(_)));
        assert_eq!(run(detect, &m, [4568, 4568]), Seen::No);
        robust(detect, &m, [4569, 4569]);
    }
}
