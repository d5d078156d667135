//! `--compat pping`: the samples upstream pping (pollere/pping) prints, byte for byte.
//!
//! pping keeps one record per flow *direction*, keyed by the string `src:sport+dst:dport`, and a
//! table of TSvals keyed by `direction+TSval`. This module keeps the same state in a different
//! shape: one `Conn` per connection (both directions, found with one hash of the packed
//! [`FlowKey`]) and a flat table of TSvals keyed by a `u64` (connection, direction, TSval). The
//! arithmetic is pping's own: capture times are the same `f64` values computed the same way, so
//! every printed digit agrees.
//!
//! Each behaviour below is one pping has, kept here on purpose (`../notes` call them quirks):
//!
//! * **The `tcp` filter** ([`compat_view`]): pping always runs the BPF filter `tcp`, which looks
//!   for the IP header right after the link header. VLAN-tagged, PPPoE and MPLS frames, and
//!   IPv6 packets whose first next-header is neither TCP nor a fragment header, never reach it.
//! * **libtins' parser** ([`compat_view`], libtins 4.0 as Debian ships it): a frame libtins
//!   cannot parse is skipped without a count. That includes every IPv6 packet captured shorter
//!   than its payload length (so with a 144-byte snap length only pure ACKs survive), an IPv4
//!   header length below 5 words, IPv4 options that are malformed or hold END before their
//!   last byte, and any TCP header or option cut short or malformed. libtins is lax elsewhere,
//!   and so is this: the IP version nibble is never looked at (the EtherType decides); an IPv4
//!   total length of 0 or below the header's own means "all that was captured"; TCP options
//!   are read past an EOL up to the data offset (a timestamps option after it counts); no
//!   option's length is checked against its kind, and a timestamps option whose length is not
//!   10 is "no TS opt". IP fragments, and IPv4 headers with nothing captured after them, parse
//!   as raw data and count as "not TCP".
//! * **Which packets are used**: no TSval 0; no TSecr 0 unless the flags are exactly SYN.
//! * **Time**: the first usable packet's whole seconds become the offset; every time is an `f64`
//!   of seconds since that offset, so a packet in that second whose microseconds are 0 gets time
//!   0.0 and its TSval can never match (pping tests `t > 0`).
//! * **Flows**: a direction's record is created by its first usable packet (up to
//!   `max_flows + 1` records); a direction is not timestamped until the reverse direction has
//!   been seen, so a connection's SYN never is.
//! * **First write wins**: the first packet carrying a TSval is the one timestamped; an entry
//!   that has matched is negated, not deleted, so it blocks the same TSval from being stored
//!   again until the clean-up removes it.
//! * **Clean-up** runs at capture-time ticks (the first packet, then every `tsval_max_age`
//!   seconds), removing TSvals older than `tsval_max_age` and directions idle longer than
//!   `flow_max_idle`. A removed direction's TSvals stay, as do its peer's "reverse seen" mark.
//! * **Byte counters** add libtins' PDU size: the link header plus the IP packet, trimmed to
//!   its total length and to the captured bytes.

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rampart_flow::{FlowKey, KeyKind, Side};
use rampart_wire::ethernet::ethertype;
use rampart_wire::{Family, IpFamily, LinkType, PacketMeta, Status, Timestamp, tcp::flags};

use crate::{ts_hash, ts_key};

/// What pping would make of one frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CompatView {
    /// Dropped before pping sees it: rejected by the `tcp` filter, or unparsable by libtins.
    Filtered,
    /// Delivered without a TCP header (an IP fragment): counted as "not TCP".
    NotTcp,
    /// TCP without the timestamps option: counted as "no TS opt".
    NoTs,
    /// TCP with timestamps that pping ignores (TSval 0, or TSecr 0 without a bare SYN).
    Skip,
    /// A packet pping uses.
    Usable(CompatPacket),
}

/// The fields pping uses from a packet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompatPacket {
    /// The connection's key.
    pub key: FlowKey,
    /// Which side of the key sent the packet.
    pub side: Side,
    /// TSval.
    pub tsval: u32,
    /// TSecr.
    pub tsecr: u32,
    /// libtins' PDU size: link header plus IP packet, trimmed to its length and the capture.
    pub pdu_size: u32,
}

