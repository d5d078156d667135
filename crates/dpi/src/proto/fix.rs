//! FIX (Financial Information eXchange): messages start with `8=FIX` (BeginString), SOH,
//! then `9=` (BodyLength).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "FIX";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(b"8"),
    evidence: "BeginString `8=FIX...` then SOH and BodyLength `9=` with digits",
    source: "FIX Protocol, FIXT 1.1 and FIX 4.x session layer specifications",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !b.starts_with(b"8=FIX") {
        return Seen::No;
    }
    let Some(soh) = b.iter().take(16).position(|&c| c == 1) else { return Seen::No };
    let rest = &b[soh + 1..];
    if rest.starts_with(b"9=") && rest.get(2).is_some_and(u8::is_ascii_digit) {
        return super::is(&NAME);
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn logon() {
        let m = b"8=FIX.4.2\x019=65\x0135=A\x0134=1\x01";
        assert!(matches!(run(detect, m, [5000, 9878]), Seen::Is(_)));
        assert_eq!(run(detect, b"8=FIX.4.2 9=65", [1, 2]), Seen::No);
        robust(detect, m, [1, 2]);
    }
}
