//! OICQ (Tencent QQ's classic UDP protocol): a 0x02 start tag, a client version, a command,
//! a sequence number and the QQ number, and a 0x03 end tag.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "OICQ";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[0x02]),
    evidence: "on QQ's UDP ports (8000, 4000): start tag 0x02, a client version, a command of \
               1-0x100, and the end tag 0x03 as the last byte",
    source: "Wireshark's OICQ dissector documentation (packet layout); Tencent's port list",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 11 || b[0] != 0x02 || !(p.port(8000) || p.port(4000)) {
        return Seen::No;
    }
    let version = be16(b, 1).unwrap_or(0);
    let command = be16(b, 3).unwrap_or(0);
    if version == 0 || !(1..=0x100).contains(&command) {
        return Seen::No;
    }
    if b.last() == Some(&0x03) { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn keepalive() {
        let m = [2, 0x3b, 0x0b, 0, 1, 0, 0x17, 0x56, 0x1f, 0x0c, 0x7b, 0, 0, 3];
        assert!(matches!(run(detect, &m, [60213, 8000]), Seen::Is(_)));
        assert_eq!(run(detect, &m[..13], [60213, 8000]), Seen::No);
        assert_eq!(run(detect, &m, [60213, 8001]), Seen::No);
        robust(detect, &m, [1, 8000]);
    }
}
