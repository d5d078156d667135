//! RADIUS (RFC 2865, accounting RFC 2866, dynamic authorization RFC 5176).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "Radius";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[1, 2, 3, 4, 5, 11, 12, 13, 40, 41, 42, 43, 44, 45]),
    evidence: "a defined code, a length (20-4096) equal to the datagram's, and attributes \
               (type, length >= 2) that end exactly at that length",
    source: "RFC 2865, RFC 2866, RFC 5176",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let Some(len) = be16(b, 2).map(usize::from) else { return Seen::No };
    if !(20..=4096).contains(&len) || len != b.len() {
        return Seen::No;
    }
    let mut at = 20;
    while at < len {
        let (Some(&kind), Some(&alen)) = (b.get(at), b.get(at + 1)) else { return Seen::No };
        if kind == 0 || alen < 2 {
            return Seen::No;
        }
        at += usize::from(alen);
    }
    if at == len { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn access_request_with_attributes() {
        let mut m = vec![1, 7, 0, 0];
        m.extend_from_slice(&[0xaa; 16]);
        m.extend_from_slice(&[1, 6, b'b', b'o', b'b', b'!']); // User-Name
        m.extend_from_slice(&[4, 6, 10, 0, 0, 1]); // NAS-IP-Address
        let n = m.len() as u16;
        m[2..4].copy_from_slice(&n.to_be_bytes());
        assert!(matches!(run(detect, &m, [40000, 1812]), Seen::Is(_)));
        // An attribute that overruns the length.
        let mut bad = m.clone();
        bad[21] = 9;
        assert_eq!(run(detect, &bad, [40000, 1812]), Seen::No);
        assert_eq!(run(detect, &m[..m.len() - 1], [40000, 1812]), Seen::No);
        robust(detect, &m, [40000, 1812]);
    }
}
