//! WebSocket frames seen without the opening handshake (a capture that starts mid-session):
//! each segment holds whole frames (RFC 6455 section 5.2): FIN and reserved bits (only RSV1,
//! for permessage-deflate, RFC 7692), a defined opcode (continuation, text, binary, close,
//! ping, pong), the mask bit, a 7-bit length or its 16- or 64-bit extension, the masking key
//! if masked, and the payload, ending exactly with the segment. A client masks every frame
//! and a server none, so each side keeps its mask bit.
//!
//! The handshake itself is recognised with HTTP (`text.rs`).

use crate::registry::{Detector, First, Transport};
use crate::{Label, Meta, Packet, Proto, Seen};

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[Proto::WebSocket],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x01, 0x02, 0x81, 0x82, 0x88, 0x89, 0x8a, 0xc1, 0xc2]),
    evidence: "segments of whole frames (defined opcode, RSV2-3 clear, lengths that end with \
               the segment, control frames final and short), each side keeping its mask bit; \
               three segments from both sides",
    source: "RFC 6455 section 5 (framing), RFC 7692 (RSV1)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let mut at = 0;
    let mut masked = None;
    while at < b.len() {
        let (Some(&h0), Some(&h1)) = (b.get(at), b.get(at + 1)) else { return Seen::No };
        let opcode = h0 & 0x0f;
        if h0 & 0x30 != 0 || !matches!(opcode, 0..=2 | 8..=10) {
            return Seen::No;
        }
        let mask = h1 & 0x80 != 0;
        if masked.is_some_and(|m| m != mask) {
            return Seen::No;
        }
        masked = Some(mask);
        let (len, mut next) = match h1 & 0x7f {
            126 => match crate::be16(b, at + 2) {
                Some(l) if l >= 126 => (u64::from(l), at + 4),
                _ => return Seen::No,
            },
            127 => match b.get(at + 2..at + 10) {
                Some(s) => (u64::from_be_bytes(s.try_into().unwrap_or([0xff; 8])), at + 10),
                None => return Seen::No,
            },
            l => (u64::from(l), at + 2),
        };
        if opcode >= 8 && (h0 & 0x80 == 0 || len > 125) {
            return Seen::No;
        }
        if mask {
            next += 4;
        }
        let Ok(len) = usize::try_from(len) else { return Seen::No };
        let Some(end) = next.checked_add(len) else { return Seen::No };
        at = end;
    }
    if at != b.len() || b.len() < 2 {
        return Seen::No;
    }
    Seen::Maybe(Label::of(Proto::WebSocket), u32::from(masked == Some(true)), None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};
    use crate::{Config, FlowDpi};

    fn frame(opcode: u8, mask: bool, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0x80 | opcode];
        let m = if mask { 0x80 } else { 0 };
        if payload.len() < 126 {
            f.push(m | payload.len() as u8);
        } else {
            f.push(m | 126);
            f.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        }
        if mask {
            f.extend_from_slice(&[0xe1, 0x7e, 0x8e, 0xb9]);
        }
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn frames_both_ways() {
        let server = frame(1, false, b"Welcome, 192.0.2.1!");
        let client = frame(1, true, b"hello there");
        assert!(matches!(run(detect, &server, [12345, 50999]), Seen::Maybe(..)));
        assert!(matches!(run(detect, &frame(2, true, &[7; 300]), [1, 2]), Seen::Maybe(..)));
        robust(detect, &client, [12345, 50999]);
        // Cut short, a reserved opcode, a long ping, mixed masking in one segment.
        assert_eq!(run(detect, &server[..server.len() - 1], [1, 2]), Seen::No);
        let mut op = server.clone();
        op[0] = 0x83;
        assert_eq!(run(detect, &op, [1, 2]), Seen::No);
        assert_eq!(run(detect, &frame(9, false, &[0; 126]), [1, 2]), Seen::No);
        let mut mixed = server.clone();
        mixed.extend_from_slice(&client);
        assert_eq!(run(detect, &mixed, [1, 2]), Seen::No);
        let cfg = Config::default();
        let mut f = FlowDpi::new(6);
        f.feed(&cfg, true, [12345, 50999], &server);
        f.feed(&cfg, false, [12345, 50999], &client);
        f.feed(&cfg, true, [12345, 50999], &frame(1, false, b"21:33:52 say: hello"));
        assert_eq!(f.label().master, Proto::WebSocket);
    }
}
