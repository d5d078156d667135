//! Apache Thrift's binary protocol (strict): a version word 0x8001 with a message type
//! (call, reply, exception, oneway), a method name of the declared length, and a sequence
//! id; bare or in a framed transport.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be32};

const NAME: &str = "Thrift";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x80, 0]),
    evidence: "the strict binary header 0x8001 and a message type 1-4 (after a frame length \
               equal to the rest, if framed), then a method name of 1-64 identifier \
               characters of the declared length",
    source: "Apache Thrift, \"Thrift Binary protocol encoding\" (doc/specs)",
    detect,
};

fn message(b: &[u8]) -> bool {
    let Some(head) = be32(b, 0) else { return false };
    if head & 0xffff_ff00 != 0x8001_0000 || !(1..=4).contains(&(head & 0xff)) {
        return false;
    }
    let len = be32(b, 4).unwrap_or(0) as usize;
    (1..=64).contains(&len)
        && b.get(8..8 + len)
            .is_some_and(|n| n.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_'))
        && b.len() >= 12 + len
}

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let framed = be32(b, 0).is_some_and(|l| l as usize + 4 == b.len()) && message(&b[4..]);
    if framed || message(b) { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn call() {
        let mut m = vec![0x80, 1, 0, 1, 0, 0, 0, 4];
        m.extend_from_slice(b"ping");
        m.extend_from_slice(&[0, 0, 0, 1, 0]);
        assert!(matches!(run(detect, &m, [40000, 9090]), Seen::Is(_)));
        let mut framed = ((m.len()) as u32).to_be_bytes().to_vec();
        framed.extend_from_slice(&m);
        assert!(matches!(run(detect, &framed, [40000, 9090]), Seen::Is(_)));
        m[3] = 9;
        assert_eq!(run(detect, &m, [40000, 9090]), Seen::No);
        robust(detect, &framed, [40000, 9090]);
    }
}
