//! Cisco's Hot Standby Router Protocol: version 0 on UDP 1985 (fixed 20-byte message) and
//! version 2's TLVs on 1985 or 2029.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "HSRP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[0, 1]),
    evidence: "on port 1985/2029: a 20-byte version 0 message (op code 0-2, a defined state) \
               or a version 2 group-state TLV (type 1, length 40, version 2)",
    source: "RFC 2281 (HSRP); Cisco's HSRP version 2 documentation",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !(p.port(1985) || p.port(2029)) {
        return Seen::No;
    }
    if b.len() == 20 && b[0] == 0 && b[1] <= 2 && matches!(b[2], 0 | 1 | 2 | 4 | 8 | 16) {
        return super::is(&NAME);
    }
    if b.len() >= 42 && b[0] == 1 && b[1] == 40 && b[2] == 2 && b[3] <= 2 {
        return super::is(&NAME);
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn hello() {
        let mut m = vec![0, 0, 16, 3, 10, 100, 1, 0];
        m.extend_from_slice(b"cisco\0\0\0");
        m.extend_from_slice(&[10, 0, 0, 1]);
        assert!(matches!(run(detect, &m, [1985, 1985]), Seen::Is(_)));
        m[2] = 5;
        assert_eq!(run(detect, &m, [1985, 1985]), Seen::No);
        robust(detect, &m, [1985, 1985]);
    }
}
