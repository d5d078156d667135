//! IPFIX export (RFC 7011) of flow records as biflows (RFC 5103), over UDP or TCP.
//!
//! The encoder is written here rather than taken from a crate: rampart sends two fixed
//! templates, so encoding is a few hundred lines of `to_be_bytes` into one reused buffer, and
//! doing it by hand keeps exact control of what collectors are sensitive to: which reverse
//! elements are sent (nfdump maps reverse elements other than the octet and packet counters
//! onto the *forward* fields), 1-octet `tcpControlBits` (pmacct reads only one octet), message
//! sizes under the path MTU, and sequence numbers that count data records. The Rust IPFIX
//! crates are collectors or full information-model libraries; none was needed for this.
//!
//! # What is sent
//!
//! One template per IP version: [`TEMPLATE_V4`] and [`TEMPLATE_V6`], each with the fields of
//! [`fields`], in that order. Per flow record, one data record:
//!
//! | element | id | octets | value |
//! |---|---|---|---|
//! | flowStartMilliseconds | 152 | 8 | first packet, ms since the epoch (truncated) |
//! | flowEndMilliseconds | 153 | 8 | last packet |
//! | sourceIPv4Address / sourceIPv6Address | 8 / 27 | 4 / 16 | the initiator |
//! | destinationIPv4Address / destinationIPv6Address | 12 / 28 | 4 / 16 | the responder |
//! | sourceTransportPort, destinationTransportPort | 7, 11 | 2 each | 0 where the flow has no ports (ICMP too) |
//! | protocolIdentifier | 4 | 1 | IP protocol |
//! | tcpControlBits | 6 | 1 | TCP flags the initiator sent (0 for other protocols) |
//! | octetDeltaCount, packetDeltaCount | 1, 2 | 8 each | initiator to responder: rampart's byte and packet counts |
//! | the same, reverse (RFC 5103) | 1, 2, PEN 29305 | 8 each | responder to initiator |
//! | biflowDirection | 239 | 1 | 1, initiator |
//! | flowEndReason | 136 | 1 | idle 1, active 2 (an interim record, `--active-timeout`), fin/rst 3 (end of flow detected), end of input 4 (forced end), evicted 5 (lack of resources) |
//! | applicationName | 96 | variable | the `app` label (`TLS.YouTube`), empty when identification is off |
//!
//! and rampart's own elements (enterprise bit set, the enterprise number of
//! [`Config::pen`]), numbered by [`rampart_ie`]: RTT count, min, median and max towards the
//! initiator and towards the responder (µs, unsigned32; all 0 without samples or for flows
//! other than TCP), how the application was found, the responder's TCP flags and the
//! flow's Community ID. These are separate forward elements, not RFC 5103 reverse ones, so a
//! collector that misreads reverse elements (nfdump) cannot mistake them for forward fields.
//!
//! With an active timeout a flow is sent as several data records, interim ones with
//! flowEndReason 2 and then its final one: each record's start and end times and delta
//! counters (forward and reverse) cover its own interval, so a collector's sums per flow equal
//! the flow's totals, and `tcpControlBits` holds the flags seen within the interval.
//!
//! # Element groups
//!
//! A command whose records carry more turns on groups of elements in [`Config`], each
//! combination under its own pair of template ids ([`template_id`]: 256/257 none, 258/259
//! TCP, 260/261 firewall, 262/263 both), with the fields of [`template_fields`] (fixed-length
//! fields first, then the strings, so a collector that places fields at fixed offsets reads
//! every number):
//!
//! | group | element | id | octets | value |
//! |---|---|---|---|---|
//! | [`Config::tcp`] | connState, connHistory | rampart 12, 13 | variable | Zeek's `conn_state` and `history` |
//! | | tcpRetransmissions, tcpOutOfOrder, tcpGaps, tcpZeroWindows | rampart 14-17 | 4 each | the initiator's TCP health counters |
//! | | the same, reverse | rampart 14-17 with [`rampart_ie::REVERSE_BIT`] | 4 each | the responder's (RFC 5103 §6.2) |
//! | [`Config::firewall`] | forwardingStatus | 89 | 1 | the last verdict ([`forwarding_status`], RFC 7270) |
//! | | firewallVerdict, ctState, ctTcpState, ctAssured | rampart 18-21 | 1 each | verdict, `ct state` bits, Linux's TCP state, ASSURED (boolean) |
//! | | firewallRule | rampart 22 | variable | the deciding rule's name, at most [`MAX_RULE_NAME`] octets |
//!
//! No IANA element carries these, except forwardingStatus, which cannot tell a drop from a
//! reject (hence firewallVerdict beside it). The reverse enterprise number 29305 is not used
//! for rampart's elements: RFC 5103 gives it to the reverse of IANA's elements only.
//!
//! Byte counts are rampart's: frame lengths on the wire, as `bytes_fwd`/`bytes_rev` in the
//! JSON records, so a collector's bytes equal rampart's. That is the IP length plus the link
//! header (14 octets per Ethernet frame), where a router's `octetDeltaCount` counts from the
//! IP header.
//!
//! # Messages
//!
//! Each message is at most [`Config::mtu`] octets (1400 by default, under the usual path MTU;
//! RFC 7011 §10.3.3 wants UDP messages to fit it). Data sets of both templates may share one
//! message. The header's sequence number is the number of data records sent before the message
//! (RFC 7011 §3.1); template-only messages do not advance it. Templates go in a message of their
//! own before the first data, twice over UDP (RFC 7011 §8.4 asks for several copies), and over
//! UDP again every [`Config::template_refresh_secs`] seconds and every
//! [`Config::template_every`] messages, whichever comes first. Over TCP they go once: the
//! session keeps them.

