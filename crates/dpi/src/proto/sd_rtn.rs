//! Agora's SD-RTN (software-defined real-time network): a client opens a session to an
//! edge server with a hello (message type 0x21 at offset 6) whose first field is the tag
//! `SNI` (a length byte 4 and three letters) followed by the edge's host name (a 16-bit
//! length, a zero byte, the name).
//!
//! Sources: the hello's layout (type offset, the `SNI` tag at offset 12, the name's length
//! at 16 and the name at 19) as nDPI's `sd_rtn.c` gives it.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "SD-RTN";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Any,
    evidence: "a hello (type 0x21) whose `SNI` field holds a host name (letters, digits, \
               dots and hyphens) of the length it declares, within the datagram",
    source: "nDPI's sd_rtn.c (hello type, field tag and offsets)",
    detect,
};

fn detect(p: &Packet<'_>, meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 20 || b[6] != 0x21 || &b[12..16] != b"\x04SNI" || b[18] != 0 {
        return Seen::No;
    }
    let Some(len) = be16(b, 16).map(usize::from) else { return Seen::No };
    let Some(host) = b.get(19..19 + len) else { return Seen::No };
    let hostname = |c: &u8| c.is_ascii_alphanumeric() || *c == b'.' || *c == b'-';
    if len < 3 || !host.iter().all(hostname) || !host.contains(&b'.') {
        return Seen::No;
    }
    meta.sni = Some(crate::text_of(host));
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    fn hello(host: &[u8]) -> Vec<u8> {
        let mut b = vec![0, 0x11, 0x22, 0x33, 0, 0, 0x21, 0, 0, 0, 0, 0];
        b.extend_from_slice(b"\x04SNI");
        b.extend_from_slice(&(host.len() as u16).to_be_bytes());
        b.push(0);
        b.extend_from_slice(host);
        b.extend_from_slice(&[0x50, 0x44, 0x4d, 0x44, 0, 0]);
        b
    }

    #[test]
    fn hello_with_edge_name() {
        let h = hello(b"192-0-2-1.edge.example.io");
        let mut m = Meta::default();
        let p = Packet { payload: &h, from_initiator: true, ports: [35778, 8130], index: 0 };
        assert!(matches!(detect(&p, &mut m), Seen::Is(_)));
        assert_eq!(m.sni.as_deref(), Some("192-0-2-1.edge.example.io"));
        robust(detect, &h, [35778, 8130]);
        // A name that overruns the datagram, is not a host name, or another type.
        let mut long = h.clone();
        long[17] = 200;
        assert_eq!(run(detect, &long, [1, 8130]), Seen::No);
        assert_eq!(run(detect, &hello(b"\x01\x02\x03\x04"), [1, 8130]), Seen::No);
        let mut other = h.clone();
        other[6] = 0x23;
        assert_eq!(run(detect, &other, [1, 8130]), Seen::No);
    }
}
