//! What the DPI tests share: where the captures are, how flows are keyed (as nDPI's output
//! writes them), and nDPI's expected labels from its `.out` files.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

use rampart_wire::Family;

/// `RAMPART_DATA/SUB` or `../shared/data/SUB`; `None` (after saying so) when absent.
pub(crate) fn data_dir(sub: &str) -> Option<PathBuf> {
    rampart_testkit::shared(sub, sub)
}

/// An endpoint as nDPI writes it: `a.b.c.d:port` or `[v6]:port`.
pub(crate) fn endpoint(family: Family, addr: &[u8; 16], port: u16) -> String {
    match family {
        Family::V4 => format!("{}:{port}", Ipv4Addr::new(addr[0], addr[1], addr[2], addr[3])),
        _ => format!("[{}]:{port}", Ipv6Addr::from(*addr)),
    }
}

/// (L4, lower endpoint, higher endpoint).
pub(crate) type Key = (String, String, String);

/// A flow's key, the same for both directions.
pub(crate) fn key(l4: &str, a: String, b: String) -> Key {
    if a <= b { (l4.to_string(), a, b) } else { (l4.to_string(), b, a) }
}

/// nDPI's labels for the TCP and UDP flows of a `.out` file (with `dpi_only`, only those
/// it found by payload inspection).
pub(crate) fn expected(out: &Path, dpi_only: bool) -> BTreeMap<Key, String> {
    // Some flow lines carry raw bytes (banners, names) that are not UTF-8.
    let text = String::from_utf8_lossy(&std::fs::read(out).unwrap()).into_owned();
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix('\t') else { continue };
        let Some((num, rest)) = rest.split_once('\t') else { continue };
        if num.parse::<u32>().is_err() || (dpi_only && !rest.contains("[Confidence: DPI")) {
            continue;
        }
        let mut parts = rest.split(' ');
        let (Some(l4), Some(a), Some(_arrow), Some(b)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if l4 != "TCP" && l4 != "UDP" {
            continue;
        }
        let Some(proto) = rest.split("[proto: ").nth(1).and_then(|s| s.split(']').next()) else {
            continue;
        };
        let label = proto.split_once('/').map_or(proto, |(_, l)| l);
        m.insert(key(l4, a.to_string(), b.to_string()), label.to_string());
    }
    m
}

/// A label's master protocol, lower case.
pub(crate) fn master(label: &str) -> String {
    label.split('.').next().unwrap_or(label).to_ascii_lowercase()
}

/// Snabbwall's protocol names (nDPI 1.x) as rampart (and today's nDPI) writes them.
pub(crate) fn today(name: &str) -> String {
    match name {
        "MAIL_IMAP" => "IMAP",
        "MAIL_SMTP" => "SMTP",
        "MAIL_POP" => "POP3",
        "POSTGRES" => "POSTGRESQL",
        "MPEGTS" => "MPEG_TS",
        // nDPI's protocol 125, renamed when Skype and Teams merged.
        "SKYPE" => "SKYPE_TEAMS",
        other => other,
    }
    .to_string()
}

/// Snabbwall's captures (`pcaps/dpi/snabbwall`) against their expected protocol sets:
/// `labels` gives the labels found in a capture; returns how many expected protocols are
/// among them (as `MASTER.APP` parts, upper case) and how many are expected, saying which
/// are missing. `None` when the captures are absent.
pub(crate) fn snabbwall(mut labels: impl FnMut(&Path) -> Vec<String>) -> Option<(usize, usize)> {
    let dir = data_dir("pcaps/dpi/snabbwall")?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "cap"))
        .collect();
    files.sort();
    let (mut found, mut expected) = (0, 0);
    let mut err = std::io::stderr();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let Ok(want) = std::fs::read_to_string(dir.join(format!("{name}.spy.expect"))) else {
            continue;
        };
        let ours: std::collections::BTreeSet<String> = labels(&f)
            .iter()
            .flat_map(|label| label.split('.').map(str::to_ascii_uppercase).collect::<Vec<_>>())
            .collect();
        for w in want.split_whitespace() {
            expected += 1;
            if ours.contains(&today(w)) {
                found += 1;
            } else {
                let _ = writeln!(err, "snabbwall {name}: {w} not reported (rampart: {ours:?})");
            }
        }
    }
    let _ = writeln!(err, "snabbwall: {found} of {expected} expected protocols reported");
    Some((found, expected))
}
