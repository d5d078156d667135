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
               LLMNR port; on port 53, a one-question header whose question starts with a \
               host-name label",
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

/// Reads a DNS message; the query name if it is one (empty if the message has no question).
///
/// Every opcode with a defined meaning is accepted (QUERY, IQUERY, STATUS, NOTIFY, UPDATE,
/// DSO) with the section counts its RFC allows: a question for the usual queries (a zone for
/// UPDATE); an inverse query (RFC 1035 section 6.4.1, obsoleted by RFC 3425 but still sent)
/// carries an answer record and no question; a response may carry no question (mDNS
/// announcements, RFC 6762) or, with an error code, no records at all; a DSO message (RFC
/// 8490) has zero counts and TLVs.
pub(crate) fn message(b: &[u8]) -> Option<String> {
    if b.len() < 12 {
        return None;
    }
    let flags = be16(b, 2)?;
    let response = flags & 0x8000 != 0;
    let opcode = (flags >> 11) & 0xf;
    let rcode = flags & 0xf;
    let qd = be16(b, 4)?;
    let an = be16(b, 6)?;
    let ns = be16(b, 8)?;
    let ar = be16(b, 10)?;
    // Opcode 3 and 7-15 are unassigned; the Z bit must be zero in a query.
    if opcode == 3 || opcode > 6 || (flags >> 6) & 1 != 0 && !response || qd > 16 || an > 256 {
        return None;
    }
    if opcode == 6 {
        // DSO: zero counts, then TLVs (type, length) that end with the message.
        if qd != 0 || an != 0 || ns != 0 || ar != 0 {
            return None;
        }
        let mut at = 12;
        while at < b.len() {
            at += 4 + usize::from(be16(b, at + 2)?);
        }
        return (at == b.len() && (b.len() > 12 || response)).then(String::new);
    }
    if qd == 0 {
        return match (response, opcode) {
            // An inverse query: the answer record it asks about (a name, type, class, TTL
            // and data that fits).
            (false, 1) if an >= 1 => {
                let (_, at) = name(b, 12)?;
                let (kind, class) = (be16(b, at)?, be16(b, at + 2)? & 0x7fff);
                let rdlen = usize::from(be16(b, at + 8)?);
                (kind != 0 && known_class(class) && at + 10 + rdlen <= b.len()).then(String::new)
            }
            // A response without a question: records (mDNS announcements), or an error code
            // and nothing else.
            (true, _) if an > 0 => Some(String::new()),
            (true, _) if rcode != 0 && an == 0 && ns == 0 && ar == 0 && b.len() == 12 => {
                Some(String::new())
            }
            _ => None,
        };
    }
    // The first question's name, then type and class.
    let (name, at) = name(b, 12)?;
    let qtype = be16(b, at)?;
    let class = be16(b, at + 2)? & 0x7fff;
    if qtype == 0 || !known_class(class) {
        return None;
    }
    Some(name)
}

/// IN, CH, HS, NONE (UPDATE) and ANY.
fn known_class(class: u16) -> bool {
    matches!(class, 1 | 3 | 4 | 254 | 255)
}

