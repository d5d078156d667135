//! RTPS: recognised from the fixed bytes its messages start with. The magic `RTPS`, protocol version 1.x or 2.x and a vendor id.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "RTPS";

const PREFIXES: &[&[u8]] = &[b"RTPS\x02", b"RTPS\x01"];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[0x52]),
    evidence: "the magic `RTPS`, protocol version 1.x or 2.x and a vendor id",
    source: "OMG DDS Interoperability Wire Protocol (DDSI-RTPS) 2.5, section 9.4.4",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !PREFIXES.iter().any(|m| b.starts_with(m)) {
        return Seen::No;
    }
    if b.len() < 20 {
        return Seen::No;
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn recognised_and_not() {
        let good = b"RTPS\x02\x03\x01\x0f\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c";
        assert!(matches!(run(detect, good, [40000, 40001]), Seen::Is(_)));
        assert_eq!(run(detect, b"RTPX\x02\x03", [40000, 40001]), Seen::No);
        robust(detect, good, [40000, 40001]);
    }
}
