//! Xiaomi's push service (MiPush, TCP 5222): every message starts with a 12-byte header:
//! the magic 0xc2fe, the version 5, the 32-bit length of the body after the header, then
//! a 16-bit message type and a 16-bit header field.
//!
//! Sources: the header as nDPI's `xiaomi.c` gives it (magic and version, the length at
//! offset 4 counting from offset 12).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16, be32};

const NAME: &str = "Xiaomi";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0xc2]),
    evidence: "the magic 0xc2fe, version 5, and a body length that ends the message with the \
               segment",
    source: "nDPI's xiaomi.c (message header)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if be16(b, 0) != Some(0xc2fe) || be16(b, 2) != Some(5) {
        return Seen::No;
    }
    if be32(b, 4).and_then(|l| (l as usize).checked_add(12)) != Some(b.len()) {
        return Seen::No;
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn header() {
        let mut m = vec![0xc2, 0xfe, 0, 5, 0, 0, 0, 0x36, 0, 2, 0, 0x16];
        m.resize(66, 0x08);
        assert!(matches!(run(detect, &m, [39180, 5222]), Seen::Is(_)));
        robust(detect, &m, [39180, 5222]);
        assert_eq!(run(detect, &m[..65], [39180, 5222]), Seen::No);
        m[3] = 4;
        assert_eq!(run(detect, &m, [39180, 5222]), Seen::No);
    }
}
