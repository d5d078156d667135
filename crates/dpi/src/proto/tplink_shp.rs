//! TP-Link's smart-home protocol (port 9999): JSON obfuscated with an autokey XOR that
//! starts at 171; over TCP a 4-byte length comes first. The first decrypted bytes are `{"`.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be32};

const NAME: &str = "TPLINK_SHP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Any,
    evidence: "on port 9999: the payload (after TCP's length, which must equal the rest) \
               decrypts with the autokey XOR from 171 to a JSON object `{\"`",
    source: "TP-Link smart-home protocol as documented by the softScheck research and the \
             python-kasa project",
    detect,
};

fn plain_start(b: &[u8]) -> bool {
    let mut key = 171u8;
    let mut out = [0u8; 2];
    for (i, &c) in b.iter().take(2).enumerate() {
        out[i] = c ^ key;
        key = c;
    }
    b.len() >= 2 && out == *b"{\""
}

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !p.port(9999) {
        return Seen::No;
    }
    let tcp_framed = be32(b, 0).is_some_and(|l| l as usize + 4 == b.len()) && plain_start(&b[4..]);
    if tcp_framed || plain_start(b) { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    fn encrypt(s: &[u8]) -> Vec<u8> {
        let mut key = 171u8;
        s.iter()
            .map(|&c| {
                key ^= c;
                key
            })
            .collect()
    }

    #[test]
    fn get_sysinfo() {
        let m = encrypt(b"{\"system\":{\"get_sysinfo\":{}}}");
        assert!(matches!(run(detect, &m, [40000, 9999]), Seen::Is(_)));
        assert_eq!(run(detect, &m, [40000, 9998]), Seen::No);
        assert_eq!(run(detect, b"{\"system\"}", [40000, 9999]), Seen::No);
        robust(detect, &m, [40000, 9999]);
    }
}
