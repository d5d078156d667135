//! Avast's antivirus update and reputation channel: messages that start with the magic
//! `NOSA` and a 16-bit length of the whole message, then a version byte and a message type
//! (requests from the client, replies from the server), usually on TCP port 80.
//!
//! Sources: the magic and the length field as nDPI's `avast.c` gives them.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "AVAST";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(b"N"),
    evidence: "the magic `NOSA` and a 16-bit length equal to the segment's",
    source: "nDPI's avast.c (magic and length field)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 8 || !b.starts_with(b"NOSA") || be16(b, 4).map(usize::from) != Some(b.len()) {
        return Seen::No;
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn magic_and_length() {
        let mut m = b"NOSA\x00\x10\x01\x02".to_vec();
        m.extend_from_slice(&[0, 0, 0, 0, 0xe8, 0xe6, 0x7a, 0x0c]);
        assert!(matches!(run(detect, &m, [64357, 80]), Seen::Is(_)));
        robust(detect, &m, [64357, 80]);
        assert_eq!(run(detect, &m[..15], [64357, 80]), Seen::No);
        let mut other = m.clone();
        other[0] = b'M';
        assert_eq!(run(detect, &other, [64357, 80]), Seen::No);
        // Text that starts with the same letters is not it.
        assert_eq!(run(detect, b"NOSAUCE please\r\n", [64357, 80]), Seen::No);
    }
}
