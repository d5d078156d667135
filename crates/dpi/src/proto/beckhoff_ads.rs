//! Beckhoff ADS over AMS/TCP (port 48898): a 6-byte AMS/TCP header (reserved zero, length
//! equal to the rest), then the 32-byte AMS header with a defined command and state flags.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "BeckhoffADS";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0]),
    evidence: "reserved 0x0000, an AMS/TCP length equal to the rest, an ADS command id 0-9, \
               defined state flags, and a data length equal to what follows the AMS header",
    source: "Beckhoff Information System, \"ADS/AMS specification\" (AMS/TCP packet)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 38 || b[..2] != [0, 0] {
        return Seen::No;
    }
    let len = super::le32(b, 2).unwrap_or(0) as usize;
    let command = u16::from_le_bytes([b[22], b[23]]);
    let flags = u16::from_le_bytes([b[24], b[25]]);
    let data = super::le32(b, 26).unwrap_or(u32::MAX) as usize;
    if len + 6 == b.len()
        && command <= 9
        && flags & !0x00ff == 0
        && flags & 0x04 != 0
        && data + 38 == b.len()
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
    fn read_device_info() {
        let mut m = vec![0, 0, 32, 0, 0, 0];
        m.extend_from_slice(&[5, 1, 2, 3, 1, 1, 0x53, 3, 10, 0, 0, 0, 1, 1, 0x10, 0x80]);
        m.extend_from_slice(&[1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]);
        assert!(matches!(run(detect, &m, [40000, 48898]), Seen::Is(_)));
        m[22] = 20;
        assert_eq!(run(detect, &m, [40000, 48898]), Seen::No);
        robust(detect, &m, [40000, 48898]);
    }
}
