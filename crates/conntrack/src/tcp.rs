//! The TCP tracker: Linux's `nf_conntrack_proto_tcp.c` behaviour (flag checks, the transition
//! table and the code around it, window tracking after Guido van Rooij's scheme), written
//! from that behaviour.

use rampart_wire::Checksum;
use rampart_wire::tcp::flags as f;

use crate::entry::{Entry, tf};
use crate::{Config, CtPacket, Reason, Refresh, TcpState};

/// The packet's index in the transition table.
pub(crate) mod index {
    pub(crate) const SYN: u8 = 0;
    pub(crate) const SYNACK: u8 = 1;
    pub(crate) const FIN: u8 = 2;
    pub(crate) const ACK: u8 = 3;
    pub(crate) const RST: u8 = 4;
    pub(crate) const NONE: u8 = 5;
}

/// The names of the indices, as Linux's log numbers them.
pub const INDEX_NAMES: [&str; 6] = ["SYN", "SYN/ACK", "FIN", "ACK", "RST", "none"];

/// A cell of the transition table: a state, `IG` (ignore) or `IV` (invalid).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cell {
    /// Go to this state.
    To(TcpState),
    /// Accept the packet, keep the state: conntrack may be out of sync.
    Ignore,
    /// The packet is invalid.
    Invalid,
}

use Cell::{Ignore as IG, Invalid as IV};
use TcpState as S;

const NO: Cell = Cell::To(S::None);
const SS: Cell = Cell::To(S::SynSent);
const SR: Cell = Cell::To(S::SynRecv);
const ES: Cell = Cell::To(S::Established);
const FW: Cell = Cell::To(S::FinWait);
const CW: Cell = Cell::To(S::CloseWait);
const LA: Cell = Cell::To(S::LastAck);
const TW: Cell = Cell::To(S::TimeWait);
const CL: Cell = Cell::To(S::Close);
const S2: Cell = Cell::To(S::SynSent2);

/// Linux's `tcp_conntracks[dir][index][state]`: columns NONE, SYN_SENT, SYN_RECV,
/// ESTABLISHED, FIN_WAIT, CLOSE_WAIT, LAST_ACK, TIME_WAIT, CLOSE, SYN_SENT2.
pub const TABLE: [[[Cell; 10]; 6]; 2] = [
    [
        /* syn    */ [SS, SS, IG, IG, IG, IG, IG, SS, SS, S2],
        /* synack */ [IV, IV, SR, IV, IV, IV, IV, IV, IV, SR],
        /* fin    */ [IV, IV, FW, FW, LA, LA, LA, TW, CL, IV],
        /* ack    */ [ES, IV, ES, ES, CW, CW, TW, TW, CL, IV],
        /* rst    */ [IV, CL, CL, CL, CL, CL, CL, CL, CL, CL],
        /* none   */ [IV, IV, IV, IV, IV, IV, IV, IV, IV, IV],
    ],
    [
        /* syn    */ [IV, S2, IV, IV, IV, IV, IV, SS, IV, S2],
        /* synack */ [IV, SR, IG, IG, IG, IG, IG, IG, IG, SR],
        /* fin    */ [IV, IV, FW, FW, LA, LA, LA, TW, CL, IV],
        /* ack    */ [IV, IG, SR, ES, CW, CW, TW, TW, CL, IG],
        /* rst    */ [IV, CL, CL, CL, CL, CL, CL, CL, CL, CL],
        /* none   */ [IV, IV, IV, IV, IV, IV, IV, IV, IV, IV],
    ],
];

// Keeps the unused-constant lint quiet: NONE is a table state no cell leads to.
const _: Cell = NO;

/// The index of a packet with these flags: RST > SYN(+ACK) > FIN > ACK > none.
#[inline]
pub fn packet_index(flags: u16) -> u8 {
    if flags & f::RST != 0 {
        index::RST
    } else if flags & f::SYN != 0 {
        if flags & f::ACK != 0 { index::SYNACK } else { index::SYN }
    } else if flags & f::FIN != 0 {
        index::FIN
    } else if flags & f::ACK != 0 {
        index::ACK
    } else {
        index::NONE
    }
}

