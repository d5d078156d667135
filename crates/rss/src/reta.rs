//! The RSS indirection table (RETA): hash bits to queue.

/// Why a RETA was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RetaError {
    /// Sizes are powers of two (the low hash bits index the table).
    #[error("RETA size {0} is not a power of two between 1 and 65536")]
    Size(usize),
    /// At least one queue.
    #[error("queue count {0} must be between 1 and 65536")]
    Queues(usize),
}

/// An indirection table: `queue = entries[hash & (size - 1)]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reta {
    entries: Vec<u16>,
    queues: usize,
    mask: u32,
}

impl Reta {
    /// Linux's default fill (`ethtool_rxfh_indir_default`, also F-Stack's): entry `i` goes to
    /// queue `i % queues`.
    pub fn round_robin(size: usize, queues: usize) -> Result<Self, RetaError> {
        if queues == 0 || queues > 1 << 16 {
            return Err(RetaError::Queues(queues));
        }
        // More queues than entries leaves some queues without any: they still exist.
        let reta = Self::from_entries((0..size).map(|i| (i % queues) as u16).collect())?;
        Ok(Self { queues, ..reta })
    }

    /// A table with these contents (as `ethtool -x` lists them); the queue count is one more
    /// than the largest entry.
    pub fn from_entries(entries: Vec<u16>) -> Result<Self, RetaError> {
        let size = entries.len();
        if !size.is_power_of_two() || size > 1 << 16 {
            return Err(RetaError::Size(size));
        }
        let queues = entries.iter().map(|&q| usize::from(q) + 1).max().unwrap_or(1);
        Ok(Self { entries, queues, mask: size as u32 - 1 })
    }

    /// Number of entries.
    pub fn size(&self) -> usize {
        self.entries.len()
    }

    /// Number of queues (one more than the largest entry).
    pub fn queues(&self) -> usize {
        self.queues
    }

    /// The entries.
    pub fn entries(&self) -> &[u16] {
        &self.entries
    }

    /// `size - 1`: the hash bits that index the table.
    pub fn mask(&self) -> u32 {
        self.mask
    }

    /// The queue a hash lands on.
    #[inline]
    pub fn queue(&self, hash: u32) -> usize {
        usize::from(self.entries[(hash & self.mask) as usize])
    }

    /// The entries that point at `queue`.
    pub fn slots_of(&self, queue: usize) -> impl Iterator<Item = u32> + '_ {
        self.entries
            .iter()
            .enumerate()
            .filter(move |(_, q)| usize::from(**q) == queue)
            .map(|(i, _)| i as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_and_errors() {
        let r = Reta::round_robin(128, 6).unwrap();
        assert_eq!(r.queues(), 6);
        assert_eq!(r.queue(0), 0);
        assert_eq!(r.queue(7), 1);
        assert_eq!(r.queue(127 + 128), 127 % 6);
        assert_eq!(r.slots_of(5).count(), 21);
        assert_eq!(r.slots_of(0).count(), 22);
        assert_eq!(Reta::round_robin(100, 4), Err(RetaError::Size(100)));
        assert_eq!(Reta::round_robin(128, 0), Err(RetaError::Queues(0)));
        assert_eq!(Reta::from_entries(vec![3, 0]).unwrap().queues(), 4);
        let r = Reta::round_robin(4, 8).unwrap();
        assert_eq!(r.queues(), 8);
        assert_eq!(r.slots_of(6).count(), 0);
    }
}
