//! World of Warcraft's game connection (TCP, port 3724 and the realm ports): both sides
//! open with the connection-initialisation greeting, a 16-bit little-endian length and the
//! text `WORLD OF WARCRAFT CONNECTION - SERVER TO CLIENT` (or `CLIENT TO SERVER`), NUL- or
//! line-terminated.
//!
//! Sources: the open-source server emulators' connection setup (TrinityCore's
//! `WorldSocket`: the two initialisation strings); nDPI's `world_of_warcraft.c`.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "WorldOfWarcraft";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Tcp,
    first: First::Any,
    evidence: "a length (16-bit little-endian) equal to the rest, then the greeting `WORLD OF \
               WARCRAFT CONNECTION - SERVER TO CLIENT` or `- CLIENT TO SERVER`",
    source: "TrinityCore WorldSocket (connection initialisation strings); nDPI's \
             world_of_warcraft.c",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 4 || usize::from(u16::from_le_bytes([b[0], b[1]])) + 2 != b.len() {
        return Seen::No;
    }
    let Some(rest) = b[2..].strip_prefix(b"WORLD OF WARCRAFT CONNECTION - ") else {
        return Seen::No;
    };
    let rest = rest.strip_suffix(b"\0").or_else(|| rest.strip_suffix(b"\n")).unwrap_or(rest);
    if rest == b"SERVER TO CLIENT" || rest == b"CLIENT TO SERVER" {
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
    fn greetings() {
        let text = b"WORLD OF WARCRAFT CONNECTION - SERVER TO CLIENT\0";
        let mut m = (text.len() as u16).to_le_bytes().to_vec();
        m.extend_from_slice(text);
        assert!(matches!(run(detect, &m, [39329, 3724]), Seen::Is(_)));
        robust(detect, &m, [39329, 3724]);
        assert_eq!(run(detect, &m[..m.len() - 1], [39329, 3724]), Seen::No);
        let other = b"\x0d\x00WORLD OF X\0\0\0";
        assert_eq!(run(detect, other, [39329, 3724]), Seen::No);
    }
}