use std::io::{self, Write as _};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::time::Duration;

use rampart_engine::FlowRecord;
use rampart_flow::{EndReason, IpFamily, KeyKind, Side};
use rampart_rtt::DirSummary;

use crate::community_id;

mod ext;
pub use ext::{
    FORWARDING_STATUS, MAX_RULE_NAME, firewall_fields, forwarding_status, tcp_fields,
    template_fields, template_id, verdict_code,
};

/// IPFIX's version number, the first field of every message header.
pub const VERSION: u16 = 10;
/// The private enterprise number RFC 5103 gives reverse information elements.
pub const REVERSE_PEN: u32 = 29305;
/// The enterprise number reserved for documentation (RFC 5612), rampart's elements' default
/// until rampart has an enterprise number of its own from IANA; [`Config::pen`] changes it.
pub const DOCUMENTATION_PEN: u32 = 32473;
/// The template of IPv4 flows.
pub const TEMPLATE_V4: u16 = 256;
/// The template of IPv6 flows.
pub const TEMPLATE_V6: u16 = 257;
/// A field length that says "variable length" (RFC 7011 §7).
pub const VARIABLE: u16 = 65535;
/// Message header octets.
pub const HEADER: usize = 16;
/// The smallest message size [`Encoder::new`] accepts: RFC 7011 §10.3.3's size for a path MTU
/// that is not known.
pub const MIN_MTU: usize = 512;
/// The longest application name sent; longer ones are cut (at a character boundary), so any
/// data record fits in a message of [`MIN_MTU`] octets.
pub const MAX_APP_NAME: usize = 200;

