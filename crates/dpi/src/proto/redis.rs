//! Redis' serialization protocol (RESP): a client's command as an array of bulk strings
//! (`*N\r\n$L\r\n...`), or a server's typed reply.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

/// nDPI's current name (4.2 said `Redis`).
const NAME: &str = "RESP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(b"*+-:$"),
    evidence: "a command: an array header `*N` and a bulk string header `$L` whose length \
               matches the string that follows; or replies (`+`, `-`, `:`, `$`) on port 6379",
    source: "Redis serialization protocol specification (RESP2/RESP3)",
    detect,
};

/// A number then CRLF at `at`: the number and where the next line starts.
fn line_number(b: &[u8], at: usize) -> Option<(usize, usize)> {
    let end = at + b.get(at..)?.iter().take(12).position(|&c| c == b'\r')?;
    if b.get(end + 1) != Some(&b'\n') || end == at {
        return None;
    }
    let n = std::str::from_utf8(&b[at..end]).ok()?.parse::<usize>().ok()?;
    Some((n, end + 2))
}

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.first() == Some(&b'*') {
        let Some((n, at)) = line_number(b, 1) else { return Seen::No };
        if !(1..=1024).contains(&n) || b.get(at) != Some(&b'$') {
            return Seen::No;
        }
        let Some((len, at)) = line_number(b, at + 1) else { return Seen::No };
        // The command name: letters, then CRLF right after `len` bytes.
        let Some(name) = b.get(at..at + len) else { return Seen::More };
        if len > 0
            && len <= 32
            && name.iter().all(|c| c.is_ascii_alphabetic() || *c == b'.' || *c == b'_')
            && b.get(at + len..at + len + 2) == Some(b"\r\n")
        {
            return super::is(&NAME);
        }
        return Seen::No;
    }
    if p.port(6379) && b.ends_with(b"\r\n") && b.len() >= 3 {
        return super::maybe(&NAME, 0);
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn commands() {
        let m = b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n";
        assert!(matches!(run(detect, m, [40000, 6379]), Seen::Is(_)));
        assert_eq!(run(detect, b"*2\r\n$4\r\nGET\r\n$3\r\nkey\r\n", [40000, 1]), Seen::No);
        assert_eq!(run(detect, b"* OK IMAP4rev1\r\n", [40000, 143]), Seen::No);
        robust(detect, m, [1, 6379]);
    }
}
