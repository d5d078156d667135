//! Z39.50 (information retrieval, TCP 210): a BER-encoded PDU with a defined Z39.50 tag
//! (initRequest [20], initResponse [21], searchRequest [22], ...) and a length that fits;
//! off port 210, the Init PDU that opens every association, checked field by field.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Z3950";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Range(0xb4, 0xd0),
    evidence: "a constructed context tag of a Z39.50 PDU (20-48) and a BER length equal to \
               the rest: on port 210 any PDU, elsewhere an Init request or response starting \
               with its version and options fields",
    source: "ANSI/NISO Z39.50-2003, section 3.2 (ASN.1 PDU definitions)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 4 || !(0xb4..=0xd0).contains(&b[0]) {
        return Seen::No;
    }
    let Some((len, at)) = crate::udp::ber_len(b, 1) else { return Seen::No };
    if at + len != b.len() {
        return Seen::No;
    }
    // On port 210 any PDU; elsewhere the opening Init request or response, whose first
    // fields are an optional referenceId [2], the protocolVersion [3] and the options [4].
    if p.port(210) || matches!(b[0], 0xb4 | 0xb5) && init_fields(b, at) {
        super::is(&NAME)
    } else {
        Seen::No
    }
}

/// Whether the fields from `at` start `[2] referenceId` (optional), `[3] protocolVersion`,
/// `[4] options`, each a primitive with a BER length that fits.
fn init_fields(b: &[u8], mut at: usize) -> bool {
    let mut want = [0x82u8, 0x83, 0x84].as_slice();
    if b.get(at) != Some(&0x82) {
        want = &want[1..];
    }
    for &tag in want {
        if b.get(at) != Some(&tag) {
            return false;
        }
        match crate::udp::ber_len(b, at + 1) {
            Some((len, start)) if start + len <= b.len() => at = start + len,
            _ => return false,
        }
    }
    true
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
        // Off port 210, the Init request with its version and options.
        assert!(matches!(run(detect, &m, [40000, 9991]), Seen::Is(_)));
        let close = [0xbf, 0x30, 0x03, 0x9f, 0x69, 0x00];
        assert_eq!(run(detect, &close, [40000, 9991]), Seen::No);
        let mut no_version = m;
        no_version[2] = 0x85;
        assert_eq!(run(detect, &no_version, [40000, 9991]), Seen::No);
    }
}
