//! Diameter: version 1, a 3-byte message length equal to the message's, flags with the
//! reserved bits clear, and a command code.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Diameter";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[1]),
    evidence: "version 1, a message length (>= 20, a multiple of 4) equal to the segment's, \
               reserved flag bits clear, and a base-protocol or application command code",
    source: "RFC 6733, section 3 (header)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 20 || b[0] != 1 || b[4] & 0x0f != 0 {
        return Seen::No;
    }
    let len = usize::from(b[1]) << 16 | usize::from(b[2]) << 8 | usize::from(b[3]);
    let code = u32::from(b[5]) << 16 | u32::from(b[6]) << 8 | u32::from(b[7]);
    if len == b.len() && len % 4 == 0 && (257..=8_388_607).contains(&code) {
        return super::is(&NAME);
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn capabilities_exchange() {
        let mut m = vec![1, 0, 0, 20, 0x80, 0, 1, 1];
        m.resize(20, 0);
        assert!(matches!(run(detect, &m, [40000, 3868]), Seen::Is(_)));
        m[4] = 0x81;
        assert_eq!(run(detect, &m, [40000, 3868]), Seen::No);
        robust(detect, &m, [1, 3868]);
    }
}
