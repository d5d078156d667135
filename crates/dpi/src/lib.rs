//! Application identification: which protocol and application a flow carries, read from the
//! payloads of its first packets, with bounded work per flow.
//!
//! A [`FlowDpi`] is fed a flow's payloads in order, each with its direction and ports. Each
//! packet goes to the detectors of the registry ([`protocols`] lists them) that can accept
//! its transport and first byte; the first that recognises it decides the flow's [`Label`]
//! (nDPI's naming: a master protocol, and an application recognised from the server name or
//! address, as in `TLS.YouTube`) and the metadata found on the way ([`Meta`]: TLS server
//! name and ALPN, HTTP host and user agent, DNS query name, SSH banner). Heuristic detectors
//! only contribute evidence, and a flow is labelled from them once packets from both sides
//! (or three from one) agree. A flow is inspected for at most [`Config::tcp_packets`] or
//! [`Config::udp_packets`] payload packets and [`Config::max_bytes`] bytes; after that, or
//! once decided, it is never looked at again. A flow no detector recognised can be labelled
//! by its well-known port ([`By::Port`]) when inspection ends, unless its payload
//! contradicted that port's protocol, or by its server's address ([`By::Address`]).
//!
//! Detectors read untrusted bytes: every read is bounds-checked, nothing is buffered past the
//! byte budget, and no detector loops over its input more than once.
//!
//! Written here: the detectors are parsers of the protocols' headers as their specifications
//! give them (each names its sources in the registry), not a signature engine; nDPI (C,
//! LGPL) is the reference the accuracy tests compare with.

mod apps;
mod dns;
#[cfg(feature = "ndpi")]
pub mod ndpi;
mod proto;
mod quic;
mod registry;
mod stage;
mod table;
mod text;
mod tls;
mod udp;

use std::fmt;

use rampart_flow::IpFamily;

pub use apps::{app_for_address, app_for_host};
pub use registry::{ProtocolInfo, protocols, protocols_markdown};
pub use stage::flow_info;
pub use table::{App, DpiStats, DpiTable, FlowInfo};

/// A protocol rampart recognises (nDPI's names, see [`Proto::name`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[allow(missing_docs)]
pub enum Proto {
    Unknown,
    Tls,
    Dtls,
    Http,
    HttpConnect,
    Http2,
    WebSocket,
    Dns,
    Mdns,
    Llmnr,
    Quic,
    Ssh,
    BitTorrent,
    Smtp,
    Pop3,
    Imap,
    FtpControl,
    Sip,
    Ssdp,
    Rtsp,
    Ntp,
    Dhcp,
    Dhcpv6,
    Snmp,
    Stun,
    WireGuard,
    NetBios,
    SmbV1,
    SmbV23,
    Syslog,
    OpenVpn,
    IpSec,
    Kerberos,
    Ldap,
    Rdp,
    Mqtt,
    Rtp,
    Rtmp,
    TeamViewer,
    Telnet,
    Imaps,
    Pop3s,
    Smtps,
    Discord,
    Dropbox,
    Spotify,
    WhatsApp,
    Zoom,
    Irc,
    Nntp,
    MySql,
    PostgreSql,
    Nfs,
    Tftp,
    Ipp,
    MpegTs,
    TeamSpeak,
    Rtcp,
    H323,
    Icmp,
    Icmpv6,
    Igmp,
    Gre,
    Ospf,
    Sctp,
    Vrrp,
    IpInIp,
    Tailscale,
    FtpData,
    /// A protocol named by its detector in the registry (nDPI's name; a thin reference keeps
    /// a label at 32 bytes).
    Other(&'static &'static str),
}

