//! Checksums as a receiver verifies them: the IPv4 header's, and the transport checksum of TCP,
//! UDP, UDP-Lite, ICMP and ICMPv6 over the pseudo-header (RFC 791, 768, 3828, 792, 4443, 9293;
//! RFC 8200 for IPv6), computed over the captured bytes with the offsets of the one parse
//! ([`PacketMeta::checksums`]). A checksum can only be verified over the whole datagram, so a
//! packet cut by the snap length is reported as such, never as good or bad.

use crate::{Family, PacketMeta, Status, proto};

/// What verifying one checksum found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Checksum {
    /// There is nothing to verify: not IP, IPv6 (whose header has no checksum), a protocol this
    /// crate does not verify (SCTP, DCCP, ...), a header the parser could not place, or a
    /// checksum field of zero where the protocol lets the sender leave it out (UDP), or where
    /// it must not but did (UDP-Lite).
    #[default]
    Absent,
    /// Verified: the checksum is right.
    Good,
    /// Verified: the checksum is wrong (for UDP-Lite, also a checksum coverage outside the
    /// datagram).
    Bad,
    /// Not checkable: the capture holds fewer bytes than the checksum covers (cut by the snap
    /// length).
    Cut,
    /// Not checkable: an IP fragment, whose transport checksum covers the reassembled datagram.
    Fragment,
}

impl Checksum {
    /// A short lower-case name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Absent => "absent",
            Self::Good => "good",
            Self::Bad => "bad",
            Self::Cut => "cut",
            Self::Fragment => "fragment",
        }
    }
}

/// The checksums of one packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Checksums {
    /// The IPv4 header checksum ([`Checksum::Absent`] for IPv6).
    pub ip: Checksum,
    /// The transport checksum.
    pub l4: Checksum,
}

/// Adds `bytes` to a running one's-complement sum of big-endian 16-bit words (`bytes` is
/// taken to start on an even offset; an odd last byte is padded with zero). Fold the result
/// with [`fold`].
///
/// The running sum is kept modulo 2^64 - 1 (with end-around carries), which 0xffff divides, so
/// folding it gives the 16-bit one's-complement sum; it is zero only when every byte and `acc`
/// are. The bytes are summed as little-endian words (RFC 1071's "byte order independence"):
/// from 128 bytes on, blocks of 32 bytes as 32-bit words into eight 64-bit lanes, which cannot
/// overflow for any slice under 2^34 bytes, so there is no carry chain and the compiler
/// vectorises the loop (compiled twice: for the x86-64 baseline and, chosen at run time on a
/// CPU that has it, for AVX2, whose 256-bit registers take twice the words per instruction);
/// the rest (and shorter slices) eight, four, two and one bytes at a time (a 16-bit word's
/// place in a wider one does not change the sum modulo 0xffff). A little-endian sum turns
/// into the big-endian one by multiplying by 256 (a byte swap, modulo 0xffff), which modulo
/// 2^64 - 1 is a rotation. Measured against the big-endian, eight-bytes-at-a-time loop this
/// replaced, and the AVX2 blocks against the baseline's, in `BENCHMARKS.md`.
#[inline]
pub fn sum(bytes: &[u8], acc: u64) -> u64 {
    // Short slices (headers) go straight to the eight-byte loop: the lanes' set-up and sum
    // cost more than they save below a few blocks.
    if bytes.len() >= 4 * BLOCK {
        return sum_with(bytes, acc, true);
    }
    add(acc, tail(bytes, 0).rotate_left(8))
}

/// Whether this CPU runs the AVX2 blocks.
#[inline]
fn avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Bytes in one block of the lanes: eight 32-bit words.
const BLOCK: usize = 32;

/// [`sum`] with the blocks summed with AVX2 when `wide` allows it and the CPU has it, by the
/// baseline's code otherwise (the tests compare the two). Not inlined, so that the short slices' path stays as small as
/// it is.
#[inline(never)]
fn sum_with(bytes: &[u8], acc: u64, wide: bool) -> u64 {
    let whole = bytes.len() / BLOCK * BLOCK;
    #[cfg(target_arch = "x86_64")]
    let total = if wide && avx2() {
        #[allow(unsafe_code)]
        // SAFETY: the CPU has AVX2 (checked just now; the detection is cached), the one
        // requirement of the function.
        unsafe {
            blocks_avx2(&bytes[..whole])
        }
    } else {
        blocks_lanes(&bytes[..whole])
    };
    #[cfg(not(target_arch = "x86_64"))]
    let total = {
        let _ = wide;
        blocks_lanes(&bytes[..whole])
    };
    add(acc, tail(&bytes[whole..], total).rotate_left(8))
}

/// Adds `rest` to the little-endian sum `total` eight, four, two and one bytes at a time.
#[inline(always)]
fn tail(mut rest: &[u8], mut total: u64) -> u64 {
    while let Some((w, r)) = rest.split_first_chunk::<8>() {
        total = add(total, u64::from_le_bytes(*w));
        rest = r;
    }
    if let Some((w, r)) = rest.split_first_chunk::<4>() {
        total = add(total, u64::from(u32::from_le_bytes(*w)));
        rest = r;
    }
    if let Some((w, r)) = rest.split_first_chunk::<2>() {
        total = add(total, u64::from(u16::from_le_bytes(*w)));
        rest = r;
    }
    if let Some(&b) = rest.first() {
        // Little-endian, an odd last byte is the low byte of its word.
        total = add(total, u64::from(b));
    }
    total
}

