//! Omron FINS: over TCP the `FINS` header with a length equal to the rest; over UDP 9600 the
//! 10-byte FINS header (reserved byte 0, gateway count 2 or 7).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be32};

const NAME: &str = "FINS";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Any,
    evidence: "TCP: the `FINS` magic and a length equal to the rest; UDP on port 9600: a \
               command or response ICF, reserved byte 0, gateway count 2 or 7, and a defined \
               main request code",
    source: "Omron FINS Commands Reference Manual (W227), sections 3 and 5",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.starts_with(b"FINS") && b.len() >= 16 {
        let len = be32(b, 4).unwrap_or(0) as usize;
        return if len + 8 == b.len() { super::is(&NAME) } else { Seen::No };
    }
    if p.port(9600)
        && b.len() >= 12
        && b[0] & 0x3e == 0
        && b[1] == 0
        && matches!(b[2], 2 | 7)
        && matches!(b[10], 1..=9 | 0x0c | 0x21 | 0x22 | 0x23 | 0x26 | 0x28)
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
    fn memory_area_read() {
        let m = [0x80, 0, 2, 0, 1, 0, 0, 0x0a, 0, 0x11, 1, 1, 0x82, 0, 0x64, 0, 0, 0x0a];
        assert!(matches!(run(detect, &m, [40000, 9600]), Seen::Is(_)));
        assert_eq!(run(detect, &m, [40000, 9601]), Seen::No);
        robust(detect, &m, [40000, 9600]);
    }
}
