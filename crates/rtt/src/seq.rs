//! SEQ/ACK matching for flows without the timestamps option, with Karn's rule.
//!
//! Per direction, at most one segment is being timed (as pping2 and most TCP stacks do): the
//! first new segment sent while nothing is being timed. The ACK that covers its last byte, from
//! the other direction, ends the sample. A retransmission in that direction (a segment that
//! does not reach past the highest sequence number already sent, or starts before it) cancels
//! the sample, since its ACK could answer either copy (Karn's rule); retransmitted segments are
//! never timed. SYN and FIN count as one sequence number each, so the handshake is timed too.
//! Sequence numbers wrap: comparisons are modulo 2^32.

/// `a` comes before `b` in sequence space.
#[inline]
fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

const INIT: u8 = 1;
const PENDING: u8 = 2;

/// One direction's SEQ/ACK timing state (20 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeqDir {
    snd_max: u32,
    pend_end: u32,
    pend_t: u64,
    state: u8,
}

impl SeqDir {
    /// A segment of `len` sequence numbers (payload, plus one each for SYN and FIN) starting at
    /// `seq`, sent in this direction at `now`.
    #[inline]
    pub fn on_send(&mut self, seq: u32, len: u32, now: u64) {
        if len == 0 {
            return;
        }
        let end = seq.wrapping_add(len);
        if self.state & INIT != 0 && (!before(self.snd_max, end) || before(seq, self.snd_max)) {
            // Some of it was sent before: a retransmission. Karn: stop timing.
            self.state &= !PENDING;
            if before(self.snd_max, end) {
                self.snd_max = end;
            }
            return;
        }
        if self.state & PENDING == 0 {
            self.state |= PENDING;
            self.pend_end = end;
            self.pend_t = now;
        }
        self.snd_max = end;
        self.state |= INIT;
    }

    /// An ACK for `ack` from the other direction: the start time of the timed segment if this
    /// ACK covers it.
    #[inline]
    pub fn on_ack(&mut self, ack: u32) -> Option<u64> {
        if self.state & PENDING != 0 && !before(ack, self.pend_end) {
            self.state &= !PENDING;
            return Some(self.pend_t);
        }
        None
    }

    /// Whether a segment is being timed.
    pub fn pending(&self) -> bool {
        self.state & PENDING != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The obviously right version: sequence numbers unwrapped to 64 bits, the whole history of
    /// sent ranges kept, and freshness decided by looking at all of it.
    #[derive(Default)]
    struct Oracle {
        sent: Vec<(u64, u64)>,
        pending: Option<(u64, u64)>,
    }

    impl Oracle {
        fn send(&mut self, start: u64, len: u64, now: u64) {
            if len == 0 {
                return;
            }
            let end = start + len;
            let fresh = self.sent.iter().all(|&(_, e)| e <= start);
            self.sent.push((start, end));
            if !fresh {
                self.pending = None;
            } else if self.pending.is_none() {
                self.pending = Some((end, now));
            }
        }

        fn ack(&mut self, ack: u64) -> Option<u64> {
            match self.pending {
                Some((end, t)) if ack >= end => {
                    self.pending = None;
                    Some(t)
                }
                _ => None,
            }
        }
    }

    #[derive(Clone, Debug)]
    enum Ev {
        /// New data: length.
        New(u32),
        /// Retransmit from this many bytes back (clamped to what was sent), this long.
        Again(u32, u32),
        /// ACK up to this many bytes behind the highest sent.
        Ack(u32),
    }

    fn ev() -> impl Strategy<Value = Ev> {
        prop_oneof![
            3 => (0u32..3000).prop_map(Ev::New),
            1 => (1u32..6000, 1u32..3000).prop_map(|(b, l)| Ev::Again(b, l)),
            3 => (0u32..4000).prop_map(Ev::Ack),
        ]
    }

    proptest! {
        #[test]
        fn matches_oracle(
            isn in prop_oneof![Just(u32::MAX - 5000), Just(0), any::<u32>()],
            evs in prop::collection::vec(ev(), 1..200),
        ) {
            let mut fast = SeqDir::default();
            let mut slow = Oracle::default();
            let mut high = 0u64; // bytes sent past the ISN
            for (now, e) in evs.iter().enumerate() {
                let now = now as u64;
                match *e {
                    Ev::New(len) => {
                        fast.on_send(isn.wrapping_add(high as u32), len, now);
                        slow.send(u64::from(isn) + high, u64::from(len), now);
                        high += u64::from(len);
                    }
                    Ev::Again(back, len) => {
                        let start = high.saturating_sub(u64::from(back));
                        fast.on_send(isn.wrapping_add(start as u32), len, now);
                        slow.send(u64::from(isn) + start, u64::from(len), now);
                        high = high.max(start + u64::from(len));
                    }
                    Ev::Ack(behind) => {
                        let a = high.saturating_sub(u64::from(behind));
                        let got = fast.on_ack(isn.wrapping_add(a as u32));
                        let want = slow.ack(u64::from(isn) + a);
                        prop_assert_eq!(got, want, "ack {} after {:?}", a, e);
                    }
                }
                prop_assert_eq!(fast.pending(), slow.pending.is_some());
            }
        }
    }

    #[test]
    fn handshake_is_timed() {
        let mut d = SeqDir::default();
        d.on_send(1000, 1, 5); // SYN
        assert_eq!(d.on_ack(1001), Some(5));
        assert_eq!(d.on_ack(1001), None, "one sample per timed segment");
    }

    #[test]
    fn karn_cancels_on_retransmission() {
        let mut d = SeqDir::default();
        d.on_send(0, 100, 1);
        d.on_send(100, 100, 2);
        d.on_send(0, 100, 3); // retransmission of the timed segment
        assert_eq!(d.on_ack(200), None);
        d.on_send(200, 100, 4); // new data is timed again
        assert_eq!(d.on_ack(300), Some(4));
    }

    #[test]
    fn partial_ack_does_not_end_the_sample() {
        let mut d = SeqDir::default();
        d.on_send(u32::MAX - 10, 100, 7); // wraps
        assert_eq!(d.on_ack(u32::MAX), None);
        assert_eq!(d.on_ack(89), Some(7));
    }
}
