//! CORBA's GIOP (and IIOP over TCP): the `GIOP` magic, version 1.0-1.3, a message type 0-7,
//! and a message size equal to the rest.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be32};

const NAME: &str = "Corba";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Bytes(b"G"),
    evidence: "the magic `GIOP`, version 1.0-1.3, a message type 0-7, and a message size (in \
               the byte order the flags give) equal to the rest or larger when fragmented",
    source: "OMG CORBA 3.x, Part 2, chapter 9 (GIOP message header)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 12 || !b.starts_with(b"GIOP") || b[4] != 1 || b[5] > 3 || b[7] > 7 {
        return Seen::No;
    }
    let little = b[6] & 1 != 0;
    let size = if little { super::le32(b, 8) } else { be32(b, 8) }.unwrap_or(0) as usize;
    if size + 12 >= b.len() { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn request() {
        let m = b"GIOP\x01\x02\x01\x00\x04\x00\x00\x00abcd";
        assert!(matches!(run(detect, m, [40000, 2809]), Seen::Is(_)));
        assert_eq!(run(detect, b"GIOP\x02\x02\x01\x00\x04\x00\x00\x00abcd", [1, 2]), Seen::No);
        robust(detect, m, [40000, 2809]);
    }
}
