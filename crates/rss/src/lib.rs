//! Receive-side scaling, reproduced exactly in software.
//!
//! - [`Toeplitz`]: the Microsoft RSS hash over the standard input layouts (IPv4 and IPv6, with
//!   or without ports) for any 40- or 52-byte [`Key`]. The kernel is chosen at run time:
//!   [`Kernel::Gfni`] where the CPU has GFNI with AVX-512 (DPDK's matrix method), else
//!   [`Kernel::Clmul`] where it has PCLMULQDQ (two carry-less multiplies per 8 input bytes),
//!   else [`Kernel::Table`], one 1 KiB lookup table per input byte XORed in four independent
//!   chains. All are written here by hand: no maintained crate offers a fast Toeplitz (the
//!   `toeplitz` crates on crates.io are bit-serial), and the benchmark in `benches/` measures
//!   them against the bit-serial loop FreeBSD and F-Stack run.
//! - [`reference`](mod@reference): the definition, bit by bit, kept as the test oracle.
//! - [`Key::ms`] (Microsoft's key) and [`Key::symmetric`] (Woo and Park's `0x6d5a`, which
//!   gives both directions of a flow the same hash).
//! - [`Reta`]: the indirection table, Linux's round-robin fill by default.
//! - [`PortPicker`]: local ports whose return traffic lands on a chosen queue, for any key and
//!   RETA, from a key-only inverted index (one hash and two loads per pick).
//!
//! Mind the hash types when mirroring a NIC: every IP fragment, the first one included, is
//! hashed on addresses alone, and a NIC may hash UDP on addresses alone unless told otherwise
//! (`ethtool -N dev rx-flow-hash udp4 sdfn`).

mod clmul;
mod gfni;
mod key;
mod ports;
pub mod reference;
mod reta;
mod toeplitz;

pub use key::{Key, KeyError, MAX_KEY, MS_KEY};
pub use ports::{PortIndex, PortPicker};
pub use reta::{Reta, RetaError};
pub use toeplitz::{Kernel, Toeplitz, Tuple, v4_input, v6_input};

/// The kernels this CPU can run, fastest last.
pub fn kernels() -> Vec<Kernel> {
    let mut k = vec![Kernel::Table];
    if clmul::supported() {
        k.push(Kernel::Clmul);
    }
    if gfni::supported() {
        k.push(Kernel::Gfni);
    }
    k
}
