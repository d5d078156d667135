//! FastCGI: records of version 1 with a defined type, whose content and padding lengths add
//! up to the segment (a web server's first record is BEGIN_REQUEST, 8 bytes of content).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "FastCGI";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[1]),
    evidence: "version 1 records of types 1-11 that fill the segment exactly, the first a \
               BEGIN_REQUEST with 8 bytes of content and a defined role, or a reply record",
    source: "FastCGI Specification (Open Market, 1996), section 8",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 8 || b[0] != 1 {
        return Seen::No;
    }
    if b[1] == 1 && (be16(b, 4) != Some(8) || !be16(b, 8).is_some_and(|r| (1..=3).contains(&r))) {
        return Seen::No;
    }
    let mut at = 0;
    while at < b.len() {
        if b.get(at) != Some(&1) || !b.get(at + 1).is_some_and(|&t| (1..=11).contains(&t)) {
            return Seen::No;
        }
        let content = usize::from(be16(b, at + 4).unwrap_or(0));
        let pad = usize::from(*b.get(at + 6).unwrap_or(&0));
        at += 8 + content + pad;
    }
    if at == b.len() { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn begin_request() {
        let m = [1, 1, 0, 1, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        assert!(matches!(run(detect, &m, [40000, 9000]), Seen::Is(_)));
        assert_eq!(run(detect, &m[..15], [40000, 9000]), Seen::No);
        robust(detect, &m, [1, 9000]);
    }
}
