//! CryNetwork (Crytek's CryEngine game networking, UDP): a client's connection request is
//! a message whose first byte is its length less ten, with the fixed fields 1 at offset 16,
//! 7 at offset 20 and 0x0307 at offset 24.
//!
//! Sources: the request's layout as nDPI's `crynet.c` gives it.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "CryNetwork";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[0x3c]),
    evidence: "a connection request: the first byte (0x3c) the datagram's length less ten, \
               1 at offset 16, 7 at offset 20, 0x0307 at offset 24",
    source: "nDPI's crynet.c (request layout)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 26
        || b[0] != 0x3c
        || usize::from(b[0]) + 10 != b.len()
        || b[16] != 1
        || b[20] != 7
        || be16(b, 24) != Some(0x0307)
    {
        return Seen::No;
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn connection_request() {
        let mut d = vec![0u8; 70];
        d[0] = 0x3c;
        d[3] = 8;
        d[16] = 1;
        d[20] = 7;
        d[24] = 3;
        d[25] = 7;
        assert!(matches!(run(detect, &d, [61837, 25383]), Seen::Is(_)));
        robust(detect, &d, [61837, 25383]);
        assert_eq!(run(detect, &d[..69], [61837, 25383]), Seen::No);
        d[20] = 6;
        assert_eq!(run(detect, &d, [61837, 25383]), Seen::No);
    }
}
