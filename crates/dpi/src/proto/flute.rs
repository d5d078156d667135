//! FLUTE (file delivery over unidirectional transport, RFC 6726) on ALC/LCT (RFC 5775,
//! RFC 5651): every packet starts with an LCT header: version 1, the flags that size the
//! congestion control information (C), the transport session id (S, H) and the transport
//! object id (O, H), the header length in 32-bit words, then those fields and header
//! extensions (one word each for types 128-255, otherwise their own length in words) that
//! end exactly at the header's length.
//!
//! Sources: RFC 5651 section 5.1 (LCT header, extensions), RFC 5775, RFC 6726; nDPI's
//! `flute.c`.

use crate::registry::{Detector, First, Transport};
use crate::{Label, Meta, Packet, Proto, Seen, be32};

const NAME: &str = "FLUTE";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Range(0x10, 0x1f),
    evidence: "LCT headers (version 1, a header length that holds the CCI, TSI and TOI the \
               flags size, extensions ending exactly there) with one transport session id, in \
               three packets",
    source: "RFC 5651 (LCT), RFC 5775 (ALC), RFC 6726 (FLUTE); nDPI's flute.c",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 8 || b[0] >> 4 != 1 {
        return Seen::No;
    }
    let c = usize::from((b[0] >> 2) & 3);
    let s = usize::from(b[1] >> 7);
    let o = usize::from((b[1] >> 5) & 3);
    let h = usize::from((b[1] >> 4) & 1);
    let header = usize::from(b[2]) * 4;
    let cci = 4 * (c + 1);
    let tsi = 4 * s + 2 * h;
    let toi = 4 * o + 2 * h;
    let fixed = 4 + cci + tsi + toi;
    if tsi == 0 || header < fixed || header > b.len() {
        return Seen::No;
    }
    let mut at = fixed;
    while at < header {
        let kind = b[at];
        let len = if kind >= 128 { 4 } else { usize::from(*b.get(at + 1).unwrap_or(&0)) * 4 };
        if len == 0 {
            return Seen::No;
        }
        at += len;
    }
    if at != header {
        return Seen::No;
    }
    let tsi_at = 4 + cci;
    let key = match tsi {
        2 => u32::from(u16::from_be_bytes([b[tsi_at], b[tsi_at + 1]])),
        _ => be32(b, tsi_at).unwrap_or(0),
    };
    Seen::Maybe(Label { master: Proto::Other(&NAME), app: None }, key, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};
    use crate::{Config, FlowDpi};

    /// An LCT header with 16-bit TSI and TOI (H set), an EXT_FDT and an EXT_FTI extension.
    fn fdt_packet() -> Vec<u8> {
        let mut d = vec![0x10, 0x10, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        d.extend_from_slice(&[0xc0, 0x10, 0x00, 0x02]);
        d.extend_from_slice(&[0x40, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0x05, 0x9c, 0, 0, 0, 0x40]);
        d.extend_from_slice(b"\0\0\0\0<?xml version=\"1.0\"?>");
        d
    }

    #[test]
    fn lct_headers() {
        let d = fdt_packet();
        assert!(matches!(run(detect, &d, [40717, 40085]), Seen::Maybe(..)));
        robust(detect, &d, [40717, 40085]);
        // An extension that runs past the header, or version 2.
        let mut bad = d.clone();
        bad[17] = 5;
        assert_eq!(run(detect, &bad, [40717, 40085]), Seen::No);
        let mut v2 = d.clone();
        v2[0] = 0x20;
        assert_eq!(run(detect, &v2, [40717, 40085]), Seen::No);
        let cfg = Config::default();
        let mut f = FlowDpi::new(17);
        for _ in 0..3 {
            f.feed(&cfg, true, [40717, 40085], &d);
        }
        assert_eq!(f.label().master.name(), "FLUTE");
    }
}
