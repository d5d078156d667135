//! Ceph: recognised from the fixed bytes its messages start with. The messenger banner `ceph v027` (v1) or `ceph v2`.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Ceph";

const PREFIXES: &[&[u8]] = &[b"ceph v027", b"ceph v2\x0a"];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x63]),
    evidence: "the messenger banner `ceph v027` (v1) or `ceph v2`",
    source: "Ceph documentation, \"Messenger v2 protocol\"",
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
        let good = b"ceph v027\x00\x00\x00\x00";
        assert!(matches!(run(detect, good, [40000, 40001]), Seen::Is(_)));
        assert_eq!(run(detect, b"ceph v9", [40000, 40001]), Seen::No);
        robust(detect, good, [40000, 40001]);
    }
}
