//! STOMP: recognised from the fixed bytes its messages start with. A CONNECT, STOMP or CONNECTED frame line followed by a header line.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "STOMP";

const PREFIXES: &[&[u8]] = &[
    b"CONNECT\x0a",
    b"STOMP\x0a",
    b"CONNECTED\x0a",
    b"CONNECT\x0d\x0a",
    b"STOMP\x0d\x0a",
    b"CONNECTED\x0d\x0a",
];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x43, 0x53]),
    evidence: "a CONNECT, STOMP or CONNECTED frame line followed by a header line",
    source: "STOMP Protocol Specification 1.2, section \"Connecting\"",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !PREFIXES.iter().any(|m| b.starts_with(m)) {
        return Seen::No;
    }
    if !b.contains(&b':') {
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
        let good = b"CONNECT\x0aaccept-version:1.2\x0ahost:x\x0a\x0a\x00";
        assert!(matches!(run(detect, good, [40000, 40001]), Seen::Is(_)));
        assert_eq!(run(detect, b"CONNECT x\x0a", [40000, 40001]), Seen::No);
        robust(detect, good, [40000, 40001]);
    }
}