/// Length of the link header when the IP header follows it directly.
fn link_header_len(link: LinkType) -> Option<usize> {
    match link {
        LinkType::Ethernet => Some(14),
        LinkType::LinuxSll => Some(16),
        LinkType::LinuxSll2 => Some(20),
        LinkType::Raw | LinkType::Ipv4 | LinkType::Ipv6 => Some(0),
        LinkType::Null | LinkType::Loop => Some(4),
        LinkType::Other(_) => None,
    }
}

/// Whether libpcap's `tcp` filter accepts the frame. It reads fixed offsets after the link
/// header, chosen by the EtherType (or the link's family field), never by the IP version
/// nibble: the IPv4 protocol byte, or the IPv6 next header (directly TCP, or a fragment
/// header whose next header is TCP). A load past the captured bytes rejects the packet.
pub fn bpf_tcp(link: LinkType, frame: &[u8], meta: &PacketMeta) -> bool {
    let l3 = usize::from(meta.l3_offset);
    if meta.vlan_count != 0 || link_header_len(link) != Some(l3) {
        return false;
    }
    match meta.ethertype {
        ethertype::IPV4 => frame.get(l3 + 9) == Some(&6),
        ethertype::IPV6 => match frame.get(l3 + 6) {
            Some(6) => true,
            Some(44) => frame.get(l3 + 40) == Some(&6),
            _ => false,
        },
        _ => false,
    }
}

/// A TCP header as libtins reads it: flags byte, source and destination port, timestamps.
type LibtinsTcp = (u16, u16, u16, Option<(u32, u32)>);

/// What libtins 4.0's TCP parser makes of a segment handed `b` (as many bytes as the IP layer
/// gives it): `None` when it throws (the packet is dropped unseen), else the flags byte, the
/// ports and the timestamps if the first timestamps option holds exactly 8 bytes (pping's
/// `timestamp()` throws otherwise, which it counts as "no TS opt").
///
/// libtins reads every option up to the data offset: EOL and NOP are one byte each and the
/// walk goes on after an EOL; any other kind needs a length of at least 2 whose data fits in
/// the header. It checks no option's length against its kind.
fn libtins_tcp(b: &[u8]) -> Option<LibtinsTcp> {
    let h = b.get(..20)?;
    let hl = usize::from(h[12] >> 4) * 4;
    if hl < 20 || hl > b.len() {
        return None;
    }
    let mut ts = None;
    let mut i = 20;
    while i < hl {
        let kind = b[i];
        i += 1;
        if kind <= 1 {
            continue;
        }
        // The length byte may lie past the header (then the option cannot fit) or past the
        // segment (then the read throws): both drop the packet.
        let len = usize::from(*b.get(i)?);
        i += 1;
        if len < 2 || i + (len - 2) > hl {
            return None;
        }
        if kind == 8 && ts.is_none() {
            ts = Some((len == 10).then(|| {
                let v = |at: usize| u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
                (v(i), v(i + 4))
            }));
        }
        i += len - 2;
    }
    let port = |at: usize| u16::from_be_bytes([h[at], h[at + 1]]);
    Some((u16::from(h[13]), port(0), port(2), ts.flatten()))
}

/// The view of a TCP segment once libtins has found it: pping's checks on its timestamps.
fn tcp_view(
    tcp: &[u8],
    src: [u8; 16],
    dst: [u8; 16],
    family: IpFamily,
    pdu_size: usize,
) -> CompatView {
    let Some((tcp_flags, sport, dport, ts)) = libtins_tcp(tcp) else {
        return CompatView::Filtered;
    };
    let Some((tsval, tsecr)) = ts else {
        return CompatView::NoTs;
    };
    if tsval == 0 || (tsecr == 0 && tcp_flags != flags::SYN) {
        return CompatView::Skip;
    }
    let (key, side) = FlowKey::new(src, sport, dst, dport, 6, family, KeyKind::Ports);
    CompatView::Usable(CompatPacket { key, side, tsval, tsecr, pdu_size: pdu_size as u32 })
}

