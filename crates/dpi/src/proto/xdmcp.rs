//! XDMCP (X display manager control, UDP 177): version 1, a defined opcode and a length
//! equal to the rest.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "XDMCP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[0]),
    evidence: "on port 177: version 1, an opcode 1-16 and a length equal to the rest",
    source: "X Display Manager Control Protocol, version 1.1 (X Consortium)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if p.port(177)
        && be16(b, 0) == Some(1)
        && be16(b, 2).is_some_and(|op| (1..=16).contains(&op))
        && be16(b, 4).is_some_and(|l| usize::from(l) + 6 == b.len())
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
    fn query() {
        let m = [0, 1, 0, 2, 0, 1, 0];
        assert!(matches!(run(detect, &m, [40000, 177]), Seen::Is(_)));
        assert_eq!(run(detect, &m, [40000, 178]), Seen::No);
        robust(detect, &m, [1, 177]);
    }
}
