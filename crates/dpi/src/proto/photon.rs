//! Exit Games' Photon realtime protocol over UDP (game servers on port 5055/5056 by
//! default), which nDPI names after the game it first saw it in, Toca Boca.
//!
//! A datagram is a 12-byte header (peer id, CRC flag, command count, sent time, challenge)
//! and that many commands, each with a 12-byte header of its own (type, channel, flags,
//! reserved byte, the command's length including that header, reliable sequence number).
//! A datagram is Photon when its command lengths add up exactly to its size and every
//! command's type is one Photon defines (acknowledge, connect, verify-connect, disconnect,
//! ping, reliable, unreliable, fragment, unsequenced, ...).
//!
//! Sources: the header and command layout as Exit Games' Photon UDP protocol defines it
//! (its public client libraries) and as nDPI's `tocaboca.c` checks it (the connect's
//! header `ffff 00 01`, a first command `01 ff 00 00` of length 0x14 at offset 12).

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen, be32};

const NAME: &str = "TocaBoca";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Any,
    evidence: "a 12-byte header whose command count (1-32) matches commands of defined types \
               (1-12) and lengths (>= 12) that add up exactly to the datagram",
    source: "Exit Games Photon UDP protocol (header and command layout); nDPI's tocaboca.c",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 24 || b[2] != 0 || !(1..=32).contains(&b[3]) {
        return Seen::No;
    }
    let mut at = 12;
    for _ in 0..b[3] {
        let (Some(&kind), Some(len)) = (b.get(at), be32(b, at + 4)) else { return Seen::No };
        if !(1..=12).contains(&kind) || len < 12 || len as usize > b.len() - at {
            return Seen::No;
        }
        at += len as usize;
    }
    if at == b.len() { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    fn command(kind: u8, body: usize) -> Vec<u8> {
        let mut c = vec![kind, 0xff, 1, 0];
        c.extend_from_slice(&(12 + body as u32).to_be_bytes());
        c.extend_from_slice(&1u32.to_be_bytes());
        c.extend((0..body).map(|i| i as u8));
        c
    }

    fn datagram(commands: &[Vec<u8>]) -> Vec<u8> {
        let mut b = vec![0xff, 0xff, 0, commands.len() as u8, 0, 0, 0, 4, 0x22, 0xb6, 0xe6, 0xba];
        commands.iter().for_each(|c| b.extend_from_slice(c));
        b
    }

    #[test]
    fn connect_and_acknowledge() {
        let connect = datagram(&[command(2, 32)]);
        assert!(matches!(run(detect, &connect, [50173, 5055]), Seen::Is(_)));
        let two = datagram(&[command(1, 8), command(3, 32)]);
        assert!(matches!(run(detect, &two, [5055, 50173]), Seen::Is(_)));
        robust(detect, &two, [5055, 50173]);
        // A count that does not match the commands, a length that overruns, an unknown type.
        let mut count = two.clone();
        count[3] = 3;
        assert_eq!(run(detect, &count, [1, 5055]), Seen::No);
        assert_eq!(run(detect, &two[..two.len() - 1], [1, 5055]), Seen::No);
        let mut kind = connect.clone();
        kind[12] = 0x40;
        assert_eq!(run(detect, &kind, [1, 5055]), Seen::No);
        let mut trailing = connect.clone();
        trailing.push(0);
        assert_eq!(run(detect, &trailing, [1, 5055]), Seen::No);
    }
}
