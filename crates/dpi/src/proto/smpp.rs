//! SMPP (short message peer-to-peer): a PDU header of command length (equal to the PDU's),
//! a defined command id, a status and a sequence number.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be32};

const NAME: &str = "SMPP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0]),
    evidence: "a command length of 16 bytes or more equal to the segment's, a defined command \
               id (bind, submit, deliver, enquire, unbind and their responses) and a non-zero \
               sequence number",
    source: "SMPP v3.4 and v5.0 specifications, section 4 (PDU definitions)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let (Some(len), Some(id), Some(seq)) = (be32(b, 0), be32(b, 4), be32(b, 12)) else {
        return Seen::No;
    };
    let known = matches!(id & 0x7fff_ffff, 0x01..=0x09 | 0x0b | 0x15 | 0x21 | 0x102 | 0x103 | 0x111..=0x113);
    if len as usize == b.len()
        && len >= 16
        && known
        && (id & 0x8000_0000 == 0 || id & 0x7fff_ffff != 0)
        && seq != 0
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
    fn enquire_link() {
        let m = [0, 0, 0, 16, 0, 0, 0, 0x15, 0, 0, 0, 0, 0, 0, 0, 7];
        assert!(matches!(run(detect, &m, [40000, 2775]), Seen::Is(_)));
        assert_eq!(run(detect, &m[..15], [40000, 2775]), Seen::No);
        robust(detect, &m, [1, 2775]);
    }
}
