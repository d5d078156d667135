//! Lustre's network layer, LNet, over TCP (port 988): a connection opens with the acceptor's
//! connection request (magic 0xacce7100, acceptor version 1) or the socket LND's hello
//! (magic 0x45726963, protocol version 1-3), each followed by a network identifier (NID): a
//! 32-bit address and a 32-bit network whose upper half is the LND type (1-20; 2 is TCP).
//! All fields are little-endian.
//!
//! Sources: Lustre's LNet headers (lnet-idl.h, the acceptor and socklnd protocols: magics,
//! versions, the NID layout and LND types); nDPI's `lustre.c`.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Lustre";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x00, 0x63]),
    evidence: "the acceptor request (magic 0xacce7100, version 1) or the socket LND hello \
               (magic 0x45726963, version 1-3), then a NID whose LND type is 1-20",
    source: "Lustre LNet (lnet-idl.h: acceptor and socklnd magics, versions, NID); nDPI's \
             lustre.c",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let (Some(magic), Some(version), Some(net)) =
        (super::le32(b, 0), super::le32(b, 4), super::le32(b, 12))
    else {
        return Seen::No;
    };
    let opening = match magic {
        0xacce_7100 => version == 1,
        0x4572_6963 => (1..=3).contains(&version),
        _ => false,
    };
    if !opening || !(1..=20).contains(&(net >> 16)) {
        return Seen::No;
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn acceptor_and_hello() {
        let acceptor = [0x00, 0x71, 0xce, 0xac, 1, 0, 0, 0, 0x83, 0x58, 0xa8, 0xc0, 0, 0, 2, 0];
        assert!(matches!(run(detect, &acceptor, [1022, 988]), Seen::Is(_)));
        robust(detect, &acceptor, [1022, 988]);
        let mut hello = b"cirE\x03\x00\x00\x00".to_vec();
        hello.extend_from_slice(&[0x84, 0x58, 0xa8, 0xc0, 0, 0, 2, 0]);
        hello.resize(56, 0);
        assert!(matches!(run(detect, &hello, [1022, 988]), Seen::Is(_)));
        let mut v = acceptor;
        v[4] = 2;
        assert_eq!(run(detect, &v, [1022, 988]), Seen::No);
        let mut lnd = acceptor;
        lnd[14] = 0x40;
        assert_eq!(run(detect, &lnd, [1022, 988]), Seen::No);
    }
}
