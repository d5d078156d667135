//! Apache Kafka's protocol: a request of size (equal to the rest), API key, API version,
//! correlation id and a client id string.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16, be32};

const NAME: &str = "Kafka";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0]),
    evidence: "a request whose size equals the rest of the segment, an API key 0-74 with a \
               version 0-20, and a client id of printable text of the declared length (or \
               null)",
    source: "Apache Kafka protocol guide (kafka.apache.org/protocol), request header v1/v2",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let (Some(size), Some(key), Some(version)) = (be32(b, 0), be16(b, 4), be16(b, 6)) else {
        return Seen::No;
    };
    if size as usize + 4 != b.len() || key > 74 || version > 20 || b.len() < 14 {
        return Seen::No;
    }
    let id_len = be16(b, 12).unwrap_or(0);
    if id_len == 0xffff {
        return super::is(&NAME);
    }
    let id = b.get(14..14 + usize::from(id_len));
    if id.is_some_and(|s| !s.is_empty() && s.iter().all(|c| c.is_ascii_graphic())) {
        return super::is(&NAME);
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn api_versions_request() {
        let mut m = vec![0, 0, 0, 0, 0, 18, 0, 3, 0, 0, 0, 1, 0, 7];
        m.extend_from_slice(b"rdkafka");
        m.extend_from_slice(&[0, 0, 0]);
        let n = (m.len() - 4) as u32;
        m[..4].copy_from_slice(&n.to_be_bytes());
        assert!(matches!(run(detect, &m, [40000, 9092]), Seen::Is(_)));
        m[5] = 200;
        assert_eq!(run(detect, &m, [40000, 9092]), Seen::No);
        robust(detect, &m, [40000, 9092]);
    }
}
