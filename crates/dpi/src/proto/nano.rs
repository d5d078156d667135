//! The Nano cryptocurrency's node protocol (TCP 7075): every message starts with an 8-byte
//! header: the magic `R`, the network (`A` test, `B` beta, `C` live, `X` dev), the maximum,
//! in-use and minimum protocol versions (minimum <= in use <= maximum), the message type
//! (keepalive 2 to asc_pull_ack 15) and 16 bits of extensions.
//!
//! Sources: Nano's protocol documentation (docs.nano.org, "Message header"); nDPI's `nano.c`.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Nano";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(b"R"),
    evidence: "a message header: `R`, a network letter (A, B, C, X), versions with minimum <= \
               in use <= maximum (maximum 15-48), a message type 2-15, and a body",
    source: "Nano protocol documentation (message header); nDPI's nano.c",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() <= 8 || b[0] != b'R' || !b"ABCX".contains(&b[1]) {
        return Seen::No;
    }
    let (max, using, min, kind) = (b[2], b[3], b[4], b[5]);
    let versions = (15..=48).contains(&max) && min <= using && using <= max;
    if !versions || !(2..=15).contains(&kind) {
        return Seen::No;
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn header() {
        let mut m = b"RC\x14\x14\x12\x0a\x05\x00".to_vec();
        m.extend_from_slice(&[0xf0; 32]);
        assert!(matches!(run(detect, &m, [59642, 7075]), Seen::Is(_)));
        robust(detect, &m, [59642, 7075]);
        let mut order = m.clone();
        order[4] = 0x15;
        assert_eq!(run(detect, &order, [59642, 7075]), Seen::No);
        let mut net = m.clone();
        net[1] = b'Z';
        assert_eq!(run(detect, &net, [59642, 7075]), Seen::No);
        assert_eq!(run(detect, &m[..8], [59642, 7075]), Seen::No);
    }
}
