//! ICMP (RFC 792) and ICMPv6 (RFC 4443) headers, with the echo identifier.

/// Length of the ICMP header through the echo identifier and sequence number.
pub const HEADER_LEN: usize = 8;

/// A borrowed view of an ICMP or ICMPv6 message; [`Message::new`] checks the 8 bytes.
#[derive(Clone, Copy, Debug)]
pub struct Message<'a> {
    bytes: &'a [u8],
}

impl<'a> Message<'a> {
    /// A view of `bytes`, or `None` when fewer than [`HEADER_LEN`] bytes are present.
    #[inline]
    pub fn new(bytes: &'a [u8]) -> Option<Self> {
        (bytes.len() >= HEADER_LEN).then_some(Self { bytes })
    }

    /// Message type.
    #[inline]
    pub fn kind(&self) -> u8 {
        self.bytes[0]
    }

    /// Message code.
    #[inline]
    pub fn code(&self) -> u8 {
        self.bytes[1]
    }

    /// Identifier of an echo request or reply (meaningless for other types).
    #[inline]
    pub fn echo_id(&self) -> u16 {
        u16::from_be_bytes([self.bytes[4], self.bytes[5]])
    }

    /// Sequence number of an echo request or reply.
    #[inline]
    pub fn echo_seq(&self) -> u16 {
        u16::from_be_bytes([self.bytes[6], self.bytes[7]])
    }
}

/// Whether `kind` is an echo request or reply: ICMP 0/8, or ICMPv6 128/129 when `v6`.
#[inline]
pub fn is_echo(kind: u8, v6: bool) -> bool {
    if v6 { matches!(kind, 128 | 129) } else { matches!(kind, 0 | 8) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deconstruct() {
        let b = [8, 0, 0xf7, 0xff, 0x12, 0x34, 0x00, 0x07];
        let m = Message::new(&b).unwrap();
        assert_eq!((m.kind(), m.code(), m.echo_id(), m.echo_seq()), (8, 0, 0x1234, 7));
        assert!(is_echo(8, false) && is_echo(129, true) && !is_echo(3, false));
        assert!(!is_echo(8, true));
        assert!(Message::new(&b[..7]).is_none());
    }
}
