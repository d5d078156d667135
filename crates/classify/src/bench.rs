//! The measurements `rampart classify --bench` reports: lookup time per header over repeated
//! passes, and the time for an update of a [`Classifier`] to become visible over a stream of
//! inserts and deletes (optionally with a check of the classifier after each, such as a
//! proof that it still returns the first matching rule).

use std::time::Instant;

use crate::{Classifier, Header, Rule};

/// Headers the uniform-traffic benchmarks classify: `n` 5-tuples with uniformly random
/// addresses and ports and protocol TCP, UDP, ICMP or a random byte, each with probability
/// 1/4 (xorshift64 from a fixed seed; `compare/acl_compare.c` draws the same sequence for
/// DPDK's `rte_acl`). Such traffic (a scan, a flood, the open Internet) matches late or only
/// the default rule, where a trace generated close to the rules matches early.
pub fn uniform_headers(n: usize) -> Vec<Header> {
    let mut next = xorshift64(0x9e37_79b9_7f4a_7c15);
    (0..n)
        .map(|_| {
            let src = next() as u32;
            let dst = next() as u32;
            let sport = next() as u32 & 0xffff;
            let dport = next() as u32 & 0xffff;
            let proto = match next() % 4 {
                0 => 6,
                1 => 17,
                2 => 1,
                _ => next() as u32 & 0xff,
            };
            Header([src, dst, sport, dport, proto])
        })
        .collect()
}

/// Adversarial headers for a rule set: `n` 5-tuples each drawn inside a random rule's ranges
/// and then moved just outside them in one field (one past its high end, or one below its low
/// end when the high end is the field's last value; a field the rule covers entirely is not
/// chosen). Such a header lands where the rules are dense, goes down the deep parts of a
/// decision tree and scans its leaves, yet misses the rule it was drawn from and matches a
/// later one or none: the worst of both a trace (headers near the rules) and uniform traffic
/// (late matches). Fields end where [`Rule::ANY`]'s do (addresses, ports up to 65535,
/// protocol up to 255); xorshift64 from a fixed seed, so every run and tool sees the same
/// headers. With no rules there is nothing to miss: uniform headers.
pub fn near_miss_headers(rules: &[Rule], n: usize) -> Vec<Header> {
    let max = Rule::ANY.hi;
    let mut next = xorshift64(0x2545_f491_4f6c_dd1d);
    if rules.is_empty() {
        return uniform_headers(n);
    }
    (0..n)
        .map(|_| {
            let r = &rules[(next() % rules.len() as u64) as usize];
            let mut h = [0u32; 5];
            for d in 0..5 {
                let (lo, hi) = (r.lo[d], r.hi[d].min(max[d]));
                let span = u64::from(hi.saturating_sub(lo)) + 1;
                h[d] = lo + (next() % span) as u32;
            }
            let narrow = |d: &usize| r.lo[*d] > 0 || r.hi[*d] < max[*d];
            let count = (0..5).filter(narrow).count() as u64;
            if count > 0 {
                let d = (0..5).filter(narrow).nth((next() % count) as usize).expect("counted");
                h[d] = if r.hi[d] < max[d] { r.hi[d] + 1 } else { r.lo[d] - 1 };
            }
            Header(h)
        })
        .collect()
}

/// Marsaglia's xorshift64 from `seed` (not zero): the fixed sequences every benchmark here
/// draws from, so each run and each tool sees the same headers and updates.
fn xorshift64(mut s: u64) -> impl FnMut() -> u64 {
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}

/// Times `pass` (one lookup per header of `n`): one warm-up pass, then at least 7 passes and
/// at least 200 ms of them; returns the ns per header of each, sorted (take the median).
pub fn passes(n: usize, mut pass: impl FnMut()) -> Vec<f64> {
    pass();
    let started = Instant::now();
    let mut times = Vec::new();
    while times.len() < 7 || started.elapsed().as_millis() < 200 {
        let t = Instant::now();
        pass();
        times.push(t.elapsed().as_nanos() as f64 / n.max(1) as f64);
    }
    times.sort_by(f64::total_cmp);
    times
}

/// A check of the classifier after each update of [`updates`].
pub trait UpdateCheck {
    /// Why a check failed.
    type Error;

    /// Called once on the new classifier, before any check (to hook into its compiles).
    fn attach(&mut self, c: &mut Classifier);

    /// Checks the classifier; `Ok(true)` when the check was a whole one (after a compile),
    /// `Ok(false)` when it covered the change only.
    fn check(&mut self, c: &Classifier) -> Result<bool, Self::Error>;
}

/// Check times over an update stream.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CheckTimes {
    /// Mean check time per update, in microseconds.
    pub per_update_us: f64,
    /// Whole checks (after compiles).
    pub full: usize,
    /// Mean time of a whole check, in milliseconds.
    pub full_ms: f64,
    /// Mean time of the other checks (by the change alone), in microseconds.
    pub region_us: f64,
}

/// What [`updates`] measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UpdateTimes {
    /// Mean time for one insert or delete to become visible, in microseconds.
    pub per_update_us: f64,
    /// The median update's time, in microseconds.
    pub median_us: f64,
    /// The 99th percentile of the updates' times, in microseconds. (The mean can also carry a
    /// rare update that lost the CPU for a scheduler tick, 4 ms here: one adds 1 µs to the mean
    /// of 4,000.)
    pub p99_us: f64,
    /// With a check: its times.
    pub checks: Option<CheckTimes>,
}

