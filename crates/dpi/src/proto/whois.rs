//! WHOIS (TCP 43) and the Domain Availability Service (TCP 4343): a query is one line of
//! printable text ended by CRLF.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Whois-DAS";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Text(&[]),
    evidence: "on port 43 or 4343, from the client: a single line of 1-255 printable \
               characters ended by CRLF",
    source: "RFC 3912 (WHOIS protocol specification)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !p.from_initiator || !(p.ports[1] == 43 || p.ports[1] == 4343) {
        return Seen::No;
    }
    let Some(line) = b.strip_suffix(b"\r\n") else { return Seen::No };
    if !line.is_empty() && line.len() <= 255 && line.iter().all(|c| (0x20..0x7f).contains(c)) {
        return super::is(&NAME);
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn query() {
        assert!(matches!(run(detect, b"example.com\r\n", [40000, 43]), Seen::Is(_)));
        assert_eq!(run(detect, b"example.com\r\n", [40000, 44]), Seen::No);
        assert_eq!(run(detect, b"example.com", [40000, 43]), Seen::No);
        robust(detect, b"example.com\r\n", [40000, 43]);
    }
}
