//! netcode (github.com/networkprotocol/netcode, the transport of the Yojimbo game network
//! library, which nDPI names Yojimbo): a client's connection request is a 1078-byte
//! datagram: the prefix byte 0, the version string `NETCODE 1.0x` and its NUL, the 64-bit
//! protocol id and expiry time, a 24-byte nonce and the 1024-byte encrypted private token.
//!
//! Sources: the netcode standard (STANDARD.md: connection request packet layout and size).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Yojimbo";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[0]),
    evidence: "a 1078-byte connection request: prefix 0 and the version string `NETCODE 1.0` \
               with a digit and NUL",
    source: "netcode standard (networkprotocol/netcode STANDARD.md)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() != 1078
        || b[0] != 0
        || &b[1..12] != b"NETCODE 1.0"
        || !b[12].is_ascii_digit()
        || b[13] != 0
    {
        return Seen::No;
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::run;

    #[test]
    fn connection_request() {
        let mut d = b"\0NETCODE 1.02\0".to_vec();
        d.resize(1078, 0x5a);
        assert!(matches!(run(detect, &d, [34638, 40000]), Seen::Is(_)));
        assert_eq!(run(detect, &d[..1077], [34638, 40000]), Seen::No);
        let mut v = d.clone();
        v[12] = b'x';
        assert_eq!(run(detect, &v, [34638, 40000]), Seen::No);
        for cut in 0..20 {
            let _ = run(detect, &d[..cut], [1, 2]);
        }
    }
}