/// Linux's `tcp_valid_flags`: with PSH, ECE and CWR masked off, the flag combinations a TCP
/// packet may carry.
#[inline]
pub fn valid_flags(flags: u16) -> bool {
    let b = (flags as u8) & !((f::ECE | f::CWR | f::PSH) as u8);
    const SYN: u8 = f::SYN as u8;
    const ACK: u8 = f::ACK as u8;
    const RST: u8 = f::RST as u8;
    const FIN: u8 = f::FIN as u8;
    const URG: u8 = f::URG as u8;
    const SYN_URG: u8 = SYN | URG;
    const SYN_ACK: u8 = SYN | ACK;
    const RST_ACK: u8 = RST | ACK;
    const FIN_ACK: u8 = FIN | ACK;
    const FIN_ACK_URG: u8 = FIN | ACK | URG;
    const ACK_URG: u8 = ACK | URG;
    matches!(b, SYN | SYN_URG | SYN_ACK | RST | RST_ACK | FIN_ACK | FIN_ACK_URG | ACK | ACK_URG)
}

/// `a` comes before `b` in sequence space.
#[inline]
pub(crate) fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// `a` comes after `b` in sequence space.
#[inline]
pub(crate) fn after(a: u32, b: u32) -> bool {
    before(b, a)
}

/// What the tracker made of a TCP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// In window: the state moved (or stayed); refresh the timeout; `kill` when the entry
    /// ends now (an RST before any reply).
    Accept { refresh: Refresh, kill: bool },
    /// Accepted with the state unchanged.
    Ignore,
    /// Invalid, with the reason and the values Linux's message carries; `refresh` lowers the
    /// timeout of an ASSURED entry whose FIN/RST exchange went out of window.
    Invalid { reason: Reason, detail: Detail, refresh: Refresh },
    /// A SYN reopening a closed or aborted connection: the entry ends and the packet is a
    /// new one.
    Reopen,
}

/// The values in Linux's log message for an invalid packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Detail {
    /// The bound a window check failed against.
    pub value: u32,
    /// The packet's table index.
    pub index: u8,
    /// Its direction (0 ORIGINAL, 1 REPLY).
    pub dir: u8,
    /// The state it met.
    pub state: u8,
}

fn invalid(reason: Reason) -> Verdict {
    Verdict::Invalid { reason, detail: Detail::default(), refresh: Refresh::Keep }
}

/// `tcp_error`: header length, checksum and flags, before any state is looked at.
pub(crate) fn error(p: &CtPacket, cfg: &Config) -> Option<Reason> {
    if !p.tcp_header {
        return Some(Reason::TcpShort);
    }
    if usize::from(p.tcp.header_len) < 20 || u32::from(p.tcp.header_len) > p.l4_len {
        return Some(Reason::TcpTruncated);
    }
    if cfg.checksum && p.l4_checksum == Checksum::Bad {
        return Some(Reason::BadChecksum);
    }
    if !valid_flags(p.tcp.flags) {
        return Some(Reason::TcpFlags);
    }
    None
}

/// The sequence number just past the segment: `seq + len (+1 for SYN, +1 for FIN)`.
#[inline]
fn segment_end(p: &CtPacket) -> u32 {
    let t = &p.tcp;
    t.seq
        .wrapping_add(p.payload_len)
        .wrapping_add(u32::from(t.flags & f::SYN != 0))
        .wrapping_add(u32::from(t.flags & f::FIN != 0))
}

/// `tcp_options`: window scale and SACK-permitted of a SYN, into direction `d`.
fn options(e: &mut Entry, d: usize, p: &CtPacket) {
    if p.tcp.header_len <= 20 {
        return;
    }
    e.scale[d] = 0;
    e.flags[d] &= tf::BE_LIBERAL;
    if p.tcp.sack_permitted() {
        e.flags[d] |= tf::SACK_PERM;
    }
    if let Some(s) = p.tcp.window_scale() {
        e.scale[d] = s.min(14);
        e.flags[d] |= tf::WINDOW_SCALE;
    }
}

