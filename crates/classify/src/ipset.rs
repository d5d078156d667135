//! IP sets: membership of an address in a set of addresses and prefixes, IPv4 and IPv6.
//!
//! As Linux's `hash:net` does, a set keeps one hash table per prefix length present; a lookup
//! probes each length in use, longest first, with the address masked to it (one probe for a
//! set of plain addresses). Adding or removing an element is one hash operation.
//! [`parse_ipset_save`] reads `ipset save` output (`create NAME TYPE ...` and
//! `add NAME ADDR[/LEN]` lines).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;

use crate::classbench::ParseError;

/// A set of IPv4 and IPv6 addresses and prefixes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IpSet {
    /// Per prefix length (v4 lengths 0..=32 as is, v6 as 64 + length), the masked prefixes.
    tables: BTreeMap<u8, HashSet<u128>>,
}

/// `addr` with the bits below a `len`-bit prefix cleared.
pub fn masked(addr: IpAddr, len: u8) -> IpAddr {
    match addr {
        IpAddr::V4(v) => {
            let m = if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len.min(32))) };
            IpAddr::from((u32::from(v) & m).to_be_bytes())
        }
        IpAddr::V6(v) => {
            let m = if len == 0 { 0 } else { u128::MAX << (128 - u32::from(len.min(128))) };
            IpAddr::from((u128::from(v) & m).to_be_bytes())
        }
    }
}

/// Why `ADDR[/LEN]` text was refused: the address, or the length (which starts at this byte).
pub(crate) enum PrefixError {
    Addr,
    Len(usize),
}

/// Reads `ADDR` or `ADDR/LEN` (IPv4 or IPv6); a bare address is a full-length prefix.
pub(crate) fn parse_prefix(s: &str) -> Result<(IpAddr, u8), PrefixError> {
    let (a, l) = s.split_once('/').map_or((s, None), |(a, l)| (a, Some(l)));
    let addr: IpAddr = a.parse().map_err(|_| PrefixError::Addr)?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    match l.map(str::parse::<u8>) {
        None => Ok((addr, max)),
        Some(Ok(v)) if v <= max => Ok((addr, v)),
        _ => Err(PrefixError::Len(a.len() + 1)),
    }
}

/// `ADDR` or `ADDR/LEN` (IPv4 or IPv6) as an address and a prefix length (a bare address is
/// a full-length prefix), or `None`.
pub fn read_prefix(s: &str) -> Option<(IpAddr, u8)> {
    parse_prefix(s).ok()
}

/// The table a prefix goes in (v4 lengths as is, v6 as 64 + length) and its masked value.
fn key(addr: IpAddr, len: u8) -> (u8, u128) {
    match masked(addr, len) {
        IpAddr::V4(v) => (len.min(32), u128::from(u32::from(v))),
        IpAddr::V6(v) => (64 + len.min(128), u128::from(v)),
    }
}

impl IpSet {
    /// The prefixes held, as (address, length), in no particular order.
    pub fn prefixes(&self) -> impl Iterator<Item = (IpAddr, u8)> + '_ {
        self.tables.iter().flat_map(|(&t, vals)| {
            vals.iter().map(move |&v| {
                if t < 64 {
                    (IpAddr::from((v as u32).to_be_bytes()), t)
                } else {
                    (IpAddr::from(v.to_be_bytes()), t - 64)
                }
            })
        })
    }

    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `addr/len` (host bits are ignored); false if it was there.
    pub fn insert(&mut self, addr: IpAddr, len: u8) -> bool {
        let (l, k) = key(addr, len);
        self.tables.entry(l).or_default().insert(k)
    }

    /// Removes `addr/len`; false if it was not there.
    pub fn remove(&mut self, addr: IpAddr, len: u8) -> bool {
        let (l, k) = key(addr, len);
        let Some(t) = self.tables.get_mut(&l) else { return false };
        let had = t.remove(&k);
        if t.is_empty() {
            self.tables.remove(&l);
        }
        had
    }

    /// Whether `addr` lies in an element of the set.
    pub fn contains(&self, addr: IpAddr) -> bool {
        let (range, full) = match addr {
            IpAddr::V4(_) => (0..=32u8, 32),
            IpAddr::V6(_) => (64..=192u8, 128),
        };
        self.tables.range(range).rev().any(|(&l, t)| {
            let len = if addr.is_ipv4() { l } else { l - 64 };
            t.contains(&key(addr, len.min(full)).1)
        })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.tables.values().map(HashSet::len).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }
}

