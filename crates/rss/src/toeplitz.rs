//! The fast Toeplitz hash: byte tables everywhere, GFNI with AVX-512 where the CPU has them.

use std::net::IpAddr;

use crate::key::Key;

/// Which kernel a [`Toeplitz`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// XOR of one 1 KiB table lookup per input byte (any CPU).
    Table,
    /// One 8x8 bit matrix per key byte applied with `vgf2p8affineqb`, inputs gathered with
    /// `vpermb` (x86-64 with GFNI, AVX-512F/BW and AVX-512 VBMI).
    Gfni,
    /// Two carry-less multiplies per 8 input bytes for inputs over 16 bytes (IPv6), the byte
    /// tables for shorter ones, which are faster there (x86-64 with PCLMULQDQ and SSSE3).
    Clmul,
}

impl Kernel {
    /// The kernel's name as `rampart rss` and the benchmarks print it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Table => "table",
            Self::Gfni => "gfni",
            Self::Clmul => "clmul",
        }
    }
}

/// A Toeplitz hasher for one key: tables built once (microseconds), then a hash costs one
/// lookup per input byte, or a few vector instructions with GFNI.
///
/// Input layouts follow Microsoft's RSS specification, fields in packet order and network byte
/// order: IPv4 `src dst sport dport` (12 bytes) or `src dst` (8), IPv6 the same with 16-byte
/// addresses (36 or 32 bytes).
#[derive(Clone)]
pub struct Toeplitz {
    key: Key,
    /// `tables[j][x]`: the hash contribution of input byte `j` holding `x`.
    tables: Box<[[u32; 256]]>,
    kernel: Kernel,
    #[cfg(target_arch = "x86_64")]
    gfni: crate::gfni::Matrices,
    #[cfg(target_arch = "x86_64")]
    clmul: crate::clmul::Windows,
}

impl Toeplitz {
    /// A hasher with the fastest kernel this CPU supports: GFNI, else carry-less multiply,
    /// else tables.
    pub fn new(key: Key) -> Self {
        Self::build(key, *crate::kernels().last().expect("tables run anywhere"))
    }

    /// A hasher with the given kernel, or `None` when this CPU cannot run it (tests and
    /// benchmarks compare kernels with this).
    pub fn with_kernel(key: Key, kernel: Kernel) -> Option<Self> {
        crate::kernels().contains(&kernel).then(|| Self::build(key, kernel))
    }

    fn build(key: Key, kernel: Kernel) -> Self {
        let n = key.max_input();
        let mut tables = vec![[0u32; 256]; n].into_boxed_slice();
        for (j, t) in tables.iter_mut().enumerate() {
            // Contributions of the eight bits of byte j; every other entry is an XOR of them.
            let bits: [u32; 8] = std::array::from_fn(|b| key.window(j * 8 + b));
            for (x, e) in t.iter_mut().enumerate() {
                *e = (0..8).filter(|b| x & (0x80 >> b) != 0).fold(0, |h, b| h ^ bits[b]);
            }
        }
        Self {
            key,
            tables,
            kernel,
            #[cfg(target_arch = "x86_64")]
            gfni: crate::gfni::Matrices::new(&key),
            #[cfg(target_arch = "x86_64")]
            clmul: crate::clmul::Windows::new(&key),
        }
    }

    /// The key.
    pub fn key(&self) -> &Key {
        &self.key
    }

    /// The kernel in use.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// The hash of any input up to [`Key::max_input`] bytes.
    ///
    /// # Panics
    /// If the input is longer than the key covers.
    #[inline]
    pub fn hash(&self, input: &[u8]) -> u32 {
        assert!(input.len() <= self.tables.len(), "input longer than the key covers");
        #[cfg(target_arch = "x86_64")]
        match self.kernel {
            Kernel::Gfni => return crate::gfni::hash(&self.gfni, input),
            Kernel::Clmul if input.len() > 16 => return crate::clmul::hash(&self.clmul, input),
            Kernel::Clmul | Kernel::Table => {}
        }
        self.table_hash(input)
    }

    /// The hash by the table kernel whatever the CPU (for tests and the port index).
    #[inline]
    pub fn table_hash(&self, input: &[u8]) -> u32 {
        let t = &self.tables[..input.len()];
        let mut acc = [0u32; 4];
        for (j, (x, t)) in input.iter().zip(t).enumerate() {
            acc[j % 4] ^= t[usize::from(*x)];
        }
        acc[0] ^ acc[1] ^ acc[2] ^ acc[3]
    }

    /// Table kernel for a fixed length: fully unrolled, four independent XOR chains, no bounds
    /// checks.
    #[inline(always)]
    fn table_fixed<const N: usize>(&self, x: &[u8; N]) -> u32 {
        let t = &self.tables[..N];
        let mut acc = [0u32; 4];
        for j in 0..N {
            acc[j % 4] ^= t[j][usize::from(x[j])];
        }
        acc[0] ^ acc[1] ^ acc[2] ^ acc[3]
    }

