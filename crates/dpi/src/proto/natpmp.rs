//! NAT-PMP (RFC 6886) on UDP 5351: version 0 and an opcode whose message has a fixed size.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "NAT-PMP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[0]),
    evidence: "on port 5351: version 0, and an opcode (0-2, or 128-130 in replies) with its \
               message's exact size",
    source: "RFC 6886, section 3",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !p.port(5351) || b.len() < 2 || b[0] != 0 {
        return Seen::No;
    }
    let fits = match b[1] {
        0 => b.len() == 2,
        1 | 2 => b.len() == 12 && b[2..4] == [0, 0],
        128 => b.len() == 12,
        129 | 130 => b.len() == 16,
        _ => false,
    };
    if fits { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn external_address_request() {
        assert!(matches!(run(detect, &[0, 0], [40000, 5351]), Seen::Is(_)));
        assert_eq!(run(detect, &[0, 0, 0], [40000, 5351]), Seen::No);
        assert_eq!(run(detect, &[0, 0], [40000, 5350]), Seen::No);
        robust(detect, &[0, 1, 0, 0, 1, 2, 3, 4, 0, 0, 0, 60], [1, 5351]);
    }
}
