//! Ethereum's node discovery (discv4) over UDP: every packet starts with the Keccak-256 hash
//! of the rest (signature, type, data), which the detector checks.

use sha3::{Digest, Keccak256};

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "ETHEREUM";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Any,
    evidence: "a packet of 99-1280 bytes whose first 32 bytes are the Keccak-256 hash of the \
               rest, a signature recovery id 0 or 1, a packet type 1-6 and RLP list data",
    source: "devp2p Node Discovery Protocol v4 specification (ethereum/devp2p, discv4.md)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
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
    }
}
