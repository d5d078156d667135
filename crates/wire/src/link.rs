/// How a captured frame begins: the pcap/pcapng link-layer header type.
///
/// Values follow the tcpdump.org LINKTYPE_ registry. Types this crate cannot parse are kept as
/// [`LinkType::Other`] so a capture reader can still hand their frames out and count them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkType {
    /// BSD loopback (LINKTYPE_NULL, 0): a 4-byte address family in the capturing host's order.
    Null,
    /// Ethernet II and 802.3 (LINKTYPE_ETHERNET, 1).
    Ethernet,
    /// Raw IP, version from the first nibble (LINKTYPE_RAW, 101; DLT_RAW 12 and 14 on some BSDs).
    Raw,
    /// OpenBSD loopback (LINKTYPE_LOOP, 108): a 4-byte address family in network order.
    Loop,
    /// Linux cooked capture v1 (LINKTYPE_LINUX_SLL, 113).
    LinuxSll,
    /// Raw IPv4 (LINKTYPE_IPV4, 228).
    Ipv4,
    /// Raw IPv6 (LINKTYPE_IPV6, 229).
    Ipv6,
    /// Linux cooked capture v2 (LINKTYPE_LINUX_SLL2, 276).
    LinuxSll2,
    /// Any other link type, by number.
    Other(u32),
}

impl LinkType {
    /// The link type for a LINKTYPE_ number as found in a pcap or pcapng header.
    pub fn from_linktype(v: u32) -> Self {
        match v {
            0 => Self::Null,
            1 => Self::Ethernet,
            12 | 14 | 101 => Self::Raw,
            108 => Self::Loop,
            113 => Self::LinuxSll,
            228 => Self::Ipv4,
            229 => Self::Ipv6,
            276 => Self::LinuxSll2,
            v => Self::Other(v),
        }
    }

    /// The LINKTYPE_ number, as written in a capture file header.
    pub fn to_linktype(self) -> u32 {
        match self {
            Self::Null => 0,
            Self::Ethernet => 1,
            Self::Raw => 101,
            Self::Loop => 108,
            Self::LinuxSll => 113,
            Self::Ipv4 => 228,
            Self::Ipv6 => 229,
            Self::LinuxSll2 => 276,
            Self::Other(v) => v,
        }
    }

    /// Whether [`crate::PacketMeta::parse`] understands frames of this type.
    pub fn is_supported(self) -> bool {
        !matches!(self, Self::Other(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linktype_numbers_round_trip() {
        for v in [0, 1, 101, 108, 113, 228, 229, 276, 147] {
            assert_eq!(LinkType::from_linktype(v).to_linktype(), v);
        }
        assert_eq!(LinkType::from_linktype(12), LinkType::Raw);
        assert!(!LinkType::from_linktype(147).is_supported());
        assert!(LinkType::Ethernet.is_supported());
    }
}
