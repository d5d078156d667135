//! Applications recognised from server names (TLS SNI, HTTP host, DNS query) and from server
//! addresses, as nDPI names them. Both are data files with their sources beside them:
//! `data/hosts.txt` (domain suffixes, matched on label boundaries through a hash map, the
//! longest entry first) and `data/addresses.txt` (address blocks, the most specific block
//! found by a binary search over the sorted blocks).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::OnceLock;

use rampart_flow::IpFamily;

/// A multiplicative hasher for the tables' short keys (a lookup per flow must cost a few
/// nanoseconds, not SipHash's tens); the keys come from the data files, not from traffic,
/// and a lookup's key from traffic only probes.
#[derive(Default)]
struct Fast(u64);

impl Hasher for Fast {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(w));
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }

    fn write_u128(&mut self, v: u128) {
        self.write_u64(v as u64);
        self.write_u64((v >> 64) as u64);
    }

    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<Fast>>;

/// Domain suffix (lower case) -> application, from `data/hosts.txt`.
fn hosts() -> &'static FastMap<&'static str, &'static str> {
    static HOSTS: OnceLock<FastMap<&'static str, &'static str>> = OnceLock::new();
    HOSTS.get_or_init(|| {
        let mut m = FastMap::default();
        for line in include_str!("../data/hosts.txt").lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            if let Some((domain, app)) = line.split_once(' ') {
                m.insert(domain.trim(), app.trim());
            }
        }
        m
    })
}

/// Whether a TLS server name has the shape of the names Tor's link connections send:
/// `www.` and a random base32 label (letters and the digits 2-7, at least one digit, no
/// other digit) of 6 to 24 characters, then `.com` or `.net`. Real sites rarely look like
/// that: they have other digits, dots, dashes, or no digit at all.
pub(crate) fn is_tor_name(sni: &str) -> bool {
    let Some(rest) = sni.strip_prefix("www.") else { return false };
    let Some(label) = rest.strip_suffix(".com").or_else(|| rest.strip_suffix(".net")) else {
        return false;
    };
    let b = label.as_bytes();
    (6..=24).contains(&b.len())
        && b.iter().all(|c| c.is_ascii_lowercase() || (b'2'..=b'7').contains(c))
        && b.iter().any(|c| (b'2'..=b'7').contains(c))
        && b.iter().filter(|c| c.is_ascii_lowercase()).count() >= 4
}

/// The application a server name belongs to, if it or a parent domain is listed (the
/// longest listed suffix wins). A port after the name is ignored.
pub fn app_for_host(host: &str) -> Option<&'static str> {
    let host = host.trim_end_matches('.');
    let host = host
        .rsplit_once(':')
        .filter(|(_, p)| p.bytes().all(|c| c.is_ascii_digit()))
        .map_or(host, |(h, _)| h);
    if host.is_empty() || host.len() > 253 {
        return None;
    }
    let lower;
    let host = if host.bytes().any(|c| c.is_ascii_uppercase()) {
        lower = host.to_ascii_lowercase();
        lower.as_str()
    } else {
        host
    };
    let table = hosts();
    let mut rest = host;
    loop {
        if let Some(app) = table.get(rest) {
            return Some(app);
        }
        rest = rest.split_once('.')?.1;
    }
}

/// Whether a service runs a protocol of its own on ports others use, so that its address
/// outweighs a port guess.
pub(crate) fn own_protocol(app: &str) -> bool {
    matches!(app, "Telegram")
}

/// Whether an address block's application is a provider's whole network (Google's, Meta's)
/// rather than the blocks of one service (Teams, Zoom, Telegram, Discord).
pub(crate) fn provider_wide(app: &str) -> bool {
    matches!(app, "Google" | "Facebook")
}

