//! Tabular Data Stream (Microsoft SQL Server, Sybase): the 8-byte packet header, and for a
//! PRELOGIN its option table.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "MsSQL-TDS";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x01, 0x02, 0x03, 0x04, 0x06, 0x07, 0x0e, 0x10, 0x11, 0x12]),
    evidence: "a defined packet type and status, the header's length equal to the segment's, \
               window 0; a PRELOGIN's option table must end in 0xff and point inside the \
               packet; a server's result must start with a defined token; other types only \
               count with port 1433 or a result from the server",
    source: "MS-TDS, section 2.2.3 (packet header) and 2.2.6.5 (PRELOGIN)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let Some(len) = be16(b, 2).map(usize::from) else { return Seen::No };
    if b.len() < 9 || len != b.len() || b[1] & !0x1f != 0 || b[7] != 0 {
        return Seen::No;
    }
    if b[0] == 0x12 {
        // PRELOGIN: (token, offset, length) entries up to a 0xff terminator.
        let mut at = 8;
        let mut entries = 0;
        while let Some(&token) = b.get(at) {
            if token == 0xff {
                return if entries > 0 { super::is(&NAME) } else { Seen::No };
            }
            let (Some(off), Some(l)) = (be16(b, at + 1), be16(b, at + 3)) else {
                return Seen::No;
            };
            if token > 8 || 8 + usize::from(off) + usize::from(l) > len {
                return Seen::No;
            }
            entries += 1;
            at += 5;
        }
        return Seen::No;
    }
    // A server's tabular result starting with a defined token (ENVCHANGE, ERROR, INFO,
    // LOGINACK, COLMETADATA, RETURNSTATUS, DONE, DONEPROC, DONEINPROC).
    if b[0] == 0x04
        && !p.from_initiator
        && matches!(b[8], 0xe3 | 0xaa | 0xab | 0xad | 0x81 | 0x79 | 0xfd | 0xfe | 0xff)
    {
        return super::is(&NAME);
    }
    if p.port(1433) || matches!(b[0], 0x01 | 0x03 | 0x0e | 0x10) {
        return super::maybe(&NAME, 0);
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn prelogin() {
        let mut m = vec![0x12, 0x01, 0, 0, 0, 0, 0, 0];
        m.extend_from_slice(&[0, 0, 6, 0, 6, 0xff]);
        m.extend_from_slice(&[9, 0, 0, 0, 0, 0]);
        let n = m.len() as u16;
        m[2..4].copy_from_slice(&n.to_be_bytes());
        assert!(matches!(run(detect, &m, [5000, 1433]), Seen::Is(_)));
        let mut bad = m.clone();
        bad[10] = 60;
        assert_eq!(run(detect, &bad, [5000, 1433]), Seen::No);
        robust(detect, &m, [5000, 1433]);
    }
}
