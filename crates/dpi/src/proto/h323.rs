//! H.323's RAS and H.245 messages off the call-signalling port. They are PER-encoded ASN.1,
//! but each names its protocol early with an object identifier: RAS messages (H.225.0, UDP,
//! usually port 1719) carry `protocolIdentifier` `0.0.8.2250.0.<version>` right after the
//! message choice and the 16-bit sequence number; H.245 messages (in TPKT over TCP) carry
//! `0.0.8.245.0.<version>` within their first bytes, as the terminal capability set and
//! master-slave determination that open a session do.
//!
//! Sources: ITU-T H.225.0 (RAS messages, protocolIdentifier), ITU-T H.245 (protocol
//! identifier), X.691 (PER), RFC 1006 (TPKT). H.225.0 call signalling on TCP 1720 is read in
//! `udp.rs`.

use crate::registry::{Detector, First, Transport};
use crate::{Label, Meta, Packet, Proto, Seen, be16};

/// 0.0.8.2250.0 (H.225.0) as a length-prefixed object identifier, without its version.
const H225: &[u8] = &[0x06, 0x00, 0x08, 0x91, 0x4a, 0x00];
/// 0.0.8.245.0 (H.245).
const H245: &[u8] = &[0x06, 0x00, 0x08, 0x81, 0x75, 0x00];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[Proto::H323],
    transport: Transport::Both,
    first: First::Any,
    evidence: "UDP: a RAS message whose protocolIdentifier 0.0.8.2250.0.v (v 1-9) follows the \
               choice and sequence number; TCP: a TPKT (length equal to the segment's) whose \
               H.245 message names 0.0.8.245.0.v within its first 16 bytes",
    source: "ITU-T H.225.0 (RAS), ITU-T H.245, X.691, RFC 1006",
    detect,
};

fn versioned(b: &[u8], oid: &[u8]) -> bool {
    b.starts_with(oid) && b.get(oid.len()).is_some_and(|v| (1..=9).contains(v))
}

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    // RAS over UDP: the identifier at offset 4 (a one- or two-byte choice, the sequence
    // number) or 3.
    let ras = (3..=4).any(|at| b.get(at..).is_some_and(|r| versioned(r, H225)));
    // H.245 in TPKT over TCP.
    let h245 = b.len() > 12
        && b[0] == 3
        && b[1] == 0
        && be16(b, 2).map(usize::from) == Some(b.len())
        && (4..16).any(|at| b.get(at..).is_some_and(|r| versioned(r, H245)));
    if ras || h245 { Seen::Is(Label::of(Proto::H323)) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn ras_and_h245() {
        let mut grq = vec![0x02, 0x20, 0x00, 0x00];
        grq.extend_from_slice(H225);
        grq.extend_from_slice(&[0x04, 0x00, 0x11, 0x02, 0x00]);
        assert!(matches!(run(detect, &grq, [2034, 1719]), Seen::Is(_)));
        robust(detect, &grq, [2034, 1719]);
        let mut v0 = grq.clone();
        v0[10] = 0;
        assert_eq!(run(detect, &v0, [2034, 1719]), Seen::No);
        let mut tcs = vec![3, 0, 0, 0, 0x02, 0x30, 0x01];
        tcs.extend_from_slice(H245);
        tcs.extend_from_slice(&[0x05, 0x00, 0x80, 0x1b, 0xc5]);
        let n = tcs.len() as u16;
        tcs[2..4].copy_from_slice(&n.to_be_bytes());
        assert!(matches!(run(detect, &tcs, [32804, 1232]), Seen::Is(_)));
        assert_eq!(run(detect, &tcs[..tcs.len() - 1], [32804, 1232]), Seen::No);
    }
}
