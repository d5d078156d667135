//! Binary protocols: over UDP (NTP, DHCP, DHCPv6, SNMP, STUN, WireGuard, NetBIOS, syslog,
//! QUIC and gQUIC headers, BitTorrent's DHT and uTP, OpenVPN, IKE, Kerberos, RTP) and over
//! TCP (BitTorrent's handshake, SMB, NetBIOS sessions, RDP, MQTT, Kerberos, LDAP, RTMP,
//! TeamViewer); and the well-known ports used when nothing recognised a flow.

use crate::registry::{Detector, First, Transport};
use crate::{Label, Meta, Packet, Proto, Seen, TCP, UDP, be16, be32};

fn is(p: Proto) -> Seen {
    Seen::Is(Label::of(p))
}

/// The binary protocols over UDP that predate the per-protocol files.
pub(crate) const UDP_BINARY: Detector = Detector {
    protos: &[
        Proto::Quic,
        Proto::Discord,
        Proto::Dropbox,
        Proto::Spotify,
        Proto::Zoom,
        Proto::Stun,
        Proto::Tailscale,
        Proto::WireGuard,
        Proto::BitTorrent,
        Proto::Nfs,
        Proto::Tftp,
        Proto::MpegTs,
        Proto::TeamSpeak,
        Proto::Rtcp,
        Proto::Ntp,
        Proto::Dhcp,
        Proto::Dhcpv6,
        Proto::Snmp,
        Proto::NetBios,
        Proto::Syslog,
        Proto::Kerberos,
        Proto::IpSec,
        Proto::OpenVpn,
    ],
    transport: Transport::Udp,
    first: First::Any,
    evidence: "one datagram with the protocol's header: magic values (STUN cookie, DHCP \
               cookie, WireGuard and QUIC types and versions), lengths that match the datagram, \
               ASN.1 structure (SNMP, Kerberos); OpenVPN needs a control packet from each side \
               or three with one session id; WireGuard data off port 51820 three packets with \
               one receiver index and an advancing counter",
    source: "RFC 9000/9369 (QUIC), RFC 8489 and RFC 3489 (STUN), RFC 2131/8415 (DHCP), \
             RFC 3411 (SNMP), RFC 4120 (Kerberos), RFC 7296 (IKEv2), RFC 5905 (NTP), RFC 5424 (syslog), \
             RFC 1002 (NetBIOS), RFC 1350 (TFTP), RFC 5531 (ONC RPC), BEP 5/29 (BitTorrent), \
             WireGuard paper, OpenVPN protocol docs",
    detect,
};

/// The binary protocols over TCP that predate the per-protocol files.
pub(crate) const TCP_BINARY: Detector = Detector {
    protos: &[
        Proto::BitTorrent,
        Proto::WhatsApp,
        Proto::NetBios,
        Proto::Rdp,
        Proto::Nfs,
        Proto::MySql,
        Proto::PostgreSql,
        Proto::H323,
        Proto::Mqtt,
        Proto::Kerberos,
        Proto::Ldap,
        Proto::Rtmp,
        Proto::TeamViewer,
        Proto::OpenVpn,
    ],
    transport: Transport::Tcp,
    first: First::Any,
    evidence: "the first message's header: magic strings (BitTorrent, MQTT), lengths that \
               match the segment (TPKT, MySQL, PostgreSQL, Kerberos), SMB's magic in a \
               NetBIOS session, RTMP's C0 and C1 (exactly 1537 bytes in the client's first \
               flight); OpenVPN needs a control packet from each side",
    source: "BEP 3 (BitTorrent), RFC 1006 and MS-RDPBCGR (RDP), MySQL and PostgreSQL \
             protocol docs, MQTT 3.1.1/5.0, RFC 4120 (Kerberos), RFC 4511 (LDAP), Adobe \
             RTMP spec, MS-SMB/MS-SMB2",
    detect: tcp_binary,
};

/// RTP: a heuristic, so it needs more than one packet.
pub(crate) const RTP: Detector = Detector {
    protos: &[Proto::Rtp],
    transport: Transport::Udp,
    first: First::Range(0x80, 0xbf),
    evidence: "version 2 and an audio/video payload type on unprivileged ports, with the same \
               synchronisation source in packets from both sides or in three from one",
    source: "RFC 3550, RFC 3551",
    detect: rtp,
};

/// RTP: version 2, a payload type in the audio/video ranges, on high ports; the source
/// (SSRC) must stay the same across a direction's packets.
fn rtp(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() >= 12 && b[0] >> 6 == 2 && p.ports[0] >= 1024 && p.ports[1] >= 1024 {
        let pt = b[1] & 0x7f;
        if pt <= 34 || (96..=127).contains(&pt) {
            // The same source and payload type, the sequence number advancing.
            let key = be32(b, 8).unwrap_or(0) ^ u32::from(pt) << 24;
            return Seen::Maybe(Label::of(Proto::Rtp), key, be16(b, 2));
        }
    }
    Seen::No
}

