//! Spotify's access point protocol over TCP (port 4070, also 443 and 80): the client opens
//! with its hello: the protocol version 0x0004, a 32-bit length of the whole message, then
//! the ClientHello protocol buffer, whose first field is build_info (field 10, length
//! delimited: tag 0x52).
//!
//! Sources: the open-source Spotify clients' handshake (librespot's `handshake.rs`: the
//! `0x00 0x04` prefix, the length, the ClientHello message and its field numbers).

use crate::registry::{Detector, First, Transport};
use crate::{Label, Meta, Packet, Proto, Seen, be32};

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[Proto::Spotify],
    transport: Transport::Tcp,
    first: First::Bytes(&[0]),
    evidence: "the client's first message: version 0x0004, a length equal to the segment's, \
               and a ClientHello starting with its build_info field (tag 0x52)",
    source: "librespot (handshake.rs: access point hello layout, ClientHello fields)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !p.from_initiator || p.index != 0 || b.len() < 16 || b[..2] != [0, 4] {
        return Seen::No;
    }
    if be32(b, 2).map(|l| l as usize) != Some(b.len()) || b[6] != 0x52 {
        return Seen::No;
    }
    // The build_info field's length (a varint) must fit in the message.
    let len = usize::from(b[7] & 0x7f) | usize::from(*b.get(8).unwrap_or(&0) & 0x7f) << 7;
    if b[7] & 0x80 != 0 && b.len() < 9 + len || b[7] & 0x80 == 0 && b.len() < 8 + usize::from(b[7])
    {
        return Seen::No;
    }
    Seen::Is(Label::of(Proto::Spotify))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn client_hello() {
        let mut m = vec![0, 4, 0, 0, 0, 0, 0x52, 0x0f, 0x50, 0x02, 0xa0, 0x01, 0x00];
        m.resize(40, 0x11);
        let n = m.len() as u32;
        m[2..6].copy_from_slice(&n.to_be_bytes());
        assert!(matches!(run(detect, &m, [48628, 4070]), Seen::Is(_)));
        robust(detect, &m, [48628, 4070]);
        assert_eq!(run(detect, &m[..39], [48628, 4070]), Seen::No);
        let mut tag = m.clone();
        tag[6] = 0x0a;
        assert_eq!(run(detect, &tag, [48628, 4070]), Seen::No);
    }
}
