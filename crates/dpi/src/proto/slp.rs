//! Service Location Protocol, versions 1 (RFC 2165) and 2 (RFC 2608).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "Service_Location_Protocol";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Bytes(&[1, 2]),
    evidence: "version 1 or 2, a defined function id, the header's length equal to the \
               message's, and a language tag of the declared length",
    source: "RFC 2165, RFC 2608",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    match b.first() {
        // v2: version, function (1-11), 3-byte length, flags, 3-byte extension offset, XID,
        // language tag length and tag.
        Some(2) if b.len() >= 16 => {
            let len = usize::from(b[2]) << 16 | usize::from(b[3]) << 8 | usize::from(b[4]);
            let tag = usize::from(be16(b, 12).unwrap_or(0));
            let flags_ok = b[6] == 0 && b[5] & 0x1f == 0;
            if (1..=11).contains(&b[1])
                && len == b.len()
                && flags_ok
                && (1..=32).contains(&tag)
                && 14 + tag <= len
                && b[14..14 + tag].iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
            {
                return super::is(&NAME);
            }
            Seen::No
        }
        // v1: version, function (1-10), 2-byte length, flags, dialect 0, two-letter language,
        // encoding, XID.
        Some(1) if b.len() >= 12 => {
            let len = usize::from(be16(b, 2).unwrap_or(0));
            if (1..=10).contains(&b[1])
                && len == b.len()
                && b[4] & 0x07 == 0
                && b[5] == 0
                && b[6].is_ascii_alphabetic()
                && b[7].is_ascii_alphabetic()
            {
                return super::is(&NAME);
            }
            Seen::No
        }
        _ => Seen::No,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn v2_service_request_and_v1() {
        // SrvRqst, length 29, XID 1, "en", then empty PR list and a service type.
        let mut v2 = vec![2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2, b'e', b'n', 0, 0, 0, 8];
        v2.extend_from_slice(b"service:");
        v2.push(0);
        let n = v2.len();
        v2[4] = n as u8;
        assert!(matches!(run(detect, &v2, [40000, 427]), Seen::Is(_)));
        v2[1] = 12;
        assert_eq!(run(detect, &v2, [40000, 427]), Seen::No);
        let v1 = [1, 1, 0, 12, 0, 0, b'e', b'n', 0, 3, 0, 1];
        assert!(matches!(run(detect, &v1, [40000, 427]), Seen::Is(_)));
        assert_eq!(run(detect, &v1[..11], [40000, 427]), Seen::No);
        robust(detect, &v2, [40000, 427]);
    }
}
