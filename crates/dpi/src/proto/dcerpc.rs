//! DCE/RPC: the connection-oriented PDU header (version 5.0 or 5.1, packet type, flags,
//! data representation, fragment length) and the connectionless one (version 4).

use crate::registry::{Detector, First, Transport};
use crate::{Label, Meta, Packet, Proto, Seen};

const NAME: &str = "DCERPC";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Bytes(&[4, 5]),
    evidence: "over TCP: version 5.0/5.1, a packet type 0-19, a data representation of \
               ASCII and IEEE/VAX/Cray/IBM floats, and a fragment length that fits the \
               segment; over UDP: version 4, a packet type 0-10 and the 80-byte header's \
               body length equal to the rest",
    source: "The Open Group, DCE 1.1: Remote Procedure Call, chapter 12 (RPC PDU encodings)",
    detect,
};

/// Whether a UUID (as sent, in the packet's byte order) is one of PROFINET IO's DCE/RPC
/// interfaces: device, controller, supervisor or parameter server,
/// `DEA0000x-6C97-11D1-8271-00A02442DF7D`.
fn profinet_io(uuid: &[u8], little: bool) -> bool {
    let (time_low, mid, hi) = if little {
        (
            u32::from_le_bytes([uuid[0], uuid[1], uuid[2], uuid[3]]),
            u16::from_le_bytes([uuid[4], uuid[5]]),
            u16::from_le_bytes([uuid[6], uuid[7]]),
        )
    } else {
        (
            u32::from_be_bytes([uuid[0], uuid[1], uuid[2], uuid[3]]),
            u16::from_be_bytes([uuid[4], uuid[5]]),
            u16::from_be_bytes([uuid[6], uuid[7]]),
        )
    };
    (0xdea0_0001..=0xdea0_0004).contains(&time_low)
        && mid == 0x6c97
        && hi == 0x11d1
        && uuid[8..16] == [0x82, 0x71, 0x00, 0xa0, 0x24, 0x42, 0xdf, 0x7d]
}

fn u16_in(b: &[u8], at: usize, little: bool) -> Option<u16> {
    let s = b.get(at..at + 2)?;
    Some(if little { u16::from_le_bytes([s[0], s[1]]) } else { u16::from_be_bytes([s[0], s[1]]) })
}

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    match b.first() {
        Some(5) if b.len() >= 16 => {
            let little = b[4] & 0xf0 == 0x10;
            let drep_ok = (b[4] & 0xf0 == 0x10 || b[4] & 0xf0 == 0)
                && b[4] & 0x0f == 0
                && b[5] <= 3
                && b[6] == 0
                && b[7] == 0;
            let frag = usize::from(u16_in(b, 8, little).unwrap_or(0));
            let auth = usize::from(u16_in(b, 10, little).unwrap_or(u16::MAX));
            // The fragment fills the segment, continues past it, or another PDU follows.
            let frag_ok = frag >= 16 + auth && (frag >= b.len() || b.get(frag) == Some(&5));
            if b[1] <= 1 && b[2] <= 19 && drep_ok && frag_ok {
                return super::is(&NAME);
            }
            Seen::No
        }
        Some(4) if b.len() >= 80 => {
            let little = b[4] & 0xf0 == 0x10;
            let drep_ok = (b[4] & 0xf0 == 0x10 || b[4] & 0xf0 == 0) && b[5] <= 3 && b[6] == 0;
            let body = usize::from(u16_in(b, 74, little).unwrap_or(u16::MAX));
            if b[1] <= 10 && drep_ok && 80 + body == b.len() && b[79] == 0 {
                // The interface id (bytes 24-39) names PROFINET IO's interfaces.
                if profinet_io(&b[24..40], little) {
                    return Seen::Is(Label {
                        master: Proto::Other(&NAME),
                        app: Some("PROFINET_IO"),
                    });
                }
                return super::is(&NAME);
            }
            Seen::No
        }
        _ => Seen::No,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn bind() {
        let mut m = vec![5, 0, 11, 3, 0x10, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0];
        m.extend_from_slice(&[0xb8, 0x10, 0xb8, 0x10, 0, 0, 0, 0, 1, 0, 0, 0]);
        let n = m.len() as u16;
        m[8..10].copy_from_slice(&n.to_le_bytes());
        assert!(matches!(run(detect, &m, [40000, 135]), Seen::Is(_)));
        m[2] = 30;
        assert_eq!(run(detect, &m, [40000, 135]), Seen::No);
        robust(detect, &m, [1, 2]);
    }
}
