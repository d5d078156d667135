//! Two services that frame their messages the same way over TCP (both seen on port 5223):
//! every message starts with a type byte and a 16-bit length of the whole message. nDPI
//! names one HP_VIRTGRP (HP Virtual Machine Group: the client's hello is type 0x16, the
//! server's reply 0x17) and the other Jabber (its "old-style" XMPP over TLS: hello 0x25,
//! reply 0x26); both then exchange data messages of type 0x30.
//!
//! A flow is labelled once its first three messages fit one of the two openings: the
//! client's hello first, the server's reply second, then a data message, each message's
//! length its segment's. Data messages alone never decide which.
//!
//! Sources: nDPI's `hpvirtgrp.c` (the hello's type, the length at offset 1, a zero at offset
//! 3) and `jabber.c` (the types 0x25, 0x26 and 0x30 and the same length field).

use crate::registry::{Detector, First, Transport};
use crate::{Label, Meta, Packet, Proto, Seen, be16};

const NAME: &str = "HP_VIRTGRP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x16, 0x17, 0x30]),
    evidence: "messages whose 16-bit length is the segment's: the client's hello (0x16) \
               first, the server's reply (0x17) second, then data (0x30)",
    source: "nDPI's hpvirtgrp.c (the hello's type and length field)",
    detect,
};

/// The same framing with the types nDPI takes for Jabber.
pub(crate) const JABBER: Detector = Detector {
    protos: &[Proto::Other(&crate::proto::xmpp::NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x25, 0x26, 0x30]),
    evidence: "messages whose 16-bit length is the segment's: the client's hello (0x25) \
               first, the server's reply (0x26) second, then data (0x30)",
    source: "nDPI's jabber.c (old-style framing: types and length field)",
    detect: jabber,
};

/// Whether `p` is the message its place in the flow calls for: `hello` from the client
/// first, `reply` from the server second, data (0x30) third.
fn fits(p: &Packet<'_>, hello: u8, reply: u8) -> bool {
    let b = p.payload;
    if b.len() < 4 || be16(b, 1).map(usize::from) != Some(b.len()) {
        return false;
    }
    match p.index {
        0 => b[0] == hello && p.from_initiator,
        1 => b[0] == reply && !p.from_initiator,
        2 => b[0] == 0x30,
        _ => false,
    }
}

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    if !fits(p, 0x16, 0x17) || (p.index < 2 && p.payload[3] != 0) {
        return Seen::No;
    }
    Seen::Maybe(Label { master: Proto::Other(&NAME), app: None }, 0, None)
}

fn jabber(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    if !fits(p, 0x25, 0x26) {
        return Seen::No;
    }
    Seen::Maybe(Label { master: Proto::Other(&crate::proto::xmpp::NAME), app: None }, 0, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, FlowDpi};

    fn message(kind: u8, len: usize) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&(len as u16).to_be_bytes());
        m.push(0);
        m.resize(len, 0xa5);
        m
    }

    fn flow(types: [u8; 4]) -> String {
        let cfg = Config::default();
        let mut f = FlowDpi::new(6);
        for (i, t) in types.into_iter().enumerate() {
            f.feed(&cfg, i % 2 == 0, [46570, 5223], &message(t, 40 + i * 7));
        }
        f.label().master.name().to_string()
    }

    #[test]
    fn openings_decide() {
        assert_eq!(flow([0x16, 0x17, 0x30, 0x30]), "HP_VIRTGRP");
        assert_eq!(flow([0x25, 0x26, 0x30, 0x30]), "Jabber");
        // Data alone, or an opening out of order, decides nothing.
        assert_eq!(flow([0x30, 0x30, 0x30, 0x30]), "Unknown");
        assert_eq!(flow([0x17, 0x16, 0x30, 0x30]), "Unknown");
        assert_eq!(flow([0x16, 0x26, 0x30, 0x30]), "Unknown");
        // A length that is not the segment's.
        let h = message(0x16, 132);
        let p = Packet { payload: &h[..100], from_initiator: true, ports: [1, 5223], index: 0 };
        assert_eq!(detect(&p, &mut Meta::default()), Seen::No);
        for cut in 0..20 {
            let p = Packet { payload: &h[..cut], from_initiator: true, ports: [1, 5223], index: 0 };
            let _ = detect(&p, &mut Meta::default());
            let _ = jabber(&p, &mut Meta::default());
        }
    }
}
