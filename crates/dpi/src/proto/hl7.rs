//! HL7: recognised from the fixed bytes its messages start with. An MLLP block start (0x0B) then an HL7 v2 message header segment `MSH|`.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "HL7";

const PREFIXES: &[&[u8]] = &[b"\x0bMSH|"];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x0b]),
    evidence: "an MLLP block start (0x0B) then an HL7 v2 message header segment `MSH|`",
    source: "HL7 v2.x MLLP transport (HL7 Implementation Guide), MSH segment",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !PREFIXES.iter().any(|m| b.starts_with(m)) {
        return Seen::No;
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn recognised_and_not() {
        let good = b"\x0bMSH|^~\x5c&|APP|FAC\x0d";
        assert!(matches!(run(detect, good, [40000, 40001]), Seen::Is(_)));
        assert_eq!(run(detect, b"\x0bPID|", [40000, 40001]), Seen::No);
        robust(detect, good, [40000, 40001]);
    }
}
