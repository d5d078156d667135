//! PPTP control connections: a length equal to the message's, message type 1 (control) and
//! the magic cookie 0x1A2B3C4D.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16, be32};

const NAME: &str = "PPTP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0]),
    evidence: "a length equal to the segment's, message type 1, the magic cookie 0x1A2B3C4D and a \
               control message type 1-15",
    source: "RFC 2637, section 2",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if usize::from(be16(b, 0).unwrap_or(0)) == b.len()
        && be16(b, 2) == Some(1)
        && be32(b, 4) == Some(0x1a2b_3c4d)
        && be16(b, 8).is_some_and(|t| (1..=15).contains(&t))
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
    fn start_control_connection() {
        let mut m = vec![0, 156, 0, 1, 0x1a, 0x2b, 0x3c, 0x4d, 0, 1, 0, 0];
        m.resize(156, 0);
        assert!(matches!(run(detect, &m, [40000, 1723]), Seen::Is(_)));
        m[4] = 0;
        assert_eq!(run(detect, &m, [40000, 1723]), Seen::No);
        robust(detect, &m[..16], [1, 1723]);
    }
}
