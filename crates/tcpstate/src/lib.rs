//! What operators read in a Zeek `conn.log` line, per flow: the connection state
//! (`conn_state`), the `history` string, and per direction four TCP health counters.
//!
//! [`TcpStateStage`] is a [`SideStage`]: it sees every TCP packet of a live flow (by the flow
//! table's [`FlowId`], state in a dense array, no allocation per packet) and hands a
//! [`ConnSummary`] to the flow's record when the flow ends. It is its own crate rather than a
//! module of the RTT crate because it is on when RTT matching is off (`--no-rtt`), keeps
//! different state, and is checked against a different reference (tshark's
//! `tcp.analysis.*` flags, not pping).
//!
//! # The counters
//!
//! Each is counted per direction (the sender of the segment), with sequence numbers compared
//! modulo 2^32 and "next expected" (`nextseq`) the highest `seq + len` the direction has sent
//! so far, SYN and FIN each counting one. They follow Wireshark's TCP sequence analysis, in its
//! order of checks:
//!
//! * **zero window probe** (not counted): one byte at `nextseq` while the peer's last window
//!   was 0; nothing else is checked for it and `nextseq` does not move;
//! * [`DirCounters::zero_window`]: a segment advertising a window of 0 without SYN, FIN or
//!   RST (tshark's `tcp.analysis.zero_window`);
//! * [`DirCounters::lost`]: a segment (not RST) that starts beyond `nextseq`: the monitor did
//!   not see the data before it (tshark's `tcp.analysis.lost_segment`, "previous segment not
//!   captured"). This is loss *seen by the monitor*, upstream of it or in the capture;
//! * **keep-alive** (not counted): zero or one byte at `nextseq - 1` without SYN, FIN or RST;
//! * a segment that uses sequence space (data, SYN or FIN) and starts below `nextseq` is
//!   either [`DirCounters::out_of_order`] or [`DirCounters::retrans`]:
//!   - a *fast retransmission* (the peer sent two or more duplicate ACKs for exactly this
//!     `seq`, the last less than 20 ms ago) is a retransmission;
//!   - else, if it comes less than the handshake's RTT (the originator's latest SYN, as
//!     Wireshark's `ts_mru_syn`, to the ACK that completes the handshake; 3 ms when unknown) after `nextseq` last moved and does not end exactly at
//!     `nextseq`, it is out of order (tshark's `tcp.analysis.out_of_order`);
//!   - else it is a retransmission: tshark's `tcp.analysis.retransmission`,
//!     `tcp.analysis.fast_retransmission` and `tcp.analysis.spurious_retransmission` (data
//!     the peer had already acknowledged) all count here.
//!
//! A duplicate ACK (for the fast retransmission rule) is a segment with no payload, no SYN,
//! FIN or RST, at `nextseq`, with the same ACK number and window as the direction's previous
//! segment. Differences from tshark, all small: Wireshark's analysis keys conversations by its
//! own stream index (a SYN with a new ISN can start a new stream where the flow table keeps
//! one flow), knows the first "unset" sequence number as 0 where this stage keeps a flag, and
//! completes the handshake RTT at the first pure ACK either way; the fixture test in
//! `crates/cli/tests/tcpstate.rs` states how far apart the two may be.
//!
//! # `history` letters (Zeek's)
//!
//! Upper case for the originator (the flow's initiator, the first packet's sender), lower case
//! for the responder. A segment adds letters by Zeek's rules:
//!
//! | letter | meaning |
//! |---|---|
//! | `S` | a SYN without ACK (and no FIN or RST) |
//! | `H` | a SYN with ACK ("handshake"; `S` and `H` share one mark: a direction gets one of them) |
//! | `A` | a pure ACK (no payload, no SYN, FIN or RST) |
//! | `D` | a segment with payload and none of SYN, FIN, RST ("data") |
//! | `F` | a FIN (with or without payload; no SYN or RST) |
//! | `R` | a RST (no SYN or FIN) |
//! | `G` | a content gap: here, a segment that starts beyond `nextseq` (a `lost` count) |
//! | `T` | a retransmission that carries payload |
//! | `W` | a zero window advertisement |
//! | `I` | an inconsistent packet (FIN and RST together) |
//! | `Q` | a multi-flag packet (SYN with FIN or RST) |
//!
//! `A`, `D`, `I` and `Q` are recorded once per direction; `S`/`H`, `F` and `R` once, then again
//! each time that flag comes at a sequence number other than the same flag's last (a SYN with
//! a new ISN, a FIN after more data; a retransmitted one adds nothing).
//! As Zeek does, `G`, `T` and `W` are recorded again when their count in that direction
//! reaches 10, 100, 1000, ... Where this differs from Zeek: no `C` (checksums are not
//! verified), no `^` (the originator is always the first packet's sender; Zeek flips a flow
//! whose first packet is a SYN-ACK), Zeek sees a gap only when data past a hole is
//! acknowledged, and the history keeps at most [`HISTORY_MAX`] letters. For UDP the history is
//! `D` (the originator sent packets) and `d` (the responder did), assuming datagrams carry
//! payload; other protocols have none.
//!
//! # `conn_state` (Zeek's codes)
//!
//! Each endpoint moves through Zeek's endpoint states (inactive, SYN sent, SYN-ACK sent,
//! partial, established, closed, reset) on the segments it sends, and the code is read from
//! the pair when the flow ends, by Zeek's rules: see [`ConnState`]. UDP: `SF` when both sides
//! sent, `S0` when only the originator did; other protocols: `OTH`.
//!
//! # Memory
//!
//! [`FlowTcp`]'s size per flow slot ever used (asserted by a test: 192 bytes, three cache lines), nothing per
//! packet.
#![forbid(unsafe_code)]

