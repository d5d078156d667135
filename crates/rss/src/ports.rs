//! Port-for-queue: local ports whose return traffic lands on a chosen queue, for any key and
//! any RETA, without a configuration table.
//!
//! The return packet hashes `remote addr, local addr, remote port, local port`. The hash is
//! linear, so `h(p) = h(0) ^ L(p)` where `L(p)` is the local port's own share, which depends on
//! the key alone. [`PortIndex`] buckets all 65,536 ports by `L(p) & mask` once (128 KiB of
//! `u16`, sorted within each bucket). For one remote, RETA slot `r` is reached exactly by the
//! ports of bucket `r ^ (h(0) & mask)`: one hash and two loads find them. The index holds only
//! the ports of one range (the ephemeral range, say), so a pick needs no search.

use std::net::{IpAddr, SocketAddr};
use std::ops::RangeInclusive;

use crate::reta::Reta;
use crate::toeplitz::Toeplitz;

/// Byte offset of the destination (local) port in the IPv4 and IPv6 inputs.
const PORT_AT: [usize; 2] = [10, 34];

/// The key-only inverted index for one family, RETA size and port range.
#[derive(Clone, Debug)]
pub struct PortIndex {
    mask: u32,
    range: RangeInclusive<u16>,
    /// `ports[start[b]..start[b+1]]`: the ports in bucket `b`, ascending.
    start: Vec<u32>,
    ports: Vec<u16>,
    rank: u32,
}

impl PortIndex {
    /// Buckets the ports of `range` by their share of the hash, for IPv6 inputs when `v6`.
    pub fn new(t: &Toeplitz, v6: bool, reta_size: usize, range: RangeInclusive<u16>) -> Self {
        let mask = reta_size.next_power_of_two() as u32 - 1;
        let at = PORT_AT[usize::from(v6)];
        let slot = |p: u16| (t.term16(at, p) & mask) as usize;
        // The image of L & mask is a subspace; its dimension counts the independent bits.
        let mut image = vec![false; mask as usize + 1];
        for p in 0..=u16::MAX {
            image[slot(p)] = true;
        }
        let rank = image.iter().filter(|&&b| b).count().trailing_zeros();
        let mut start = vec![0u32; mask as usize + 2];
        for p in range.clone() {
            start[slot(p) + 1] += 1;
        }
        for b in 1..start.len() {
            start[b] += start[b - 1];
        }
        let mut fill = start.clone();
        let mut ports = vec![0u16; range.clone().count()];
        for p in range.clone() {
            let b = slot(p);
            ports[fill[b] as usize] = p;
            fill[b] += 1;
        }
        Self { mask, range, start, ports, rank }
    }

    /// The port range the index covers.
    pub fn range(&self) -> &RangeInclusive<u16> {
        &self.range
    }

    /// The ports `p` with `L(p) & mask == b`, ascending.
    #[inline]
    pub fn bucket(&self, b: u32) -> &[u16] {
        let b = (b & self.mask) as usize;
        &self.ports[self.start[b] as usize..self.start[b + 1] as usize]
    }

    /// The ports that send a return tuple hashing to `h0` (with local port 0) into RETA slot
    /// `slot`.
    #[inline]
    pub fn ports_for_slot(&self, h0: u32, slot: u32) -> &[u16] {
        self.bucket(slot ^ h0)
    }

    /// Dimension of the image of `L & mask` over all ports: `log2(size)` when every slot can
    /// be reached from every remote (then each bucket holds `65536 / size` of all ports).
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// Whether some RETA slot is unreachable for some remote (the key's port bits do not span
    /// the index bits).
    pub fn is_deficient(&self) -> bool {
        1u64 << self.rank <= u64::from(self.mask)
    }
}

/// Picks or lists local ports in one range for a key and RETA, IPv4 and IPv6.
#[derive(Clone, Debug)]
pub struct PortPicker {
    t: Toeplitz,
    reta: Reta,
    index: [PortIndex; 2],
    /// `slots[owned[q]..owned[q+1]]`: the RETA slots pointing at queue `q`.
    slots: Vec<u32>,
    owned: Vec<u32>,
}

