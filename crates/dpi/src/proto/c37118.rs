//! IEEE C37.118 synchrophasor frames: the sync word 0xAA with a frame type and version, a
//! frame size equal to the frame's, and its CRC-CCITT.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "IEEE-C37118";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Bytes(&[0xaa]),
    evidence: "sync byte 0xAA, a frame type 0-5 and version 1-3, a frame size equal to the \
               frame's, and the trailing CRC-CCITT over the frame",
    source: "IEEE C37.118.2-2011, clause 6.2 (common frame format)",
    detect,
};

/// CRC-CCITT (polynomial 0x1021, initial 0xFFFF, no reflection).
fn crc(b: &[u8]) -> u16 {
    let mut c: u16 = 0xffff;
    for &byte in b {
        c ^= u16::from(byte) << 8;
        for _ in 0..8 {
            c = if c & 0x8000 != 0 { (c << 1) ^ 0x1021 } else { c << 1 };
        }
    }
    c
}

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 16 || b[0] != 0xaa || (b[1] >> 4) > 5 || !(1..=3).contains(&(b[1] & 0x0f)) {
        return Seen::No;
    }
    let size = usize::from(be16(b, 2).unwrap_or(0));
    if size != b.len() {
        return Seen::No;
    }
    if crc(&b[..size - 2]) == be16(b, size - 2).unwrap_or(0) { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn command_frame_and_check_value() {
        assert_eq!(crc(b"123456789"), 0x29b1);
        let mut m = vec![0xaa, 0x41, 0, 18, 0, 7, 0x5e, 0x3f, 0x6c, 0x80, 0, 0, 0, 0, 0, 5];
        let c = crc(&m).to_be_bytes();
        m.extend_from_slice(&c);
        assert!(matches!(run(detect, &m, [40000, 4712]), Seen::Is(_)));
        m[17] ^= 1;
        assert_eq!(run(detect, &m, [40000, 4712]), Seen::No);
        robust(detect, &m, [40000, 4712]);
    }
}
