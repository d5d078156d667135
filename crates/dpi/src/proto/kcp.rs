//! KCP, the ARQ protocol over UDP (github.com/skywind3000/kcp): a datagram carries one or
//! more segments, each a 24-byte little-endian header (conversation id, command, fragment,
//! window, timestamp, sequence number, unacknowledged number, data length) and its data.
//!
//! A datagram is KCP when its segments' commands are defined (push 81, ack 82, window probe
//! 83, window size 84), they share one conversation id, and their lengths add up exactly to
//! the datagram's.
//!
//! Sources: the KCP protocol description and header layout in skywind3000/kcp (`ikcp.h`,
//! `ikcp.c`: IKCP_OVERHEAD, IKCP_CMD_*); nDPI's `kcp.c`.

use crate::registry::{Detector, First, Transport};
use crate::{Meta, Packet, Seen};

const NAME: &str = "KCP";

pub(crate) const DETECTOR: Detector = Detector {
    protos: &[crate::Proto::Other(&NAME)],
    transport: Transport::Udp,
    first: First::Any,
    evidence: "segments with defined commands (81-84), one conversation id, and 24-byte \
               headers whose data lengths add up exactly to the datagram",
    source: "skywind3000/kcp (ikcp.h, ikcp.c: segment header and commands); nDPI's kcp.c",
    detect,
};

fn detect(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() < 24 || !(81..=84).contains(&b[4]) {
        return Seen::No;
    }
    let conv = super::le32(b, 0);
    let mut at = 0;
    let mut segments = 0;
    while at < b.len() {
        let (Some(&cmd), Some(len)) = (b.get(at + 4), super::le32(b, at + 20)) else {
            return Seen::No;
        };
        if super::le32(b, at) != conv || !(81..=84).contains(&cmd) || segments == 64 {
            return Seen::No;
        }
        // Acknowledgements and window messages carry no data.
        if cmd != 81 && len != 0 {
            return Seen::No;
        }
        let Some(next) = (at + 24).checked_add(len as usize) else { return Seen::No };
        at = next;
        segments += 1;
    }
    if at == b.len() { super::is(&NAME) } else { Seen::No }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::testing::{robust, run};

    fn segment(conv: u32, cmd: u8, sn: u32, data: usize) -> Vec<u8> {
        let mut s = conv.to_le_bytes().to_vec();
        s.extend_from_slice(&[cmd, 0, 128, 0]);
        s.extend_from_slice(&20u32.to_le_bytes());
        s.extend_from_slice(&sn.to_le_bytes());
        s.extend_from_slice(&0u32.to_le_bytes());
        s.extend_from_slice(&(data as u32).to_le_bytes());
        s.extend((0..data).map(|i| i as u8));
        s
    }

    #[test]
    fn pushes_and_acks() {
        let push = segment(10, 81, 0, 100);
        assert!(matches!(run(detect, &push, [47356, 8000]), Seen::Is(_)));
        robust(detect, &push, [47356, 8000]);
        let mut acks = segment(10, 82, 1, 0);
        acks.extend_from_slice(&segment(10, 82, 2, 0));
        assert!(matches!(run(detect, &acks, [8000, 47356]), Seen::Is(_)));
        // Another conversation in the same datagram, a short datagram, an ack with data, an
        // undefined command.
        let mut mixed = segment(10, 82, 1, 0);
        mixed.extend_from_slice(&segment(11, 82, 2, 0));
        assert_eq!(run(detect, &mixed, [1, 2]), Seen::No);
        assert_eq!(run(detect, &push[..push.len() - 1], [1, 2]), Seen::No);
        assert_eq!(run(detect, &segment(10, 82, 1, 4), [1, 2]), Seen::No);
        assert_eq!(run(detect, &segment(10, 85, 1, 0), [1, 2]), Seen::No);
    }
}