/// The common case, read from the parser's fields: a well-formed IPv4 packet without IP
/// options, through [`plain_tcp`]. libtins reads such a packet as the parser does; anything
/// else goes through [`libtins_v4`].
#[inline]
fn plain_v4(frame: &[u8], meta: &PacketMeta) -> Option<CompatView> {
    let l3 = usize::from(meta.l3_offset);
    if meta.family != Family::V4
        || meta.is_fragment()
        || *frame.get(l3)? != 0x45
        || usize::from(meta.l4_offset) != l3 + 20
    {
        return None;
    }
    let captured_ip = frame.len().saturating_sub(l3);
    plain_tcp(frame, meta, l3 + captured_ip.min(meta.ip_wire_len as usize))
}

/// A TCP segment the parser read whole, whose options are none or exactly NOP, NOP,
/// timestamps: libtins reads it as the parser does, so pping's view comes from the parser's
/// fields (`None`: anything else, for [`libtins_tcp`]).
#[inline]
fn plain_tcp(frame: &[u8], meta: &PacketMeta, pdu_size: usize) -> Option<CompatView> {
    let l4 = usize::from(meta.l4_offset);
    if meta.status != Status::Ok || meta.proto != rampart_wire::proto::TCP {
        return None;
    }
    let options = frame.get(l4 + 20..l4 + usize::from(*frame.get(l4 + 12)? >> 4) * 4)?;
    let ts = match options {
        [] => None,
        [1, 1, 8, 10, ..] if options.len() == 12 => meta.tcp.timestamps(),
        _ => return None,
    };
    let Some((tsval, tsecr)) = ts else { return Some(CompatView::NoTs) };
    if tsval == 0 || (tsecr == 0 && meta.tcp.flags != flags::SYN) {
        return Some(CompatView::Skip);
    }
    let (key, side) = FlowKey::from_meta(meta)?;
    Some(CompatView::Usable(CompatPacket { key, side, tsval, tsecr, pdu_size: pdu_size as u32 }))
}

/// IPv4 as libtins 4.0 parses it (`b` from the IP header to the end of the capture): the
/// version nibble is not looked at; the header length must be at least 5 words and captured;
/// options must be well formed, an END option only as the header's last byte; a total length
/// of 0 or below the header's own length means "all that was captured", else the packet is
/// cut to it; a fragment is not TCP, nor is a header with nothing after it.
fn libtins_v4(b: &[u8], l3: usize) -> CompatView {
    let Some(h) = b.get(..20) else { return CompatView::Filtered };
    let hl = usize::from(h[0] & 0x0f) * 4;
    if hl < 20 || hl > b.len() {
        return CompatView::Filtered;
    }
    let mut i = 20;
    while i < hl {
        let t = b[i];
        i += 1;
        if t & 0x1f > 1 {
            // A multi-byte option (by its number, the low five bits).
            let Some(&size) = b.get(i) else { return CompatView::Filtered };
            i += 1;
            if size < 2 || i + usize::from(size - 2) > hl {
                return CompatView::Filtered;
            }
            i += usize::from(size - 2);
        } else if t == 0 {
            if i != hl {
                return CompatView::Filtered;
            }
            break;
        }
    }
    let rest = b.len() - hl;
    if rest == 0 {
        return CompatView::NotTcp;
    }
    let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
    let len =
        if total == 0 { rest } else { rest.min((total as u32).wrapping_sub(hl as u32) as usize) };
    let frag = u16::from_be_bytes([h[6], h[7]]);
    if frag & 0x3fff != 0 {
        return CompatView::NotTcp;
    }
    let mut src = [0u8; 16];
    let mut dst = [0u8; 16];
    src[..4].copy_from_slice(&h[12..16]);
    dst[..4].copy_from_slice(&h[16..20]);
    tcp_view(&b[hl..hl + len], src, dst, IpFamily::V4, l3 + hl + len)
}

