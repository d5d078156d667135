//! RIPE Atlas probes' connectivity checks: the payload is the text `MGLNDD_`, the target's
//! IPv4 address in dotted decimal, `_` and the target port in decimal (the form the probes'
//! measurement code writes), and nothing else.
//!
//! Sources: the `MGLNDD_` payload as nDPI's `ripe_atlas.c` gives it (a 25-byte case); the
//! address and port fields from the payload's own form.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "RipeAtlas";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Bytes(b"M"),
    evidence: "the whole payload is `MGLNDD_`, a dotted IPv4 address, `_` and a port number",
    source: "nDPI's ripe_atlas.c (the MGLNDD_ payload)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let Some(rest) = p.payload.strip_prefix(b"MGLNDD_") else { return Seen::No };
    let Some(sep) = rest.iter().rposition(|&c| c == b'_') else { return Seen::No };
    let (addr, port) = (&rest[..sep], &rest[sep + 1..]);
    let octets: Vec<&[u8]> = addr.split(|&c| c == b'.').collect();
    let number = |s: &[u8], max: u32, digits: usize| {
        !s.is_empty()
            && s.len() <= digits
            && s.iter().all(u8::is_ascii_digit)
            && s.iter().fold(0u32, |n, &c| n * 10 + u32::from(c - b'0')) <= max
    };
    if octets.len() == 4 && octets.iter().all(|o| number(o, 255, 3)) && number(port, 65535, 5) {
        super::is(&NAME)
    } else {
        Seen::No
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn address_and_port() {
        assert!(matches!(run(detect, b"MGLNDD_192.0.2.1_443", [1, 443]), Seen::Is(_)));
        assert!(matches!(run(detect, b"MGLNDD_198.51.100.254_65535", [1, 2]), Seen::Is(_)));
        robust(detect, b"MGLNDD_192.0.2.1_443", [1, 443]);
        for bad in [
            &b"MGLNDD_192.0.2_443"[..],
            b"MGLNDD_192.0.2.256_443",
            b"MGLNDD_192.0.2.1_65536",
            b"MGLNDD_192.0.2.1_",
            b"MGLNDD_192.0.2.1_443\n",
            b"MGLNDD_",
        ] {
            assert_eq!(run(detect, bad, [1, 2]), Seen::No);
        }
    }
}
