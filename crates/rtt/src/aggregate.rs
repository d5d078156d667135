//! RTT samples aggregated per address prefix over fixed intervals of capture time, as
//! ePPing's `-a` does, with a histogram whose quantile error is bounded.
//!
//! **Intervals** are `[k·S, (k+1)·S)` of capture time (nanoseconds since the epoch), so two
//! runs over the same packets, or several hosts capturing at once, cut their intervals at the
//! same instants. An [`Aggregator`] keeps one interval open; the caller closes it
//! ([`Aggregator::close`]) when a sample at or past its end arrives ([`Aggregator::due`]), when
//! the input ends, or (live) when the clock has passed its end. A sample earlier than the open
//! interval (capture time going backwards, or a live sample arriving after its interval was
//! closed by the clock) is counted in the open interval and in [`AggStats::late`].
//!
//! **Prefixes**: each sample is keyed by one of its packet's addresses masked to `/V4LEN` or
//! `/V6LEN` ([`Prefix`], a fixed-size key). At most `max_prefixes` prefixes get a row per
//! interval; samples of further prefixes go to one `other` row and are counted in
//! [`AggStats::other`]. The prefix map and the bin map are cleared, not freed, between
//! intervals, so a run in a steady state allocates nothing per sample.
//!
//! **Histogram layout** (HDR-style log-linear, nanoseconds): values below 128 ns have a bin of
//! their own (width 1 ns); above, every power of two `[2^e, 2^(e+1))` (e = 7..=36) is cut into
//! 64 equal bins of width `2^(e-6)`, so a bin is at most 1/64 of its lower bound wide; values
//! of 2^37 ns (about 137.4 s) and more share one overflow bin. That is 2,048 bins plus the
//! overflow ([`BINS`]); [`bin`] and [`bin_range`] give the layout. Only the bins an interval's
//! samples fall in are stored.
//!
//! **Quantiles** are nearest-rank: the q-quantile of n samples is the sample of rank
//! `ceil(q·n)` in ascending order (the lower median for q = 0.5). It is estimated by the
//! midpoint of the bin holding that rank (the lower bound for 1 ns bins), clamped to the
//! interval's exact minimum and maximum. The true value and the estimate share a bin, so the
//! estimate is within half a bin of it: at most [`RELATIVE_ERROR`] (1/128, 0.78 %) of the
//! true value, and exact below 128 ns. A rank that falls in the overflow bin reports the
//! maximum. Count, minimum, maximum and mean are exact.

use std::fmt;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr};

use hashbrown::HashMap;
use rampart_wire::{IpFamily, Span, Timestamp};

/// Values below this (ns) have a bin each.
const LINEAR: u64 = 128;
/// Sub-bins per power of two, as a shift (64).
const SUB_BITS: u32 = 6;
/// The smallest value in the overflow bin (2^37 ns, about 137.4 s).
pub const OVERFLOW_FROM: u64 = 1 << 37;
/// Bins in the layout, the overflow bin last.
pub const BINS: usize = 2049;
/// The overflow bin.
pub const OVERFLOW_BIN: u16 = (BINS - 1) as u16;
/// Bound on the relative error of a quantile estimated from the bins (outside the overflow
/// bin): half a bin, at most 1/128 of the true value.
pub const RELATIVE_ERROR: f64 = 1.0 / 128.0;
/// Most prefixes an interval may be asked to hold ([`AggConfig::max_prefixes`]).
pub const MAX_PREFIXES: usize = 1 << 24;

/// The bin holding `v` (ns).
#[inline]
pub fn bin(v: u64) -> u16 {
    if v < LINEAR {
        return v as u16;
    }
    if v >= OVERFLOW_FROM {
        return OVERFLOW_BIN;
    }
    let msb = 63 - v.leading_zeros(); // 7..=36
    let shift = msb - SUB_BITS;
    let sub = (v >> shift) - (1 << SUB_BITS);
    (LINEAR + u64::from(msb - 7) * (1 << SUB_BITS) + sub) as u16
}

