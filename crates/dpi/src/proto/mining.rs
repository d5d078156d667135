//! Mining: recognised from the fixed bytes its messages start with. A Stratum JSON-RPC line
//! whose method is `mining.` (subscribe, authorize, notify...) or `login` with an agent, or a
//! JSON object calling one of the Ethereum pools' getwork methods (`eth_submitLogin`,
//! `eth_getWork`, `eth_submitWork`, `eth_submitHashrate`), whatever member comes first.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "Mining";

const PREFIXES: &[&[u8]] =
    &[b"{\x22id\x22:", b"{\x22method\x22:", b"{\x22params\x22:", b"{\x22jsonrpc\x22:"];

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(&[0x7b]),
    evidence: "a Stratum JSON-RPC line whose method is `mining.` (subscribe, authorize, \
               notify...) or `login` with an agent; or a JSON object whose method is one of \
               Ethereum's getwork calls",
    source: "Stratum mining protocol (slush pool's and the Monero stratum variants); \
             Ethereum's getwork JSON-RPC methods and the pools' eth_submitLogin",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let getwork = [
        &b"\"eth_submitLogin\""[..],
        b"\"eth_getWork\"",
        b"\"eth_submitWork\"",
        b"\"eth_submitHashrate\"",
    ];
    if b.starts_with(b"{")
        && b[..b.len().min(512)].windows(7).any(|w| w == b"\"method")
        && getwork.iter().any(|m| b[..b.len().min(512)].windows(m.len()).any(|w| w == *m))
    {
        return super::is(&NAME);
    }
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
    fn ethereum_getwork_login() {
        let m = br#"{"worker": "eth1.0", "jsonrpc": "2.0", "params": ["0x9c99"], "id": 2, "method": "eth_submitLogin"}"#;
        assert!(matches!(run(detect, m, [49307, 9999]), Seen::Is(_)));
        let other = br#"{"worker": "x", "jsonrpc": "2.0", "id": 2, "method": "eth_call"}"#;
        assert_eq!(run(detect, other, [49307, 9999]), Seen::No);
    }

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
