//! Roughtime (secure time synchronisation): a request is a tag-value message, optionally
//! framed by the `ROUGHTIM` magic and a length, whose tags include a nonce.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Roughtime";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Any,
    evidence: "the `ROUGHTIM` frame with a length equal to the rest, or a message whose tag \
               count (1-64), increasing offsets and tags include `NONC`, `SREP` or `SIG`",
    source: "IETF draft-ietf-ntp-roughtime, section 5 (message format)",
    detect,
};

fn message(b: &[u8]) -> bool {
    let Some(n) = super::le32(b, 0).map(|n| n as usize) else { return false };
    if !(1..=64).contains(&n) || b.len() < 4 + 8 * n - 4 {
        return false;
    }
    let offsets = &b[4..4 + 4 * (n - 1)];
    let tags = &b[4 + 4 * (n - 1)..4 + 4 * (n - 1) + 4 * n];
    let mut last = 0u32;
    for o in offsets.chunks(4) {
        let v = u32::from_le_bytes([o[0], o[1], o[2], o[3]]);
        if v < last || v % 4 != 0 {
            return false;
        }
        last = v;
    }
    tags.chunks(4).any(|t| t == b"NONC" || t == b"SREP" || t == b"SIG\0")
}

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.starts_with(b"ROUGHTIM") {
        let len = super::le32(b, 8).unwrap_or(0) as usize;
        return if len + 12 == b.len() && message(&b[12..]) { super::is(&NAME) } else { Seen::No };
    }
    if message(b) { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn request_with_nonce_and_padding() {
        let mut m = vec![2, 0, 0, 0, 64, 0, 0, 0];
        m.extend_from_slice(b"NONCPAD\xff");
        m.resize(1024, 0);
        assert!(matches!(run(detect, &m, [40000, 2002]), Seen::Is(_)));
        let mut framed = b"ROUGHTIM".to_vec();
        framed.extend_from_slice(&(m.len() as u32).to_le_bytes());
        framed.extend_from_slice(&m);
        assert!(matches!(run(detect, &framed, [40000, 2002]), Seen::Is(_)));
        m[8..12].copy_from_slice(b"XXXX");
        assert_eq!(run(detect, &m, [40000, 2002]), Seen::No);
        robust(detect, &framed[..40], [1, 2002]);
    }
}
