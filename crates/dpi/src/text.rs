//! Line-based protocols: HTTP/1.x (host, user agent, CONNECT, WebSocket upgrades), the
//! HTTP/2 preface, SSH banners, mail and FTP dialogues, SIP, SSDP and RTSP.

use crate::registry::{Detector, First, Transport};
use crate::{Label, Meta, Packet, Proto, Seen, text_of};

/// Text protocols over TCP.
pub(crate) const DETECTOR: Detector = Detector {
    protos: &[
        Proto::Http,
        Proto::HttpConnect,
        Proto::Http2,
        Proto::WebSocket,
        Proto::Ipp,
        Proto::Rtsp,
        Proto::Ssh,
        Proto::Telnet,
        Proto::Irc,
        Proto::Nntp,
        Proto::Smtp,
        Proto::Pop3,
        Proto::Imap,
        Proto::FtpControl,
        Proto::FtpData,
        Proto::Smtps,
        Proto::Pop3s,
        Proto::Imaps,
        Proto::Other(&FTPS),
    ],
    transport: Transport::Tcp,
    first: First::Text(&[0xff]),
    evidence: "a whole request or status line (HTTP, RTSP), a banner (SSH), a greeting or \
               command line ending in a line break (mail, FTP, IRC, NNTP), Telnet option \
               negotiation, or an `ls -l` listing line (FTP data); a client's STARTTLS, \
               STLS or AUTH TLS line within the inspected packets (SMTPS, POPS, IMAPS, FTPS)",
    source: "RFC 9112, RFC 9113 (HTTP/2 preface), RFC 6455 (WebSocket), RFC 2326 (RTSP), \
             RFC 4253 (SSH), RFC 5321, RFC 1939, RFC 9051, RFC 959, RFC 1459, RFC 3977, RFC 854, \
             RFC 3207, RFC 2595, RFC 4217 (STARTTLS, STLS, AUTH TLS)",
    detect,
};

/// SIP, SSDP and BitTorrent's local discovery over UDP.
pub(crate) const UDP: Detector = Detector {
    protos: &[Proto::Sip, Proto::Ssdp],
    transport: Transport::Udp,
    first: First::Text(&[]),
    evidence: "a SIP request or status line, an SSDP M-SEARCH or NOTIFY request, or an \
               HTTP 200 response with the ST and USN headers (a search response)",
    source: "RFC 3261, UPnP Device Architecture 2.0",
    detect: udp,
};

const METHODS: &[&[u8]] = &[
    b"GET ",
    b"POST ",
    b"HEAD ",
    b"PUT ",
    b"DELETE ",
    b"OPTIONS ",
    b"PATCH ",
    b"CONNECT ",
    b"TRACE ",
    b"PROPFIND ",
];

/// RTSP's methods that HTTP does not have (RFC 2326 section 10; OPTIONS is with HTTP's).
const RTSP_METHODS: &[&[u8]] = &[
    b"DESCRIBE ",
    b"ANNOUNCE ",
    b"GET_PARAMETER ",
    b"SET_PARAMETER ",
    b"PAUSE ",
    b"PLAY ",
    b"RECORD ",
    b"REDIRECT ",
    b"SETUP ",
    b"TEARDOWN ",
];

/// The headers of an HTTP head that identification reads, found in one pass.
#[derive(Default)]
struct Headers<'a> {
    host: Option<&'a [u8]>,
    user_agent: Option<&'a [u8]>,
    content_type: Option<&'a [u8]>,
    upgrade: Option<&'a [u8]>,
    /// Whether the blank line that ends the head was seen.
    complete: bool,
}

/// The headers of an HTTP head (the request or status line skipped), up to the blank line.
fn headers(head: &[u8]) -> Headers<'_> {
    let mut h = Headers::default();
    for line in head.split(|&c| c == b'\n').skip(1) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            h.complete = true;
            break;
        }
        let Some(colon) = line.iter().position(|&c| c == b':') else { continue };
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        let slot = match name.len() {
            4 if name.eq_ignore_ascii_case(b"host") => &mut h.host,
            10 if name.eq_ignore_ascii_case(b"user-agent") => &mut h.user_agent,
            12 if name.eq_ignore_ascii_case(b"content-type") => &mut h.content_type,
            7 if name.eq_ignore_ascii_case(b"upgrade") => &mut h.upgrade,
            _ => continue,
        };
        slot.get_or_insert(value);
    }
    h
}