/// rampart's own information elements, sent with the enterprise bit and [`Config::pen`].
pub mod rampart_ie {
    /// RTT samples towards the initiator (capture point to the initiator and back).
    pub const RTT_INITIATOR_COUNT: u16 = 1;
    /// Smallest RTT towards the initiator, µs.
    pub const RTT_INITIATOR_MIN_US: u16 = 2;
    /// Median RTT towards the initiator, µs (within about 3 %).
    pub const RTT_INITIATOR_MEDIAN_US: u16 = 3;
    /// Largest RTT towards the initiator, µs.
    pub const RTT_INITIATOR_MAX_US: u16 = 4;
    /// RTT samples towards the responder.
    pub const RTT_RESPONDER_COUNT: u16 = 5;
    /// Smallest RTT towards the responder, µs.
    pub const RTT_RESPONDER_MIN_US: u16 = 6;
    /// Median RTT towards the responder, µs.
    pub const RTT_RESPONDER_MEDIAN_US: u16 = 7;
    /// Largest RTT towards the responder, µs.
    pub const RTT_RESPONDER_MAX_US: u16 = 8;
    /// How the application was found: 0 not looked for, 1 from the packets, 2 by port, 3 by
    /// the responder's address, 4 not found.
    pub const APP_BY: u16 = 9;
    /// TCP flags the responder sent (the initiator's are `tcpControlBits`).
    pub const TCP_FLAGS_RESPONDER: u16 = 10;
    /// The flow's Community ID v1 (`1:...`), empty where it has none.
    pub const COMMUNITY_ID: u16 = 11;
    /// Zeek's `conn_state` (`S0`, `SF`, `REJ`, ...), a string; empty without it.
    pub const CONN_STATE: u16 = 12;
    /// Zeek's `history` (`ShADadFf`), a string; empty without it.
    pub const CONN_HISTORY: u16 = 13;
    /// TCP segments the initiator retransmitted (unsigned32); the responder's in the reverse
    /// element ([`REVERSE_BIT`]).
    pub const TCP_RETRANSMISSIONS: u16 = 14;
    /// TCP segments of the initiator that came out of order (unsigned32; reverse: the
    /// responder's).
    pub const TCP_OUT_OF_ORDER: u16 = 15;
    /// TCP segments of the initiator that started beyond the next expected sequence number,
    /// after a gap (unsigned32; reverse: the responder's).
    pub const TCP_GAPS: u16 = 16;
    /// Zero-window advertisements the initiator sent (unsigned32; reverse: the responder's).
    pub const TCP_ZERO_WINDOWS: u16 = 17;
    /// The last verdict on the flow (unsigned8): 1 accept, 2 drop, 3 reject, 0 none.
    pub const FIREWALL_VERDICT: u16 = 18;
    /// The connection's `ct state` as nftables numbers its bits (unsigned8): 1 invalid,
    /// 2 established, 4 related, 8 new, 64 untracked; 0 without a connection.
    pub const CT_STATE: u16 = 19;
    /// The connection's TCP state as Linux numbers `enum tcp_conntrack` (unsigned8): 0 none,
    /// 1 SYN_SENT, 2 SYN_RECV, 3 ESTABLISHED, 4 FIN_WAIT, 5 CLOSE_WAIT, 6 LAST_ACK,
    /// 7 TIME_WAIT, 8 CLOSE, 9 SYN_SENT2; 0 for other protocols.
    pub const CT_TCP_STATE: u16 = 20;
    /// Whether the connection was ASSURED (boolean: 1 true, 2 false, RFC 7011 §6.1.5).
    pub const CT_ASSURED: u16 = 21;
    /// The rule that gave the last verdict, as the firewall's log names it
    /// (`forward:3 new-tcp`, `policy`), a string; empty where no rule decided.
    pub const FIREWALL_RULE: u16 = 22;
    /// Set in an element id, the same element for the reverse direction (RFC 5103 §6.2: the
    /// reverse of an enterprise-specific element keeps its enterprise number and sets this
    /// bit; the reverse enterprise number 29305 is only for IANA's elements).
    pub const REVERSE_BIT: u16 = 0x4000;
}

/// One field specifier of a template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// Information element id (without the enterprise bit).
    pub id: u16,
    /// Octets, or [`VARIABLE`].
    pub len: u16,
    /// The enterprise number, for an enterprise-specific element.
    pub pen: Option<u32>,
}

const fn ie(id: u16, len: u16) -> Field {
    Field { id, len, pen: None }
}

/// The fields of the IPv4 (`v6` false) or IPv6 template, in order; rampart's own elements
/// carry `pen`.
pub fn fields(v6: bool, pen: u32) -> Vec<Field> {
    let (src, dst, alen) = if v6 { (27, 28, 16) } else { (8, 12, 4) };
    let own = |id, len| Field { id, len, pen: Some(pen) };
    let rev = |id, len| Field { id, len, pen: Some(REVERSE_PEN) };
    use rampart_ie::*;
    vec![
        ie(152, 8),
        ie(153, 8),
        ie(src, alen),
        ie(dst, alen),
        ie(7, 2),
        ie(11, 2),
        ie(4, 1),
        ie(6, 1),
        ie(1, 8),
        ie(2, 8),
        rev(1, 8),
        rev(2, 8),
        ie(239, 1),
        ie(136, 1),
        own(RTT_INITIATOR_COUNT, 4),
        own(RTT_INITIATOR_MIN_US, 4),
        own(RTT_INITIATOR_MEDIAN_US, 4),
        own(RTT_INITIATOR_MAX_US, 4),
        own(RTT_RESPONDER_COUNT, 4),
        own(RTT_RESPONDER_MIN_US, 4),
        own(RTT_RESPONDER_MEDIAN_US, 4),
        own(RTT_RESPONDER_MAX_US, 4),
        own(APP_BY, 1),
        own(TCP_FLAGS_RESPONDER, 1),
        ie(96, VARIABLE),
        own(COMMUNITY_ID, VARIABLE),
    ]
}

