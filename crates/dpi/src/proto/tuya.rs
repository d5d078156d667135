//! Tuya's local protocol (smart-home devices on UDP 6666/6667 and TCP 6668): frames between
//! the prefix 0x000055AA and the suffix 0x0000AA55 (0x00006699 for version 3.5).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be32};

const NAME: &str = "TuyaLP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Bytes(&[0]),
    evidence: "the frame prefix, a length equal to the rest of the frame, and the suffix \
               at its end",
    source: "Tuya developer documentation (local network protocol); the tinytuya project's \
             protocol notes",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    match be32(b, 0) {
        Some(0x0000_55aa) => {
            let Some(len) = be32(b, 12).map(|l| l as usize) else { return Seen::No };
            if b.len() >= 24 && 16 + len <= b.len() && be32(b, 16 + len - 4) == Some(0x0000_aa55) {
                return super::is(&NAME);
            }
            Seen::No
        }
        Some(0x0000_6699) => {
            // 3.5: prefix, unknown (2), sequence, command, length, ..., suffix.
            let Some(len) = be32(b, 14).map(|l| l as usize) else { return Seen::No };
            if b.len() >= 22 && 18 + len <= b.len() && be32(b, 18 + len - 4) == Some(0x0000_9966) {
                return super::is(&NAME);
            }
            Seen::No
        }
        _ => Seen::No,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn frame() {
        let mut m = vec![0, 0, 0x55, 0xaa, 0, 0, 0, 1, 0, 0, 0, 0x13, 0, 0, 0, 12];
        m.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0xaa, 0x55]);
        assert!(matches!(run(detect, &m, [6666, 6666]), Seen::Is(_)));
        m[27] = 0x56;
        assert_eq!(run(detect, &m, [6666, 6666]), Seen::No);
        robust(detect, &m, [1, 2]);
    }
}
