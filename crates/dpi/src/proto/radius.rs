//! RADIUS (RFC 2865, accounting RFC 2866, dynamic authorization RFC 5176; packet type codes
//! from IANA's RADIUS registry).
//!
//! A message whose attributes walk exactly to its length is RADIUS on any port. On the
//! registered RADIUS ports (1812, 1813, 3799 and the older 1645, 1646) the header alone
//! (a defined code and a length equal to the datagram's) is enough: a receiver drops a
//! message with a malformed attribute (RFC 2865 section 5, RFC 6929 section 2.8) but it is
//! still a RADIUS message.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "Radius";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 40, 41, 42, 43, 44, 45]),
    evidence: "a defined code, a length (20-4096) equal to the datagram's, and attributes \
               (type, length >= 2) that end exactly at that length; on a RADIUS port \
               (1812, 1813, 3799, 1645, 1646) the code and length alone",
    source: "RFC 2865, RFC 2866, RFC 5176, RFC 6929, IANA RADIUS packet type codes",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let Some(len) = be16(b, 2).map(usize::from) else { return Seen::No };
    if !(20..=4096).contains(&len) || len != b.len() || !matches!(b[0], 1..=13 | 40..=45) {
        return Seen::No;
    }
    if attributes_end_at(b, len) || PORTS.iter().any(|&port| p.port(port)) {
        super::is(&NAME)
    } else {
        Seen::No
    }
}

/// The ports IANA registers for RADIUS authentication, accounting and dynamic
/// authorization, and the ones used before.
const PORTS: [u16; 5] = [1812, 1813, 3799, 1645, 1646];

/// Whether the attributes (type, length >= 2) after the header end exactly at `len`.
fn attributes_end_at(b: &[u8], len: usize) -> bool {
    let mut at = 20;
    while at < len {
        let (Some(&kind), Some(&alen)) = (b.get(at), b.get(at + 1)) else { return false };
        if kind == 0 || alen < 2 {
            return false;
        }
        at += usize::from(alen);
    }
    at == len
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
        assert_eq!(run(detect, &bad, [40000, 1999]), Seen::No);
        assert_eq!(run(detect, &m[..m.len() - 1], [40000, 1812]), Seen::No);
        // On a RADIUS port, the header is enough (a receiver drops the bad attribute).
        assert!(matches!(run(detect, &bad, [40000, 1812]), Seen::Is(_)));
        // But not an undefined code.
        let mut code = bad.clone();
        code[0] = 20;
        assert_eq!(run(detect, &code, [40000, 1812]), Seen::No);
        robust(detect, &m, [40000, 1812]);
    }
}
