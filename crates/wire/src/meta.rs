//! [`PacketMeta`]: one frame's layers, addresses, ports and TCP fields, filled in one pass.

use crate::ethernet::{self, VlanTag, ethertype};
use crate::ipv6::{self, ExtEnd};
use crate::tcp::{self, OptionError, TcpOption};
use crate::{LinkType, be16, be32, icmp, ipv4, proto, udp};

/// The network-layer family of a packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Family {
    /// Not IP, or the IP header was too short to read the addresses.
    #[default]
    None,
    /// IPv4: the addresses sit in the first 4 bytes of their 16-byte slots.
    V4,
    /// IPv6.
    V6,
}

impl Family {
    /// The IP family, or `None` for a packet that is not IP.
    #[inline]
    pub fn ip(self) -> Option<IpFamily> {
        match self {
            Family::None => None,
            Family::V4 => Some(IpFamily::V4),
            Family::V6 => Some(IpFamily::V6),
        }
    }
}

/// An IP address family: IPv4 or IPv6. As a byte (`as u8`, [`IpFamily::version`]) it is the
/// IP version, 4 or 6, so keys and hashes that held the version keep their values; IPv4
/// addresses sit in the first 4 bytes of their 16-byte slots, the other 12 bytes zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum IpFamily {
    /// IPv4.
    #[default]
    V4 = 4,
    /// IPv6.
    V6 = 6,
}

impl IpFamily {
    /// The IP version: 4 or 6.
    #[inline]
    pub const fn version(self) -> u8 {
        self as u8
    }

    /// The family of IP version `v` (4 or 6); `None` for any other number.
    #[inline]
    pub const fn from_version(v: u8) -> Option<Self> {
        match v {
            4 => Some(IpFamily::V4),
            6 => Some(IpFamily::V6),
            _ => None,
        }
    }

    /// The family of a std address.
    #[inline]
    pub fn of(addr: &std::net::IpAddr) -> Self {
        if addr.is_ipv4() { IpFamily::V4 } else { IpFamily::V6 }
    }

    /// The std address held in a 16-byte slot of this family (IPv4: its first 4 bytes).
    #[inline]
    pub fn addr(self, slot: &[u8; 16]) -> std::net::IpAddr {
        match self {
            IpFamily::V4 => std::net::Ipv4Addr::new(slot[0], slot[1], slot[2], slot[3]).into(),
            IpFamily::V6 => std::net::Ipv6Addr::from(*slot).into(),
        }
    }
}

impl From<IpFamily> for Family {
    #[inline]
    fn from(f: IpFamily) -> Self {
        match f {
            IpFamily::V4 => Family::V4,
            IpFamily::V6 => Family::V6,
        }
    }
}

/// The layer at which a packet was cut short.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Layer {
    /// The link-layer header (Ethernet, SLL, loopback family).
    Link,
    /// A VLAN tag.
    Vlan,
    /// The PPPoE session header or the PPP protocol field.
    Pppoe,
    /// An MPLS label stack entry.
    Mpls,
    /// The IPv4 header or its options.
    Ipv4,
    /// The fixed IPv6 header.
    Ipv6,
    /// An IPv6 extension header.
    Ipv6Ext,
    /// The fixed TCP header.
    Tcp,
    /// TCP options (the fixed header is whole).
    TcpOptions,
    /// The UDP header, or the ports of DCCP, SCTP or UDP-Lite.
    Udp,
    /// The ICMP or ICMPv6 header.
    Icmp,
}

impl Layer {
    const ALL: [Layer; 11] = [
        Self::Link,
        Self::Vlan,
        Self::Pppoe,
        Self::Mpls,
        Self::Ipv4,
        Self::Ipv6,
        Self::Ipv6Ext,
        Self::Tcp,
        Self::TcpOptions,
        Self::Udp,
        Self::Icmp,
    ];

    /// A short lower-case name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Link => "link",
            Self::Vlan => "vlan",
            Self::Pppoe => "pppoe",
            Self::Mpls => "mpls",
            Self::Ipv4 => "ipv4",
            Self::Ipv6 => "ipv6",
            Self::Ipv6Ext => "ipv6-ext",
            Self::Tcp => "tcp",
            Self::TcpOptions => "tcp-options",
            Self::Udp => "udp",
            Self::Icmp => "icmp",
        }
    }
}

