//! AFP over DSI (Apple Filing Protocol, TCP 548): the 16-byte Data Stream Interface header
//! with a request or reply flag, a defined command, and a total length equal to the rest.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be32};

const NAME: &str = "AFP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0, 1]),
    evidence: "a DSI header: flag 0 (request) or 1 (reply), a command 1-8, a data offset \
               within the message, reserved zero, and a total data length equal to the rest",
    source: "Apple, \"AFP over TCP\" (Apple Filing Protocol Programming Guide, DSI)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 16 || b[0] > 1 || !(1..=8).contains(&b[1]) {
        return Seen::No;
    }
    let offset = be32(b, 4).unwrap_or(u32::MAX) as usize;
    let total = be32(b, 8).unwrap_or(u32::MAX) as usize;
    let reserved = be32(b, 12).unwrap_or(1);
    if total + 16 == b.len() && offset <= total && reserved == 0 && p.port(548) {
        return super::is(&NAME);
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn get_status() {
        let m = [0, 3, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert!(matches!(run(detect, &m, [40000, 548]), Seen::Is(_)));
        assert_eq!(run(detect, &m, [40000, 549]), Seen::No);
        robust(detect, &m, [40000, 548]);
    }
}
