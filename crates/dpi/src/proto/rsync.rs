//! RSYNC: recognised from the fixed bytes its messages start with. The daemon greeting `@RSYNCD: ` and a protocol version.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "RSYNC";

const PREFIXES: &[&[u8]] = &[b"@RSYNCD: "];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x40]),
    evidence: "the daemon greeting `@RSYNCD: ` and a protocol version",
    source: "rsync's daemon protocol (rsyncd.conf(5), the rsync technical report)",
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
        let good = b"@RSYNCD: 31.0\x0a";
        assert!(matches!(run(detect, good, [40000, 40001]), Seen::Is(_)));
        assert_eq!(run(detect, b"@RSYNC 31\x0a", [40000, 40001]), Seen::No);
        robust(detect, good, [40000, 40001]);
    }
}
