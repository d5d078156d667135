//! Valve's Source engine server queries (A2S): the `0xFFFFFFFF` out-of-band prefix and a
//! query or reply header.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Source_Engine";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[0xff]),
    evidence: "the single-packet prefix 0xFFFFFFFF then `TSource Engine Query`, or an info \
               reply (`I`, protocol version, NUL-terminated server name), or a challenge \
               query or reply (`U`, `V`, `W`, `A` with a 4-byte number)",
    source: "Valve Developer Community, \"Server queries\"",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 9 || b[..4] != [0xff; 4] {
        return Seen::No;
    }
    let body = &b[5..];
    match b[4] {
        b'T' if body.starts_with(b"Source Engine Query\0") => super::is(&NAME),
        b'I' if body.len() > 2 && body[1..].contains(&0) && (7..=60).contains(&body[0]) => {
            super::maybe(&NAME, 0)
        }
        b'U' | b'V' | b'W' | b'A' if b.len() == 9 => super::maybe(&NAME, 0),
        _ => Seen::No,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn info_query() {
        let m = b"\xff\xff\xff\xffTSource Engine Query\0";
        assert!(matches!(run(detect, m, [20595, 27015]), Seen::Is(_)));
        assert_eq!(run(detect, b"\xff\xff\xff\xffgetstatus\n", [1, 27960]), Seen::No);
        robust(detect, m, [1, 2]);
    }
}
