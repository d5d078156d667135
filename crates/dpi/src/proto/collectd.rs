//! collectd's binary network protocol: parts of (type, length) that follow each other to the
//! end of the datagram.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be16};

const NAME: &str = "collectd";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[0, 1, 2]),
    evidence: "a chain of at least two parts of defined types (host, time, plugin, type, \
               values, interval, message, severity, signature, encryption), each of length >= 4, \
               ending exactly at the end of the datagram",
    source: "collectd wiki, \"Binary protocol\"",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let mut at = 0;
    let mut parts = 0;
    while at < b.len() {
        let (Some(kind), Some(len)) = (be16(b, at), be16(b, at + 2)) else { return Seen::No };
        let len = usize::from(len);
        if !matches!(kind, 0x0000..=0x0009 | 0x0100 | 0x0101 | 0x0200 | 0x0210) || len < 4 {
            return Seen::No;
        }
        at += len;
        parts += 1;
    }
    if at == b.len() && parts >= 2 { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn host_and_time() {
        let mut m = vec![0, 0, 0, 9, b'h', b'o', b's', b't', 0];
        m.extend_from_slice(&[0, 8, 0, 12, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert!(matches!(run(detect, &m, [40000, 25826]), Seen::Is(_)));
        assert_eq!(run(detect, &m[..m.len() - 1], [40000, 25826]), Seen::No);
        robust(detect, &m, [1, 25826]);
    }
}
