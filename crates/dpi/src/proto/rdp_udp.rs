//! RDP's UDP transport (MS-RDPEUDP): a connection opens with SYN datagrams padded to
//! exactly 1232 bytes. Each starts with the FEC header (snSourceAck, which a SYN sets to
//! -1 and a SYN+ACK to the client's initial sequence number; the receive window; the flags,
//! SYN 0x0001 set, FIN and DATA clear) and the SYN data (an initial sequence number, then
//! the upstream and downstream MTUs, each 1132-1232).
//!
//! Sources: [MS-RDPEUDP] sections 2.2.2.1 (RDPUDP_FEC_HEADER), 2.2.2.5
//! (RDPUDP_SYNDATA_PAYLOAD) and 3.1.5.1.1 (SYN datagrams are 1232 bytes).

use crate::registry::{Detector, First, Transport};
use crate::{Label, Meta, Packet, Proto, Seen, be16, be32};

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[Proto::Rdp],
    transport: Transport::Udp,
    first: First::Any,
    evidence: "a 1232-byte SYN datagram: SYN flag set, FIN and DATA clear, snSourceAck -1 \
               from the client, and upstream and downstream MTUs of 1132-1232",
    source: "[MS-RDPEUDP] 2.2.2.1, 2.2.2.5, 3.1.5.1.1",
    detect,
};

const SYN: u16 = 0x0001;
const FIN: u16 = 0x0002;
const ACK: u16 = 0x0004;
const DATA: u16 = 0x0008;

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() != 1232 {
        return Seen::No;
    }
    let (Some(source_ack), Some(flags)) = (be32(b, 0), be16(b, 6)) else { return Seen::No };
    if flags & SYN == 0 || flags & (FIN | DATA) != 0 {
        return Seen::No;
    }
    // The client's SYN acknowledges nothing yet.
    if flags & ACK == 0 && source_ack != 0xffff_ffff {
        return Seen::No;
    }
    let mtu = |at| be16(b, at).is_some_and(|m| (1132..=1232).contains(&m));
    if !mtu(12) || !mtu(14) {
        return Seen::No;
    }
    Seen::Is(Label::of(Proto::Rdp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    fn syn(source_ack: u32, flags: u16, mtu: u16) -> Vec<u8> {
        let mut d = source_ack.to_be_bytes().to_vec();
        d.extend_from_slice(&0x0040u16.to_be_bytes());
        d.extend_from_slice(&flags.to_be_bytes());
        d.extend_from_slice(&0xbbff_5687u32.to_be_bytes());
        d.extend_from_slice(&mtu.to_be_bytes());
        d.extend_from_slice(&mtu.to_be_bytes());
        d.resize(1232, 0);
        d
    }

    #[test]
    fn syn_and_syn_ack() {
        assert!(matches!(run(detect, &syn(0xffff_ffff, 0x1801, 1232), [54759, 3389]), Seen::Is(_)));
        assert!(matches!(run(detect, &syn(0xbbff_5687, 0x1005, 1232), [3389, 54759]), Seen::Is(_)));
        robust(detect, &syn(0xffff_ffff, 0x0001, 1200), [54759, 3389]);
        // Not padded, an acknowledgement number without ACK, a data flag, an MTU too small.
        assert_eq!(run(detect, &syn(0xffff_ffff, 1, 1232)[..1231], [1, 3389]), Seen::No);
        assert_eq!(run(detect, &syn(5, 1, 1232), [1, 3389]), Seen::No);
        assert_eq!(run(detect, &syn(0xffff_ffff, 9, 1232), [1, 3389]), Seen::No);
        assert_eq!(run(detect, &syn(0xffff_ffff, 1, 500), [1, 3389]), Seen::No);
    }
}