/// Whether a kerberos message (without any TCP record mark) has the shape RFC 4120 gives it:
/// an application tag for a message type, a length that fits, then a sequence whose first
/// field is the protocol version 5.
fn kerberos(b: &[u8]) -> bool {
    if b.len() < 10 || !matches!(b[0], 0x6a..=0x6f | 0x74..=0x76 | 0x7e) {
        return false;
    }
    let Some((len, at)) = ber_len(b, 1) else { return false };
    if at + len > b.len() + 4096 || at + len < b.len().min(at + 8) {
        return false;
    }
    if b.get(at) != Some(&0x30) {
        return false;
    }
    let Some((_, at)) = ber_len(b, at + 1) else { return false };
    // pvno: [0] or [1] INTEGER 5.
    matches!(b.get(at), Some(0xa0 | 0xa1)) && b.get(at + 1..at + 5) == Some(&[3, 2, 1, 5][..])
}

/// A BER length at `at`: the length and where the contents start.
pub(crate) fn ber_len(b: &[u8], at: usize) -> Option<(usize, usize)> {
    let first = *b.get(at)?;
    if first & 0x80 == 0 {
        return Some((usize::from(first), at + 1));
    }
    let n = usize::from(first & 0x7f);
    if n == 0 || n > 3 {
        return None;
    }
    let mut len = 0usize;
    for i in 0..n {
        len = len << 8 | usize::from(*b.get(at + 1 + i)?);
    }
    Some((len, at + 1 + n))
}

/// An RTCP compound packet (RFC 3550, 6.1): a sender or receiver report first, then
/// packets of version 2 and a defined type whose lengths add up to the datagram's.
fn rtcp(b: &[u8]) -> bool {
    if b.len() < 8 || !matches!(b.get(1), Some(200 | 201)) {
        return false;
    }
    let mut at = 0;
    while at < b.len() {
        let (Some(&first), Some(&kind), Some(words)) = (b.get(at), b.get(at + 1), be16(b, at + 2))
        else {
            return false;
        };
        if first >> 6 != 2 || !matches!(kind, 192 | 193 | 195 | 200..=213) {
            return false;
        }
        at += (usize::from(words) + 1) * 4;
    }
    at == b.len()
}

/// A STUN message (RFC 8489): the top bits clear, the magic cookie, and an attribute length
/// (a multiple of 4) that fits.
fn stun(b: &[u8]) -> bool {
    if b.len() >= 20 && be32(b, 4) == Some(0x2112_a442) && b[0] & 0xc0 == 0 {
        let len = usize::from(be16(b, 2).unwrap_or(0));
        return len + 20 <= b.len() && len % 4 == 0;
    }
    false
}

/// A STUN message of RFC 3489 (no magic cookie): a Binding or Shared Secret request,
/// response or error, a length equal to the rest after the 20-byte header, and attributes of
/// the types RFC 3489 defines (1-11) or comprehension-optional ones (0x8000 and above),
/// each with a length that fits, ending exactly with the message.
fn classic_stun(b: &[u8]) -> bool {
    let (Some(kind), Some(len)) = (be16(b, 0), be16(b, 2)) else { return false };
    if !matches!(kind, 0x0001 | 0x0101 | 0x0111 | 0x0002 | 0x0102 | 0x0112)
        || len == 0
        || usize::from(len) + 20 != b.len()
    {
        return false;
    }
    let mut at = 20;
    while at < b.len() {
        let (Some(t), Some(l)) = (be16(b, at), be16(b, at + 2)) else { return false };
        if !((1..=11).contains(&t) || t >= 0x8000) {
            return false;
        }
        at += 4 + usize::from(l);
    }
    at == b.len()
}

/// A QUIC version this code knows: 1, 2, the IETF drafts (0xff0000xx), version
/// negotiation (0), the reserved versions that force negotiation (0x?a?a?a?a, RFC 9000
/// section 15), Facebook's mvfst (0xfaceb00x) and Google's Q05x/T05x.
fn quic_version(v: u32) -> bool {
    // Google's QUIC versions in the IETF header: `Q050`, `T050`, `T051`.
    let google = matches!(v >> 24, 0x51 | 0x54) && (v & 0x00ff_ffff) >> 16 == 0x30;
    google
        || v <= 1
        || v == 0x6b33_43cf
        || v & 0xffff_ff00 == 0xff00_0000
        || v & 0x0f0f_0f0f == 0x0a0a_0a0a
        || v & 0xffff_fff0 == 0xface_b000
}

/// A NetBIOS name in its first-level encoding (RFC 1001, 14.1): length 32, then 32 letters
/// A-P (two per byte of the 16-byte name).
fn netbios_name(b: &[u8]) -> bool {
    b.first() == Some(&0x20)
        && b.get(1..33).is_some_and(|n| n.iter().all(|c| (b'A'..=b'P').contains(c)))
}

