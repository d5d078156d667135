//! TLS and DTLS: the ClientHello's server name, ALPN and version, over as many TCP segments
//! as the hello takes (within the byte budget); a ServerHello or the other record types
//! recognise a flow seen only from the server side.

use crate::registry::{Detector, First, Transport};
use crate::{Label, Meta, Packet, Proto, Seen, be16, text_of};

/// TLS over TCP (and the mail protocols' implicit-TLS ports).
pub(crate) const DETECTOR: Detector = Detector {
    protos: &[Proto::Tls, Proto::Imaps, Proto::Smtps, Proto::Pop3s],
    transport: Transport::Tcp,
    first: First::Range(0x14, 0x17),
    evidence: "a record header (type, version 3.x, length) and a whole ClientHello or \
               ServerHello, reassembled over segments; or, after the first packet, other \
               record types",
    source: "RFC 8446, RFC 5246, RFC 6066 (SNI), RFC 7301 (ALPN)",
    detect: tcp,
};

/// DTLS over UDP.
pub(crate) const DTLS: Detector = Detector {
    protos: &[Proto::Dtls],
    transport: Transport::Udp,
    first: First::Range(20, 25),
    evidence: "a record with DTLS 1.0/1.2/1.3 version bytes whose length fits the datagram",
    source: "RFC 6347, RFC 9147",
    detect: dtls,
};

/// Handshake message types.
const CLIENT_HELLO: u8 = 1;
const SERVER_HELLO: u8 = 2;

/// TLS on a mail port is that mail protocol over TLS (as nDPI names it).
fn label(p: &Packet<'_>) -> Label {
    let proto = if p.port(993) {
        Proto::Imaps
    } else if p.port(465) {
        Proto::Smtps
    } else if p.port(995) {
        Proto::Pop3s
    } else {
        Proto::Tls
    };
    // DNS over TLS has its own port (RFC 7858).
    let app = (proto == Proto::Tls && p.port(853)).then_some("DoH_DoT");
    Label { master: proto, app }
}

/// TLS over TCP.
pub(crate) fn tcp(p: &Packet<'_>, meta: &mut Meta) -> Seen {
    let b = p.payload;
    // Record header: type, version 3.x, length (a handshake header cut short waits for more).
    if b.len() < 5 {
        let handshake = b.first() == Some(&0x16) && b.get(1).is_none_or(|&v| v == 3);
        return if handshake { Seen::More } else { Seen::No };
    }
    if b[1] != 3 || b[2] > 4 {
        return Seen::No;
    }
    let len = usize::from(be16(b, 3).unwrap_or(0));
    if len == 0 || len > 18 * 1024 {
        return Seen::No;
    }
    match b[0] {
        0x16 => {
            let Some(&kind) = b.get(5) else { return Seen::More };
            if kind != CLIENT_HELLO && kind != SERVER_HELLO {
                // Other handshake messages (a flow picked up late) are TLS too.
                return if p.index > 0 { Seen::Is(label(p)) } else { Seen::No };
            }
            // The hello's length, which may span several records.
            let Some(hs_len) = b
                .get(6..9)
                .map(|s| usize::from(s[0]) << 16 | usize::from(s[1]) << 8 | usize::from(s[2]))
            else {
                return Seen::More;
            };
            let body = handshake_body(b, 4 + hs_len);
            match body {
                None => Seen::More,
                Some(h) => {
                    if kind == CLIENT_HELLO {
                        client_hello(&h[4..], meta);
                    }
                    Seen::Is(label(p))
                }
            }
        }
        // Application data, alerts, change cipher spec: a TLS flow picked up after its
        // handshake.
        0x14 | 0x15 | 0x17 if b[2] >= 1 => Seen::Is(label(p)),
        _ => Seen::No,
    }
}

/// The handshake bytes (`need` of them) gathered from consecutive handshake records, or
/// `None` if the records so far hold fewer.
fn handshake_body(b: &[u8], need: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(need.min(16 * 1024));
    let mut at = 0;
    while out.len() < need {
        let rec = b.get(at..at + 5)?;
        if rec[0] != 0x16 {
            return None;
        }
        let len = usize::from(u16::from_be_bytes([rec[3], rec[4]]));
        let data = b.get(at + 5..at + 5 + len)?;
        out.extend_from_slice(data);
        at += 5 + len;
    }
    out.truncate(need);
    Some(out)
}

/// Reads a ClientHello body (after the 4-byte handshake header).
pub(crate) fn client_hello(h: &[u8], meta: &mut Meta) {
    // version(2) random(32) session_id
    let mut at = 34;
    let Some(&sid) = h.get(at) else { return };
    at += 1 + usize::from(sid);
    let Some(cs) = be16(h, at) else { return };
    at += 2 + usize::from(cs);
    let Some(&comp) = h.get(at) else { return };
    at += 1 + usize::from(comp);
    let Some(ext_len) = be16(h, at) else { return };
    at += 2;
    let end = (at + usize::from(ext_len)).min(h.len());
    while at + 4 <= end {
        let (Some(kind), Some(len)) = (be16(h, at), be16(h, at + 2)) else { return };
        let data = &h[(at + 4).min(end)..(at + 4 + usize::from(len)).min(end)];
        match kind {
            // server_name: list(2) type(1) len(2) name
            0 if data.len() > 5 && data[2] == 0 => {
                let n = usize::from(be16(data, 3).unwrap_or(0));
                if let Some(name) = data.get(5..5 + n) {
                    meta.sni = Some(text_of(name));
                }
            }
            16 => {
                // ALPN: list(2) then (len(1) name)*
                let mut names = Vec::new();
                let mut i = 2;
                while let Some(&n) = data.get(i) {
                    let Some(name) = data.get(i + 1..i + 1 + usize::from(n)) else { break };
                    names.push(text_of(name).into_string());
                    i += 1 + usize::from(n);
                }
                if !names.is_empty() {
                    meta.alpn = Some(text_of(names.join(",").as_bytes()));
                }
            }
            _ => {}
        }
        at += 4 + usize::from(len);
    }
}

