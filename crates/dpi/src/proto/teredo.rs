//! Teredo (IPv6 over UDP through NATs): optional authentication and origin indications,
//! then an IPv6 header whose payload length matches the rest of the datagram.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "Teredo";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[
        0x00, 0x60, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x6b, 0x6c, 0x6d,
        0x6e, 0x6f,
    ]),
    evidence: "an IPv6 header (version 6, a payload length equal to the rest of the \
               datagram, a known next header) after the optional indications, on port 3544 \
               or between two unprivileged ports with a 2001::/32 address",
    source: "RFC 4380, sections 5.1.1 and 5.2",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let mut b = p.payload;
    // Authentication indication: 0x0001, id length, auth length, id, auth, nonce (8),
    // confirmation (1).
    if b.len() >= 13 && b[..2] == [0, 1] {
        let skip = 4 + usize::from(b[2]) + usize::from(b[3]) + 9;
        b = b.get(skip..).unwrap_or(&[]);
    }
    // Origin indication: 0x0000, port and address (obfuscated).
    if b.len() >= 8 && b[..2] == [0, 0] {
        b = &b[8..];
    }
    if b.len() < 40 || b[0] >> 4 != 6 {
        return Seen::No;
    }
    let len = usize::from(be16(b, 4).unwrap_or(0));
    let next = b[6];
    if len + 40 != b.len() || !matches!(next, 0 | 6 | 17 | 43 | 44 | 58 | 59 | 60) {
        return Seen::No;
    }
    // One side is a Teredo address (2001:0000::/32), or the Teredo port is in use.
    let teredo_addr = b[8..12] == [0x20, 0x01, 0, 0] || b[24..28] == [0x20, 0x01, 0, 0];
    if p.port(3544) || teredo_addr { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn bubble_and_router_solicitation() {
        // A bubble: an IPv6 header with no payload (next header 59).
        let mut m = vec![0x60, 0, 0, 0, 0, 0, 59, 21];
        m.extend_from_slice(&[0x20, 0x01, 0, 0]);
        m.extend_from_slice(&[0x11; 12]);
        m.extend_from_slice(&[0xfe, 0x80]);
        m.extend_from_slice(&[0x22; 14]);
        assert!(matches!(run(detect, &m, [40000, 3544]), Seen::Is(_)));
        let mut bad = m.clone();
        bad[5] = 8;
        assert_eq!(run(detect, &bad, [40000, 3544]), Seen::No);
        robust(detect, &m, [1, 3544]);
    }
}
