//! BGP-4: every message starts with a 16-byte all-ones marker, a length (19-4096) and a type.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "BGP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0xff]),
    evidence: "the 16-byte all-ones marker, a length of 19-4096 and a message type 1-5 (an \
               OPEN must carry version 4)",
    source: "RFC 4271, section 4.1; RFC 2918 (ROUTE-REFRESH)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 19 || b[..16] != [0xff; 16] {
        return Seen::No;
    }
    let len = be16(b, 16).unwrap_or(0);
    if !(19..=4096).contains(&len) || !(1..=5).contains(&b[18]) {
        return Seen::No;
    }
    if b[18] == 1 && b.get(19).is_some_and(|&v| v != 4) {
        return Seen::No;
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn keepalive_and_open() {
        let mut m = vec![0xff; 16];
        m.extend_from_slice(&[0, 19, 4]);
        assert!(matches!(run(detect, &m, [40000, 179]), Seen::Is(_)));
        m[18] = 9;
        assert_eq!(run(detect, &m, [40000, 179]), Seen::No);
        robust(detect, &m, [1, 2]);
    }
}
