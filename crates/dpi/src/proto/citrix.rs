//! Citrix ICA: a session starts with the ICA detection string `\x7f\x7fICA\0`.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Citrix";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x7f]),
    evidence: "the ICA detection string 0x7F 0x7F `ICA` NUL at the start of the connection",
    source: "Citrix ICA protocol (Citrix product documentation; the ICA detect string)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    if p.payload.starts_with(b"\x7f\x7fICA\x00") { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn detect_string() {
        assert!(matches!(run(detect, b"\x7f\x7fICA\x00\x07\x00", [40000, 1494]), Seen::Is(_)));
        assert_eq!(run(detect, b"\x7f\x7fIXA\x00", [40000, 1494]), Seen::No);
        robust(detect, b"\x7f\x7fICA\x00", [40000, 1494]);
    }
}
