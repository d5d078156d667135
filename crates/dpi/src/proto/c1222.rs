//! ANSI C12.22 (metering data over networks, TCP and UDP port 1153): each message is an ACSE
//! APDU, `[APPLICATION 0]` (0x60) with a BER length equal to the rest, whose elements are
//! the ACSE fields C12.22 uses (application context [1], called AP title [2], called AE
//! qualifier [3], called AP invocation id [4], calling AP title [6], calling AE qualifier
//! [7], calling AP invocation id [8], mechanism name [11], calling authentication value
//! [12], user information [30]), ending exactly with the message, with a called AP title and
//! the user information present.
//!
//! Sources: ANSI C12.22-2008 / IEEE 1703 (the C12.22 message and its ACSE elements), ISO
//! 8650 (ACSE tags); nDPI's `c1222.c`.

use crate::registry::{Detector, First, Transport};
use crate::udp::ber_len;
use crate::{Meta, Packet, Seen};

const NAME: &str = "ANSI_C1222";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Bytes(&[0x60]),
    evidence: "an ACSE APDU (0x60, BER length equal to the rest) whose elements are C12.22's \
               ACSE fields, ending exactly with it, including a called AP title and the user \
               information",
    source: "ANSI C12.22 / IEEE 1703, ISO 8650 (ACSE); nDPI's c1222.c",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.first() != Some(&0x60) {
        return Seen::No;
    }
    let Some((len, mut at)) = ber_len(b, 1) else { return Seen::No };
    if at + len != b.len() {
        return Seen::No;
    }
    let (mut called, mut user) = (false, false);
    while at < b.len() {
        let tag = b[at];
        if !matches!(tag, 0xa1..=0xa4 | 0xa6..=0xa8 | 0x8b | 0xac | 0xbe) {
            return Seen::No;
        }
        called |= tag == 0xa2;
        user |= tag == 0xbe;
        let Some((l, start)) = ber_len(b, at + 1) else { return Seen::No };
        at = start + l;
    }
    if at == b.len() && called && user { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn acse_message() {
        let mut inner = vec![0xa2, 0x05, 0x06, 0x03, 0x60, 0x7c, 0x86];
        inner.extend_from_slice(&[0xa6, 0x05, 0x06, 0x03, 0x60, 0x7c, 0x87]);
        inner.extend_from_slice(&[0xa8, 0x04, 0x02, 0x02, 0x0f, 0x89]);
        inner.extend_from_slice(&[0xbe, 0x07, 0x28, 0x05, 0x81, 0x03, 0x80, 0x01, 0x20]);
        let mut m = vec![0x60, inner.len() as u8];
        m.extend_from_slice(&inner);
        assert!(matches!(run(detect, &m, [55092, 1153]), Seen::Is(_)));
        robust(detect, &m, [55092, 1153]);
        // Without the user information, a foreign element, a length that overruns.
        let mut no_user = vec![0x60, 14];
        no_user.extend_from_slice(&inner[..14]);
        assert_eq!(run(detect, &no_user, [1, 1153]), Seen::No);
        let mut foreign = m.clone();
        foreign[2] = 0xa5;
        assert_eq!(run(detect, &foreign, [1, 1153]), Seen::No);
        assert_eq!(run(detect, &m[..m.len() - 1], [1, 1153]), Seen::No);
    }
}