/// `tcp_new`: a fresh entry for the first packet, or why it cannot open one.
pub(crate) fn new(e: &mut Entry, p: &CtPacket, cfg: &Config) -> Result<(), Reason> {
    let idx = packet_index(p.tcp.flags);
    match TABLE[0][usize::from(idx)][0] {
        Cell::To(S::SynSent) => {
            let end = segment_end(p);
            e.end[0] = end;
            e.maxwin[0] = u32::from(p.tcp.window).max(1);
            e.maxend[0] = end;
            options(e, 0, p);
        }
        Cell::To(_) if !cfg.tcp_loose => return Err(Reason::TcpNotLoose),
        Cell::To(_) => {
            let end = segment_end(p);
            e.end[0] = end;
            e.maxwin[0] = u32::from(p.tcp.window).max(1);
            e.maxend[0] = end.wrapping_add(e.maxwin[0]);
            // A connection picked up mid-stream: assume SACK, and check no windows.
            e.flags = [tf::SACK_PERM | tf::BE_LIBERAL; 2];
        }
        _ => return Err(Reason::TcpInvalidNew),
    }
    e.set_last(index::NONE, 0);
    Ok(())
}

/// `tcp_init_sender`: direction `d` starts over from its SYN (or SYN/ACK).
fn init_sender(e: &mut Entry, d: usize, p: &CtPacket, end: u32, win: u32) {
    e.end[d] = end;
    e.maxend[d] = end;
    e.maxwin[d] = win.max(1);
    options(e, d, p);
    // RFC 7323: scaling is on only when both sides offer it.
    let r = 1 - d;
    if d == 1 && !(e.flags[d] & tf::WINDOW_SCALE != 0 && e.flags[r] & tf::WINDOW_SCALE != 0) {
        e.scale[d] = 0;
        e.scale[r] = 0;
    }
}

/// The window checks' outcome.
enum Window {
    Accept,
    Ignore,
    Invalid(Reason, u32),
}

/// Window failures are forgiven when the sender (or the whole tracker) is liberal.
fn store_invalid(e: &Entry, d: usize, cfg: &Config, w: Window) -> Window {
    if e.flags[d] & tf::BE_LIBERAL != 0 || cfg.tcp_be_liberal { Window::Accept } else { w }
}

