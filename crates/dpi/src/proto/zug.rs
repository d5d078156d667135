//! ZUG, the consensus protocol of the Casper 2.0 blockchain, over UDP. Each datagram starts
//! with its own length (16 bits), the letters `UG` and the version byte 0x10.
//!
//! Sources: nDPI's `doc/protocols.rst` (what ZUG is) and `zug.c` (the opening `\0zUG` and
//! 0x10, where `\0z` is the length of a 122-byte datagram); the length field from the
//! datagrams' own form.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "ZUG";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Range(0x00, 0x05),
    evidence: "a 16-bit length equal to the datagram's, then `UG` and version 0x10",
    source: "nDPI's protocols.rst and zug.c (the opening bytes)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 16 || be16(b, 0).map(usize::from) != Some(b.len()) || &b[2..5] != b"UG\x10" {
        return Seen::No;
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn length_and_magic() {
        let mut d = vec![0, 0, b'U', b'G', 0x10];
        d.resize(122, 0x5c);
        d[1] = 122;
        assert!(matches!(run(detect, &d, [39594, 19000]), Seen::Is(_)));
        robust(detect, &d, [39594, 19000]);
        assert_eq!(run(detect, &d[..121], [39594, 19000]), Seen::No);
        let mut v = d.clone();
        v[4] = 0x11;
        assert_eq!(run(detect, &v, [39594, 19000]), Seen::No);
    }
}
