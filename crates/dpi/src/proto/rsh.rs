//! RSH (remote shell, TCP 514): after the stderr port number (digits and NUL), the client
//! sends three NUL-terminated strings: local user, remote user, command.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "RSH";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Text(&[0, 1]),
    evidence: "on port 514, three packets from both sides: from the client the stderr port \
               (up to five digits, NUL) and/or three NUL-terminated printable strings (local \
               user, remote user, command; users of at most 32 characters), from the server a \
               single NUL or a refusal (the byte 1 and a printable line)",
    source: "rsh(1) and rshd(8) protocol descriptions (4.2BSD)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if p.ports[1] != 514 {
        return Seen::No;
    }
    // The server's answer: a single NUL byte, or a refusal (the byte 1 and a message line).
    if !p.from_initiator {
        let refusal = b.len() >= 3
            && b[0] == 1
            && b.ends_with(b"\n")
            && b[1..b.len() - 1].iter().all(|c| (0x20..0x7f).contains(c));
        return if b == [0] || refusal { super::maybe(&NAME, 0) } else { Seen::No };
    }
    if b.last() != Some(&0) {
        return Seen::No;
    }
    let parts: Vec<&[u8]> = b[..b.len() - 1].split(|&c| c == 0).collect();
    let printable = |s: &[u8]| s.iter().all(|c| (0x20..0x7f).contains(c));
    let port = |s: &[u8]| s.len() <= 5 && s.iter().all(u8::is_ascii_digit);
    let users = |u: &[&[u8]]| u.iter().all(|s| !s.is_empty() && s.len() <= 32 && printable(s));
    let ok = match parts.as_slice() {
        [p0] => port(p0),
        [a, b2, c] => users(&[a, b2]) && printable(c),
        [p0, a, b2, c] => port(p0) && users(&[a, b2]) && printable(c),
        _ => false,
    };
    if ok { super::maybe(&NAME, 0) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn login() {
        assert!(matches!(run(detect, b"1023\0root\0root\0ls -l\0", [1023, 514]), Seen::Maybe(..)));
        assert_eq!(run(detect, b"syslog line\n", [1023, 514]), Seen::No);
        assert_eq!(run(detect, b"1023\0root\0root\0ls -l\0", [1023, 513]), Seen::No);
        robust(detect, b"1023\0root\0root\0ls\0", [1023, 514]);
        // The server's refusal.
        let refusal = b"\x01Password incorrect.\n";
        let p = Packet { payload: refusal, from_initiator: false, ports: [1023, 514], index: 2 };
        assert!(matches!(detect(&p, &mut Meta::default()), Seen::Maybe(..)));
        let p =
            Packet { payload: b"\x01\x02\n", from_initiator: false, ports: [1023, 514], index: 2 };
        assert_eq!(detect(&p, &mut Meta::default()), Seen::No);
    }
}