/// OpenVPN's control opcodes (hard resets, control, ack) with key id 0: the session id after
/// the opcode byte must stay the same across a direction's packets.
fn openvpn(b: &[u8]) -> Option<Seen> {
    // Hard reset client v1/v2/v3, server v1/v2, soft reset, control, ack.
    let op = b.first()? >> 3;
    if b.len() < 14 || b[0] & 7 != 0 || !matches!(op, 1 | 2 | 3 | 4 | 5 | 7 | 8 | 10) {
        return None;
    }
    let key = be32(b, 1)? ^ be32(b, 5)?;
    Some(Seen::Maybe(Label::of(Proto::OpenVpn), key, None))
}

/// UDP detectors, most specific first.
pub(crate) fn detect(p: &Packet<'_>, meta: &mut Meta) -> Seen {
    let b = p.payload;
    // Google QUIC's clear client hello.
    if p.from_initiator && b.len() > 20 && crate::quic::gquic_hello(b, meta) {
        return is(Proto::Quic);
    }
    // Its server's rejection, when the capture holds no hello.
    if crate::quic::gquic_reject(b) {
        return is(Proto::Quic);
    }
    // Discord voice: IP discovery (type 1 or 2, length 70) and its keep-alive.
    if (b.len() == 74 && (b[..4] == [0, 1, 0, 0x46] || b[..4] == [0, 2, 0, 0x46]))
        || b.starts_with(&[0x13, 0x37, 0xca, 0xfe])
    {
        return is(Proto::Discord);
    }
    // LAN discovery broadcasts.
    if p.port(17500) && b.starts_with(b"{\"") && b.windows(10).any(|w| w == b"\"host_int\"") {
        return is(Proto::Dropbox);
    }
    // LAN sync's message bus: datagrams to the LAN sync port name the bus `Bus17Cmd` near
    // their start (nDPI's dropbox.c).
    if p.ports[1] == 17500
        && p.ports[0] != 17500
        && b.len() > 16
        && b[..b.len().min(40)].windows(8).any(|w| w == b"Bus17Cmd")
    {
        return is(Proto::Dropbox);
    }
    if p.port(57621) && b.starts_with(b"SpotUdp0") {
        return is(Proto::Spotify);
    }
    // Zoom's media servers: port 8801-8810 and their packet types.
    if (8801..=8810).any(|port| p.port(port))
        && b.len() >= 20
        && matches!(b[0], 1..=5 | 0x0f | 0x10 | 0x1f | 0x20 | 0x21)
    {
        // A type byte alone is weak: it needs three such packets from both sides.
        return Seen::Maybe(Label::of(Proto::Zoom), 0, None);
    }
    // QUIC long header: form and fixed bits, a known version, connection ids of at most
    // 20 bytes.
    if b.len() >= 20
        && b[0] & 0xc0 == 0xc0
        && let Some(v) = be32(b, 1)
        && quic_version(v)
        && b[5] <= 20
        && b.get(6 + usize::from(b[5])).is_some_and(|&scid| scid <= 20)
    {
        return is(Proto::Quic);
    }
    // gQUIC: public flags with the version bit, then "Q0xx".
    if b.len() > 13
        && b[0] & 0x01 != 0
        && b[0] & 0x80 == 0
        && b.get(9) == Some(&b'Q')
        && b[10] == b'0'
    {
        return is(Proto::Quic);
    }
    if stun(b) || classic_stun(b) {
        return is(Proto::Stun);
    }
    // Tailscale's discovery messages: the magic `TS` and a speech balloon (U+1F4AC).
    if b.starts_with(b"TS\xf0\x9f\x92\xac") {
        return is(Proto::Tailscale);
    }
    // WireGuard: message type, three zero bytes, fixed sizes.
    if b.len() >= 32 && b[1..4] == [0, 0, 0] {
        match (b[0], b.len()) {
            (1, 148) | (2, 92) | (3, 64) => return is(Proto::WireGuard),
            (4, n) if n >= 32 && n % 16 == 0 && p.port(51820) => return is(Proto::WireGuard),
            // Transport data off the usual port: the receiver index stays the same and the
            // 64-bit little-endian counter advances, packet after packet.
            (4, n) if n >= 32 && n % 16 == 0 => {
                let receiver = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
                let counter = u16::from_le_bytes([b[8], b[9]]);
                return Seen::Maybe(Label::of(Proto::WireGuard), receiver, Some(counter));
            }
            _ => {}
        }
    }
    // BitTorrent DHT (bencoded dictionaries) and uTP.
    if b.starts_with(b"d1:ad2:id20:") || b.starts_with(b"d1:rd2:id20:") || b.starts_with(b"d1:eli")
    {
        return is(Proto::BitTorrent);
    }
    if b.len() >= 20
        && b[1] == 0
        && (b[0] == 0x41 || b[0] == 0x01 || b[0] == 0x21 || b[0] == 0x11 || b[0] == 0x31)
    {
        // uTP v1: type/version, extension 0..2, then a connection id and timestamps; a
        // SYN (0x41) has no payload.
        if b[0] == 0x41 && b.len() == 20 {
            return is(Proto::BitTorrent);
        }
    }
    // ONC RPC calls and replies for NFS and its helpers (portmap, mount, bootparams).
    if let Some(found) = rpc(b) {
        return found;
    }
    // TFTP: a read or write request: opcode, file name, mode.
    if p.port(69) && b.len() >= 4 && b[0] == 0 && (b[1] == 1 || b[1] == 2) {
        let lower = b.to_ascii_lowercase();
        if lower.windows(6).any(|w| w == b"octet\0") || lower.windows(9).any(|w| w == b"netascii\0")
        {
            return is(Proto::Tftp);
        }
    }
    // TFTP transfers on their own ports: DATA (up to 512 bytes) and ACK packets whose block
    // numbers advance.
    if b.len() >= 4 && b[0] == 0 && ((b[1] == 3 && b.len() <= 516) || (b[1] == 4 && b.len() == 4)) {
        return Seen::Maybe(Label::of(Proto::Tftp), u32::from(b[1]), be16(b, 2));
    }
    // MPEG transport stream: 188-byte packets, each starting with 0x47.
    if b.len() >= 188 && b.len().is_multiple_of(188) && b.chunks(188).all(|c| c[0] == 0x47) {
        return is(Proto::MpegTs);
    }
    // TeamSpeak 2 and 3.
    if b.starts_with(&[0xf4, 0xbe, 0x03, 0x00])
        || b.starts_with(&[0xf4, 0xbe, 0x01, 0x00])
        || b.starts_with(b"TS3INIT1")
    {
        return is(Proto::TeamSpeak);
    }
    // RTCP: a compound packet, starting with a sender or receiver report.
    if rtcp(b) {
        return is(Proto::Rtcp);
    }
    // NTP: version 1-4, a client/server/broadcast mode, 48 bytes or more, port 123.
    if p.port(123) && b.len() >= 48 {
        let v = (b[0] >> 3) & 7;
        let mode = b[0] & 7;
        // Stratum 0-16, a poll exponent 0-17, a precision of 2^0 to 2^-32 seconds.
        let precision = b[3] as i8;
        if (1..=4).contains(&v)
            && (1..=5).contains(&mode)
            && b[1] <= 16
            && b[2] <= 17
            && (-32..=0).contains(&precision)
        {
            return is(Proto::Ntp);
        }
    }
    // DHCP: BOOTP op, hardware type, and the magic cookie.
    if (p.port(67) || p.port(68))
        && b.len() >= 240
        && (b[0] == 1 || b[0] == 2)
        && be32(b, 236) == Some(0x6382_5363)
    {
        return is(Proto::Dhcp);
    }
    // DHCPv6: a client or relay message type on its ports.
    if (p.port(546) || p.port(547)) && b.len() >= 4 && (1..=13).contains(&b[0]) {
        // Options (code, length) that end exactly at the end; relays have a longer header.
        let mut at = if b[0] >= 12 { 34 } else { 4 };
        while let (Some(code), Some(len)) = (be16(b, at), be16(b, at + 2)) {
            if code == 0 {
                break;
            }
            at += 4 + usize::from(len);
        }
        if at == b.len() {
            return is(Proto::Dhcpv6);
        }
    }
    // SNMP: an ASN.1 sequence with an integer version 0-3.
    if (p.port(161) || p.port(162)) && b.len() > 6 && b[0] == 0x30 {
        let at = if b[1] & 0x80 != 0 { 2 + usize::from(b[1] & 0x7f) } else { 2 };
        if b.get(at) == Some(&2)
            && b.get(at + 1) == Some(&1)
            && b.get(at + 2).is_some_and(|&v| v <= 3)
        {
            return is(Proto::Snmp);
        }
    }
    // NetBIOS name service and datagrams.
    if p.port(137)
        && b.len() >= 50
        && (b[2] & 0x78) >> 3 <= 8
        && be16(b, 4).is_some_and(|q| q <= 1)
        && netbios_name(&b[12..])
    {
        return is(Proto::NetBios);
    }
    if p.port(138) && b.len() >= 50 && (0x10..=0x16).contains(&b[0]) && netbios_name(&b[14..]) {
        // A datagram carrying SMB (browser announcements): nDPI's `NetBIOS.SMBv1`.
        if b.windows(4).any(|w| w == b"\xffSMB") {
            return Seen::Is(Label { master: Proto::NetBios, app: Some("SMBv1") });
        }
        return is(Proto::NetBios);
    }
    // Syslog: "<PRI>" with PRI 0-191.
    if b.first() == Some(&b'<') {
        let end = b.iter().take(5).position(|&c| c == b'>');
        if let Some(e) = end
            && e > 1
            && b[1..e].iter().all(u8::is_ascii_digit)
            && std::str::from_utf8(&b[1..e])
                .ok()
                .and_then(|s| s.parse::<u16>().ok())
                .is_some_and(|v| v < 192)
        {
            return is(Proto::Syslog);
        }
    }
    // Kerberos: an application tag (AS-REQ 10 ... KRB-ERROR 30), then version 5.
    if kerberos(b) {
        return is(Proto::Kerberos);
    }
    // IKE on 500/4500 (after the non-ESP marker on 4500): version 1 or 2.
    let ike = if p.port(4500) && b.len() >= 32 && b[..4] == [0, 0, 0, 0] { &b[4..] } else { b };
    if (p.port(500) || p.port(4500)) && ike.len() >= 28 && (ike[17] == 0x10 || ike[17] == 0x20) {
        let len = be32(ike, 24).unwrap_or(0) as usize;
        if len == ike.len() {
            return is(Proto::IpSec);
        }
    }
    // OpenVPN: control packets with one session id per side.
    if let Some(seen) = openvpn(b) {
        return seen;
    }
    Seen::No
}

