//! CAPWAP (wireless access point control and data, UDP 5246/5247): the preamble and the
//! header's length and flags.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "CAPWAP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[0, 1]),
    evidence: "on port 5246/5247: preamble version 0 and type 0 (clear) or 1 (DTLS), a \
               header length of at least 8 bytes that fits, and a wireless binding id 0-3",
    source: "RFC 5415, section 4.1-4.3",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !(p.port(5246) || p.port(5247)) || b.len() < 8 {
        return Seen::No;
    }
    match b[0] {
        // DTLS header: preamble then 3 reserved bytes, then a DTLS record.
        1 => {
            if b[1..4] == [0, 0, 0] && b.len() > 6 && (20..=25).contains(&b[4]) && b[5] == 0xfe {
                return super::is(&NAME);
            }
            Seen::No
        }
        0 => {
            let hlen = usize::from(b[1] >> 3) * 4;
            let wbid = (u16::from(b[2]) << 8 | u16::from(b[3])) >> 9 & 0x1f;
            if hlen >= 8 && hlen <= b.len() && wbid <= 3 {
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
    fn discovery_request() {
        let m = [0, 0x10, 0x02, 0x00, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0];
        assert!(matches!(run(detect, &m, [40000, 5246]), Seen::Is(_)));
        assert_eq!(run(detect, &m, [40000, 5000]), Seen::No);
        robust(detect, &m, [1, 5246]);
    }
}
