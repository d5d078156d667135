//! The rules inserted since the compiled base was built: a tuple space (TupleMerge's idea)
//! over persistent hash maps.
//!
//! A rule goes into the tuple named by how many leading bits its two address ranges fix,
//! rounded down to a multiple of eight (so at most 25 tuples: coarse tuples, as TupleMerge
//! relaxes them, keep the number of probes small); within the tuple it is filed under its
//! addresses masked to those bits. A header probes each tuple once with its own addresses
//! masked the same way and tests the few rules filed there, in priority order. Tuples are
//! visited in order of their best priority, and the walk stops once the match in hand beats
//! the next tuple's best.
//!
//! The maps are `imbl`'s hash array mapped tries, so a copy of the whole structure costs as
//! many pointer copies as there are tuples, and an update copies one path of one trie: the
//! updatable classifier publishes a new snapshot per change without copying the delta, however
//! large it has grown while a background compile runs.

use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use crate::rule::{Header, Rule};

/// Address bits a tuple's level counts in.
const STEP: u32 = 8;

/// A hasher for the tuple keys: one multiply-xorshift round over the 64-bit key.
#[derive(Default, Clone, Copy)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        let mut x = self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        x ^= x >> 29;
        x.wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ (x >> 32)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = self.0.rotate_left(32) ^ v;
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }
}

type Build = BuildHasherDefault<KeyHasher>;

/// The rules filed under one key, by priority.
type Bucket = Arc<[(u64, Rule)]>;

#[derive(Clone, Debug)]
struct Tuple {
    /// Leading bits of fields 0 and 1 that key the tuple.
    bits: [u32; 2],
    /// No rule in the tuple has a better (lower) priority; deletions leave it as a bound.
    best: u64,
    /// Rules held.
    len: usize,
    map: imbl::GenericHashMap<u64, Bucket, Build, imbl::shared_ptr::DefaultSharedPtr>,
}

fn mask(bits: u32) -> u32 {
    if bits == 0 { 0 } else { u32::MAX << (32 - bits) }
}

impl Tuple {
    #[inline]
    fn key(&self, a: u32, b: u32) -> u64 {
        u64::from(a & mask(self.bits[0])) << 32 | u64::from(b & mask(self.bits[1]))
    }
}

/// The leading bits a range fixes, rounded down to a multiple of [`STEP`].
fn level(lo: u32, hi: u32) -> u32 {
    (lo ^ hi).leading_zeros() / STEP * STEP
}

/// One bucket of the delta, read-only, for the verifier: a header probes it when its fields
/// 0 and 1, each masked to its leading `bits`, equal the two halves of `key` (field 0 in the
/// high half), and then gets the first rule of `rules` (ascending priority) that matches it.
/// A lookup's answer is the lowest priority any probed bucket gives, or the base's if lower.
#[derive(Clone, Copy, Debug)]
pub struct DeltaBucket<'a> {
    /// Leading bits of fields 0 and 1 the bucket's key holds.
    pub bits: [u32; 2],
    /// The masked field 0 (high half) and field 1 (low half).
    pub key: u64,
    /// The tuple's bound: no rule in the tuple has a lower priority (lookups skip the tuple
    /// once they hold a match at or below it).
    pub bound: u64,
    /// The rules filed here, by ascending priority.
    pub rules: &'a [(u64, Rule)],
}

/// Rules by priority, in tuples; cheap to copy.
#[derive(Clone, Debug, Default)]
pub(crate) struct Delta {
    /// Sorted by `best`.
    tuples: Vec<Tuple>,
    len: usize,
}

