//! Alibaba Cloud's IoT device channel over TCP: each message is framed by the magic
//! `ce fa be ba` and a 32-bit little-endian length of the body that follows (in the same
//! segment, or in the next ones when the 8-byte frame header is sent on its own).
//!
//! Sources: the magic and the frame header as nDPI's `alicloud.c` gives them; the length's
//! byte order from the frames themselves (a header of its own announces the next segment).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be32};

const NAME: &str = "AliCloud";

const MAGIC: u32 = 0xcefa_beba;

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0xce]),
    evidence: "the frame magic `cefabeba` and a body length (1 byte to 1 MB) that is the \
               rest of the segment, or a lone 8-byte frame header",
    source: "nDPI's alicloud.c (magic and frame header)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if be32(b, 0) != Some(MAGIC) {
        return Seen::No;
    }
    let Some(len) = super::le32(b, 4).map(|l| l as usize) else { return Seen::No };
    if !(1..=1 << 20).contains(&len) || (b.len() != 8 && b.len() != 8 + len) {
        return Seen::No;
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn frames() {
        let header = [0xce, 0xfa, 0xbe, 0xba, 0x80, 0, 0, 0];
        assert!(matches!(run(detect, &header, [39018, 8999]), Seen::Is(_)));
        let mut whole = vec![0xce, 0xfa, 0xbe, 0xba, 0x30, 0, 0, 0];
        whole.extend_from_slice(&[0x5a; 0x30]);
        assert!(matches!(run(detect, &whole, [8999, 39018]), Seen::Is(_)));
        robust(detect, &whole, [8999, 39018]);
        // A length that is not the rest, a zero length, another magic.
        assert_eq!(run(detect, &whole[..whole.len() - 1], [1, 8999]), Seen::No);
        assert_eq!(run(detect, &[0xce, 0xfa, 0xbe, 0xba, 0, 0, 0, 0], [1, 8999]), Seen::No);
        assert_eq!(run(detect, &[0xce, 0xfa, 0xbe, 0xbb, 0x80, 0, 0, 0], [1, 8999]), Seen::No);
    }
}