/// Why a header was judged malformed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Malformed {
    /// The IP version nibble does not match the EtherType or link type.
    IpVersion,
    /// IPv4 header length (IHL) below 5 words.
    Ipv4HeaderLen,
    /// IPv4 total length smaller than its own header.
    Ipv4TotalLen,
    /// IPv6 extension headers longer than the chain limit or than the payload length.
    Ipv6ExtChain,
    /// TCP data offset below 5 words, or beyond the IP payload.
    TcpDataOffset,
    /// A TCP option with an impossible length.
    TcpOption,
    /// UDP length below 8.
    UdpLength,
    /// More stacked VLAN tags or MPLS labels than the parser follows.
    VlanStack,
}

impl Malformed {
    const ALL: [Malformed; 8] = [
        Self::IpVersion,
        Self::Ipv4HeaderLen,
        Self::Ipv4TotalLen,
        Self::Ipv6ExtChain,
        Self::TcpDataOffset,
        Self::TcpOption,
        Self::UdpLength,
        Self::VlanStack,
    ];

    /// A short lower-case name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::IpVersion => "ip-version",
            Self::Ipv4HeaderLen => "ipv4-header-length",
            Self::Ipv4TotalLen => "ipv4-total-length",
            Self::Ipv6ExtChain => "ipv6-extension-chain",
            Self::TcpDataOffset => "tcp-data-offset",
            Self::TcpOption => "tcp-option",
            Self::UdpLength => "udp-length",
            Self::VlanStack => "vlan-stack",
        }
    }
}

/// What the parser made of a frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Status {
    /// Every header up to the transport layer was present and consistent.
    #[default]
    Ok,
    /// Not an IP packet (ARP, LLDP, ...); the EtherType is in [`PacketMeta::ethertype`].
    NotIp,
    /// A link type this crate does not parse.
    UnsupportedLink,
    /// Cut short (usually by the snap length) inside this layer; what came before is filled in.
    Truncated(Layer),
    /// A header contradicts itself; what came before it is filled in.
    Malformed(Malformed),
}

impl Status {
    /// Number of distinct problem counters (see [`Status::problem_index`]).
    pub const PROBLEMS: usize = 1 + Layer::ALL.len() + Malformed::ALL.len();

    /// A dense index for counting problems in a fixed array, or `None` for `Ok` and `NotIp`.
    #[inline]
    pub fn problem_index(self) -> Option<usize> {
        match self {
            Self::Ok | Self::NotIp => None,
            Self::UnsupportedLink => Some(0),
            Self::Truncated(l) => Some(1 + l as usize),
            Self::Malformed(m) => Some(1 + Layer::ALL.len() + m as usize),
        }
    }

    /// The name of the problem counter at `index` (see [`Status::problem_index`]).
    pub fn problem_name(index: usize) -> &'static str {
        let layers = Layer::ALL.len();
        match index {
            0 => "unsupported-link-type",
            i if i <= layers => TRUNCATED_NAMES[i - 1],
            i => Malformed::ALL.get(i - 1 - layers).map_or("unknown", |m| m.name()),
        }
    }
}

const TRUNCATED_NAMES: [&str; 11] = [
    "truncated-link",
    "truncated-vlan",
    "truncated-pppoe",
    "truncated-mpls",
    "truncated-ipv4",
    "truncated-ipv6",
    "truncated-ipv6-ext",
    "truncated-tcp",
    "truncated-tcp-options",
    "truncated-udp",
    "truncated-icmp",
];

/// TCP fields of a packet. Option values are valid only when their presence bit is set; use the
/// accessors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TcpMeta {
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number.
    pub ack: u32,
    /// The nine flag bits (see [`crate::tcp::flags`]).
    pub flags: u16,
    /// Window field, unscaled.
    pub window: u16,
    /// Header length in bytes, options included (0 when the fixed header was cut).
    pub header_len: u8,
    /// Number of SACK blocks in a SACK option.
    pub sack_blocks: u8,
    opts: u8,
    wscale: u8,
    mss: u16,
    tsval: u32,
    tsecr: u32,
    sack_edge: u32,
}

const OPT_MSS: u8 = 1;
const OPT_WSCALE: u8 = 2;
const OPT_SACK_PERM: u8 = 4;
const OPT_TS: u8 = 8;
const OPT_SACK: u8 = 16;