/// Classifies a frame as pping (the `tcp` filter, then libtins 4.0) would.
#[inline]
pub fn compat_view(link: LinkType, frame: &[u8], meta: &PacketMeta) -> CompatView {
    if !bpf_tcp(link, frame, meta) {
        return CompatView::Filtered;
    }
    let l3 = usize::from(meta.l3_offset);
    if meta.ethertype == ethertype::IPV4 {
        return plain_v4(frame, meta)
            .unwrap_or_else(|| libtins_v4(frame.get(l3..).unwrap_or_default(), l3));
    }
    if meta.status == Status::Malformed(rampart_wire::Malformed::IpVersion) {
        // libtins trusts the EtherType: parse the packet as IPv6 whatever its version nibble.
        let mut copy = frame.to_vec();
        if let Some(b) = copy.get_mut(l3) {
            *b = (*b & 0x0f) | 0x60;
        }
        let meta = PacketMeta::parse(link, &copy);
        return if meta.status == Status::Malformed(rampart_wire::Malformed::IpVersion) {
            CompatView::Filtered
        } else {
            v6_view(&copy, &meta)
        };
    }
    v6_view(frame, meta)
}

/// IPv6: extension headers as the parser walks them; libtins refuses a packet captured shorter
/// than its payload length, and hands TCP exactly the payload.
#[inline]
fn v6_view(frame: &[u8], meta: &PacketMeta) -> CompatView {
    let l3 = usize::from(meta.l3_offset);
    let captured_ip = frame.len().saturating_sub(l3);
    let ip_len = meta.ip_wire_len as usize;
    if matches!(meta.status, Status::Truncated(rampart_wire::Layer::Ipv6))
        || meta.family != Family::V6
    {
        return CompatView::Filtered;
    }
    // A payload length of 0 is no payload to libtins (without a jumbo option).
    if frame.get(l3 + 4..l3 + 6) == Some(&[0, 0]) || captured_ip < ip_len {
        return CompatView::Filtered;
    }
    if meta.is_fragment() {
        return CompatView::NotTcp;
    }
    let l4 = usize::from(meta.l4_offset);
    if meta.proto != rampart_wire::proto::TCP || l4 <= l3 || l3 + ip_len < l4 {
        // The extension headers did not lead to TCP as the parser reads them.
        return CompatView::Filtered;
    }
    plain_tcp(frame, meta, l3 + ip_len).unwrap_or_else(|| {
        tcp_view(&frame[l4..l3 + ip_len], meta.src, meta.dst, IpFamily::V6, l3 + ip_len)
    })
}

/// pping's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompatConfig {
    /// Unmatched TSvals older than this (seconds) are removed (`--tsvalMaxAge`, 10).
    pub tsval_max_age: f64,
    /// Directions idle longer than this (seconds) are removed (`--flowMaxIdle`, 300).
    pub flow_max_idle: f64,
    /// New directions are refused while more than this many exist (pping's `maxFlows`, 10000).
    pub max_flows: i64,
    /// Summary interval in capture seconds; 0 turns summaries off (`--sumInt`, 10; `-q`).
    pub sum_int: f64,
    /// Stop once this many packets were counted since the last summary (`-c`; 0: no limit).
    pub count: u64,
    /// Stop after this many capture seconds (`-s`; 0: no limit).
    pub seconds: f64,
    /// Packets to this IPv4 address are not timestamped (pping's local filter, live only).
    pub local: Option<[u8; 4]>,
}

impl Default for CompatConfig {
    fn default() -> Self {
        Self {
            tsval_max_age: 10.0,
            flow_max_idle: 300.0,
            max_flows: 10_000,
            sum_int: 10.0,
            count: 0,
            seconds: 0.0,
            local: None,
        }
    }
}

