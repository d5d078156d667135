//! DLMS/COSEM (IEC 62056) over TCP or UDP (port 4059): the wrapper header of version 1,
//! source and destination wPorts, and a length equal to the APDU's, then an APDU tag.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "IEC62056";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Bytes(&[0]),
    evidence: "the wrapper version 0x0001, a length equal to the rest, and an APDU tag of the \
               association or xDLMS services (AARQ 0x60, AARE 0x61, RLRQ, RLRE, get, set, \
               action, and their ciphered forms)",
    source: "IEC 62056-47 (COSEM transport over IP) and the DLMS UA Green Book, 7.3.3",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 9 || be16(b, 0) != Some(1) || usize::from(be16(b, 6).unwrap_or(0)) + 8 != b.len() {
        return Seen::No;
    }
    if matches!(b[8], 0x60..=0x63 | 0xc0..=0xc7 | 0xc8..=0xcf | 0xd0..=0xdf | 0xe0..=0xe7) {
        return super::is(&NAME);
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn aarq() {
        let m = [0, 1, 0, 0x10, 0, 1, 0, 4, 0x60, 2, 0xa1, 0];
        assert!(matches!(run(detect, &m, [40000, 4059]), Seen::Is(_)));
        assert_eq!(run(detect, &m[..11], [40000, 4059]), Seen::No);
        robust(detect, &m, [40000, 4059]);
    }
}
