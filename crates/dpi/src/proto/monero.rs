//! Monero: recognised from the fixed bytes its messages start with. The Levin portable-storage signature 0x0101010101012101.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Monero";

const PREFIXES: &[&[u8]] = &[b"\x01!\x01\x01\x01\x01\x01\x01"];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x01]),
    evidence: "the Levin portable-storage signature 0x0101010101012101",
    source: "Monero's Levin protocol description (epee, levin_base.h as documented)",
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
        let good = b"\x01!\x01\x01\x01\x01\x01\x01\x00\x01\x00\x00\x00\x00\x00\x00";
        assert!(matches!(run(detect, good, [40000, 40001]), Seen::Is(_)));
        assert_eq!(run(detect, b"\x01!\x01\x01\x01\x01\x01\x02", [40000, 40001]), Seen::No);
        robust(detect, good, [40000, 40001]);
    }
}
