//! Applications recognised from server names (TLS SNI, HTTP host, DNS query) and from server
//! addresses, as nDPI names them. Both are data files with their sources beside them:
//! `data/hosts.txt` (domain suffixes, matched on label boundaries through a hash map, the
//! longest entry first) and `data/addresses.txt` (address blocks, longest-prefix match over
//! the prefix lengths present).

use std::collections::HashMap;
use std::sync::OnceLock;

/// Domain suffix (lower case) -> application, from `data/hosts.txt`.
fn hosts() -> &'static HashMap<&'static str, &'static str> {
    static HOSTS: OnceLock<HashMap<&'static str, &'static str>> = OnceLock::new();
    HOSTS.get_or_init(|| {
        let mut m = HashMap::new();
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

/// Address blocks by (family, prefix length, masked network), and the prefix lengths present
/// per family, longest first.
struct Blocks {
    map: HashMap<(u8, u8, u128), &'static str>,
    lengths: [Vec<u8>; 2],
}

fn masked(addr: u128, len: u8, bits: u8) -> u128 {
    if len == 0 { 0 } else { addr & (u128::MAX << (bits - len)) }
}

/// Address blocks of applications: `data/addresses.txt`, parsed once.
fn blocks() -> &'static Blocks {
    static BLOCKS: OnceLock<Blocks> = OnceLock::new();
    BLOCKS.get_or_init(|| {
        let mut b = Blocks { map: HashMap::new(), lengths: [Vec::new(), Vec::new()] };
        for line in include_str!("../data/addresses.txt").lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            let Some((prefix, app)) = line.split_once(' ') else { continue };
            let Some((addr, len)) = prefix.split_once('/') else { continue };
            let (Ok(addr), Ok(len)) = (addr.parse::<std::net::IpAddr>(), len.parse::<u8>()) else {
                continue;
            };
            let (family, value, bits) = match addr {
                std::net::IpAddr::V4(v) => (4u8, u128::from(u32::from(v)), 32u8),
                std::net::IpAddr::V6(v) => (6u8, u128::from(v), 128u8),
            };
            if len > bits {
                continue;
            }
            b.map.insert((family, len, masked(value, len, bits)), app.trim());
            let lengths = &mut b.lengths[usize::from(family == 6)];
            if !lengths.contains(&len) {
                lengths.push(len);
            }
        }
        for l in &mut b.lengths {
            l.sort_unstable_by(|a, b| b.cmp(a));
        }
        b
    })
}

/// The application an address belongs to, by `data/addresses.txt` (`family` 4 or 6;
/// IPv4 in the first four bytes); the longest matching block wins.
pub fn app_for_address(family: u8, addr: &[u8; 16]) -> Option<&'static str> {
    let (value, bits) = match family {
        4 => (u128::from(u32::from_be_bytes([addr[0], addr[1], addr[2], addr[3]])), 32),
        6 => (u128::from_be_bytes(*addr), 128),
        _ => return None,
    };
    let b = blocks();
    b.lengths[usize::from(family == 6)]
        .iter()
        .find_map(|&len| b.map.get(&(family, len, masked(value, len, bits))).copied())
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
        assert_eq!(app_for_address(4, &v4([91, 108, 12, 5])), Some("Telegram"));
        assert_eq!(app_for_address(4, &v4([149, 154, 175, 255])), Some("Telegram"));
        assert_eq!(app_for_address(4, &v4([149, 154, 176, 0])), None);
        assert_eq!(app_for_address(6, &v4([91, 108, 12, 5])), None);
        assert!(blocks().map.len() >= 10);
        assert_eq!(app_for_address(4, &v4([157, 240, 1, 1])), Some("Facebook"));
        assert_eq!(app_for_address(4, &v4([157, 241, 1, 1])), None);
    }
}
