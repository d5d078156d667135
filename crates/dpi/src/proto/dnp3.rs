//! DNP3 (IEEE 1815) over TCP or UDP: the data-link header (start bytes 0x05 0x64, length,
//! control, destination, source) with its CRC.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "DNP3";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Bytes(&[0x05]),
    evidence: "start bytes 0x05 0x64, a length of at least 5, and the header's CRC-16/DNP",
    source: "IEEE 1815-2012, clause 9.2 (data link frame format)",
    detect,
};

/// CRC-16/DNP: polynomial 0x3D65 (reflected 0xA6BC), output complemented.
pub(crate) fn crc(b: &[u8]) -> u16 {
    let mut c: u16 = 0;
    for &byte in b {
        c ^= u16::from(byte);
        for _ in 0..8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0xa6bc } else { c >> 1 };
        }
    }
    !c
}

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 10 || b[0] != 0x05 || b[1] != 0x64 || b[2] < 5 {
        return Seen::No;
    }
    if crc(&b[..8]) == u16::from_le_bytes([b[8], b[9]]) { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn link_header_crc() {
        // A request link status header (IEEE 1815 example framing).
        let mut m = vec![0x05, 0x64, 0x05, 0xc9, 0x01, 0x00, 0x00, 0x04];
        let c = crc(&m).to_le_bytes();
        m.extend_from_slice(&c);
        assert!(matches!(run(detect, &m, [40000, 20000]), Seen::Is(_)));
        m[4] = 2;
        assert_eq!(run(detect, &m, [40000, 20000]), Seen::No);
        robust(detect, &m, [1, 2]);
    }

    #[test]
    fn crc_check_value() {
        // The catalogued check value of CRC-16/DNP for "123456789".
        assert_eq!(crc(b"123456789"), 0xea82);
    }
}