/// Reads `ipset save` output into sets by name. Only address sets (`hash:ip`, `hash:net`) are
/// accepted.
pub fn parse_ipset_save(file: &str, text: &str) -> Result<HashMap<String, IpSet>, ParseError> {
    let mut sets: HashMap<String, IpSet> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let err = |col: usize, expected: &str, found: &str| ParseError {
            file: file.to_string(),
            line: i + 1,
            column: col + 1,
            expected: expected.to_string(),
            found: format!("{found:?}"),
        };
        let mut words = Vec::new();
        let mut pos = 0;
        for w in line.split_whitespace() {
            let at = pos + line[pos..].find(w).unwrap_or(0);
            pos = at + w.len();
            words.push((at, w));
        }
        match words.as_slice() {
            [] => {}
            [(_, c), ..] if c.starts_with('#') => {}
            [(_, "create"), (_, name), (at, ty), ..] => {
                if !matches!(*ty, "hash:ip" | "hash:net") {
                    return Err(err(*at, "a set type hash:ip or hash:net", ty));
                }
                sets.entry((*name).to_string()).or_default();
            }
            [(_, "add"), (nat, name), (at, elem), ..] => {
                let set = sets
                    .get_mut(*name)
                    .ok_or_else(|| err(*nat, "a set created earlier with 'create'", name))?;
                let (addr, len) = parse_prefix(elem).map_err(|e| match e {
                    PrefixError::Addr => err(*at, "an address", elem),
                    PrefixError::Len(k) => err(*at + k, "a prefix length", elem),
                })?;
                set.insert(addr, len);
            }
            [(at, w), ..] => return Err(err(*at, "'create' or 'add'", w)),
        }
    }
    Ok(sets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn prefixes_read_with_a_full_length_for_a_bare_address() {
        assert_eq!(read_prefix("10.0.0.0/8"), Some(("10.0.0.0".parse().unwrap(), 8)));
        assert_eq!(read_prefix("fd66::1"), Some(("fd66::1".parse().unwrap(), 128)));
        assert_eq!(read_prefix("10.0.0.0/33"), None);
    }

    #[test]
    fn addresses_and_prefixes() {
        let mut s = IpSet::new();
        assert!(s.insert("10.0.0.0".parse().unwrap(), 8));
        assert!(s.insert("192.168.1.7".parse().unwrap(), 32));
        assert!(s.insert("2001:db8::".parse().unwrap(), 32));
        assert!(!s.insert("10.9.9.9".parse().unwrap(), 8), "host bits are ignored");
        assert!(s.contains("10.200.1.1".parse().unwrap()));
        assert!(s.contains("192.168.1.7".parse().unwrap()));
        assert!(!s.contains("192.168.1.8".parse().unwrap()));
        assert!(s.contains("2001:db8:ffff::1".parse().unwrap()));
        assert!(!s.contains("2001:db9::1".parse().unwrap()));
        assert!(!s.contains("::ffff:10.0.0.1".parse().unwrap()), "families stay apart");
        assert!(s.remove("10.0.0.0".parse().unwrap(), 8));
        assert!(!s.contains("10.200.1.1".parse().unwrap()));
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn ipset_save() {
        let text = "create block hash:net family inet hashsize 1024 maxelem 65536\n\
                    add block 10.0.0.0/8\nadd block 203.0.113.9\n";
        let sets = parse_ipset_save("s", text).unwrap();
        assert!(sets["block"].contains("203.0.113.9".parse().unwrap()));
        let e = parse_ipset_save("s", "add nope 1.2.3.4\n").unwrap_err();
        assert_eq!((e.line, e.column), (1, 5));
        let e = parse_ipset_save("s", "create b hash:net\nadd b 1.2.3.4/33\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 15));
    }

    proptest! {
        #[test]
        fn membership_equals_a_scan(elems in prop::collection::vec((any::<u32>(), 0u8..=32), 0..40), probes in prop::collection::vec(any::<u32>(), 1..200)) {
            let mut s = IpSet::new();
            for (a, l) in &elems {
                s.insert(IpAddr::from(a.to_be_bytes()), *l);
            }
            for p in probes.iter().chain(elems.iter().map(|(a, _)| a)) {
                let want = elems.iter().any(|(a, l)| {
                    let m = if *l == 0 { 0 } else { u32::MAX << (32 - u32::from(*l)) };
                    a & m == p & m
                });
                prop_assert_eq!(s.contains(IpAddr::from(p.to_be_bytes())), want);
            }
        }
    }
}
