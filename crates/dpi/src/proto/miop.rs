//! MIOP, CORBA's Multicast Inter-ORB Protocol (UDP): each packet starts with the magic
//! `MIOP`, the version 1.0 (0x10), a flags byte, a 16-bit packet length, the packet number,
//! the number of packets and the unique id's length, and carries a fragment of a GIOP
//! message (magic `GIOP`) after its header.
//!
//! Sources: OMG's Unreliable Multicast Inter-ORB Protocol specification (the PacketHeader_1_0
//! layout); nDPI's `corba.c` (which names it Corba).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Corba";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(b"M"),
    evidence: "the magic `MIOP`, version 1.0, and a GIOP message (magic `GIOP`) within the \
               packet after the header",
    source: "OMG Unreliable Multicast Inter-ORB Protocol (PacketHeader_1_0); nDPI's corba.c",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 24 || !b.starts_with(b"MIOP") || b[4] != 0x10 {
        return Seen::No;
    }
    if !b[16..].windows(4).any(|w| w == b"GIOP") {
        return Seen::No;
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn packet_with_giop() {
        let mut m = b"MIOP\x10\x03\xe4\x00".to_vec();
        m.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 12]);
        m.extend_from_slice(&[0; 12]);
        m.extend_from_slice(b"GIOP\x01\x02\x01\x00");
        m.resize(60, 0);
        assert!(matches!(run(detect, &m, [34477, 15984]), Seen::Is(_)));
        robust(detect, &m, [34477, 15984]);
        let mut v = m.clone();
        v[4] = 0x20;
        assert_eq!(run(detect, &v, [34477, 15984]), Seen::No);
        assert_eq!(run(detect, &m[..34], [34477, 15984]), Seen::No);
    }
}
