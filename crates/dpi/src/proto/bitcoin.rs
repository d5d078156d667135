//! Bitcoin's peer protocol: a network magic, a NUL-padded ASCII command, a payload length
//! and a checksum.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be32};

const NAME: &str = "BITCOIN";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0xf9, 0x0b, 0xfa, 0x0a, 0x1c]),
    evidence: "the main, test, signet or regtest network magic, then a command of lower-case \
               letters padded with NULs to 12 bytes",
    source: "Bitcoin developer reference, \"P2P network: message headers\"",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let magic = be32(b, 0).unwrap_or(0);
    if b.len() < 24
        || !matches!(magic, 0xf9be_b4d9 | 0x0b11_0907 | 0x1c16_3f28 | 0x0a03_cf40 | 0xfabf_b5da)
    {
        return Seen::No;
    }
    let cmd = &b[4..16];
    let end = cmd.iter().position(|&c| c == 0).unwrap_or(12);
    if end > 0
        && cmd[..end].iter().all(u8::is_ascii_lowercase)
        && cmd[end..].iter().all(|&c| c == 0)
    {
        return super::is(&NAME);
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn version_message() {
        let mut m = vec![0xf9, 0xbe, 0xb4, 0xd9];
        m.extend_from_slice(b"version\0\0\0\0\0");
        m.extend_from_slice(&[100, 0, 0, 0, 1, 2, 3, 4]);
        assert!(matches!(run(detect, &m, [40000, 8333]), Seen::Is(_)));
        m[12] = b'x';
        assert_eq!(run(detect, &m, [40000, 8333]), Seen::No);
        robust(detect, &m, [1, 8333]);
    }
}
