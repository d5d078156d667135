//! The tracker against a model: a straightforward transcription of Linux's TCP transition
//! table (read from the notes' copy as text) and of the rules around it, with sequence numbers
//! kept consistent and windows liberal so that the table and those rules decide. Random
//! sequences of segments from either side must give the same `ct state`, TCP state, ASSURED
//! and reply flags, packet by packet.

mod common;

use proptest::prelude::*;
use rampart_conntrack::{Config, Conntrack, CtState, TcpState};
use rampart_flow::FlowId;
use rampart_wire::tcp::flags::{ACK, FIN, RST, SYN};

const TABLE: &str = "
SS SS IG IG IG IG IG SS SS S2
IV IV SR IV IV IV IV IV IV SR
IV IV FW FW LA LA LA TW CL IV
ES IV ES ES CW CW TW TW CL IV
IV CL CL CL CL CL CL CL CL CL
IV S2 IV IV IV IV IV SS IV S2
IV SR IG IG IG IG IG IG IG SR
IV IV FW FW LA LA LA TW CL IV
IV IG SR ES CW CW TW TW CL IG
IV CL CL CL CL CL CL CL CL CL";

const NAMES: [&str; 10] = ["NO", "SS", "SR", "ES", "FW", "CW", "LA", "TW", "CL", "S2"];

/// `cell(dir, index, state)`: Some(state), or None with `ignore` telling IG from IV.
fn cell(d: usize, idx: usize, s: usize) -> (Option<usize>, bool) {
    let row = TABLE.lines().filter(|l| !l.trim().is_empty()).nth(d * 5 + idx).unwrap();
    let w = row.split_whitespace().nth(s).unwrap();
    (NAMES.iter().position(|&n| n == w), w == "IG")
}

#[derive(Clone, Copy, Debug, Default)]
struct Model {
    exists: bool,
    /// The client opened the entry.
    client_orig: bool,
    state: usize,
    seen_reply: bool,
    assured: bool,
    last_index: usize,
    last_dir: usize,
    last_end: u32,
    close_init: bool,
    simultaneous: bool,
    challenge: bool,
    /// Per direction: an ACK was sent, and the highest.
    maxack: [Option<u32>; 2],
    /// The last packet was ignored (or invalid): its sender's stream did not move.
    stalled: bool,
}

const SYN_I: usize = 0;
const SYNACK_I: usize = 1;
const FIN_I: usize = 2;
const ACK_I: usize = 3;
const RST_I: usize = 4;
const SS_S: usize = 1;
const SR_S: usize = 2;
const ES_S: usize = 3;
const LA_S: usize = 6;
const TW_S: usize = 7;
const CL_S: usize = 8;

fn index(flags: u16) -> usize {
    if flags & RST != 0 {
        RST_I
    } else if flags & SYN != 0 {
        if flags & ACK != 0 { SYNACK_I } else { SYN_I }
    } else if flags & FIN != 0 {
        FIN_I
    } else {
        ACK_I
    }
}

impl Model {
    /// One segment from the client (`client`) with these flags, seq and ack; the `ct state`.
    fn step(&mut self, client: bool, flags: u16, seq: u32, ack: u32) -> CtState {
        let idx = index(flags);
        self.stalled = true;
        if !self.exists {
            return self.open(client, idx, seq, flags);
        }
        let d = usize::from(client != self.client_orig);
        let mut old = self.state;
        let (to, ignore) = cell(d, idx, old);
        let ct = if d == 1 || self.seen_reply { CtState::Established } else { CtState::New };
        let mut new = match to {
            Some(SS_S) if old >= TW_S => {
                if self.close_init || (self.last_dir == d && self.last_index == RST_I) {
                    *self = Model::default();
                    return self.open(client, idx, seq, flags);
                }
                return self.ignored(d, idx, seq, flags, ack, old, ct);
            }
            Some(s) => s,
            None if ignore => {
                if idx == SYNACK_I
                    && self.last_index == SYN_I
                    && self.last_dir != d
                    && ack == self.last_end
                {
                    old = SS_S;
                    SR_S
                } else {
                    return self.ignored(d, idx, seq, flags, ack, old, ct);
                }
            }
            None => return CtState::Invalid,
        };
        match new {
            TW_S if old == LA_S
                && idx == ACK_I
                && self.last_dir != d
                && self.last_index == SYN_I
                && self.challenge =>
            {
                self.challenge = false;
                self.seen_reply |= d == 1;
                return ct;
            }
            9 => self.simultaneous = true,
            SR_S if d == 1 && idx == ACK_I && self.simultaneous => new = ES_S,
            CL_S if idx == RST_I => {
                let closing = matches!(old, 4..=8);
                let r = 1 - d;
                if !closing
                    && self.last_index != SYN_I
                    && let Some(maxack) = self.maxack[r]
                {
                    let established = old == ES_S && self.assured;
                    if (seq.wrapping_sub(maxack) as i32) < 0 {
                        return CtState::Invalid;
                    }
                    if established
                        && seq != maxack
                        && !(self.last_index == ACK_I && self.last_dir == d && seq == self.last_end)
                    {
                        new = old;
                    }
                }
            }
            _ => {}
        }
        self.stalled = false;
        if flags & ACK != 0 {
            let m = &mut self.maxack[d];
            if m.is_none_or(|v| (ack.wrapping_sub(v) as i32) > 0) {
                *m = Some(ack);
            }
        }
        self.last_index = idx;
        self.last_dir = d;
        if idx == ACK_I {
            self.last_end = seq;
        }
        if old != new && new == 4 {
            self.close_init = true;
        }
        self.state = new;
        if !self.seen_reply {
            if flags & RST != 0 {
                *self = Model::default();
                return ct;
            }
        } else if !self.assured && (old == SR_S || old == ES_S) && new == ES_S {
            self.assured = true;
        }
        if d == 1 {
            self.seen_reply = true;
        }
        ct
    }

