//! TRDP (train real-time data protocol, IEC 61375-2-3, UDP/TCP 17224-17225): a sequence
//! counter, protocol version 1.x, and a two-letter message type.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "TRDP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Any,
    evidence: "on port 17224 or 17225: protocol version 1.x and a process-data (`Pd`, `Pp`, \
               `Pr`, `Pe`) or message-data (`Mn`, `Mr`, `Mp`, `Mq`, `Mc`, `Me`) type",
    source: "IEC 61375-2-3, annex A (TRDP PD and MD headers)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !(p.port(17224) || p.port(17225)) || b.len() < 40 || b[4] != 1 {
        return Seen::No;
    }
    match &b[6..8] {
        b"Pd" | b"Pp" | b"Pr" | b"Pe" | b"Mn" | b"Mr" | b"Mp" | b"Mq" | b"Mc" | b"Me" => {
            super::is(&NAME)
        }
        _ => Seen::No,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn process_data() {
        let mut m = vec![0, 0, 0, 1, 1, 0, b'P', b'd'];
        m.resize(40, 0);
        assert!(matches!(run(detect, &m, [17224, 17224]), Seen::Is(_)));
        m[6] = b'X';
        assert_eq!(run(detect, &m, [17224, 17224]), Seen::No);
        robust(detect, &m, [17224, 17224]);
    }
}
