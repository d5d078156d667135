//! Elasticsearch's transport protocol (node to node, port 9300): the `ES` marker and a
//! message length equal to the rest.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be32};

const NAME: &str = "Elasticsearch";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(b"E"),
    evidence: "the `ES` marker and a 32-bit length equal to the rest of the segment (or a \
               6-byte ping)",
    source: "Elasticsearch transport protocol (TcpHeader in the Elasticsearch sources' \
             documentation)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() >= 6 && b.starts_with(b"ES") {
        let len = be32(b, 2).unwrap_or(u32::MAX);
        if len as usize + 6 == b.len() || (len == 0xffff_ffff && b.len() == 6) {
            return super::is(&NAME);
        }
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn message_and_ping() {
        let m = [b'E', b'S', 0, 0, 0, 3, 1, 2, 3];
        assert!(matches!(run(detect, &m, [40000, 9300]), Seen::Is(_)));
        assert!(matches!(run(detect, b"ES\xff\xff\xff\xff", [40000, 9300]), Seen::Is(_)));
        assert_eq!(run(detect, &m[..8], [40000, 9300]), Seen::No);
        robust(detect, &m, [40000, 9300]);
    }
}