impl TcpMeta {
    /// The MSS option, if present.
    #[inline]
    pub fn mss(&self) -> Option<u16> {
        (self.opts & OPT_MSS != 0).then_some(self.mss)
    }

    /// The window-scale shift, if present.
    #[inline]
    pub fn window_scale(&self) -> Option<u8> {
        (self.opts & OPT_WSCALE != 0).then_some(self.wscale)
    }

    /// Whether the SACK-permitted option is present.
    #[inline]
    pub fn sack_permitted(&self) -> bool {
        self.opts & OPT_SACK_PERM != 0
    }

    /// Whether a SACK option (with [`TcpMeta::sack_blocks`] blocks) is present.
    #[inline]
    pub fn has_sack(&self) -> bool {
        self.opts & OPT_SACK != 0
    }

    /// The timestamps option as (TSval, TSecr), if present.
    #[inline]
    pub fn timestamps(&self) -> Option<(u32, u32)> {
        (self.opts & OPT_TS != 0).then_some((self.tsval, self.tsecr))
    }

    /// The highest right edge of the first SACK option's blocks, in sequence-number order and
    /// starting from the acknowledgment number: the acknowledgment number itself when there is
    /// no SACK option. This is what Linux's connection tracking calls `sack` (`tcp_sack`): the
    /// highest byte the packet acknowledges, selectively or not.
    #[inline]
    pub fn highest_sack(&self) -> u32 {
        if self.opts & OPT_SACK != 0 { self.sack_edge } else { self.ack }
    }
}

/// Whether sequence number `a` comes after `b` (RFC 1982 serial arithmetic, as TCP compares).
#[inline]
fn seq_after(a: u32, b: u32) -> bool {
    (b.wrapping_sub(a) as i32) < 0
}

/// Everything later stages need from one frame. Built by [`PacketMeta::parse`]; never re-parsed.
///
/// Offsets are from the start of the captured frame. Lengths named `*_wire_len` come from the
/// IP header and describe the packet as sent, which can be longer than what was captured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PacketMeta {
    /// What the parser made of the frame.
    pub status: Status,
    /// IP family; [`Family::None`] when there are no addresses.
    pub family: Family,
    /// The upper-layer protocol number (after IPv6 extension headers).
    pub proto: u8,
    /// Number of VLAN tags seen.
    pub vlan_count: u8,
    /// VLAN IDs of the outer two tags (outer first); zero where absent.
    pub vlan: [u16; 2],
    /// The innermost EtherType (or the one implied by the link type).
    pub ethertype: u16,
    /// Offset of the IP header.
    pub l3_offset: u16,
    /// Offset of the transport header (0 when not reached).
    pub l4_offset: u16,
    /// Offset of the transport payload (0 when not reached). On a packet cut by the snap length
    /// it can lie past the captured bytes: check it against the frame before slicing.
    pub payload_offset: u16,
    /// Source address; IPv4 in the first 4 bytes, the rest zero.
    pub src: [u8; 16],
    /// Destination address; IPv4 in the first 4 bytes, the rest zero.
    pub dst: [u8; 16],
    /// Source port (TCP, UDP, DCCP, SCTP, UDP-Lite), else 0.
    pub sport: u16,
    /// Destination port, else 0.
    pub dport: u16,
    /// IP length on the wire: IPv4 total length, or IPv6 payload length plus 40.
    pub ip_wire_len: u32,
    /// Transport payload length on the wire, from the IP length.
    pub payload_wire_len: u32,
    /// TTL or hop limit.
    pub ttl: u8,
    /// ICMP type (ICMP and ICMPv6 only).
    pub icmp_type: u8,
    /// ICMP code.
    pub icmp_code: u8,
    /// Echo identifier when [`PacketMeta::is_icmp_echo`].
    pub icmp_id: u16,
    /// TCP fields when `proto` is TCP and the fixed header was reached.
    pub tcp: TcpMeta,
    /// The UDP header's length field (for UDP-Lite, its checksum coverage) when the UDP header
    /// was read, else 0.
    pub udp_len: u16,
    /// The tunnel the packet came out of, when [`PacketMeta::decapsulate`] found one: the other
    /// fields then describe the inner packet.
    pub tunnel: Tunnel,
    flags: u8,
}

const F_FRAGMENT: u8 = 1;
const F_LATER_FRAGMENT: u8 = 2;
const F_ICMP_ECHO: u8 = 4;
const F_HAS_PORTS: u8 = 8;