    #[allow(clippy::too_many_arguments)]
    fn ignored(
        &mut self,
        d: usize,
        idx: usize,
        seq: u32,
        flags: u16,
        _ack: u32,
        old: usize,
        ct: CtState,
    ) -> CtState {
        self.last_index = idx;
        self.last_dir = d;
        self.last_end = seq.wrapping_add(u32::from(flags & (SYN | FIN) != 0));
        if idx == SYN_I && d == 0 {
            // Linux notes the SYN's options in last_flags, which clears whatever else it held
            // (the simultaneous-open mark too).
            self.challenge = old == LA_S;
            self.simultaneous = false;
        }
        if d == 1 {
            self.seen_reply = true;
        }
        ct
    }

    fn open(&mut self, client: bool, idx: usize, _seq: u32, flags: u16) -> CtState {
        let state = match idx {
            SYN_I => SS_S,
            ACK_I => ES_S,
            _ => return CtState::Invalid,
        };
        *self =
            Model { exists: true, client_orig: client, state, last_index: idx, ..Model::default() };
        if flags & ACK != 0 {
            self.maxack[0] = None;
        }
        self.stalled = idx == ACK_I;
        CtState::New
    }
}

/// Segments: (from the client, flags); sequence numbers follow each side's stream.
fn segments() -> impl Strategy<Value = Vec<(bool, u16)>> {
    let flags =
        prop::sample::select(vec![SYN, SYN | ACK, FIN | ACK, ACK, RST, RST | ACK, ACK, ACK]);
    prop::collection::vec((any::<bool>(), flags), 1..40)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn tracker_agrees_with_the_table(segs in segments()) {
        let cfg = Config { tcp_be_liberal: true, ..Config::default() };
        let mut ct = Conntrack::new(cfg);
        let mut model = Model::default();
        let id = FlowId(0);
        let mut next = [1000u32, 5000u32];
        for (n, &(client, flags)) in segs.iter().enumerate() {
            let me = usize::from(!client);
            let (seq, ack) = (next[me], if flags & ACK != 0 { next[1 - me] } else { 0 });
            let frame = common::tcp_frame(client, flags, seq, ack, 64000, 0);
            let (p, side, _) = common::facts(&frame);
            let found = ct.entry(id).is_some().then_some(id);
            let now = rampart_wire::Timestamp::from_nanos(n as u64 * 1_000_000);
            let insp = ct.inspect(found, side, &p, now, |_, _| None);
            ct.commit(&insp, true, Some(id));
            let want = model.step(client, flags, seq, ack);
            // A side's stream moves when the tracker took its segment in window (a segment
            // it ignored or refused is as if lost on the way).
            if flags & (SYN | FIN) != 0 && !model.stalled {
                next[me] = next[me].wrapping_add(1);
            }
            let e = ct.entry(id);
            prop_assert_eq!(insp.state, want, "packet {} {:?}", n, (client, flags));
            prop_assert_eq!(e.is_some(), model.exists, "packet {}", n);
            if let Some(e) = e {
                prop_assert_eq!(e.tcp_state().map(|s| s as usize), Some(model.state), "packet {}", n);
                prop_assert_eq!((e.assured(), e.seen_reply()), (model.assured, model.seen_reply), "packet {}", n);
            }
        }
        let _ = TcpState::ALL;
    }
}
