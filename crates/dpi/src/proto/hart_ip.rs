//! HART-IP (process instrumentation over IP, port 5094): version 1 or 2, a message type and
//! id, and a byte count equal to the message's.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "HART-IP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Bytes(&[1, 2]),
    evidence: "version 1 or 2, a message type 0-3 (request, response, publish, NAK), a \
               message id 0-3 or 128, and a byte count equal to the message: on port 5094 one \
               such message, elsewhere three with advancing sequence numbers",
    source: "FieldComm Group, HART-IP specification (HCF_SPEC-085), header format",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 8 {
        return Seen::No;
    }
    if matches!(b[0], 1 | 2)
        && b[1] <= 3
        && matches!(b[2], 0..=3 | 128)
        && usize::from(be16(b, 6).unwrap_or(0)) == b.len()
    {
        // On the HART-IP port one header is enough; a session a server answers from another
        // port needs three whose sequence numbers advance.
        if p.port(5094) {
            return super::is(&NAME);
        }
        return Seen::Maybe(
            crate::Label { master: crate::Proto::Other(&NAME), app: None },
            0,
            be16(b, 4),
        );
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn session_initiate() {
        let m = [1, 0, 0, 0, 0, 1, 0, 13, 1, 0, 0, 0xea, 0x60];
        assert!(matches!(run(detect, &m, [40000, 5094]), Seen::Is(_)));
        assert!(matches!(run(detect, &m, [40000, 5095]), Seen::Maybe(..)));
        assert_eq!(run(detect, &m[..12], [40000, 5095]), Seen::No);
        robust(detect, &m, [40000, 5094]);
    }
}
