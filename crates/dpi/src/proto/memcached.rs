//! Memcached: the binary protocol's 24-byte header (magic 0x80 request, 0x81 response, a
//! total body length equal to the rest), or a text command line.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16, be32};

const NAME: &str = "Memcached";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Any,
    evidence: "binary: magic 0x80/0x81, data type 0, key and extras lengths within a body \
               length equal to the rest; text, on port 11211: a storage or retrieval command \
               line, or `stats`/`version`, ending in CRLF",
    source: "memcached protocol.txt and the binary protocol specification (BinaryProtocolRevamped)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let mut b = p.payload;
    // UDP adds an 8-byte frame header (request id, sequence, count, reserved 0).
    if p.port(11211) && b.len() > 8 && b[6..8] == [0, 0] && be16(b, 4).is_some_and(|n| n >= 1) {
        b = &b[8..];
    }
    if b.len() >= 24 && (b[0] == 0x80 || b[0] == 0x81) && b[5] == 0 {
        let key = usize::from(be16(b, 2).unwrap_or(0));
        let extras = usize::from(b[4]);
        let body = be32(b, 8).unwrap_or(0) as usize;
        if body + 24 == b.len() && key + extras <= body {
            return super::is(&NAME);
        }
        return Seen::No;
    }
    if p.port(11211) && b.ends_with(b"\r\n") {
        let cmds: [&[u8]; 11] = [
            b"get ",
            b"gets ",
            b"set ",
            b"add ",
            b"replace ",
            b"append ",
            b"prepend ",
            b"cas ",
            b"delete ",
            b"stats",
            b"version",
        ];
        if cmds.iter().any(|c| b.starts_with(c))
            || b.starts_with(b"VALUE ")
            || b.starts_with(b"STAT ")
        {
            return super::is(&NAME);
        }
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn binary_get_and_text() {
        let mut m = vec![0x80, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 3];
        m.resize(24, 0);
        m.extend_from_slice(b"key");
        assert!(matches!(run(detect, &m, [40000, 11211]), Seen::Is(_)));
        assert!(matches!(run(detect, b"get foo\r\n", [40000, 11211]), Seen::Is(_)));
        assert_eq!(run(detect, b"get foo\r\n", [40000, 80]), Seen::No);
        robust(detect, &m, [1, 11211]);
    }
}