/// Octets of a data record's fixed-length fields (all but the strings) in the template of
/// IPv4 (`v6` false) or IPv6 records with `cfg`'s element groups.
fn fixed_len(v6: bool, cfg: &Config) -> usize {
    template_fields(v6, cfg).iter().filter(|f| f.len != VARIABLE).map(|f| usize::from(f.len)).sum()
}

/// The encoder's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Observation domain id, in every message header.
    pub domain: u32,
    /// Largest message, octets (at least [`MIN_MTU`], at most 65535).
    pub mtu: usize,
    /// Enterprise number of rampart's own elements.
    pub pen: u32,
    /// Templates are sent again when this many seconds have passed since they last were
    /// (UDP; 0: never by time).
    pub template_refresh_secs: u64,
    /// Templates are sent again before every this many data messages (UDP; 0: never by count).
    pub template_every: u32,
    /// A reliable transport (TCP): templates once, at the start.
    pub reliable: bool,
    /// Records carry Zeek's `conn_state` and `history` and the TCP health counters per
    /// direction ([`tcp_fields`]), under their own template ids ([`template_id`]).
    pub tcp: bool,
    /// Records carry the firewall's verdict, rule and connection state
    /// ([`firewall_fields`]), under their own template ids ([`template_id`]).
    pub firewall: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            domain: 1,
            mtu: 1400,
            pen: DOCUMENTATION_PEN,
            template_refresh_secs: 600,
            template_every: 4800,
            reliable: false,
            tcp: false,
            firewall: false,
        }
    }
}

/// A finished message for the transport.
#[derive(Clone, Copy, Debug)]
pub struct Message<'a> {
    /// The message's octets, header included.
    pub bytes: &'a [u8],
    /// Data records in it (0 for a template message).
    pub records: u32,
}

/// Encodes flow records into IPFIX messages, reusing its buffers: no allocation per record once
/// they have grown.
#[derive(Debug)]
pub struct Encoder {
    cfg: Config,
    /// The message being filled; its header is written when it is finished.
    buf: Vec<u8>,
    /// The open data set in `buf`: its offset and template id.
    set: Option<(usize, u16)>,
    /// Data records in `buf`.
    records: u32,
    /// The octets of a data record's fixed-length fields, for IPv4 and IPv6 (from [`fields`]).
    fixed: [usize; 2],
    /// Data records sent before `buf` (the next header's sequence number).
    seq: u32,
    /// The template messages (one, unless both templates do not fit one message).
    templates: Vec<Vec<u8>>,
    /// When templates last went (seconds, the caller's clock), `None` before the first time.
    templates_at: Option<u64>,
    /// Data messages since templates last went.
    since_templates: u32,
    /// Scratch space for the application name.
    scratch: Vec<u8>,
}

