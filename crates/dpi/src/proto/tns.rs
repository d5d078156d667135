//! Oracle's TNS (Transparent Network Substrate): a packet length equal to the segment's, a
//! zero packet checksum, a defined packet type, and for a connect packet its connect
//! descriptor.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "Oracle";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0, 1, 2, 3, 4, 5, 6, 7]),
    evidence: "a packet length equal to the segment's, a zero packet checksum, and a connect \
               packet (type 1) whose data holds a `(DESCRIPTION=` or `(CONNECT_DATA=` \
               descriptor, or, on port 1521, an accept, refuse, redirect or data packet",
    source: "Oracle Net Services reference (TNS packet format, connect descriptors)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 10 || usize::from(be16(b, 0).unwrap_or(0)) != b.len() || be16(b, 2) != Some(0) {
        return Seen::No;
    }
    let has = |s: &[u8]| b.windows(s.len()).any(|w| w.eq_ignore_ascii_case(s));
    match b[4] {
        1 if has(b"(DESCRIPTION=") || has(b"(CONNECT_DATA=") => super::is(&NAME),
        2 | 4 | 5 | 6 | 11 | 12 if p.port(1521) => super::is(&NAME),
        _ => Seen::No,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn connect() {
        let mut m = vec![0, 0, 0, 0, 1, 0, 0, 0, 1, 0x3a];
        m.extend_from_slice(b"(DESCRIPTION=(CONNECT_DATA=(SERVICE_NAME=orcl)))");
        let n = m.len() as u16;
        m[..2].copy_from_slice(&n.to_be_bytes());
        assert!(matches!(run(detect, &m, [40000, 1521]), Seen::Is(_)));
        m[2] = 1;
        assert_eq!(run(detect, &m, [40000, 1521]), Seen::No);
        robust(detect, &m, [40000, 1521]);
    }
}
