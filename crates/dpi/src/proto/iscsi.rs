//! iSCSI: a login request or response basic header segment (48 bytes), its data segment
//! length, and the login's text keys (`InitiatorName=`, `TargetName=`, ...).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "iSCSI";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x03, 0x43, 0x23]),
    evidence: "a login request (opcode 0x03) or response (0x23), a data segment length that \
               fits, and text keys such as `InitiatorName=` or `TargetPortalGroupTag=` in it",
    source: "RFC 7143, sections 11.12 and 11.13",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 56 || !matches!(b[0] & 0x3f, 0x03 | 0x23) {
        return Seen::No;
    }
    let data = usize::from(b[5]) << 16 | usize::from(b[6]) << 8 | usize::from(b[7]);
    let ahs = usize::from(b[4]) * 4;
    if 48 + ahs + data > b.len() + 4096 || data == 0 {
        return Seen::No;
    }
    let text = &b[48 + ahs.min(b.len() - 48)..];
    let keys: [&[u8]; 5] = [
        b"InitiatorName=",
        b"TargetName=",
        b"SessionType=",
        b"AuthMethod=",
        b"TargetPortalGroupTag=",
    ];
    if keys.iter().any(|k| text.starts_with(k)) { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn login_request() {
        let text = b"InitiatorName=iqn.1991-05.com.example:host\0SessionType=Discovery\0";
        let mut m = vec![0x43, 0x87, 0, 0, 0, 0, 0, text.len() as u8];
        m.resize(48, 0);
        m.extend_from_slice(text);
        assert!(matches!(run(detect, &m, [40000, 3260]), Seen::Is(_)));
        m[48] = b'X';
        assert_eq!(run(detect, &m, [40000, 3260]), Seen::No);
        robust(detect, &m, [40000, 3260]);
    }
}
