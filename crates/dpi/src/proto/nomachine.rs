//! NoMachine's NX protocol (TCP 4000): before TLS, the client and the server exchange text
//! banners naming their side and version: `NXSH-<version>` from the client, `NXD-<version>`
//! from the server, each a line of its own.
//!
//! Sources: the banners as nDPI's `nomachine.c` gives them.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "NoMachine";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(b"N"),
    evidence: "a whole banner line `NXSH-` or `NXD-` followed by a dotted version",
    source: "nDPI's nomachine.c (banners)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let Some(line) = b.strip_suffix(b"\n") else { return Seen::No };
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let Some(version) = line.strip_prefix(b"NXSH-").or_else(|| line.strip_prefix(b"NXD-")) else {
        return Seen::No;
    };
    let dotted = !version.is_empty()
        && version.len() <= 16
        && version[0].is_ascii_digit()
        && version.contains(&b'.')
        && version.iter().all(|&c| c.is_ascii_digit() || c == b'.');
    if dotted { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn banners() {
        assert!(matches!(run(detect, b"NXSH-8.10.1\n", [48084, 4000]), Seen::Is(_)));
        assert!(matches!(run(detect, b"NXD-8.10.1\n", [48084, 4000]), Seen::Is(_)));
        robust(detect, b"NXSH-8.10.1\n", [48084, 4000]);
        assert_eq!(run(detect, b"NXSH-8.10.1", [48084, 4000]), Seen::No);
        assert_eq!(run(detect, b"NXSH-beta\n", [48084, 4000]), Seen::No);
    }
}
