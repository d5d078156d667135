//! Zero-copy views of packet headers, and [`PacketMeta`]: everything later stages need from one
//! frame, filled in a single pass.
//!
//! # Layers
//! [`LinkType`] says how a frame starts (Ethernet, Linux cooked v1/v2, raw IP, BSD loopback).
//! Each header has a module with a borrowed view: [`ethernet`], [`ipv4`], [`ipv6`], [`tcp`],
//! [`udp`], [`icmp`]. A view's `new` checks the fixed header length once; after that no accessor
//! can panic or fail. [`PacketMeta::parse`] walks the layers with those views and keeps the
//! offsets, the addresses, ports, TCP fields and options, and a [`Status`].
//!
//! What a stateful tracker needs beyond the parse is read from the same frame with the parse's
//! offsets, on demand: [`PacketMeta::checksums`] verifies the IPv4 header and transport
//! checksums over the captured bytes ([`check`]), and [`PacketMeta::icmp_quote`] reads the
//! packet an ICMP error quotes ([`icmp::Quote`]). The highest SACK right edge a segment
//! acknowledges is kept by the parse ([`TcpMeta::highest_sack`]).
//!
//! # Hostile and truncated input
//! Captures are routinely cut by a snap length, so a header that is cut short is parsed as far as
//! its bytes go (addresses, then ports, then sequence numbers, then options) and the packet is
//! flagged [`Status::Truncated`] with the layer that was cut. Headers that contradict themselves
//! (an IPv4 header length below 20, a TCP data offset below 5, ...) are flagged
//! [`Status::Malformed`] with a [`Malformed`] reason. No input makes any function here panic or
//! allocate; the fuzz target `wire` checks that.
//!
//! # Why hand-written
//! etherparse (used in this crate's tests as the oracle) costs 60-80 ns per packet more than this
//! parser on this project's captures, and its strict mode rejects snaplen-truncated packets
//! (see BENCHMARKS.md). The parser here touches only the bytes it reads.
//!
//! No `unsafe` but one call: [`check::sum`]'s AVX2 blocks, made only on a CPU that has AVX2.
#![deny(unsafe_code)]

pub mod check;
pub mod ethernet;
pub mod icmp;
pub mod ipv4;
pub mod ipv6;
mod link;
mod meta;
pub mod tcp;
pub mod time;
pub mod udp;

pub use check::{Checksum, Checksums};
pub use link::LinkType;
pub use meta::{Family, IpFamily, Layer, Malformed, PacketMeta, Status, TcpMeta, Tunnel};
pub use time::{Span, Timestamp};

/// IP protocol numbers this crate gives names to.
pub mod proto {
    /// ICMP for IPv4.
    pub const ICMP: u8 = 1;
    /// IPv4 encapsulated in IP.
    pub const IPIP: u8 = 4;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// DCCP (ports at the same place as UDP).
    pub const DCCP: u8 = 33;
    /// IPv6 encapsulated in IP.
    pub const IPV6: u8 = 41;
    /// Generic Routing Encapsulation.
    pub const GRE: u8 = 47;
    /// ICMPv6.
    pub const ICMPV6: u8 = 58;
    /// SCTP (ports at the same place as UDP).
    pub const SCTP: u8 = 132;
    /// UDP-Lite (ports at the same place as UDP).
    pub const UDPLITE: u8 = 136;
}

/// Reads a big-endian u16 at `off`, or `None` past the end.
#[inline(always)]
pub(crate) fn be16(b: &[u8], off: usize) -> Option<u16> {
    let s = b.get(off..off + 2)?;
    Some(u16::from_be_bytes([s[0], s[1]]))
}

/// Reads a big-endian u32 at `off`, or `None` past the end.
#[inline(always)]
pub(crate) fn be32(b: &[u8], off: usize) -> Option<u32> {
    let s = b.get(off..off + 4)?;
    Some(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}
