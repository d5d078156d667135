//! EtherSIO (Nexus Integra's Ethernet I/O protocol over UDP): every message starts with the
//! magic `ESIO`, a zero byte, the protocol version (0-2) and another zero byte.
//!
//! Sources: the header as nDPI's `ethersio.c` gives it.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "EtherSIO";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(b"E"),
    evidence: "the magic `ESIO`, then 0, a version of 0-2, and 0, in a message of 20 bytes or more",
    source: "nDPI's ethersio.c (header)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 20 || !b.starts_with(b"ESIO") || b[4] != 0 || b[5] > 2 || b[6] != 0 {
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
        let mut m = b"ESIO\x00\x01\x00\x00\x31\x76\x16".to_vec();
        m.resize(49, 0);
        assert!(matches!(run(detect, &m, [1024, 6060]), Seen::Is(_)));
        robust(detect, &m, [1024, 6060]);
        m[5] = 3;
        assert_eq!(run(detect, &m, [1024, 6060]), Seen::No);
    }
}
