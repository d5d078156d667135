//! LISP (locator/ID separation) control messages on UDP 4342: a message type whose fixed
//! fields fit.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "LISP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Any,
    evidence: "on port 4342: a Map-Request, Map-Reply, Map-Register or Map-Notify (types 1-4) \
               with a record count of 1 or more and its nonce and records within the datagram, \
               or an Encapsulated Control Message (type 8) carrying an IP header",
    source: "RFC 9301, section 5 (LISP control plane messages)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !p.port(4342) || b.len() < 12 {
        return Seen::No;
    }
    let ok = match b[0] >> 4 {
        1..=4 => b[3] >= 1 && b.len() >= 12 + 16,
        8 => b.get(4).is_some_and(|&v| v >> 4 == 4 || v >> 4 == 6),
        _ => false,
    };
    if ok { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn map_register() {
        let mut m = vec![0x30, 0, 0, 1];
        m.resize(48, 0);
        assert!(matches!(run(detect, &m, [4342, 4342]), Seen::Is(_)));
        assert_eq!(run(detect, &m, [4341, 4341]), Seen::No);
        robust(detect, &m, [4342, 4342]);
    }
}
