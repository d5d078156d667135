//! SOCKS 4 and 5: the client's greeting or request and the server's reply, each of a size
//! the protocol fixes.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "SOCKS";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0, 4, 5]),
    evidence: "three messages of the handshake from both sides: a SOCKS 5 greeting (method \
               count equal to the methods sent), the server's method choice, a request (connect, \
               bind, UDP associate with a defined address type) or reply; or a SOCKS 4 request \
               (NUL-terminated user id) and its 8-byte reply",
    source: "RFC 1928 (SOCKS 5), RFC 1929; the SOCKS 4 and 4A protocol descriptions",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let fits = match (b.first(), p.from_initiator) {
        // Greeting: version, n, n methods.
        (Some(5), true) if b.len() >= 3 && usize::from(b[1]) + 2 == b.len() => {
            b[2..].iter().all(|&m| m <= 9 || m >= 0x80)
        }
        // Request: version, command 1-3, reserved 0, address type 1/3/4, address, port.
        (Some(5), _) if b.len() >= 10 && (1..=3).contains(&b[1]) && b[2] == 0 => {
            let need = match b[3] {
                1 => 10,
                4 => 22,
                3 => 7 + usize::from(b[4]),
                _ => 0,
            };
            need == b.len()
        }
        // The server's method choice.
        (Some(5), false) => b.len() == 2 && (b[1] <= 9 || b[1] == 0xff),
        // SOCKS 4 request: version, command, port, address, user id, NUL.
        (Some(4), true) => {
            b.len() >= 9 && (1..=2).contains(&b[1]) && b.last() == Some(&0) && be16(b, 2) != Some(0)
        }
        // SOCKS 4 reply: 0, a status 90-93, port, address.
        (Some(0), false) => b.len() == 8 && (0x5a..=0x5d).contains(&b[1]),
        _ => false,
    };
    if fits { super::maybe(&NAME, 0) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn socks5_handshake() {
        assert!(matches!(run(detect, &[5, 1, 0], [40000, 1080]), Seen::Maybe(..)));
        assert_eq!(run(detect, &[5, 2, 0], [40000, 1080]), Seen::No);
        let req = [5, 1, 0, 1, 10, 0, 0, 1, 0, 80];
        assert!(matches!(run(detect, &req, [40000, 1080]), Seen::Maybe(..)));
        let reply =
            Packet { payload: &[5, 0], from_initiator: false, ports: [40000, 1080], index: 1 };
        assert!(matches!(detect(&reply, &mut Meta::default()), Seen::Maybe(..)));
        robust(detect, &req, [1, 1080]);
    }
}