impl Proto {
    /// The name nDPI gives it.
    pub fn name(self) -> &'static str {
        use Proto::*;
        match self {
            Unknown => "Unknown",
            Tls => "TLS",
            Dtls => "DTLS",
            Http => "HTTP",
            HttpConnect => "HTTP_Connect",
            Http2 => "HTTP2",
            WebSocket => "WebSocket",
            Dns => "DNS",
            Mdns => "MDNS",
            Llmnr => "LLMNR",
            Quic => "QUIC",
            Ssh => "SSH",
            BitTorrent => "BitTorrent",
            Smtp => "SMTP",
            Pop3 => "POP3",
            Imap => "IMAP",
            FtpControl => "FTP_CONTROL",
            Sip => "SIP",
            Ssdp => "SSDP",
            Rtsp => "RTSP",
            Ntp => "NTP",
            Dhcp => "DHCP",
            Dhcpv6 => "DHCPV6",
            Snmp => "SNMP",
            Stun => "STUN",
            WireGuard => "WireGuard",
            NetBios => "NetBIOS",
            SmbV1 => "SMBv1",
            SmbV23 => "SMBv23",
            Syslog => "Syslog",
            OpenVpn => "OpenVPN",
            IpSec => "IPSec",
            Kerberos => "Kerberos",
            Ldap => "LDAP",
            Rdp => "RDP",
            Mqtt => "MQTT",
            Rtp => "RTP",
            Rtmp => "RTMP",
            TeamViewer => "TeamViewer",
            Telnet => "Telnet",
            Imaps => "IMAPS",
            Pop3s => "POPS",
            Smtps => "SMTPS",
            Discord => "Discord",
            Dropbox => "Dropbox",
            Spotify => "Spotify",
            WhatsApp => "WhatsApp",
            Zoom => "Zoom",
            Irc => "IRC",
            Nntp => "Usenet",
            MySql => "MySQL",
            PostgreSql => "PostgreSQL",
            Nfs => "NFS",
            Tftp => "TFTP",
            Ipp => "IPP",
            MpegTs => "MPEG_TS",
            TeamSpeak => "TeamSpeak",
            Rtcp => "RTCP",
            H323 => "H323",
            Icmp => "ICMP",
            Icmpv6 => "ICMPV6",
            Igmp => "IGMP",
            Gre => "GRE",
            Ospf => "OSPF",
            Sctp => "SCTP",
            Vrrp => "VRRP",
            IpInIp => "IP_in_IP",
            Tailscale => "Tailscale",
            FtpData => "FTP_DATA",
            Other(name) => name,
        }
    }

    /// The protocol an IP protocol number other than TCP and UDP names on its own (as nDPI
    /// labels ICMP, ESP or GRE flows from the IP header).
    pub fn of_ip_proto(l4: u8) -> Option<Proto> {
        Some(match l4 {
            1 => Proto::Icmp,
            2 => Proto::Igmp,
            4 => Proto::IpInIp,
            47 => Proto::Gre,
            50 | 51 => Proto::IpSec,
            58 => Proto::Icmpv6,
            89 => Proto::Ospf,
            112 => Proto::Vrrp,
            132 => Proto::Sctp,
            _ => return None,
        })
    }
}

/// What a flow carries: a master protocol and, when the server name says so, an application.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Label {
    /// The protocol.
    pub master: Proto,
    /// The application (nDPI's name, e.g. `YouTube`), if recognised.
    pub app: Option<&'static str>,
}

impl Label {
    /// No label.
    pub const UNKNOWN: Label = Label { master: Proto::Unknown, app: None };

    fn of(master: Proto) -> Self {
        Label { master, app: None }
    }

    /// The label's text as it is displayed, in parts: `(MASTER, Some(APP))` for
    /// `MASTER.APP`, `(NAME, None)` for one name (the master alone, or an application whose
    /// master is unknown or has its name). For writers that append the text without a
    /// formatter.
    pub fn parts(&self) -> (&'static str, Option<&'static str>) {
        match self.app {
            Some(app) if self.master == Proto::Unknown => (app, None),
            Some(app) if app != self.master.name() => (self.master.name(), Some(app)),
            _ => (self.master.name(), None),
        }
    }
}

impl fmt::Display for Label {
    /// `MASTER` or `MASTER.APP`, as nDPI prints them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (first, second) = self.parts();
        f.write_str(first)?;
        match second {
            Some(app) => write!(f, ".{app}"),
            None => Ok(()),
        }
    }
}

/// How a label was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    /// From the packets' contents: the payload, or for protocols other than TCP and UDP the
    /// IP header's protocol number.
    Dpi,
    /// From a well-known port, when no detector recognised the payload.
    Port,
    /// From the responder's address (`data/addresses.txt`), when no detector recognised
    /// the payload.
    Address,
    /// Not found.
    None,
}

impl By {
    /// `"dpi"`, `"port"`, `"address"` or `"none"`.
    pub fn name(self) -> &'static str {
        match self {
            By::Dpi => "dpi",
            By::Port => "port",
            By::Address => "address",
            By::None => "none",
        }
    }
}

