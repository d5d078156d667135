//! EAQ, the broadband quality measurement of Brazil's Entidade Aferidora da Qualidade
//! (brasilbandalarga.com.br): its UDP probes to port 6000 are 16-byte datagrams that start
//! with a 32-bit probe number counting up from zero, each echoed by the server.
//!
//! Sources: the probe size, port and counter as nDPI's `eaq.c` gives them.

use crate::registry::{Detector, First, Transport};
use crate::{Label, Meta, Packet, Proto, Seen, be32};

const NAME: &str = "EAQ";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Bytes(&[0]),
    evidence: "16-byte datagrams on port 6000 whose leading probe number (below 2^16) advances \
               by one from packet to packet of a side, in three packets",
    source: "nDPI's eaq.c (probe size, port and counter)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() != 16 || !p.port(6000) {
        return Seen::No;
    }
    let Some(n) = be32(b, 0) else { return Seen::No };
    if n > 0xffff {
        return Seen::No;
    }
    // The probe number is the sequence the evidence checks (it must advance by 1-64).
    Seen::Maybe(Label { master: Proto::Other(&NAME), app: None }, 0, Some(n as u16))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};
    use crate::{Config, FlowDpi};

    fn probe(n: u32) -> Vec<u8> {
        let mut b = n.to_be_bytes().to_vec();
        b.extend_from_slice(&[0, 0, 0x0d, 0xda, 0, 1, 0x4b, 7, 0, 0, 0x90, 0]);
        b
    }

    #[test]
    fn probes_that_count_up() {
        assert!(matches!(run(detect, &probe(0), [52257, 6000]), Seen::Maybe(..)));
        assert_eq!(run(detect, &probe(0), [52257, 6001]), Seen::No);
        assert_eq!(run(detect, &probe(0x10000), [52257, 6000]), Seen::No);
        assert_eq!(run(detect, &probe(0)[..15], [52257, 6000]), Seen::No);
        robust(detect, &probe(3), [52257, 6000]);
        // A flow: probes 0, 1, 2 from the client and their echoes.
        let cfg = Config::default();
        let mut f = FlowDpi::new(17);
        for n in 0..3 {
            if f.feed(&cfg, true, [52257, 6000], &probe(n)) {
                break;
            }
            f.feed(&cfg, false, [52257, 6000], &probe(n));
        }
        assert_eq!(f.label().master.name(), "EAQ");
        // Probe numbers that do not advance are no evidence.
        let mut f = FlowDpi::new(17);
        for _ in 0..8 {
            f.feed(&cfg, true, [52257, 6000], &probe(7));
        }
        assert_ne!(f.label().master.name(), "EAQ");
    }
}