/// VLAN tags followed before a frame is called malformed.
const MAX_VLAN_TAGS: u8 = 8;

impl PacketMeta {
    /// Parses one captured frame of the given link type. Never panics, never allocates.
    #[inline]
    pub fn parse(link: LinkType, frame: &[u8]) -> Self {
        let mut m = Self::default();
        m.parse_link(link, frame);
        m
    }

    /// [`PacketMeta::parse`] into this value (all of it rewritten): a caller that keeps its
    /// parsed packets, such as a batch's, parses each in place rather than copying it there.
    #[inline]
    pub fn parse_into(&mut self, link: LinkType, frame: &[u8]) {
        *self = Self::default();
        self.parse_link(link, frame);
    }

    /// Whether the packet is an IP fragment (first or later).
    #[inline]
    pub fn is_fragment(&self) -> bool {
        self.flags & F_FRAGMENT != 0
    }

    /// Whether the packet is a non-first fragment, which carries no transport header.
    #[inline]
    pub fn is_later_fragment(&self) -> bool {
        self.flags & F_LATER_FRAGMENT != 0
    }

    /// Whether the packet is an ICMP or ICMPv6 echo request or reply with its identifier read.
    #[inline]
    pub fn is_icmp_echo(&self) -> bool {
        self.flags & F_ICMP_ECHO != 0
    }

    /// Whether source and destination ports were read.
    #[inline]
    pub fn has_ports(&self) -> bool {
        self.flags & F_HAS_PORTS != 0
    }

    /// The packet an ICMP or ICMPv6 error quotes (addresses, protocol, ports or ICMP type and
    /// identifier), read from `frame`, the frame this meta was parsed from; `None` when the
    /// packet is not an error message ([`icmp::is_error`]) or the quote is cut short or a
    /// later fragment.
    pub fn icmp_quote(&self, frame: &[u8]) -> Option<icmp::Quote> {
        let v6 = match (self.proto, self.family) {
            (proto::ICMP, Family::V4) => false,
            (proto::ICMPV6, Family::V6) => true,
            _ => return None,
        };
        if self.is_later_fragment() || self.l4_offset == 0 || !icmp::is_error(self.icmp_type, v6) {
            return None;
        }
        let end = (usize::from(self.l3_offset) + self.ip_wire_len as usize).min(frame.len());
        let body = frame.get(usize::from(self.l4_offset) + icmp::HEADER_LEN..end)?;
        icmp::read_quote(body, v6)
    }

    /// The source address as a std address, if the packet is IP.
    pub fn src_addr(&self) -> Option<std::net::IpAddr> {
        addr(self.family, &self.src)
    }

    /// The destination address as a std address, if the packet is IP.
    pub fn dst_addr(&self) -> Option<std::net::IpAddr> {
        addr(self.family, &self.dst)
    }

    fn parse_link(&mut self, link: LinkType, f: &[u8]) {
        match link {
            LinkType::Ethernet => {
                let Some(eth) = ethernet::Frame::new(f) else {
                    return self.status = Status::Truncated(Layer::Link);
                };
                self.ethertype_chain(f, eth.ethertype(), ethernet::HEADER_LEN);
            }
            LinkType::LinuxSll => match be16(f, 14) {
                Some(t) => self.ethertype_chain(f, t, 16),
                None => self.status = Status::Truncated(Layer::Link),
            },
            LinkType::LinuxSll2 => match (be16(f, 0), f.len() >= 20) {
                (Some(t), true) => self.ethertype_chain(f, t, 20),
                _ => self.status = Status::Truncated(Layer::Link),
            },
            LinkType::Raw => match f.first().map(|b| b >> 4) {
                Some(4) => self.ipv4(f, 0),
                Some(6) => self.ipv6(f, 0),
                Some(_) => self.status = Status::Malformed(Malformed::IpVersion),
                None => self.status = Status::Truncated(Layer::Link),
            },
            LinkType::Ipv4 => self.ipv4(f, 0),
            LinkType::Ipv6 => self.ipv6(f, 0),
            LinkType::Null | LinkType::Loop => {
                let Some(b) = f.get(..4) else {
                    return self.status = Status::Truncated(Layer::Link);
                };
                let be = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                // DLT_NULL stores the family in the capturing host's order: accept either.
                let le = if link == LinkType::Null {
                    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
                } else {
                    be
                };
                let is = |v: &[u32]| v.contains(&be) || v.contains(&le);
                if is(&[2]) {
                    self.ethertype = ethertype::IPV4;
                    self.ipv4(f, 4);
                } else if is(&[10, 24, 28, 30]) {
                    self.ethertype = ethertype::IPV6;
                    self.ipv6(f, 4);
                } else {
                    self.status = Status::NotIp;
                }
            }
            LinkType::Other(_) => self.status = Status::UnsupportedLink,
        }
    }