/// Metadata read from the payloads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    /// TLS or QUIC server name.
    pub sni: Option<Box<str>>,
    /// TLS ALPN protocols, comma-separated.
    pub alpn: Option<Box<str>>,
    /// HTTP Host header.
    pub http_host: Option<Box<str>>,
    /// HTTP User-Agent header.
    pub user_agent: Option<Box<str>>,
    /// DNS query name.
    pub dns_query: Option<Box<str>>,
    /// SSH banner (the first side's).
    pub ssh_banner: Option<Box<str>>,
}

impl Meta {
    /// No metadata.
    pub const EMPTY: &Meta = &Meta {
        sni: None,
        alpn: None,
        http_host: None,
        user_agent: None,
        dns_query: None,
        ssh_banner: None,
    };

    /// Heap bytes held by the strings.
    pub fn heap_bytes(&self) -> usize {
        [
            &self.sni,
            &self.alpn,
            &self.http_host,
            &self.user_agent,
            &self.dns_query,
            &self.ssh_banner,
        ]
        .iter()
        .map(|s| s.as_ref().map_or(0, |s| s.len()))
        .sum()
    }
}

/// Inspection budget per flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// TCP packets with payload inspected per flow (both directions); a flow whose packets
    /// fit a heuristic so far may take twice as many to complete the evidence.
    pub tcp_packets: u8,
    /// UDP packets inspected per flow (twice as many while completing heuristic evidence).
    pub udp_packets: u8,
    /// Payload bytes buffered for reassembly per flow.
    pub max_bytes: usize,
    /// Bytes a [`DpiTable`] may hold for all the flows it inspects at once (their buffered
    /// message pieces and gathered QUIC hellos). A flow whose packet takes the total past it
    /// stops being inspected (it is labelled as when its budget runs out) and is counted in
    /// [`DpiStats::memory_capped`].
    pub max_total_bytes: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config { tcp_packets: 8, udp_packets: 4, max_bytes: 16 * 1024, max_total_bytes: 256 << 20 }
    }
}

/// Transport protocol numbers.
const TCP: u8 = 6;
const UDP: u8 = 17;

/// What a detector says about a packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Seen {
    /// Not this protocol (as far as this packet shows).
    No,
    /// This protocol.
    Is(Label),
    /// A message that continues in later packets of this direction (buffer and retry).
    More,
    /// A packet that fits a heuristic for this protocol; the number is what must stay the
    /// same across the packets of one direction (an RTP source, a session id). The flow is
    /// labelled once the evidence is enough ([`Candidate`]). A sequence number, if the
    /// protocol has one, must advance by 1 to 64 from the side's previous packet.
    Maybe(Label, u32, Option<u16>),
}

/// Heuristic evidence gathered across packets: the protocol, and per direction (initiator
/// first) the packets that fit and the number they carried.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    label: Label,
    hits: [u8; 2],
    key: [Option<u32>; 2],
    seq: [Option<u16>; 2],
}

impl Candidate {
    /// Enough: three packets, two of them consistent from one side, and both sides unless a
    /// side sent three (a one-way media stream).
    fn enough(&self) -> bool {
        let [a, b] = self.hits;
        (a >= 1 && b >= 1 && a + b >= 3) || a >= 3 || b >= 3
    }
}

/// One packet as the detectors see it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Packet<'a> {
    pub(crate) payload: &'a [u8],
    /// Whether the initiator sent it.
    pub(crate) from_initiator: bool,
    /// The initiator's port and the responder's.
    pub(crate) ports: [u16; 2],
    /// Payload packets this flow had before this one, both directions.
    pub(crate) index: u8,
}

impl Packet<'_> {
    /// Whether either end uses port `p`.
    pub(crate) fn port(&self, p: u16) -> bool {
        self.ports[0] == p || self.ports[1] == p
    }
}

/// A flow's detection state: what has been seen and, once decided, the label.
#[derive(Clone, Debug)]
pub struct FlowDpi {
    l4: u8,
    packets: u8,
    bytes: u32,
    done: bool,
    label: Label,
    by: By,
    /// The metadata found so far, boxed once there is some (most flows never have any, and a
    /// [`Meta`] inline would more than double the state every flow under inspection holds).
    meta: Option<Box<Meta>>,
    /// Bytes of a message split over packets, per direction (initiator first).
    pending: Option<Box<[Vec<u8>; 2]>>,
    /// A QUIC client's Initial packets so far.
    quic: Option<Box<quic::State>>,
    /// Heuristic evidence so far, one entry per protocol that fitted (at most four).
    candidates: Vec<Candidate>,
    /// A label found that a later packet may refine (STUN, then DTLS).
    provisional: Option<Label>,
    /// Whether the first payload contradicted the port's protocol (no port guess then).
    contradicted: bool,
    /// The application the responder's address belongs to, if known.
    address_app: Option<&'static str>,
}

