//! LDP (label distribution, port 646): version 1 and a PDU length equal to the rest, then a
//! message of a defined type.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "LDP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Bytes(&[0]),
    evidence: "on port 646: version 1, a PDU length equal to the rest, and a first message of a \
               defined type (notification, hello, initialization, keepalive, address, label)",
    source: "RFC 5036, sections 3.1 and 3.5",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !p.port(646) || be16(b, 0) != Some(1) {
        return Seen::No;
    }
    let len = usize::from(be16(b, 2).unwrap_or(0));
    let kind = be16(b, 10).unwrap_or(0) & 0x7fff;
    if len + 4 <= b.len()
        && len >= 10
        && matches!(kind, 0x0001 | 0x0100 | 0x0200 | 0x0201 | 0x0300 | 0x0301 | 0x0400..=0x0404)
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
    fn hello() {
        let m = [
            0, 1, 0, 30, 10, 0, 0, 1, 0, 0, 1, 0, 0, 20, 0, 0, 0, 1, 4, 0, 0, 4, 0, 15, 0, 0, 4, 1,
            0, 4, 10, 0, 0, 1,
        ];
        assert!(matches!(run(detect, &m, [646, 646]), Seen::Is(_)));
        assert_eq!(run(detect, &m, [645, 647]), Seen::No);
        robust(detect, &m, [646, 646]);
    }
}
