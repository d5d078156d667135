//! [`Entry`]: one flow's connection state, 64 bytes.

use rampart_flow::{Dir, Side};

use crate::TcpState;

/// Per-direction TCP flags (Linux's `IP_CT_TCP_FLAG_*`).
pub(crate) mod tf {
    /// The SYN carried a window scale option.
    pub(crate) const WINDOW_SCALE: u8 = 0x01;
    /// The SYN carried SACK-permitted.
    pub(crate) const SACK_PERM: u8 = 0x02;
    /// This side sent the first FIN.
    pub(crate) const CLOSE_INIT: u8 = 0x04;
    /// Window checks of this side's packets always pass.
    pub(crate) const BE_LIBERAL: u8 = 0x08;
    /// This side has sent data the other has not acknowledged.
    pub(crate) const DATA_UNACKNOWLEDGED: u8 = 0x10;
    /// `maxack` holds a value.
    pub(crate) const MAXACK_SET: u8 = 0x20;
    /// (In `last_flags`) an ignored SYN in LAST_ACK may draw an RFC 5961 challenge ACK.
    pub(crate) const EXP_CHALLENGE_ACK: u8 = 0x40;
    /// (In `last_flags`) a simultaneous open is under way.
    pub(crate) const SIMULTANEOUS_OPEN: u8 = 0x80;
}

/// Status bits.
const CONFIRMED: u8 = 0x01;
const SEEN_REPLY: u8 = 0x02;
const ASSURED: u8 = 0x04;
/// The ORIGINAL direction is sent by endpoint B of the flow key.
const ORIG_B: u8 = 0x08;
const KIND_SHIFT: u32 = 4;

/// Which tracker an entry belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Tcp = 0,
    Udp = 1,
    Icmp = 2,
    Generic = 3,
}

/// One flow's connection state: what Linux keeps in `struct nf_conn` for tracking (status
/// bits, the TCP tracker's `ip_ct_tcp`, UDP's stream timestamp), in 64 bytes. An entry whose
/// [`Entry::exists`] is false is an empty slot. Timeouts are not kept here: the flow table
/// carries each record's deadline, which the tracker's answers set.
///
/// Entries are aligned to 64 bytes, so each lies in one cache line of the array.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct Entry {
    /// Capture time of the first packet (UDP's stream test).
    pub(crate) start: rampart_wire::Timestamp,
    /// Per direction: highest sequence number sent plus length (`td_end`).
    pub(crate) end: [u32; 2],
    /// Per direction: highest acceptable sequence end (`td_maxend`).
    pub(crate) maxend: [u32; 2],
    /// Per direction: largest window seen (`td_maxwin`).
    pub(crate) maxwin: [u32; 2],
    /// Per direction: highest ACK sent (`td_maxack`).
    pub(crate) maxack: [u32; 2],
    pub(crate) last_seq: u32,
    pub(crate) last_ack: u32,
    pub(crate) last_end: u32,
    pub(crate) last_win: u16,
    /// Per direction: window scale shift.
    pub(crate) scale: [u8; 2],
    /// Per direction: [`tf`] flags.
    pub(crate) flags: [u8; 2],
    /// The TCP state; for ICMP, the type of the packet that opened the entry.
    pub(crate) pstate: u8,
    /// Index of the last packet (low 3 bits) and its direction (bit 7).
    pub(crate) last: u8,
    pub(crate) retrans: u8,
    pub(crate) last_wscale: u8,
    pub(crate) last_flags: u8,
    status: u8,
}

const _: () = assert!(std::mem::size_of::<Entry>() == 64, "connection state must fit 64 bytes");

impl Entry {
    /// A fresh unconfirmed entry of `kind` opened by endpoint `side` at `now`.
    pub(crate) fn open(kind: Kind, side: Side, now: rampart_wire::Timestamp) -> Self {
        let orig = if side == Side::B { ORIG_B } else { 0 };
        Self {
            start: now,
            status: CONFIRMED | orig | (kind as u8) << KIND_SHIFT,
            ..Self::default()
        }
    }

    /// Whether the slot holds an entry.
    #[inline]
    pub fn exists(&self) -> bool {
        self.status & CONFIRMED != 0
    }

    /// Whether a packet of the REPLY direction has been seen.
    #[inline]
    pub fn seen_reply(&self) -> bool {
        self.status & SEEN_REPLY != 0
    }

    /// Whether the entry is ASSURED (two-way traffic proven): early drop spares it.
    #[inline]
    pub fn assured(&self) -> bool {
        self.status & ASSURED != 0
    }

    /// The TCP state, for a TCP entry.
    pub fn tcp_state(&self) -> Option<TcpState> {
        (self.exists() && self.kind() == Kind::Tcp).then(|| TcpState::from_u8(self.pstate))
    }

    /// The direction of a packet sent by endpoint `side` of the flow key.
    #[inline]
    pub fn dir(&self, side: Side) -> Dir {
        if (side == Side::B) == (self.status & ORIG_B != 0) { Dir::Original } else { Dir::Reply }
    }

    #[inline]
    pub(crate) fn kind(&self) -> Kind {
        match (self.status >> KIND_SHIFT) & 3 {
            0 => Kind::Tcp,
            1 => Kind::Udp,
            2 => Kind::Icmp,
            _ => Kind::Generic,
        }
    }

    pub(crate) fn set_seen_reply(&mut self) {
        self.status |= SEEN_REPLY;
    }

    pub(crate) fn set_assured(&mut self) {
        self.status |= ASSURED;
    }

    #[inline]
    pub(crate) fn state(&self) -> TcpState {
        TcpState::from_u8(self.pstate)
    }

    #[inline]
    pub(crate) fn last_index(&self) -> u8 {
        self.last & 7
    }

    #[inline]
    pub(crate) fn last_dir(&self) -> usize {
        usize::from(self.last >> 7)
    }

    #[inline]
    pub(crate) fn set_last(&mut self, index: u8, dir: usize) {
        self.last = index | (dir as u8) << 7;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixty_four_bytes() {
        assert_eq!(std::mem::size_of::<Entry>(), 64);
        assert_eq!(std::mem::align_of::<Entry>(), 64);
        eprintln!("CtPacket: {} bytes", std::mem::size_of::<crate::CtPacket>());
    }

    #[test]
    fn direction_follows_the_opener() {
        let e = Entry::open(Kind::Udp, Side::B, rampart_wire::Timestamp::from_nanos(5));
        assert!(e.exists() && !e.seen_reply() && !e.assured());
        assert_eq!((e.dir(Side::B), e.dir(Side::A)), (Dir::Original, Dir::Reply));
        assert_eq!(e.kind(), Kind::Udp);
        assert_eq!(e.tcp_state(), None);
        let e = Entry::open(Kind::Tcp, Side::A, rampart_wire::Timestamp::from_nanos(5));
        assert_eq!((e.dir(Side::A), e.tcp_state()), (Dir::Original, Some(TcpState::None)));
        assert!(!Entry::default().exists());
    }
}