    fn ethertype_chain(&mut self, f: &[u8], mut et: u16, mut off: usize) {
        while ethertype::is_vlan(et) {
            if self.vlan_count == MAX_VLAN_TAGS {
                return self.status = Status::Malformed(Malformed::VlanStack);
            }
            let Some(tag) = f.get(off..).and_then(VlanTag::parse) else {
                return self.status = Status::Truncated(Layer::Vlan);
            };
            if let Some(slot) = self.vlan.get_mut(usize::from(self.vlan_count)) {
                *slot = tag.vid;
            }
            self.vlan_count += 1;
            et = tag.next;
            off += ethernet::VLAN_TAG_LEN;
        }
        self.ethertype = et;
        match et {
            ethertype::IPV4 => self.ipv4(f, off),
            ethertype::IPV6 => self.ipv6(f, off),
            ethertype::PPPOE_SESSION => match be16(f, off + 6) {
                Some(0x0021) => self.ipv4(f, off + 8),
                Some(0x0057) => self.ipv6(f, off + 8),
                Some(_) => self.status = Status::NotIp,
                None => self.status = Status::Truncated(Layer::Pppoe),
            },
            ethertype::MPLS | ethertype::MPLS_MULTICAST => self.mpls(f, off),
            _ => self.status = Status::NotIp,
        }
    }

    /// Walks an MPLS label stack to its bottom entry; the payload's first nibble gives the IP
    /// version (pseudowires with a control word or an Ethernet payload are not IP here).
    fn mpls(&mut self, f: &[u8], mut off: usize) {
        for _ in 0..MAX_VLAN_TAGS {
            let Some(entry) = be32(f, off) else {
                return self.status = Status::Truncated(Layer::Mpls);
            };
            off += 4;
            if entry & 0x100 != 0 {
                return match f.get(off).map(|b| b >> 4) {
                    Some(4) => self.ipv4(f, off),
                    Some(6) => self.ipv6(f, off),
                    Some(_) => self.status = Status::NotIp,
                    None => self.status = Status::Truncated(Layer::Mpls),
                };
            }
        }
        self.status = Status::Malformed(Malformed::VlanStack);
    }

    fn ipv4(&mut self, f: &[u8], off: usize) {
        self.ethertype = ethertype::IPV4;
        self.l3_offset = off as u16;
        let b = f.get(off..).unwrap_or_default();
        let Some(ip) = ipv4::Packet::new(b) else {
            self.status = match b.first() {
                Some(v) if v >> 4 != 4 => Status::Malformed(Malformed::IpVersion),
                _ => Status::Truncated(Layer::Ipv4),
            };
            return;
        };
        if ip.version() != 4 {
            return self.status = Status::Malformed(Malformed::IpVersion);
        }
        self.family = Family::V4;
        // Each address is written whole (its last 12 bytes zero) in two 8-byte stores: the key
        // built next reads it with 8-byte loads, which a 4-byte store beside older zeros would
        // make wait until both stores had left the store buffer.
        self.src = v4_in_16(ip.src());
        self.dst = v4_in_16(ip.dst());
        self.proto = ip.protocol();
        self.ttl = ip.ttl();
        let hl = ip.header_len();
        if hl < ipv4::MIN_HEADER_LEN {
            return self.status = Status::Malformed(Malformed::Ipv4HeaderLen);
        }
        // A total length of 0 is what TSO-offloaded packets show when captured on the sender.
        let total = match usize::from(ip.total_len()) {
            0 => b.len(),
            t if t < hl => return self.status = Status::Malformed(Malformed::Ipv4TotalLen),
            t => t,
        };
        self.ip_wire_len = total as u32;
        if ip.more_frags() || ip.frag_offset() != 0 {
            self.flags |= F_FRAGMENT;
            if ip.frag_offset() != 0 {
                self.flags |= F_LATER_FRAGMENT;
                return;
            }
        }
        if b.len() < hl {
            return self.status = Status::Truncated(Layer::Ipv4);
        }
        self.transport(f, off + hl, off + total);
    }

