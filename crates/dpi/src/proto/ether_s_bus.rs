//! Saia Ether-S-Bus (UDP 5050): a length equal to the datagram's, version and protocol
//! type 0 or 1, a sequence number, and a telegram attribute (request, response,
//! acknowledge).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be32};

const NAME: &str = "Ether-S-Bus";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[0]),
    evidence: "on port 5050: a 32-bit length equal to the datagram's, version 0 or 1, protocol \
               type 0 or 1, and a telegram attribute 0-2",
    source: "Saia-Burgess, S-Bus over Ethernet (Ether-S-Bus) frame format",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if p.port(5050)
        && b.len() >= 11
        && be32(b, 0).is_some_and(|l| l as usize == b.len())
        && b[4] <= 1
        && b[5] <= 1
        && b[8] <= 2
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
    fn request() {
        let m = [0, 0, 0, 14, 1, 0, 0, 1, 0, 0, 6, 0, 0, 0];
        assert!(matches!(run(detect, &m, [40000, 5050]), Seen::Is(_)));
        assert_eq!(run(detect, &m[..13], [40000, 5050]), Seen::No);
        robust(detect, &m, [40000, 5050]);
    }
}