/// `tcp_in_window`: checks I-IV and the bookkeeping of both directions.
#[inline(always)]
fn in_window(e: &mut Entry, d: usize, idx: u8, p: &CtPacket, cfg: &Config) -> Window {
    let r = 1 - d;
    let t = &p.tcp;
    let mut seq = t.seq;
    let mut ack = t.ack;
    let win_raw = t.window;
    let mut win = u32::from(win_raw);
    let mut end = segment_end(p);
    let mut sack = if e.flags[r] & tf::SACK_PERM != 0 { t.highest_sack() } else { ack };
    let (syn, has_ack, rst) = (t.flags & f::SYN != 0, t.flags & f::ACK != 0, t.flags & f::RST != 0);

    if e.maxwin[d] == 0 {
        if syn {
            init_sender(e, d, p, end, win);
            if !has_ack {
                // Simultaneous open.
                return Window::Accept;
            }
        } else {
            // Picked up in the middle: take what the packet says.
            e.end[d] = end;
            let swin = win << e.scale[d];
            e.maxwin[d] = swin.max(1);
            e.maxend[d] = end.wrapping_add(e.maxwin[d]);
            if e.maxwin[r] == 0 {
                // Nothing seen the other way yet: let checks III and IV pass until then.
                e.end[r] = sack;
                e.maxend[r] = sack;
            } else if sack == e.end[r].wrapping_add(1) {
                // Likely the answer to a keep-alive.
                e.end[r] = e.end[r].wrapping_add(1);
            }
        }
    } else if syn && after(end, e.end[d]) && matches!(e.state(), S::SynSent | S::SynRecv) {
        // A SYN (or SYN/ACK) with a later sequence number: this side started over.
        init_sender(e, d, p, end, win);
        if d == 1 && !has_ack {
            return Window::Accept;
        }
    }

    if !has_ack {
        ack = e.end[r];
        sack = ack;
    } else if t.flags & (f::ACK | f::RST) == (f::ACK | f::RST) && ack == 0 {
        // Broken stacks set ACK with a zero acknowledgment in RSTs.
        ack = e.end[r];
        sack = ack;
    }

    if rst && seq == 0 && e.state() == S::SynSent {
        // An RST answering a SYN.
        seq = e.end[d];
        end = seq;
    }

    let maxackwindow = |e: &Entry| e.maxwin[d].max(66000);

    // I: the segment starts inside the receiver's window.
    if !before(seq, e.maxend[d].wrapping_add(1)) {
        let overshot = end.wrapping_sub(e.maxend[d]).wrapping_add(1);
        let ack_ok = after(sack, e.end[r].wrapping_sub(maxackwindow(e)).wrapping_sub(1));
        let in_recv_win =
            e.maxwin[r] != 0 && after(end, e.end[d].wrapping_sub(e.maxwin[r]).wrapping_sub(1));
        if in_recv_win
            && ack_ok
            && overshot <= e.maxwin[r]
            && before(sack, e.end[r].wrapping_add(1))
        {
            // More data than the window allows, but otherwise plausible: note it so that
            // its ACK does not fail check III later, and let it through.
            e.end[d] = end;
            e.flags[d] |= tf::DATA_UNACKNOWLEDGED;
            return store_invalid(e, d, cfg, Window::Ignore);
        }
        let bound = e.maxend[d].wrapping_add(1);
        return store_invalid(e, d, cfg, Window::Invalid(Reason::SeqOver, bound));
    }

    // III: it acknowledges nothing not yet sent.
    if !before(sack, e.end[r].wrapping_add(1)) {
        let bound = e.end[r].wrapping_add(1);
        return store_invalid(e, d, cfg, Window::Invalid(Reason::AckOver, bound));
    }

    // II: its end lies inside the window (failures are ignored, not invalid).
    let in_recv_win =
        e.maxwin[r] == 0 || after(end, e.end[d].wrapping_sub(e.maxwin[r]).wrapping_sub(1));
    if !in_recv_win {
        return store_invalid(e, d, cfg, Window::Ignore);
    }
    // IV: its ACK is not too far behind (failures are ignored).
    if !after(sack, e.end[r].wrapping_sub(maxackwindow(e)).wrapping_sub(1)) {
        return store_invalid(e, d, cfg, Window::Ignore);
    }

    if !syn {
        win <<= e.scale[d];
    }

    // The sender's side.
    let swin = win.wrapping_add(sack.wrapping_sub(ack));
    if e.maxwin[d] < swin {
        e.maxwin[d] = swin;
    }
    if after(end, e.end[d]) {
        e.end[d] = end;
        e.flags[d] |= tf::DATA_UNACKNOWLEDGED;
    }
    if has_ack {
        if e.flags[d] & tf::MAXACK_SET == 0 {
            e.maxack[d] = ack;
            e.flags[d] |= tf::MAXACK_SET;
        } else if after(ack, e.maxack[d]) {
            e.maxack[d] = ack;
        }
    }

    // The receiver's side.
    if e.maxwin[r] != 0 && after(end, e.maxend[d]) {
        e.maxwin[r] = e.maxwin[r].wrapping_add(end.wrapping_sub(e.maxend[d]));
    }
    if after(sack.wrapping_add(win), e.maxend[r].wrapping_sub(1)) {
        e.maxend[r] = sack.wrapping_add(win);
        if win == 0 {
            e.maxend[r] = e.maxend[r].wrapping_add(1);
        }
    }
    if ack == e.end[r] {
        e.flags[r] &= !tf::DATA_UNACKNOWLEDGED;
    }

    // Retransmissions.
    if idx == index::ACK {
        if e.last_dir() == d
            && e.last_seq == seq
            && e.last_ack == ack
            && e.last_end == end
            && e.last_win == win_raw
        {
            e.retrans = e.retrans.saturating_add(1);
        } else {
            let li = e.last_index();
            e.set_last(li, d);
            e.last_seq = seq;
            e.last_ack = ack;
            e.last_end = end;
            e.last_win = win_raw;
            e.retrans = 0;
        }
    }
    Window::Accept
}

/// `nf_tcp_handle_invalid`: an ASSURED entry whose FIN/RST exchange fails the window gets the
/// unacknowledged timeout, so a dead connection does not linger for days.
fn handle_invalid(e: &mut Entry, d: usize, idx: u8, cfg: &Config) -> Refresh {
    if !e.assured() || !matches!(idx, index::RST | index::FIN) {
        return Refresh::Keep;
    }
    if e.last_dir() != d && matches!(e.last_index(), index::FIN | index::RST) {
        Refresh::Lower(cfg.timeouts.tcp_unacknowledged)
    } else {
        e.set_last(idx, d);
        Refresh::Keep
    }
}

/// `tcp_can_early_drop`: a closing connection.
pub(crate) fn closing(s: TcpState) -> bool {
    matches!(s, S::FinWait | S::LastAck | S::TimeWait | S::Close | S::CloseWait)
}

