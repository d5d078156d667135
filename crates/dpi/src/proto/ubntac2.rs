//! Ubiquiti's device discovery (UDP 10001): version 1 or 2, a command, a length equal to the
//! rest, and type-length-value fields that end exactly there.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "UBNTAC2";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[1, 2]),
    evidence: "on port 10001: version 1 or 2, a length equal to the rest, and TLV fields \
               (type, 16-bit length) ending exactly at the end",
    source: "Ubiquiti discovery protocol as documented by its open implementations \
             (e.g. the ubnt-discovery tools)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !p.port(10001) || b.len() < 4 || !matches!(b[0], 1 | 2) {
        return Seen::No;
    }
    if usize::from(be16(b, 2).unwrap_or(0)) + 4 != b.len() {
        return Seen::No;
    }
    let mut at = 4;
    while at < b.len() {
        let Some(len) = be16(b, at + 1) else { return Seen::No };
        at += 3 + usize::from(len);
    }
    if at == b.len() { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn discovery() {
        assert!(matches!(run(detect, &[1, 0, 0, 0], [40000, 10001]), Seen::Is(_)));
        let m = [2, 6, 0, 9, 0x0b, 0, 6, b'r', b'o', b'u', b't', b'e', b'r'];
        assert!(matches!(run(detect, &m, [10001, 40000]), Seen::Is(_)));
        assert_eq!(run(detect, &m[..12], [10001, 40000]), Seen::No);
        robust(detect, &m, [10001, 40000]);
    }
}
