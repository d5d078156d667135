//! Ethernet II frames and 802.1Q / 802.1ad VLAN tags.

use crate::be16;

/// Length of the Ethernet II header (two MAC addresses and the EtherType).
pub const HEADER_LEN: usize = 14;
/// Length of one VLAN tag (TCI and the inner EtherType).
pub const VLAN_TAG_LEN: usize = 4;

/// EtherType values this crate acts on.
pub mod ethertype {
    /// IPv4.
    pub const IPV4: u16 = 0x0800;
    /// IPv6.
    pub const IPV6: u16 = 0x86dd;
    /// 802.1Q customer VLAN tag.
    pub const VLAN: u16 = 0x8100;
    /// 802.1ad service VLAN tag (QinQ outer tag).
    pub const QINQ: u16 = 0x88a8;
    /// Pre-standard QinQ outer tag still seen in the wild.
    pub const QINQ_OLD: u16 = 0x9100;
    /// PPPoE session stage (RFC 2516): 6 bytes of PPPoE, then a 2-byte PPP protocol.
    pub const PPPOE_SESSION: u16 = 0x8864;
    /// MPLS unicast label stack.
    pub const MPLS: u16 = 0x8847;
    /// MPLS multicast label stack.
    pub const MPLS_MULTICAST: u16 = 0x8848;

    /// Whether this EtherType announces a VLAN tag.
    #[inline]
    pub fn is_vlan(t: u16) -> bool {
        matches!(t, VLAN | QINQ | QINQ_OLD)
    }
}

/// A borrowed view of an Ethernet II header. Built by [`Frame::new`], which checks the length;
/// no accessor can fail afterwards.
#[derive(Clone, Copy, Debug)]
pub struct Frame<'a> {
    bytes: &'a [u8],
}

impl<'a> Frame<'a> {
    /// A view of `bytes`, or `None` when fewer than [`HEADER_LEN`] bytes are present.
    #[inline]
    pub fn new(bytes: &'a [u8]) -> Option<Self> {
        (bytes.len() >= HEADER_LEN).then_some(Self { bytes })
    }

    /// Destination MAC address.
    #[inline]
    pub fn dst(&self) -> [u8; 6] {
        self.bytes[0..6].try_into().unwrap_or_default()
    }

    /// Source MAC address.
    #[inline]
    pub fn src(&self) -> [u8; 6] {
        self.bytes[6..12].try_into().unwrap_or_default()
    }

    /// The EtherType (or 802.3 length) field.
    #[inline]
    pub fn ethertype(&self) -> u16 {
        u16::from_be_bytes([self.bytes[12], self.bytes[13]])
    }

    /// The bytes after the header.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.bytes[HEADER_LEN..]
    }
}

/// One VLAN tag: the tag control information and the EtherType it announces next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VlanTag {
    /// Priority code point (3 bits).
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN identifier (12 bits).
    pub vid: u16,
    /// The EtherType that follows the tag.
    pub next: u16,
}

impl VlanTag {
    /// Parses the 4 bytes that follow a VLAN EtherType, or `None` when they are cut short.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        let tci = be16(bytes, 0)?;
        let next = be16(bytes, 2)?;
        Some(Self { pcp: (tci >> 13) as u8, dei: tci & 0x1000 != 0, vid: tci & 0x0fff, next })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static FRAME: [u8; 18] =
        [0x02, 0, 0, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x02, 0x81, 0x00, 0xa0, 0x2a, 0x08, 0x00];

    #[test]
    fn deconstruct() {
        let f = Frame::new(&FRAME).unwrap();
        assert_eq!(f.dst(), [2, 0, 0, 0, 0, 1]);
        assert_eq!(f.src(), [2, 0, 0, 0, 0, 2]);
        assert_eq!(f.ethertype(), ethertype::VLAN);
        let tag = VlanTag::parse(f.payload()).unwrap();
        assert_eq!(tag, VlanTag { pcp: 5, dei: false, vid: 42, next: ethertype::IPV4 });
    }

    #[test]
    fn too_short() {
        assert!(Frame::new(&FRAME[..13]).is_none());
        assert!(VlanTag::parse(&FRAME[14..17]).is_none());
    }
}
