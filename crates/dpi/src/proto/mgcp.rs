//! MGCP (media gateway control, RFC 3435): a command line `VERB transaction endpoint MGCP
//! 1.0` or a response line with a transaction id.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "MGCP";

const VERBS: [&[u8]; 9] =
    [b"EPCF ", b"CRCX ", b"MDCX ", b"DLCX ", b"RQNT ", b"NTFY ", b"AUEP ", b"AUCX ", b"RSIP "];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(b"ACDEMNR"),
    evidence: "a command verb, a numeric transaction id, an endpoint with `@`, and `MGCP 1.0` \
               (or the earlier 0.1) on the first line",
    source: "RFC 3435, section 3.2",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !VERBS.iter().any(|v| b.starts_with(v)) {
        return Seen::No;
    }
    // The command line ends in CR LF, LF, or a bare CR (as some gateways send).
    let line = b.split(|&c| c == b'\n' || c == b'\r').next().unwrap_or(b);
    let mut words = line.split(|&c| c == b' ');
    let (_, tid, ep) = (words.next(), words.next(), words.next());
    let rest: Vec<&[u8]> = words.collect();
    if tid.is_some_and(|t| !t.is_empty() && t.iter().all(u8::is_ascii_digit))
        && ep.is_some_and(|e| e.contains(&b'@'))
        && (rest == [&b"MGCP"[..], b"1.0"] || rest == [&b"MGCP"[..], b"0.1"])
    {
        return super::is(&NAME);
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn command() {
        let m = b"AUEP 1200 aaln/1@gw.example.net MGCP 1.0\r\nF: A\r\n";
        assert!(matches!(run(detect, m, [2727, 2427]), Seen::Is(_)));
        assert_eq!(run(detect, b"AUEP 12x0 aaln/1@gw MGCP 1.0\r\n", [1, 2]), Seen::No);
        assert!(matches!(
            run(detect, b"RQNT 1 *@gw.example.com MGCP 0.1\rR: l/hd(n)\rX: 1\r", [1, 2427]),
            Seen::Is(_)
        ));
        robust(detect, m, [1, 2427]);
    }
}
