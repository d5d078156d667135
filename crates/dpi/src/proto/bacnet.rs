//! BACnet/IP: the BVLC header (type 0x81, a function, the length of the whole datagram),
//! then for functions that carry one, an NPDU of version 1.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "BACnet";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[0x81]),
    evidence: "BVLC type 0x81, a function 0x00-0x0c, a length equal to the datagram's, and \
               NPDU version 1 where the function carries an NPDU",
    source: "ANSI/ASHRAE 135, Annex J (BACnet/IP)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 6 || b[0] != 0x81 || b[1] > 0x0c || be16(b, 2) != Some(b.len() as u16) {
        return Seen::No;
    }
    // Original-unicast/broadcast (0x0a, 0x0b), distribute (0x09): NPDU at 4;
    // forwarded-NPDU (0x04): after a 6-byte address.
    let npdu = match b[1] {
        0x09..=0x0b => b.get(4),
        0x04 => b.get(10),
        _ => Some(&1),
    };
    if npdu == Some(&1) { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn who_is() {
        let m = [0x81, 0x0b, 0, 12, 1, 0x20, 0xff, 0xff, 0, 0xff, 0x10, 0x08];
        assert!(matches!(run(detect, &m, [47808, 47808]), Seen::Is(_)));
        assert_eq!(run(detect, &m[..11], [47808, 47808]), Seen::No);
        robust(detect, &m, [1, 2]);
    }
}
