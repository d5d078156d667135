//! Capture time: [`Timestamp`], an instant in nanoseconds since the Unix epoch, and [`Span`], a
//! length of time in nanoseconds.
//!
//! Both are a `u64` underneath (`#[repr(transparent)]`), so they cost what the bare integer
//! costs; the types only keep an instant from being used as a timeout, or a timeout as a
//! moment. Arithmetic on them behaves as it does on `u64`: `+` and `-` overflow as integers do
//! (a panic in debug builds), and the `saturating_` and `checked_` forms say when a bound is
//! meant. An instant minus an instant is a span; an instant plus a span is an instant.
//!
//! Times are capture times (the clock of the frames), never the clock of the machine: the
//! engine's stages advance by the timestamps of the packets they see.

use core::fmt;
use core::ops::{Add, AddAssign, Div, Mul, Sub, SubAssign};

const NANOS_PER_SEC: u64 = 1_000_000_000;

/// An instant of capture time: nanoseconds since the Unix epoch (UTC).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(u64);

/// A length of capture time in nanoseconds: a timeout, a round-trip time, an interval.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span(u64);

impl Timestamp {
    /// The epoch itself (also what an unset time reads as).
    pub const EPOCH: Self = Self(0);
    /// The latest instant there is.
    pub const MAX: Self = Self(u64::MAX);

    /// The instant `ns` nanoseconds after the epoch.
    #[inline(always)]
    pub const fn from_nanos(ns: u64) -> Self {
        Self(ns)
    }

    /// Nanoseconds since the epoch.
    #[inline(always)]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// A timestamp from seconds and nanoseconds past them (saturating at [`Timestamp::MAX`]).
    #[inline]
    pub const fn from_parts(secs: u64, nanos: u32) -> Self {
        Self(secs.saturating_mul(NANOS_PER_SEC).saturating_add(nanos as u64))
    }

    /// Whole seconds since the epoch.
    #[inline]
    pub const fn secs(self) -> u64 {
        self.0 / NANOS_PER_SEC
    }

    /// Nanoseconds past the whole second.
    #[inline]
    pub const fn subsec_nanos(self) -> u32 {
        (self.0 % NANOS_PER_SEC) as u32
    }

    /// Microseconds past the whole second (truncated).
    #[inline]
    pub const fn subsec_micros(self) -> u32 {
        self.subsec_nanos() / 1000
    }

    /// Microseconds since the epoch (truncated).
    #[inline]
    pub const fn as_micros(self) -> u64 {
        self.0 / 1000
    }

    /// The time from `earlier` to this instant, or zero if `earlier` is later.
    #[inline(always)]
    pub const fn since(self, earlier: Timestamp) -> Span {
        Span(self.0.saturating_sub(earlier.0))
    }

    /// The time from `earlier` to this instant, or `None` if `earlier` is later.
    #[inline(always)]
    pub const fn checked_since(self, earlier: Timestamp) -> Option<Span> {
        match self.0.checked_sub(earlier.0) {
            Some(d) => Some(Span(d)),
            None => None,
        }
    }

    /// This instant plus `d`, or [`Timestamp::MAX`] past it.
    #[inline(always)]
    pub const fn saturating_add(self, d: Span) -> Self {
        Self(self.0.saturating_add(d.0))
    }

    /// This instant minus `d`, or the epoch before it.
    #[inline(always)]
    pub const fn saturating_sub(self, d: Span) -> Self {
        Self(self.0.saturating_sub(d.0))
    }

    /// This instant plus `d`, or `None` past [`Timestamp::MAX`].
    #[inline(always)]
    pub const fn checked_add(self, d: Span) -> Option<Self> {
        match self.0.checked_add(d.0) {
            Some(t) => Some(Self(t)),
            None => None,
        }
    }

    /// This instant minus `d`, or `None` before the epoch.
    #[inline(always)]
    pub const fn checked_sub(self, d: Span) -> Option<Self> {
        match self.0.checked_sub(d.0) {
            Some(t) => Some(Self(t)),
            None => None,
        }
    }
}

impl Span {
    /// No time.
    pub const ZERO: Self = Self(0);
    /// The longest span there is (a timeout that never comes).
    pub const MAX: Self = Self(u64::MAX);

    /// A span of `ns` nanoseconds.
    #[inline(always)]
    pub const fn from_nanos(ns: u64) -> Self {
        Self(ns)
    }

    /// A span of `us` microseconds (saturating).
    #[inline]
    pub const fn from_micros(us: u64) -> Self {
        Self(us.saturating_mul(1_000))
    }

    /// A span of `ms` milliseconds (saturating).
    #[inline]
    pub const fn from_millis(ms: u64) -> Self {
        Self(ms.saturating_mul(1_000_000))
    }

    /// A span of `s` seconds (saturating).
    #[inline]
    pub const fn from_secs(s: u64) -> Self {
        Self(s.saturating_mul(NANOS_PER_SEC))
    }

    /// The span in nanoseconds.
    #[inline(always)]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Whole microseconds (truncated).
    #[inline]
    pub const fn as_micros(self) -> u64 {
        self.0 / 1_000
    }

    /// Whole milliseconds (truncated).
    #[inline]
    pub const fn as_millis(self) -> u64 {
        self.0 / 1_000_000
    }