/// Mean time for one update to become visible, over a stream of 4,000 that alternate inserts
/// (the set's rules again, at new priorities between the old ones) and deletes (of random
/// rules, old or new), so background compiles start and are installed as they would in use.
/// With `check`, the classifier is checked after each update (and once as built, which is
/// not counted) and the check times come back too.
pub fn updates<C: UpdateCheck>(
    rules: &[Rule],
    mut check: Option<&mut C>,
) -> Result<UpdateTimes, C::Error> {
    struct Checking {
        time: f64,
        full: usize,
        full_time: f64,
    }
    let timed =
        |check: &mut Option<&mut C>, p: &mut Checking, c: &Classifier| -> Result<(), C::Error> {
            let Some(k) = check.as_deref_mut() else { return Ok(()) };
            let t = Instant::now();
            let full = k.check(c)?;
            let took = t.elapsed().as_secs_f64();
            p.time += took;
            p.full += usize::from(full);
            if full {
                p.full_time += took;
            }
            Ok(())
        };
    let mut c = Classifier::new(rules);
    let mut p = Checking { time: 0.0, full: 0, full_time: 0.0 };
    if let Some(k) = check.as_deref_mut() {
        k.attach(&mut c);
    }
    timed(&mut check, &mut p, &c)?;
    let (first_check, first_full) = (p.time, p.full);
    p.full_time = 0.0;
    let mut present: Vec<u64> = (0..rules.len()).map(Classifier::initial_priority).collect();
    let mut next = xorshift64(0x9e37_79b9_7f4a_7c15);
    let n = 4000;
    let (mut total, mut done) = (0.0, 0u32);
    let mut each: Vec<f64> = Vec::with_capacity(n);
    for k in 0..n {
        let x = next();
        if k % 2 == 0 || present.is_empty() {
            let i = x as usize % rules.len().max(1);
            let prio = Classifier::initial_priority(i) + 1 + (x >> 44);
            let rule = rules.get((x >> 20) as usize % rules.len().max(1)).copied();
            let t = Instant::now();
            let ok = c.insert(prio, rule.unwrap_or(Rule::ANY)).is_ok();
            let took = t.elapsed().as_secs_f64();
            total += took;
            if ok {
                present.push(prio);
                done += 1;
                each.push(took);
                timed(&mut check, &mut p, &c)?;
            }
        } else {
            let prio = present.swap_remove(x as usize % present.len());
            let t = Instant::now();
            c.delete(prio).expect("present");
            let took = t.elapsed().as_secs_f64();
            total += took;
            each.push(took);
            done += 1;
            timed(&mut check, &mut p, &c)?;
        }
    }
    let per = |t: f64| t * 1e6 / f64::from(done.max(1));
    // The first check (of the set as built) is not an update's.
    let fulls = p.full - first_full;
    let regions = (done as usize).saturating_sub(fulls).max(1);
    let checks = check.is_some().then(|| CheckTimes {
        per_update_us: per(p.time - first_check),
        full: fulls,
        full_ms: p.full_time * 1e3 / fulls.max(1) as f64,
        region_us: (p.time - first_check - p.full_time) * 1e6 / regions as f64,
    });
    each.sort_by(f64::total_cmp);
    let at = |q: f64| each.get(((each.len() as f64 - 1.0) * q) as usize).map_or(0.0, |t| t * 1e6);
    Ok(UpdateTimes { per_update_us: per(total), median_us: at(0.5), p99_us: at(0.99), checks })
}

/// The check that checks nothing, for [`updates`] without one.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoCheck;

impl UpdateCheck for NoCheck {
    type Error = std::convert::Infallible;

    fn attach(&mut self, _: &mut Classifier) {}

    fn check(&mut self, _: &Classifier) -> Result<bool, Self::Error> {
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header drawn from a rule misses that rule (one field moved just outside it), stays
    /// inside the fields' domains, and is the same from run to run.
    #[test]
    fn near_misses_miss_their_rule_by_one() {
        let rules = [
            Rule { lo: [10, 20, 80, 1024, 6], hi: [19, 29, 80, 2047, 6] },
            Rule { lo: [0, 0, 0, 0, 0], hi: [u32::MAX, u32::MAX, 0xffff, 0xffff, 0] },
            Rule { lo: [5, 0, 0, 0, 0], hi: [u32::MAX, u32::MAX, 0xffff, 0xffff, 0xff] },
        ];
        for (i, r) in rules.iter().enumerate() {
            let hs = near_miss_headers(std::slice::from_ref(r), 500);
            assert_eq!(hs, near_miss_headers(std::slice::from_ref(r), 500));
            for h in &hs {
                assert!(!r.matches(h), "rule {i}: {h:?}");
                assert!(h.0[2] <= 0xffff && h.0[3] <= 0xffff && h.0[4] <= 0xff, "{h:?}");
                // One field off by one, the others inside.
                let off: Vec<usize> =
                    (0..5).filter(|&d| h.0[d] < r.lo[d] || h.0[d] > r.hi[d]).collect();
                assert_eq!(off.len(), 1, "{h:?}");
                let d = off[0];
                assert!(h.0[d] == r.hi[d].wrapping_add(1) || h.0[d] == r.lo[d] - 1, "{h:?}");
            }
        }
        // A rule covering everything has no field to miss in.
        let all = Rule { lo: [0; 5], hi: [u32::MAX, u32::MAX, 0xffff, 0xffff, 0xff] };
        assert!(near_miss_headers(&[all], 100).iter().all(|h| all.matches(h)));
    }
}
