//! Munin: recognised from the fixed bytes its messages start with. The node's greeting `# munin node at `.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Munin";

const PREFIXES: &[&[u8]] = &[b"# munin node at "];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x23]),
    evidence: "the node's greeting `# munin node at `",
    source: "Munin node protocol documentation",
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
        let good = b"# munin node at host.example\x0a";
        assert!(matches!(run(detect, good, [40000, 40001]), Seen::Is(_)));
        assert_eq!(run(detect, b"# munin at", [40000, 40001]), Seen::No);
        robust(detect, good, [40000, 40001]);
    }
}
