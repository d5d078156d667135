//! HiSLIP (high-speed LAN instrument protocol, IVI-6.1, TCP 4880): the `HS` prologue, a
//! message type, and a 64-bit payload length equal to the rest.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be32};

const NAME: &str = "HiSLIP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(b"H"),
    evidence: "the prologue `HS`, a message type 0-26, and a 64-bit payload length equal to the \
               rest of the segment",
    source: "IVI Foundation, IVI-6.1: High-Speed LAN Instrument Protocol (HiSLIP), section 2.3",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 16 || !b.starts_with(b"HS") || b[2] > 26 {
        return Seen::No;
    }
    let len = u64::from(be32(b, 8).unwrap_or(u32::MAX)) << 32 | u64::from(be32(b, 12).unwrap_or(0));
    if len == (b.len() - 16) as u64 { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn initialize() {
        let mut m = b"HS\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x04".to_vec();
        m.extend_from_slice(b"hs0\0");
        assert!(matches!(run(detect, &m, [40000, 4880]), Seen::Is(_)));
        assert_eq!(run(detect, &m[..19], [40000, 4880]), Seen::No);
        robust(detect, &m, [40000, 4880]);
    }
}