use std::ops::AddAssign;

use rampart_flow::{Dir, Flow, FlowCtx, FlowId, PerFlow, SideStage};
use rampart_wire::tcp::flags::{ACK, FIN, RST, SYN};
use rampart_wire::{Span, Timestamp, proto};

/// The most letters a history holds (later ones are dropped).
pub const HISTORY_MAX: usize = 31;

/// What the stage needs of one TCP segment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpSeg {
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number.
    pub ack: u32,
    /// TCP flags.
    pub flags: u16,
    /// The window field, unscaled.
    pub window: u16,
    /// Payload bytes (from the IP length: on the wire, not as captured).
    pub payload: u32,
}

/// Zeek's connection states.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ConnState {
    /// Connection attempt seen, no reply.
    S0,
    /// Established, not terminated.
    S1,
    /// Normal establishment and termination (also: UDP both ways).
    SF,
    /// Connection attempt rejected (a RST answered it).
    Rej,
    /// Established, the originator's close attempt seen, no reply.
    S2,
    /// Established, the responder's close attempt seen, no reply.
    S3,
    /// Established, the originator aborted it (sent a RST).
    Rsto,
    /// Established, the responder sent a RST.
    Rstr,
    /// The originator sent a SYN then a RST; no SYN-ACK seen (by Zeek's test on the history:
    /// a RST from an originator that sent no SYN, with a silent responder, is `OTH`).
    Rstos0,
    /// The responder sent a RST; the originator sent no SYN (a SYN-ACK then RST in Zeek).
    Rstrh,
    /// The originator sent a SYN then a FIN; no SYN-ACK seen ("half open").
    Sh,
    /// The responder sent a FIN; the originator sent no SYN.
    Shr,
    /// Anything else: no SYN seen (midstream traffic), or not TCP or UDP.
    #[default]
    Oth,
}

impl ConnState {
    /// Zeek's code: `S0`, `SF`, `REJ`, `RSTOS0`, ...
    pub fn name(self) -> &'static str {
        match self {
            Self::S0 => "S0",
            Self::S1 => "S1",
            Self::SF => "SF",
            Self::Rej => "REJ",
            Self::S2 => "S2",
            Self::S3 => "S3",
            Self::Rsto => "RSTO",
            Self::Rstr => "RSTR",
            Self::Rstos0 => "RSTOS0",
            Self::Rstrh => "RSTRH",
            Self::Sh => "SH",
            Self::Shr => "SHR",
            Self::Oth => "OTH",
        }
    }

    /// The code for a TCP flow whose endpoints ended in states `o` (originator) and `r`
    /// (responder), either having sent payload or not, with history `h`: Zeek's rules, in
    /// its order.
    fn tcp(o: Ep, r: Ep, data: bool, h: &History) -> Self {
        let o_inactive = matches!(o, Ep::Inactive | Ep::Partial);
        let r_inactive = matches!(r, Ep::Inactive | Ep::Partial);
        if r == Ep::Reset {
            if matches!(o, Ep::SynSent | Ep::SynAckSent) || (o == Ep::Reset && !data) {
                Self::Rej
            } else if o_inactive {
                Self::Rstrh
            } else {
                Self::Rstr
            }
        } else if o == Ep::Reset {
            if !r_inactive {
                Self::Rsto
            } else if h.syn_then_reset() {
                Self::Rstos0
            } else {
                Self::Oth
            }
        } else if o == Ep::Closed && r == Ep::Closed {
            Self::SF
        } else if o == Ep::Closed {
            if r_inactive { Self::Sh } else { Self::S2 }
        } else if r == Ep::Closed {
            if o_inactive { Self::Shr } else { Self::S3 }
        } else if o == Ep::SynSent && r == Ep::Inactive {
            Self::S0
        } else if o == Ep::Established && r == Ep::Established {
            Self::S1
        } else {
            Self::Oth
        }
    }
}

