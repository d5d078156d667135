//! DNSCrypt version 2: a resolver's reply starts with the resolver magic `r6fnvWj8`; a
//! client's query carries the certificate's client magic, its public key and half a nonce,
//! padded to a multiple of 64 bytes; certificates are fetched as TXT records of
//! `2.dnscrypt-cert.` names (see `dns.rs`).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16, be32};

pub(crate) const NAME: &str = "DNScrypt";

const RESOLVER_MAGIC: &[u8; 8] = b"r6fnvWj8";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Any,
    evidence: "a reply starting with the resolver magic `r6fnvWj8` (after TCP's length \
               prefix); or queries of 68 + 64n bytes with the same 8-byte client magic in \
               three packets; or a DNS query for a `2.dnscrypt-cert.` name",
    source: "The DNSCrypt version 2 protocol specification (dnscrypt.info)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let tcp_len = be16(p.payload, 0).map(usize::from);
    let b = match tcp_len {
        // Over TCP a two-byte length comes first; try both readings.
        Some(l) if l + 2 == p.payload.len() && !p.payload.starts_with(RESOLVER_MAGIC) => {
            &p.payload[2..]
        }
        _ => p.payload,
    };
    if b.starts_with(RESOLVER_MAGIC) && b.len() >= 8 + 12 + 12 + 16 {
        return super::is(&NAME);
    }
    // The certificate request: a DNS query (one question) for `2.dnscrypt-cert.<provider>`,
    // on any port: the name's first labels sit right after the 12-byte header.
    if b.len() > 32
        && crate::be16(b, 4) == Some(1)
        && b[12..28].eq_ignore_ascii_case(b"\x012\x0ddnscrypt-cert")
        && crate::dns::message(b).is_some()
    {
        return super::is(&NAME);
    }
    // The client's public key and nonce half look random (other protocols whose messages
    // happen to have these sizes carry structure there).
    let distinct = |s: &[u8]| {
        let mut seen = [false; 256];
        s.iter().for_each(|&c| seen[usize::from(c)] = true);
        seen.iter().filter(|&&x| x).count()
    };
    if p.from_initiator
        && b.len() >= 68 + 64
        && (b.len() - 68) % 64 == 0
        && distinct(&b[8..52]) >= 28
    {
        return super::maybe(&NAME, be32(b, 0).unwrap_or(0) ^ be32(b, 4).unwrap_or(0));
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn resolver_reply_and_queries() {
        let mut reply = RESOLVER_MAGIC.to_vec();
        reply.resize(120, 0x55);
        let p = Packet { payload: &reply, from_initiator: false, ports: [40000, 443], index: 1 };
        assert!(matches!(detect(&p, &mut Meta::default()), Seen::Is(_)));
        let query: Vec<u8> = (0..68 + 256u32).map(|i| (i * 37 % 251) as u8).collect();
        assert!(matches!(run(detect, &query, [40000, 443]), Seen::Maybe(..)));
        assert_eq!(run(detect, &query[..300], [40000, 443]), Seen::No);
        robust(detect, &reply, [1, 443]);
        // The certificate query, a DNS TXT question, on port 443.
        let mut q = vec![0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        for label in ["2", "dnscrypt-cert", "example", "org"] {
            q.push(label.len() as u8);
            q.extend_from_slice(label.as_bytes());
        }
        q.extend_from_slice(&[0, 0, 16, 0, 1]);
        assert!(matches!(run(detect, &q, [40000, 443]), Seen::Is(_)));
        q[13] = b'3';
        assert_eq!(run(detect, &q, [40000, 443]), Seen::No);
    }
}
