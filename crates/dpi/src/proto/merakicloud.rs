//! Cisco Meraki devices' tunnel to the Meraki cloud (UDP 7351): each datagram starts with the
//! magic `fef72891`, a 16-bit type and a 16-bit length equal to the datagram's.
//!
//! Sources: the magic as nDPI's `merakicloud.c` gives it; the length field from the
//! datagrams' own form.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16, be32};

const NAME: &str = "MerakiCloud";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[0xfe]),
    evidence: "the magic `fef72891` and a 16-bit length at offset 6 equal to the datagram's",
    source: "nDPI's merakicloud.c (magic)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if be32(b, 0) != Some(0xfef7_2891) || be16(b, 6).map(usize::from) != Some(b.len()) {
        return Seen::No;
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn magic_and_length() {
        let mut d = vec![0xfe, 0xf7, 0x28, 0x91, 0x0d, 0x01, 0x00, 0x2e];
        d.resize(46, 0);
        assert!(matches!(run(detect, &d, [47301, 7351]), Seen::Is(_)));
        robust(detect, &d, [47301, 7351]);
        assert_eq!(run(detect, &d[..45], [47301, 7351]), Seen::No);
    }
}
