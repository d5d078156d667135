//! The detector registry: every detector, what it recognises, the evidence it needs and where
//! its facts come from, and the dispatch tables that hand each packet only to the detectors
//! that can accept its first byte.
//!
//! Adding a protocol is one file under `proto/` that defines a [`Detector`], and one line in
//! [`DETECTORS`]. The per-packet cost stays flat as detectors are added: a packet goes
//! through the set for its transport and its first payload byte (built at compile time), not
//! through every detector in turn.

use crate::{Meta, Packet, Proto, Seen, proto};

/// The transports a detector reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Transport {
    Tcp,
    Udp,
    Both,
}

impl Transport {
    fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "TCP",
            Transport::Udp => "UDP",
            Transport::Both => "TCP, UDP",
        }
    }
}

/// The first payload bytes a detector can recognise (what the dispatch tables index).
#[derive(Clone, Copy, Debug)]
pub(crate) enum First {
    /// Any first byte (length-prefixed or port-bound formats).
    Any,
    /// One of these bytes.
    Bytes(&'static [u8]),
    /// A byte in this range (inclusive).
    Range(u8, u8),
    /// Printable ASCII (0x20-0x7e), for text protocols, and these bytes.
    Text(&'static [u8]),
}

impl First {
    const fn accepts(self, b: u8) -> bool {
        match self {
            First::Any => true,
            First::Bytes(set) => contains(set, b),
            First::Range(lo, hi) => lo <= b && b <= hi,
            First::Text(also) => (0x20 <= b && b <= 0x7e) || contains(also, b),
        }
    }
}

const fn contains(set: &[u8], b: u8) -> bool {
    let mut i = 0;
    while i < set.len() {
        if set[i] == b {
            return true;
        }
        i += 1;
    }
    false
}

/// A detector: the protocols it labels, where it looks, and the evidence it needs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Detector {
    /// The protocols it can label (the first is its name in the table).
    pub(crate) protos: &'static [Proto],
    /// The transports it reads.
    pub(crate) transport: Transport,
    /// The first payload bytes it can recognise.
    pub(crate) first: First,
    /// What it needs before it labels a flow, in words.
    pub(crate) evidence: &'static str,
    /// Where the facts it checks come from (specifications, vendor documents).
    pub(crate) source: &'static str,
    /// The detector.
    pub(crate) detect: fn(&Packet<'_>, &mut Meta) -> Seen,
}

/// Every detector, in the order they are tried (most specific first).
pub(crate) const DETECTORS: &[Detector] = &[
    crate::tls::DETECTOR,
    crate::tls::DTLS,
    crate::text::DETECTOR,
    crate::text::UDP,
    crate::dns::UDP,
    crate::dns::TCP,
    proto::someip::DETECTOR,
    proto::roughtime::DETECTOR,
    proto::dnscrypt::DETECTOR,
    proto::slp::DETECTOR,
    proto::radius::DETECTOR,
    proto::gnutella::DETECTOR,
    proto::zabbix::DETECTOR,
    proto::fix::DETECTOR,
    proto::xmpp::DETECTOR,
    proto::tds::DETECTOR,
    proto::source_engine::DETECTOR,
    proto::tuya::DETECTOR,
    proto::bacnet::DETECTOR,
    proto::bgp::DETECTOR,
    proto::dnp3::DETECTOR,
    proto::iec104::DETECTOR,
    proto::modbus::DETECTOR,
    proto::redis::DETECTOR,
    proto::dcerpc::DETECTOR,
    proto::teredo::DETECTOR,
    proto::coap::DETECTOR,
    proto::natpmp::DETECTOR,
    proto::rmcp::DETECTOR,
    proto::hsrp::DETECTOR,
    proto::bfd::DETECTOR,
    proto::mongodb::DETECTOR,
    proto::bitcoin::DETECTOR,
    proto::oicq::DETECTOR,
    proto::raknet::DETECTOR,
    proto::capwap::DETECTOR,
    proto::ethereum::DETECTOR,
    proto::s7comm::DETECTOR,
    proto::amqp::DETECTOR,
    proto::bjnp::DETECTOR,
    proto::mgcp::DETECTOR,
    proto::socks::DETECTOR,
    proto::egd::DETECTOR,
    proto::ether_s_bus::DETECTOR,
    proto::cpha::DETECTOR,
    proto::whois::DETECTOR,
    proto::z3950::DETECTOR,
    proto::rsh::DETECTOR,
    proto::dsi::DETECTOR,
    proto::cip_io::DETECTOR,
    proto::citrix::DETECTOR,
    proto::giop::DETECTOR,
    proto::dlms::DETECTOR,
    proto::edonkey::DETECTOR,
    proto::lisp::DETECTOR,
    proto::tns::DETECTOR,
    proto::rx::DETECTOR,
    proto::trdp::DETECTOR,
    proto::hislip::DETECTOR,
    proto::ptpv2::DETECTOR,
    proto::dlep::DETECTOR,
    proto::hart_ip::DETECTOR,
    proto::fins::DETECTOR,
    proto::c37118::DETECTOR,
    proto::bfcp::DETECTOR,
    proto::iscsi::DETECTOR,
    proto::thrift::DETECTOR,
    proto::openwire::DETECTOR,
    proto::iax::DETECTOR,
    proto::drda::DETECTOR,
    proto::beckhoff_ads::DETECTOR,
    proto::ubntac2::DETECTOR,
    proto::tplink_shp::DETECTOR,
    proto::kafka::DETECTOR,
    proto::elasticsearch::DETECTOR,
    proto::netflow::DETECTOR,
    proto::collectd::DETECTOR,
    proto::smpp::DETECTOR,
    proto::pptp::DETECTOR,
    proto::openflow::DETECTOR,
    proto::knxnet::DETECTOR,
    proto::ethernetip::DETECTOR,
    proto::opcua::DETECTOR,
    proto::fastcgi::DETECTOR,
    proto::ajp::DETECTOR,
    proto::diameter::DETECTOR,
    proto::xdmcp::DETECTOR,
    proto::skinny::DETECTOR,
    proto::cassandra::DETECTOR,
    proto::git::DETECTOR,
    proto::memcached::DETECTOR,
    proto::ldp::DETECTOR,
    proto::gtp::DETECTOR,
    proto::vnc::DETECTOR,
    proto::rsync::DETECTOR,
    proto::stomp::DETECTOR,
    proto::nats::DETECTOR,
    proto::gearman::DETECTOR,
    proto::jrmi::DETECTOR,
    proto::rtps::DETECTOR,
    proto::ceph::DETECTOR,
    proto::checkmk::DETECTOR,
    proto::kismet::DETECTOR,
    proto::munin::DETECTOR,
    proto::mining::DETECTOR,
    proto::monero::DETECTOR,
    proto::hl7::DETECTOR,
    proto::haproxy::DETECTOR,
    proto::megaco::DETECTOR,
    proto::tivoconnect::DETECTOR,
    proto::wsd::DETECTOR,
    proto::syncthing::DETECTOR,
    proto::pfcp::DETECTOR,
    proto::avast_securedns::DETECTOR,
    proto::sd_rtn::DETECTOR,
    proto::photon::DETECTOR,
    proto::alicloud::DETECTOR,
    proto::avast::DETECTOR,
    proto::weave::DETECTOR,
    proto::hpvirtgrp::DETECTOR,
    proto::hpvirtgrp::JABBER,
    proto::caneth::DETECTOR,
    proto::eaq::DETECTOR,
    proto::ripe_atlas::DETECTOR,
    proto::zug::DETECTOR,
    proto::crynet::DETECTOR,
    proto::genshin::DETECTOR,
    proto::kcp::DETECTOR,
    proto::netcode::DETECTOR,
    proto::tinc::DETECTOR,
    proto::uftp::DETECTOR,
    proto::websocket::DETECTOR,
    proto::syslog_tcp::DETECTOR,
    proto::rdp_udp::DETECTOR,
    proto::raft::DETECTOR,
    proto::mms::DETECTOR,
    proto::nano::DETECTOR,
    proto::lustre::DETECTOR,
    proto::merakicloud::DETECTOR,
    proto::path_of_exile::DETECTOR,
    proto::flute::DETECTOR,
    proto::ethersio::DETECTOR,
    proto::cnp_ip::DETECTOR,
    proto::c1222::DETECTOR,
    proto::atg::DETECTOR,
    proto::among_us::DETECTOR,
    proto::nomachine::DETECTOR,
    proto::spotify_ap::DETECTOR,
    proto::xiaomi::DETECTOR,
    proto::nintendo::DETECTOR,
    proto::riotgames::DETECTOR,
    proto::h323::DETECTOR,
    proto::wow::DETECTOR,
    proto::jsonrpc::DETECTOR,
    proto::miop::DETECTOR,
    crate::udp::TCP_BINARY,
    crate::udp::UDP_BINARY,
    crate::udp::RTP,
];

/// Words of a detector set: up to 256 detectors.
const WORDS: usize = 4;

const _: () = assert!(DETECTORS.len() <= WORDS * 64, "widen the dispatch sets");

/// Per transport (TCP, then UDP) and first byte, the set of detectors to try (bit `i` for
/// `DETECTORS[i]`, tried in registry order). Built at compile time: 16 KB, contiguous.
static TABLES: [[[u64; WORDS]; 256]; 2] = tables();

const fn tables() -> [[[u64; WORDS]; 256]; 2] {
    let mut t = [[[0u64; WORDS]; 256]; 2];
    let mut i = 0;
    while i < DETECTORS.len() {
        let d = &DETECTORS[i];
        let mut half = 0;
        while half < 2 {
            let wanted = if half == 0 { Transport::Tcp } else { Transport::Udp };
            if d.transport as u8 == wanted as u8 || d.transport as u8 == Transport::Both as u8 {
                let mut b = 0;
                while b < 256 {
                    if d.first.accepts(b as u8) {
                        t[half][b][i / 64] |= 1 << (i % 64);
                    }
                    b += 1;
                }
            }
            half += 1;
        }
        i += 1;
    }
    t
}

/// The detectors to try for a transport and first byte, in registry order.
fn candidates(tcp: bool, first: u8) -> impl Iterator<Item = usize> {
    let set = TABLES[usize::from(!tcp)][usize::from(first)];
    (0..WORDS).flat_map(move |w| {
        let mut bits = set[w];
        std::iter::from_fn(move || {
            if bits == 0 {
                return None;
            }
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            Some(w * 64 + i)
        })
    })
}

/// Runs the detectors that can accept `p` (over TCP if `tcp`): the first that recognises it
/// decides. A heuristic match goes to `evidence`, which says whether the flow's evidence for
/// that protocol is now enough (then it decides too). `More` if a detector asked for more.
pub(crate) fn detect(
    tcp: bool,
    p: &Packet<'_>,
    meta: &mut Meta,
    evidence: &mut dyn FnMut(crate::Label, u32, Option<u16>) -> bool,
) -> Seen {
    let Some(&first) = p.payload.first() else { return Seen::No };
    let mut more = false;
    for i in candidates(tcp, first) {
        match (DETECTORS[i].detect)(p, meta) {
            Seen::No => {}
            Seen::More => more = true,
            Seen::Maybe(label, key, seq) => {
                if evidence(label, key, seq) {
                    return Seen::Is(label);
                }
            }
            found => return found,
        }
    }
    if more { Seen::More } else { Seen::No }
}

/// One row of the supported-protocols table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtocolInfo {
    /// The protocol's name (nDPI's).
    pub name: &'static str,
    /// The transports it is recognised on.
    pub transport: String,
    /// What the detectors need before they label a flow (one clause per detector, when
    /// several recognise the protocol).
    pub evidence: String,
    /// Where the facts they check come from.
    pub source: String,
}

/// Every protocol the detectors recognise, one row each, sorted by name (case-insensitive).
/// Protocols recognised from the IP header alone (ICMP, ESP, GRE, ...) come last-but-sorted
/// with the others, their transport shown as `IP`.
pub fn protocols() -> Vec<ProtocolInfo> {
    let mut rows: Vec<ProtocolInfo> = Vec::new();
    for d in DETECTORS {
        for p in d.protos {
            // A protocol several detectors recognise (over TCP and UDP, or from different
            // messages) gets one row with each detector's evidence and sources.
            if let Some(r) = rows.iter_mut().find(|r| r.name == p.name()) {
                if r.transport != d.transport.name() {
                    r.transport = Transport::Both.name().to_string();
                }
                if !r.evidence.contains(d.evidence) {
                    r.evidence = format!("{}; also {}", r.evidence, d.evidence);
                }
                if !r.source.contains(d.source) {
                    r.source = format!("{}; {}", r.source, d.source);
                }
                continue;
            }
            rows.push(ProtocolInfo {
                name: p.name(),
                transport: d.transport.name().to_string(),
                evidence: d.evidence.to_string(),
                source: d.source.to_string(),
            });
        }
    }
    for l4 in 0..=255u8 {
        if let Some(p) = Proto::of_ip_proto(l4)
            && !rows.iter().any(|r| r.name == p.name())
        {
            rows.push(ProtocolInfo {
                name: p.name(),
                transport: "IP".to_string(),
                evidence: "the IP header's protocol number".to_string(),
                source: "IANA protocol numbers".to_string(),
            });
        }
    }
    rows.sort_by_key(|r| r.name.to_ascii_lowercase());
    rows
}

/// The supported-protocols table as Markdown (what `crates/dpi/PROTOCOLS.md` holds).
pub fn protocols_markdown() -> String {
    let rows = protocols();
    let mut s = String::new();
    s.push_str("# Protocols rampart identifies\n\n");
    s.push_str(
        "Generated from the detector registry (`crates/dpi/src/registry.rs`) by \
         `rampart dpi protocols --markdown`; a test checks that this file is current.\n\n",
    );
    s.push_str(&format!("{} protocols.\n\n", rows.len()));
    s.push_str("| protocol | transport | evidence before a label | source of the facts |\n");
    s.push_str("|---|---|---|---|\n");
    for r in rows {
        s.push_str(&format!("| {} | {} | {} | {} |\n", r.name, r.transport, r.evidence, r.source));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_detector_is_reachable_and_named() {
        for (i, d) in DETECTORS.iter().enumerate() {
            assert!(!d.protos.is_empty() && !d.evidence.is_empty() && !d.source.is_empty());
            let reachable = (0..=255u8).any(|b| {
                candidates(true, b).any(|j| j == i) || candidates(false, b).any(|j| j == i)
            });
            assert!(reachable, "detector {i} is in no table");
        }
    }

    #[test]
    fn dispatch_skips_detectors_that_cannot_match() {
        // A TLS record's first byte reaches TLS but not the text protocols.
        let tls = DETECTORS.iter().position(|d| d.protos[0] == Proto::Tls).unwrap();
        let text = DETECTORS.iter().position(|d| d.protos[0] == Proto::Http).unwrap();
        assert!(candidates(true, 0x16).any(|i| i == tls));
        assert!(!candidates(true, 0x16).any(|i| i == text));
        assert!(candidates(true, b'G').any(|i| i == text));
        assert!(!candidates(true, b'G').any(|i| i == tls));
        // In registry order, and much shorter than the registry for most bytes.
        for tcp in [true, false] {
            for b in 0..=255u8 {
                let list: Vec<usize> = candidates(tcp, b).collect();
                assert!(list.windows(2).all(|w| w[0] < w[1]));
                assert!(list.len() < DETECTORS.len());
            }
        }
    }
}