/// An endpoint's state, as Zeek's TCP analyzer names them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Ep {
    #[default]
    Inactive,
    SynSent,
    SynAckSent,
    Partial,
    Established,
    Closed,
    Reset,
}

/// One direction's TCP health counters (see the crate docs for each definition).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirCounters {
    /// Retransmitted segments (tshark: retransmission, fast and spurious retransmission).
    pub retrans: u32,
    /// Out-of-order segments (tshark: `out_of_order`).
    pub out_of_order: u32,
    /// Segments that start beyond the next expected sequence number (tshark:
    /// `lost_segment`).
    pub lost: u32,
    /// Zero-window advertisements (tshark: `zero_window`).
    pub zero_window: u32,
}

/// Zeek's history string: at most [`HISTORY_MAX`] ASCII letters.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct History {
    len: u8,
    letters: [u8; HISTORY_MAX],
}

impl Default for History {
    fn default() -> Self {
        Self { len: 0, letters: [0; HISTORY_MAX] }
    }
}

impl History {
    /// The letters, in the order they were recorded.
    pub fn as_str(&self) -> &str {
        // Only ASCII letters are ever pushed.
        std::str::from_utf8(&self.letters[..usize::from(self.len)]).unwrap_or("")
    }

    /// No letter recorded.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Zeek's test for `RSTOS0`, its pattern `^?S[^HAFGIQ]*R.*` on the whole history: it
    /// starts with the originator's `S`, and the first of the originator's `H`, `A`, `F`,
    /// `G`, `I`, `Q` and `R` after it is `R`.
    fn syn_then_reset(&self) -> bool {
        let h = self.as_str().as_bytes();
        h.first() == Some(&b'S') && h[1..].iter().find(|c| b"HAFGIQR".contains(c)) == Some(&b'R')
    }

    fn push(&mut self, c: u8) {
        if let Some(slot) = self.letters.get_mut(usize::from(self.len)) {
            *slot = c;
            self.len += 1;
        }
    }
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the stage adds to a flow's record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnSummary {
    /// Zeek's `conn_state`.
    pub state: ConnState,
    /// Zeek's `history`.
    pub history: History,
    /// TCP health counters indexed by [`Dir`]: `[Dir::Original]` counts the originator's
    /// segments. All zero for flows that are not TCP.
    pub dirs: [DirCounters; 2],
}

/// The stage's counters (those of several workers add up).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpStats {
    /// TCP segments seen.
    pub segments: u64,
    /// Retransmissions counted.
    pub retrans: u64,
    /// Out-of-order segments counted.
    pub out_of_order: u64,
    /// Segments after a gap counted.
    pub lost: u64,
    /// Zero-window advertisements counted.
    pub zero_window: u64,
}

impl AddAssign for TcpStats {
    fn add_assign(&mut self, o: Self) {
        self.segments += o.segments;
        self.retrans += o.retrans;
        self.out_of_order += o.out_of_order;
        self.lost += o.lost;
        self.zero_window += o.zero_window;
    }
}

/// Letters, as bits of [`DirSeq::letters`], recorded once per direction (`S` and `H` share
/// [`L_S`], as Zeek's one "SYN seen" mark).
const L_S: u16 = 1;
/// Not a letter: the direction sent a SYN-ACK.
const SENT_SYNACK: u16 = 2;
const L_A: u16 = 4;
const L_D: u16 = 8;
const L_F: u16 = 16;
const L_R: u16 = 32;
const L_I: u16 = 64;
const L_Q: u16 = 128;