impl Encoder {
    /// An encoder with `cfg`; an error when the message size is outside [`MIN_MTU`]..=65535.
    pub fn new(cfg: Config) -> Result<Self, String> {
        if !(MIN_MTU..=65535).contains(&cfg.mtu) {
            return Err(format!(
                "an IPFIX message size of {} octets: it must be {MIN_MTU} to 65535",
                cfg.mtu
            ));
        }
        let mut buf = Vec::with_capacity(cfg.mtu);
        buf.resize(HEADER, 0);
        Ok(Self {
            cfg,
            buf,
            set: None,
            records: 0,
            fixed: [fixed_len(false, &cfg), fixed_len(true, &cfg)],
            seq: 0,
            templates: template_messages(&cfg),
            templates_at: None,
            since_templates: 0,
            scratch: Vec::with_capacity(64),
        })
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The sequence number the next message will carry: data records sent so far (mod 2^32).
    pub fn sequence(&self) -> u32 {
        self.seq
    }

    /// Data records waiting in the unfinished message.
    pub fn pending(&self) -> u32 {
        self.records
    }

    /// Adds a record. `now` is the time in seconds since the epoch (the export time written in
    /// headers, and the clock of the template refresh). Messages that are finished on the way
    /// (a full data message, and templates before it when they are due) go to `emit`; an
    /// error from `emit` is returned, and the message it refused is dropped.
    pub fn add(
        &mut self,
        r: &FlowRecord,
        now: u64,
        emit: &mut dyn FnMut(Message<'_>) -> io::Result<()>,
    ) -> io::Result<()> {
        let v6 = r.flow.key.family() == IpFamily::V6;
        let template = template_id(v6, &self.cfg);
        // The two strings, formatted first so the record's length is known.
        self.scratch.clear();
        if let Some(app) = &r.app {
            let _ = write!(self.scratch, "{}", app.label);
            truncate_utf8(&mut self.scratch, MAX_APP_NAME);
        }
        let app_len = self.scratch.len();
        let cid = community_id::of_flow(&r.flow, 0);
        let cid_len = cid.map_or(0, |c| c.as_str().len());
        let len =
            self.fixed[usize::from(v6)] + 1 + app_len + 1 + cid_len + ext::var_len(r, &self.cfg);
        let open_here = matches!(self.set, Some((_, t)) if t == template);
        let need = len + if open_here { 0 } else { 4 };
        if self.buf.len() + need > self.cfg.mtu && self.records > 0 {
            self.finish(now, emit)?;
        }
        if !matches!(self.set, Some((_, t)) if t == template) {
            self.close_set();
            self.set = Some((self.buf.len(), template));
            self.buf.extend_from_slice(&template.to_be_bytes());
            self.buf.extend_from_slice(&[0, 0]);
        }
        let at = self.buf.len();
        // Fixed-length fields first, then the strings, as `template_fields` orders them.
        encode_fixed(&mut self.buf, r);
        ext::encode_fixed(&mut self.buf, r, &self.cfg);
        put_var(&mut self.buf, &self.scratch);
        put_var(&mut self.buf, cid.as_ref().map_or("", |c| c.as_str()).as_bytes());
        ext::encode_var(&mut self.buf, r, &self.cfg);
        debug_assert_eq!(self.buf.len() - at, len, "the record's length from its template");
        self.records += 1;
        Ok(())
    }

    /// Finishes the current message, if it holds any record, and sends it (after the
    /// templates, when they are due).
    pub fn flush(
        &mut self,
        now: u64,
        emit: &mut dyn FnMut(Message<'_>) -> io::Result<()>,
    ) -> io::Result<()> {
        if self.records > 0 { self.finish(now, emit) } else { Ok(()) }
    }

    /// Whether templates must go before the next data message.
    fn templates_due(&self, now: u64) -> bool {
        let Some(at) = self.templates_at else { return true };
        if self.cfg.reliable {
            return false;
        }
        let secs = self.cfg.template_refresh_secs;
        (secs > 0 && now.saturating_sub(at) >= secs)
            || (self.cfg.template_every > 0 && self.since_templates >= self.cfg.template_every)
    }

    fn close_set(&mut self) {
        if let Some((at, _)) = self.set.take() {
            let len = (self.buf.len() - at) as u16;
            self.buf[at + 2..at + 4].copy_from_slice(&len.to_be_bytes());
        }
    }

    fn finish(
        &mut self,
        now: u64,
        emit: &mut dyn FnMut(Message<'_>) -> io::Result<()>,
    ) -> io::Result<()> {
        self.close_set();
        if self.templates_due(now) {
            let copies = if self.templates_at.is_none() && !self.cfg.reliable { 2 } else { 1 };
            self.templates_at = Some(now);
            self.since_templates = 0;
            for _ in 0..copies {
                for t in &mut self.templates {
                    header(t, now, self.seq, self.cfg.domain);
                    emit(Message { bytes: t, records: 0 })?;
                }
            }
        }
        let records = self.records;
        header(&mut self.buf, now, self.seq, self.cfg.domain);
        self.seq = self.seq.wrapping_add(records);
        self.since_templates += 1;
        let sent = emit(Message { bytes: &self.buf, records });
        self.buf.truncate(HEADER);
        self.records = 0;
        sent
    }
}

/// Writes the header of the message in `m` (its length is `m.len()`).
fn header(m: &mut [u8], now: u64, seq: u32, domain: u32) {
    let len = m.len() as u16;
    m[0..2].copy_from_slice(&VERSION.to_be_bytes());
    m[2..4].copy_from_slice(&len.to_be_bytes());
    m[4..8].copy_from_slice(&(now.min(u64::from(u32::MAX)) as u32).to_be_bytes());
    m[8..12].copy_from_slice(&seq.to_be_bytes());
    m[12..16].copy_from_slice(&domain.to_be_bytes());
}

/// The template message: a header (filled in when sent) and one template set with both
/// templates (IPv4 and IPv6) of `cfg`'s element groups.
fn template_message(cfg: &Config) -> Vec<u8> {
    template_set_message(cfg, &[false, true])
}

/// The template messages to send: the one [`template_message`], or, when both templates do
/// not fit [`Config::mtu`] together (every element group at a small MTU), one message per
/// template.
fn template_messages(cfg: &Config) -> Vec<Vec<u8>> {
    let both = template_message(cfg);
    if both.len() <= cfg.mtu {
        vec![both]
    } else {
        vec![template_set_message(cfg, &[false]), template_set_message(cfg, &[true])]
    }
}

/// A message with one template set holding the templates of IPv4 (`false`) and IPv6 (`true`)
/// records `which` lists.
fn template_set_message(cfg: &Config, which: &[bool]) -> Vec<u8> {
    let mut m = vec![0u8; HEADER];
    let set = m.len();
    m.extend_from_slice(&2u16.to_be_bytes());
    m.extend_from_slice(&[0, 0]);
    for &v6 in which {
        let (id, f) = (template_id(v6, cfg), template_fields(v6, cfg));
        m.extend_from_slice(&id.to_be_bytes());
        m.extend_from_slice(&(f.len() as u16).to_be_bytes());
        for field in f {
            let id = if field.pen.is_some() { field.id | 0x8000 } else { field.id };
            m.extend_from_slice(&id.to_be_bytes());
            m.extend_from_slice(&field.len.to_be_bytes());
            if let Some(pen) = field.pen {
                m.extend_from_slice(&pen.to_be_bytes());
            }
        }
    }
    let len = (m.len() - set) as u16;
    m[set + 2..set + 4].copy_from_slice(&len.to_be_bytes());
    m
}

/// Cuts `s` to at most `max` octets at a UTF-8 character boundary.
fn truncate_utf8(s: &mut Vec<u8>, max: usize) {
    if s.len() <= max {
        return;
    }
    let mut end = max;
    while end > 0 && (s[end] & 0xc0) == 0x80 {
        end -= 1;
    }
    s.truncate(end);
}

/// The flowEndReason of a record (RFC 7012 / IANA values).
pub fn end_reason(e: EndReason) -> u8 {
    match e {
        EndReason::Idle => 1,
        EndReason::Active => 2,
        EndReason::Fin | EndReason::Rst => 3,
        EndReason::End => 4,
        EndReason::Evicted => 5,
    }
}

/// rampart's `APP_BY` value of a record.
fn app_by(r: &FlowRecord) -> u8 {
    match r.app.as_ref().map(|a| a.by) {
        None => 0,
        Some(rampart_dpi::By::Dpi) => 1,
        Some(rampart_dpi::By::Port) => 2,
        Some(rampart_dpi::By::Address) => 3,
        Some(rampart_dpi::By::None) => 4,
    }
}

fn us(ns: u64) -> u32 {
    (ns / 1000).min(u64::from(u32::MAX)) as u32
}

fn put_rtt(b: &mut Vec<u8>, d: Option<DirSummary>) {
    let d = d.filter(|d| d.count > 0);
    let v = d.map_or([0; 4], |d| {
        [
            d.count.min(u64::from(u32::MAX)) as u32,
            us(d.min.as_nanos()),
            us(d.median.as_nanos()),
            us(d.max.as_nanos()),
        ]
    });
    for x in v {
        b.extend_from_slice(&x.to_be_bytes());
    }
}

/// A variable-length value: one length octet below 255, else 255 and two octets.
fn put_var(b: &mut Vec<u8>, v: &[u8]) {
    if v.len() < 255 {
        b.push(v.len() as u8);
    } else {
        b.push(255);
        b.extend_from_slice(&(v.len().min(65535) as u16).to_be_bytes());
    }
    b.extend_from_slice(&v[..v.len().min(65535)]);
}

/// Appends the fixed-length fields of the base elements of a data record (all of [`fields`]
/// but the two strings, applicationName and the Community ID, which follow them).
fn encode_fixed(b: &mut Vec<u8>, r: &FlowRecord) {
    let f = &r.flow;
    let k = &f.key;
    let alen = if k.family() == IpFamily::V6 { 16 } else { 4 };
    let (src, sport, dst, dport) = match f.initiator {
        Side::A => (k.addr_a_bytes(), k.port_a(), k.addr_b_bytes(), k.port_b()),
        Side::B => (k.addr_b_bytes(), k.port_b(), k.addr_a_bytes(), k.port_a()),
    };
    let (sport, dport) = match k.kind() {
        KeyKind::Ports => (sport, dport),
        KeyKind::Echo | KeyKind::Pair => (0, 0),
    };
    let tcp = k.proto() == rampart_wire::proto::TCP;
    b.extend_from_slice(&(f.first.as_nanos() / 1_000_000).to_be_bytes());
    b.extend_from_slice(&(f.last.as_nanos() / 1_000_000).to_be_bytes());
    b.extend_from_slice(&src[..alen]);
    b.extend_from_slice(&dst[..alen]);
    b.extend_from_slice(&sport.to_be_bytes());
    b.extend_from_slice(&dport.to_be_bytes());
    b.push(k.proto());
    b.push(if tcp { f.tcp_flags[0] } else { 0 });
    b.extend_from_slice(&f.bytes[0].to_be_bytes());
    b.extend_from_slice(&f.packets[0].to_be_bytes());
    b.extend_from_slice(&f.bytes[1].to_be_bytes());
    b.extend_from_slice(&f.packets[1].to_be_bytes());
    b.push(1);
    b.push(end_reason(r.end));
    let rtt = r.rtt.filter(|_| tcp).map(|s| s.toward_src_dst());
    put_rtt(b, rtt.map(|(s, _)| s));
    put_rtt(b, rtt.map(|(_, d)| d));
    b.push(app_by(r));
    b.push(if tcp { f.tcp_flags[1] } else { 0 });
}

/// How messages travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// UDP (the default; RFC 7011's port 4739).
    Udp,
    /// TCP.
    Tcp,
}

/// A collector's address as the command line gives it: `HOST:PORT`, `udp://HOST:PORT` or
/// `tcp://HOST:PORT` (IPv6 addresses in brackets).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The transport.
    pub transport: Transport,
    /// `HOST:PORT`.
    pub addr: String,
}

impl Target {
    /// Reads `HOST:PORT`, `udp://HOST:PORT` or `tcp://HOST:PORT`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let (transport, addr) = match s.split_once("://") {
            None => (Transport::Udp, s),
            Some(("udp", a)) => (Transport::Udp, a),
            Some(("tcp", a)) => (Transport::Tcp, a),
            Some((other, _)) => {
                return Err(format!("'{s}': the transport is udp:// or tcp://, not {other}://"));
            }
        };
        let port_ok = addr
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok_and(|p| p > 0));
        if !port_ok {
            return Err(format!("'{s}' is not HOST:PORT (IPv6 addresses in brackets: [::1]:4739)"));
        }
        Ok(Self { transport, addr: addr.to_string() })
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = match self.transport {
            Transport::Udp => "udp",
            Transport::Tcp => "tcp",
        };
        write!(f, "{scheme}://{}", self.addr)
    }
}