    /// Whole seconds (truncated).
    #[inline]
    pub const fn as_secs(self) -> u64 {
        self.0 / NANOS_PER_SEC
    }

    /// Nanoseconds past the whole second.
    #[inline]
    pub const fn subsec_nanos(self) -> u32 {
        (self.0 % NANOS_PER_SEC) as u32
    }

    /// Seconds as a float.
    #[inline]
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NANOS_PER_SEC as f64
    }

    /// Milliseconds as a float.
    #[inline]
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// No time at all.
    #[inline(always)]
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// The sum, or [`Span::MAX`] past it.
    #[inline(always)]
    pub const fn saturating_add(self, d: Span) -> Self {
        Self(self.0.saturating_add(d.0))
    }

    /// The difference, or zero below it.
    #[inline(always)]
    pub const fn saturating_sub(self, d: Span) -> Self {
        Self(self.0.saturating_sub(d.0))
    }

    /// The sum, or `None` past [`Span::MAX`].
    #[inline(always)]
    pub const fn checked_add(self, d: Span) -> Option<Self> {
        match self.0.checked_add(d.0) {
            Some(t) => Some(Self(t)),
            None => None,
        }
    }

    /// The span `n` times over, or [`Span::MAX`] past it.
    #[inline(always)]
    pub const fn saturating_mul(self, n: u64) -> Self {
        Self(self.0.saturating_mul(n))
    }
}

impl Add<Span> for Timestamp {
    type Output = Timestamp;
    #[inline(always)]
    fn add(self, d: Span) -> Timestamp {
        Timestamp(self.0 + d.0)
    }
}

impl AddAssign<Span> for Timestamp {
    #[inline(always)]
    fn add_assign(&mut self, d: Span) {
        self.0 += d.0;
    }
}

impl Sub<Span> for Timestamp {
    type Output = Timestamp;
    #[inline(always)]
    fn sub(self, d: Span) -> Timestamp {
        Timestamp(self.0 - d.0)
    }
}

impl SubAssign<Span> for Timestamp {
    #[inline(always)]
    fn sub_assign(&mut self, d: Span) {
        self.0 -= d.0;
    }
}

impl Sub for Timestamp {
    type Output = Span;
    #[inline(always)]
    fn sub(self, earlier: Timestamp) -> Span {
        Span(self.0 - earlier.0)
    }
}

impl Add for Span {
    type Output = Span;
    #[inline(always)]
    fn add(self, d: Span) -> Span {
        Span(self.0 + d.0)
    }
}

impl AddAssign for Span {
    #[inline(always)]
    fn add_assign(&mut self, d: Span) {
        self.0 += d.0;
    }
}

impl Sub for Span {
    type Output = Span;
    #[inline(always)]
    fn sub(self, d: Span) -> Span {
        Span(self.0 - d.0)
    }
}

impl SubAssign for Span {
    #[inline(always)]
    fn sub_assign(&mut self, d: Span) {
        self.0 -= d.0;
    }
}

impl Mul<u64> for Span {
    type Output = Span;
    #[inline(always)]
    fn mul(self, n: u64) -> Span {
        Span(self.0 * n)
    }
}

impl Div<u64> for Span {
    type Output = Span;
    #[inline(always)]
    fn div(self, n: u64) -> Span {
        Span(self.0 / n)
    }
}

impl From<core::time::Duration> for Span {
    /// The duration in nanoseconds, or [`Span::MAX`] past it.
    #[inline]
    fn from(d: core::time::Duration) -> Self {
        Self(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

impl From<Span> for core::time::Duration {
    #[inline]
    fn from(d: Span) -> Self {
        core::time::Duration::from_nanos(d.0)
    }
}

impl fmt::Display for Timestamp {
    /// Seconds and nanoseconds since the epoch, as `1700000000.000000001`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:09}", self.secs(), self.subsec_nanos())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_and_arithmetic() {
        let t = Timestamp::from_parts(1_700_000_000, 123_456_789);
        assert_eq!(t.as_nanos(), 1_700_000_000_123_456_789);
        assert_eq!(
            (t.secs(), t.subsec_nanos(), t.subsec_micros()),
            (1_700_000_000, 123_456_789, 123_456)
        );
        assert_eq!(Timestamp::from_parts(u64::MAX, 5), Timestamp::MAX);
        let d = Span::from_millis(1_500);
        assert_eq!((t + d).since(t), d);
        assert_eq!(t.since(t + d), Span::ZERO);
        assert_eq!(t.checked_since(t + d), None);
        assert_eq!((t + d) - t, d);
        assert_eq!(Timestamp::MAX.saturating_add(d), Timestamp::MAX);
        assert_eq!(Timestamp::MAX.checked_add(d), None);
        assert_eq!(Timestamp::EPOCH.saturating_sub(d), Timestamp::EPOCH);
        assert_eq!((d.as_secs(), d.subsec_nanos(), d.as_millis()), (1, 500_000_000, 1_500));
        assert_eq!(Span::from(core::time::Duration::from_secs(u64::MAX)), Span::MAX);
        assert_eq!(core::time::Duration::from(d), core::time::Duration::from_millis(1_500));
        assert_eq!(t.to_string(), "1700000000.123456789");
        assert_eq!(size_of::<Timestamp>(), 8);
        assert_eq!(size_of::<Option<Span>>(), 16);
    }
}