/// Binary protocols over TCP.
pub(crate) fn tcp_binary(p: &Packet<'_>, _meta: &mut Meta) -> Seen {
    let b = p.payload;
    if b.len() >= 20 && b[0] == 19 && &b[1..20] == b"BitTorrent protocol" {
        return is(Proto::BitTorrent);
    }
    // STUN over TCP, bare or in RFC 4571's length framing.
    if stun(b) || (usize::from(be16(b, 0).unwrap_or(0)) + 2 <= b.len() && stun(&b[2..])) {
        return is(Proto::Stun);
    }
    // WhatsApp's chat connection: its "WA" or "ED" header with a version.
    if b.len() >= 4
        && p.index == 0
        && (b[..2] == *b"WA" && (1..=6).contains(&b[2]) || b[..4] == [b'E', b'D', 0, 1])
    {
        return is(Proto::WhatsApp);
    }
    // NetBIOS session service carrying SMB.
    if b.len() >= 8 && b[0] == 0 && (p.port(445) || p.port(139)) {
        // SMB in a NetBIOS session: nDPI's `NetBIOS.SMBv1` and `NetBIOS.SMBv23`.
        match &b[4..8] {
            [0xff, b'S', b'M', b'B'] => {
                return Seen::Is(Label { master: Proto::NetBios, app: Some("SMBv1") });
            }
            [0xfe, b'S', b'M', b'B'] => {
                return Seen::Is(Label { master: Proto::NetBios, app: Some("SMBv23") });
            }
            _ => {}
        }
    }
    // Session service: a request with two encoded names, or an empty response or keep-alive.
    if p.port(139)
        && b.len() >= 4
        && b[1] & 0xfe == 0
        && usize::from(be16(b, 2).unwrap_or(0)) + 4 == b.len()
        && match b[0] {
            0x81 => netbios_name(&b[4..]),
            0x82 | 0x85 => b.len() == 4,
            _ => false,
        }
    {
        return is(Proto::NetBios);
    }
    // RDP: TPKT, then an X.224 connection request with RDP's routing cookie or negotiation
    // request, or a confirm with its negotiation response (other ISO transport users, such
    // as S7 or MMS, send requests without them).
    if b.len() >= 11
        && b[0] == 3
        && b[1] == 0
        && usize::from(be16(b, 2).unwrap_or(0)) == b.len()
        && (b[5] == 0xe0 || b[5] == 0xd0)
    {
        let x224 = &b[11..];
        let cookie = x224.starts_with(b"Cookie: ") || x224.starts_with(b"Cookie:");
        let neg = b.len() >= 19 && matches!(b[b.len() - 8], 1..=3) && b[b.len() - 6] == 8;
        if cookie || neg || p.port(3389) {
            return is(Proto::Rdp);
        }
    }
    // ONC RPC over TCP: a record mark, then the message.
    if b.len() > 28
        && b[0] & 0x80 != 0
        && let Some(found) = rpc(&b[4..])
    {
        return found;
    }
    // MySQL: the server's greeting (length, sequence 0, protocol 10, a version string).
    if b.len() > 10
        && b[3] == 0
        && b[4] == 10
        && usize::from(b[0]) | usize::from(b[1]) << 8 == b.len() - 4
        && b[5].is_ascii_digit()
    {
        return is(Proto::MySql);
    }
    // PostgreSQL: a startup message (protocol 3.0) or an SSL request.
    if b.len() >= 8
        && be32(b, 0).is_some_and(|l| l as usize == b.len())
        && (be32(b, 4) == Some(0x0003_0000) || be32(b, 4) == Some(0x04d2_162f))
    {
        return is(Proto::PostgreSql);
    }
    // H.323 call signalling: TPKT on its port.
    if p.port(1720) && b.len() >= 4 && b[0] == 3 && b[1] == 0 {
        return is(Proto::H323);
    }
    // MQTT: CONNECT with the protocol name.
    if b.len() >= 10
        && b[0] == 0x10
        && (b[4..8] == *b"MQTT" || b[5..9] == *b"MQTT" || b[4..10] == *b"MQIsdp")
    {
        return is(Proto::Mqtt);
    }
    // Kerberos over TCP: a four-byte length, then a message.
    if b.len() > 14 && be32(b, 0).is_some_and(|l| l as usize + 4 >= b.len()) && kerberos(&b[4..]) {
        return is(Proto::Kerberos);
    }
    // LDAP: a sequence, a message id, then an application tag (bind, search, ...). Off its
    // ports the message must fill the segment exactly and be a bind request of version 2 or
    // 3, or a search request.
    if b.len() > 7
        && b[0] == 0x30
        && let Some((len, at)) = ber_len(b, 1)
        && at + len >= b.len()
        && b.get(at) == Some(&2)
        && b.get(at + 1).is_some_and(|&l| (1..=4).contains(&l))
    {
        let op_at = at + 2 + usize::from(b[at + 1]);
        let op = b.get(op_at).copied().unwrap_or(0);
        if (p.port(389) || p.port(3268)) && (0x60..=0x78).contains(&op) {
            return is(Proto::Ldap);
        }
        let exact = at + len == b.len();
        let bind = op == 0x60
            && ber_len(b, op_at + 1).is_some_and(|(_, v)| {
                b.get(v..v + 3).is_some_and(|x| x == [2, 1, 3] || x == [2, 1, 2])
            });
        if exact && (bind || op == 0x63) {
            return is(Proto::Ldap);
        }
    }
    // RTMP: the C0 version byte 3 and a 1536-byte C1. The client sends nothing more before
    // the server's S0 and S1, so its first flight is exactly 1537 bytes (often over two
    // segments, gathered here); on port 1935, or with C1's zero field zero, a first packet
    // that already holds more will do.
    if b.first() == Some(&3) && p.from_initiator && p.index <= 2 {
        let exact = b.len() == 1537;
        let simple = b.len() > 1537 && p.index == 0 && (p.port(1935) || b[5..9] == [0, 0, 0, 0]);
        if exact || simple {
            return is(Proto::Rtmp);
        }
        // A first segment cut by the MSS: wait for the rest of C1 (not a whole TPKT, whose
        // first byte is 3 too).
        let tpkt = b.get(1) == Some(&0) && be16(b, 2).is_some_and(|l| usize::from(l) == b.len());
        if p.index == 0 && (536..1537).contains(&b.len()) && !tpkt {
            return Seen::More;
        }
    }
    // TeamViewer: its magic.
    if b.len() >= 4 && b[0] == 0x17 && b[1] == 0x24 && p.port(5938) {
        return is(Proto::TeamViewer);
    }
    // OpenVPN over TCP: a length, then a control packet.
    if b.len() >= 16
        && usize::from(be16(b, 0).unwrap_or(0)) + 2 == b.len()
        && let Some(seen) = openvpn(&b[2..])
    {
        return seen;
    }
    Seen::No
}

