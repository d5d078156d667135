//! Nintendo's online play (the PIA peer-to-peer library over UDP): datagrams start with the
//! 32-bit magic 0x32ab9864 and the protocol version byte 2.
//!
//! Sources: the header as nDPI's `nintendo.c` gives it.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Nintendo";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[0x32]),
    evidence: "the magic 0x32ab9864 and version 2 at the start of a datagram over 48 bytes",
    source: "nDPI's nintendo.c (header)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() <= 48 || !b.starts_with(&[0x32, 0xab, 0x98, 0x64, 0x02]) {
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
        let mut d = vec![0x32, 0xab, 0x98, 0x64, 0x02];
        d.resize(80, 0x44);
        assert!(matches!(run(detect, &d, [52119, 50251]), Seen::Is(_)));
        robust(detect, &d, [52119, 50251]);
        assert_eq!(run(detect, &d[..48], [52119, 50251]), Seen::No);
        d[4] = 3;
        assert_eq!(run(detect, &d, [52119, 50251]), Seen::No);
    }
}
