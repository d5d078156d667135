//! Syncthing: recognised from the fixed bytes its messages start with. The local discovery announcement magic 0x2EA7D90B (v2) or 0x7D131AB4 (v1) and a device id.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Syncthing";

const PREFIXES: &[&[u8]] = &[b".\xa7\xd9\x0b", b"}\x13\x1a\xb4"];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[0x2e, 0x7d]),
    evidence: "the local discovery announcement magic 0x2EA7D90B (v2) or 0x7D131AB4 (v1) and a device id",
    source: "Syncthing documentation, \"Local Discovery Protocol v4\"",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !PREFIXES.iter().any(|m| b.starts_with(m)) {
        return Seen::No;
    }
    if b.len() < 20 {
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
        let good = b".\xa7\xd9\x0b\x0a \x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00";
        assert!(matches!(run(detect, good, [40000, 40001]), Seen::Is(_)));
        assert_eq!(run(detect, b".\xa7\xd9\x0c\x0a", [40000, 40001]), Seen::No);
        robust(detect, good, [40000, 40001]);
    }
}