/// One RTT sample with the values pping prints.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompatSample {
    /// Capture time in seconds since `off_tm` (an `f64`, as pping computes it).
    pub cap_tm: f64,
    /// Whole seconds of the first usable packet.
    pub off_tm: i64,
    /// The packet's own whole seconds (pping's default format prints these as local time).
    pub secs: i64,
    /// The round-trip time in seconds.
    pub rtt: f64,
    /// The smallest sample so far for this direction, in seconds.
    pub min: f64,
    /// Bytes sent in the timestamped direction when its TSval was recorded.
    pub fbytes: f64,
    /// That direction's "departed" bytes at that time.
    pub dbytes: f64,
    /// Bytes this direction sent since its previous sample.
    pub pbytes: f64,
    /// The connection's key.
    pub key: FlowKey,
    /// The side that sent the packet carrying the echo (the flow printed is `side -> peer`).
    pub side: Side,
}

/// pping's interval counters, printed in its summary line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompatCounters {
    /// Directions alive.
    pub flows: i64,
    /// Packets delivered.
    pub packets: u64,
    /// Delivered TCP packets without the timestamps option.
    pub no_ts: u64,
    /// Packets of directions whose reverse has not been seen.
    pub uni_dir: u64,
    /// Delivered packets without a TCP header.
    pub not_tcp: u64,
}

/// What one packet led to; the details are read from [`PpingCompat`]'s accessors (kept small,
/// since it is returned for every packet).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompatStep {
    /// The packet produced a sample: [`PpingCompat::sample`].
    pub sample: bool,
    /// The packet was the first usable one: [`PpingCompat::first_secs`] ("First packet at").
    pub first: bool,
    /// An interval summary is due: [`PpingCompat::reported`].
    pub summary: bool,
    /// `-c` or `-s` was reached: stop after this packet ([`PpingCompat::reported`],
    /// [`PpingCompat::elapsed`]).
    pub stop: bool,
}

#[derive(Clone, Copy, Debug)]
struct Dir {
    alive: bool,
    rev_flow: bool,
    last_tm: f64,
    min: f64,
    bytes_snt: f64,
    lst_bytes_snt: f64,
    bytes_dep: f64,
}

impl Dir {
    const NEW: Dir = Dir {
        alive: true,
        rev_flow: false,
        last_tm: 0.0,
        min: 1e30,
        bytes_snt: 0.0,
        lst_bytes_snt: 0.0,
        bytes_dep: 0.0,
    };
    const DEAD: Dir = Dir { alive: false, ..Dir::NEW };
}

/// Both directions of one connection, and how many TSval entries point at it.
#[derive(Clone, Copy, Debug)]
struct Conn {
    key: FlowKey,
    hash: u64,
    dirs: [Dir; 2],
    refs: u32,
}

#[derive(Clone, Copy, Debug)]
struct TsEntry {
    key: u64,
    t: f64,
    fbytes: f64,
    dbytes: f64,
}

/// pping's algorithm over its own state; feed it every frame's [`CompatView`] in capture order.
pub struct PpingCompat {
    cfg: CompatConfig,
    conns: Vec<Conn>,
    free: Vec<u32>,
    index: HashTable<u32>,
    hasher: foldhash::fast::FixedState,
    ts: HashTable<TsEntry>,
    flow_cnt: i64,
    off_tm: Option<i64>,
    startm: f64,
    cap_tm: f64,
    next_sum: f64,
    next_clean: f64,
    counters: CompatCounters,
    reported: CompatCounters,
    last: Option<CompatSample>,
}

impl PpingCompat {
    /// An empty state.
    pub fn new(cfg: CompatConfig) -> Self {
        Self {
            cfg,
            conns: Vec::new(),
            free: Vec::new(),
            index: HashTable::new(),
            hasher: foldhash::fast::FixedState::with_seed(0x0070_7069_6e67),
            ts: HashTable::with_capacity(1 << 12),
            flow_cnt: 0,
            off_tm: None,
            startm: 0.0,
            cap_tm: 0.0,
            next_sum: 0.0,
            next_clean: 0.0,
            counters: CompatCounters::default(),
            reported: CompatCounters::default(),
            last: None,
        }
    }

    /// TSval entries held (matched ones included until the clean-up removes them).
    pub fn ts_entries(&self) -> usize {
        self.ts.len()
    }

