//! Path of Exile's game login over TCP: the client's first message carries the character's
//! name (4 to 23 characters, with a 16-bit length before it) between fixed fields: a zero
//! byte and 0x0300 first, a zero at offset 6, and it ends with 32 zero bits and 0x40000001.
//!
//! Sources: the message's layout as nDPI's `path_of_exile.c` gives it (fixed fields, the
//! name's length range); the name's length field from the message's own form.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16, be32};

const NAME: &str = "PathofExile";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0]),
    evidence: "the login message: fixed fields (0, 0x0300, 0 at offset 6), a printable name of \
               4-23 characters whose length precedes it, and the closing 0x0000000040000001",
    source: "nDPI's path_of_exile.c (message layout)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 26 || b[0] != 0 || be16(b, 1) != Some(0x0300) || b[6] != 0 {
        return Seen::No;
    }
    let Some(n) = be16(b, 8).map(usize::from) else { return Seen::No };
    if !(4..=23).contains(&n) || b.len() != 10 + n + 12 {
        return Seen::No;
    }
    let name = &b[10..10 + n];
    if !name.iter().all(|c| c.is_ascii_graphic())
        || be32(b, b.len() - 8) != Some(0)
        || be32(b, b.len() - 4) != Some(0x4000_0001)
    {
        return Seen::No;
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn login() {
        let mut m = vec![0, 3, 0, 0x37, 0x75, 0x60, 0, 2, 0, 9];
        m.extend_from_slice(b"Exile_One");
        m.extend_from_slice(&[0xec, 0x8f, 0xec, 0xf2, 0, 0, 0, 0, 0x40, 0, 0, 1]);
        assert!(matches!(run(detect, &m, [36262, 6112]), Seen::Is(_)));
        robust(detect, &m, [36262, 6112]);
        let mut long = m.clone();
        long[9] = 10;
        assert_eq!(run(detect, &long, [36262, 6112]), Seen::No);
        let mut tail = m.clone();
        let n = tail.len();
        tail[n - 1] = 2;
        assert_eq!(run(detect, &tail, [36262, 6112]), Seen::No);
    }
}
