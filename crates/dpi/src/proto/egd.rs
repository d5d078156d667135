//! GE's Ethernet Global Data (UDP 18246): a production data PDU of type 13, version 1.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "EthernetGlobalData";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[0x0d]),
    evidence: "on port 18246: PDU type 13, version 1, and at least the 32-byte header",
    source: "GE Fanuc, TCP/IP Ethernet Communications for Series 90 (EGD exchange format)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if p.port(18246) && b.len() >= 32 && b[0] == 0x0d && b[1] == 0x01 {
        return super::is(&NAME);
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn production_data() {
        let mut m = vec![0x0d, 0x01];
        m.resize(40, 0);
        assert!(matches!(run(detect, &m, [18246, 18246]), Seen::Is(_)));
        assert_eq!(run(detect, &m, [18245, 18245]), Seen::No);
        robust(detect, &m, [18246, 18246]);
    }
}
