//! EtherNet/IP (CIP over TCP/UDP 44818): the 24-byte encapsulation header with a defined
//! command and a length equal to the rest.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "EthernetIP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Bytes(&[0x01, 0x04, 0x63, 0x64, 0x65, 0x66, 0x6f, 0x70]),
    evidence: "a defined encapsulation command (NOP, ListServices, ListIdentity, \
               ListInterfaces, RegisterSession, UnRegisterSession, SendRRData, SendUnitData), \
               a little-endian length equal to the rest, and zero options",
    source: "ODVA, The CIP Networks Library, Volume 2 (EtherNet/IP adaptation), chapter 2",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 24 || b[1] != 0 {
        return Seen::No;
    }
    let len = usize::from(u16::from_le_bytes([b[2], b[3]]));
    let options = super::le32(b, 20).unwrap_or(1);
    if matches!(b[0], 0x00 | 0x04 | 0x63 | 0x64 | 0x65 | 0x66 | 0x6f | 0x70)
        && len + 24 == b.len()
        && options == 0
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
    fn register_session() {
        let mut m = vec![0x65, 0, 4, 0];
        m.resize(24, 0);
        m.extend_from_slice(&[1, 0, 0, 0]);
        assert!(matches!(run(detect, &m, [40000, 44818]), Seen::Is(_)));
        m[2] = 5;
        assert_eq!(run(detect, &m, [40000, 44818]), Seen::No);
        robust(detect, &m, [1, 44818]);
    }
}
