//! CAN-ETH: Controller Area Network frames carried over UDP (registered port 11898). A
//! datagram is the 8-byte magic `ISO11898`, a version byte (1), a frame count (1-16), and
//! that many 15-byte CAN frames (identifier, length code, eight data bytes, extended and
//! remote flags).
//!
//! Sources: Proconx's CAN-ETH frame specification (canframe.pdf), Wireshark's CAN-ETH
//! dissector facts (magic, version, 15-byte frames), nDPI's `can.c` (the magic).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Controller_Area_Network";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(b"I"),
    evidence: "the magic `ISO11898`, version 1, a frame count of 1-16 and room for that many \
               15-byte frames",
    source: "Proconx CAN-ETH frame specification; Wireshark CAN-ETH dissector; nDPI's can.c",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 25 || !b.starts_with(b"ISO11898") || b[8] != 1 || !(1..=16).contains(&b[9]) {
        return Seen::No;
    }
    if b.len() < 10 + 15 * usize::from(b[9]) {
        return Seen::No;
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn frames_after_the_magic() {
        let mut d = b"ISO11898\x01\x02".to_vec();
        for id in [0x123u32, 0x456] {
            d.extend_from_slice(&id.to_le_bytes());
            d.push(8);
            d.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
            d.extend_from_slice(&[0, 0]);
        }
        assert!(matches!(run(detect, &d, [40000, 11898]), Seen::Is(_)));
        robust(detect, &d, [40000, 11898]);
        // A frame missing, another version, no frames.
        assert_eq!(run(detect, &d[..d.len() - 1], [40000, 11898]), Seen::No);
        let mut v = d.clone();
        v[8] = 2;
        assert_eq!(run(detect, &v, [40000, 11898]), Seen::No);
        v[8] = 1;
        v[9] = 0;
        assert_eq!(run(detect, &v, [40000, 11898]), Seen::No);
    }
}