/// An ONC RPC call (to portmap, NFS, mount or bootparams) or a reply.
fn rpc(b: &[u8]) -> Option<Seen> {
    if b.len() < 24 {
        return None;
    }
    let kind = be32(b, 4)?;
    if kind == 0 && be32(b, 8)? == 2 {
        let program = be32(b, 12)?;
        if matches!(program, 100_000 | 100_003 | 100_005 | 100_026 | 100_021 | 100_024) {
            return Some(is(Proto::Nfs));
        }
    }
    None
}

/// Whether a flow's first payload rules out the protocol its port suggests: a port guess is
/// never made against payload that cannot be that protocol (a UDP 443 datagram that is no
/// QUIC packet, a TCP 443 segment that is no TLS record, a port 53 message that is no DNS).
pub(crate) fn contradicts(l4: u8, ports: [u16; 2], b: &[u8]) -> bool {
    let Some(proto) = by_port(l4, ports) else { return false };
    let first = b.first().copied().unwrap_or(0);
    match proto {
        // QUIC: the fixed bit, and a known version in a long header.
        Proto::Quic => {
            crate::dns::message(b).is_some()
                || first & 0x40 == 0
                || (first & 0x80 != 0 && !be32(b, 1).is_some_and(quic_version))
        }
        Proto::Tls | Proto::Imaps | Proto::Pop3s | Proto::Smtps => {
            !(0x14..=0x17).contains(&first) || b.get(1) != Some(&3)
        }
        Proto::Dns if l4 == UDP => crate::dns::message(b).is_none(),
        Proto::Http => !first.is_ascii_uppercase(),
        // Text protocols start with printable text.
        Proto::Sip
        | Proto::Smtp
        | Proto::Pop3
        | Proto::Imap
        | Proto::FtpControl
        | Proto::Irc
        | Proto::Nntp
        | Proto::Ssdp => !b.iter().take(4).all(|c| c.is_ascii_graphic() || *c == b' '),
        Proto::Ntp => b.len() < 48 || !(1..=4).contains(&((first >> 3) & 7)),
        Proto::Snmp => first != 0x30,
        Proto::Kerberos if l4 == UDP => !kerberos(b),
        Proto::Kerberos => b.len() <= 4 || !kerberos(&b[4..]),
        Proto::Dhcp => b.len() < 240,
        Proto::IpSec => b.len() < 28 && b != [0xff],
        _ => false,
    }
}

