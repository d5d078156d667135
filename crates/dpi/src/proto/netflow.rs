//! Flow export: NetFlow v5 and v9, IPFIX (reported as NetFlow, as nDPI does) and sFlow v5,
//! each from its header's version, counts and lengths.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16, be32};

const NETFLOW: &str = "NetFlow";
const SFLOW: &str = "sFlow";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NETFLOW), crate::Proto::Other(&SFLOW)],
    transport: Transport::Udp,
    first: First::Bytes(&[0]),
    evidence: "NetFlow v5: 1-30 records and a datagram of exactly 24 + 48 per record; v9: a \
               record count and a flowset id 0/1 or >= 256 whose length fits; IPFIX: version 10 \
               and a message length equal to the datagram's; sFlow: version 5, an agent address \
               type 1 or 2 and a sample count",
    source: "Cisco NetFlow v5 export format; RFC 3954 (NetFlow v9); RFC 7011 (IPFIX); \
             sFlow version 5 specification (sflow.org)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let (Some(version), Some(count)) = (be16(b, 0), be16(b, 2)) else { return Seen::No };
    match version {
        5 if (1..=30).contains(&count) && b.len() == 24 + 48 * usize::from(count) => {
            super::is(&NETFLOW)
        }
        9 if b.len() >= 24 && count >= 1 => {
            let set = be16(b, 20).unwrap_or(2);
            let len = usize::from(be16(b, 22).unwrap_or(0));
            if (set <= 1 || set >= 256) && len >= 4 && 20 + len <= b.len() {
                super::is(&NETFLOW)
            } else {
                Seen::No
            }
        }
        10 if usize::from(count) == b.len() && b.len() >= 20 => {
            let set = be16(b, 16).unwrap_or(0);
            if set == 2 || set == 3 || set >= 256 { super::is(&NETFLOW) } else { Seen::No }
        }
        0 if count == 5 && b.len() >= 28 => {
            // sFlow: a 32-bit version 5, agent address type 1 (IPv4) or 2 (IPv6).
            let kind = be32(b, 4).unwrap_or(0);
            let samples_at = if kind == 1 { 24 } else { 36 };
            let samples = be32(b, samples_at).unwrap_or(u32::MAX);
            if (kind == 1 || kind == 2) && samples <= 1024 { super::is(&SFLOW) } else { Seen::No }
        }
        _ => Seen::No,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn v5_and_ipfix() {
        let mut v5 = vec![0, 5, 0, 2];
        v5.resize(24 + 96, 1);
        assert!(matches!(run(detect, &v5, [40000, 2055]), Seen::Is(_)));
        assert_eq!(run(detect, &v5[..119], [40000, 2055]), Seen::No);
        let mut ipfix = vec![0, 10, 0, 28, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0, 12];
        ipfix.resize(28, 0);
        assert!(matches!(run(detect, &ipfix, [40000, 4739]), Seen::Is(_)));
        robust(detect, &v5, [1, 2055]);
    }
}
