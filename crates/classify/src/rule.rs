//! The rule model.

/// Fields of the 5-tuple, in header order: source address, destination address, source port,
/// destination port, protocol.
pub const FIELDS: usize = 5;

/// An IPv4 5-tuple: `[src, dst, sport, dport, proto]`, addresses as host-order integers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Header(pub [u32; FIELDS]);

/// A rule: an inclusive range per field. A packet matches when every field is in range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rule {
    /// Lowest accepted value per field.
    pub lo: [u32; FIELDS],
    /// Highest accepted value per field.
    pub hi: [u32; FIELDS],
}

impl Rule {
    /// A rule matching everything.
    pub const ANY: Rule = Rule { lo: [0; FIELDS], hi: [u32::MAX, u32::MAX, 65535, 65535, 255] };

    /// Whether the header matches.
    #[inline]
    pub fn matches(&self, h: &Header) -> bool {
        (0..FIELDS).all(|i| self.lo[i] <= h.0[i] && h.0[i] <= self.hi[i])
    }

    /// The range a prefix covers (host bits below the prefix are ignored).
    pub fn prefix(addr: u32, len: u8) -> (u32, u32) {
        let mask = if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len.min(32))) };
        (addr & mask, (addr & mask) | !mask)
    }
}
