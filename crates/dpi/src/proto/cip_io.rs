//! CIP implicit I/O over UDP 2222 (EtherNet/IP class 0/1 connections): a common packet
//! format with a sequenced address item and a connected data item.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "CIP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[2]),
    evidence: "on port 2222: two items, a sequenced address item (0x8002, length 8) then a \
               connected data item (0x00B1) whose length is the rest of the datagram",
    source: "ODVA, The CIP Networks Library, Volume 2, section 2-6 (common packet format)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !p.port(2222) || b.len() < 18 {
        return Seen::No;
    }
    let le = |at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    if le(0) == 2
        && le(2) == 0x8002
        && le(4) == 8
        && le(14) == 0x00b1
        && usize::from(le(16)) + 18 == b.len()
    {
        return super::is(&NAME);
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn io_datagram() {
        let mut m = vec![2, 0, 2, 0x80, 8, 0, 1, 0, 0, 0, 5, 0, 0, 0, 0xb1, 0, 4, 0];
        m.extend_from_slice(&[1, 0, 0, 0]);
        assert!(matches!(run(detect, &m, [2222, 2222]), Seen::Is(_)));
        assert_eq!(run(detect, &m[..21], [2222, 2222]), Seen::No);
        robust(detect, &m, [2222, 2222]);
    }
}
