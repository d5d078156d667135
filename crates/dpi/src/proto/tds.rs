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
               packet; a server's result must start with a defined token; a client's SQL \
               batch or RPC must carry UTF-16 SQL text or a procedure name or id (after \
               optional ALL_HEADERS); other types only count with port 1433 or a result \
               from the server",
    source: "MS-TDS, sections 2.2.3 (packet header), 2.2.5.3 (ALL_HEADERS), 2.2.6.5 \
             (PRELOGIN), 2.2.6.6 (RPC request) and 2.2.6.7 (SQL batch)",
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
    // A client's SQL batch or RPC request whose body reads as MS-TDS lays it out.
    if p.from_initiator && matches!(b[0], 0x01 | 0x03) && request_body(b[0], b).is_some() {
        return super::is(&NAME);
    }
    if p.port(1433) || matches!(b[0], 0x01 | 0x03 | 0x0e | 0x10) {
        return super::maybe(&NAME, 0);
    }
    Seen::No
}

/// Whether `n` UTF-16LE code units at `at` are printable ASCII (SQL text, procedure names).
fn utf16_text(b: &[u8], at: usize, n: usize) -> Option<()> {
    let s = b.get(at..at + 2 * n)?;
    s.chunks_exact(2)
        .all(|c| {
            c[1] == 0 && (0x20..0x7f).contains(&c[0])
                || c == b"\t\0"
                || c == b"\r\0"
                || c == b"\n\0"
        })
        .then_some(())
}

/// The body of a SQL batch (type 1) or RPC request (type 3): the optional ALL_HEADERS
/// (MS-TDS 2.2.5.3: a total length, then headers each with a length and a type 1-3), then
/// for a batch its SQL text, for an RPC the procedure's name (a length and UTF-16 text) or
/// 0xffff and a well-known procedure id (1-15).
fn request_body(kind: u8, b: &[u8]) -> Option<()> {
    let mut at = 8;
    let total = super::le32(b, 8)? as usize;
    if total >= 4 + 6 && total <= b.len().saturating_sub(8) {
        let first = super::le32(b, 12)? as usize;
        let ty = u16::from_le_bytes([*b.get(16)?, *b.get(17)?]);
        if first >= 6 && first <= total - 4 && (1..=3).contains(&ty) {
            at += total;
        }
    }
    if kind == 0x01 {
        let n = ((b.len() - at) / 2).min(16);
        return if n >= 4 { utf16_text(b, at, n) } else { None };
    }
    let len = u16::from_le_bytes([*b.get(at)?, *b.get(at + 1)?]);
    if len == 0xffff {
        let id = u16::from_le_bytes([*b.get(at + 2)?, *b.get(at + 3)?]);
        return (1..=15).contains(&id).then_some(());
    }
    if !(1..=128).contains(&len) {
        return None;
    }
    utf16_text(b, at + 2, usize::from(len))
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

    fn utf16(s: &str) -> Vec<u8> {
        s.bytes().flat_map(|c| [c, 0]).collect()
    }

    fn packet(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind, 0x09, 0, 0, 0, 0, 1, 0];
        m.extend_from_slice(body);
        let n = m.len() as u16;
        m[2..4].copy_from_slice(&n.to_be_bytes());
        m
    }

    #[test]
    fn requests_mid_session() {
        // An RPC to a named procedure, without and with ALL_HEADERS (a transaction
        // descriptor header of 18 bytes).
        let mut rpc = 13u16.to_le_bytes().to_vec();
        rpc.extend_from_slice(&utf16("sp_executesql"));
        rpc.extend_from_slice(&[0, 0, 0, 0xe7]);
        let m = packet(3, &rpc);
        assert!(matches!(run(detect, &m, [4444, 1433]), Seen::Is(_)));
        let mut with = 22u32.to_le_bytes().to_vec();
        with.extend_from_slice(&18u32.to_le_bytes());
        with.extend_from_slice(&2u16.to_le_bytes());
        with.extend_from_slice(&[0; 12]);
        with.extend_from_slice(&rpc);
        assert!(matches!(run(detect, &packet(3, &with), [4444, 1433]), Seen::Is(_)));
        // A procedure id.
        assert!(matches!(run(detect, &packet(3, &[0xff, 0xff, 10, 0, 0, 0]), [1, 2]), Seen::Is(_)));
        // A SQL batch.
        let batch = packet(1, &utf16("COMMIT TRANSACTION"));
        assert!(matches!(run(detect, &batch, [4444, 1434]), Seen::Is(_)));
        robust(detect, &batch, [4444, 1434]);
        robust(detect, &packet(3, &with), [4444, 1434]);
        // A name that is not UTF-16 text, or longer than the packet.
        let mut bad = rpc.clone();
        bad[3] = 0x41;
        assert!(!matches!(run(detect, &packet(3, &bad), [4444, 1434]), Seen::Is(_)));
        let mut long = rpc.clone();
        long[0] = 100;
        assert!(!matches!(run(detect, &packet(3, &long), [4444, 1434]), Seen::Is(_)));
    }
}
