//! SEQ/ACK matching for flows without the timestamps option, with Karn's rule.
//!
//! A sample pairs an ACK with the segment it *exactly* acknowledges: one whose end (sequence
//! number plus length, SYN and FIN counting one each) equals the ACK number, as Wireshark's
//! `tcp.analysis.ack_rtt` does. A cumulative ACK that covers a segment without ending where it
//! ends gives no sample for it: its RTT would include whatever kept the later data back (the
//! sender's idle time, or the repair of a loss). Each direction times at most three segments
//! at once: the first two new segments sent while those two slots are free (so that an ACK
//! for every segment, or for every second one as delayed ACKs do, finds its segment), and the
//! latest new segment (so the ACK that ends a burst or a request finds it). A retransmission
//! (a segment that does not reach past the highest sequence number already sent, or starts
//! before it) cancels every timed segment that ends after the retransmission starts: an ACK
//! could answer either copy (Karn's rule), and an ACK past a repaired hole waited for the
//! repair. Retransmitted segments are never timed. An ACK past a timed segment's end retires
//! it, with or without a sample. A RST either way ends the timing of both directions. Sequence
//! numbers wrap: comparisons are modulo 2^32.
//!
//! When the acknowledged segment carried a request, the ACK often comes with the reply, so
//! the sample includes the peer application's time to answer (up to the peer's delayed-ACK
//! timer, commonly 40 ms or 200 ms, when the reply takes longer); Wireshark's `ack_rtt` is
//! the same number.

use rampart_wire::Timestamp;

/// `a` comes before `b` in sequence space.
#[inline]
fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// Something was sent (`snd_max` is set).
const INIT: u8 = 1;
/// Slot `i` holds a timed segment: bit `SLOT << i`.
const SLOT: u8 = 2;
/// The slot that holds the latest new segment.
const LATEST: usize = 2;

/// One direction's SEQ/ACK timing state (48 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeqDir {
    /// When each timed segment was sent.
    t: [Timestamp; 3],
    /// Where each timed segment ends.
    end: [u32; 3],
    snd_max: u32,
    state: u8,
}

impl SeqDir {
    #[inline]
    fn timed(&self, i: usize) -> bool {
        self.state & (SLOT << i) != 0
    }

    /// A segment of `len` sequence numbers (payload, plus one each for SYN and FIN) starting at
    /// `seq`, sent in this direction at `now`.
    #[inline]
    pub fn on_send(&mut self, seq: u32, len: u32, now: Timestamp) {
        if len == 0 {
            return;
        }
        let end = seq.wrapping_add(len);
        if self.state & INIT != 0 && (!before(self.snd_max, end) || before(seq, self.snd_max)) {
            // Some of it was sent before: a retransmission. Karn: stop timing what it may
            // stand in for, and what an ACK may only answer once it has arrived.
            for i in 0..3 {
                if self.timed(i) && before(seq, self.end[i]) {
                    self.state &= !(SLOT << i);
                }
            }
            if before(self.snd_max, end) {
                self.snd_max = end;
            }
            return;
        }
        if let Some(i) = (0..LATEST).find(|&i| !self.timed(i)) {
            self.t[i] = now;
            self.end[i] = end;
            self.state |= SLOT << i;
        }
        self.t[LATEST] = now;
        self.end[LATEST] = end;
        self.state |= (SLOT << LATEST) | INIT;
        self.snd_max = end;
    }

    /// An ACK for `ack` from the other direction: the send time of the timed segment that ends
    /// exactly at `ack`, if any. Timed segments it reaches past are retired either way.
    #[inline]
    pub fn on_ack(&mut self, ack: u32) -> Option<Timestamp> {
        let mut sent = None;
        for i in 0..3 {
            if self.timed(i) && !before(ack, self.end[i]) {
                if ack == self.end[i] {
                    sent = Some(sent.map_or(self.t[i], |s: Timestamp| s.min(self.t[i])));
                }
                self.state &= !(SLOT << i);
            }
        }
        sent
    }

    /// The connection was reset: nothing sent before can be answered any more.
    #[inline]
    pub fn abort(&mut self) {
        self.state &= INIT;
    }