impl FlowDpi {
    /// A flow over IP protocol `l4`. TCP (6) and UDP (17) flows are inspected; a flow of
    /// another protocol is decided at once, by [`Proto::of_ip_proto`] (ICMP, ESP, GRE, ...) or
    /// as unknown.
    pub fn new(l4: u8) -> Self {
        let by_header = Proto::of_ip_proto(l4);
        FlowDpi {
            l4,
            packets: 0,
            bytes: 0,
            done: !inspected(l4),
            label: by_header.map_or(Label::UNKNOWN, Label::of),
            by: if by_header.is_some() { By::Dpi } else { By::None },
            meta: None,
            pending: None,
            quic: None,
            candidates: Vec::new(),
            provisional: None,
            contradicted: false,
            address_app: None,
        }
    }

    /// Starts over as [`FlowDpi::new`] would, for a new flow over IP protocol `l4`, keeping
    /// the room of its evidence list, so a pooled state allocates nothing per flow.
    pub(crate) fn restart(&mut self, l4: u8) {
        let mut candidates = std::mem::take(&mut self.candidates);
        candidates.clear();
        *self = FlowDpi::new(l4);
        self.candidates = candidates;
    }

    /// Tells the flow its responder's address (IPv4 in the first four bytes): a flow no detector recognises is labelled by the application that address
    /// belongs to, if any ([`By::Address`]).
    pub fn set_responder(&mut self, family: IpFamily, addr: &[u8; 16]) {
        self.address_app = app_for_address(family, addr);
    }

    /// Whether inspection is over (decided, or out of budget).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The label (unknown until decided).
    pub fn label(&self) -> Label {
        self.label
    }

    /// How the label was found.
    pub fn by(&self) -> By {
        self.by
    }

    /// The metadata found.
    pub fn meta(&self) -> &Meta {
        self.meta.as_deref().unwrap_or(Meta::EMPTY)
    }

    /// Heap bytes held: buffered message pieces, QUIC state, heuristic evidence and metadata
    /// strings.
    pub fn heap_bytes(&self) -> usize {
        let pending = self
            .pending
            .as_ref()
            .map_or(0, |p| std::mem::size_of::<[Vec<u8>; 2]>() + p[0].capacity() + p[1].capacity());
        let quic = self.quic.as_ref().map_or(0, |q| q.heap_bytes());
        // The evidence in use (a pooled state keeps its list's room from flow to flow).
        let candidate = self.candidates.len() * std::mem::size_of::<Candidate>();
        pending
            + quic
            + candidate
            + self.meta.as_ref().map_or(0, |m| size_of::<Meta>() + m.heap_bytes())
    }

    /// Feeds one packet's transport payload: `from_initiator` says its direction, `ports`
    /// are the initiator's and the responder's. Returns whether inspection is over.
    pub fn feed(
        &mut self,
        cfg: &Config,
        from_initiator: bool,
        ports: [u16; 2],
        payload: &[u8],
    ) -> bool {
        if self.done || payload.is_empty() {
            return self.done;
        }
        let limit = if self.l4 == TCP { cfg.tcp_packets } else { cfg.udp_packets };
        let index = self.packets;
        self.packets = self.packets.saturating_add(1);
        self.bytes = self.bytes.saturating_add(payload.len() as u32);
        let dir = usize::from(!from_initiator);
        // A message continued from earlier packets of this direction.
        let joined: Option<Vec<u8>> = match &mut self.pending {
            Some(p) if !p[dir].is_empty() => {
                let room = cfg.max_bytes.saturating_sub(p[dir].len());
                p[dir].extend_from_slice(&payload[..payload.len().min(room)]);
                Some(std::mem::take(&mut p[dir]))
            }
            _ => None,
        };
        let data = joined.as_deref().unwrap_or(payload);
        let pkt = Packet { payload: data, from_initiator, ports, index };
        if index == 0 {
            self.contradicted = udp::contradicts(self.l4, ports, data);
        }
        let seen = if self.l4 == TCP { self.tcp(&pkt) } else { self.udp(&pkt) };
        match seen {
            // STUN is often followed by DTLS on the same flow (WebRTC): keep looking for it.
            Seen::Is(label) if label.master == Proto::Stun && self.l4 == UDP => {
                self.provisional.get_or_insert(label);
            }
            // A mail or FTP session may go on over TLS (STARTTLS): keep looking for the
            // client's request within the budget.
            Seen::Is(label) if self.l4 == TCP && upgradable(label.master) => {
                self.provisional.get_or_insert(label);
            }
            Seen::Is(label)
                if self.provisional.is_none()
                    || label.master == Proto::Dtls
                    || upgraded(label.master) =>
            {
                self.decide(label, By::Dpi);
                return true;
            }
            Seen::Is(_) => {}
            Seen::More if data.len() < cfg.max_bytes => {
                let p = self.pending.get_or_insert_with(Default::default);
                p[dir] = data.to_vec();
            }
            _ => {}
        }
        // A flow gathering heuristic evidence may take twice the budget to complete it, and
        // STUN may wait as long for its DTLS; a mail or FTP session waits for its STARTTLS
        // only within the budget.
        let waiting_dtls = self.provisional.is_some_and(|l| l.master == Proto::Stun);
        let extend = !self.candidates.is_empty() || waiting_dtls;
        let limit = if extend { limit.saturating_mul(2) } else { limit };
        if self.packets >= limit || self.bytes as usize >= cfg.max_bytes * 2 {
            self.give_up(ports);
        }
        self.done
    }

