//! tinc VPN's meta protocol over TCP: after connecting, each side sends its ID request, a
//! text line `0 <name> <protocol version>` (17, or `17.<minor>` in tinc 1.1), and tinc 1.0
//! follows with METAKEY, `1 <cipher> <digest> <MAC length> <compression> <hex key>`.
//!
//! Sources: tinc's protocol documentation (doc/PROTOCOL, the meta protocol's requests and
//! their numbers), nDPI's `tinc.c`.

use crate::registry::{Detector, First, Transport};
use crate::{Label, Meta, Packet, Proto, Seen};

const NAME: &str = "TINC";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Bytes(b"01"),
    evidence: "ID lines (`0`, a node name, protocol version 17) and METAKEY lines (`1`, four \
               numbers, a hex key); three, from both sides",
    source: "tinc doc/PROTOCOL (meta protocol requests); nDPI's tinc.c",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    let Some(line) = b.strip_suffix(b"\n") else { return Seen::No };
    if line.contains(&b'\n') {
        return Seen::No;
    }
    let words: Vec<&[u8]> = line.split(|&c| c == b' ').collect();
    let number = |w: &[u8]| !w.is_empty() && w.len() <= 10 && w.iter().all(u8::is_ascii_digit);
    let fits = match words.as_slice() {
        [b"0", name, version] => {
            !name.is_empty()
                && name.len() <= 64
                && name.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
                && (version == b"17" || version.starts_with(b"17.") && number(&version[3..]))
        }
        [b"1", a, b2, c, d, key] => {
            [a, b2, c, d].iter().all(|w| number(w))
                && key.len() >= 32
                && key.iter().all(u8::is_ascii_hexdigit)
        }
        _ => false,
    };
    if fits {
        Seen::Maybe(Label { master: Proto::Other(&NAME), app: None }, 0, None)
    } else {
        Seen::No
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};
    use crate::{Config, FlowDpi};

    #[test]
    fn id_and_metakey() {
        assert!(matches!(run(detect, b"0 alpha 17\n", [59244, 655]), Seen::Maybe(..)));
        assert!(matches!(run(detect, b"0 beta_2 17.7\n", [59244, 655]), Seen::Maybe(..)));
        assert_eq!(run(detect, b"0 alpha 16\n", [59244, 655]), Seen::No);
        assert_eq!(run(detect, b"0 al-pha 17\n", [59244, 655]), Seen::No);
        assert_eq!(run(detect, b"0 alpha 17", [59244, 655]), Seen::No);
        let key =
            format!("1 429 672 0 0 {}\n", "2CDA99D7120FD6DEBC0BE0B08528876B4AB62DCFB1E".repeat(2));
        assert!(matches!(run(detect, key.as_bytes(), [59244, 655]), Seen::Maybe(..)));
        robust(detect, key.as_bytes(), [59244, 655]);
        let cfg = Config::default();
        let mut f = FlowDpi::new(6);
        f.feed(&cfg, true, [59244, 655], b"0 alpha 17\n");
        f.feed(&cfg, false, [59244, 655], b"0 beta 17\n");
        f.feed(&cfg, true, [59244, 655], key.as_bytes());
        assert_eq!(f.label().master.name(), "TINC");
    }
}
