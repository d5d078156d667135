//! RX, the remote procedure call transport of AFS (UDP 7000-7009): a 28-byte header with a
//! packet type 1-13, a service id, and call and sequence numbers.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16, be32};

const NAME: &str = "RX";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Any,
    evidence: "on ports 7000-7009: a non-zero epoch and connection id, a packet type 1-13, \
               flags below 0x40, and a security index 0-3",
    source: "OpenAFS, the Rx protocol specification (rx.h header layout)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !(7000..=7009).any(|port| p.port(port)) || b.len() < 28 {
        return Seen::No;
    }
    let ok = be32(b, 0).unwrap_or(0) != 0
        && (1..=13).contains(&b[20])
        && b[21] < 0x40
        && b[23] <= 3
        && be16(b, 26).is_some();
    if ok { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn data_packet() {
        let mut m = vec![
            0x5f, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 52,
        ];
        m.extend_from_slice(&[0; 8]);
        assert!(matches!(run(detect, &m, [7001, 7000]), Seen::Is(_)));
        assert_eq!(run(detect, &m, [6000, 6001]), Seen::No);
        robust(detect, &m, [7001, 7000]);
    }
}