    /// One delivered frame (anything but [`CompatView::Filtered`], which pping never sees),
    /// captured at `ts`; then pping's stop, summary and clean-up checks. Like pping, only the
    /// whole seconds and microseconds of `ts` count.
    #[inline]
    pub fn packet(&mut self, ts: Timestamp, view: &CompatView) -> CompatStep {
        let mut step = CompatStep::default();
        if *view == CompatView::Filtered {
            return step;
        }
        step.sample = self.process(ts.secs() as i64, ts.subsec_micros(), view, &mut step.first);
        let c = &self.cfg;
        if (c.seconds > 0.0 && self.cap_tm - self.startm >= c.seconds)
            || (c.count > 0 && self.counters.packets >= c.count)
        {
            step.stop = true;
            self.reported = self.counters();
            return step;
        }
        if self.cap_tm >= self.next_sum && c.sum_int != 0.0 {
            if self.next_sum > 0.0 {
                step.summary = true;
                self.reported = self.counters();
                self.counters = CompatCounters::default();
            }
            self.next_sum = self.cap_tm + c.sum_int;
        }
        if self.cap_tm >= self.next_clean {
            self.clean_up(self.cap_tm);
            self.next_clean = self.cap_tm + self.cfg.tsval_max_age;
        }
        step
    }

    /// The sample of the last packet whose step said so.
    pub fn sample(&self) -> Option<&CompatSample> {
        self.last.as_ref()
    }

    /// Whole seconds of the first usable packet.
    pub fn first_secs(&self) -> Option<i64> {
        self.off_tm
    }

    /// The counters of the last summary or stop.
    pub fn reported(&self) -> CompatCounters {
        self.reported
    }

    /// Capture seconds since the first usable packet (pping's "Captured N packets in T").
    pub fn elapsed(&self) -> f64 {
        self.cap_tm - self.startm
    }

    /// The counters as pping's summary line shows them.
    pub fn counters(&self) -> CompatCounters {
        CompatCounters { flows: self.flow_cnt, ..self.counters }
    }