/// [`blocks_lanes`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn blocks_avx2(bytes: &[u8]) -> u64 {
    blocks_lanes(bytes)
}

/// Blocks of 32 bytes as 32-bit words into eight 64-bit lanes (`bytes.len()` a multiple of
/// [`BLOCK`]).
#[inline(always)]
fn blocks_lanes(bytes: &[u8]) -> u64 {
    let mut lanes = [0u64; BLOCK / 4];
    for b in bytes.chunks_exact(BLOCK) {
        for (l, w) in lanes.iter_mut().zip(b.chunks_exact(4)) {
            *l += u64::from(u32::from_le_bytes(w.try_into().expect("four bytes")));
        }
    }
    lanes.iter().fold(0, |a, &l| add(a, l))
}

/// `acc + w` with an end-around carry (one's-complement addition modulo 2^64 - 1).
#[inline(always)]
fn add(acc: u64, w: u64) -> u64 {
    let (s, carry) = acc.overflowing_add(w);
    s + u64::from(carry)
}

/// Folds a running sum from [`sum`] to 16 bits with end-around carries. A datagram whose
/// checksum field is right folds to `0xffff` over all its bytes (the pseudo-header included).
#[inline]
pub fn fold(acc: u64) -> u16 {
    let a = (acc >> 32) + (acc & 0xffff_ffff);
    let a = (a >> 32) + (a & 0xffff_ffff);
    let a = (a >> 16) + (a & 0xffff);
    let a = (a >> 16) + (a & 0xffff);
    a as u16
}

/// The checksum to store in a header whose checksum field is zero and whose bytes (with the
/// pseudo-header) sum to `acc`.
#[inline]
pub fn finish(acc: u64) -> u16 {
    !fold(acc)
}

/// The pseudo-header's sum: addresses, protocol and transport length.
#[inline]
pub fn pseudo_header(family: Family, src: &[u8; 16], dst: &[u8; 16], proto: u8, len: u32) -> u64 {
    let word = |a: &[u8; 16], i: usize| {
        u64::from_be_bytes(a[i..i + 8].try_into().expect("eight bytes of an address"))
    };
    let addrs = if family == Family::V6 {
        add(add(word(src, 0), word(src, 8)), add(word(dst, 0), word(dst, 8)))
    } else {
        let v4 = |a: &[u8; 16]| u64::from(u32::from_be_bytes([a[0], a[1], a[2], a[3]]));
        v4(src) + v4(dst)
    };
    add(add(addrs, u64::from(proto)), u64::from(len))
}

fn verdict(acc: u64) -> Checksum {
    if fold(acc) == 0xffff { Checksum::Good } else { Checksum::Bad }
}

impl PacketMeta {
    /// Verifies the IPv4 header checksum and the transport checksum of `frame`, the frame this
    /// meta was parsed from. The transport checksum covers the IP payload as the IP header
    /// gives its length (as a receiver computes it); bytes past it are link padding.
    pub fn checksums(&self, frame: &[u8]) -> Checksums {
        let mut out = Checksums::default();
        if self.family == Family::None {
            return out;
        }
        let l3 = usize::from(self.l3_offset);
        if self.family == Family::V4 {
            let ihl = frame.get(l3).map_or(0, |b| usize::from(b & 0x0f) * 4);
            out.ip = match frame.get(l3..l3 + ihl) {
                _ if ihl < 20 => Checksum::Absent,
                Some(h) => verdict(sum(h, 0)),
                None => Checksum::Cut,
            };
        }
        out.l4 = self.l4_checksum(frame, l3);
        out
    }

    fn l4_checksum(&self, frame: &[u8], l3: usize) -> Checksum {
        if self.is_fragment() {
            return Checksum::Fragment;
        }
        let verified = match self.proto {
            proto::TCP | proto::UDP | proto::UDPLITE => true,
            proto::ICMP => self.family == Family::V4,
            proto::ICMPV6 => self.family == Family::V6,
            _ => false,
        };
        if !verified {
            return Checksum::Absent;
        }
        if matches!(self.status, Status::Truncated(_)) && self.l4_offset == 0 {
            return Checksum::Cut;
        }
        let l4 = usize::from(self.l4_offset);
        let end = l3 + self.ip_wire_len as usize;
        if l4 == 0 || end < l4 {
            return Checksum::Absent;
        }
        let Some(seg) = frame.get(l4..end) else {
            return Checksum::Cut;
        };
        let len = seg.len() as u32;
        let pseudo = || pseudo_header(self.family, &self.src, &self.dst, self.proto, len);
        match self.proto {
            proto::ICMP => verdict(sum(seg, 0)),
            proto::TCP | proto::ICMPV6 => verdict(sum(seg, pseudo())),
            proto::UDP => match seg.get(6..8) {
                Some([0, 0]) => Checksum::Absent,
                Some(_) => verdict(sum(seg, pseudo())),
                None => Checksum::Absent,
            },
            _ => {
                // UDP-Lite: the length field is the checksum coverage (0: the whole datagram),
                // and the checksum is mandatory.
                let Some(h) = seg.get(..8) else { return Checksum::Absent };
                if h[6..8] == [0, 0] {
                    return Checksum::Absent;
                }
                let cov = match usize::from(u16::from_be_bytes([h[4], h[5]])) {
                    0 => seg.len(),
                    c if c < 8 || c > seg.len() => return Checksum::Bad,
                    c => c,
                };
                verdict(sum(&seg[..cov], pseudo()))
            }
        }
    }
}

#[cfg(test)]
mod tests;
