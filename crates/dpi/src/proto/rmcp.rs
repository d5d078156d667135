//! RMCP (ASF and IPMI over LAN, UDP 623): version 6, a reserved zero byte, a sequence, and a
//! message class (ASF, IPMI or OEM).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "RMCP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[6]),
    evidence: "on port 623: version 6, reserved byte 0, class 6 (ASF), 7 (IPMI) or 8 (OEM), \
               with the acknowledgement bit only on ASF",
    source: "DMTF ASF 2.0 specification, section 3.2.2 (RMCP); IPMI 2.0, section 13.1",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !p.port(623) || b.len() < 8 || b[0] != 6 || b[1] != 0 {
        return Seen::No;
    }
    match b[3] {
        6..=8 | 0x86 => super::is(&NAME),
        _ => Seen::No,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn asf_presence_ping() {
        let m = [6, 0, 0xff, 6, 0, 0, 0x11, 0xbe, 0x80, 0, 0, 0];
        assert!(matches!(run(detect, &m, [40000, 623]), Seen::Is(_)));
        assert_eq!(run(detect, &m, [40000, 624]), Seen::No);
        robust(detect, &m, [1, 623]);
    }
}