fn starts(b: &[u8], prefix: &[u8]) -> bool {
    b.len() >= prefix.len() && b[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// Text protocols over TCP.
pub(crate) fn detect(p: &Packet<'_>, meta: &mut Meta) -> Seen {
    let b = p.payload;
    if starts(b, b"PRI * HTTP/2.0") {
        return Seen::Is(Label::of(Proto::Http2));
    }
    if let Some(m) = METHODS.iter().find(|m| b.starts_with(m)) {
        let line_end = b.iter().position(|&c| c == b'\n');
        let Some(line_end) = line_end else {
            return if b.len() < 4096 { Seen::More } else { Seen::No };
        };
        let line = &b[..line_end];
        if starts(line.rsplit(|&c| c == b' ').next().unwrap_or(b""), b"RTSP/1.0") {
            return Seen::Is(Label::of(Proto::Rtsp));
        }
        if !line.windows(5).any(|w| w == b"HTTP/") {
            return Seen::No;
        }
        let h = headers(b);
        if !h.complete && b.len() < 4096 {
            // The host and user agent may be in the next segment.
            return Seen::More;
        }
        if let Some(host) = h.host {
            meta.http_host = Some(text_of(host));
        }
        if let Some(ua) = h.user_agent {
            meta.user_agent = Some(text_of(ua));
        }
        if h.content_type.is_some_and(|v| starts(v, b"application/ipp")) {
            // nDPI names IPP over HTTP as an application of HTTP.
            return Seen::Is(Label { master: Proto::Http, app: Some("IPP") });
        }
        // A request for an absolute URI goes to a proxy (RFC 9112, 3.2.2).
        let target = line.get(m.len()..).unwrap_or(b"");
        if starts(target, b"http://") {
            return Seen::Is(Label::of(Proto::Other(&"HTTP_Proxy")));
        }
        if *m == b"CONNECT " {
            return Seen::Is(Label::of(Proto::HttpConnect));
        }
        if h.upgrade.is_some_and(|v| v.eq_ignore_ascii_case(b"websocket")) {
            return Seen::Is(Label::of(Proto::WebSocket));
        }
        return Seen::Is(Label::of(Proto::Http));
    }
    if starts(b, b"HTTP/1.") && b.len() >= 12 && b[8] == b' ' {
        return Seen::Is(Label::of(Proto::Http));
    }
    if b.starts_with(b"RTSP/1.0 ") {
        return Seen::Is(Label::of(Proto::Rtsp));
    }
    // RTSP's own methods (RFC 2326 section 10): `SETUP rtsp://... RTSP/1.0`.
    if let Some(m) = RTSP_METHODS.iter().find(|m| b.starts_with(m)) {
        let line = b.split(|&c| c == b'\n').next().unwrap_or(b).trim_ascii_end();
        let target = line.get(m.len()..).unwrap_or(b"");
        if (starts(target, b"rtsp://") || starts(target, b"rtsps://") || target.starts_with(b"*"))
            && line.ends_with(b" RTSP/1.0")
        {
            return Seen::Is(Label::of(Proto::Rtsp));
        }
    }
    if b.starts_with(b"SSH-") {
        if b.len() > 8 && (b.starts_with(b"SSH-2.0-") || b.starts_with(b"SSH-1.")) {
            let end = b.iter().position(|&c| c == b'\r' || c == b'\n').unwrap_or(b.len());
            meta.ssh_banner = Some(text_of(&b[..end]));
            return Seen::Is(Label::of(Proto::Ssh));
        }
        return Seen::No;
    }
    if let found @ Seen::Is(_) = chat_and_news(p) {
        return found;
    }
    mail_and_ftp(p)
}

/// A directory listing as FTP servers send it over a data connection (`LIST`): lines like
/// `ls -l`'s, starting with the file type and nine permission letters and ending in CRLF.
fn is_listing(b: &[u8]) -> bool {
    if b.len() < 22 || !matches!(b[0], b'-' | b'd' | b'l') || b[10] != b' ' {
        return false;
    }
    let Some(end) = b.windows(2).position(|w| w == b"\r\n") else { return false };
    let line = &b[..end];
    line.len() > 20
        && matches!(line[0], b'-' | b'd' | b'l')
        && line[1..10].chunks(3).all(|t| {
            matches!(t[0], b'r' | b'-')
                && matches!(t[1], b'w' | b'-')
                && matches!(t[2], b'x' | b'-' | b's' | b'S' | b't' | b'T')
        })
        && line[10] == b' '
}

/// IRC, NNTP and Telnet.
fn chat_and_news(p: &Packet<'_>) -> Seen {
    let b = p.payload;
    // Telnet option negotiation: IAC, then WILL/WONT/DO/DONT or a subnegotiation.
    // The option must be a registered one (0-49, 138-140, 255).
    if b.len() >= 3
        && b[0] == 0xff
        && (0xfa..=0xfe).contains(&b[1])
        && matches!(b[2], 0..=49 | 138..=140 | 255)
    {
        return Seen::Is(Label::of(Proto::Telnet));
    }
    if !b.ends_with(b"\n") {
        return Seen::No;
    }
    // IRC's registration: `USER name mode unused :real name`.
    let irc_user = starts(b, b"USER ")
        && b.split(|&c| c == b' ').nth(4).is_some_and(|w| w.first() == Some(&b':'));
    if irc_user
        || starts(b, b"NICK ")
        || starts(b, b"PASS ") && p.port(6667)
        || (b[0] == b':' && b.windows(5).any(|w| w == b" 001 " || w == b" 020 " || w == b"NOTIC"))
    {
        return Seen::Is(Label::of(Proto::Irc));
    }
    if p.port(119)
        && (starts(b, b"200 ")
            || starts(b, b"201 ")
            || starts(b, b"MODE READER")
            || starts(b, b"GROUP ")
            || starts(b, b"ARTICLE"))
    {
        return Seen::Is(Label::of(Proto::Nntp));
    }
    Seen::No
}

/// FTP over TLS after `AUTH TLS` (nDPI's name).
pub(crate) const FTPS: &str = "FTPS";

/// SMTP, POP3, IMAP and FTP, from either side's first lines, and a client's request to
/// continue over TLS (SMTPS, POPS, IMAPS, FTPS, as nDPI names the upgraded sessions).
fn mail_and_ftp(p: &Packet<'_>) -> Seen {
    let b = p.payload;
    if is_listing(b) {
        return Seen::Is(Label::of(Proto::FtpData));
    }
    if !b.ends_with(b"\n") || b.len() < 4 {
        return Seen::No;
    }
    let mail = |proto| Seen::Is(Label::of(proto));
    // A client's request to continue over TLS: SMTP's STARTTLS (RFC 3207), POP3's STLS
    // (RFC 2595), IMAP's tagged STARTTLS (RFC 9051), FTP's AUTH TLS (RFC 4217). Servers
    // never send these lines bare (they list the extension in longer lines), so the side
    // need not be known (a capture may miss the connection's start).
    {
        let line = b.trim_ascii_end();
        if line.eq_ignore_ascii_case(b"STARTTLS") {
            return mail(Proto::Smtps);
        }
        if line.eq_ignore_ascii_case(b"STLS") {
            return mail(Proto::Pop3s);
        }
        if line.eq_ignore_ascii_case(b"AUTH TLS") || line.eq_ignore_ascii_case(b"AUTH SSL") {
            return mail(Proto::Other(&FTPS));
        }
        if let Some(sp) = line.iter().position(|&c| c == b' ')
            && (1..=10).contains(&sp)
            && line[..sp].iter().all(|&c| c.is_ascii_graphic() && !b"(){%*\"\\+".contains(&c))
            && line[sp + 1..].eq_ignore_ascii_case(b"STARTTLS")
        {
            return mail(Proto::Imaps);
        }
    }
    // Clients.
    if starts(b, b"EHLO ") || starts(b, b"HELO ") {
        return mail(Proto::Smtp);
    }
    if starts(b, b"USER ") || starts(b, b"AUTH ") || starts(b, b"CAPA\r") {
        return if p.port(21) {
            mail(Proto::FtpControl)
        } else if p.port(110) || p.port(995) || starts(b, b"CAPA") {
            mail(Proto::Pop3)
        } else {
            mail(Proto::FtpControl)
        };
    }
    // Tagged IMAP commands: `a1 CAPABILITY`, `A001 LOGIN ...`.
    if let Some(sp) = b.iter().position(|&c| c == b' ')
        && sp > 0
        && sp <= 10
        && b[..sp].iter().all(u8::is_ascii_alphanumeric)
    {
        let cmd = &b[sp + 1..];
        if [&b"CAPABILITY"[..], b"LOGIN ", b"STARTTLS", b"AUTHENTICATE ", b"ID "]
            .iter()
            .any(|c| starts(cmd, c))
        {
            return mail(Proto::Imap);
        }
    }
    // Servers.
    if starts(b, b"+OK") {
        return mail(Proto::Pop3);
    }
    if starts(b, b"* OK") || starts(b, b"* PREAUTH") {
        return mail(Proto::Imap);
    }
    if b.starts_with(b"220") && (b[3] == b' ' || b[3] == b'-') {
        let lower = b.to_ascii_lowercase();
        let has = |s: &[u8]| lower.windows(s.len()).any(|w| w == s);
        if has(b"smtp") || has(b"mail") || p.port(25) || p.port(587) {
            return mail(Proto::Smtp);
        }
        if has(b"ftp") || p.port(21) {
            return mail(Proto::FtpControl);
        }
    }
    Seen::No
}

/// Whether an HTTP response over UDP is an SSDP search response: it is sent unicast from
/// any port, and carries the `ST` (search target) and `USN` (unique service name) headers
/// (UPnP Device Architecture 2.0, section 1.3.3).
fn search_response(b: &[u8]) -> bool {
    let (mut st, mut usn) = (false, false);
    for line in b.split(|&c| c == b'\n').skip(1).take(32) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            break;
        }
        let Some(colon) = line.iter().position(|&c| c == b':') else { continue };
        let name = &line[..colon];
        st |= name.eq_ignore_ascii_case(b"st");
        usn |= name.eq_ignore_ascii_case(b"usn");
    }
    st && usn
}

