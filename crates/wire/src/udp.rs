//! UDP headers (RFC 768). DCCP, SCTP and UDP-Lite keep their ports in the same place.

/// Length of the UDP header.
pub const HEADER_LEN: usize = 8;

/// A borrowed view of a UDP header; [`Header::new`] checks the 8 bytes are present.
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    bytes: &'a [u8],
}

impl<'a> Header<'a> {
    /// A view of `bytes`, or `None` when fewer than [`HEADER_LEN`] bytes are present.
    #[inline]
    pub fn new(bytes: &'a [u8]) -> Option<Self> {
        (bytes.len() >= HEADER_LEN).then_some(Self { bytes })
    }

    /// Source port.
    #[inline]
    pub fn src_port(&self) -> u16 {
        u16::from_be_bytes([self.bytes[0], self.bytes[1]])
    }

    /// Destination port.
    #[inline]
    pub fn dst_port(&self) -> u16 {
        u16::from_be_bytes([self.bytes[2], self.bytes[3]])
    }

    /// Length of header and payload, as the header states it.
    #[inline]
    pub fn len(&self) -> u16 {
        u16::from_be_bytes([self.bytes[4], self.bytes[5]])
    }

    /// Whether the length field is zero (as for jumbograms); see [`Header::len`].
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Checksum as stored (not verified here).
    #[inline]
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes([self.bytes[6], self.bytes[7]])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deconstruct() {
        let b = [0x00, 0x35, 0xc0, 0x01, 0x00, 0x1c, 0xbe, 0xef];
        let h = Header::new(&b).unwrap();
        assert_eq!(h.src_port(), 53);
        assert_eq!(h.dst_port(), 49153);
        assert_eq!(h.len(), 28);
        assert!(!h.is_empty());
        assert_eq!(h.checksum(), 0xbeef);
        assert!(Header::new(&b[..7]).is_none());
    }
}
