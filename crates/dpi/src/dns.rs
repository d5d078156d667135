//! DNS over UDP and TCP (with its two-byte length), mDNS and LLMNR: a well-formed header
//! and question, and the query name.

use crate::registry::{Detector, First, Transport};
use crate::{Label, Meta, Packet, Proto, Seen, be16};

/// DNS, mDNS and LLMNR over UDP.
pub(crate) const UDP: Detector = Detector {
    protos: &[Proto::Dns, Proto::Mdns, Proto::Llmnr],
    transport: Transport::Udp,
    first: First::Any,
    evidence: "a well-formed message (header counts, question names) on a DNS, mDNS or \
               LLMNR port",
    source: "RFC 1035, RFC 6762, RFC 4795",
    detect: udp,
};

/// DNS over TCP.
pub(crate) const TCP: Detector = Detector {
    protos: &[Proto::Dns],
    transport: Transport::Tcp,
    first: First::Any,
    evidence: "a length prefix and a well-formed message on port 53 or 5353",
    source: "RFC 1035, RFC 7766",
    detect: tcp,
};

/// Reads a DNS message; the query name if it is one.
pub(crate) fn message(b: &[u8]) -> Option<String> {
    if b.len() < 12 {
        return None;
    }
    let flags = be16(b, 2)?;
    let opcode = (flags >> 11) & 0xf;
    let qd = be16(b, 4)?;
    let an = be16(b, 6)?;
    if opcode > 6 || (flags >> 6) & 1 != 0 && flags & 0x8000 == 0 || qd > 16 || an > 256 {
        return None;
    }
    if qd == 0 {
        // A response without a question (mDNS announcements).
        return if an > 0 && flags & 0x8000 != 0 { Some(String::new()) } else { None };
    }
    // The first question's name: labels up to 63 bytes, a zero, then type and class.
    let mut at = 12;
    let mut name = String::new();
    loop {
        let len = usize::from(*b.get(at)?);
        if len == 0 {
            at += 1;
            break;
        }
        if len & 0xc0 == 0xc0 {
            at += 2;
            break;
        }
        if len > 63 || name.len() + len > 253 {
            return None;
        }
        let label = b.get(at + 1..at + 1 + len)?;
        if !name.is_empty() {
            name.push('.');
        }
        name.extend(label.iter().map(|&c| if c.is_ascii_graphic() { c as char } else { '?' }));
        at += 1 + len;
    }
    let qtype = be16(b, at)?;
    let class = be16(b, at + 2)? & 0x7fff;
    if qtype == 0 || !(class == 1 || class == 255 || class == 3) {
        return None;
    }
    Some(name)
}

fn label_for(p: &Packet<'_>) -> Proto {
    if p.port(5353) {
        Proto::Mdns
    } else if p.port(5355) {
        Proto::Llmnr
    } else {
        Proto::Dns
    }
}

/// DNS over UDP (on any port, if the message is well formed and one end is a DNS port, or
/// the message shows a question and plausible counts).
pub(crate) fn udp(p: &Packet<'_>, meta: &mut Meta) -> Seen {
    let dns_port = p.port(53) || p.port(5353) || p.port(5355);
    if !dns_port {
        return Seen::No;
    }
    match message(p.payload) {
        Some(name) => {
            if !name.is_empty() {
                meta.dns_query = Some(name.into());
            }
            Seen::Is(Label { master: label_for(p), app: None })
        }
        None => Seen::No,
    }
}

/// DNS over TCP: a length prefix, then a message.
pub(crate) fn tcp(p: &Packet<'_>, meta: &mut Meta) -> Seen {
    if !p.port(53) && !p.port(5353) {
        return Seen::No;
    }
    let b = p.payload;
    let Some(len) = be16(b, 0) else { return Seen::No };
    if usize::from(len) < 12 {
        return Seen::No;
    }
    if b.len() < 2 + 12 {
        return Seen::More;
    }
    match message(&b[2..]) {
        Some(name) => {
            if !name.is_empty() {
                meta.dns_query = Some(name.into());
            }
            Seen::Is(Label::of(Proto::Dns))
        }
        None => Seen::No,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(name: &str) -> Vec<u8> {
        let mut b = vec![0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        for part in name.split('.') {
            b.push(part.len() as u8);
            b.extend_from_slice(part.as_bytes());
        }
        b.extend_from_slice(&[0, 0, 1, 0, 1]);
        b
    }

    #[test]
    fn query_names_over_udp_and_tcp() {
        let q = query("www.netflix.com");
        let mut m = Meta::default();
        let p = Packet { payload: &q, from_initiator: true, ports: [5000, 53], index: 0 };
        assert_eq!(udp(&p, &mut m), Seen::Is(Label::of(Proto::Dns)));
        assert_eq!(m.dns_query.as_deref(), Some("www.netflix.com"));
        let mut t = (q.len() as u16).to_be_bytes().to_vec();
        t.extend_from_slice(&q);
        let p = Packet { payload: &t, from_initiator: true, ports: [5000, 53], index: 0 };
        assert_eq!(tcp(&p, &mut Meta::default()), Seen::Is(Label::of(Proto::Dns)));
        for cut in 0..q.len() {
            let p =
                Packet { payload: &q[..cut], from_initiator: true, ports: [5000, 53], index: 0 };
            assert_eq!(udp(&p, &mut Meta::default()), Seen::No);
        }
    }
}
