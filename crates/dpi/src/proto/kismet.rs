//! Kismet: recognised from the fixed bytes its messages start with. The server's `*KISMET: ` protocol line.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Kismet";

const PREFIXES: &[&[u8]] = &[b"*KISMET: "];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x2a]),
    evidence: "the server's `*KISMET: ` protocol line",
    source: "Kismet client/server protocol documentation (legacy)",
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
        let good = b"*KISMET: 0.0.0 1 \x01Kismet\x01\x0a";
        assert!(matches!(run(detect, good, [40000, 40001]), Seen::Is(_)));
        assert_eq!(run(detect, b"*KISMIT: 0", [40000, 40001]), Seen::No);
        robust(detect, good, [40000, 40001]);
    }
}