    /// Whether a segment is being timed.
    pub fn pending(&self) -> bool {
        self.state & (7 * SLOT) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The instant `ns` after the epoch.
    fn t(ns: u64) -> Timestamp {
        Timestamp::from_nanos(ns)
    }

    /// The obviously right version, of Wireshark's `ack_rtt` with Karn's rule: sequence numbers
    /// unwrapped to 64 bits and every segment kept. An ACK's sample is the send time of the new
    /// (never retransmitted) segment that ends exactly at it, if no ACK reached that far before
    /// and no retransmission starting before its end was sent after it.
    #[derive(Default)]
    struct Oracle {
        /// (start, end, time, new) of every segment, in order.
        sent: Vec<(u64, u64, u64, bool)>,
        max_ack: Option<u64>,
    }

    impl Oracle {
        fn send(&mut self, start: u64, len: u64, now: u64) {
            if len == 0 {
                return;
            }
            let end = start + len;
            let new = self.sent.iter().all(|&(_, e, _, _)| e <= start);
            self.sent.push((start, end, now, new));
        }

        /// The sample, and whether its segment is the latest new one sent.
        fn ack(&mut self, ack: u64) -> (Option<u64>, bool) {
            let acked_before = self.max_ack.is_some_and(|m| m >= ack);
            self.max_ack = Some(self.max_ack.map_or(ack, |m| m.max(ack)));
            let Some(i) = self.sent.iter().position(|&(_, e, _, new)| new && e == ack) else {
                return (None, false);
            };
            let (_, end, t, _) = self.sent[i];
            let karn = self.sent[i + 1..].iter().any(|&(s, _, _, new)| !new && s < end);
            if acked_before || karn {
                return (None, false);
            }
            let latest = self.sent[i + 1..].iter().all(|&(_, _, _, new)| !new);
            (Some(t), latest)
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
            2 => (0u32..4000).prop_map(Ev::Ack),
            // ACKs at segment boundaries are what real receivers send.
            2 => Just(Ev::Ack(0)),
        ]
    }

    proptest! {
        /// Every sample is the oracle's for that ACK (never another segment's, never one Karn
        /// forbids), and the ACK of the latest new segment always gives one.
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
                        fast.on_send(isn.wrapping_add(high as u32), len, t(now));
                        slow.send(u64::from(isn) + high, u64::from(len), now);
                        high += u64::from(len);
                    }
                    Ev::Again(back, len) => {
                        let start = high.saturating_sub(u64::from(back));
                        fast.on_send(isn.wrapping_add(start as u32), len, t(now));
                        slow.send(u64::from(isn) + start, u64::from(len), now);
                        high = high.max(start + u64::from(len));
                    }
                    Ev::Ack(behind) => {
                        let a = high.saturating_sub(u64::from(behind));
                        let got = fast.on_ack(isn.wrapping_add(a as u32));
                        let (want, latest) = slow.ack(u64::from(isn) + a);
                        if got.is_some() || latest {
                            prop_assert_eq!(got, want.map(t), "ack {} after {:?}", a, e);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_reset_ends_the_timing() {
        let mut d = SeqDir::default();
        d.on_send(0, 100, t(1));
        d.abort();
        assert!(!d.pending());
        assert_eq!(d.on_ack(100), None);
        d.on_send(100, 100, t(2));
        assert_eq!(d.on_ack(200), Some(t(2)));
    }

    #[test]
    fn handshake_is_timed() {
        let mut d = SeqDir::default();
        d.on_send(1000, 1, t(5)); // SYN
        assert_eq!(d.on_ack(1001), Some(t(5)));
        assert_eq!(d.on_ack(1001), None, "one sample per timed segment");
    }

    #[test]
    fn karn_cancels_on_retransmission() {
        let mut d = SeqDir::default();
        d.on_send(0, 100, t(1));
        d.on_send(100, 100, t(2));
        d.on_send(0, 100, t(3)); // retransmission of the first segment
        assert_eq!(d.on_ack(100), None);
        assert_eq!(d.on_ack(200), None, "an ACK past the repaired hole waited for it");
        d.on_send(200, 100, t(4)); // new data is timed again
        assert_eq!(d.on_ack(300), Some(t(4)));
    }

    #[test]
    fn partial_ack_does_not_end_the_sample() {
        let mut d = SeqDir::default();
        d.on_send(u32::MAX - 10, 100, t(7)); // wraps
        assert_eq!(d.on_ack(u32::MAX), None);
        assert_eq!(d.on_ack(89), Some(t(7)));
    }

    #[test]
    fn a_cumulative_ack_pairs_with_the_segment_it_ends_at() {
        // A request, the sender idle for 20 s, more data, then one ACK for both: the sample
        // is from the second segment, not 20 s long.
        let mut d = SeqDir::default();
        d.on_send(0, 100, t(1_000));
        d.on_send(100, 100, t(21_000));
        assert_eq!(d.on_ack(200), Some(t(21_000)));
        assert!(!d.pending());
    }

    #[test]
    fn acks_for_every_segment_each_give_a_sample() {
        let mut d = SeqDir::default();
        for i in 0..10u32 {
            d.on_send(i * 100, 100, t(u64::from(i) * 10));
            assert_eq!(d.on_ack(i * 100 + 100), Some(t(u64::from(i) * 10)));
        }
    }

    #[test]
    fn delayed_acks_in_bulk_find_their_segments() {
        // Ten segments in flight, ACKed two at a time: the first pair and the burst's end.
        let mut d = SeqDir::default();
        for i in 0..10u32 {
            d.on_send(i * 100, 100, t(u64::from(i)));
        }
        let got: Vec<_> = (1..=5u32).map(|k| d.on_ack(k * 200)).collect();
        assert_eq!(got, [Some(t(1)), None, None, None, Some(t(9))]);
        // Sent while the window slides (two new segments per ACK): one of each two new
        // segments ends where an ACK will, so every round trip gives a sample.
        let mut d = SeqDir::default();
        let mut next = 0u32;
        let mut samples = 0;
        for round in 0..50u64 {
            for _ in 0..2 {
                d.on_send(next, 100, t(round));
                next += 100;
            }
            if next >= 1_000 && d.on_ack(next - 800).is_some() {
                samples += 1;
            }
        }
        assert!(samples >= 8, "{samples} samples in 50 ACKs");
    }
}
