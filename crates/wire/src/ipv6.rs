//! IPv6 fixed headers (RFC 8200) and the extension-header chain.

/// Length of the fixed IPv6 header.
pub const HEADER_LEN: usize = 40;

/// Extension headers walked at most; a longer chain is reported as malformed.
pub const MAX_EXT_HEADERS: usize = 8;

/// Next-header values that are IPv6 extension headers with the generic `(len + 1) * 8` layout,
/// plus the fragment header (fixed 8 bytes) and AH (`(len + 2) * 4`).
pub mod next_header {
    /// Hop-by-hop options.
    pub const HOP_BY_HOP: u8 = 0;
    /// Routing header.
    pub const ROUTING: u8 = 43;
    /// Fragment header.
    pub const FRAGMENT: u8 = 44;
    /// Authentication header.
    pub const AH: u8 = 51;
    /// No next header.
    pub const NONE: u8 = 59;
    /// Destination options.
    pub const DEST_OPTS: u8 = 60;
    /// Mobility header.
    pub const MOBILITY: u8 = 135;
    /// Host identity protocol.
    pub const HIP: u8 = 139;
    /// Shim6.
    pub const SHIM6: u8 = 140;

    /// Whether `nh` is an extension header that this crate walks over.
    #[inline]
    pub fn is_extension(nh: u8) -> bool {
        matches!(nh, HOP_BY_HOP | ROUTING | FRAGMENT | AH | DEST_OPTS | MOBILITY | HIP | SHIM6)
    }
}

/// A borrowed view of the fixed IPv6 header; [`Packet::new`] checks the 40 bytes are present.
#[derive(Clone, Copy, Debug)]
pub struct Packet<'a> {
    bytes: &'a [u8],
}

impl<'a> Packet<'a> {
    /// A view of `bytes`, or `None` when fewer than [`HEADER_LEN`] bytes are present.
    #[inline]
    pub fn new(bytes: &'a [u8]) -> Option<Self> {
        (bytes.len() >= HEADER_LEN).then_some(Self { bytes })
    }

    /// The version nibble (6 for a well-formed packet).
    #[inline]
    pub fn version(&self) -> u8 {
        self.bytes[0] >> 4
    }

    /// Traffic class.
    #[inline]
    pub fn traffic_class(&self) -> u8 {
        (self.bytes[0] << 4) | (self.bytes[1] >> 4)
    }

    /// Flow label (20 bits).
    #[inline]
    pub fn flow_label(&self) -> u32 {
        u32::from_be_bytes([0, self.bytes[1] & 0x0f, self.bytes[2], self.bytes[3]])
    }

    /// Payload length (extension headers included), as the header states it.
    #[inline]
    pub fn payload_len(&self) -> u16 {
        u16::from_be_bytes([self.bytes[4], self.bytes[5]])
    }

    /// The first next-header value.
    #[inline]
    pub fn next_header(&self) -> u8 {
        self.bytes[6]
    }

    /// Hop limit.
    #[inline]
    pub fn hop_limit(&self) -> u8 {
        self.bytes[7]
    }

    /// Source address.
    #[inline]
    pub fn src(&self) -> [u8; 16] {
        self.bytes[8..24].try_into().unwrap_or_default()
    }

    /// Destination address.
    #[inline]
    pub fn dst(&self) -> [u8; 16] {
        self.bytes[24..40].try_into().unwrap_or_default()
    }
}

/// The outcome of walking an extension-header chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtWalk {
    /// The upper-layer protocol (or the extension header at which the walk stopped).
    pub protocol: u8,
    /// Offset of the upper-layer header from the start of the IPv6 header.
    pub offset: usize,
    /// A fragment header was seen.
    pub fragment: bool,
    /// The fragment header had a non-zero offset: the upper-layer header is not here.
    pub later_fragment: bool,
    /// How the walk ended.
    pub end: ExtEnd,
}

/// Why an extension-header walk stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtEnd {
    /// It reached an upper-layer protocol (or a later fragment, or "no next header").
    Done,
    /// An extension header was cut short by the end of the buffer.
    Truncated,
    /// The chain was longer than [`MAX_EXT_HEADERS`].
    TooLong,
}