    fn ipv6(&mut self, f: &[u8], off: usize) {
        self.ethertype = ethertype::IPV6;
        self.l3_offset = off as u16;
        let b = f.get(off..).unwrap_or_default();
        let Some(ip) = ipv6::Packet::new(b) else {
            self.status = match b.first() {
                Some(v) if v >> 4 != 6 => Status::Malformed(Malformed::IpVersion),
                _ => Status::Truncated(Layer::Ipv6),
            };
            return;
        };
        if ip.version() != 6 {
            return self.status = Status::Malformed(Malformed::IpVersion);
        }
        self.family = Family::V6;
        self.src = ip.src();
        self.dst = ip.dst();
        self.ttl = ip.hop_limit();
        // A payload length of 0 means a jumbogram (or TSO): take the captured length.
        let total = match usize::from(ip.payload_len()) {
            0 => b.len(),
            p => ipv6::HEADER_LEN + p,
        };
        self.ip_wire_len = total as u32;
        let walk = ipv6::walk_extensions(b, ip.next_header());
        self.proto = walk.protocol;
        if walk.fragment {
            self.flags |= F_FRAGMENT;
        }
        if walk.later_fragment {
            self.flags |= F_LATER_FRAGMENT;
            return;
        }
        match walk.end {
            ExtEnd::Done if walk.offset > total => {
                self.status = Status::Malformed(Malformed::Ipv6ExtChain)
            }
            ExtEnd::Done => self.transport(f, off + walk.offset, off + total),
            ExtEnd::Truncated => self.status = Status::Truncated(Layer::Ipv6Ext),
            ExtEnd::TooLong => self.status = Status::Malformed(Malformed::Ipv6ExtChain),
        }
    }

    /// Parses the transport header at `l4`; `ip_end` is where the IP packet ends on the wire.
    fn transport(&mut self, f: &[u8], l4: usize, ip_end: usize) {
        self.l4_offset = l4 as u16;
        // Bytes past the IP length are link padding, not transport bytes.
        let b = f.get(l4..ip_end.min(f.len())).unwrap_or_default();
        let l4_wire = ip_end.saturating_sub(l4);
        match self.proto {
            proto::TCP => self.tcp(b, l4, l4_wire),
            proto::UDP | proto::UDPLITE | proto::DCCP | proto::SCTP => {
                let (Some(sp), Some(dp)) = (be16(b, 0), be16(b, 2)) else {
                    return self.status = Status::Truncated(Layer::Udp);
                };
                self.sport = sp;
                self.dport = dp;
                self.flags |= F_HAS_PORTS;
                if self.proto != proto::UDP {
                    if self.proto == proto::UDPLITE {
                        self.udp_len = be16(b, 4).unwrap_or(0);
                    }
                    return;
                }
                let Some(h) = udp::Header::new(b) else {
                    return self.status = Status::Truncated(Layer::Udp);
                };
                self.udp_len = h.len();
                self.payload_offset = (l4 + udp::HEADER_LEN) as u16;
                self.payload_wire_len = l4_wire.saturating_sub(udp::HEADER_LEN) as u32;
                if usize::from(h.len()) < udp::HEADER_LEN && !h.is_empty() {
                    self.status = Status::Malformed(Malformed::UdpLength);
                }
            }
            proto::ICMP | proto::ICMPV6 => {
                let (Some(&t), Some(&c)) = (b.first(), b.get(1)) else {
                    return self.status = Status::Truncated(Layer::Icmp);
                };
                self.icmp_type = t;
                self.icmp_code = c;
                if icmp::is_echo(t, self.proto == proto::ICMPV6)
                    && let Some(id) = be16(b, 4)
                {
                    self.icmp_id = id;
                    self.flags |= F_ICMP_ECHO;
                }
                if b.len() < icmp::HEADER_LEN {
                    self.status = Status::Truncated(Layer::Icmp);
                } else {
                    self.payload_offset = (l4 + icmp::HEADER_LEN) as u16;
                    self.payload_wire_len = l4_wire.saturating_sub(icmp::HEADER_LEN) as u32;
                }
            }
            _ => {}
        }
    }