/// DTLS over UDP: a handshake or data record with DTLS 1.0/1.2/1.3's version bytes.
pub(crate) fn dtls(p: &Packet<'_>, meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 13
        || !(20..=25).contains(&b[0])
        // DTLS 1.0, 1.2, 1.3, and OpenSSL's pre-standard 0x0100.
        || !((b[1] == 0xfe && matches!(b[2], 0xff | 0xfd | 0xfc)) || (b[1] == 1 && b[2] == 0))
    {
        return Seen::No;
    }
    let len = usize::from(be16(b, 11).unwrap_or(0));
    if 13 + len > b.len() {
        return Seen::No;
    }
    // A DTLS ClientHello: handshake header (12 bytes), then version, random, session id and a
    // cookie before the cipher suites.
    if b[0] == 22 && b.get(13) == Some(&CLIENT_HELLO) {
        let h = b.get(25..(13 + len).min(b.len())).unwrap_or(&[]);
        if let Some(&sid) = h.get(34) {
            let at = 35 + usize::from(sid);
            if let Some(&cookie) = h.get(at) {
                let mut v = h[..34].to_vec();
                v.push(0);
                v.extend_from_slice(h.get(at + 1 + usize::from(cookie)..).unwrap_or(&[]));
                client_hello(&v, meta);
            }
        }
    }
    Seen::Is(Label::of(Proto::Dtls))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ClientHello with server name `name` and ALPN `h2`.
    pub(crate) fn hello(name: &str) -> Vec<u8> {
        let mut ext = Vec::new();
        let n = name.as_bytes();
        ext.extend_from_slice(&[0, 0]);
        ext.extend_from_slice(&((n.len() + 5) as u16).to_be_bytes());
        ext.extend_from_slice(&((n.len() + 3) as u16).to_be_bytes());
        ext.push(0);
        ext.extend_from_slice(&(n.len() as u16).to_be_bytes());
        ext.extend_from_slice(n);
        ext.extend_from_slice(&[0, 16, 0, 5, 0, 3, 2, b'h', b'2']);
        let mut body = vec![3, 3];
        body.extend_from_slice(&[7; 32]);
        body.push(0);
        body.extend_from_slice(&[0, 2, 0x13, 0x01, 1, 0]);
        body.extend_from_slice(&(ext.len() as u16).to_be_bytes());
        body.extend_from_slice(&ext);
        let mut hs = vec![CLIENT_HELLO, 0];
        hs.extend_from_slice(&(body.len() as u16).to_be_bytes());
        hs.extend_from_slice(&body);
        let mut rec = vec![0x16, 3, 1];
        rec.extend_from_slice(&(hs.len() as u16).to_be_bytes());
        rec.extend_from_slice(&hs);
        rec
    }

    fn pkt(b: &[u8]) -> Packet<'_> {
        Packet { payload: b, from_initiator: true, ports: [50000, 443], index: 0 }
    }

    #[test]
    fn server_name_and_alpn() {
        let h = hello("www.youtube.com");
        let mut m = Meta::default();
        assert_eq!(tcp(&pkt(&h), &mut m), Seen::Is(Label::of(Proto::Tls)));
        assert_eq!(m.sni.as_deref(), Some("www.youtube.com"));
        assert_eq!(m.alpn.as_deref(), Some("h2"));
    }

    #[test]
    fn short_dtls_hellos_and_odd_alpn_names() {
        // A DTLS handshake record shorter than its own handshake header (found by fuzzing).
        let b = [22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1, 0];
        let p = Packet { payload: &b, from_initiator: true, ports: [1, 2], index: 0 };
        assert_eq!(dtls(&p, &mut Meta::default()), Seen::Is(Label::of(Proto::Dtls)));
        // ALPN names are kept as printable text.
        let mut h = hello("a.example");
        let at = h.windows(3).position(|w| w == [2, b'h', b'2']).unwrap();
        h[at + 1] = 0x07;
        let mut m = Meta::default();
        let _ = tcp(&pkt(&h), &mut m);
        assert_eq!(m.alpn.as_deref(), Some("2"));
    }

    #[test]
    fn a_hello_cut_anywhere_asks_for_more_and_never_panics() {
        let h = hello("example.org");
        for cut in 1..h.len() {
            let mut m = Meta::default();
            let s = tcp(&pkt(&h[..cut]), &mut m);
            assert_eq!(s, Seen::More, "cut at {cut}");
        }
    }
}
