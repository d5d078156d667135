//! Zabbix agent and server protocol: the `ZBXD` header.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Zabbix";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(b"Z"),
    evidence: "the `ZBXD` header with a defined flags byte (1, 2, 3 or 5) and a data length",
    source: "Zabbix manual, \"Header and data length\" (zabbix_protocols)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() >= 13 && b.starts_with(b"ZBXD") && matches!(b[4], 1 | 2 | 3 | 5) {
        return super::is(&NAME);
    }
    if b.len() < 13 && b"ZBXD".starts_with(&b[..b.len().min(4)]) {
        return Seen::More;
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn header() {
        let m = b"ZBXD\x01\x05\x00\x00\x00\x00\x00\x00\x00hello";
        assert!(matches!(run(detect, m, [5000, 10051]), Seen::Is(_)));
        assert_eq!(run(detect, b"ZBXD\x09\x05\x00\x00\x00\x00\x00\x00\x00hi", [1, 2]), Seen::No);
        robust(detect, m, [1, 2]);
    }
}
