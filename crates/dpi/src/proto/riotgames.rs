//! Riot Games' game traffic over UDP (League of Legends, Valorant): datagrams end with the
//! 64-bit trailer `aaaaaaaa bbbbbbbb`.
//!
//! Sources: the trailer as nDPI's `riotgames.c` gives it.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be32};

const NAME: &str = "RiotGames";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Any,
    evidence: "a datagram of more than 8 bytes ending in `aaaaaaaa bbbbbbbb`",
    source: "nDPI's riotgames.c (trailer)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let n = b.len();
    if n <= 8 || be32(b, n - 8) != Some(0xaaaa_aaaa) || be32(b, n - 4) != Some(0xbbbb_bbbb) {
        return Seen::No;
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn trailer() {
        let mut d = vec![0x17; 20];
        d.extend_from_slice(&[0xaa, 0xaa, 0xaa, 0xaa, 0xbb, 0xbb, 0xbb, 0xbb]);
        assert!(matches!(run(detect, &d, [49298, 7194]), Seen::Is(_)));
        robust(detect, &d, [49298, 7194]);
        assert_eq!(run(detect, &d[..27], [49298, 7194]), Seen::No);
        assert_eq!(run(detect, &d[20..], [49298, 7194]), Seen::No);
    }
}
