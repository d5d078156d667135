//! Gnutella: the TCP handshake (`GNUTELLA CONNECT/0.6`, `GNUTELLA/0.6 200`), descriptors over
//! UDP (23-byte header), and the `GND` header of its semi-reliable UDP layer.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Gnutella";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Any,
    evidence: "over TCP the handshake line; over UDP a `GND` header with part <= count, or a \
               descriptor header (a non-zero GUID, a known type, TTL + hops <= 16, a payload \
               length equal to the rest)",
    source: "Gnutella Protocol Specification 0.6 (the GDF), gtk-gnutella's UDP \
             reliability layer description",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.starts_with(b"GNUTELLA CONNECT/") || b.starts_with(b"GNUTELLA/0.6 ") {
        return super::is(&NAME);
    }
    if b.starts_with(b"GND") && b.len() >= 8 {
        // Flags, sequence, part, count (an acknowledgement has count 0).
        let (part, count) = (b[6], b[7]);
        if (b[3] & 0xf0 == 0x10 || b[3] & 0xf0 == 0)
            && ((count == 0 && b.len() <= 12) || (part >= 1 && part <= count))
        {
            return super::is(&NAME);
        }
        return Seen::No;
    }
    // A descriptor: GUID (16), type, TTL, hops, payload length (little-endian).
    if b.len() >= 23 {
        let kind = b[16];
        let (ttl, hops) = (b[17], b[18]);
        let len = super::le32(b, 19).unwrap_or(u32::MAX) as usize;
        // Ping, pong, bye, QRP, vendor, push, query, query hit, and the DHT (0x44).
        if matches!(kind, 0x00 | 0x01 | 0x02 | 0x30 | 0x31 | 0x32 | 0x40 | 0x44 | 0x80 | 0x81)
            && u16::from(ttl) + u16::from(hops) <= 16
            && len + 23 == b.len()
            && !b[..16].iter().all(|&c| c == 0)
        {
            return super::is(&NAME);
        }
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn handshake_and_udp() {
        assert!(matches!(
            run(detect, b"GNUTELLA CONNECT/0.6\r\nUser-Agent: x\r\n\r\n", [5000, 6346]),
            Seen::Is(_)
        ));
        let gnd = b"GND\x10\x3e\x8f\x01\x01T\x0bQKRP\x06RNA]/\xe25\tp";
        assert!(matches!(run(detect, gnd, [28681, 6346]), Seen::Is(_)));
        let mut ping = vec![7u8; 16];
        ping.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0]);
        assert!(matches!(run(detect, &ping, [28681, 6346]), Seen::Is(_)));
        ping[17] = 30;
        assert_eq!(run(detect, &ping, [28681, 6346]), Seen::No);
        robust(detect, gnd, [1, 2]);
    }
}
