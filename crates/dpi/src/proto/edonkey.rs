//! eDonkey and eMule: a protocol byte (0xE3 eDonkey, 0xC5 eMule, 0xD4 packed), a
//! little-endian length of the rest, and an opcode; over TCP the first message is a hello.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "eDonkey";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0xe3, 0xc5, 0xd4]),
    evidence: "the protocol byte, a little-endian length equal to the rest (or larger, \
               continued), and a hello (0x01) or hello answer (0x4C) with a 16-byte user hash \
               in the first message",
    source: "The eDonkey/eMule protocol specification (Kulbak and Bickson, 2005)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 6 {
        return Seen::No;
    }
    let len = super::le32(b, 1).unwrap_or(0) as usize;
    if len == 0 || len + 5 < b.len() {
        return Seen::No;
    }
    // A hello: opcode 0x01 then the hash length 16; a hello answer: 0x4C.
    let hello = (b[5] == 0x01 && b.get(6) == Some(&16)) || (b[5] == 0x4c && len + 5 == b.len());
    if hello && b[0] != 0xd4 { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn hello() {
        let mut m = vec![0xe3, 0, 0, 0, 0, 0x01, 16];
        m.extend_from_slice(&[0xab; 16]);
        m.extend_from_slice(&[0; 10]);
        let n = (m.len() - 5) as u32;
        m[1..5].copy_from_slice(&n.to_le_bytes());
        assert!(matches!(run(detect, &m, [40000, 4662]), Seen::Is(_)));
        m[5] = 0x02;
        assert_eq!(run(detect, &m, [40000, 4662]), Seen::No);
        robust(detect, &m, [40000, 4662]);
    }
}