/// Walks the extension headers of the IPv6 packet in `packet` (fixed header included), reading
/// only the bytes present.
pub fn walk_extensions(packet: &[u8], first: u8) -> ExtWalk {
    let mut nh = first;
    let mut off = HEADER_LEN;
    let mut walk = ExtWalk {
        protocol: nh,
        offset: off,
        fragment: false,
        later_fragment: false,
        end: ExtEnd::Done,
    };
    for _ in 0..=MAX_EXT_HEADERS {
        if !next_header::is_extension(nh) {
            walk.protocol = nh;
            walk.offset = off;
            return walk;
        }
        let Some(h) = packet.get(off..off + 2) else {
            walk.protocol = nh;
            walk.offset = off;
            walk.end = ExtEnd::Truncated;
            return walk;
        };
        let len = match nh {
            next_header::FRAGMENT => {
                let Some(f) = packet.get(off..off + 8) else {
                    walk.protocol = nh;
                    walk.offset = off;
                    walk.end = ExtEnd::Truncated;
                    return walk;
                };
                walk.fragment = true;
                if u16::from_be_bytes([f[2], f[3]]) & 0xfff8 != 0 {
                    walk.later_fragment = true;
                    walk.protocol = f[0];
                    walk.offset = off + 8;
                    return walk;
                }
                8
            }
            next_header::AH => (usize::from(h[1]) + 2) * 4,
            _ => (usize::from(h[1]) + 1) * 8,
        };
        if off + len > packet.len() {
            // The header claims more bytes than were captured.
            walk.protocol = nh;
            walk.offset = off;
            walk.end = ExtEnd::Truncated;
            return walk;
        }
        nh = h[0];
        off += len;
    }
    walk.protocol = nh;
    walk.offset = off;
    walk.end = ExtEnd::TooLong;
    walk
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(next: u8, payload_len: u16) -> Vec<u8> {
        let mut b = vec![0x60, 0x00, 0x00, 0x01, 0, 0, next, 64];
        b[4..6].copy_from_slice(&payload_len.to_be_bytes());
        b.extend_from_slice(&[0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        b.extend_from_slice(&[0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        b
    }

    #[test]
    fn deconstruct() {
        let b = header(6, 20);
        let p = Packet::new(&b).unwrap();
        assert_eq!(p.version(), 6);
        assert_eq!(p.flow_label(), 1);
        assert_eq!(p.traffic_class(), 0);
        assert_eq!(p.payload_len(), 20);
        assert_eq!(p.next_header(), 6);
        assert_eq!(p.hop_limit(), 64);
        assert_eq!(p.src()[15], 1);
        assert_eq!(p.dst()[15], 2);
        assert!(Packet::new(&b[..39]).is_none());
    }

    #[test]
    fn walks_hop_by_hop_dest_opts_and_fragment() {
        let mut b = header(0, 0);
        b.extend_from_slice(&[60, 0, 1, 4, 0, 0, 0, 0]); // hop-by-hop, 8 bytes, next = dest opts
        b.extend_from_slice(&[44, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]); // dest opts, 16
        b.extend_from_slice(&[17, 0, 0, 0, 0, 0, 0, 7]); // fragment, offset 0, next = UDP
        let w = walk_extensions(&b, 0);
        assert_eq!(w.protocol, 17);
        assert_eq!(w.offset, 40 + 8 + 16 + 8);
        assert!(w.fragment && !w.later_fragment);
        assert_eq!(w.end, ExtEnd::Done);
    }

    #[test]
    fn later_fragment_stops_the_walk() {
        let mut b = header(44, 0);
        b.extend_from_slice(&[6, 0, 0x05, 0x00, 0, 0, 0, 7]);
        let w = walk_extensions(&b, 44);
        assert!(w.later_fragment);
        assert_eq!(w.protocol, 6);
    }

    #[test]
    fn header_longer_than_the_capture_is_truncated() {
        let mut b = header(0, 0);
        b.extend_from_slice(&[6, 255, 0, 0, 0, 0, 0, 0]); // claims 2048 bytes
        let w = walk_extensions(&b, 0);
        assert_eq!(w.end, ExtEnd::Truncated);
        assert!(w.offset <= b.len());
    }

    #[test]
    fn truncated_and_too_long_chains() {
        let mut b = header(0, 0);
        b.extend_from_slice(&[60, 0, 1]);
        assert_eq!(walk_extensions(&b, 0).end, ExtEnd::Truncated);
        let mut b = header(60, 0);
        for _ in 0..=MAX_EXT_HEADERS {
            b.extend_from_slice(&[60, 0, 1, 4, 0, 0, 0, 0]);
        }
        assert_eq!(walk_extensions(&b, 60).end, ExtEnd::TooLong);
    }
}