/// A failure that ends an export: the collector it concerns and what happened.
#[derive(Debug)]
pub struct Error {
    /// The collector.
    pub target: String,
    /// What happened.
    pub what: String,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IPFIX collector {}: {}", self.target, self.what)
    }
}

impl std::error::Error for Error {}

/// What an export did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Data records sent.
    pub records: u64,
    /// Data messages sent.
    pub messages: u64,
    /// Template messages sent.
    pub template_messages: u64,
    /// Data records in messages the system refused to send (UDP: no collector listening,
    /// no route, ...). UDP has no acknowledgements: a message the network loses later is
    /// not counted.
    pub lost: u64,
}

enum Conn {
    Udp(UdpSocket),
    Tcp(TcpStream),
}

/// Sends flow records to one collector.
pub struct Exporter {
    enc: Encoder,
    conn: Conn,
    target: Target,
    stats: Stats,
    /// The first send error (UDP), until [`Exporter::take_warning`] takes it.
    warning: Option<String>,
    warned: bool,
}

impl Exporter {
    /// Opens the transport to `target`: a UDP socket connected to it, or a TCP connection
    /// (waiting at most `connect_timeout`). Templates are sent with the first data.
    pub fn connect(target: Target, cfg: Config, connect_timeout: Duration) -> Result<Self, Error> {
        let err = |what: String| Error { target: target.to_string(), what };
        let addrs: Vec<SocketAddr> = target
            .addr
            .to_socket_addrs()
            .map_err(|e| err(format!("cannot resolve {}: {e}", target.addr)))?
            .collect();
        let Some(&first) = addrs.first() else {
            return Err(err(format!("{} resolves to no address", target.addr)));
        };
        let reliable = target.transport == Transport::Tcp;
        let enc = Encoder::new(Config { reliable, ..cfg }).map_err(err)?;
        let conn = match target.transport {
            Transport::Udp => {
                let local: SocketAddr = if first.is_ipv4() {
                    "0.0.0.0:0".parse().expect("an address")
                } else {
                    "[::]:0".parse().expect("an address")
                };
                let s = UdpSocket::bind(local)
                    .and_then(|s| s.connect(first).map(|()| s))
                    .map_err(|e| err(e.to_string()))?;
                Conn::Udp(s)
            }
            Transport::Tcp => {
                let mut last = None;
                let mut stream = None;
                for a in &addrs {
                    match TcpStream::connect_timeout(a, connect_timeout) {
                        Ok(s) => {
                            stream = Some(s);
                            break;
                        }
                        Err(e) => last = Some(e),
                    }
                }
                let s = stream.ok_or_else(|| {
                    err(format!(
                        "cannot connect: {}",
                        last.map_or("no address".to_string(), |e| e.to_string())
                    ))
                })?;
                let _ = s.set_nodelay(true);
                s.set_write_timeout(Some(Duration::from_secs(30)))
                    .map_err(|e| err(e.to_string()))?;
                Conn::Tcp(s)
            }
        };
        Ok(Self { enc, conn, target, stats: Stats::default(), warning: None, warned: false })
    }

