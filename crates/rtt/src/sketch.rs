//! A small quantile sketch for per-flow RTT medians.
//!
//! Values (nanoseconds) fall into logarithmic buckets: 16 per power of two, so a bucket spans
//! at most 1/16 of its lower bound and reporting its midpoint is within 1/32 (about 3 %) of any
//! value in it. Values below 16 ns are exact. Only the buckets a flow actually uses are stored,
//! as a sorted list of (bucket, count); a flow's RTTs cluster, so this stays a handful of entries
//! (at most 16 × 64 in theory).

/// Sub-buckets per power of two (as a shift).
const SUB_BITS: u32 = 4;

/// The bucket holding `v`.
#[inline]
pub fn bucket(v: u64) -> u16 {
    if v < (1 << SUB_BITS) {
        return v as u16;
    }
    let msb = 63 - v.leading_zeros();
    let sub = (v >> (msb - SUB_BITS)) & ((1 << SUB_BITS) - 1);
    (((msb - SUB_BITS + 1) << SUB_BITS) as u64 | sub) as u16
}

/// The smallest value in bucket `b`, and the width of the bucket.
#[inline]
pub fn bucket_range(b: u16) -> (u64, u64) {
    let b = u64::from(b);
    if b < (1 << SUB_BITS) {
        return (b, 1);
    }
    let octave = (b >> SUB_BITS) - 1;
    let sub = b & ((1 << SUB_BITS) - 1);
    (((1 << SUB_BITS) | sub) << octave, 1 << octave)
}

/// Counts per logarithmic bucket. While every value falls in one bucket (a flow's first
/// sample, or a steady path), the bucket is kept in place and nothing is allocated; the list
/// is made when a second bucket is needed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sketch {
    /// The one bucket in use while `buckets` is empty and `count` is not zero.
    one: (u16, u32),
    buckets: Vec<(u16, u32)>,
    count: u64,
}

impl Sketch {
    /// Adds one value.
    pub fn insert(&mut self, v: u64) {
        let b = bucket(v);
        self.count += 1;
        if self.buckets.is_empty() {
            if self.count == 1 {
                self.one = (b, 1);
                return;
            }
            if self.one.0 == b {
                self.one.1 = self.one.1.saturating_add(1);
                return;
            }
            self.buckets.push(self.one);
        }
        match self.buckets.binary_search_by_key(&b, |e| e.0) {
            Ok(i) => self.buckets[i].1 = self.buckets[i].1.saturating_add(1),
            Err(i) => self.buckets.insert(i, (b, 1)),
        }
    }

    /// The buckets in use, in order, with their counts.
    fn entries(&self) -> &[(u16, u32)] {
        match (self.buckets.is_empty(), self.count) {
            (_, 0) => &[],
            (true, _) => std::slice::from_ref(&self.one),
            (false, _) => &self.buckets,
        }
    }

    /// Values added.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The value of rank `ceil(q × n)` (q in 0..=1; the lower median for q = 0.5), as the
    /// midpoint of its bucket; `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for &(b, n) in self.entries() {
            seen += u64::from(n);
            if seen >= rank {
                let (lo, width) = bucket_range(b);
                return Some(lo + width / 2);
            }
        }
        None
    }

    /// Buckets in use.
    pub fn buckets(&self) -> usize {
        self.entries().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn one_bucket_needs_no_list() {
        let mut s = Sketch::default();
        assert_eq!((s.buckets(), s.quantile(0.5)), (0, None));
        for _ in 0..3 {
            s.insert(1_000_000);
        }
        assert!(s.buckets.capacity() == 0 && s.buckets() == 1 && s.count() == 3);
        let (lo, w) = bucket_range(bucket(1_000_000));
        assert_eq!(s.quantile(0.5), Some(lo + w / 2));
        s.insert(5_000_000);
        assert_eq!((s.buckets(), s.count()), (2, 4));
        assert_eq!(s.quantile(0.0), Some(lo + w / 2));
    }

    #[test]
    fn buckets_cover_every_value_once() {
        let mut prev_end = 0;
        for b in 0..=bucket(u64::MAX / 2) {
            let (lo, w) = bucket_range(b);
            assert_eq!(lo, prev_end, "bucket {b} starts where the previous one ended");
            assert_eq!(bucket(lo), b);
            assert_eq!(bucket(lo + w - 1), b);
            prev_end = lo + w;
        }
    }

    proptest! {
        #[test]
        fn median_within_three_percent(mut v in prop::collection::vec(1u64..20_000_000_000, 1..300)) {
            let mut s = Sketch::default();
            for &x in &v {
                s.insert(x);
            }
            v.sort_unstable();
            let exact = v[(v.len() - 1) / 2];
            let got = s.quantile(0.5).unwrap();
            let err = (got as f64 - exact as f64).abs() / exact as f64;
            prop_assert!(err <= 1.0 / 32.0 + 1e-9, "exact {exact} got {got}");
            prop_assert_eq!(s.count(), v.len() as u64);
            // The counts per bucket are those of the values, whether kept in place or listed.
            let mut by: Vec<(u16, u32)> = Vec::new();
            for &x in &v {
                match by.last_mut() {
                    Some(last) if last.0 == bucket(x) => last.1 += 1,
                    _ => by.push((bucket(x), 1)),
                }
            }
            prop_assert_eq!(s.entries(), &by[..]);
            prop_assert_eq!(s.buckets(), by.len());
        }
    }
}
