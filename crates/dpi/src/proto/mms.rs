//! MMS (Manufacturing Message Specification, ISO 9506, used by IEC 61850) over ISO transport
//! on TCP (RFC 1006): a TPKT (version 3, a length equal to the segment's), a COTP data TPDU
//! (length 2, code 0xf0, end of TSDU), then the session layer's CONNECT or ACCEPT SPDU
//! (ISO 8327-1: 13 or 14, with a length equal to the rest), whose presentation context list
//! names MMS's abstract syntax, the object identifier 1.0.9506.2.1 (BER `06 05 28 ca 22 02
//! 01`).
//!
//! Sources: RFC 1006 (TPKT), ISO 8073 (COTP DT), ISO 8327-1 (session SPDU codes), ISO 9506-2
//! (the MMS abstract syntax's object identifier); nDPI's `iso9506-1-mms.c`.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "ISO9506-1-MMS";

/// The MMS abstract syntax, 1.0.9506.2.1, as a BER object identifier.
const MMS_SYNTAX: &[u8] = &[0x06, 0x05, 0x28, 0xca, 0x22, 0x02, 0x01];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[3]),
    evidence: "a TPKT and COTP data TPDU carrying a session CONNECT or ACCEPT (length equal to \
               the rest) whose presentation contexts name the MMS abstract syntax \
               1.0.9506.2.1",
    source: "RFC 1006, ISO 8073, ISO 8327-1, ISO 9506-2; nDPI's iso9506-1-mms.c",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 16 || b[0] != 3 || b[1] != 0 || be16(b, 2).map(usize::from) != Some(b.len()) {
        return Seen::No;
    }
    if b[4] != 2 || b[5] != 0xf0 || b[6] != 0x80 || !matches!(b[7], 13 | 14) {
        return Seen::No;
    }
    // The SPDU's length: one byte, or 0xff and two.
    let (len, at) = match b[8] {
        0xff => (be16(b, 9).map_or(0, usize::from), 11),
        l => (usize::from(l), 9),
    };
    if at + len != b.len() || !b[at..].windows(MMS_SYNTAX.len()).any(|w| w == MMS_SYNTAX) {
        return Seen::No;
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    fn connect(body: &[u8]) -> Vec<u8> {
        let mut m = vec![3, 0, 0, 0, 2, 0xf0, 0x80, 13, body.len() as u8];
        m.extend_from_slice(body);
        let n = m.len() as u16;
        m[2..4].copy_from_slice(&n.to_be_bytes());
        m
    }

    #[test]
    fn session_connect_naming_mms() {
        let mut body =
            vec![0x05, 0x06, 0x13, 0x01, 0x00, 0x16, 0x01, 0x02, 0x30, 0x0f, 0x02, 0x01, 0x03];
        body.extend_from_slice(MMS_SYNTAX);
        body.extend_from_slice(&[0x30, 0x02, 0x06, 0x00]);
        let m = connect(&body);
        assert!(matches!(run(detect, &m, [1345, 102]), Seen::Is(_)));
        robust(detect, &m, [1345, 102]);
        // Another abstract syntax, or a length that does not match.
        let mut other = body.clone();
        other[17] = 0x03;
        other[19] = 0x05;
        assert_eq!(run(detect, &connect(&other[..body.len() - 3]), [1345, 102]), Seen::No);
        let mut short = m.clone();
        short[8] += 1;
        assert_eq!(run(detect, &short, [1345, 102]), Seen::No);
    }
}
