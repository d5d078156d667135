//! Check Point ClusterXL's high-availability protocol (CPHA, UDP 8116): the magic number
//! 0x1A90 and a protocol version.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "CPHA";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[0x1a]),
    evidence: "on port 8116: the magic number 0x1A90, a protocol version of 1-4096 (product \
               releases number it, e.g. 3121), and an opcode 1-8",
    source: "Check Point ClusterXL documentation (CCP packets) and Wireshark's CPHA dissector \
             documentation",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if p.port(8116)
        && b.len() >= 16
        && be16(b, 0) == Some(0x1a90)
        && be16(b, 2).is_some_and(|v| (1..=4096).contains(&v))
        && be16(b, 6).is_some_and(|op| (1..=8).contains(&op))
    {
        return super::is(&NAME);
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn report() {
        let mut m = vec![0x1a, 0x90, 0x02, 0x00, 0, 1, 0, 1];
        m.resize(40, 0);
        assert!(matches!(run(detect, &m, [8116, 8116]), Seen::Is(_)));
        m[1] = 0x91;
        assert_eq!(run(detect, &m, [8116, 8116]), Seen::No);
        robust(detect, &m, [8116, 8116]);
    }
}
