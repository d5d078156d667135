//! MongoDB's wire protocol: a little-endian header (message length, request id, response
//! to, opcode) with a defined opcode.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "MongoDB";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Any,
    evidence: "a message length (>= 16) equal to the segment's or larger (continued), a \
               defined opcode (1, 2001-2013), and for OP_MSG flag bits that are defined",
    source: "MongoDB Wire Protocol reference",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let (Some(len), Some(op)) = (super::le32(b, 0), super::le32(b, 12)) else { return Seen::No };
    let len = len as usize;
    if !(16..=48 * 1024 * 1024).contains(&len) || len < b.len() {
        return Seen::No;
    }
    match op {
        1 | 2001 | 2002 | 2004..=2007 | 2012 => {
            if len == b.len() && b.len() > 20 {
                super::is(&NAME)
            } else if p.port(27017) {
                super::maybe(&NAME, 0)
            } else {
                Seen::No
            }
        }
        // OP_MSG: flag bits 0, 1 and 16 only, then a section kind 0 or 1.
        2013 => {
            let flags = super::le32(b, 16).unwrap_or(u32::MAX);
            if flags & !0x0001_0003 == 0 && b.get(20).is_some_and(|&k| k <= 1) {
                super::is(&NAME)
            } else {
                Seen::No
            }
        }
        _ => Seen::No,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn op_msg() {
        let mut m = vec![0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xdd, 0x07, 0, 0, 0, 0, 0, 0, 0];
        m.extend_from_slice(&[5, 0, 0, 0, 0]);
        let n = m.len() as u32;
        m[..4].copy_from_slice(&n.to_le_bytes());
        assert!(matches!(run(detect, &m, [40000, 27017]), Seen::Is(_)));
        m[16] = 0x80;
        assert_eq!(run(detect, &m, [40000, 27017]), Seen::No);
        robust(detect, &m, [1, 27017]);
    }
}