/// A name at `at` (labels up to 63 bytes and a zero, or ending in a compression pointer):
/// its text and the offset after it.
fn name(b: &[u8], mut at: usize) -> Option<(String, usize)> {
    let mut name = String::new();
    loop {
        let len = usize::from(*b.get(at)?);
        if len == 0 {
            return Some((name, at + 1));
        }
        if len & 0xc0 == 0xc0 {
            b.get(at + 1)?;
            return Some((name, at + 2));
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
        None if p.port(53) && damaged_question(p.payload) => Seen::Is(Label::of(Proto::Dns)),
        None => Seen::No,
    }
}

/// On port 53, a message whose header is a query's or a response's to one question, and
/// whose question starts with a host-name label, but which does not parse to the end (a
/// damaged or truncated name, counts that overrun): still DNS, as resolvers see it (they
/// answer FORMERR), with no name taken from it.
fn damaged_question(b: &[u8]) -> bool {
    let (Some(flags), Some(qd)) = (be16(b, 2), be16(b, 4)) else { return false };
    let opcode = (flags >> 11) & 0xf;
    let Some(&len) = b.get(12) else { return false };
    let Some(label) = b.get(13..13 + usize::from(len)) else { return false };
    qd == 1
        && matches!(opcode, 0 | 1 | 2 | 4 | 5)
        && (1..=63).contains(&len)
        && label.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
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
            // Cut short: not a message on the mDNS port; on port 53, a damaged question once
            // its first label is whole.
            let p =
                Packet { payload: &q[..cut], from_initiator: true, ports: [5000, 5353], index: 0 };
            assert_eq!(udp(&p, &mut Meta::default()), Seen::No);
            let p =
                Packet { payload: &q[..cut], from_initiator: true, ports: [5000, 53], index: 0 };
            assert_eq!(udp(&p, &mut Meta::default()) == Seen::No, cut < 16);
        }
    }

    #[test]
    fn damaged_questions_on_port_53() {
        let mut q = query("sip.example.dk");
        // A label length that overruns the message.
        q[16] = 0x25;
        assert_eq!(message(&q), None);
        let p = Packet { payload: &q, from_initiator: true, ports: [2713, 53], index: 0 };
        assert_eq!(udp(&p, &mut Meta::default()), Seen::Is(Label::of(Proto::Dns)));
        // Not off port 53 (mDNS, LLMNR), nor with two questions or a binary first label.
        let p = Packet { payload: &q, from_initiator: true, ports: [2713, 5353], index: 0 };
        assert_eq!(udp(&p, &mut Meta::default()), Seen::No);
        let mut two = q.clone();
        two[5] = 2;
        let p = Packet { payload: &two, from_initiator: true, ports: [2713, 53], index: 0 };
        assert_eq!(udp(&p, &mut Meta::default()), Seen::No);
        let mut binary = q.clone();
        binary[13] = 0xfe;
        let p = Packet { payload: &binary, from_initiator: true, ports: [2713, 53], index: 0 };
        assert_eq!(udp(&p, &mut Meta::default()), Seen::No);
        for cut in 0..q.len() {
            let _ = damaged_question(&q[..cut]);
        }
    }

    #[test]
    fn every_opcode_with_its_sections() {
        // An inverse query (opcode 1): no question, one answer record (name, type A, class
        // IN, TTL, empty data).
        let mut iq = vec![0x77, 0xfc, 0x09, 0x00, 0, 0, 0, 1, 0, 0, 0, 0];
        for label in ["192", "0", "2", "1"] {
            iq.push(label.len() as u8);
            iq.extend_from_slice(label.as_bytes());
        }
        iq.extend_from_slice(&[0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(message(&iq).as_deref(), Some(""));
        // Its record's data length must fit.
        let mut long = iq.clone();
        let n = long.len();
        long[n - 1] = 4;
        assert_eq!(message(&long), None);
        // Without the record, or as a standard query without a question: not DNS.
        let mut empty = iq[..12].to_vec();
        assert_eq!(message(&empty), None);
        empty[2] = 0x01;
        empty[7] = 1;
        assert_eq!(message(&empty), None);
        // The reply: NOTIMP and nothing else.
        let reply = [0x77, 0xfc, 0x89, 0x84, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(message(&reply).as_deref(), Some(""));
        let mut ok = reply;
        ok[3] = 0x80;
        assert_eq!(message(&ok), None);
        // NOTIFY (opcode 4) and UPDATE (opcode 5) carry a question (zone) section.
        let mut notify = query("example.com");
        notify[2] = 0x20;
        assert_eq!(message(&notify).as_deref(), Some("example.com"));
        let mut update = query("example.com");
        update[2] = 0x28;
        let n = update.len();
        update[n - 3] = 6; // SOA
        assert_eq!(message(&update).as_deref(), Some("example.com"));
        // Opcode 3 is unassigned.
        let mut op3 = query("example.com");
        op3[2] = 0x18;
        assert_eq!(message(&op3), None);
        // DSO (opcode 6): zero counts and a keepalive TLV that ends the message.
        let mut dso = vec![0, 1, 0x30, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 8];
        dso.extend_from_slice(&[0; 8]);
        assert_eq!(message(&dso).as_deref(), Some(""));
        assert_eq!(message(&dso[..dso.len() - 1]), None);
        for cut in 0..iq.len() {
            let _ = message(&iq[..cut]);
            let _ = message(&dso[..cut.min(dso.len())]);
        }
    }
}
