//! Syslog over TCP (RFC 6587): messages framed by a trailing line feed or by an octet count
//! (`<length> <message>`), each a syslog message: `<PRI>` (0-191) followed by the RFC 5424
//! header (version 1, then a timestamp or `-`) or an RFC 3164 timestamp (`Mmm dd hh:mm:ss`,
//! or in the RFC 3339 form that rsyslog forwards).
//! (Syslog over UDP is read in `udp.rs`.)

use crate::registry::{Detector, First, Transport};
use crate::{Label, Meta, Packet, Proto, Seen};

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[Proto::Syslog],
    transport: Transport::Tcp,
    first: First::Bytes(b"<123456789"),
    evidence: "a message `<PRI>` (0-191), optionally after an octet count, then an RFC 5424 \
               header (version 1 and a timestamp or `-`) or an RFC 3164 or RFC 3339 timestamp",
    source: "RFC 6587 (transmission over TCP), RFC 5424, RFC 3164, RFC 3339",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let mut b = p.payload;
    // Octet counting: a decimal length, a space, then the message.
    if b.first().is_some_and(u8::is_ascii_digit) {
        let Some(sp) = b.iter().take(7).position(|&c| c == b' ') else { return Seen::No };
        b = &b[sp + 1..];
    }
    let Some(rest) = b.strip_prefix(b"<") else { return Seen::No };
    let Some(end) = rest.iter().take(4).position(|&c| c == b'>') else { return Seen::No };
    let pri = &rest[..end];
    if pri.is_empty() || !pri.iter().all(u8::is_ascii_digit) {
        return Seen::No;
    }
    if pri.iter().fold(0u32, |n, &c| n * 10 + u32::from(c - b'0')) > 191 {
        return Seen::No;
    }
    let h = &rest[end + 1..];
    let rfc5424 = h.starts_with(b"1 ")
        && (h.get(2) == Some(&b'-')
            || h.get(2..7).is_some_and(|y| y[..4].iter().all(u8::is_ascii_digit) && y[4] == b'-'));
    const MONTHS: [&[u8]; 12] = [
        b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
        b"Dec",
    ];
    let rfc3164 = h.len() >= 15
        && MONTHS.contains(&&h[..3])
        && h[3] == b' '
        && h[9] == b':'
        && h[12] == b':'
        && [7, 8, 10, 11, 13, 14].iter().all(|&i| h[i].is_ascii_digit());
    // RFC 3164's layout with an RFC 3339 timestamp (rsyslog's forwarding format).
    let iso = |t: &[u8]| {
        t.len() >= 19
            && [4, 7].iter().all(|&i| t[i] == b'-')
            && t[10] == b'T'
            && [13, 16].iter().all(|&i| t[i] == b':')
            && [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]
                .iter()
                .all(|&i| t[i].is_ascii_digit())
    };
    if rfc5424 || rfc3164 || iso(h) { Seen::Is(Label::of(Proto::Syslog)) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn framings_and_headers() {
        let m = b"<22>1 2021-04-18T14:51:48+04:00 host app - - - hello\n";
        assert!(matches!(run(detect, m, [49948, 601]), Seen::Is(_)));
        assert!(matches!(run(detect, b"52 <34>1 - host su - - - x\n", [1, 601]), Seen::Is(_)));
        assert!(matches!(
            run(detect, b"<34>Oct 11 22:14:15 mymachine su: x\n", [1, 514]),
            Seen::Is(_)
        ));
        robust(detect, m, [49948, 601]);
        let iso = b"<167>2016-05-24T09:50:52.926451+02:00 ldap01 slapd[3453]: conn=1\n";
        assert!(matches!(run(detect, iso, [9039, 514]), Seen::Is(_)));
        assert_eq!(run(detect, b"<192>1 - host\n", [1, 2]), Seen::No);
        assert_eq!(run(detect, b"<html><body>\n", [1, 2]), Seen::No);
        assert_eq!(run(detect, b"<34>Foo 11 22:14:15 x\n", [1, 2]), Seen::No);
    }
}
