//! XMPP (Jabber): the stream header, `<stream:stream` in the `jabber:client` or
//! `jabber:server` namespace, after an optional XML declaration.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

pub(crate) const NAME: &str = "Jabber";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(b"<"),
    evidence: "an XML stream header `<stream:stream` (or `<?xml` then one) naming the \
               `jabber:` namespace or the streams namespace",
    source: "RFC 6120 (XMPP core), section 4.7",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !(b.starts_with(b"<?xml") || b.starts_with(b"<stream:stream")) {
        return Seen::No;
    }
    let head = &b[..b.len().min(512)];
    let has = |s: &[u8]| head.windows(s.len()).any(|w| w == s);
    if has(b"<stream:stream") && (has(b"jabber:") || has(b"etherx.jabber.org/streams")) {
        return super::is(&NAME);
    }
    if !has(b">") && b.len() < 512 { Seen::More } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn stream_header() {
        let m = b"<?xml version='1.0'?><stream:stream to='im.example' xmlns='jabber:client' \
                  xmlns:stream='http://etherx.jabber.org/streams' version='1.0'>";
        assert!(matches!(run(detect, m, [5000, 5222]), Seen::Is(_)));
        assert_eq!(run(detect, b"<?xml version='1.0'?><html>", [1, 2]), Seen::No);
        robust(detect, m, [1, 2]);
    }
}