    fn tcp(&mut self, b: &[u8], l4: usize, l4_wire: usize) {
        let Some(h) = tcp::Header::new(b) else {
            // Cut inside the fixed header: keep every field whose bytes are present.
            if let (Some(sp), Some(dp)) = (be16(b, 0), be16(b, 2)) {
                self.sport = sp;
                self.dport = dp;
                self.flags |= F_HAS_PORTS;
            }
            self.tcp.seq = be32(b, 4).unwrap_or(0);
            self.tcp.ack = be32(b, 8).unwrap_or(0);
            self.tcp.flags = be16(b, 12).map_or(0, |v| v & 0x01ff);
            self.tcp.window = be16(b, 14).unwrap_or(0);
            self.status = Status::Truncated(Layer::Tcp);
            return;
        };
        self.sport = h.src_port();
        self.dport = h.dst_port();
        self.flags |= F_HAS_PORTS;
        let t = &mut self.tcp;
        t.seq = h.seq();
        t.ack = h.ack();
        t.flags = h.flags();
        t.window = h.window();
        let hl = h.header_len();
        if hl < tcp::MIN_HEADER_LEN || hl > l4_wire {
            self.status = Status::Malformed(Malformed::TcpDataOffset);
            return;
        }
        t.header_len = hl as u8;
        self.payload_offset = (l4 + hl) as u16;
        self.payload_wire_len = (l4_wire - hl) as u32;
        // The layouts Linux sends on nearly every segment: no options, or NOP NOP TS.
        if hl == tcp::MIN_HEADER_LEN {
            return;
        }
        if hl == 32
            && let Some(o) = b.get(20..32)
            && o[..4] == [1, 1, 8, 10]
        {
            t.tsval = u32::from_be_bytes([o[4], o[5], o[6], o[7]]);
            t.tsecr = u32::from_be_bytes([o[8], o[9], o[10], o[11]]);
            t.opts |= OPT_TS;
            return;
        }
        for opt in h.options() {
            match opt {
                Ok(TcpOption::Mss(v)) => {
                    t.mss = v;
                    t.opts |= OPT_MSS;
                }
                Ok(TcpOption::WindowScale(v)) => {
                    t.wscale = v;
                    t.opts |= OPT_WSCALE;
                }
                Ok(TcpOption::SackPermitted) => t.opts |= OPT_SACK_PERM,
                // The first SACK option counts, as in Linux's tracker; its highest right edge
                // is kept for window tracking.
                Ok(TcpOption::Sack(d)) if t.opts & OPT_SACK == 0 => {
                    t.sack_blocks = (d.len() / 8) as u8;
                    t.opts |= OPT_SACK;
                    t.sack_edge = d.chunks_exact(8).fold(t.ack, |edge, b| {
                        let right = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
                        if seq_after(right, edge) { right } else { edge }
                    });
                }
                Ok(TcpOption::Sack(_)) => {}
                Ok(TcpOption::Timestamps { tsval, tsecr }) => {
                    t.tsval = tsval;
                    t.tsecr = tsecr;
                    t.opts |= OPT_TS;
                }
                Ok(TcpOption::Other(..)) => {}
                // An option running past the captured bytes is the snaplen's doing; one
                // running past the header the sender wrote is the sender's.
                Err(OptionError::Truncated) if b.len() < hl => {
                    self.status = Status::Truncated(Layer::TcpOptions);
                }
                Err(_) => self.status = Status::Malformed(Malformed::TcpOption),
            }
        }
        if b.len() < hl && self.status == Status::Ok {
            self.status = Status::Truncated(Layer::TcpOptions);
        }
    }
}

fn addr(family: Family, a: &[u8; 16]) -> Option<std::net::IpAddr> {
    match family {
        Family::None => None,
        Family::V4 => Some(std::net::Ipv4Addr::new(a[0], a[1], a[2], a[3]).into()),
        Family::V6 => Some(std::net::Ipv6Addr::from(*a).into()),
    }
}

mod tunnel;
pub use tunnel::Tunnel;

/// An IPv4 address in a 16-byte address field: its four bytes, then zeros.
#[inline]
fn v4_in_16(a: [u8; 4]) -> [u8; 16] {
    // As a number, so that it is stored in two 8-byte halves (an array copy is stored as
    // 4 + 8 + 4 bytes, and an 8-byte load of the first half then waits).
    u128::from(u32::from_le_bytes(a)).to_le_bytes()
}

#[cfg(test)]
mod tests;
