//! UFTP, the encrypted multicast file transfer protocol (uftp-multicast.sourceforge.net):
//! every message starts with a 16-byte header (version 0x40 or 0x50, message type, a 16-bit
//! sequence number, the sender's id, the group id, group instance, round-trip time and
//! group size, a reserved zero byte) followed by the message, whose first byte repeats the
//! message type.
//!
//! Sources: UFTP's protocol specification (protocol.txt: uftp_h and the message layouts),
//! nDPI's `uftp.c`.

use crate::registry::{Detector, First, Transport};
use crate::{Label, Meta, Packet, Proto, Seen, be16, be32};

const NAME: &str = "UFTP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[0x40, 0x50]),
    evidence: "version 0x40 or 0x50, a message type 1-21 repeated as the message's first byte, \
               the reserved byte zero; three messages of one group whose sequence numbers \
               advance",
    source: "UFTP protocol specification (protocol.txt); nDPI's uftp.c",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 24 || !matches!(b[0], 0x40 | 0x50) || !(1..=21).contains(&b[1]) {
        return Seen::No;
    }
    if b[15] != 0 || b[16] != b[1] {
        return Seen::No;
    }
    let group = be32(b, 8).unwrap_or(0);
    Seen::Maybe(Label { master: Proto::Other(&NAME), app: None }, group, be16(b, 2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};
    use crate::{Config, FlowDpi};

    fn announce(seq: u16) -> Vec<u8> {
        let mut m = vec![0x40, 1];
        m.extend_from_slice(&seq.to_be_bytes());
        m.extend_from_slice(&[10, 0, 0, 1, 0x96, 0xf4, 0xc3, 0x04, 0, 0x9d, 0, 0]);
        m.extend_from_slice(&[1, 6, 0, 0x14, 0, 0, 5, 0x14]);
        m.resize(40, 0);
        m
    }

    #[test]
    fn announcements() {
        assert!(matches!(run(detect, &announce(0), [37173, 1044]), Seen::Maybe(..)));
        let mut other = announce(0);
        other[16] = 2;
        assert_eq!(run(detect, &other, [37173, 1044]), Seen::No);
        robust(detect, &announce(3), [37173, 1044]);
        let cfg = Config::default();
        let mut f = FlowDpi::new(17);
        for seq in 0..3 {
            f.feed(&cfg, true, [37173, 1044], &announce(seq));
        }
        assert_eq!(f.label().master.name(), "UFTP");
        let mut f = FlowDpi::new(17);
        for _ in 0..6 {
            f.feed(&cfg, true, [37173, 1044], &announce(9));
        }
        assert_ne!(f.label().master.name(), "UFTP");
    }
}