/// The application to name for a flow of `master` protocol whose server address belongs to
/// `app`: a call's media and signalling over STUN, DTLS or SRTP is the service's call
/// application (nDPI's names), other protocols the service itself.
pub(crate) fn app_over(master: crate::Proto, app: &'static str) -> &'static str {
    use crate::Proto;
    if !matches!(master, Proto::Stun | Proto::Dtls) {
        return app;
    }
    match app {
        "Facebook" => "WhatsAppCall",
        "Google" => "GoogleCall",
        "Teams" => "Skype_TeamsCall",
        "Telegram" => "TelegramVoip",
        other => other,
    }
}

#[cfg(test)]
mod tor_tests {
    use super::is_tor_name;

    #[test]
    fn tor_link_names() {
        for n in ["www.q4cyamnc6mtokjurvdclt.com", "www.gfu7hbxpfp.com", "www.t3i3ru.net"] {
            assert!(is_tor_name(n), "{n}");
        }
        for n in [
            "www.google.com",
            "www.web1forum.com",
            "www.mp3.com",
            "mail.q4cyamnc6mtokjurvdclt.com",
            "www.gfu7hbxpfp.org",
            "www.abc-7def.com",
            "www.77777777.com",
        ] {
            assert!(!is_tor_name(n), "{n}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_on_label_boundaries() {
        assert_eq!(app_for_host("r3---sn.googlevideo.com"), Some("YouTube"));
        assert_eq!(app_for_host("www.netflix.com:443"), Some("NetFlix"));
        assert_eq!(app_for_host("teams.microsoft.com"), Some("Teams"));
        assert_eq!(app_for_host("login.microsoft.com"), Some("Microsoft"));
        assert_eq!(app_for_host("notnetflix.com"), None);
        assert_eq!(app_for_host(""), None);
    }
}

/// One address block: its first and last address, the application, and the nearest block
/// that encloses it (`u32::MAX` for none).
struct Block {
    start: u128,
    end: u128,
    app: &'static str,
    parent: u32,
}

/// Address blocks per family (IPv4, IPv6), sorted by first address, a block before the blocks
/// it encloses. Prefixes nest or are disjoint, so the most specific block holding an address
/// is the last block starting at or before it, or one of that block's enclosing blocks:
/// a binary search and a short walk up.
fn blocks() -> &'static [Vec<Block>; 2] {
    static BLOCKS: OnceLock<[Vec<Block>; 2]> = OnceLock::new();
    BLOCKS.get_or_init(|| {
        let mut out: [Vec<Block>; 2] = [Vec::new(), Vec::new()];
        for line in include_str!("../data/addresses.txt").lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            let Some((prefix, app)) = line.split_once(' ') else { continue };
            let Some((addr, len)) = prefix.split_once('/') else { continue };
            let (Ok(addr), Ok(len)) = (addr.parse::<std::net::IpAddr>(), len.parse::<u32>()) else {
                continue;
            };
            let (family, value, bits) = match addr {
                std::net::IpAddr::V4(v) => (0, u128::from(u32::from(v)), 32u32),
                std::net::IpAddr::V6(v) => (1, u128::from(v), 128u32),
            };
            if len > bits {
                continue;
            }
            let host = if len == bits { 0 } else { u128::MAX >> (128 - (bits - len)) };
            let start = value & !host;
            out[family].push(Block { start, end: start | host, app: app.trim(), parent: u32::MAX });
        }
        for list in &mut out {
            // Enclosing blocks first: by start, then the wider first.
            list.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
            let mut open: Vec<usize> = Vec::new();
            for i in 0..list.len() {
                while open.last().is_some_and(|&o| list[o].end < list[i].start) {
                    open.pop();
                }
                list[i].parent = open.last().map_or(u32::MAX, |&o| o as u32);
                open.push(i);
            }
        }
        out
    })
}

/// The application an address belongs to, by `data/addresses.txt` (IPv4 in the first four
/// bytes); the most specific block wins.
pub fn app_for_address(family: IpFamily, addr: &[u8; 16]) -> Option<&'static str> {
    let (list, value) = match family {
        IpFamily::V4 => {
            (&blocks()[0], u128::from(u32::from_be_bytes([addr[0], addr[1], addr[2], addr[3]])))
        }
        IpFamily::V6 => (&blocks()[1], u128::from_be_bytes(*addr)),
    };
    let mut i = list.partition_point(|b| b.start <= value).checked_sub(1)?;
    loop {
        let b = &list[i];
        if value <= b.end {
            return Some(b.app);
        }
        i = usize::try_from(b.parent).ok().filter(|&p| p < list.len())?;
    }
}

#[cfg(test)]
mod address_tests {
    use super::*;

    #[test]
    fn blocks_from_the_data_file() {
        let v4 = |a: [u8; 4]| {
            let mut b = [0u8; 16];
            b[..4].copy_from_slice(&a);
            b
        };
        assert_eq!(app_for_address(IpFamily::V4, &v4([91, 108, 12, 5])), Some("Telegram"));
        assert_eq!(app_for_address(IpFamily::V4, &v4([149, 154, 175, 255])), Some("Telegram"));
        assert_eq!(app_for_address(IpFamily::V4, &v4([149, 154, 176, 0])), None);
        assert_eq!(app_for_address(IpFamily::V6, &v4([91, 108, 12, 5])), None);
        assert!(blocks()[0].len() >= 10);
        assert_eq!(app_for_address(IpFamily::V4, &v4([157, 240, 1, 1])), Some("Facebook"));
        assert_eq!(app_for_address(IpFamily::V4, &v4([157, 241, 1, 1])), None);
    }

    /// The binary search agrees with a scan for the longest matching block, on addresses
    /// inside, at the edges of and around every block.
    #[test]
    fn search_agrees_with_a_scan() {
        for (family, list) in [(IpFamily::V4, &blocks()[0]), (IpFamily::V6, &blocks()[1])] {
            let longest = |v: u128| {
                list.iter()
                    .filter(|b| b.start <= v && v <= b.end)
                    .min_by_key(|b| b.end - b.start)
                    .map(|b| b.app)
            };
            for b in list.iter() {
                for v in [
                    b.start,
                    b.end,
                    b.start.wrapping_sub(1),
                    b.end.wrapping_add(1),
                    b.start + (b.end - b.start) / 2,
                ] {
                    let mut addr = [0u8; 16];
                    if family == IpFamily::V4 {
                        if v > u128::from(u32::MAX) {
                            continue;
                        }
                        addr[..4].copy_from_slice(&(v as u32).to_be_bytes());
                    } else {
                        addr = v.to_be_bytes();
                    }
                    assert_eq!(app_for_address(family, &addr), longest(v), "{v:x}");
                }
            }
        }
    }
}
