//! KNXnet/IP: a 6-byte header (length 6, version 1.0), a service type, and a total length
//! equal to the datagram's.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "KNXnet_IP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Bytes(&[6]),
    evidence: "header length 6, protocol version 0x10, a service type family 0x02-0x09 and a \
               total length equal to the packet's",
    source: "KNX Standard, KNXnet/IP Core (03_08_02), section 2.3 (frame format)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() >= 6
        && b[0] == 6
        && b[1] == 0x10
        && (0x02..=0x09).contains(&b[2])
        && usize::from(be16(b, 4).unwrap_or(0)) == b.len()
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
    fn search_request() {
        let m = [6, 0x10, 2, 1, 0, 14, 8, 1, 192, 168, 1, 10, 0x0e, 0x57];
        assert!(matches!(run(detect, &m, [3671, 3671]), Seen::Is(_)));
        assert_eq!(run(detect, &m[..13], [3671, 3671]), Seen::No);
        robust(detect, &m, [3671, 3671]);
    }
}
