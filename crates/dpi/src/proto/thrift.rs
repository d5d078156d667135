//! Apache Thrift's binary protocol (strict): a version word 0x8001 with a message type
//! (call, reply, exception, oneway), a method name of the declared length, and a sequence
//! id; bare or in a framed transport. And its compact protocol (as Jaeger agents send spans
//! over UDP): the protocol id 0x82, the version 1 with the message type in the top three
//! bits, a varint sequence id, a varint name length and the method name.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be32};

const NAME: &str = "Thrift";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Bytes(&[0x80, 0, 0x82]),
    evidence: "the strict binary header 0x8001 and a message type 1-4 (after a frame length \
               equal to the rest, if framed), or the compact header 0x82 with version 1 and a \
               message type 1-4 and a varint sequence id; then a method name of 1-64 \
               identifier characters of the declared length",
    source: "Apache Thrift, \"Thrift Binary protocol encoding\" and \"Thrift Compact \
             protocol encoding\" (doc/specs)",
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
    if framed || message(b) || compact(b) { super::is(&NAME) } else { Seen::No }
}

/// A varint (7 bits a byte, low first) of at most five bytes at `at`: its value and the
/// offset after it.
fn varint(b: &[u8], mut at: usize) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for shift in 0..5 {
        let c = *b.get(at)?;
        at += 1;
        v |= u64::from(c & 0x7f) << (7 * shift);
        if c & 0x80 == 0 {
            return Some((v, at));
        }
    }
    None
}

/// The compact protocol's message header: 0x82, version 1 with the type (1-4) in the top
/// three bits, a varint sequence id, a varint name length, the name.
fn compact(b: &[u8]) -> bool {
    if b.len() < 4 || b[0] != 0x82 || b[1] & 0x1f != 1 || !(1..=4).contains(&(b[1] >> 5)) {
        return false;
    }
    let Some((_, at)) = varint(b, 2) else { return false };
    let Some((len, at)) = varint(b, at) else { return false };
    let len = len as usize;
    (1..=64).contains(&len)
        && b.get(at..at + len)
            .is_some_and(|n| n.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_'))
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

    #[test]
    fn compact_oneway() {
        let mut m = vec![0x82, 0x81, 0xb2, 0x81, 0x01, 0x09];
        m.extend_from_slice(b"emitBatch");
        m.extend_from_slice(&[0x1c, 0x1c, 0x18]);
        assert!(matches!(run(detect, &m, [49164, 6831]), Seen::Is(_)));
        robust(detect, &m, [49164, 6831]);
        let mut version = m.clone();
        version[1] = 0x82;
        assert_eq!(run(detect, &version, [49164, 6831]), Seen::No);
        assert_eq!(run(detect, &m[..12], [49164, 6831]), Seen::No);
    }
}