/// `nf_conntrack_tcp_packet` after `tcp_error` and `tcp_new`: one packet of direction `d`
/// (0 ORIGINAL, 1 REPLY) against the entry.
#[inline(always)]
pub(crate) fn packet(e: &mut Entry, d: usize, p: &CtPacket, cfg: &Config) -> Verdict {
    let t = &p.tcp;
    let mut old = e.state();
    let idx = packet_index(t.flags);
    let mut cell = TABLE[d][usize::from(idx)][old as usize];
    let mut skip_window = false;

    if cell == Cell::To(S::SynSent) && old >= S::TimeWait {
        // A SYN on a closed or aborted connection: reopen if it was closing (or reset by
        // this side), else treat it as out of sync.
        let closing_init = (e.flags[0] | e.flags[1]) & tf::CLOSE_INIT != 0;
        if closing_init || (e.last_dir() == d && e.last_index() == index::RST) {
            return Verdict::Reopen;
        }
        cell = Cell::Ignore;
    }
    let mut new_state = match cell {
        Cell::Ignore => {
            let ld = e.last_dir();
            if idx == index::SYNACK
                && e.last_index() == index::SYN
                && ld != d
                && t.ack == e.last_end
            {
                // The SYN/ACK answers a SYN we ignored: both ends are in sync, we were not.
                // Take the ignored SYN's values and go on as after a normal SYN.
                old = S::SynSent;
                e.end[ld] = e.last_end;
                e.maxend[ld] = e.last_end;
                e.maxwin[ld] = u32::from(e.last_win).max(1);
                e.scale[ld] = e.last_wscale;
                e.last_flags &= !tf::EXP_CHALLENGE_ACK;
                e.flags[ld] = e.last_flags;
                let keep = e.flags[d] & tf::BE_LIBERAL;
                e.end[d] = 0;
                e.maxend[d] = 0;
                e.maxwin[d] = 0;
                e.maxack[d] = 0;
                e.scale[d] = 0;
                e.flags[d] = keep;
                S::SynRecv
            } else {
                e.set_last(idx, d);
                e.last_seq = t.seq;
                e.last_end = segment_end(p);
                e.last_win = t.window;
                if idx == index::SYN && d == 0 {
                    // Note the SYN's options, in case the SYN/ACK shows we were out of sync.
                    e.last_flags = 0;
                    e.last_wscale = 0;
                    if t.header_len > 20 {
                        if let Some(s) = t.window_scale() {
                            e.last_flags |= tf::WINDOW_SCALE;
                            e.last_wscale = s.min(14);
                        }
                        if t.sack_permitted() {
                            e.last_flags |= tf::SACK_PERM;
                        }
                    }
                    if old == S::LastAck {
                        e.last_flags |= tf::EXP_CHALLENGE_ACK;
                    }
                }
                if old == S::SynSent && idx == index::ACK && d == 1 {
                    // Possibly a challenge ACK answering the SYN.
                    e.last_ack = t.ack;
                }
                return Verdict::Ignore;
            }
        }
        Cell::Invalid => {
            let detail = Detail { value: 0, index: idx, dir: d as u8, state: old as u8 };
            return Verdict::Invalid {
                reason: Reason::TcpTransition,
                detail,
                refresh: Refresh::Keep,
            };
        }
        Cell::To(s) => s,
    };

    match new_state {
        S::TimeWait
            if old == S::LastAck
                && idx == index::ACK
                && e.last_dir() != d
                && e.last_index() == index::SYN
                && e.last_flags & tf::EXP_CHALLENGE_ACK != 0 =>
        {
            // An RFC 5961 challenge ACK, not the last ACK of the close.
            e.last_flags &= !tf::EXP_CHALLENGE_ACK;
            return Verdict::Ignore;
        }
        S::SynSent2 => e.last_flags |= tf::SIMULTANEOUS_OPEN,
        S::SynRecv if d == 1 && idx == index::ACK && e.last_flags & tf::SIMULTANEOUS_OPEN != 0 => {
            new_state = S::Established;
        }
        S::Close if idx == index::RST => 'rst: {
            if closing(old) {
                skip_window = true;
                break 'rst;
            }
            let r = 1 - d;
            if e.flags[r] & tf::MAXACK_SET != 0 && e.last_index() != index::SYN {
                let seq = t.seq;
                let established = old == S::Established && e.assured();
                if seq == 0 && !established {
                    break 'rst;
                }
                if before(seq, e.maxack[r]) && !cfg.tcp_ignore_invalid_rst {
                    return invalid(Reason::InvalidRst);
                }
                if !established || seq == e.maxack[r] {
                    break 'rst;
                }
                if e.last_index() == index::ACK && e.last_dir() == d && seq == e.last_end {
                    // The RST ends a train of data.
                    break 'rst;
                }
                // In window but not exact: stay, a challenge ACK may follow.
                new_state = old;
            }
            if ((e.seen_reply() && e.last_index() == index::SYN && e.last_dir() != d)
                || (!e.assured() && e.last_index() == index::ACK))
                && t.ack == e.last_end
            {
                // An RST answering a SYN or ACK we let through while out of sync.
                skip_window = true;
                break 'rst;
            }
            if old == S::SynSent
                && e.last_index() == index::ACK
                && e.last_dir() == 1
                && t.seq == e.last_ack
            {
                // An RST answering a challenge ACK we let through.
                skip_window = true;
            }
        }
        _ => {}
    }

    if !skip_window {
        match in_window(e, d, idx, p, cfg) {
            Window::Accept => {}
            Window::Ignore => return Verdict::Ignore,
            Window::Invalid(reason, value) => {
                let refresh = handle_invalid(e, d, idx, cfg);
                let detail = Detail { value, index: idx, dir: d as u8, state: old as u8 };
                return Verdict::Invalid { reason, detail, refresh };
            }
        }
    }

    e.set_last(idx, d);
    e.pstate = new_state as u8;
    if old != new_state && new_state == S::FinWait {
        e.flags[d] |= tf::CLOSE_INIT;
    }
    let to = &cfg.timeouts;
    let state_to = to.tcp(new_state);
    // Linux's order of caps: retransmissions, then an RST that left the connection
    // ESTABLISHED or unacknowledged data (both the unacknowledged timeout), then a zero
    // window.
    let rst_kept = idx == index::RST && new_state == S::Established;
    let unacked = (e.flags[0] | e.flags[1]) & tf::DATA_UNACKNOWLEDGED != 0;
    let mut timeout = if e.retrans >= cfg.tcp_max_retrans && state_to > to.tcp_max_retrans {
        to.tcp_max_retrans
    } else if (rst_kept || unacked) && state_to > to.tcp_unacknowledged {
        to.tcp_unacknowledged
    } else if e.last_win == 0 && state_to > to.tcp_max_retrans {
        to.tcp_max_retrans
    } else {
        state_to
    };
    if !e.seen_reply() {
        if t.flags & f::RST != 0 {
            // The only answer is a reset: there is no connection, forget it now.
            return Verdict::Accept { refresh: Refresh::Keep, kill: true };
        }
        if idx == index::SYN && old == S::SynSent {
            // A retransmitted SYN does not keep the entry alive.
            return Verdict::Accept { refresh: Refresh::Keep, kill: false };
        }
        if new_state == S::Established && timeout > to.tcp_unacknowledged {
            // Picked up mid-stream and never answered.
            timeout = to.tcp_unacknowledged;
        }
    } else if !e.assured()
        && matches!(old, S::SynRecv | S::Established)
        && new_state == S::Established
    {
        e.set_assured();
    }
    Verdict::Accept { refresh: Refresh::Set(timeout), kill: false }
}

/// The timeout an entry's current state asks for, with the caps that do not depend on the
/// packet (retransmissions, unacknowledged data, a zero window, no reply).
pub(crate) fn timeout(e: &Entry, cfg: &Config) -> rampart_wire::Span {
    let to = &cfg.timeouts;
    let s = e.state();
    let state_to = to.tcp(s);
    let mut t = if e.retrans >= cfg.tcp_max_retrans && state_to > to.tcp_max_retrans {
        to.tcp_max_retrans
    } else if (e.flags[0] | e.flags[1]) & tf::DATA_UNACKNOWLEDGED != 0
        && state_to > to.tcp_unacknowledged
    {
        to.tcp_unacknowledged
    } else if e.last_win == 0 && state_to > to.tcp_max_retrans {
        to.tcp_max_retrans
    } else {
        state_to
    };
    if !e.seen_reply() && s == S::Established {
        t = t.min(to.tcp_unacknowledged);
    }
    t
}
