//! SOME/IP (automotive middleware): a 16-byte header whose length covers the rest, protocol
//! version 1, and a defined message type and return code.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be32};

const NAME: &str = "SOMEIP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Any,
    evidence: "a length equal to the rest of the message (or messages, back to back), protocol \
               version 1, a defined message type (with or without the TP flag) and return code",
    source: "AUTOSAR SOME/IP Protocol Specification (PRS_SOMEIPProtocol), section 4.1",
    detect,
};

fn one(b: &[u8]) -> Option<usize> {
    let len = be32(b, 4)? as usize;
    if len < 8 || b.len() < 16 || b[12] != 1 {
        return None;
    }
    let kind = b[14] & !0x20;
    let ret = b[15];
    if !matches!(kind, 0x00 | 0x01 | 0x02 | 0x80 | 0x81)
        || !(ret <= 0x0a || (0x20..=0x5e).contains(&ret))
    {
        return None;
    }
    Some(8 + len)
}

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let mut at = 0;
    while at < b.len() {
        match one(&b[at..]) {
            Some(n) => at += n,
            None => return Seen::No,
        }
    }
    if at == b.len() && at > 0 { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn request() {
        let m =
            [0x12, 0x34, 0x00, 0x01, 0, 0, 0, 12, 0, 1, 0, 7, 1, 1, 0, 0, 0xde, 0xad, 0xbe, 0xef];
        assert!(matches!(run(detect, &m, [40000, 30490]), Seen::Is(_)));
        assert_eq!(run(detect, &m[..19], [40000, 30490]), Seen::No);
        robust(detect, &m, [1, 30490]);
    }
}
