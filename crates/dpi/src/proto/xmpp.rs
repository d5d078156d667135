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
               `jabber:` namespace or the streams namespace; or, mid-session, three segments \
               from both sides that start with an iq, message or presence stanza carrying two \
               stanza attributes",
    source: "RFC 6120 (XMPP core), sections 4.7 and 8",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if let Some(stanza) = stanza(b) {
        return stanza;
    }
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

/// A stanza seen without the stream's opening (a capture that starts mid-session): a
/// segment that starts with an `iq`, `message` or `presence` element (RFC 6120 section 8)
/// carrying XMPP's stanza attributes (`id`, `type`, `to`, `from`, `xml:lang`) and ends a
/// tag. Weak alone: three such segments, from both sides.
fn stanza(b: &[u8]) -> Option<Seen> {
    let rest =
        [&b"<iq "[..], b"<message ", b"<presence "].iter().find_map(|t| b.strip_prefix(*t))?;
    let tag_end = rest.iter().position(|&c| c == b'>')?;
    let tag = &rest[..tag_end];
    let attrs = [&b"id='"[..], b"id=\"", b"type=", b"to=", b"from=", b"xml:lang="];
    let n = attrs.iter().filter(|a| tag.windows(a.len()).any(|w| w == **a)).count();
    let label = crate::Label { master: crate::Proto::Other(&NAME), app: None };
    (n >= 2 && b.trim_ascii_end().ends_with(b">")).then_some(Seen::Maybe(label, 0, None))
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

    #[test]
    fn stanzas_mid_session() {
        let iq = b"<iq type='set' id='purple1' to='xmpp.example'><session/></iq>";
        assert!(matches!(run(detect, iq, [57129, 5222]), Seen::Maybe(..)));
        let from = b"<iq xml:lang='en' to='a@xmpp.example/x' from='xmpp.example' type='result'/>";
        assert!(matches!(run(detect, from, [5222, 57129]), Seen::Maybe(..)));
        assert_eq!(run(detect, b"<iq>hello</iq>", [1, 2]), Seen::No);
        assert_eq!(run(detect, b"<message id='1' type='chat'", [1, 2]), Seen::No);
        robust(detect, iq, [1, 2]);
    }
}