/// One direction's sequence analysis.
#[derive(Clone, Copy, Debug, Default)]
struct DirSeq {
    /// Highest `seq + len` sent (valid with `seen`).
    next_seq: u32,
    /// Last ACK number sent.
    last_ack: u32,
    /// When `next_seq` last moved.
    next_seq_t: Timestamp,
    /// When the last segment was sent.
    last_ack_t: Timestamp,
    /// Payload retransmissions (for `T`).
    data_retrans: u32,
    /// Duplicate ACKs in a row.
    dupacks: u16,
    /// Last window sent.
    window: u16,
    /// Letters recorded.
    letters: u16,
    /// Sequence numbers of the last SYN, FIN (after its payload) and RST sent: the letter is
    /// recorded again for one at another number.
    last_ctl: [u32; 3],
    /// A segment was seen (`next_seq`, `last_ack` and `window` are set).
    seen: bool,
    /// Payload was sent.
    data: bool,
    state: Ep,
}

/// A flow's state (kept per flow slot ever used).
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowTcp {
    dirs: [DirSeq; 2],
    counters: [DirCounters; 2],
    /// The originator's latest SYN, then the epoch (unset) once the handshake RTT is known.
    syn_t: Timestamp,
    /// The handshake RTT (zero: unknown).
    first_rtt: Span,
    history: History,
}

/// Is `a` before `b` in sequence space?
#[inline]
fn lt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// 1, 10, 100, ...: the counts at which Zeek records a repeated letter again.
#[inline]
fn log_point(n: u32) -> bool {
    matches!(n, 1 | 10 | 100 | 1_000 | 10_000 | 100_000 | 1_000_000)
}

impl FlowTcp {
    fn letter(&mut self, d: usize, bit: u16, c: u8) {
        if self.dirs[d].letters & bit == 0 {
            self.dirs[d].letters |= bit;
            self.history.push(if d == 0 { c } else { c.to_ascii_lowercase() });
        }
    }

    fn repeat(&mut self, d: usize, n: u32, c: u8) {
        if log_point(n) {
            self.history.push(if d == 0 { c } else { c.to_ascii_lowercase() });
        }
    }

