//! Cisco Skinny (SCCP) on TCP 2000: a little-endian length of the rest, a header version,
//! and a message id.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "CiscoSkinny";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Any,
    evidence: "on port 2000: messages whose little-endian length counts the rest after the \
               8-byte header, a header version 0, 0x11, 0x12 or 0x14, and a message id below \
               0x200 (station) or 0x8000-0x8100, filling the segment",
    source: "Cisco SCCP message definitions (as documented by Wireshark's skinny dissector)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !p.port(2000) {
        return Seen::No;
    }
    let mut at = 0;
    while at < b.len() {
        let (Some(len), Some(ver), Some(id)) =
            (super::le32(b, at), super::le32(b, at + 4), super::le32(b, at + 8))
        else {
            return Seen::No;
        };
        if len < 4
            || !matches!(ver, 0 | 0x11 | 0x12 | 0x14)
            || !(id < 0x200 || (0x8000..=0x8100).contains(&id))
        {
            return Seen::No;
        }
        at += 8 + len as usize;
    }
    if at == b.len() { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn keepalive() {
        let m = [4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert!(matches!(run(detect, &m, [40000, 2000]), Seen::Is(_)));
        assert_eq!(run(detect, &m, [40000, 2001]), Seen::No);
        robust(detect, &m, [1, 2000]);
    }
}