    /// pping's `process_packet`; true when it printed a sample (kept in `self.last`).
    #[inline]
    fn process(&mut self, secs: i64, micros: u32, view: &CompatView, first: &mut bool) -> bool {
        self.counters.packets += 1;
        let p = match view {
            CompatView::Usable(p) => p,
            CompatView::NotTcp => {
                self.counters.not_tcp += 1;
                return false;
            }
            CompatView::NoTs => {
                self.counters.no_ts += 1;
                return false;
            }
            CompatView::Skip | CompatView::Filtered => return false,
        };
        let off_tm = match self.off_tm {
            None => {
                self.off_tm = Some(secs);
                self.startm = f64::from(micros) * 1e-6;
                self.cap_tm = self.startm;
                *first = self.cfg.sum_int != 0.0;
                secs
            }
            Some(off) => {
                self.cap_tm = (secs - off) as f64 + f64::from(micros) * 1e-6;
                off
            }
        };
        let cap_tm = self.cap_tm;
        let dir = p.side as usize;
        // A connection between one address and port and itself is its own reverse.
        let symmetric =
            p.key.addr_a_bytes() == p.key.addr_b_bytes() && p.key.port_a() == p.key.port_b();
        let other = if symmetric { dir } else { dir ^ 1 };
        let hash = self.hasher.hash_one(p.key);
        let conns = &self.conns;
        let found = self.index.find(hash, |&c| conns[c as usize].key == p.key).copied();
        let ci = match found {
            Some(c) if self.conns[c as usize].dirs[dir].alive => c,
            _ => {
                if self.flow_cnt > self.cfg.max_flows {
                    return false;
                }
                let c = match found {
                    Some(c) => c,
                    None => self.new_conn(p.key, hash),
                };
                self.flow_cnt += 1;
                let conn = &mut self.conns[c as usize];
                conn.dirs[dir] = Dir::NEW;
                if conn.dirs[other].alive {
                    conn.dirs[other].rev_flow = true;
                    conn.dirs[dir].rev_flow = true;
                }
                c
            }
        };
        let d = &mut self.conns[ci as usize].dirs[dir];
        d.last_tm = cap_tm;
        if !d.rev_flow {
            self.counters.uni_dir += 1;
            return false;
        }
        let arr_fwd = d.bytes_snt + f64::from(p.pdu_size);
        d.bytes_snt = arr_fwd;
        let bytes_dep = d.bytes_dep;
        let local_dst = self.cfg.local.is_some_and(|l| {
            let dst = if p.side == Side::A { p.key.addr_b_bytes() } else { p.key.addr_a_bytes() };
            p.key.family() == IpFamily::V4 && dst[..4] == l
        });
        if !local_dst {
            let k = ts_key(ci, dir, p.tsval);
            let h = ts_hash(k);
            if let hashbrown::hash_table::Entry::Vacant(v) =
                self.ts.entry(h, |e| e.key == k, |e| ts_hash(e.key))
            {
                v.insert(TsEntry { key: k, t: cap_tm, fbytes: arr_fwd, dbytes: bytes_dep });
                self.conns[ci as usize].refs += 1;
            }
        }
        let k = ts_key(ci, other, p.tsecr);
        let Some(e) = self.ts.find_mut(ts_hash(k), |e| e.key == k) else { return false };
        if e.t <= 0.0 {
            return false;
        }
        let t = e.t;
        e.t = -t;
        let (fbytes, dbytes) = (e.fbytes, e.dbytes);
        let rtt = cap_tm - t;
        let conn = &mut self.conns[ci as usize];
        let d = &mut conn.dirs[dir];
        if d.min > rtt {
            d.min = rtt;
        }
        let min = d.min;
        let pbytes = arr_fwd - d.lst_bytes_snt;
        d.lst_bytes_snt = arr_fwd;
        // pping sets this on the reverse record, which exists unless it was removed while the
        // TSval outlived it (only possible with tsvalMaxAge > flowMaxIdle; pping aborts then).
        if conn.dirs[other].alive {
            conn.dirs[other].bytes_dep = fbytes;
        }
        self.last = Some(CompatSample {
            cap_tm,
            off_tm,
            secs,
            rtt,
            min,
            fbytes,
            dbytes,
            pbytes,
            key: p.key,
            side: p.side,
        });
        true
    }

    fn new_conn(&mut self, key: FlowKey, hash: u64) -> u32 {
        let conn = Conn { key, hash, dirs: [Dir::DEAD; 2], refs: 0 };
        let c = match self.free.pop() {
            Some(c) => {
                self.conns[c as usize] = conn;
                c
            }
            None => {
                self.conns.push(conn);
                (self.conns.len() - 1) as u32
            }
        };
        let conns = &self.conns;
        self.index.insert_unique(hash, c, |&i| conns[i as usize].hash);
        c
    }

    /// pping's `cleanUp(n)`: TSvals older than the maximum age, then idle directions. A
    /// connection is forgotten once both directions are gone and no TSval refers to it.
    fn clean_up(&mut self, n: f64) {
        let max_age = self.cfg.tsval_max_age;
        let conns = &mut self.conns;
        self.ts.retain(|e| {
            // pping removes when `n - |t| > max_age`; NaN never occurs (times are finite).
            let keep = (n - e.t.abs()).partial_cmp(&max_age) != Some(std::cmp::Ordering::Greater);
            if !keep {
                conns[(e.key >> 33) as usize].refs -= 1;
            }
            keep
        });
        let idle = self.cfg.flow_max_idle;
        for c in 0..self.conns.len() {
            let conn = &mut self.conns[c];
            let mut any = false;
            for d in &mut conn.dirs {
                if d.alive && n - d.last_tm > idle {
                    d.alive = false;
                    self.flow_cnt -= 1;
                }
                any |= d.alive;
            }
            let was_used = self.index.find(conn.hash, |&i| i as usize == c).is_some();
            if was_used && !any && conn.refs == 0 {
                if let Ok(e) = self.index.find_entry(conn.hash, |&i| i as usize == c) {
                    e.remove();
                }
                self.free.push(c as u32);
            }
        }
    }
}

#[cfg(test)]
mod tests;
