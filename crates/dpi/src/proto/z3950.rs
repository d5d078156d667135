//! Z39.50 (information retrieval, TCP 210): a BER-encoded PDU with a defined Z39.50 tag
//! (initRequest [20], initResponse [21], searchRequest [22], ...) and a length that fits.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Z3950";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Range(0xb4, 0xd0),
    evidence: "on port 210: a constructed context tag of a Z39.50 PDU (20-48) and a BER length \
               equal to the rest",
    source: "ANSI/NISO Z39.50-2003, section 3.2 (ASN.1 PDU definitions)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !p.port(210) || b.len() < 4 || !(0xb4..=0xd0).contains(&b[0]) {
        return Seen::No;
    }
    match crate::udp::ber_len(b, 1) {
        Some((len, at)) if at + len == b.len() => super::is(&NAME),
        _ => Seen::No,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn init_request() {
        let m = [0xb4, 0x06, 0x83, 0x02, 0x00, 0x01, 0x84, 0x00];
        assert!(matches!(run(detect, &m, [40000, 210]), Seen::Is(_)));
        assert_eq!(run(detect, &m[..7], [40000, 210]), Seen::No);
        robust(detect, &m, [40000, 210]);
    }
}
