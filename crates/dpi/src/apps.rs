//! Applications recognised from server names (TLS SNI, HTTP host, DNS query), as nDPI
//! names them. The list is data: a server name matches an entry when it is the entry or
//! ends with `.` and the entry.

/// (domain suffix, application).
const HOSTS: &[(&str, &str)] = &[
    ("youtube.com", "YouTube"),
    ("googlevideo.com", "YouTube"),
    ("ytimg.com", "YouTube"),
    ("youtube-nocookie.com", "YouTube"),
    ("googleapis.com", "GoogleServices"),
    ("ggpht.com", "YouTube"),
    ("mail.google.com", "GMail"),
    ("gmail.com", "GMail"),
    ("googlesyndication.com", "Google"),
    ("gstatic.com", "Google"),
    ("google.com", "Google"),
    ("googleusercontent.com", "Google"),
    ("doubleclick.net", "Google"),
    ("netflix.com", "NetFlix"),
    ("nflxvideo.net", "NetFlix"),
    ("nflximg.net", "NetFlix"),
    ("nflxext.com", "NetFlix"),
    ("nflxso.net", "NetFlix"),
    ("facebook.com", "Facebook"),
    ("fbcdn.net", "Facebook"),
    ("instagram.com", "Instagram"),
    ("cdninstagram.com", "Instagram"),
    ("whatsapp.net", "WhatsApp"),
    ("whatsapp.com", "WhatsApp"),
    ("telegram.org", "Telegram"),
    ("t.me", "Telegram"),
    ("discord.com", "Discord"),
    ("discord.gg", "Discord"),
    ("discordapp.com", "Discord"),
    ("discordapp.net", "Discord"),
    ("zoom.us", "Zoom"),
    ("zoom.com", "Zoom"),
    ("teams.microsoft.com", "Teams"),
    ("teams.live.com", "Teams"),
    ("skype.com", "Skype_Teams"),
    ("lync.com", "Teams"),
    ("microsoft.com", "Microsoft"),
    ("office.com", "Microsoft365"),
    ("office365.com", "Microsoft365"),
    ("outlook.com", "Outlook"),
    ("live.com", "Microsoft"),
    ("spotify.com", "Spotify"),
    ("scdn.co", "Spotify"),
    ("dropbox.com", "Dropbox"),
    ("dropboxapi.com", "Dropbox"),
    ("teamviewer.com", "TeamViewer"),
    ("tailscale.com", "Tailscale"),
    ("tailscale.io", "Tailscale"),
    ("signal.org", "Signal"),
    ("whispersystems.org", "Signal"),
    ("microsoftstream.com", "Skype_Teams"),
    ("hockeyapp.net", "Skype_Teams"),
    ("microsoftonline.com", "Microsoft365"),
    ("teams.office.com", "Teams"),
    ("appcenter.ms", "Microsoft"),
    ("trafficmanager.net", "Microsoft"),
    ("googletagmanager.com", "GoogleServices"),
    ("cloudflare.com", "Cloudflare"),
    ("cdn.whatsapp.net", "WhatsAppFiles"),
    ("anydesk.com", "AnyDesk"),
    ("github.com", "Github"),
    ("githubusercontent.com", "Github"),
    ("ntop.org", "ntop"),
    ("apple.com", "Apple"),
    ("icloud.com", "AppleiCloud"),
    ("itunes.apple.com", "AppleiTunes"),
    ("amazon.com", "Amazon"),
    ("twitter.com", "Twitter"),
    ("x.com", "Twitter"),
    ("tiktok.com", "TikTok"),
    ("wikipedia.org", "Wikipedia"),
    ("cloudflare-dns.com", "DoH_DoT"),
    ("utorrent.com", "BitTorrent"),
    ("bittorrent.com", "BitTorrent"),
    ("dns.google", "DoH_DoT"),
];

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

/// The application a server name belongs to, if it is on the list (the longest matching
/// entry wins).
pub fn app_for_host(host: &str) -> Option<&'static str> {
    let host = host.trim_end_matches('.');
    let host = host
        .rsplit_once(':')
        .filter(|(_, p)| p.bytes().all(|c| c.is_ascii_digit()))
        .map_or(host, |(h, _)| h);
    let mut best: Option<(&str, &str)> = None;
    for &(suffix, app) in HOSTS {
        let hit = host.eq_ignore_ascii_case(suffix)
            || (host.len() > suffix.len()
                && host.as_bytes()[host.len() - suffix.len() - 1] == b'.'
                && host[host.len() - suffix.len()..].eq_ignore_ascii_case(suffix));
        if hit && best.is_none_or(|(s, _)| suffix.len() > s.len()) {
            best = Some((suffix, app));
        }
    }
    best.map(|(_, app)| app)
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

/// A block: family, network, prefix length, application.
type Block = (u8, [u8; 16], u8, &'static str);

/// Address blocks of applications: `data/addresses.txt`, parsed once.
fn blocks() -> &'static [Block] {
    static BLOCKS: std::sync::OnceLock<Vec<Block>> = std::sync::OnceLock::new();
    BLOCKS.get_or_init(|| {
        let mut out = Vec::new();
        for line in include_str!("../data/addresses.txt").lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            let Some((prefix, app)) = line.split_once(' ') else { continue };
            let Some((addr, len)) = prefix.split_once('/') else { continue };
            let (Ok(addr), Ok(len)) = (addr.parse::<std::net::IpAddr>(), len.parse::<u8>()) else {
                continue;
            };
            let (family, bytes) = match addr {
                std::net::IpAddr::V4(v) => {
                    let mut b = [0u8; 16];
                    b[..4].copy_from_slice(&v.octets());
                    (4, b)
                }
                std::net::IpAddr::V6(v) => (6, v.octets()),
            };
            out.push((family, bytes, len, app.trim()));
        }
        out
    })
}

/// The application an address belongs to, by `data/addresses.txt` (`family` 4 or 6;
/// IPv4 in the first four bytes).
pub fn app_for_address(family: u8, addr: &[u8; 16]) -> Option<&'static str> {
    blocks().iter().find_map(|&(f, ref net, len, app)| {
        let bits = usize::from(len);
        let whole = bits / 8;
        let rest = bits % 8;
        let same = f == family
            && addr[..whole] == net[..whole]
            && (rest == 0 || (addr[whole] ^ net[whole]) >> (8 - rest) == 0);
        same.then_some(app)
    })
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
        assert!(blocks().len() >= 10);
    }
}
