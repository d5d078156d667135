//! IEC 60870-5-104: APDUs of start byte 0x68, a length, and an I, S or U format control
//! field; a segment holds whole APDUs.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "IEC60870";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x68]),
    evidence: "APDUs that fill the segment exactly, each with start 0x68, a length of 4-253, \
               and a valid control field (a U-format function, S-format zero bits, or an \
               I-format ASDU with a type id)",
    source: "IEC 60870-5-104, clause 5 (APCI)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let mut at = 0;
    while at < b.len() {
        let Some(apdu) = b.get(at..at + 2 + usize::from(*b.get(at + 1).unwrap_or(&0))) else {
            return Seen::No;
        };
        if apdu[0] != 0x68 || !(4..=253).contains(&apdu[1]) {
            return Seen::No;
        }
        let c = &apdu[2..6];
        let ok = match c[0] & 3 {
            // U format: one function bit, the rest zero.
            3 => {
                apdu[1] == 4
                    && matches!(c[0], 0x07 | 0x0b | 0x13 | 0x23 | 0x43 | 0x83)
                    && c[1..] == [0, 0, 0]
            }
            // S format.
            1 => apdu[1] == 4 && c[0] == 1 && c[1] == 0 && c[2] & 1 == 0,
            // I format: an ASDU with a type identification.
            _ => {
                apdu[1] > 4 && c[2] & 1 == 0 && apdu.get(6).is_some_and(|&t| (1..=127).contains(&t))
            }
        };
        if !ok {
            return Seen::No;
        }
        at += apdu.len();
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn startdt_and_i_frame() {
        let startdt = [0x68, 4, 0x07, 0, 0, 0];
        assert!(matches!(run(detect, &startdt, [40000, 2404]), Seen::Is(_)));
        let i = [0x68, 0x0e, 0, 0, 0, 0, 0x64, 1, 6, 0, 1, 0, 0, 0, 0, 0x14];
        assert!(matches!(run(detect, &i, [40000, 2404]), Seen::Is(_)));
        let both = [&startdt[..], &i[..]].concat();
        assert!(matches!(run(detect, &both, [40000, 2404]), Seen::Is(_)));
        assert_eq!(run(detect, &both[..both.len() - 1], [40000, 2404]), Seen::No);
        assert_eq!(run(detect, &[0x68, 4, 0x05, 0, 0, 0], [40000, 2404]), Seen::No);
        robust(detect, &both, [1, 2]);
    }
}
