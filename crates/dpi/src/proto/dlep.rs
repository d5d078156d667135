//! DLEP (dynamic link exchange, RFC 8175): peer discovery over UDP and sessions over TCP,
//! each message a signal type and a length equal to the rest (UDP signals carry the `DLEP`
//! prefix).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "DLEP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Any,
    evidence: "UDP: the `DLEP` prefix, a discovery signal type (1, 2) and a length equal to the \
               rest; TCP on port 854: messages of a defined type (1-11) whose lengths fill the \
               segment",
    source: "RFC 8175, sections 11 and 12",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.starts_with(b"DLEP") && b.len() >= 8 {
        let kind = be16(b, 4).unwrap_or(0);
        let len = usize::from(be16(b, 6).unwrap_or(0));
        return if (1..=2).contains(&kind) && len + 8 == b.len() {
            super::is(&NAME)
        } else {
            Seen::No
        };
    }
    if !p.port(854) {
        return Seen::No;
    }
    let mut at = 0;
    while at < b.len() {
        let (Some(kind), Some(len)) = (be16(b, at), be16(b, at + 2)) else { return Seen::No };
        if !(1..=11).contains(&kind) {
            return Seen::No;
        }
        at += 4 + usize::from(len);
    }
    if at == b.len() && at > 0 { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn peer_discovery() {
        let m = b"DLEP\x00\x01\x00\x00";
        assert!(matches!(run(detect, m, [40000, 854]), Seen::Is(_)));
        assert_eq!(run(detect, b"DLEP\x00\x09\x00\x00", [40000, 854]), Seen::No);
        robust(detect, m, [40000, 854]);
    }
}
