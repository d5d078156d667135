//! Avast SecureDNS: Avast's DNSCrypt resolvers, which clients reach on port 443 as well as
//! 53. A client first fetches the resolver's certificate with a DNS TXT query for the
//! provider name, and Avast's provider name is `2.SecureDNS.avast.com` (clients vary its
//! letter case, as DNS 0x20 does). A well-formed DNS message asking that name is this
//! protocol on any port.
//!
//! Sources: the DNSCrypt version 2 specification (certificates are TXT records under the
//! provider name, whose first label is the protocol version `2`); the provider name as
//! nDPI's `avast_securedns.c` gives it (the name's labels right after a one-question header).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "AVASTSecureDNS";

/// The certificate name's labels as they appear in the question.
const PROVIDER: &[u8] = b"\x012\x09securedns\x05avast\x03com\x00";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Any,
    evidence: "a well-formed DNS message with one question, a TXT query for the provider \
               name `2.securedns.avast.com` (any letter case)",
    source: "DNSCrypt version 2 specification (dnscrypt.info); the provider name as nDPI's \
             avast_securedns.c gives it",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let end = 12 + PROVIDER.len();
    if b.len() < end + 4
        || be16(b, 4) != Some(1)
        || !b[12..end].eq_ignore_ascii_case(PROVIDER)
        || be16(b, end) != Some(16)
        || crate::dns::message(b).is_none()
    {
        return Seen::No;
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    fn query(name: &[&str], kind: u8) -> Vec<u8> {
        let mut q = vec![0x48, 0xc4, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        for label in name {
            q.push(label.len() as u8);
            q.extend_from_slice(label.as_bytes());
        }
        q.extend_from_slice(&[0, 0, kind, 0, 1]);
        q
    }

    #[test]
    fn certificate_query_in_any_case() {
        let q = query(&["2", "SeCuReDnS", "aVaSt", "CoM"], 16);
        assert!(matches!(run(detect, &q, [57970, 443]), Seen::Is(_)));
        robust(detect, &q, [57970, 443]);
        // Another provider, another type, or a longer name: not this.
        assert_eq!(
            run(detect, &query(&["2", "securedns", "avast", "org"], 16), [1, 443]),
            Seen::No
        );
        assert_eq!(run(detect, &query(&["2", "securedns", "avast", "com"], 1), [1, 443]), Seen::No);
        let longer = query(&["2", "securedns", "avast", "com", "evil"], 16);
        assert_eq!(run(detect, &longer, [1, 443]), Seen::No);
        // A broken header (two questions claimed, one present).
        let mut two = q.clone();
        two[5] = 2;
        assert_eq!(run(detect, &two, [1, 443]), Seen::No);
    }
}
