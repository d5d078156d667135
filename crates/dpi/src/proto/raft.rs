//! Raft over TCP as the C raft library (canonical/raft, used by dqlite and LXD) encodes it:
//! a connection opens with a handshake (the protocol version 1, the sender's server id and
//! the length of its address, 8-byte aligned, all 64-bit little-endian, then the address as
//! NUL-padded `host:port` text); then every message is a 64-bit type (append entries 1 to
//! timeout-now 6) and a 64-bit length of the body that follows.
//!
//! Sources: canonical/raft (`src/uv_encoding.c`, `src/uv_recv.c`: handshake and message
//! header layouts, message types); nDPI's `raft.c` (the message types and header).

use crate::registry::{Detector, First, Transport};
use crate::{Label, Meta, Packet, Proto, Seen};

const NAME: &str = "Raft";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Range(1, 6),
    evidence: "the handshake (version 1, an address length that is a multiple of 8 and holds a \
               NUL-padded `host:port`) alone; messages (type 1-6, a length equal to the rest) \
               three times, both sides",
    source: "canonical/raft (uv_encoding.c, uv_recv.c); nDPI's raft.c",
    detect,
};

fn le64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let (Some(first), Some(second), Some(third)) = (le64(b, 0), le64(b, 8), le64(b, 16)) else {
        return Seen::No;
    };
    // The handshake.
    if first == 1 && third > 0 && third % 8 == 0 && third.checked_add(24) == Some(b.len() as u64) {
        let addr = &b[24..];
        let text = addr.iter().position(|&c| c == 0).map_or(addr, |n| &addr[..n]);
        let padding = &addr[text.len()..];
        let hostport = text.iter().filter(|&&c| c == b':').count() >= 1
            && text.iter().all(|&c| c.is_ascii_alphanumeric() || b".:-[]".contains(&c))
            && text.rsplit(|&c| c == b':').next().is_some_and(|port| {
                !port.is_empty() && port.len() <= 5 && port.iter().all(u8::is_ascii_digit)
            });
        if hostport && !padding.is_empty() && padding.iter().all(|&c| c == 0) {
            return super::is(&NAME);
        }
    }
    if (1..=6).contains(&first) && second.checked_add(16) == Some(b.len() as u64) {
        return Seen::Maybe(Label { master: Proto::Other(&NAME), app: None }, 0, None);
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn handshake_and_messages() {
        let mut h = Vec::new();
        for v in [1u64, 2, 16] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        h.extend_from_slice(b"127.0.0.1:9001\0\0");
        assert!(matches!(run(detect, &h, [46286, 9002]), Seen::Is(_)));
        robust(detect, &h, [46286, 9002]);
        let mut unpadded = h.clone();
        unpadded[38] = b'1';
        unpadded[39] = b'2';
        assert!(!matches!(run(detect, &unpadded, [46286, 9002]), Seen::Is(_)));
        // An address length near 2^64 must not overflow.
        let mut huge = h.clone();
        huge[16..24].copy_from_slice(&(u64::MAX - 7).to_le_bytes());
        assert_eq!(run(detect, &huge, [46286, 9002]), Seen::No);
        let mut vote = Vec::new();
        for v in [3u64, 40, 6, 1, 198, 4, 2] {
            vote.extend_from_slice(&v.to_le_bytes());
        }
        assert!(matches!(run(detect, &vote, [46286, 9002]), Seen::Maybe(..)));
        assert_eq!(run(detect, &vote[..55], [46286, 9002]), Seen::No);
        let mut seven = vote.clone();
        seven[0] = 7;
        assert_eq!(run(detect, &seven, [46286, 9002]), Seen::No);
    }
}