/// The protocol a well-known port suggests, for flows no detector recognised.
pub(crate) fn by_port(l4: u8, ports: [u16; 2]) -> Option<Proto> {
    let guess = |port: u16| -> Option<Proto> {
        Some(match (l4, port) {
            (TCP, 443) => Proto::Tls,
            (TCP, 80 | 8080) => Proto::Http,
            (TCP | UDP, 53) => Proto::Dns,
            (TCP, 22) => Proto::Ssh,
            (TCP, 25 | 587) => Proto::Smtp,
            (TCP, 465) => Proto::Smtps,
            (TCP, 110) => Proto::Pop3,
            (TCP, 995) => Proto::Pop3s,
            (TCP, 143) => Proto::Imap,
            (TCP, 993) => Proto::Imaps,
            (TCP, 21) => Proto::FtpControl,
            (TCP, 23) => Proto::Telnet,
            (TCP, 6667) => Proto::Irc,
            (TCP, 119) => Proto::Nntp,
            (TCP, 3306) => Proto::MySql,
            (TCP, 5432) => Proto::PostgreSql,
            (TCP | UDP, 2049) => Proto::Nfs,
            (UDP, 69) => Proto::Tftp,
            (TCP, 631) => Proto::Ipp,
            (TCP, 1720) => Proto::H323,
            (TCP | UDP, 88) => Proto::Kerberos,
            (TCP, 389) => Proto::Ldap,
            (TCP, 445) => Proto::SmbV23,
            (TCP, 3389) => Proto::Rdp,
            (TCP, 1883) => Proto::Mqtt,
            (TCP, 1935) => Proto::Rtmp,
            (UDP, 123) => Proto::Ntp,
            (UDP, 161 | 162) => Proto::Snmp,
            (UDP, 137 | 138) => Proto::NetBios,
            (UDP, 514) => Proto::Syslog,
            (UDP, 1900) => Proto::Ssdp,
            (UDP, 5353) => Proto::Mdns,
            (UDP, 3478) => Proto::Stun,
            (UDP, 500 | 4500) => Proto::IpSec,
            (UDP, 1194) => Proto::OpenVpn,
            (UDP, 51820) => Proto::WireGuard,
            (UDP, 41641) => Proto::Tailscale,
            (UDP, 443) => Proto::Quic,
            (UDP, 67 | 68) => Proto::Dhcp,
            (UDP, 546 | 547) => Proto::Dhcpv6,
            (UDP | TCP, 5060) => Proto::Sip,
            _ => return None,
        })
    };
    guess(ports[1]).or_else(|| guess(ports[0]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp(b: &[u8], ports: [u16; 2]) -> Seen {
        detect(&Packet { payload: b, from_initiator: true, ports, index: 0 }, &mut Meta::default())
    }

    #[test]
    fn wireguard_data_off_its_port() {
        let data = |counter: u16| {
            let mut d = vec![4, 0, 0, 0, 0x15, 0x76, 0x49, 0x79];
            d.extend_from_slice(&u64::from(counter).to_le_bytes());
            d.resize(96, 0xa7);
            d
        };
        assert!(matches!(udp(&data(0x13), [22595, 5060]), Seen::Maybe(..)));
        let cfg = crate::Config::default();
        let mut f = crate::FlowDpi::new(17);
        for c in 0x13..0x16 {
            f.feed(&cfg, true, [22595, 5060], &data(c));
        }
        assert_eq!(f.label().master, Proto::WireGuard);
        // A counter that stands still is no evidence.
        let mut f = crate::FlowDpi::new(17);
        for _ in 0..8 {
            f.feed(&cfg, true, [22595, 5060], &data(7));
        }
        assert_ne!(f.label().master, Proto::WireGuard);
    }

    #[test]
    fn rtmp_handshake_over_two_segments_on_any_port() {
        // C0 (3) and C1 (time, Flash's version where the zero field is, 1528 random bytes),
        // cut by a 1348-byte MSS; then S0 S1 S2 from the server.
        let mut c1 = vec![3, 0, 0, 0, 0, 0x09, 0x00, 0x7c, 0x02];
        c1.extend((0..1528u32).map(|i| (i * 131 % 251) as u8));
        assert_eq!(c1.len(), 1537);
        let cfg = crate::Config::default();
        let mut f = crate::FlowDpi::new(6);
        f.feed(&cfg, true, [59509, 6002], &c1[..1348]);
        assert_eq!(f.label().master, Proto::Unknown, "one segment is not enough");
        f.feed(&cfg, true, [59509, 6002], &c1[1348..]);
        assert_eq!(f.label().master, Proto::Rtmp);
        // Exactly 1537 bytes in one segment, too; one byte short or a whole TPKT, not.
        let mut f = crate::FlowDpi::new(6);
        f.feed(&cfg, true, [40000, 8080], &c1);
        assert_eq!(f.label().master, Proto::Rtmp);
        let mut f = crate::FlowDpi::new(6);
        f.feed(&cfg, true, [40000, 8080], &c1[..1348]);
        f.feed(&cfg, true, [40000, 8080], &c1[1348..1536]);
        assert_ne!(f.label().master, Proto::Rtmp);
        let mut tpkt = vec![3, 0, 0x02, 0x58];
        tpkt.resize(600, 0x41);
        let p = Packet { payload: &tpkt, from_initiator: true, ports: [40000, 102], index: 0 };
        assert_ne!(tcp_binary(&p, &mut Meta::default()), Seen::More);
    }

    #[test]
    fn classic_stun_binding() {
        // RFC 3489 Binding Request with CHANGE-REQUEST, and the response with MAPPED-ADDRESS.
        let mut req = vec![0, 1, 0, 8];
        req.extend_from_slice(&[0x94; 16]);
        req.extend_from_slice(&[0, 3, 0, 4, 0, 0, 0, 0]);
        assert_eq!(udp(&req, [55050, 13958]), is(Proto::Stun));
        let mut resp = vec![1, 1, 0, 12];
        resp.extend_from_slice(&[0x94; 16]);
        resp.extend_from_slice(&[0, 1, 0, 8, 0, 1, 0xd7, 0x0a, 172, 16, 63, 224]);
        assert_eq!(udp(&resp, [13958, 55050]), is(Proto::Stun));
        // An undefined attribute type, or a length that does not end the message.
        let mut bad = req.clone();
        bad[21] = 0x30;
        assert_ne!(udp(&bad, [55050, 13958]), is(Proto::Stun));
        assert_ne!(udp(&req[..27], [55050, 13958]), is(Proto::Stun));
        for cut in 0..resp.len() {
            let _ = classic_stun(&resp[..cut]);
        }
    }

    #[test]
    fn udp_shapes() {
        let mut stun = vec![0, 1, 0, 0, 0x21, 0x12, 0xa4, 0x42];
        stun.extend_from_slice(&[0; 12]);
        assert_eq!(udp(&stun, [40000, 3478]), is(Proto::Stun));
        let mut wg = vec![1, 0, 0, 0];
        wg.resize(148, 7);
        assert_eq!(udp(&wg, [40000, 40001]), is(Proto::WireGuard));
        let mut disco = b"TS\xf0\x9f\x92\xac".to_vec();
        disco.extend_from_slice(&[0xb6; 56]);
        assert_eq!(udp(&disco, [41641, 41641]), is(Proto::Tailscale));
        let mut ntp = vec![0x23];
        ntp.resize(48, 0);
        assert_eq!(udp(&ntp, [40000, 123]), is(Proto::Ntp));
        assert_eq!(udp(b"<34>Oct 11 22:14:15 host su: x", [40000, 514]), is(Proto::Syslog));
        assert_eq!(
            udp(b"d1:ad2:id20:abcdefghij0123456789e1:q4:ping1:t2:aa1:y1:qe", [40000, 6881]),
            is(Proto::BitTorrent)
        );
        let mut quic = vec![0xc3, 0, 0, 0, 1];
        quic.resize(1200, 0);
        assert_eq!(udp(&quic, [40000, 443]), is(Proto::Quic));
        assert_eq!(udp(b"random bytes of no shape", [40000, 40001]), Seen::No);
    }

    #[test]
    fn every_prefix_of_every_shape_is_safe() {
        let inputs: [&[u8]; 3] = [
            b"\x13BitTorrent protocol",
            b"\x03\x00\x00\x0b\x06\xe0\x00\x00\x00\x00\x00",
            b"\x10\x0c\x00\x04MQTT\x04\x02",
        ];
        for b in inputs {
            for cut in 0..=b.len() {
                let p = Packet {
                    payload: &b[..cut],
                    from_initiator: true,
                    ports: [40000, 445],
                    index: 0,
                };
                let _ = tcp_binary(&p, &mut Meta::default());
                let _ = detect(&p, &mut Meta::default());
            }
        }
    }
}