    /// The collector.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Counts so far (records still in the unfinished message are not counted yet).
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The first failure to send over UDP, once: the run goes on, and the records are
    /// counted as lost.
    pub fn take_warning(&mut self) -> Option<String> {
        self.warning.take()
    }

    /// Exports one record (it goes out when its message is full, or at [`Exporter::flush`]).
    /// Errors only over TCP: over UDP a failed send is counted and the export goes on.
    pub fn record(&mut self, r: &FlowRecord) -> Result<(), Error> {
        let now = now_secs();
        let Self { enc, conn, stats, warning, warned, target } = self;
        let mut emit = |m: Message<'_>| send(conn, stats, warning, warned, target, m);
        enc.add(r, now, &mut emit)
            .map_err(|e| Error { target: target.to_string(), what: e.to_string() })
    }

    /// Sends what is waiting.
    pub fn flush(&mut self) -> Result<(), Error> {
        let now = now_secs();
        let Self { enc, conn, stats, warning, warned, target } = self;
        let mut emit = |m: Message<'_>| send(conn, stats, warning, warned, target, m);
        enc.flush(now, &mut emit)
            .map_err(|e| Error { target: target.to_string(), what: e.to_string() })
    }
}

fn send(
    conn: &mut Conn,
    stats: &mut Stats,
    warning: &mut Option<String>,
    warned: &mut bool,
    target: &Target,
    m: Message<'_>,
) -> io::Result<()> {
    let sent = match conn {
        Conn::Udp(s) => s.send(m.bytes).map(|_| ()),
        Conn::Tcp(s) => s.write_all(m.bytes),
    };
    match sent {
        Ok(()) => {
            if m.records == 0 {
                stats.template_messages += 1;
            } else {
                stats.messages += 1;
                stats.records += u64::from(m.records);
            }
            Ok(())
        }
        Err(e) => match conn {
            Conn::Udp(_) => {
                stats.lost += u64::from(m.records);
                if !*warned {
                    *warned = true;
                    *warning = Some(format!(
                        "IPFIX collector {target}: {e}; going on, records not sent are counted as lost"
                    ));
                }
                Ok(())
            }
            // Not a broken pipe to the caller, which would take it for a reader that has
            // seen enough.
            Conn::Tcp(_) => Err(io::Error::other(e.to_string())),
        },
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests;
