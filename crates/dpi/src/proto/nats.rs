//! Nats: recognised from the fixed bytes its messages start with. The server's `INFO {` or the client's `CONNECT {` line with a JSON object.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Nats";

const PREFIXES: &[&[u8]] = &[b"INFO {", b"CONNECT {"];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x43, 0x49]),
    evidence: "the server's `INFO {` or the client's `CONNECT {` line with a JSON object",
    source: "NATS client protocol documentation",
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
        let good = b"INFO {\x22server_id\x22:\x22x\x22}\x0d\x0a";
        assert!(matches!(run(detect, good, [40000, 40001]), Seen::Is(_)));
        assert_eq!(run(detect, b"INFO\x0d\x0a", [40000, 40001]), Seen::No);
        robust(detect, good, [40000, 40001]);
    }
}
