//! Among Us (over the Hazel networking library, UDP 22023): a client opens with Hazel's
//! Hello packet: the type 8, a 16-bit reliable-message id, the Hazel version 0, the game's
//! 32-bit client version, and the player's name as a length-prefixed string that ends the
//! datagram.
//!
//! Sources: the hello as nDPI's `among_us.c` gives it (type 8, id 1, version 0, a client
//! version); Hazel's packet layout (the reliable id, the length-prefixed string).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "AmongUs";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[0x08]),
    evidence: "a Hello: type 8, an id, Hazel version 0, a client version, and a printable \
               name (1-32 bytes) whose length byte makes it end the datagram",
    source: "nDPI's among_us.c (hello); Hazel networking packet layout",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 10 || b[0] != 8 || b[3] != 0 || !p.from_initiator {
        return Seen::No;
    }
    let n = usize::from(b[8]);
    if !(1..=32).contains(&n) || b.len() != 9 + n || !b[9..].iter().all(u8::is_ascii_graphic) {
        return Seen::No;
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn hello() {
        let m = b"\x08\x00\x01\x00\x80\xd9\x02\x03\x06Player";
        assert!(matches!(run(detect, m, [64260, 22023]), Seen::Is(_)));
        robust(detect, m, [64260, 22023]);
        assert_eq!(run(detect, &m[..14], [64260, 22023]), Seen::No);
        assert_eq!(
            run(detect, b"\x08\x00\x01\x00\x80\xd9\x02\x03\x06Play\x01r", [1, 22023]),
            Seen::No
        );
    }
}
