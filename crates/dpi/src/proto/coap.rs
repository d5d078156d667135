//! CoAP (RFC 7252) on its ports: version 1, a token of 0-8 bytes, a request or response
//! code, and options that parse up to the payload marker or the end.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "COAP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Range(0x40, 0x7f),
    evidence: "on port 5683/5684: version 1, token length <= 8, a request (0.01-0.07) or \
               response (2.xx-5.xx) or empty code, and options that parse to the end",
    source: "RFC 7252, section 3",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !(p.port(5683) || p.port(5684)) || b.len() < 4 || b[0] >> 6 != 1 {
        return Seen::No;
    }
    let tkl = usize::from(b[0] & 0x0f);
    let code = b[1];
    let class = code >> 5;
    if tkl > 8 || !(code <= 7 || matches!(class, 2 | 4 | 5)) {
        return Seen::No;
    }
    let mut at = 4 + tkl;
    loop {
        let Some(&byte) = b.get(at) else {
            return if at == b.len() { super::is(&NAME) } else { Seen::No };
        };
        if byte == 0xff {
            return if at + 1 < b.len() { super::is(&NAME) } else { Seen::No };
        }
        let (delta, len) = (byte >> 4, byte & 0x0f);
        if delta == 15 || len == 15 {
            return Seen::No;
        }
        at += 1 + match delta {
            13 => 1,
            14 => 2,
            _ => 0,
        };
        let len = match len {
            13 => {
                at += 1;
                usize::from(*b.get(at - 1).unwrap_or(&0)) + 13
            }
            14 => {
                at += 2;
                usize::from(crate::be16(b, at - 2).unwrap_or(0)) + 269
            }
            l => usize::from(l),
        };
        at += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn get_request() {
        // CON GET, message id, no token, Uri-Path "temp".
        let m = [0x40, 0x01, 0x12, 0x34, 0xb4, b't', b'e', b'm', b'p'];
        assert!(matches!(run(detect, &m, [40000, 5683]), Seen::Is(_)));
        assert_eq!(run(detect, &m, [40000, 5000]), Seen::No);
        assert_eq!(run(detect, &m[..8], [40000, 5683]), Seen::No);
        robust(detect, &m, [1, 5683]);
    }
}
