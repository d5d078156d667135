//! PTP version 2 (IEEE 1588) over UDP 319/320: a message type, version 2, and a message
//! length equal to the datagram's.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "PTPv2";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Any,
    evidence: "on port 319 or 320: a message type (Sync, Delay_Req, Pdelay, Follow_Up, \
               Delay_Resp, Announce, Signaling, Management), version 2, and a message length \
               (>= 34) equal to the datagram's (up to 8 bytes of padding after it)",
    source: "IEEE 1588-2008, clause 13.3 (common message header)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !(p.port(319) || p.port(320)) || b.len() < 34 {
        return Seen::No;
    }
    let kind = b[0] & 0x0f;
    // Link layers pad short frames: the length may fall short of the datagram by a few bytes.
    let len = usize::from(be16(b, 2).unwrap_or(0));
    if matches!(kind, 0..=3 | 8..=13)
        && b[1] & 0x0f == 2
        && len >= 34
        && len <= b.len()
        && b.len() - len <= 8
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
    fn sync() {
        let mut m = vec![0x00, 0x02, 0, 44];
        m.resize(44, 0);
        assert!(matches!(run(detect, &m, [319, 319]), Seen::Is(_)));
        assert_eq!(run(detect, &m, [318, 318]), Seen::No);
        // Two bytes of link padding after the message.
        let mut padded = m.clone();
        padded.extend_from_slice(&[0, 0]);
        assert!(matches!(run(detect, &padded, [319, 319]), Seen::Is(_)));
        robust(detect, &m, [319, 319]);
    }
}
