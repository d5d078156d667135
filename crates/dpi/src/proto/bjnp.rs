//! BJNP (Canon's printer and scanner discovery and transport): a 16-byte header starting
//! with `BJNP` (requests) or `BNJP` (replies).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be32};

const NAME: &str = "BJNP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Bytes(b"BM"),
    evidence: "the magic `BJNP`/`BNJB`/`MFNP`, a device type (1-2 or 0x81-0x82), and a \
               payload length equal to the rest of the packet",
    source: "the cups-bjnp project's protocol description",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 16 || !(b.starts_with(b"BJNP") || b.starts_with(b"BNJB") || b.starts_with(b"MFNP"))
    {
        return Seen::No;
    }
    let len = be32(b, 12).unwrap_or(u32::MAX) as usize;
    if matches!(b[4], 1 | 2 | 0x81 | 0x82) && len + 16 == b.len() {
        return super::is(&NAME);
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn discover() {
        let m = b"BJNP\x02\x01\x00\x00\x17\xa4\x00\x00\x00\x00\x00\x00";
        assert!(matches!(run(detect, m, [50087, 8612]), Seen::Is(_)));
        assert_eq!(
            run(detect, b"BJNP\x02\x01\x00\x00\x17\xa4\x00\x00\x00\x00\x00\x05", [1, 2]),
            Seen::No
        );
        robust(detect, m, [1, 8612]);
    }
}