    /// Ends inspection: labels the flow by its port if nothing recognised it and its payload
    /// did not contradict the port's protocol.
    pub fn give_up(&mut self, ports: [u16; 2]) {
        if self.done {
            return;
        }
        if let Some(label) = self.provisional {
            self.decide(label, By::Dpi);
            return;
        }
        let port = udp::by_port(self.l4, ports).filter(|_| !self.contradicted);
        match (port, self.address_app) {
            // A service that runs a protocol of its own on common ports (Telegram's MTProto
            // on 443): its address says more than the port.
            (_, Some(app)) if apps::own_protocol(app) => {
                self.decide(Label { master: Proto::Unknown, app: Some(app) }, By::Address);
            }
            // The port's protocol, and the application the address names (decide adds it).
            (Some(p), _) => self.decide(Label::of(p), By::Port),
            (None, Some(app)) => {
                self.decide(Label { master: Proto::Unknown, app: Some(app) }, By::Address);
            }
            (None, None) => {
                self.done = true;
                self.pending = None;
            }
        }
    }

    fn decide(&mut self, mut label: Label, by: By) {
        if label.app.is_none() {
            let meta = self.meta();
            let host = meta.sni.as_deref().or(meta.http_host.as_deref());
            let host = host.or(meta.dns_query.as_deref());
            label.app = host.and_then(app_for_host);
        }
        if label.app.is_none()
            && label.master == Proto::Tls
            && self.meta().sni.as_deref().is_some_and(apps::is_tor_name)
        {
            label.app = Some("Tor");
        }
        // Without a name to go by, the server's address names the application of encrypted
        // and call protocols (for TLS, only blocks a single service uses: a provider's whole
        // network hosts too many services to name one from a TLS flow).
        if label.app.is_none()
            && let Some(app) = self.address_app
            && (matches!(label.master, Proto::Quic | Proto::Stun | Proto::Dtls)
                || (label.master == Proto::Tls && !apps::provider_wide(app)))
        {
            label.app = Some(apps::app_over(label.master, app));
        }
        self.label = label;
        self.by = by;
        self.done = true;
        self.pending = None;
        self.quic = None;
        self.candidates.clear();
        self.provisional = None;
    }

    fn tcp(&mut self, p: &Packet<'_>) -> Seen {
        let dir = usize::from(!p.from_initiator);
        let candidates = &mut self.candidates;
        with_meta(&mut self.meta, |meta| {
            registry::detect(true, p, meta, &mut |label, key, seq| {
                evidence(candidates, label, key, seq, dir)
            })
        })
    }

    fn udp(&mut self, p: &Packet<'_>) -> Seen {
        if p.from_initiator || self.quic.is_some() {
            let quic = &mut self.quic;
            match with_meta(&mut self.meta, |meta| quic::initial(p, quic, meta)) {
                Seen::No => {}
                // A hello that continues in the client's next Initial.
                Seen::More => return Seen::No,
                found => return found,
            }
        }
        let dir = usize::from(!p.from_initiator);
        let candidates = &mut self.candidates;
        let seen = with_meta(&mut self.meta, |meta| {
            registry::detect(false, p, meta, &mut |label, key, seq| {
                evidence(candidates, label, key, seq, dir)
            })
        });
        match seen {
            // Nothing is buffered over UDP: each datagram stands alone.
            Seen::More => Seen::No,
            seen => seen,
        }
    }
}

