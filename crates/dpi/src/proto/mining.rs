//! Mining: recognised from the fixed bytes its messages start with. A Stratum JSON-RPC line whose method is `mining.` (subscribe, authorize, notify...) or `login` with an agent.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Mining";

const PREFIXES: &[&[u8]] =
    &[b"{\x22id\x22:", b"{\x22method\x22:", b"{\x22params\x22:", b"{\x22jsonrpc\x22:"];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x7b]),
    evidence: "a Stratum JSON-RPC line whose method is `mining.` (subscribe, authorize, notify...) or `login` with an agent",
    source: "Stratum mining protocol (slush pool's and the Monero stratum variants)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if !PREFIXES.iter().any(|m| b.starts_with(m)) {
        return Seen::No;
    }
    let head = &b[..b.len().min(256)];
    let has = |s: &[u8]| head.windows(s.len()).any(|w| w == s);
    if !(has(b"\"mining.") || (has(b"\"login\"") && has(b"\"agent\""))) {
        return Seen::No;
    }
    super::is(&NAME)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn recognised_and_not() {
        let good =
            b"{\x22id\x22: 1, \x22method\x22: \x22mining.subscribe\x22, \x22params\x22: []}\x0a";
        assert!(matches!(run(detect, good, [40000, 40001]), Seen::Is(_)));
        assert_eq!(
            run(detect, b"{\x22id\x22: 1, \x22method\x22: \x22eth_call\x22}\x0a", [40000, 40001]),
            Seen::No
        );
        robust(detect, good, [40000, 40001]);
    }
}