/// SIP and SSDP over UDP.
pub(crate) fn udp(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    // The first line (a request line ends in `SIP/2.0`, a status line starts with it).
    let head = &b[..b.len().min(256)];
    let first = head.split(|&c| c == b'\n').next().unwrap_or(head);
    if first.starts_with(b"SIP/2.0 ") || first.trim_ascii_end().ends_with(b" SIP/2.0") {
        return Seen::Is(Label::of(Proto::Sip));
    }
    if starts(b, b"BT-SEARCH * HTTP/1.1") {
        // BitTorrent's local peer discovery.
        return Seen::Is(Label::of(Proto::BitTorrent));
    }
    if (starts(b, b"M-SEARCH * HTTP/1.1") || starts(b, b"NOTIFY * HTTP/1.1"))
        || (starts(b, b"HTTP/1.1 200 OK") && (p.port(1900) || search_response(b)))
    {
        return Seen::Is(Label::of(Proto::Ssdp));
    }
    Seen::No
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(b: &[u8], ports: [u16; 2]) -> (Seen, Meta) {
        let mut m = Meta::default();
        let s = detect(&Packet { payload: b, from_initiator: true, ports, index: 0 }, &mut m);
        (s, m)
    }

    #[test]
    fn http_requests_and_their_headers() {
        let (s, m) = seen(
            b"GET / HTTP/1.1\r\nHost: www.netflix.com\r\nUser-Agent: curl/8\r\n\r\n",
            [5000, 80],
        );
        assert_eq!(s, Seen::Is(Label::of(Proto::Http)));
        assert_eq!(m.http_host.as_deref(), Some("www.netflix.com"));
        assert_eq!(m.user_agent.as_deref(), Some("curl/8"));
        let (s, _) = seen(b"GET / HTTP/1.1\r\nHost: a", [5000, 80]);
        assert_eq!(s, Seen::More);
        let (s, _) = seen(b"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", [5000, 3128]);
        assert_eq!(s, Seen::Is(Label::of(Proto::HttpConnect)));
        let (s, _) = seen(b"GET /c HTTP/1.1\r\nUpgrade: websocket\r\n\r\n", [5000, 80]);
        assert_eq!(s, Seen::Is(Label::of(Proto::WebSocket)));
    }

    #[test]
    fn ftp_directory_listings() {
        let listing =
            b"-rw-r--r--    1 0        0        1073741824000 Feb 19  2016 1000GB.zip\r\n\
                        drwxr-xr-x    2 0        0        4096 Feb 19  2016 upload\r\n";
        assert_eq!(seen(listing, [25685, 50695]).0, Seen::Is(Label::of(Proto::FtpData)));
        // Not a listing: the permission letters are wrong, or there is no line end.
        assert_eq!(seen(b"-rw-r--r-x-q 1 0 0 1 Feb 19 2016 a\r\n", [1, 2]).0, Seen::No);
        assert_eq!(seen(b"-rw-r--r--    1 0        0        10 Feb", [1, 2]).0, Seen::No);
    }

    #[test]
    fn rtsp_requests() {
        let setup = b"SETUP rtsp://192.0.2.5:8554/trackID=1 RTSP/1.0\r\nCSeq: 4\r\n\r\n";
        let p = Packet { payload: setup, from_initiator: true, ports: [63840, 8554], index: 0 };
        assert_eq!(detect(&p, &mut Meta::default()), Seen::Is(Label::of(Proto::Rtsp)));
        // A method and nothing else (the line, trimmed, is shorter than the method).
        for short in [&b"PLAY \r\n"[..], b"SETUP \n", b"TEARDOWN "] {
            let p = Packet { payload: short, from_initiator: true, ports: [1, 554], index: 0 };
            assert_ne!(detect(&p, &mut Meta::default()), Seen::Is(Label::of(Proto::Rtsp)));
        }
        let play = b"PLAY something else\r\n";
        let p = Packet { payload: play, from_initiator: true, ports: [63840, 8554], index: 0 };
        assert_ne!(detect(&p, &mut Meta::default()), Seen::Is(Label::of(Proto::Rtsp)));
    }

    #[test]
    fn starttls_upgrades() {
        let cfg = crate::Config::default();
        let session = |lines: &[(bool, &[u8])], port: u16| {
            let mut f = crate::FlowDpi::new(6);
            for (client, line) in lines {
                f.feed(&cfg, *client, [50000, port], line);
            }
            f.give_up([50000, port]);
            f.label().master.name()
        };
        let greet: &[u8] = b"220 mx.example.org ESMTP ready\r\n";
        let ehlo: &[u8] = b"EHLO client.example.org\r\n";
        let caps: &[u8] = b"250-mx.example.org\r\n250 STARTTLS\r\n";
        assert_eq!(session(&[(false, greet), (true, ehlo), (false, caps)], 25), "SMTP");
        let upgraded = [(false, greet), (true, ehlo), (false, caps), (true, b"STARTTLS\r\n")];
        assert_eq!(session(&upgraded, 25), "SMTPS");
        let pop: [(bool, &[u8]); 2] = [(false, b"+OK POP3 ready\r\n"), (true, b"STLS\r\n")];
        assert_eq!(session(&pop, 110), "POPS");
        let imap: [(bool, &[u8]); 2] = [(false, b"* OK IMAP4rev1\r\n"), (true, b". STARTTLS\r\n")];
        assert_eq!(session(&imap, 143), "IMAPS");
        let ftp: [(bool, &[u8]); 2] =
            [(false, b"220 FTP server ready\r\n"), (true, b"AUTH TLS\r\n")];
        assert_eq!(session(&ftp, 21), "FTPS");
        // The server naming the extension is no request.
        let from_server: [(bool, &[u8]); 2] = [(false, greet), (false, b"250-STARTTLS\r\n")];
        assert_eq!(session(&from_server, 25), "SMTP");
        let listed: [(bool, &[u8]); 2] =
            [(false, b"* OK IMAP4rev1\r\n"), (false, b"* CAPABILITY IMAP4rev1 STARTTLS\r\n")];
        assert_eq!(session(&listed, 143), "IMAP");
    }

    #[test]
    fn ssdp_search_responses_from_any_port() {
        let ok = b"HTTP/1.1 200 OK\r\nCACHE-CONTROL: max-age=1800\r\nEXT:\r\n\
                   LOCATION: http://192.0.2.7:80/desc.xml\r\nST: upnp:rootdevice\r\n\
                   USN: uuid:2fac1234-31f8-11b4-a222-08002b34c003::upnp:rootdevice\r\n\r\n";
        let mut m = Meta::default();
        let p = Packet { payload: ok, from_initiator: true, ports: [38616, 61328], index: 0 };
        assert_eq!(udp(&p, &mut m), Seen::Is(Label::of(Proto::Ssdp)));
        // Without the search headers, an HTTP response over UDP is not SSDP.
        let plain = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nServer: x\r\n\r\n";
        let p = Packet { payload: plain, from_initiator: true, ports: [38616, 61328], index: 0 };
        assert_eq!(udp(&p, &mut m), Seen::No);
    }

    #[test]
    fn banners() {
        let (s, m) = seen(b"SSH-2.0-OpenSSH_9.2\r\n", [22, 5000]);
        assert_eq!(s, Seen::Is(Label::of(Proto::Ssh)));
        assert_eq!(m.ssh_banner.as_deref(), Some("SSH-2.0-OpenSSH_9.2"));
        assert_eq!(seen(b"220 mx ESMTP ready\r\n", [25, 5000]).0, Seen::Is(Label::of(Proto::Smtp)));
        assert_eq!(seen(b"+OK POP3 ready\r\n", [110, 5000]).0, Seen::Is(Label::of(Proto::Pop3)));
        assert_eq!(seen(b"* OK IMAP4rev1\r\n", [143, 5000]).0, Seen::Is(Label::of(Proto::Imap)));
        assert_eq!(seen(b"220 ProFTPD\r\n", [21, 5000]).0, Seen::Is(Label::of(Proto::FtpControl)));
        assert_eq!(seen(b"hello world\n", [5000, 6000]).0, Seen::No);
    }
}
