//! JSON-RPC 2.0 over a bare TCP or UDP stream: each request or response is a JSON object
//! whose `jsonrpc` member is the string `"2.0"`, with a `method` (requests and
//! notifications) or a `result` or `error` (responses). (Over HTTP it is an HTTP body, and
//! the flow is HTTP.)
//!
//! Sources: the JSON-RPC 2.0 specification (jsonrpc.org: request, notification and response
//! objects).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "JSON-RPC";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Both,
    first: First::Bytes(b"{"),
    evidence: "a JSON object whose `jsonrpc` member is \"2.0\" and that has a `method`, \
               `result` or `error` member, ending with `}`",
    source: "JSON-RPC 2.0 specification (jsonrpc.org)",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload.trim_ascii_end();
    if !b.starts_with(b"{") || !b.ends_with(b"}") {
        return Seen::No;
    }
    let has = |s: &[u8]| b.windows(s.len()).any(|w| w == s);
    // `"jsonrpc"`, optional spaces, `:`, optional spaces, `"2.0"`.
    let version = b.windows(9).position(|w| w == b"\"jsonrpc\"").is_some_and(|at| {
        let rest = b[at + 9..].trim_ascii_start();
        rest.strip_prefix(b":").is_some_and(|r| r.trim_ascii_start().starts_with(b"\"2.0\""))
    });
    if version && (has(b"\"method\"") || has(b"\"result\"") || has(b"\"error\"")) {
        super::is(&NAME)
    } else {
        Seen::No
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    #[test]
    fn request_and_response() {
        let req = br#"{"jsonrpc": "2.0", "method": "echo", "params": ["Testing!"], "id": 1}"#;
        assert!(matches!(run(detect, req, [36646, 8080]), Seen::Is(_)));
        robust(detect, req, [36646, 8080]);
        let resp = br#"{"jsonrpc":"2.0","result":19,"id":1}"#;
        assert!(matches!(run(detect, resp, [8080, 36646]), Seen::Is(_)));
        assert_eq!(run(detect, br#"{"jsonrpc": "1.0", "method": "x"}"#, [1, 2]), Seen::No);
        assert_eq!(run(detect, br#"{"jsonrpc": "2.0", "other": 1}"#, [1, 2]), Seen::No);
        assert_eq!(run(detect, br#"{"jsonrpc": "2.0", "method": "x""#, [1, 2]), Seen::No);
    }
}
