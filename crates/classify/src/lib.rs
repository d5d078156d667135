//! Packet classification: which rule of an ordered list is the first to match a header.
//!
//! - [`Rule`]: an inclusive range per field of the IPv4 5-tuple ([`Header`]); prefixes, port
//!   ranges and protocol value/mask all become ranges.
//! - [`classbench`]: ClassBench filter files and header traces, with errors naming the file,
//!   line and column.
//! - [`iptables`]: an `iptables-save` subset; chains stay chains, jumps refer to them.
//! - [`ipset`]: IP sets (one hash table per prefix length in use), and `ipset save` input.
//! - [`firewall`]: firewall rule sets lowered onto the compiled classifier, one compiled
//!   body per chain (IPv4 and IPv6, interfaces, negations, port lists, ICMP types and codes
//!   on the port fields, concatenations as unions of boxes; sets, connection state and TCP
//!   flags as extra checks).
//! - [`syntax`]: rampart's own nftables-like rule syntax, read into the same model.
//! - [`nft`]: nftables rule sets (`nft -f` input, `nft list ruleset` output) read into the
//!   same model, with their base chains' hooks, priorities and policies.
//! - [`source`]: rule files and traces read as text, gzip or zstd decompressed, and which
//!   rule format a text is in.
//! - [`load`]: a rule file read the one way every tool reads it (format told from the text,
//!   parsed, lowered and checked), for one entered chain or at its hooks.
//! - [`linear`]: the first-match scan every fast path is tested against.
//! - [`Compiled`]: rules partitioned by which address fields are small (CutSplit's idea);
//!   a partition small in an address starts with a table on it, the others are 8-way
//!   decision trees over elementary-interval boundaries (HyperSplit's weighting) with leaves
//!   of a few rules scanned in priority order, and a partition wide in both addresses of more
//!   than one leaf's rules and at most a few thousand is looked up as bit vectors
//!   ([`Kernel`]: scalar, AVX2 or AVX-512, chosen at run time; firewall chains keep a tree
//!   there, `compiled::Options::bit_vectors`); partitions are visited best-first and skipped
//!   once they cannot beat the match in hand.
//!
//! - [`Classifier`]: updates while lookups go on (a compiled base rebuilt in the background,
//!   tombstones and a delta for the changes since, snapshots swapped with `arc-swap`).
//!
//! - [`bench`](mod@bench): the lookup and update timings `rampart classify --bench` reports.
//!
//! Still to come: a faster delta (TupleMerge) and lookups that walk several headers at once
//! in SIMD registers.

pub mod bench;
pub mod classbench;
mod compiled;
mod delta;
pub mod firewall;
pub mod ipset;
pub mod iptables;
pub mod linear;
mod live;
pub mod load;
pub mod nft;
mod rule;
pub mod source;
pub mod syntax;
mod vectors;

pub use compiled::{Compiled, CompiledStats, Options, Start, Step, Vectors};
pub use delta::DeltaBucket;
pub use live::{BaseCheck, Classifier, Reader, Snapshot, UpdateError};
pub use rule::{FIELDS, Header, Rule};
pub use vectors::Kernel;
