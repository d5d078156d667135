//! Bidirectional Forwarding Detection control packets (RFC 5880) on UDP 3784/4784.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "BFD";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Range(0x20, 0x3f),
    evidence: "on port 3784/4784: version 1, a diagnostic 0-8, a length (24, or more with \
               the authentication bit) equal to the datagram's, a non-zero detect multiplier \
               and discriminator",
    source: "RFC 5880, section 4.1; RFC 5881, RFC 5883",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !(p.port(3784) || p.port(4784)) || b.len() < 24 || b[0] >> 5 != 1 || b[0] & 0x1f > 8 {
        return Seen::No;
    }
    let auth = b[1] & 0x04 != 0;
    let len = usize::from(b[3]);
    let len_ok = if auth { len > 24 } else { len == 24 };
    if len_ok && len == b.len() && b[2] != 0 && b[4..8] != [0, 0, 0, 0] {
        return super::is(&NAME);
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn control_packet() {
        let mut m = vec![0x20, 0x40, 3, 24, 0, 0, 0, 1, 0, 0, 0, 0];
        m.extend_from_slice(&[0, 0x0f, 0x42, 0x40, 0, 0x0f, 0x42, 0x40, 0, 0, 0, 0]);
        assert!(matches!(run(detect, &m, [49152, 3784]), Seen::Is(_)));
        m[2] = 0;
        assert_eq!(run(detect, &m, [49152, 3784]), Seen::No);
        robust(detect, &m, [1, 3784]);
    }
}
