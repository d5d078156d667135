//! GTP control and accounting (GPRS Tunnelling Protocol): GTP-C versions 1 and 2 on port
//! 2123 and GTP' on 3386, from the header's version, message type and length. nDPI labels
//! them `GTP.GTP_C` and `GTP.GTP_PRIME`.

use crate::registry::{Detector, First, Transport};
use crate::{Label, Meta, Packet, Proto, Seen, be16};

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[Proto::Other(&"GTP")],
    transport: Transport::Udp,
    first: First::Any,
    evidence: "on port 2123 (GTP-C) or 3386 (GTP'): version 1 or 2 with protocol type 1, a \
               defined message type, and a length equal to the rest of the datagram",
    source: "3GPP TS 29.060 (GTPv1-C), TS 29.274 (GTPv2-C), TS 32.295 (GTP')",
    detect,
};

fn label(app: &'static str) -> Seen {
    Seen::Is(Label { master: Proto::Other(&"GTP"), app: Some(app) })
}

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 8 {
        return Seen::No;
    }
    let version = b[0] >> 5;
    let len = usize::from(be16(b, 2).unwrap_or(0));
    if p.port(2123) {
        let ok = match version {
            1 => {
                b[0] & 0x10 != 0
                    && len + 8 == b.len()
                    && matches!(b[1], 1..=7 | 16..=27 | 31 | 128..=131)
            }
            2 => {
                b[0] & 0x07 == 0
                    && len + 4 == b.len()
                    && matches!(b[1], 1..=3 | 32..=39 | 64..=73 | 95..=128 | 130..=131 | 149..=176 | 200..=201 | 211..=240)
            }
            _ => false,
        };
        return if ok { label("GTP_C") } else { Seen::No };
    }
    if p.port(3386)
        && version <= 2
        && b[0] & 0x10 == 0
        && len + 6 <= b.len()
        && matches!(b[1], 1..=7 | 240 | 241)
    {
        return label("GTP_PRIME");
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn echo_request_v2() {
        let m = [0x40, 1, 0, 9, 0, 0, 1, 0, 3, 0, 1, 0, 0x0b];
        assert!(matches!(run(detect, &m, [2123, 2123]), Seen::Is(_)));
        assert_eq!(run(detect, &m[..12], [2123, 2123]), Seen::No);
        robust(detect, &m, [2123, 2123]);
    }
}
