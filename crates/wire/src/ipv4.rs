//! IPv4 headers (RFC 791), options included.

use crate::be16;

/// Length of an IPv4 header without options.
pub const MIN_HEADER_LEN: usize = 20;

/// A borrowed view of an IPv4 header. [`Packet::new`] checks that the 20 fixed bytes are
/// present; every accessor then reads only those.
#[derive(Clone, Copy, Debug)]
pub struct Packet<'a> {
    bytes: &'a [u8],
}

impl<'a> Packet<'a> {
    /// A view of `bytes`, or `None` when fewer than [`MIN_HEADER_LEN`] bytes are present.
    #[inline]
    pub fn new(bytes: &'a [u8]) -> Option<Self> {
        (bytes.len() >= MIN_HEADER_LEN).then_some(Self { bytes })
    }

    /// The version nibble (4 for a well-formed packet).
    #[inline]
    pub fn version(&self) -> u8 {
        self.bytes[0] >> 4
    }

    /// Header length in bytes (IHL x 4), options included.
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.bytes[0] & 0x0f) * 4
    }

    /// DSCP and ECN byte.
    #[inline]
    pub fn tos(&self) -> u8 {
        self.bytes[1]
    }

    /// Total length of the datagram, header included, as the header states it.
    #[inline]
    pub fn total_len(&self) -> u16 {
        u16::from_be_bytes([self.bytes[2], self.bytes[3]])
    }

    /// Identification field.
    #[inline]
    pub fn ident(&self) -> u16 {
        u16::from_be_bytes([self.bytes[4], self.bytes[5]])
    }

    /// Don't-fragment flag.
    #[inline]
    pub fn dont_frag(&self) -> bool {
        self.bytes[6] & 0x40 != 0
    }

    /// More-fragments flag.
    #[inline]
    pub fn more_frags(&self) -> bool {
        self.bytes[6] & 0x20 != 0
    }

    /// Fragment offset in bytes.
    #[inline]
    pub fn frag_offset(&self) -> u16 {
        (u16::from_be_bytes([self.bytes[6], self.bytes[7]]) & 0x1fff) * 8
    }

    /// Time to live.
    #[inline]
    pub fn ttl(&self) -> u8 {
        self.bytes[8]
    }

    /// The protocol of the payload.
    #[inline]
    pub fn protocol(&self) -> u8 {
        self.bytes[9]
    }

    /// Header checksum as stored (not verified here).
    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(self.bytes, 10).unwrap_or(0)
    }

    /// Source address.
    #[inline]
    pub fn src(&self) -> [u8; 4] {
        [self.bytes[12], self.bytes[13], self.bytes[14], self.bytes[15]]
    }

    /// Destination address.
    #[inline]
    pub fn dst(&self) -> [u8; 4] {
        [self.bytes[16], self.bytes[17], self.bytes[18], self.bytes[19]]
    }

    /// The option bytes that are present in the buffer (possibly fewer than the header claims).
    #[inline]
    pub fn options(&self) -> &'a [u8] {
        let end = self.header_len().clamp(MIN_HEADER_LEN, self.bytes.len());
        &self.bytes[MIN_HEADER_LEN..end]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // 10.0.0.1 -> 10.0.0.2, TCP, total length 40, DF, TTL 64, one 4-byte NOP option block.
    static PACKET: [u8; 24] = [
        0x46, 0x00, 0x00, 0x28, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0xab, 0xcd, 10, 0, 0, 1, 10, 0,
        0, 2, 1, 1, 1, 0,
    ];

    #[test]
    fn deconstruct() {
        let p = Packet::new(&PACKET).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.header_len(), 24);
        assert_eq!(p.total_len(), 40);
        assert_eq!(p.ident(), 0x1234);
        assert!(p.dont_frag());
        assert!(!p.more_frags());
        assert_eq!(p.frag_offset(), 0);
        assert_eq!(p.ttl(), 64);
        assert_eq!(p.protocol(), 6);
        assert_eq!(p.checksum(), 0xabcd);
        assert_eq!(p.src(), [10, 0, 0, 1]);
        assert_eq!(p.dst(), [10, 0, 0, 2]);
        assert_eq!(p.options(), &[1, 1, 1, 0]);
        assert_eq!(p.tos(), 0);
    }

    #[test]
    fn options_cut_by_buffer() {
        let p = Packet::new(&PACKET[..22]).unwrap();
        assert_eq!(p.options(), &[1, 1]);
        assert!(Packet::new(&PACKET[..19]).is_none());
    }

    #[test]
    fn fragment_fields() {
        let mut b = PACKET;
        b[6] = 0x20 | 0x01;
        b[7] = 0x02;
        let p = Packet::new(&b).unwrap();
        assert!(p.more_frags());
        assert_eq!(p.frag_offset(), 0x102 * 8);
    }
}
