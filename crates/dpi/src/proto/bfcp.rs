//! BFCP (binary floor control, RFC 8855): version 1 or 2, a primitive 1-17, and a payload
//! length in 4-byte words equal to the rest after the 12-byte header.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "BFCP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Range(0x20, 0x5f),
    evidence: "version 1 or 2, reserved bits clear, a primitive 1-17, a non-zero conference id, \
               a payload length in words equal to the rest, and attributes (length >= 2, padded \
               to 4 bytes) that fill it",
    source: "RFC 8855, section 5.1 (COMMON-HEADER)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 12 || !matches!(b[0] >> 5, 1 | 2) || b[0] & 0x07 != 0 || !(1..=17).contains(&b[1])
    {
        return Seen::No;
    }
    let words = usize::from(be16(b, 2).unwrap_or(0));
    let conference = crate::be32(b, 4).unwrap_or(0);
    if conference == 0 || words * 4 + 12 != b.len() {
        return Seen::No;
    }
    // Attributes: a type, a length (>= 2, header included), padded to 4 bytes.
    let mut at = 12;
    while at < b.len() {
        let len = usize::from(*b.get(at + 1).unwrap_or(&0));
        if len < 2 {
            return Seen::No;
        }
        at += len.div_ceil(4) * 4;
    }
    if at == b.len() { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn hello() {
        let m = [0x20, 11, 0, 1, 0, 0, 0, 1, 0, 1, 0, 2, 0x0a, 4, 0, 1];
        assert!(matches!(run(detect, &m, [40000, 5070]), Seen::Is(_)));
        assert_eq!(run(detect, &[0x20, 11, 0, 1, 0, 0, 0, 1, 0, 1, 0, 2], [40000, 5070]), Seen::No);
        assert_eq!(
            run(detect, &[0x20, 11, 0, 1, 0, 0, 0, 1, 0, 1, 0, 2, 0x0a, 1, 0, 1], [1, 2]),
            Seen::No
        );
        robust(detect, &m, [40000, 5070]);
    }
}
