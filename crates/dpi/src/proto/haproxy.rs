//! HAProxy: recognised from the fixed bytes its messages start with. A PROXY protocol header: the v1 text line or the v2 12-byte signature.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "HAProxy";

const PREFIXES: &[&[u8]] =
    &[b"PROXY TCP4 ", b"PROXY TCP6 ", b"PROXY UNKNOWN", b"\x0d\x0a\x0d\x0a\x00\x0d\x0aQUIT\x0a"];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x0d, 0x50]),
    evidence: "a PROXY protocol header: the v1 text line or the v2 12-byte signature",
    source: "HAProxy PROXY protocol specification (proxy-protocol.txt)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !PREFIXES.iter().any(|m| b.starts_with(m)) {
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
        let good = b"PROXY TCP4 192.0.2.1 192.0.2.2 56324 443\x0d\x0a";
        assert!(matches!(run(detect, good, [40000, 40001]), Seen::Is(_)));
        assert_eq!(run(detect, b"PROXY TCP5 ", [40000, 40001]), Seen::No);
        robust(detect, good, [40000, 40001]);
    }
}