/// The values bin `b` holds: its lower bound (inclusive) and upper bound (exclusive; `None`
/// for the overflow bin).
#[inline]
pub fn bin_range(b: u16) -> (u64, Option<u64>) {
    let b = u64::from(b);
    if b < LINEAR {
        return (b, Some(b + 1));
    }
    if b >= OVERFLOW_BIN as u64 {
        return (OVERFLOW_FROM, None);
    }
    let group = (b - LINEAR) >> SUB_BITS;
    let sub = (b - LINEAR) & ((1 << SUB_BITS) - 1);
    let shift = group + 1;
    let lo = ((1 << SUB_BITS) + sub) << shift;
    (lo, Some(lo + (1 << shift)))
}

/// The value reported for a rank in bin `b`: the bin's midpoint (its lower bound when the
/// bin is 1 ns wide, or for the overflow bin).
#[inline]
fn estimate(b: u16) -> u64 {
    match bin_range(b) {
        (lo, Some(hi)) => lo + (hi - lo) / 2,
        (lo, None) => lo,
    }
}

/// The rank (1-based) of the `pct`-th percentile of `n` values, nearest-rank: `ceil(pct·n/100)`,
/// at least 1.
#[inline]
pub fn rank(n: u64, pct: u32) -> u64 {
    ((u128::from(n) * u128::from(pct)).div_ceil(100) as u64).max(1)
}

/// An address prefix: the family, the length and the address with every bit past the
/// length cleared (an IPv4 address in the first four bytes, the rest zero). Ordered by family,
/// length, then address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Prefix {
    /// The address family.
    pub family: IpFamily,
    /// Prefix length in bits (at most 32 for IPv4, 128 for IPv6).
    pub len: u8,
    /// The masked address.
    pub addr: [u8; 16],
}

impl Prefix {
    /// The prefix of length `len` holding the address in a key slot (`addr`, IPv4 in its first
    /// four bytes for IPv4). A length past the family's width is taken as the
    /// full width.
    #[inline]
    pub fn new(family: IpFamily, addr: &[u8; 16], len: u8) -> Self {
        let width: u8 = if family == IpFamily::V4 { 32 } else { 128 };
        let len = len.min(width);
        let mut out = [0u8; 16];
        let full = usize::from(len / 8);
        out[..full].copy_from_slice(&addr[..full]);
        let rem = len % 8;
        if rem > 0 {
            out[full] = addr[full] & (0xffu8 << (8 - rem));
        }
        Self { family, len, addr: out }
    }
}

impl fmt::Display for Prefix {
    /// `10.1.2.0/24`, `2001:db8::/48`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.family == IpFamily::V4 {
            let a = Ipv4Addr::new(self.addr[0], self.addr[1], self.addr[2], self.addr[3]);
            write!(f, "{a}/{}", self.len)
        } else {
            write!(f, "{}/{}", Ipv6Addr::from(self.addr), self.len)
        }
    }
}

/// What an [`Aggregator`] does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AggConfig {
    /// Prefix length for IPv4 addresses (0..=32).
    pub v4_len: u8,
    /// Prefix length for IPv6 addresses (0..=128).
    pub v6_len: u8,
    /// Interval length (at least 1 ns).
    pub interval: Span,
    /// Most prefixes with a row of their own per interval (1..=[`MAX_PREFIXES`]).
    pub max_prefixes: usize,
    /// Upper bounds (ascending) of coarse buckets also counted per row, for histograms
    /// with fixed bounds such as Prometheus' (`v <= bound`, then one bucket above the last);
    /// empty for none.
    pub coarse: Vec<Span>,
}

impl Default for AggConfig {
    /// /24 and /48, 10 s, 65,536 prefixes, no coarse buckets.
    fn default() -> Self {
        Self {
            v4_len: 24,
            v6_len: 48,
            interval: Span::from_secs(10),
            max_prefixes: 65_536,
            coarse: Vec::new(),
        }
    }
}

