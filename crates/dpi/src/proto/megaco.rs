//! Megaco: recognised from the fixed bytes its messages start with. The text message header `MEGACO/n` (or its short form `!/n`) and a message id.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Megaco";

const PREFIXES: &[&[u8]] = &[b"MEGACO/1 ", b"MEGACO/2 ", b"MEGACO/3 ", b"!/1 ", b"!/2 ", b"!/3 "];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[0x21, 0x4d]),
    evidence: "the text message header `MEGACO/n` (or its short form `!/n`) and a message id",
    source: "RFC 3525 (H.248.1), annex B",
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
        let good = b"MEGACO/1 [192.0.2.1]:2944\x0aTransaction = 1 {\x0a";
        assert!(matches!(run(detect, good, [40000, 40001]), Seen::Is(_)));
        assert_eq!(run(detect, b"MEGACO 1", [40000, 40001]), Seen::No);
        robust(detect, good, [40000, 40001]);
    }
}