impl PortPicker {
    /// Builds both families' indexes of the ports in `range` (about a millisecond).
    pub fn new(t: Toeplitz, reta: Reta, range: RangeInclusive<u16>) -> Self {
        let index = [false, true].map(|v6| PortIndex::new(&t, v6, reta.size(), range.clone()));
        let mut slots = Vec::with_capacity(reta.size());
        let mut owned = vec![0];
        for q in 0..reta.queues() {
            slots.extend(reta.slots_of(q));
            owned.push(slots.len() as u32);
        }
        Self { t, reta, index, slots, owned }
    }

    /// The hasher.
    pub fn toeplitz(&self) -> &Toeplitz {
        &self.t
    }

    /// The RETA.
    pub fn reta(&self) -> &Reta {
        &self.reta
    }

    /// The index for a family.
    pub fn port_index(&self, v6: bool) -> &PortIndex {
        &self.index[usize::from(v6)]
    }

    /// Hash of the return tuple with local port 0, or `None` if the families differ.
    #[inline]
    pub fn base_hash(&self, remote: SocketAddr, local: IpAddr) -> Option<u32> {
        Some(match (remote.ip(), local) {
            (IpAddr::V4(r), IpAddr::V4(l)) => {
                self.t.hash_v4(r.octets(), l.octets(), remote.port(), 0)
            }
            (IpAddr::V6(r), IpAddr::V6(l)) => {
                self.t.hash_v6(r.octets(), l.octets(), remote.port(), 0)
            }
            _ => return None,
        })
    }

    /// Every local port in the range whose return traffic from `remote` to `local` lands on
    /// `queue`, ascending. Empty when none does, or the families differ.
    pub fn ports(&self, queue: usize, remote: SocketAddr, local: IpAddr) -> Vec<u16> {
        let Some(h0) = self.base_hash(remote, local) else { return Vec::new() };
        let index = self.port_index(remote.is_ipv6());
        let mut out: Vec<u16> = self
            .owned_slots(queue)
            .iter()
            .flat_map(|&s| index.ports_for_slot(h0, s).iter().copied())
            .collect();
        out.sort_unstable();
        out
    }

    /// One local port in the range whose return traffic lands on `queue`, chosen with the
    /// caller's random number `rand` (a uniformly random owned slot, then a uniformly random port
    /// of its bucket); `None` when there is none. The caller checks that the 4-tuple is free.
    #[inline]
    pub fn pick(&self, queue: usize, remote: SocketAddr, local: IpAddr, rand: u64) -> Option<u16> {
        let h0 = self.base_hash(remote, local)?;
        let index = self.port_index(remote.is_ipv6());
        let slots = self.owned_slots(queue);
        let n = slots.len();
        let first = scale(rand as u32, n);
        for i in 0..n {
            let s = slots[if first + i >= n { first + i - n } else { first + i }];
            let b = index.ports_for_slot(h0, s);
            if !b.is_empty() {
                return Some(b[scale((rand >> 32) as u32, b.len())]);
            }
        }
        None
    }

    /// The RETA slots that point at `queue`.
    #[inline]
    pub fn owned_slots(&self, queue: usize) -> &[u32] {
        match (self.owned.get(queue), self.owned.get(queue + 1)) {
            (Some(&a), Some(&b)) => &self.slots[a as usize..b as usize],
            _ => &[],
        }
    }

    /// Queues that some remote leaves without any port at all because the key's port bits do
    /// not reach every RETA slot; empty for a full-rank key (the usual case).
    pub fn starved_queues(&self, v6: bool) -> Vec<usize> {
        let index = self.port_index(v6);
        if !index.is_deficient() {
            return Vec::new();
        }
        let mask = self.reta.mask();
        let full = PortIndex::new(&self.t, v6, self.reta.size(), 0..=u16::MAX);
        let reachable: Vec<u32> = (0..=mask).filter(|&b| !full.bucket(b).is_empty()).collect();
        let mut starved = vec![false; self.reta.queues()];
        for h0 in 0..=mask {
            let mut hit = vec![false; self.reta.queues()];
            for &b in &reachable {
                hit[self.reta.queue(b ^ h0)] = true;
            }
            for (s, h) in starved.iter_mut().zip(hit) {
                *s |= !h;
            }
        }
        (0..starved.len()).filter(|&q| starved[q]).collect()
    }
}

/// `x` scaled from `0..2^32` to `0..n` with a multiply instead of a division.
#[inline]
fn scale(x: u32, n: usize) -> usize {
    ((u64::from(x) * n as u64) >> 32) as usize
}
