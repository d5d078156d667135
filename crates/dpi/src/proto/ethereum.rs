//! Ethereum's peer protocols: node discovery (discv4) over UDP, where every packet starts
//! with the Keccak-256 hash of the rest (signature, type, data), which the detector checks;
//! and the RLPx handshake over TCP, whose auth and ack messages are ECIES-encrypted: a size
//! prefix (EIP-8), then the ephemeral public key in uncompressed form (0x04 and 64 bytes),
//! an IV, the ciphertext and a 32-byte MAC.

use sha3::{Digest, Keccak256};

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "ETHEREUM";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Any,
    evidence: "UDP: a packet of 99-1280 bytes whose first 32 bytes are the Keccak-256 hash of \
               the rest, a signature recovery id 0 or 1, a packet type 1-6 and RLP list data; \
               TCP: an RLPx auth or ack, its size prefix equal to the rest and the ECIES \
               ephemeral key's 0x04, at least key, IV, MAC and a body long",
    source: "devp2p Node Discovery Protocol v4 (discv4.md) and RLPx transport (rlpx.md) \
             specifications, EIP-8",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if p.index < 2 && b.len() >= 2 + 65 + 16 + 32 + 64 && b.len() < 2048 {
        // RLPx over TCP (the UDP checks below fail on these sizes and bytes).
        if crate::be16(b, 0).is_some_and(|n| usize::from(n) + 2 == b.len()) && b[2] == 0x04 {
            return super::is(&NAME);
        }
    }
    // The signature's recovery id (0 or 1), the packet type, and the data an RLP list: checked
    // before the hash is computed.
    if b.len() < 99 || b.len() > 1280 || b[96] > 1 || !(1..=6).contains(&b[97]) || b[98] < 0xc0 {
        return Seen::No;
    }
    let hash = Keccak256::digest(&b[32..]);
    if hash[..] == b[..32] { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn hash_over_the_rest() {
        let mut rest = vec![0x11; 64];
        rest.push(1);
        rest.push(1);
        rest.extend_from_slice(&[0xc0; 40]);
        let mut m = Keccak256::digest(&rest).to_vec();
        m.extend_from_slice(&rest);
        assert!(matches!(run(detect, &m, [30303, 30303]), Seen::Is(_)));
        m[0] ^= 1;
        assert_eq!(run(detect, &m, [30303, 30303]), Seen::No);
        robust(detect, &m[..100], [1, 2]);
        // An EIP-8 auth message: size, 0x04, key, IV, body, MAC.
        let mut auth = vec![0, 0, 0x04];
        auth.resize(2 + 65 + 16 + 200 + 32, 0x5a);
        let n = (auth.len() - 2) as u16;
        auth[..2].copy_from_slice(&n.to_be_bytes());
        assert!(matches!(run(detect, &auth, [40000, 30303]), Seen::Is(_)));
        auth[2] = 0x02;
        assert_eq!(run(detect, &auth, [40000, 30303]), Seen::No);
    }
}