/// Whether flows over IP protocol `l4` are inspected (TCP and UDP); the others are decided by
/// the header alone.
pub(crate) fn inspected(l4: u8) -> bool {
    l4 == TCP || l4 == UDP
}

/// Runs `f` on a flow's metadata: the boxed one if there is some, else an empty one on the
/// stack that is boxed only if `f` found something.
fn with_meta<T>(meta: &mut Option<Box<Meta>>, f: impl FnOnce(&mut Meta) -> T) -> T {
    if let Some(m) = meta {
        return f(m);
    }
    let mut m = Meta::default();
    let out = f(&mut m);
    if m != *Meta::EMPTY {
        *meta = Some(Box::new(m));
    }
    out
}

/// Protocols whose sessions a client can move to TLS with a command (STARTTLS and kin).
fn upgradable(p: Proto) -> bool {
    matches!(p, Proto::Smtp | Proto::Pop3 | Proto::Imap | Proto::FtpControl)
}

/// The names of such sessions once the client asked for TLS.
fn upgraded(p: Proto) -> bool {
    matches!(p, Proto::Smtps | Proto::Pop3s | Proto::Imaps) || p == Proto::Other(&crate::text::FTPS)
}

/// Adds a heuristic match to a flow's evidence; true once it is enough for `label`. Each
/// protocol that fitted keeps its own entry, so one heuristic's misfit does not erase
/// another's evidence.
fn evidence(
    candidates: &mut Vec<Candidate>,
    label: Label,
    key: u32,
    seq: Option<u16>,
    dir: usize,
) -> bool {
    let fresh = Candidate { label, hits: [0, 0], key: [None, None], seq: [None, None] };
    let i = match candidates.iter().position(|c| c.label == label) {
        Some(i) => i,
        None if candidates.len() < 4 => {
            candidates.push(fresh);
            candidates.len() - 1
        }
        None => return false,
    };
    let c = &mut candidates[i];
    let advances = match (c.seq[dir], seq) {
        (Some(last), Some(now)) => (1..=64).contains(&now.wrapping_sub(last)),
        _ => true,
    };
    if c.key[dir].is_some_and(|k| k != key) || !advances {
        *c = fresh;
    }
    c.hits[dir] = c.hits[dir].saturating_add(1);
    c.key[dir] = Some(key);
    c.seq[dir] = seq;
    c.enough()
}

/// Reads a big-endian u16 at `off`.
pub(crate) fn be16(b: &[u8], off: usize) -> Option<u16> {
    let s = b.get(off..off + 2)?;
    Some(u16::from_be_bytes([s[0], s[1]]))
}

/// Reads a big-endian u32 at `off`.
pub(crate) fn be32(b: &[u8], off: usize) -> Option<u32> {
    let s = b.get(off..off + 4)?;
    Some(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

/// Printable text for metadata: at most 255 bytes, control characters dropped.
pub(crate) fn text_of(b: &[u8]) -> Box<str> {
    let b = &b[..b.len().min(255)];
    // Printable ASCII, the usual case, in one allocation.
    if b.iter().all(|c| (0x20..0x7f).contains(c)) {
        return String::from_utf8_lossy(b).into();
    }
    String::from_utf8_lossy(b).chars().filter(|c| !c.is_control()).collect::<String>().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_print_as_ndpi_does() {
        assert_eq!(Label { master: Proto::Tls, app: Some("YouTube") }.to_string(), "TLS.YouTube");
        assert_eq!(Label::of(Proto::Dns).to_string(), "DNS");
    }

    #[test]
    fn budget_ends_inspection() {
        let cfg = Config::default();
        let mut f = FlowDpi::new(UDP);
        for _ in 0..3 {
            assert!(!f.feed(&cfg, true, [40000, 40001], b"\x00\x01zzzzzzzzzzzzzz"));
        }
        assert!(f.feed(&cfg, true, [40000, 40001], b"\x00\x01zzzzzzzzzzzzzz"));
        assert_eq!((f.label(), f.by()), (Label::UNKNOWN, By::None));
        // Once done, nothing changes.
        assert!(f.feed(&cfg, true, [40000, 40001], b"SSH-2.0-x\r\n"));
        assert_eq!(f.label(), Label::UNKNOWN);
    }
}
