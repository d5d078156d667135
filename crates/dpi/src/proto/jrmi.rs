//! JRMI: recognised from the fixed bytes its messages start with. The stream header `JRMI`, version 1 or 2.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "JRMI";

const PREFIXES: &[&[u8]] = &[b"JRMI\x00\x01", b"JRMI\x00\x02"];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x4a]),
    evidence: "the stream header `JRMI`, version 1 or 2",
    source: "Java RMI specification, chapter 10 (RMI wire protocol)",
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
        let good = b"JRMI\x00\x02K";
        assert!(matches!(run(detect, good, [40000, 40001]), Seen::Is(_)));
        assert_eq!(run(detect, b"JRMX\x00\x02K", [40000, 40001]), Seen::No);
        robust(detect, good, [40000, 40001]);
    }
}
