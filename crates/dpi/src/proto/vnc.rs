//! VNC: recognised from the fixed bytes its messages start with. The 12-byte version banner `RFB 003.00x` (or 004/005) and its line end.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "VNC";

const PREFIXES: &[&[u8]] = &[b"RFB 003.", b"RFB 004.", b"RFB 005."];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x52]),
    evidence: "the 12-byte version banner `RFB 003.00x` (or 004/005) and its line end",
    source: "RFC 6143, section 7.1.1",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !PREFIXES.iter().any(|m| b.starts_with(m)) {
        return Seen::No;
    }
    if b.len() != 12 || b[11] != b'\n' || !b[8..11].iter().all(u8::is_ascii_digit) {
        return Seen::No;
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn recognised_and_not() {
        let good = b"RFB 003.008\x0a";
        assert!(matches!(run(detect, good, [40000, 40001]), Seen::Is(_)));
        assert_eq!(run(detect, b"RFB 3.8\x0a", [40000, 40001]), Seen::No);
        robust(detect, good, [40000, 40001]);
    }
}
