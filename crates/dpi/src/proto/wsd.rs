//! WSD: recognised from the fixed bytes its messages start with. A SOAP envelope naming the WS-Discovery namespace (Probe, Hello, Resolve).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "WSD";

const PREFIXES: &[&[u8]] = &[b"<?xml", b"<soap:Envelope", b"<s:Envelope", b"<env:Envelope"];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[0x3c]),
    evidence: "a SOAP envelope naming the WS-Discovery namespace (Probe, Hello, Resolve)",
    source: "OASIS Web Services Dynamic Discovery (WS-Discovery) 1.1",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !PREFIXES.iter().any(|m| b.starts_with(m)) {
        return Seen::No;
    }
    let head = &b[..b.len().min(1024)];
    if !head.windows(34).any(|w| w == b"schemas.xmlsoap.org/ws/2005/04/dis")
        && !head.windows(30).any(|w| w == b"docs.oasis-open.org/ws-dd/ns/d")
    {
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
        let good = b"<?xml version=\x221.0\x22?><soap:Envelope xmlns:wsd=\x22http://schemas.xmlsoap.org/ws/2005/04/discovery\x22>";
        assert!(matches!(run(detect, good, [40000, 40001]), Seen::Is(_)));
        assert_eq!(run(detect, b"<?xml version=\x221.0\x22?><html>", [40000, 40001]), Seen::No);
        robust(detect, good, [40000, 40001]);
    }
}
