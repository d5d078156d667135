//! OpenFlow: a header of version (1.0-1.5), a message type, and a length equal to the
//! message's, on the OpenFlow ports.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "OpenFlow";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Range(1, 6),
    evidence: "on port 6653 or 6633: version 1-6, a message type 0-35 and a length (>= 8) equal \
               to the segment's or to a whole number of messages",
    source: "Open Networking Foundation, OpenFlow Switch Specification 1.0-1.5 (ofp_header)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !(p.port(6653) || p.port(6633)) {
        return Seen::No;
    }
    let mut at = 0;
    while at < b.len() {
        let len = usize::from(be16(b, at + 2).unwrap_or(0));
        if !(1..=6).contains(&b[at]) || b.get(at + 1).is_none_or(|&t| t > 35) || len < 8 {
            return Seen::No;
        }
        at += len;
    }
    if at == b.len() { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn hello() {
        let m = [4, 0, 0, 8, 0, 0, 0, 1];
        assert!(matches!(run(detect, &m, [40000, 6653]), Seen::Is(_)));
        assert_eq!(run(detect, &m, [40000, 6654]), Seen::No);
        robust(detect, &m, [1, 6653]);
    }
}
