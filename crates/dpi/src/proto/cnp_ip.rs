//! CNP/IP (ISO/IEC 14908-4, EIA-852: the LonWorks control network protocol tunnelled over
//! IP): every datagram starts with a 20-byte header: its own length (16 bits), the version
//! (1), the packet type (1 for a data packet), the extended header size (0), the protocol
//! flags (the tunnelled protocol, 0-2), the vendor code, session id, sequence number and
//! timestamp.
//!
//! Sources: ISO/IEC 14908-4 (CN/IP common header); nDPI's `cnp-ip.c`.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "CNP-IP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Range(0x00, 0x05),
    evidence: "a 20-byte header: a length equal to the datagram's, version 1, a data packet \
               (type 1) with no extended header, and a tunnelled protocol of 0-2",
    source: "ISO/IEC 14908-4 (CN/IP header); nDPI's cnp-ip.c",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() <= 20 || be16(b, 0).map(usize::from) != Some(b.len()) {
        return Seen::No;
    }
    if b[2] != 1 || b[3] & 0x1f != 1 || b[4] != 0 || b[5] & 0x1f > 2 {
        return Seen::No;
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn data_packet() {
        let mut d = vec![0, 32, 1, 1, 0, 0, 0, 0, 0x6b, 0x8b, 0x45, 0x67];
        d.resize(32, 0);
        assert!(matches!(run(detect, &d, [39819, 1628]), Seen::Is(_)));
        robust(detect, &d, [39819, 1628]);
        assert_eq!(run(detect, &d[..31], [39819, 1628]), Seen::No);
        d[2] = 2;
        assert_eq!(run(detect, &d, [39819, 1628]), Seen::No);
    }
}
