//! ActiveMQ's OpenWire: the first command is WireFormatInfo (type 1) carrying the magic
//! `ActiveMQ`, after a size equal to the rest.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be32};

const NAME: &str = "OpenWire";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0]),
    evidence: "a size equal to the rest, command type 1 (WireFormatInfo) and the magic \
               `ActiveMQ`",
    source: "Apache ActiveMQ, \"OpenWire version 2 specification\"",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() >= 13
        && be32(b, 0).is_some_and(|l| l as usize + 4 == b.len())
        && b[4] == 1
        && &b[5..13] == b"ActiveMQ"
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
    fn wire_format_info() {
        let mut m = vec![0, 0, 0, 13, 1];
        m.extend_from_slice(b"ActiveMQ");
        m.extend_from_slice(&[0, 0, 0, 12]);
        assert!(matches!(run(detect, &m, [40000, 61616]), Seen::Is(_)));
        m[5] = b'a';
        assert_eq!(run(detect, &m, [40000, 61616]), Seen::No);
        robust(detect, &m, [40000, 61616]);
    }
}