    /// One segment sent in direction `d` at `now`; what it counted, added to `stats`.
    fn segment(&mut self, d: usize, now: Timestamp, s: &TcpSeg, stats: &mut TcpStats) {
        let f = s.flags;
        let (syn, fin, rst, ackf) = (f & SYN != 0, f & FIN != 0, f & RST != 0, f & ACK != 0);
        let seglen = s.payload.wrapping_add(u32::from(syn) + u32::from(fin));
        self.history_letters(d, s);
        self.endpoint(d, s, now);
        let peer_window = if self.dirs[d ^ 1].seen { Some(self.dirs[d ^ 1].window) } else { None };
        let (peer_last_ack, peer_dupacks, peer_ack_t) = {
            let p = &self.dirs[d ^ 1];
            (p.last_ack, p.dupacks, p.last_ack_t)
        };
        let first_rtt = self.first_rtt;
        let me = self.dirs[d];
        let mut dup = false;
        let mut advance = true;
        'checks: {
            // Zero window probe: nothing else is checked, `nextseq` stays.
            if me.seen && seglen == 1 && s.seq == me.next_seq && peer_window == Some(0) {
                advance = false;
                break 'checks;
            }
            if s.window == 0 && f & (SYN | FIN | RST) == 0 {
                self.counters[d].zero_window += 1;
                stats.zero_window += 1;
                let n = self.counters[d].zero_window;
                self.repeat(d, n, b'W');
            }
            if !me.seen {
                break 'checks;
            }
            if lt(me.next_seq, s.seq) && !rst {
                self.counters[d].lost += 1;
                stats.lost += 1;
                let n = self.counters[d].lost;
                self.repeat(d, n, b'G');
            }
            let no_sfr = f & (SYN | FIN | RST) == 0;
            if seglen <= 1 && s.seq == me.next_seq.wrapping_sub(1) && no_sfr {
                // A keep-alive.
                break 'checks;
            }
            if s.payload == 0
                && no_sfr
                && s.window == me.window
                && s.seq == me.next_seq
                && s.ack == me.last_ack
                && ackf
            {
                dup = true;
            }
            if seglen > 0 && (syn || fin || s.payload > 0) && lt(s.seq, me.next_seq) {
                let fast = peer_dupacks >= 2
                    && peer_last_ack == s.seq
                    && now.since(peer_ack_t) < Span::from_millis(20);
                let threshold = if first_rtt.is_zero() { Span::from_millis(3) } else { first_rtt };
                let ooo = !fast
                    && now.since(me.next_seq_t) < threshold
                    && me.next_seq != s.seq.wrapping_add(seglen);
                if ooo {
                    self.counters[d].out_of_order += 1;
                    stats.out_of_order += 1;
                } else {
                    self.counters[d].retrans += 1;
                    stats.retrans += 1;
                    if s.payload > 0 {
                        self.dirs[d].data_retrans += 1;
                        let n = self.dirs[d].data_retrans;
                        self.repeat(d, n, b'T');
                    }
                }
            }
        }
        let me = &mut self.dirs[d];
        let end = s.seq.wrapping_add(seglen);
        if advance && (!me.seen || lt(me.next_seq, end)) {
            me.next_seq = end;
            me.next_seq_t = now;
        }
        if dup {
            me.dupacks = me.dupacks.saturating_add(1);
        } else if !me.seen || s.ack != me.last_ack {
            me.dupacks = 0;
        }
        me.seen = true;
        me.window = s.window;
        me.last_ack = s.ack;
        me.last_ack_t = now;
        me.data |= s.payload > 0;
    }

    /// The letters a segment adds by its flags and payload, by Zeek's rules: a segment with
    /// two or more of SYN, FIN and RST adds only `I` (FIN and RST) or `Q` (the others); one
    /// with exactly one of them adds only that flag's letter (`S` or `H` sharing one "SYN
    /// seen" mark, `F`, `R`), again each time that flag comes at a new sequence number (the
    /// FIN's counted after its payload); one with none adds `D` for payload, else `A` for an
    /// ACK.
    fn history_letters(&mut self, d: usize, s: &TcpSeg) {
        let f = s.flags;
        let (syn, fin, rst) = (f & SYN != 0, f & FIN != 0, f & RST != 0);
        match u8::from(syn) + u8::from(fin) + u8::from(rst) {
            0 if s.payload > 0 => self.letter(d, L_D, b'D'),
            0 if f & ACK != 0 => self.letter(d, L_A, b'A'),
            0 => {}
            1 => {
                let (bit, c, at) = if syn {
                    (L_S, if f & ACK != 0 { b'H' } else { b'S' }, s.seq)
                } else if fin {
                    (L_F, b'F', s.seq.wrapping_add(s.payload))
                } else {
                    (L_R, b'R', s.seq)
                };
                let slot = usize::from(fin) + 2 * usize::from(rst);
                let seen = self.dirs[d].letters & bit != 0;
                if !seen {
                    self.letter(d, bit, c);
                } else if at != self.dirs[d].last_ctl[slot] {
                    self.history.push(if d == 0 { c } else { c.to_ascii_lowercase() });
                }
                self.dirs[d].last_ctl[slot] = at;
            }
            _ if fin && rst => self.letter(d, L_I, b'I'),
            _ => self.letter(d, L_Q, b'Q'),
        }
    }

    /// The endpoint state machine, and the handshake RTT.
    fn endpoint(&mut self, d: usize, s: &TcpSeg, now: Timestamp) {
        let f = s.flags;
        let (syn, fin, rst, ack) = (f & SYN != 0, f & FIN != 0, f & RST != 0, f & ACK != 0);
        let peer = self.dirs[d ^ 1].state;
        let me = &mut self.dirs[d].state;
        if rst {
            *me = Ep::Reset;
        } else if fin {
            if *me != Ep::Reset {
                *me = Ep::Closed;
            }
        } else if syn {
            if *me == Ep::Inactive {
                *me = if ack { Ep::SynAckSent } else { Ep::SynSent };
            }
            if ack {
                self.dirs[d].letters |= SENT_SYNACK;
            }
            // The handshake RTT counts from the latest SYN (a resent one restarts it), as
            // Wireshark's `ts_mru_syn`.
            if d == 0 && !ack && self.first_rtt.is_zero() {
                self.syn_t = now.max(Timestamp::from_nanos(1));
            }
        } else if ack || s.payload > 0 {
            match *me {
                Ep::Inactive => *me = Ep::Partial,
                Ep::SynSent | Ep::SynAckSent => {
                    *me = Ep::Established;
                    if matches!(peer, Ep::SynSent | Ep::SynAckSent) {
                        self.dirs[d ^ 1].state = Ep::Established;
                    }
                }
                _ => {}
            }
            if d == 0 && self.syn_t != Timestamp::EPOCH && self.dirs[1].letters & SENT_SYNACK != 0 {
                self.first_rtt = now.since(self.syn_t);
                self.syn_t = Timestamp::EPOCH;
            }
        }
    }

    fn summary(&self, flow: &Flow) -> ConnSummary {
        let [o, r] = &self.dirs;
        ConnSummary {
            state: if flow.key.proto() == proto::TCP {
                ConnState::tcp(o.state, r.state, o.data || r.data, &self.history)
            } else {
                other_state(flow)
            },
            history: self.history,
            dirs: self.counters,
        }
    }
}

