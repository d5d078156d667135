//! The rule model.

/// Fields of the 5-tuple, in header order: source address, destination address, source port,
/// destination port, protocol.
pub const FIELDS: usize = 5;

/// A header: one value per field. With `N = 5` (the default), an IPv4 5-tuple
/// `[src, dst, sport, dport, proto]`, addresses as host-order integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Header<const N: usize = FIELDS>(pub [u32; N]);

/// A rule: an inclusive range per field. A packet matches when every field is in range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rule<const N: usize = FIELDS> {
    /// Lowest accepted value per field.
    pub lo: [u32; N],
    /// Highest accepted value per field.
    pub hi: [u32; N],
}

impl<const N: usize> Rule<N> {
    /// Whether the header matches.
    #[inline]
    pub fn matches(&self, h: &Header<N>) -> bool {
        (0..N).all(|i| self.lo[i] <= h.0[i] && h.0[i] <= self.hi[i])
    }
}

impl Rule {
    /// A 5-tuple rule matching everything.
    pub const ANY: Rule = Rule { lo: [0; FIELDS], hi: [u32::MAX, u32::MAX, 65535, 65535, 255] };

    /// The range a prefix covers (host bits below the prefix are ignored).
    pub fn prefix(addr: u32, len: u8) -> (u32, u32) {
        let mask = if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len.min(32))) };
        (addr & mask, (addr & mask) | !mask)
    }
}