    /// IPv4 with ports (TCP or UDP): 12 bytes of input.
    #[inline]
    pub fn hash_v4(&self, src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> u32 {
        #[cfg(target_arch = "x86_64")]
        {
            let ports = (u32::from(sport) << 16 | u32::from(dport)).to_be_bytes();
            if self.kernel == Kernel::Gfni {
                return crate::gfni::hash_v4(&self.gfni, src, dst, ports);
            }
        }
        self.table_fixed(&v4_input(src, dst, sport, dport))
    }

    /// IPv4 addresses only (other protocols, and every fragment): 8 bytes of input.
    #[inline]
    pub fn hash_v4_l3(&self, src: [u8; 4], dst: [u8; 4]) -> u32 {
        let mut x = [0u8; 8];
        x[..4].copy_from_slice(&src);
        x[4..].copy_from_slice(&dst);
        #[cfg(target_arch = "x86_64")]
        if self.kernel == Kernel::Gfni {
            return self.hash(&x);
        }
        self.table_fixed(&x)
    }

    /// IPv6 with ports: 36 bytes of input.
    #[inline]
    pub fn hash_v6(&self, src: [u8; 16], dst: [u8; 16], sport: u16, dport: u16) -> u32 {
        #[cfg(target_arch = "x86_64")]
        {
            let ports = (u32::from(sport) << 16 | u32::from(dport)).to_be_bytes();
            match self.kernel {
                Kernel::Gfni => return crate::gfni::hash_v6(&self.gfni, src, dst, ports),
                Kernel::Clmul => return crate::clmul::hash_v6(&self.clmul, src, dst, ports),
                Kernel::Table => {}
            }
        }
        self.table_fixed(&v6_input(src, dst, sport, dport))
    }

    /// IPv6 addresses only: 32 bytes of input.
    #[inline]
    pub fn hash_v6_l3(&self, src: [u8; 16], dst: [u8; 16]) -> u32 {
        let mut x = [0u8; 32];
        x[..16].copy_from_slice(&src);
        x[16..].copy_from_slice(&dst);
        #[cfg(target_arch = "x86_64")]
        if self.kernel != Kernel::Table {
            return self.hash(&x);
        }
        self.table_fixed(&x)
    }

    /// The hash of a [`Tuple`].
    pub fn hash_tuple(&self, t: &Tuple) -> u32 {
        let (x, n) = t.input();
        self.hash(&x[..n])
    }

    /// What 16 bits at byte offset `at` contribute when they hold `value` (the hash is linear,
    /// so a port's share can be XORed onto the hash of the input with that port zeroed).
    #[inline]
    pub fn term16(&self, at: usize, value: u16) -> u32 {
        let [hi, lo] = value.to_be_bytes();
        self.tables[at][usize::from(hi)] ^ self.tables[at + 1][usize::from(lo)]
    }
}

impl std::fmt::Debug for Toeplitz {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toeplitz").field("key", &self.key).field("kernel", &self.kernel).finish()
    }
}

/// The 12-byte IPv4 input.
#[inline]
pub fn v4_input(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> [u8; 12] {
    let mut x = [0u8; 12];
    x[..4].copy_from_slice(&src);
    x[4..8].copy_from_slice(&dst);
    x[8..10].copy_from_slice(&sport.to_be_bytes());
    x[10..].copy_from_slice(&dport.to_be_bytes());
    x
}

/// The 36-byte IPv6 input.
#[inline]
pub fn v6_input(src: [u8; 16], dst: [u8; 16], sport: u16, dport: u16) -> [u8; 36] {
    let mut x = [0u8; 36];
    x[..16].copy_from_slice(&src);
    x[16..32].copy_from_slice(&dst);
    x[32..34].copy_from_slice(&sport.to_be_bytes());
    x[34..].copy_from_slice(&dport.to_be_bytes());
    x
}

/// What a NIC hashes for one packet: two addresses of one family, and the ports when the
/// packet is TCP or UDP and not a fragment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuple {
    /// First address of the input (the packet's source).
    pub src: IpAddr,
    /// Second address (the packet's destination).
    pub dst: IpAddr,
    /// Source and destination ports, when hashed.
    pub ports: Option<(u16, u16)>,
}

impl Tuple {
    /// A tuple, or `None` when the addresses are of different families.
    pub fn new(src: IpAddr, dst: IpAddr, ports: Option<(u16, u16)>) -> Option<Self> {
        (src.is_ipv4() == dst.is_ipv4()).then_some(Self { src, dst, ports })
    }

    /// The hash input (in a 36-byte buffer) and its length.
    pub fn input(&self) -> ([u8; 36], usize) {
        let mut x = [0u8; 36];
        let n = match (self.src, self.dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                x[..4].copy_from_slice(&s.octets());
                x[4..8].copy_from_slice(&d.octets());
                8
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                x[..16].copy_from_slice(&s.octets());
                x[16..32].copy_from_slice(&d.octets());
                32
            }
            _ => unreachable!("Tuple::new checks the families"),
        };
        match self.ports {
            Some((sp, dp)) => {
                x[n..n + 2].copy_from_slice(&sp.to_be_bytes());
                x[n + 2..n + 4].copy_from_slice(&dp.to_be_bytes());
                (x, n + 4)
            }
            None => (x, n),
        }
    }
}
