//! Gearman: recognised from the fixed bytes its messages start with. The binary packet magic NUL `REQ` or NUL `RES` and a packet type 1-42.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Gearman";

const PREFIXES: &[&[u8]] = &[b"\x00REQ", b"\x00RES"];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x00]),
    evidence: "the binary packet magic NUL `REQ` or NUL `RES` and a packet type 1-42",
    source: "Gearman protocol documentation (PROTOCOL)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !PREFIXES.iter().any(|m| b.starts_with(m)) {
        return Seen::No;
    }
    if !crate::be32(b, 4).is_some_and(|t| (1..=42).contains(&t)) {
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
        let good = b"\x00REQ\x00\x00\x00\x07\x00\x00\x00\x00";
        assert!(matches!(run(detect, good, [40000, 40001]), Seen::Is(_)));
        assert_eq!(run(detect, b"\x00REX\x00\x00\x00\x07", [40000, 40001]), Seen::No);
        robust(detect, good, [40000, 40001]);
    }
}