/// `conn_state` of a flow that is not TCP.
fn other_state(flow: &Flow) -> ConnState {
    if flow.key.proto() != proto::UDP {
        return ConnState::Oth;
    }
    match (flow.packets[0] > 0, flow.packets[1] > 0) {
        (true, true) => ConnState::SF,
        (true, false) => ConnState::S0,
        (false, true) => ConnState::Shr,
        (false, false) => ConnState::Oth,
    }
}

/// Connection state, history and TCP health counters for every flow of a flow table.
#[derive(Clone, Debug, Default)]
pub struct TcpStateStage {
    flows: PerFlow<FlowTcp>,
    stats: TcpStats,
}

impl TcpStateStage {
    /// A stage with no flows.
    pub fn new() -> Self {
        Self::default()
    }

    /// One TCP segment of flow `id` (`new`: the table just started the flow in that slot),
    /// going `dir`, at `now`. [`SideStage::observe`] is the same call with the flow's
    /// context.
    #[inline]
    pub fn observe_segment(&mut self, id: FlowId, new: bool, dir: Dir, now: Timestamp, s: &TcpSeg) {
        let f = self.flows.get_or_grow(id.0);
        if new {
            *f = FlowTcp::default();
        }
        self.stats.segments += 1;
        f.segment(dir as usize, now, s, &mut self.stats);
    }

    /// The summary of a flow that ended (`flow` its record), its slot cleared for the next.
    pub fn retire_flow(&mut self, id: FlowId, flow: &Flow) -> ConnSummary {
        let summary = match self.flows.get_mut(id.0) {
            Some(f) => std::mem::take(f).summary(flow),
            None => FlowTcp::default().summary(flow),
        };
        with_udp_history(summary, flow)
    }

    /// The summary of the live flow `id` so far (`flow` its record with the flow's totals),
    /// its state kept (for an interim record).
    pub fn current(&self, id: FlowId, flow: &Flow) -> ConnSummary {
        let summary = match self.flows.get(id.0) {
            Some(f) => f.summary(flow),
            None => FlowTcp::default().summary(flow),
        };
        with_udp_history(summary, flow)
    }
}

/// A UDP flow's history: `D` if the initiator sent, `d` if the responder did.
fn with_udp_history(mut summary: ConnSummary, flow: &Flow) -> ConnSummary {
    if flow.key.proto() == proto::UDP {
        let mut h = History::default();
        if flow.packets[0] > 0 {
            h.push(b'D');
        }
        if flow.packets[1] > 0 {
            h.push(b'd');
        }
        summary.history = h;
    }
    summary
}

impl SideStage for TcpStateStage {
    type Input<'a> = &'a TcpSeg;
    type Output = ();
    type Summary = ConnSummary;
    type Stats = TcpStats;

    #[inline]
    fn observe(&mut self, f: &FlowCtx<'_>, input: &TcpSeg) -> Option<()> {
        self.observe_segment(f.id, f.new, f.dir, f.ts, input);
        None
    }

    fn retire(&mut self, id: FlowId, flow: &Flow) -> ConnSummary {
        self.retire_flow(id, flow)
    }

    fn stats(&self) -> TcpStats {
        self.stats
    }

    fn memory_bytes(&self) -> usize {
        self.flows.memory_bytes()
    }

    fn reserve(&mut self, flows: usize) {
        self.flows.reserve(flows);
    }
}

#[cfg(test)]
mod tests;
