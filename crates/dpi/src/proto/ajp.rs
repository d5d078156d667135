//! AJP13 (Apache JServ Protocol): packets to the container start with 0x1234, packets back
//! with `AB`, then a length equal to the rest and a defined prefix code.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "AJP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x12, b'A']),
    evidence: "the magic 0x1234 (to the container) with a forward-request, shutdown, ping or \
               CPing code, or `AB` (from it) with a send-body, headers, end, get-body or CPong \
               code, and a length equal to the rest",
    source: "Apache Tomcat Connectors, \"AJPv13\" protocol reference",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let Some(len) = be16(b, 2).map(usize::from) else { return Seen::No };
    if b.len() < 5 || len + 4 != b.len() {
        return Seen::No;
    }
    let ok = match &b[..2] {
        [0x12, 0x34] => matches!(b[4], 2 | 7 | 8 | 10),
        b"AB" => matches!(b[4], 3..=6 | 9),
        _ => false,
    };
    if ok { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn cping_cpong() {
        assert!(matches!(run(detect, &[0x12, 0x34, 0, 1, 10], [40000, 8009]), Seen::Is(_)));
        assert!(matches!(run(detect, b"AB\x00\x01\x09", [8009, 40000]), Seen::Is(_)));
        assert_eq!(run(detect, &[0x12, 0x34, 0, 2, 10], [40000, 8009]), Seen::No);
        robust(detect, &[0x12, 0x34, 0, 1, 10], [1, 8009]);
    }
}