impl AggConfig {
    /// Checks the lengths, the interval and the cap, saying what is wrong.
    pub fn check(&self) -> Result<(), String> {
        if self.v4_len > 32 {
            return Err(format!("{} is not an IPv4 prefix length (0 to 32)", self.v4_len));
        }
        if self.v6_len > 128 {
            return Err(format!("{} is not an IPv6 prefix length (0 to 128)", self.v6_len));
        }
        if self.interval.is_zero() {
            return Err("the interval must be longer than zero".into());
        }
        if !(1..=MAX_PREFIXES).contains(&self.max_prefixes) {
            return Err(format!("at most 1 to {MAX_PREFIXES} prefixes per interval"));
        }
        if self.coarse.windows(2).any(|w| w[0] >= w[1]) {
            return Err("coarse bucket bounds must ascend".into());
        }
        Ok(())
    }
}

/// One row's running statistics.
#[derive(Clone, Copy, Debug)]
struct Row {
    /// `None` for the `other` row.
    prefix: Option<Prefix>,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Row {
    fn new(prefix: Option<Prefix>) -> Self {
        Self { prefix, count: 0, sum: 0, min: u64::MAX, max: 0 }
    }
}

/// Totals over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AggStats {
    /// Intervals closed with at least one sample.
    pub intervals: u64,
    /// Rows emitted (the `other` rows included).
    pub rows: u64,
    /// Samples aggregated.
    pub samples: u64,
    /// Samples counted in `other` rows, their prefix not fitting the cap.
    pub other: u64,
    /// Intervals that had an `other` row.
    pub overflowed: u64,
    /// Samples earlier than the open interval, counted in it.
    pub late: u64,
}

/// One prefix's statistics over one interval, as [`Aggregator::close`] hands them out.
#[derive(Clone, Copy, Debug)]
pub struct IntervalRow<'a> {
    /// Interval start (a multiple of the interval since the epoch).
    pub start: Timestamp,
    /// Interval end (exclusive).
    pub end: Timestamp,
    /// The prefix, or `None` for the `other` row (prefixes beyond the cap).
    pub prefix: Option<Prefix>,
    /// Samples.
    pub count: u64,
    /// Smallest RTT (exact).
    pub min: Span,
    /// Sum of the RTTs (ns).
    pub sum: u128,
    /// Mean RTT (ns, exact but for the division).
    pub mean: f64,
    /// Median (nearest rank ⌈n/2⌉) from the bins (within [`RELATIVE_ERROR`]).
    pub median: Span,
    /// 95th percentile (nearest rank ⌈0.95·n⌉) from the bins (within [`RELATIVE_ERROR`]).
    pub p95: Span,
    /// Largest RTT (exact).
    pub max: Span,
    /// Non-empty bins, ascending: `(bin, count)`; see [`bin_range`].
    pub bins: &'a [(u16, u64)],
    /// Counts per coarse bucket ([`AggConfig::coarse`], then the one above), or empty.
    pub coarse: &'a [u64],
}

impl IntervalRow<'_> {
    /// The estimate of the sample of nearest rank for `pct` percent (1..=100) from the bins,
    /// clamped to the exact minimum and maximum.
    pub fn quantile(&self, pct: u32) -> Span {
        Span::from_nanos(quantile(
            self.bins,
            self.count,
            pct,
            self.min.as_nanos(),
            self.max.as_nanos(),
        ))
    }
}

fn quantile(bins: &[(u16, u64)], n: u64, pct: u32, min: u64, max: u64) -> u64 {
    let r = rank(n, pct);
    let mut seen = 0;
    for &(b, c) in bins {
        seen += c;
        if seen >= r {
            return if b == OVERFLOW_BIN { max } else { estimate(b).clamp(min, max) };
        }
    }
    max
}

