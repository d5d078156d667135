//! TiVoConnect: recognised from the fixed bytes its messages start with. The beacon's `tivoconnect=` line.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "TiVoConnect";

const PREFIXES: &[&[u8]] = &[b"tivoconnect="];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(b"tT"),
    evidence: "the beacon's `tivoconnect=` line",
    source: "TiVo Connect discovery beacon documentation",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !PREFIXES.iter().any(|m| b.len() >= m.len() && b[..m.len()].eq_ignore_ascii_case(m)) {
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
        let good = b"tivoconnect=1\x0aswversion=1\x0a";
        assert!(matches!(run(detect, good, [40000, 40001]), Seen::Is(_)));
        // Beacons write the name in mixed case.
        assert!(matches!(run(detect, b"TiVoConnect=1\x0a", [2190, 2190]), Seen::Is(_)));
        assert_eq!(run(detect, b"tivo=1\x0a", [40000, 40001]), Seen::No);
        robust(detect, good, [40000, 40001]);
    }
}