impl Delta {
    /// Rules held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Every bucket, for the verifier.
    pub(crate) fn buckets(&self) -> impl Iterator<Item = DeltaBucket<'_>> {
        self.tuples.iter().flat_map(|t| {
            t.map.iter().map(move |(k, b)| DeltaBucket {
                bits: t.bits,
                key: *k,
                bound: t.best,
                rules: b,
            })
        })
    }

    /// Tuples probed by a lookup that finds nothing.
    #[cfg(test)]
    fn tuples(&self) -> usize {
        self.tuples.len()
    }

    /// Files `rule` at priority `prio` (which must not be held already).
    pub(crate) fn insert(&mut self, prio: u64, rule: Rule) {
        let bits = [level(rule.lo[0], rule.hi[0]), level(rule.lo[1], rule.hi[1])];
        let t = match self.tuples.iter().position(|t| t.bits == bits) {
            Some(t) => t,
            None => {
                self.tuples.push(Tuple { bits, best: prio, len: 0, map: Default::default() });
                self.tuples.len() - 1
            }
        };
        let tuple = &mut self.tuples[t];
        let key = tuple.key(rule.lo[0], rule.lo[1]);
        let mut list: Vec<(u64, Rule)> =
            tuple.map.get(&key).map(|b| b.to_vec()).unwrap_or_default();
        let at = list.partition_point(|(p, _)| *p < prio);
        list.insert(at, (prio, rule));
        tuple.map.insert(key, list.into());
        tuple.best = tuple.best.min(prio);
        tuple.len += 1;
        self.len += 1;
        self.tuples.sort_by_key(|t| t.best);
    }

    /// Takes out the rule at `prio`, which was filed as `rule`; false if it is not held.
    pub(crate) fn remove(&mut self, prio: u64, rule: &Rule) -> bool {
        let bits = [level(rule.lo[0], rule.hi[0]), level(rule.lo[1], rule.hi[1])];
        let Some(t) = self.tuples.iter().position(|t| t.bits == bits) else {
            return false;
        };
        let tuple = &mut self.tuples[t];
        let key = tuple.key(rule.lo[0], rule.lo[1]);
        let Some(bucket) = tuple.map.get(&key) else {
            return false;
        };
        let Ok(at) = bucket.binary_search_by_key(&prio, |(p, _)| *p) else {
            return false;
        };
        let mut list = bucket.to_vec();
        list.remove(at);
        if list.is_empty() {
            tuple.map.remove(&key);
        } else {
            tuple.map.insert(key, list.into());
        }
        tuple.len -= 1;
        self.len -= 1;
        if tuple.len == 0 {
            self.tuples.remove(t);
        }
        true
    }

    /// The priority of the first rule matching `h`, if it is better than `best`.
    #[inline]
    pub(crate) fn classify(&self, h: &Header, mut best: Option<u64>) -> Option<u64> {
        for t in &self.tuples {
            if best.is_some_and(|b| t.best >= b) {
                break;
            }
            let Some(bucket) = t.map.get(&t.key(h.0[0], h.0[1])) else {
                continue;
            };
            for (p, r) in bucket.iter() {
                if best.is_some_and(|b| *p >= b) {
                    break;
                }
                if r.matches(h) {
                    best = Some(*p);
                    break;
                }
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_round_down() {
        assert_eq!(level(0, u32::MAX), 0);
        assert_eq!(level(5, 5), 32);
        let (lo, hi) = Rule::prefix(0x0a00_0000, 8);
        assert_eq!(level(lo, hi), 8);
        let (lo, hi) = Rule::prefix(0x0a0b_0c00, 23);
        assert_eq!(level(lo, hi), 16);
        // Not a prefix: 10.0.0.5-10.0.0.9 fixes 28 bits, filed at 24.
        assert_eq!(level(0x0a00_0005, 0x0a00_0009), 24);
    }

    #[test]
    fn insert_lookup_remove() {
        let mut d = Delta::default();
        let (lo, hi) = Rule::prefix(0x0a00_0000, 8);
        let mut wide = Rule::ANY;
        wide.lo[0] = lo;
        wide.hi[0] = hi;
        let mut narrow = wide;
        narrow.lo[1] = 0x0b00_0001;
        narrow.hi[1] = 0x0b00_0001;
        d.insert(50, wide);
        d.insert(10, narrow);
        d.insert(30, Rule::ANY);
        assert_eq!((d.len(), d.tuples()), (3, 3));
        let h = Header([0x0a01_0203, 0x0b00_0001, 1, 2, 6]);
        assert_eq!(d.classify(&h, None), Some(10));
        assert_eq!(d.classify(&h, Some(5)), Some(5));
        assert_eq!(d.classify(&Header([0x0a01_0203, 9, 1, 2, 6]), None), Some(30));
        assert!(d.remove(30, &Rule::ANY));
        assert!(!d.remove(30, &Rule::ANY));
        assert_eq!(d.classify(&Header([0x0a01_0203, 9, 1, 2, 6]), None), Some(50));
        assert_eq!(d.classify(&Header([0x0b01_0203, 9, 1, 2, 6]), None), None);
        let copy = d.clone();
        assert!(d.remove(10, &narrow));
        assert_eq!(d.classify(&h, None), Some(50));
        assert_eq!(copy.classify(&h, None), Some(10), "copies are independent");
        assert_eq!((d.len(), d.tuples()), (1, 1));
    }
}