/// Aggregates samples per prefix over the open interval (see the module's documentation).
#[derive(Debug)]
pub struct Aggregator {
    cfg: AggConfig,
    /// Start of the open interval, if any sample opened one.
    start: Option<Timestamp>,
    /// Prefix → row number.
    index: HashMap<Prefix, u32>,
    /// Rows in order of first sample (the `other` row apart).
    rows: Vec<Row>,
    other: Row,
    /// (row << 12 | bin) → count; the other row is row `max_prefixes`.
    bins: HashMap<u64, u64>,
    /// Coarse counts, `coarse.len() + 1` per row, the other row's last.
    coarse: Vec<u64>,
    other_coarse: Vec<u64>,
    /// Reused at close: the bins sorted by key, the row order, one row's bins.
    sorted: Vec<(u64, u64)>,
    order: Vec<u32>,
    row_bins: Vec<(u16, u64)>,
    stats: AggStats,
}

impl Aggregator {
    /// An aggregator with nothing open; `cfg` must pass [`AggConfig::check`].
    pub fn new(cfg: AggConfig) -> Result<Self, String> {
        cfg.check()?;
        let per = cfg.coarse.len() + 1;
        Ok(Self {
            start: None,
            index: HashMap::new(),
            rows: Vec::new(),
            other: Row::new(None),
            bins: HashMap::new(),
            coarse: Vec::new(),
            other_coarse: vec![0; if cfg.coarse.is_empty() { 0 } else { per }],
            sorted: Vec::new(),
            order: Vec::new(),
            row_bins: Vec::new(),
            stats: AggStats::default(),
            cfg,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &AggConfig {
        &self.cfg
    }

    /// Totals so far.
    pub fn stats(&self) -> AggStats {
        self.stats
    }

    /// The start of the interval holding capture time `ts`.
    #[inline]
    pub fn interval_start(&self, ts: Timestamp) -> Timestamp {
        Timestamp::from_nanos(ts.as_nanos() - ts.as_nanos() % self.cfg.interval.as_nanos())
    }

    /// Whether an interval is open and `ts` is at or past its end: close it before adding a
    /// sample of that time.
    #[inline]
    pub fn due(&self, ts: Timestamp) -> bool {
        self.start.is_some_and(|s| ts >= s.saturating_add(self.cfg.interval))
    }

    /// Whether an interval is open.
    pub fn is_open(&self) -> bool {
        self.start.is_some()
    }

    /// Adds a sample of `rtt` taken at capture time `ts` for the address in a key slot
    /// (of `family`). Close a [`due`](Self::due) interval first, or the sample counts in
    /// the open one.
    #[inline]
    pub fn add(&mut self, ts: Timestamp, family: IpFamily, addr: &[u8; 16], rtt: Span) {
        match self.start {
            None => self.start = Some(self.interval_start(ts)),
            Some(s) if ts < s => self.stats.late += 1,
            Some(_) => {}
        }
        self.stats.samples += 1;
        let len = if family == IpFamily::V4 { self.cfg.v4_len } else { self.cfg.v6_len };
        let prefix = Prefix::new(family, addr, len);
        let next = self.rows.len();
        let slot = match self.index.get(&prefix) {
            Some(&i) => Some(i as usize),
            None if next < self.cfg.max_prefixes => {
                self.index.insert(prefix, next as u32);
                self.rows.push(Row::new(Some(prefix)));
                if !self.cfg.coarse.is_empty() {
                    self.coarse.resize(self.coarse.len() + self.cfg.coarse.len() + 1, 0);
                }
                Some(next)
            }
            None => None,
        };
        let (row, key_slot) = match slot {
            Some(i) => (&mut self.rows[i], i as u64),
            None => {
                self.stats.other += 1;
                (&mut self.other, self.cfg.max_prefixes as u64)
            }
        };
        let rtt = rtt.as_nanos();
        row.count += 1;
        row.sum += u128::from(rtt);
        row.min = row.min.min(rtt);
        row.max = row.max.max(rtt);
        *self.bins.entry((key_slot << 12) | u64::from(bin(rtt))).or_insert(0) += 1;
        if !self.cfg.coarse.is_empty() {
            let c = self.cfg.coarse.partition_point(|b| b.as_nanos() < rtt);
            match slot {
                Some(i) => self.coarse[i * (self.cfg.coarse.len() + 1) + c] += 1,
                None => self.other_coarse[c] += 1,
            }
        }
    }

    /// Closes the open interval (if any): hands each row to `emit`, prefixes in order
    /// (IPv4 before IPv6, then by address), the `other` row last, and forgets them. An error
    /// from `emit` stops the rows and is returned; the interval is forgotten all the same.
    pub fn close(
        &mut self,
        mut emit: impl FnMut(&IntervalRow<'_>) -> io::Result<()>,
    ) -> io::Result<()> {
        let Some(start) = self.start.take() else { return Ok(()) };
        let end = start.saturating_add(self.cfg.interval);
        self.sorted.clear();
        self.sorted.extend(self.bins.drain());
        self.sorted.sort_unstable_by_key(|e| e.0);
        self.order.clear();
        self.order.extend(0..self.rows.len() as u32);
        let rows = &self.rows;
        self.order.sort_unstable_by(|a, b| rows[*a as usize].prefix.cmp(&rows[*b as usize].prefix));
        let per = self.cfg.coarse.len() + 1;
        let has_coarse = !self.cfg.coarse.is_empty();
        let other_slot = self.cfg.max_prefixes as u32;
        let mut result = Ok(());
        let slots = self.order.iter().copied().chain((self.other.count > 0).then_some(other_slot));
        for slot in slots {
            let (row, coarse) = if slot == other_slot {
                (&self.other, &self.other_coarse[..])
            } else {
                let i = slot as usize;
                let c = if has_coarse { &self.coarse[i * per..(i + 1) * per] } else { &[][..] };
                (&self.rows[i], c)
            };
            let lo = self.sorted.partition_point(|e| (e.0 >> 12) < u64::from(slot));
            let hi = self.sorted.partition_point(|e| (e.0 >> 12) <= u64::from(slot));
            self.row_bins.clear();
            self.row_bins.extend(self.sorted[lo..hi].iter().map(|&(k, c)| ((k & 0xfff) as u16, c)));
            let bins = &self.row_bins[..];
            let r = IntervalRow {
                start,
                end,
                prefix: row.prefix,
                count: row.count,
                min: Span::from_nanos(row.min),
                sum: row.sum,
                mean: row.sum as f64 / row.count as f64,
                median: Span::from_nanos(quantile(bins, row.count, 50, row.min, row.max)),
                p95: Span::from_nanos(quantile(bins, row.count, 95, row.min, row.max)),
                max: Span::from_nanos(row.max),
                bins,
                coarse,
            };
            self.stats.rows += 1;
            if let Err(e) = emit(&r) {
                result = Err(e);
                break;
            }
        }
        self.stats.intervals += 1;
        if self.other.count > 0 {
            self.stats.overflowed += 1;
        }
        self.index.clear();
        self.rows.clear();
        self.coarse.clear();
        self.other = Row::new(None);
        self.other_coarse.iter_mut().for_each(|c| *c = 0);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v4(a: [u8; 4]) -> [u8; 16] {
        let mut s = [0; 16];
        s[..4].copy_from_slice(&a);
        s
    }

    fn v6(s: &str) -> [u8; 16] {
        s.parse::<Ipv6Addr>().unwrap().octets()
    }

    #[test]
    fn prefixes_mask_v4() {
        let a = v4([10, 1, 2, 3]);
        assert_eq!(Prefix::new(IpFamily::V4, &a, 24).to_string(), "10.1.2.0/24");
        assert_eq!(Prefix::new(IpFamily::V4, &a, 32).to_string(), "10.1.2.3/32");
        assert_eq!(Prefix::new(IpFamily::V4, &a, 0).to_string(), "0.0.0.0/0");
        assert_eq!(Prefix::new(IpFamily::V4, &a, 12).to_string(), "10.0.0.0/12");
        assert_eq!(
            Prefix::new(IpFamily::V4, &v4([10, 255, 2, 3]), 12).to_string(),
            "10.240.0.0/12"
        );
        assert_eq!(
            Prefix::new(IpFamily::V4, &v4([192, 168, 77, 200]), 25).to_string(),
            "192.168.77.128/25"
        );
        // The bytes past an IPv4 address never count.
        let mut junk = a;
        junk[4..].fill(0xff);
        assert_eq!(Prefix::new(IpFamily::V4, &junk, 32), Prefix::new(IpFamily::V4, &a, 32));
        assert_eq!(Prefix::new(IpFamily::V4, &a, 40).len, 32);
    }

    #[test]
    fn prefixes_mask_v6() {
        let a = v6("2001:db8:aaaa:bbbb::1");
        assert_eq!(Prefix::new(IpFamily::V6, &a, 48).to_string(), "2001:db8:aaaa::/48");
        assert_eq!(Prefix::new(IpFamily::V6, &a, 128).to_string(), "2001:db8:aaaa:bbbb::1/128");
        assert_eq!(Prefix::new(IpFamily::V6, &a, 0).to_string(), "::/0");
        assert_eq!(Prefix::new(IpFamily::V6, &a, 36).to_string(), "2001:db8:a000::/36");
        assert_eq!(Prefix::new(IpFamily::V6, &v6("fd77::ffff"), 127).to_string(), "fd77::fffe/127");
        assert_eq!(Prefix::new(IpFamily::V6, &a, 200).len, 128);
        // Equal prefixes of different addresses are one key.
        assert_eq!(
            Prefix::new(IpFamily::V6, &a, 48),
            Prefix::new(IpFamily::V6, &v6("2001:db8:aaaa:1::9"), 48)
        );
        assert_ne!(Prefix::new(IpFamily::V6, &a, 48), Prefix::new(IpFamily::V4, &a, 32));
    }

    #[test]
    fn the_layout_is_contiguous_and_its_bins_narrow() {
        let mut expected_lo = 0;
        for b in 0..OVERFLOW_BIN {
            let (lo, hi) = bin_range(b);
            let hi = hi.unwrap();
            assert_eq!(lo, expected_lo, "bin {b}");
            assert_eq!(bin(lo), b);
            assert_eq!(bin(hi - 1), b);
            assert!(hi - lo == 1 || (hi - lo) * 64 <= lo, "bin {b}: {lo}..{hi}");
            expected_lo = hi;
        }
        assert_eq!(expected_lo, OVERFLOW_FROM);
        assert_eq!(bin(OVERFLOW_FROM), OVERFLOW_BIN);
        assert_eq!(bin(u64::MAX), OVERFLOW_BIN);
        assert_eq!(bin_range(OVERFLOW_BIN), (OVERFLOW_FROM, None));
        assert_eq!(rank(1, 50), 1);
        assert_eq!(rank(2, 50), 1);
        assert_eq!(rank(3, 50), 2);
        assert_eq!(rank(20, 95), 19);
        assert_eq!(rank(21, 95), 20);
        assert_eq!(rank(0, 95), 1);
    }

    fn cfg(interval_ns: u64) -> AggConfig {
        AggConfig { interval: Span::from_nanos(interval_ns), ..AggConfig::default() }
    }

    /// The instant `ns` after the epoch.
    fn ts(ns: u64) -> Timestamp {
        Timestamp::from_nanos(ns)
    }

    /// Rows of one close, as owned values in ns: (prefix, count, min, median, p95, max, bins,
    /// start, end).
    type Owned = (Option<Prefix>, u64, u64, u64, u64, u64, Vec<(u16, u64)>, u64, u64);

    fn close(a: &mut Aggregator) -> Vec<Owned> {
        let mut out = Vec::new();
        a.close(|r| {
            out.push((
                r.prefix,
                r.count,
                r.min.as_nanos(),
                r.median.as_nanos(),
                r.p95.as_nanos(),
                r.max.as_nanos(),
                r.bins.to_vec(),
                r.start.as_nanos(),
                r.end.as_nanos(),
            ));
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn intervals_align_to_multiples_of_their_length() {
        let s = 10_000_000_000u64;
        let mut a = Aggregator::new(cfg(s)).unwrap();
        let t0 = 1_795_392_314_233_537_000u64;
        assert_eq!(a.interval_start(ts(t0)), ts(1_795_392_310_000_000_000));
        assert!(!a.due(ts(t0)));
        a.add(ts(t0), IpFamily::V4, &v4([10, 77, 0, 2]), Span::from_nanos(5_000_000));
        assert!(!a.due(ts(1_795_392_319_999_999_999)));
        assert!(a.due(ts(1_795_392_320_000_000_000)));
        let rows = close(&mut a);
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].7, rows[0].8), (1_795_392_310_000_000_000, 1_795_392_320_000_000_000));
        assert!(!a.is_open());
        // A fractional interval: 250 ms.
        let mut a = Aggregator::new(cfg(250_000_000)).unwrap();
        a.add(ts(1_000_000_000_600_000_000), IpFamily::V4, &v4([1, 2, 3, 4]), Span::from_nanos(1));
        let rows = close(&mut a);
        assert_eq!((rows[0].7, rows[0].8), (1_000_000_000_500_000_000, 1_000_000_000_750_000_000));
        // A sample earlier than the open interval counts in it, as late.
        a.add(ts(1_000_000_001_000_000_000), IpFamily::V4, &v4([1, 2, 3, 4]), Span::from_nanos(1));
        a.add(ts(1_000_000_000_100_000_000), IpFamily::V4, &v4([1, 2, 3, 4]), Span::from_nanos(1));
        assert_eq!(a.stats().late, 1);
        assert_eq!(close(&mut a)[0].1, 2);
    }

    #[test]
    fn rows_come_sorted_with_other_last_and_the_cap_holds() {
        let c = AggConfig { max_prefixes: 2, ..cfg(1_000_000_000) };
        let mut a = Aggregator::new(c).unwrap();
        a.add(ts(5), IpFamily::V6, &v6("2001:db8:1::1"), Span::from_nanos(300));
        a.add(ts(5), IpFamily::V4, &v4([10, 0, 9, 1]), Span::from_nanos(100));
        a.add(ts(5), IpFamily::V4, &v4([10, 0, 1, 1]), Span::from_nanos(200)); // third prefix: other
        a.add(ts(5), IpFamily::V4, &v4([10, 0, 9, 7]), Span::from_nanos(50));
        a.add(ts(5), IpFamily::V6, &v6("2001:db8:2::1"), Span::from_nanos(400)); // other
        let rows = close(&mut a);
        let names: Vec<String> =
            rows.iter().map(|r| r.0.map_or("other".into(), |p| p.to_string())).collect();
        assert_eq!(names, ["10.0.9.0/24", "2001:db8:1::/48", "other"]);
        assert_eq!((rows[0].1, rows[0].2, rows[0].5), (2, 50, 100));
        assert_eq!((rows[2].1, rows[2].2, rows[2].5), (2, 200, 400));
        assert_eq!(rows[2].6.iter().map(|b| b.1).sum::<u64>(), 2);
        let st = a.stats();
        assert_eq!((st.other, st.overflowed, st.rows, st.intervals, st.samples), (2, 1, 3, 1, 5));
        // The next interval starts empty: the first two prefixes get rows again.
        a.add(ts(2_000_000_000), IpFamily::V4, &v4([10, 0, 1, 1]), Span::from_nanos(1));
        let rows = close(&mut a);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].0.unwrap().to_string(), "10.0.1.0/24");
    }

    #[test]
    fn coarse_buckets_count_le_bounds() {
        let c = AggConfig {
            coarse: vec![Span::from_nanos(100), Span::from_nanos(1000)],
            ..cfg(1_000_000_000)
        };
        let mut a = Aggregator::new(c).unwrap();
        for v in [99, 100, 101, 1000, 5000] {
            a.add(ts(1), IpFamily::V4, &v4([1, 1, 1, 1]), Span::from_nanos(v));
        }
        let mut got = Vec::new();
        a.close(|r| {
            got = r.coarse.to_vec();
            Ok(())
        })
        .unwrap();
        assert_eq!(got, [2, 2, 1]);
    }

    #[test]
    fn bad_configurations_are_refused() {
        for (c, msg) in [
            (AggConfig { v4_len: 33, ..AggConfig::default() }, "33 is not an IPv4 prefix length"),
            (AggConfig { v6_len: 129, ..AggConfig::default() }, "129 is not an IPv6 prefix length"),
            (AggConfig { interval: Span::ZERO, ..AggConfig::default() }, "longer than zero"),
            (AggConfig { max_prefixes: 0, ..AggConfig::default() }, "prefixes per interval"),
        ] {
            let e = Aggregator::new(c).unwrap_err();
            assert!(e.contains(msg), "{e}");
        }
    }

    /// The exact nearest-rank quantile of sorted values.
    fn exact(sorted: &[u64], pct: u32) -> u64 {
        sorted[rank(sorted.len() as u64, pct) as usize - 1]
    }

    fn within(est: u64, truth: u64) -> bool {
        (est as f64 - truth as f64).abs() <= truth as f64 * RELATIVE_ERROR
    }

    proptest! {
        #[test]
        fn quantiles_are_within_the_bound(
            values in prop::collection::vec(
                prop_oneof![0u64..200, 0u64..5_000_000, 1_000_000u64..200_000_000, 0u64..100_000_000_000],
                1..400,
            ),
            split in 0usize..400,
        ) {
            let mut a = Aggregator::new(cfg(1_000_000_000_000)).unwrap();
            // Two prefixes: values before `split` in one, the rest in the other.
            let split = split.min(values.len());
            for (i, v) in values.iter().enumerate() {
                let addr = if i < split { v4([10, 0, 0, 1]) } else { v4([10, 0, 1, 1]) };
                a.add(ts(7), IpFamily::V4, &addr, Span::from_nanos(*v));
            }
            let rows = close(&mut a);
            let parts = [values[..split].to_vec(), values[split..].to_vec()];
            let mut k = 0;
            for mut part in parts {
                if part.is_empty() {
                    continue;
                }
                part.sort_unstable();
                let r = &rows[k];
                k += 1;
                prop_assert_eq!(r.1, part.len() as u64);
                prop_assert_eq!(r.2, part[0]);
                prop_assert_eq!(r.5, *part.last().unwrap());
                prop_assert_eq!(r.6.iter().map(|b| b.1).sum::<u64>(), part.len() as u64);
                prop_assert!(r.6.windows(2).all(|w| w[0].0 < w[1].0));
                for (pct, est) in [(50, r.3), (95, r.4)] {
                    let truth = exact(&part, pct);
                    prop_assert!(within(est, truth), "p{} {} vs exact {}", pct, est, truth);
                }
            }
            prop_assert_eq!(k, rows.len());
        }

        #[test]
        fn every_value_lies_in_its_bin(v in any::<u64>()) {
            let (lo, hi) = bin_range(bin(v));
            prop_assert!(lo <= v && hi.is_none_or(|h| v < h));
        }
    }
}
