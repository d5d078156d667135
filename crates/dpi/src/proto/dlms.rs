//! DLMS/COSEM (IEC 62056) over TCP or UDP (port 4059): the wrapper header of version 1,
//! source and destination wPorts, and a length equal to the APDU's, then an APDU tag; or
//! the HDLC framing of IEC 62056-46 carried as is (meters reached through a serial-to-IP
//! gateway): a frame between 0x7e flags, frame format type 3 (0xA) with an 11-bit length
//! equal to the frame's, and a frame check sequence (CRC-16/X.25) that matches.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "IEC62056";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Bytes(&[0, 0x7e]),
    evidence: "the wrapper version 0x0001, a length equal to the rest, and an APDU tag of the \
               association or xDLMS services (AARQ 0x60, AARE 0x61, RLRQ, RLRE, get, set, \
               action, and their ciphered forms); or an HDLC frame (flags, format type 3, \
               length equal to the frame's, a matching FCS)",
    source: "IEC 62056-47 (COSEM transport over IP), IEC 62056-46 (HDLC frames), and the DLMS \
             UA Green Book, 7.3.3 and 8.4",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.first() == Some(&0x7e) {
        return if hdlc_frame(b) { super::is(&NAME) } else { Seen::No };
    }
    if b.len() < 9 || be16(b, 0) != Some(1) || usize::from(be16(b, 6).unwrap_or(0)) + 8 != b.len() {
        return Seen::No;
    }
    if matches!(b[8], 0x60..=0x63 | 0xc0..=0xc7 | 0xc8..=0xcf | 0xd0..=0xdf | 0xe0..=0xe7) {
        return super::is(&NAME);
    }
    Seen::No
}

/// An HDLC frame of IEC 62056-46: 0x7e, the frame format field (type 0xA, segmentation
/// bit, an 11-bit length of the frame without its flags), the rest, a frame check sequence
/// (CRC-16/X.25 of everything after the opening flag, least significant byte first), 0x7e.
fn hdlc_frame(b: &[u8]) -> bool {
    if b.len() < 9 || b[0] != 0x7e || b[b.len() - 1] != 0x7e || b[1] & 0xf0 != 0xa0 {
        return false;
    }
    let len = usize::from(b[1] & 0x07) << 8 | usize::from(b[2]);
    if len + 2 != b.len() {
        return false;
    }
    let body = &b[1..b.len() - 1];
    let (data, fcs) = body.split_at(body.len() - 2);
    crc16_x25(data) == u16::from_le_bytes([fcs[0], fcs[1]])
}

/// CRC-16/X.25 (the HDLC frame check sequence).
fn crc16_x25(data: &[u8]) -> u16 {
    let mut crc = 0xffffu16;
    for &byte in data {
        crc ^= u16::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0x8408 } else { crc >> 1 };
        }
    }
    !crc
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

    #[test]
    fn hdlc_frames() {
        // SNRM-like frame: format 0xa007, addresses 0x03 0x21, control 0x93, FCS.
        let mut f = vec![0x7e, 0xa0, 0x07, 0x03, 0x21, 0x93];
        let fcs = crc16_x25(&f[1..]);
        f.extend_from_slice(&fcs.to_le_bytes());
        f.push(0x7e);
        assert_eq!(fcs, 0x010f);
        assert!(matches!(run(detect, &f, [60797, 4060]), Seen::Is(_)));
        robust(detect, &f, [60797, 4060]);
        let mut bad = f.clone();
        bad[5] ^= 1;
        assert_eq!(run(detect, &bad, [60797, 4060]), Seen::No);
        let mut len = f.clone();
        len[2] = 8;
        assert_eq!(run(detect, &len, [60797, 4060]), Seen::No);
    }
}
