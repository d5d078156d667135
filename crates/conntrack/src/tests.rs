//! Unit tests: every transition table cell, every invalid cause with a packet made for it,
//! window checks against hand-computed sequence numbers, UDP/ICMP pseudo-state, RELATED.

use super::*;
use crate::tcp::{Cell, INDEX_NAMES, TABLE};
use rampart_wire::check::{finish, pseudo_header, sum};
use rampart_wire::tcp::flags::{ACK, FIN, PSH, RST, SYN, URG};
use rampart_wire::{LinkType, PacketMeta};

const S: u64 = 1_000_000_000;
const CLIENT: [u8; 4] = [10, 0, 0, 1];
const SERVER: [u8; 4] = [10, 0, 0, 2];

/// A TCP segment to build.
#[derive(Clone, Debug)]
struct Seg {
    flags: u16,
    seq: u32,
    ack: u32,
    win: u16,
    len: usize,
    wscale: Option<u8>,
    sack_perm: bool,
    sack: Vec<(u32, u32)>,
}

fn seg(flags: u16, seq: u32, ack: u32) -> Seg {
    Seg { flags, seq, ack, win: 64000, len: 0, wscale: None, sack_perm: false, sack: vec![] }
}

fn addr16(a: [u8; 4]) -> [u8; 16] {
    let mut x = [0; 16];
    x[..4].copy_from_slice(&a);
    x
}

/// An Ethernet + IPv4 frame carrying `l4` of protocol `proto`, all checksums right;
/// `fix` is the offset of the transport checksum in `l4` (None: leave it).
fn ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, mut l4: Vec<u8>, fix: Option<usize>) -> Vec<u8> {
    if let Some(at) = fix {
        l4[at..at + 2].copy_from_slice(&[0, 0]);
        let acc = if proto == 1 {
            sum(&l4, 0)
        } else {
            sum(&l4, pseudo_header(Family::V4, &addr16(src), &addr16(dst), proto, l4.len() as u32))
        };
        let c = finish(acc);
        l4[at..at + 2].copy_from_slice(&c.to_be_bytes());
    }
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let total = (20 + l4.len()) as u16;
    let mut ip = vec![0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, proto, 0, 0];
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let c = finish(sum(&ip, 0));
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&l4);
    f
}

fn tcp_bytes(s: &Seg, sport: u16, dport: u16) -> Vec<u8> {
    let mut opts = Vec::new();
    if let Some(w) = s.wscale {
        opts.extend_from_slice(&[1, 3, 3, w]);
    }
    if s.sack_perm {
        opts.extend_from_slice(&[1, 1, 4, 2]);
    }
    if !s.sack.is_empty() {
        opts.extend_from_slice(&[1, 1, 5, (2 + 8 * s.sack.len()) as u8]);
        for (l, r) in &s.sack {
            opts.extend_from_slice(&l.to_be_bytes());
            opts.extend_from_slice(&r.to_be_bytes());
        }
    }
    let hl = 20 + opts.len();
    let mut t = Vec::new();
    t.extend_from_slice(&sport.to_be_bytes());
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&s.seq.to_be_bytes());
    t.extend_from_slice(&s.ack.to_be_bytes());
    t.extend_from_slice(&[((hl / 4) as u8) << 4, s.flags as u8]);
    t.extend_from_slice(&s.win.to_be_bytes());
    t.extend_from_slice(&[0, 0, 0, 0]);
    t.extend_from_slice(&opts);
    t.resize(hl + s.len, 0x61);
    t
}

fn parse(f: &[u8]) -> (CtPacket, Side) {
    let m = PacketMeta::parse(LinkType::Ethernet, f);
    let (_, side) = FlowKey::from_meta(&m).unwrap();
    (CtPacket::from_meta(&m, f, true), side)
}

/// A TCP packet from the client (`orig`) or the server.
fn tcp_pkt(orig: bool, s: &Seg) -> (CtPacket, Side) {
    let f = if orig {
        ipv4(CLIENT, SERVER, 6, tcp_bytes(s, 40000, 80), Some(16))
    } else {
        ipv4(SERVER, CLIENT, 6, tcp_bytes(s, 80, 40000), Some(16))
    };
    parse(&f)
}

fn udp_pkt(orig: bool, payload: usize) -> (CtPacket, Side) {
    let (src, dst, sp, dp) =
        if orig { (CLIENT, SERVER, 5000, 53) } else { (SERVER, CLIENT, 53, 5000) };
    let mut u = Vec::new();
    u.extend_from_slice(&u16::to_be_bytes(sp));
    u.extend_from_slice(&u16::to_be_bytes(dp));
    u.extend_from_slice(&((8 + payload) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.resize(8 + payload, 7);
    parse(&ipv4(src, dst, 17, u, Some(6)))
}

fn icmp_pkt(src: [u8; 4], dst: [u8; 4], ty: u8, code: u8, rest: &[u8]) -> (CtPacket, Side) {
    let mut i = vec![ty, code, 0, 0];
    i.extend_from_slice(rest);
    parse(&ipv4(src, dst, 1, i, Some(2)))
}

/// One connection: the tracker and the flow's id (one flow only), every packet accepted.
struct Conn {
    ct: Conntrack,
    now: Timestamp,
    exists: bool,
}

const ID: FlowId = FlowId(3);

impl Conn {
    fn new(cfg: Config) -> Self {
        Self { ct: Conntrack::new(cfg), now: Timestamp::from_nanos(1_000 * S), exists: false }
    }

    fn send(&mut self, p: (CtPacket, Side)) -> (Inspection, Outcome) {
        self.now += Span::from_millis(1);
        let found = (self.exists || self.ct.entry(ID).is_some()).then_some(ID);
        let insp = self.ct.inspect(found, p.1, &p.0, self.now, |_, _| None);
        let out = self.ct.commit(&insp, true, Some(ID));
        self.exists = self.ct.entry(ID).is_some();
        // The live count follows every store and clear.
        assert_eq!(self.ct.entries(), u64::from(self.exists), "entries()");
        (insp, out)
    }

    fn tcp(&mut self, orig: bool, s: Seg) -> (Inspection, Outcome) {
        self.send(tcp_pkt(orig, &s))
    }

    fn state(&self) -> Option<TcpState> {
        self.ct.entry(ID).and_then(Entry::tcp_state)
    }
}

/// The notes' copy of Linux's table, as text: the test compares the crate's table with it.
const NOTES_TABLE: &str = "
orig SYN     SS SS IG IG IG IG IG SS SS S2
orig SYN/ACK IV IV SR IV IV IV IV IV IV SR
orig FIN     IV IV FW FW LA LA LA TW CL IV
orig ACK     ES IV ES ES CW CW TW TW CL IV
orig RST     IV CL CL CL CL CL CL CL CL CL
reply SYN     IV S2 IV IV IV IV IV SS IV S2
reply SYN/ACK IV SR IG IG IG IG IG IG IG SR
reply FIN     IV IV FW FW LA LA LA TW CL IV
reply ACK     IV IG SR ES CW CW TW TW CL IG
reply RST     IV CL CL CL CL CL CL CL CL CL
both none     IV IV IV IV IV IV IV IV IV IV";

fn cell_name(c: Cell) -> &'static str {
    match c {
        Cell::Ignore => "IG",
        Cell::Invalid => "IV",
        Cell::To(s) => ["NO", "SS", "SR", "ES", "FW", "CW", "LA", "TW", "CL", "S2"][s as usize],
    }
}

#[test]
fn table_is_the_notes_table() {
    let mut n = 0;
    for line in NOTES_TABLE.lines().filter(|l| !l.trim().is_empty()) {
        let w: Vec<&str> = line.split_whitespace().collect();
        let idx = INDEX_NAMES.iter().position(|&i| i == w[1]).unwrap();
        let dirs: &[usize] = match w[0] {
            "orig" => &[0],
            "reply" => &[1],
            _ => &[0, 1],
        };
        for &d in dirs {
            for (state, want) in w[2..].iter().enumerate() {
                assert_eq!(cell_name(TABLE[d][idx][state]), *want, "{line} column {state}");
                n += 1;
            }
        }
    }
    assert_eq!(n, 120, "2 directions x 6 indices x 10 states");
}

/// Drives a connection to `s` with sensible sequence numbers (client ISN 1000, server 5000);
/// returns the connection and the next sequence number each side would send.
fn reach(s: TcpState, cfg: Config) -> (Conn, u32, u32) {
    let mut c = Conn::new(cfg);
    let (mut cs, mut ss) = (1000u32, 5000u32);
    if s == TcpState::None {
        return (c, cs, ss);
    }
    c.tcp(true, seg(SYN, cs, 0));
    cs += 1;
    match s {
        TcpState::SynSent => return (c, cs, ss),
        TcpState::SynSent2 => {
            c.tcp(false, seg(SYN, ss, 0));
            return (c, cs, ss + 1);
        }
        _ => {}
    }
    c.tcp(false, seg(SYN | ACK, ss, cs));
    ss += 1;
    if s == TcpState::SynRecv {
        return (c, cs, ss);
    }
    c.tcp(true, seg(ACK, cs, ss));
    let steps: &[(bool, u16)] = match s {
        TcpState::Established => &[],
        TcpState::FinWait => &[(true, FIN | ACK)],
        TcpState::CloseWait => &[(true, FIN | ACK), (false, ACK)],
        TcpState::LastAck => &[(true, FIN | ACK), (false, ACK), (false, FIN | ACK)],
        TcpState::TimeWait => &[(true, FIN | ACK), (false, ACK), (false, FIN | ACK), (true, ACK)],
        TcpState::Close => &[(true, RST)],
        _ => unreachable!(),
    };
    for &(orig, flags) in steps {
        let (seq, ack) = if orig { (cs, ss) } else { (ss, cs) };
        c.tcp(orig, seg(flags, seq, ack));
        if flags & FIN != 0 {
            if orig { cs += 1 } else { ss += 1 }
        }
    }
    assert_eq!(c.state(), Some(s), "reached");
    (c, cs, ss)
}

const INDEX_FLAGS: [u16; 5] = [SYN, SYN | ACK, FIN | ACK, ACK, RST];

/// Every reachable cell of the table, driven through the whole tracker (with window checks
/// liberal, so that the cell decides): the state after the packet is the cell's, IGNORE keeps
/// the state and attaches the entry, INVALID attaches none. Where Linux's code around the
/// table overrides a cell, the override is asserted instead, with why.
#[test]
fn every_transition_through_the_tracker() {
    let cfg = Config { tcp_be_liberal: true, ..Config::default() };
    let mut cells = 0;
    for state in TcpState::ALL {
        for d in 0..2 {
            if state == TcpState::None && d == 1 {
                continue; // a packet without an entry always opens it ORIGINAL
            }
            for (idx, &flags) in INDEX_FLAGS.iter().enumerate() {
                let (mut c, cs, ss) = reach(state, cfg);
                let orig = d == 0;
                let (seq, ack) = if orig { (cs, ss) } else { (ss, cs) };
                let ack = if flags & ACK != 0 { ack } else { 0 };
                let (insp, out) = c.tcp(orig, seg(flags, seq, ack));
                let ended = out.ended.map(|(_, s)| s.tcp_state.unwrap());
                let after = c.state().or(ended);
                let what = format!("{state:?} {} {}", ["orig", "reply"][d], INDEX_NAMES[idx]);
                let cell = TABLE[d][idx][state as usize];
                match cell {
                    Cell::Invalid => {
                        assert_eq!(insp.state, CtState::Invalid, "{what}");
                        let want = if state == TcpState::None {
                            Reason::TcpInvalidNew
                        } else {
                            Reason::TcpTransition
                        };
                        assert_eq!(insp.reason, Some(want), "{what}");
                        assert_eq!(c.state(), (state != TcpState::None).then_some(state), "{what}");
                    }
                    Cell::Ignore => {
                        assert_ne!(insp.state, CtState::Invalid, "{what}");
                        assert_eq!(after, Some(state), "{what}: ignored, state kept");
                    }
                    Cell::To(to) => {
                        assert_ne!(insp.state, CtState::Invalid, "{what}");
                        let want = match (state, d, idx) {
                            // A SYN in TIME_WAIT or CLOSE after a close (or this side's RST)
                            // reopens: the old entry ends and a new one starts in SYN_SENT.
                            (TcpState::TimeWait | TcpState::Close, _, 0) => {
                                assert!(out.ended.is_some(), "{what}: old entry ends");
                                TcpState::SynSent
                            }
                            _ => to,
                        };
                        assert_eq!(after, Some(want), "{what}");
                    }
                }
                cells += 1;
            }
        }
    }
    assert_eq!(cells, 95, "10 states x 2 directions x 5 indices, less NONE's reply row");
    // The `none` index (no SYN, FIN, RST or ACK) never reaches the table: such a packet fails
    // the flag whitelist first.
    let (mut c, cs, ss) = reach(TcpState::Established, cfg);
    let (insp, _) = c.tcp(true, seg(0, cs, ss));
    assert_eq!(insp.reason, Some(Reason::TcpFlags));
    let (insp, _) = c.tcp(true, seg(URG, cs, ss));
    assert_eq!(insp.reason, Some(Reason::TcpFlags));
}

#[test]
fn ct_states_follow_ctinfo() {
    let mut c = Conn::new(Config::default());
    assert_eq!(c.tcp(true, seg(SYN, 1000, 0)).0.state, CtState::New);
    assert_eq!(c.tcp(true, seg(SYN, 1000, 0)).0.state, CtState::New, "retransmitted SYN");
    assert_eq!(c.tcp(false, seg(SYN | ACK, 5000, 1001)).0.state, CtState::Established);
    let (i, _) = c.tcp(true, seg(ACK, 1001, 5001));
    assert_eq!((i.state, i.dir), (CtState::Established, Dir::Original));
    let s = c.ct.summary(ID).unwrap();
    assert!(s.assured && s.seen_reply);
    assert_eq!((s.ct_state, s.tcp_state), (CtState::Established, Some(TcpState::Established)));
}

#[test]
fn flag_whitelist() {
    let ok =
        [SYN, SYN | URG, SYN | ACK, RST, RST | ACK, FIN | ACK, FIN | ACK | URG, ACK, ACK | URG];
    for f in 0..0x40u16 {
        assert_eq!(tcp::valid_flags(f), ok.contains(&(f & !PSH)), "{f:#x}");
        // PSH, ECE and CWR never matter.
        assert_eq!(tcp::valid_flags(f | PSH | 0xc0), ok.contains(&(f & !PSH)), "{f:#x}");
    }
}

#[test]
fn each_invalid_cause() {
    let cfg = Config::default();
    let first = |p: (CtPacket, Side), cfg: Config| {
        let mut c = Conn::new(cfg);
        c.send(p).0.reason
    };
    // TCP: a datagram too short for the TCP header (the IP length says 12 bytes).
    let mut f = ipv4(CLIENT, SERVER, 6, tcp_bytes(&seg(SYN, 1, 0), 1, 2)[..12].to_vec(), None);
    f.truncate(14 + 32);
    assert_eq!(first(parse(&f), cfg), Some(Reason::TcpShort));
    // TCP: data offset 4 words.
    let mut t = tcp_bytes(&seg(SYN, 1, 0), 1, 2);
    t[12] = 4 << 4;
    assert_eq!(
        first(parse(&ipv4(CLIENT, SERVER, 6, t, Some(16))), cfg),
        Some(Reason::TcpTruncated)
    );
    // TCP: bad checksum; with checksums off, the same packet opens an entry.
    let mut f = ipv4(CLIENT, SERVER, 6, tcp_bytes(&seg(SYN, 1, 0), 1, 2), Some(16));
    let last = f.len() - 1;
    f[last] ^= 1;
    assert_eq!(first(parse(&f), cfg), Some(Reason::BadChecksum));
    assert_eq!(first(parse(&f), Config { checksum: false, ..cfg }), None);
    // A bad IPv4 header checksum.
    let mut f = ipv4(CLIENT, SERVER, 6, tcp_bytes(&seg(SYN, 1, 0), 1, 2), Some(16));
    f[22] ^= 1;
    assert_eq!(first(parse(&f), cfg), Some(Reason::IpChecksum));
    // TCP flags: SYN+FIN, none, a bare FIN.
    for fl in [SYN | FIN, 0, FIN, SYN | RST] {
        assert_eq!(first(tcp_pkt(true, &seg(fl, 1, 0)), cfg), Some(Reason::TcpFlags), "{fl:#x}");
    }
    // TCP: first packets that cannot open an entry.
    for fl in [SYN | ACK, FIN | ACK, RST, RST | ACK] {
        assert_eq!(
            first(tcp_pkt(true, &seg(fl, 1, 1)), cfg),
            Some(Reason::TcpInvalidNew),
            "{fl:#x}"
        );
    }
    // TCP: a bare ACK is picked up, unless tcp_loose is off.
    assert_eq!(first(tcp_pkt(true, &seg(ACK, 1, 1)), cfg), None);
    let strict = Config { tcp_loose: false, ..cfg };
    assert_eq!(first(tcp_pkt(true, &seg(ACK, 1, 1)), strict), Some(Reason::TcpNotLoose));
    // TCP: a transition to invalid (an ACK from the client in SYN_SENT).
    let (mut c, cs, _) = reach(TcpState::SynSent, cfg);
    let (i, _) = c.tcp(true, seg(ACK, cs, 77));
    assert_eq!(i.reason, Some(Reason::TcpTransition));
    assert_eq!(i.message().unwrap(), "packet (index 3) in dir 0 invalid, state SYN_SENT");
    // TCP: an RST below what the peer acknowledged; accepted with tcp_ignore_invalid_rst.
    for ignore in [false, true] {
        let (mut c, cs, ss) =
            reach(TcpState::Established, Config { tcp_ignore_invalid_rst: ignore, ..cfg });
        let (i, _) = c.tcp(true, seg(RST, cs - 10, ss));
        assert_eq!(i.reason, (!ignore).then_some(Reason::InvalidRst));
    }
    // UDP: short, length beyond the datagram, bad checksum.
    let (p, side) = udp_pkt(true, 4);
    let mut short = p;
    short.udp_header = false;
    assert_eq!(first((short, side), cfg), Some(Reason::ShortPacket));
    let mut long = p;
    long.udp_len = 40;
    assert_eq!(first((long, side), cfg), Some(Reason::UdpMalformed));
    let mut bad = p;
    bad.l4_checksum = Checksum::Bad;
    assert_eq!(first((bad, side), cfg), Some(Reason::BadChecksum));
    // ICMP: bad checksum, unknown type, a reply with no request.
    let (p, side) = icmp_pkt(CLIENT, SERVER, 8, 0, &[0, 1, 0, 1]);
    let mut bad = p;
    bad.l4_checksum = Checksum::Bad;
    assert_eq!(first((bad, side), cfg), Some(Reason::IcmpChecksum));
    assert_eq!(first(icmp_pkt(CLIENT, SERVER, 40, 0, &[0; 4]), cfg), Some(Reason::IcmpType));
    assert_eq!(first(icmp_pkt(CLIENT, SERVER, 0, 0, &[0, 1, 0, 1]), cfg), Some(Reason::IcmpNotNew));
    assert_eq!(first(icmp_pkt(CLIENT, SERVER, 9, 0, &[0; 4]), cfg), Some(Reason::IcmpNotNew));
    // ICMP: an error quoting nothing tracked.
    let quote = quoted_udp();
    assert_eq!(first(icmp_pkt(SERVER, CLIENT, 3, 3, &quote), cfg), Some(Reason::IcmpOrphan));
    // Counters: invalid for the TCP/UDP/ICMP-query causes, error for the ICMP error path.
    let mut c = Conn::new(cfg);
    c.send(icmp_pkt(SERVER, CLIENT, 3, 3, &quote));
    c.send(tcp_pkt(true, &seg(SYN | FIN, 1, 0)));
    let st = c.ct.stats();
    assert_eq!((st.invalid, st.error), (1, 1));
    assert_eq!(st.by_reason[Reason::IcmpOrphan as usize], 1);
}

/// The body of a port unreachable quoting UDP 10.0.0.1:5000 -> 10.0.0.2:53.
fn quoted_udp() -> Vec<u8> {
    let mut q = vec![0, 0, 0, 0, 0x45, 0, 0, 28, 0, 1, 0, 0, 64, 17, 0, 0];
    q.extend_from_slice(&CLIENT);
    q.extend_from_slice(&SERVER);
    q.extend_from_slice(&[0x13, 0x88, 0, 53, 0, 8, 0, 0]);
    q
}

/// The handshake of the window tests, computed by hand. Client ISN 1000, window 64240,
/// scale 7; server ISN 5000, window 65160, scale 7; both SACK-permitted.
///
/// After the SYN: end[0] = 1001, maxend[0] = 1001, maxwin[0] = 64240.
/// The SYN/ACK (seq 5000, ack 1001): end[1] = maxend[1] = 5001, maxwin[1] = 65160, and the
/// client's maxend[0] = ack + win = 1001 + 65160 = 66161.
/// The ACK (seq 1001, ack 5001, window 502, scaled by 7 to 64256): maxwin[0] = 64256 and
/// maxend[1] = 5001 + 64256 = 69257.
fn handshake(cfg: Config, scale: bool, sack: bool) -> Conn {
    let mut c = Conn::new(cfg);
    let ws = scale.then_some(7);
    c.tcp(true, Seg { win: 64240, wscale: ws, sack_perm: sack, ..seg(SYN, 1000, 0) });
    c.tcp(false, Seg { win: 65160, wscale: ws, sack_perm: sack, ..seg(SYN | ACK, 5000, 1001) });
    let (i, _) = c.tcp(true, Seg { win: 502, ..seg(ACK, 1001, 5001) });
    assert_eq!(i.state, CtState::Established);
    let e = c.ct.entry(ID).unwrap();
    if scale {
        assert_eq!((e.end, e.maxend, e.maxwin), ([1001, 5001], [66161, 69257], [64256, 65160]));
    }
    c
}

#[test]
fn window_check_one_seq_upper_bound() {
    let cfg = Config::default();
    // Data starting at maxend[0] = 66161 is in window.
    let mut c = handshake(cfg, true, true);
    let (i, _) = c.tcp(true, seg(ACK | PSH, 66161, 5001));
    assert_eq!(i.reason, None);
    // One past it, with nothing that overshoots the receiver's window by more than its size:
    // Linux lets it through as ignored (the lenient case), not invalid.
    let mut c = handshake(cfg, true, true);
    let ignored = c.ct.stats().ignored;
    let (i, _) = c.tcp(true, seg(ACK, 66162, 5001));
    assert_eq!((i.state, c.ct.stats().ignored), (CtState::Established, ignored + 1));
    // Far past it: "SEQ is over upper bound 66162".
    let mut c = handshake(cfg, true, true);
    let (i, _) = c.tcp(true, seg(ACK, 66161 + 70000, 5001));
    assert_eq!(i.reason, Some(Reason::SeqOver));
    assert_eq!(
        i.message().unwrap(),
        "SEQ is over upper bound 66162 (over the window of the receiver)"
    );
    // The server's bound comes from the client's scaled window: 5001 + (502 << 7) = 69257.
    let mut c = handshake(cfg, true, true);
    assert_eq!(c.tcp(false, seg(ACK, 69257, 1001)).0.reason, None);
    let (i, _) = c.tcp(false, seg(ACK, 69258 + 70000, 1001));
    assert_eq!(
        i.message().unwrap(),
        "SEQ is over upper bound 69258 (over the window of the receiver)"
    );
    // Without scaling the same window is 502 bytes: the bound is 5001 + 502 + 1 = 5504.
    let mut c = handshake(cfg, false, true);
    let (i, _) = c.tcp(false, seg(ACK, 5504 + 70000, 1001));
    assert_eq!(
        i.message().unwrap(),
        "SEQ is over upper bound 5504 (over the window of the receiver)"
    );
}

#[test]
fn window_check_three_ack_upper_bound_and_sack() {
    let cfg = Config::default();
    // Acknowledging one byte the server never sent: "ACK is over upper bound 5002".
    let mut c = handshake(cfg, true, true);
    let (i, _) = c.tcp(true, seg(ACK, 1001, 5002));
    assert_eq!(i.message().unwrap(), "ACK is over upper bound 5002 (ACKed data not seen yet)");
    // A SACK block past what the server sent counts the same when SACK was agreed...
    let mut c = handshake(cfg, true, true);
    let (i, _) = c.tcp(true, Seg { sack: vec![(5001, 6000)], ..seg(ACK, 1001, 5001) });
    assert_eq!(i.message().unwrap(), "ACK is over upper bound 5002 (ACKed data not seen yet)");
    // ...and is not looked at when it was not.
    let mut c = handshake(cfg, true, false);
    let (i, _) = c.tcp(true, Seg { sack: vec![(5001, 6000)], ..seg(ACK, 1001, 5001) });
    assert_eq!(i.reason, None);
    // Server data of 100 bytes makes 5101 acknowledgeable, selectively too.
    let mut c = handshake(cfg, true, true);
    c.tcp(false, Seg { len: 100, ..seg(ACK | PSH, 5001, 1001) });
    let (i, _) = c.tcp(true, Seg { sack: vec![(5051, 5101)], ..seg(ACK, 1001, 5001) });
    assert_eq!(i.reason, None);
}

#[test]
fn window_checks_two_and_four_are_ignored() {
    let cfg = Config::default();
    // II: a segment ending more than the receiver's max window (65160) before end[0] = 1101.
    // (The client keeps advertising 502 << 7 = 64256, so its max window stays below 66000.)
    let mut c = handshake(cfg, true, true);
    c.tcp(true, Seg { len: 100, win: 502, ..seg(ACK | PSH, 1001, 5001) });
    let old = 1101u32.wrapping_sub(65160 + 10);
    let (i, _) = c.tcp(true, Seg { len: 5, win: 502, ..seg(ACK | PSH, old, 5001) });
    assert_eq!((i.state, i.reason), (CtState::Established, None));
    assert_eq!(c.ct.stats().ignored, 1, "{:?}", c.ct.entry(ID));
    // IV: an ACK more than MAXACKWINDOW (66000) behind end[1] = 5001.
    let (i, _) = c.tcp(true, Seg { win: 502, ..seg(ACK, 1101, 5001u32.wrapping_sub(66001)) });
    assert_eq!((i.state, i.reason), (CtState::Established, None));
    assert_eq!(c.ct.stats().ignored, 2);
    // Neither moved the state or the bookkeeping.
    assert_eq!(c.ct.entry(ID).unwrap().end, [1101, 5001]);
}

#[test]
fn be_liberal_and_picked_up_flows_skip_window_failures() {
    let liberal = Config { tcp_be_liberal: true, ..Config::default() };
    let mut c = handshake(liberal, true, true);
    assert_eq!(c.tcp(true, seg(ACK, 66161 + 70000, 5001)).0.reason, None);
    assert_eq!(c.tcp(true, seg(ACK, 1001, 9999)).0.reason, None);
    // RST checks remain.
    assert_eq!(c.tcp(true, seg(RST, 500, 0)).0.reason, Some(Reason::InvalidRst));
    // A connection picked up mid-stream is liberal both ways.
    let mut c = Conn::new(Config::default());
    let (i, _) = c.tcp(true, seg(ACK, 7_000_000, 9_000_000));
    assert_eq!((i.state, c.state()), (CtState::New, Some(TcpState::Established)));
    let (i, _) = c.tcp(false, seg(ACK, 123, 4_000_000_000));
    assert_eq!((i.state, i.reason), (CtState::Established, None));
    // ASSURED comes with the next packet once the reply is seen (the reply marks the entry
    // replied only after it was handled).
    assert!(!c.ct.summary(ID).unwrap().assured);
    c.tcp(true, seg(ACK, 7_000_000, 124));
    assert!(c.ct.summary(ID).unwrap().assured, "a valid answer to a picked-up flow assures it");
}

#[test]
fn rst_rules() {
    let cfg = Config::default();
    // Exactly at the peer's last ACK: CLOSE.
    let (mut c, cs, ss) = reach(TcpState::Established, cfg);
    c.tcp(true, seg(RST, cs, ss));
    assert_eq!(c.state(), Some(TcpState::Close));
    // In window but not exact: ESTABLISHED kept (a challenge ACK may follow).
    let (mut c, cs, ss) = reach(TcpState::Established, cfg);
    let (i, _) = c.tcp(true, seg(RST, cs + 100, ss));
    assert_eq!((i.state, c.state()), (CtState::Established, Some(TcpState::Established)));
    // At the end of a train of data this side sent: CLOSE.
    let (mut c, cs, ss) = reach(TcpState::Established, cfg);
    c.tcp(true, Seg { len: 10, ..seg(ACK | PSH, cs, ss) });
    c.tcp(true, seg(RST, cs + 10, ss));
    assert_eq!(c.state(), Some(TcpState::Close));
    // An RST as the first answer deletes the entry (the loose-pickup probe of the oracle).
    let mut c = Conn::new(cfg);
    c.tcp(true, seg(ACK, 100, 200));
    let (i, out) = c.tcp(false, seg(RST, 200, 0));
    assert_eq!(i.state, CtState::Established, "the RST itself still belongs to the entry");
    let (_, s) = out.ended.unwrap();
    assert_eq!((s.tcp_state, s.seen_reply, s.assured), (Some(TcpState::Close), false, false));
    assert!(c.ct.entry(ID).is_none());
}

#[test]
fn reopening_and_resyncing() {
    let cfg = Config::default();
    // A SYN in TIME_WAIT opens a new connection in the same flow.
    let (mut c, _, _) = reach(TcpState::TimeWait, cfg);
    let (i, out) = c.tcp(true, seg(SYN, 90_000, 0));
    assert_eq!((i.state, c.state()), (CtState::New, Some(TcpState::SynSent)));
    assert!(out.ended.is_some_and(|(_, s)| s.tcp_state == Some(TcpState::TimeWait)));
    assert!(!c.ct.summary(ID).unwrap().seen_reply, "the new entry starts unreplied");
    // A SYN in ESTABLISHED is ignored; the SYN/ACK acknowledging it re-syncs to SYN_RECV.
    let (mut c, _, _) = reach(TcpState::Established, cfg);
    let (i, _) = c.tcp(true, seg(SYN, 70_000, 0));
    assert_eq!((i.state, c.state()), (CtState::Established, Some(TcpState::Established)));
    c.tcp(false, seg(SYN | ACK, 80_000, 70_001));
    assert_eq!(c.state(), Some(TcpState::SynRecv));
    c.tcp(true, seg(ACK, 70_001, 80_001));
    assert_eq!(c.state(), Some(TcpState::Established));
    // Simultaneous open: SYN both ways, SYN/ACKs, then the reply's ACK establishes.
    let (mut c, cs, ss) = reach(TcpState::SynSent2, cfg);
    c.tcp(true, seg(SYN | ACK, cs - 1, ss));
    assert_eq!(c.state(), Some(TcpState::SynRecv));
    c.tcp(false, seg(ACK, ss, cs));
    assert_eq!(c.state(), Some(TcpState::Established));
}

#[test]
fn tcp_timeouts() {
    let cfg = Config::default();
    let t = cfg.timeouts;
    let mut c = Conn::new(cfg);
    assert_eq!(c.tcp(true, seg(SYN, 1000, 0)).1.refresh, Refresh::Set(t.tcp_syn_sent));
    assert_eq!(c.tcp(true, seg(SYN, 1000, 0)).1.refresh, Refresh::Keep, "SYN retransmission");
    assert_eq!(c.tcp(false, seg(SYN | ACK, 5000, 1001)).1.refresh, Refresh::Set(t.tcp_syn_recv));
    // ESTABLISHED with data unacknowledged (the SYN/ACK's): capped at 300 s.
    let (_, out) = c.tcp(true, seg(ACK, 1001, 5001));
    assert_eq!(out.refresh, Refresh::Set(t.tcp_established));
    let (_, out) = c.tcp(true, Seg { len: 10, ..seg(ACK | PSH, 1001, 5001) });
    assert_eq!(out.refresh, Refresh::Set(t.tcp_unacknowledged));
    assert_eq!(c.ct.timeout(ID), Some(t.tcp_unacknowledged));
    // Acknowledged: the full 5 days again.
    let (_, out) = c.tcp(false, seg(ACK, 5001, 1011));
    assert_eq!(out.refresh, Refresh::Set(t.tcp_established));
    // Three identical retransmissions: capped at max_retrans.
    let mut last = Refresh::Keep;
    for _ in 0..4 {
        last = c.tcp(false, seg(ACK, 5001, 1011)).1.refresh;
    }
    assert_eq!(last, Refresh::Set(t.tcp_max_retrans));
    // A picked-up flow without a reply: 300 s, not 5 days.
    let mut c = Conn::new(cfg);
    assert_eq!(c.tcp(true, seg(ACK, 1, 1)).1.refresh, Refresh::Set(t.tcp_unacknowledged));
    let (c2, _, _) = reach(TcpState::TimeWait, cfg);
    assert_eq!(c2.ct.timeout(ID), Some(t.tcp_time_wait));
}

#[test]
fn udp_pseudo_state() {
    let t = Timeouts::default();
    let mut c = Conn::new(Config::default());
    let (i, out) = c.send(udp_pkt(true, 4));
    assert_eq!((i.state, out.refresh), (CtState::New, Refresh::Set(t.udp)));
    let (i, out) = c.send(udp_pkt(true, 4));
    assert_eq!((i.state, out.refresh), (CtState::New, Refresh::Set(t.udp)), "no reply yet");
    let (i, out) = c.send(udp_pkt(false, 4));
    assert_eq!((i.state, out.refresh), (CtState::Established, Refresh::Set(t.udp)));
    let (i, out) = c.send(udp_pkt(true, 4));
    assert_eq!((i.state, out.refresh), (CtState::Established, Refresh::Set(t.udp)), "within 2 s");
    assert!(!c.ct.summary(ID).unwrap().assured);
    c.now += Span::from_secs(2);
    let (_, out) = c.send(udp_pkt(true, 4));
    assert_eq!(out.refresh, Refresh::Set(t.udp_stream), "still active after 2 s: a stream");
    assert!(c.ct.summary(ID).unwrap().assured);
    assert_eq!(c.ct.timeout(ID), Some(t.udp_stream));
    assert!(!c.ct.may_early_drop(ID, true));
}

#[test]
fn icmp_pseudo_state() {
    let t = Timeouts::default();
    let mut c = Conn::new(Config::default());
    let (i, out) = c.send(icmp_pkt(CLIENT, SERVER, 8, 0, &[0, 7, 0, 1]));
    assert_eq!((i.state, out.refresh), (CtState::New, Refresh::Set(t.icmp)));
    let (i, _) = c.send(icmp_pkt(SERVER, CLIENT, 0, 0, &[0, 7, 0, 1]));
    assert_eq!(i.state, CtState::Established);
    let (i, _) = c.send(icmp_pkt(CLIENT, SERVER, 8, 0, &[0, 7, 0, 2]));
    assert_eq!(i.state, CtState::Established);
    let s = c.ct.summary(ID).unwrap();
    assert!(s.seen_reply && !s.assured, "ICMP is never ASSURED");
    assert!(c.ct.may_early_drop(ID, false));
    // An echo request the other way is not this entry's: a new tuple, which cannot be stored
    // beside the first.
    let (i, out) = c.send(icmp_pkt(SERVER, CLIENT, 8, 0, &[0, 7, 0, 1]));
    assert_eq!((i.state, out.id), (CtState::New, None));
    assert_eq!(c.ct.stats().insert_failed, 1);
}

#[test]
fn untracked_neighbour_discovery() {
    let mut p = CtPacket {
        family: Family::V6,
        proto: proto::ICMPV6,
        icmp_type: 135,
        icmp_header: true,
        l4_len: 24,
        ..CtPacket::default()
    };
    let mut ct = Conntrack::new(Config::default());
    for t in [130, 133, 134, 135, 136, 143] {
        p.icmp_type = t;
        let i = ct.inspect(None, Side::A, &p, Timestamp::from_nanos(0), |_, _| None);
        assert_eq!(i.state, CtState::Untracked, "type {t}");
        assert!(!i.creates());
    }
    p.icmp_type = 128;
    assert_eq!(
        ct.inspect(None, Side::A, &p, Timestamp::from_nanos(0), |_, _| None).state,
        CtState::New
    );
    p.icmp_type = 129;
    assert_eq!(
        ct.inspect(None, Side::A, &p, Timestamp::from_nanos(0), |_, _| None).reason,
        Some(Reason::IcmpNotNew)
    );
}

#[test]
fn related_needs_the_flow_and_its_endpoint() {
    let mut ct = Conntrack::new(Config::default());
    let (p, side) = udp_pkt(true, 4);
    let i = ct.inspect(None, side, &p, Timestamp::from_nanos(0), |_, _| None);
    ct.commit(&i, true, Some(ID));
    let (key, _) =
        FlowKey::new(addr16(CLIENT), 5000, addr16(SERVER), 53, 17, IpFamily::V4, KeyKind::Ports);
    let lookup = |k: &FlowKey, _: Side| (*k == key).then_some(ID);
    // The server's port unreachable to the client: related, in the reply direction.
    let (err, eside) = icmp_pkt(SERVER, CLIENT, 3, 3, &quoted_udp());
    let i = ct.inspect(None, eside, &err, Timestamp::from_nanos(1), lookup);
    assert_eq!((i.state, i.dir, i.related_to), (CtState::Related, Dir::Reply, Some(ID)));
    // From a router on the way: still related (the outer source does not matter).
    let (err, eside) = icmp_pkt([192, 0, 2, 9], CLIENT, 11, 0, &quoted_udp());
    assert_eq!(
        ct.inspect(None, eside, &err, Timestamp::from_nanos(1), lookup).state,
        CtState::Related
    );
    // The same error sent to another host: invalid.
    let (err, eside) = icmp_pkt(SERVER, [10, 0, 0, 99], 3, 3, &quoted_udp());
    let i = ct.inspect(None, eside, &err, Timestamp::from_nanos(1), lookup);
    assert_eq!(i.reason, Some(Reason::IcmpOuterDaddr));
    // Related packets neither create nor change entries, nor mark a reply.
    assert!(!ct.summary(ID).unwrap().seen_reply);
    assert_eq!(ct.stats().error, 1);
}

#[test]
fn new_entries_exist_only_once_accepted() {
    let mut ct = Conntrack::new(Config::default());
    let (p, side) = tcp_pkt(true, &seg(SYN, 1, 0));
    let i = ct.inspect(None, side, &p, Timestamp::from_nanos(0), |_, _| None);
    assert!(i.creates());
    let out = ct.commit(&i, false, None);
    assert_eq!(out, Outcome::default());
    assert!(ct.entry(ID).is_none() && ct.stats().insert == 0);
    let out = ct.commit(&i, true, Some(ID));
    assert_eq!(out.id, Some(ID));
    // An existing entry is updated even when the rule set drops the packet.
    let (p, side) = tcp_pkt(false, &seg(SYN | ACK, 50, 2));
    let i = ct.inspect(Some(ID), side, &p, Timestamp::from_nanos(1), |_, _| None);
    ct.commit(&i, false, Some(ID));
    assert_eq!(ct.entry(ID).unwrap().tcp_state(), Some(TcpState::SynRecv));
    assert!(ct.may_early_drop(ID, false));
    assert!(ct.early_drop(ID).is_some());
    assert_eq!(ct.stats().early_drop, 1);
    assert!(ct.retire(ID).is_none());
}

/// A UDP-Lite datagram from the client covering `cov` bytes (0: all), checksum `sum_ok`.
fn udplite_pkt(cov: u16, with_sum: bool) -> (CtPacket, Side) {
    let mut u = vec![0x13, 0x88, 0, 53];
    u.extend_from_slice(&cov.to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.resize(20, 7);
    if with_sum {
        let n = if cov == 0 { u.len() } else { usize::from(cov).min(u.len()) };
        let acc =
            sum(&u[..n], pseudo_header(Family::V4, &addr16(CLIENT), &addr16(SERVER), 136, 20));
        let c = finish(acc);
        u[6..8].copy_from_slice(&c.to_be_bytes());
    }
    parse(&ipv4(CLIENT, SERVER, 136, u, None))
}

#[test]
fn udplite_checks() {
    let cfg = Config::default();
    let first = |p: (CtPacket, Side), cfg: Config| Conn::new(cfg).send(p).0;
    assert_eq!(first(udplite_pkt(8, true), cfg).state, CtState::New);
    assert_eq!(first(udplite_pkt(0, true), cfg).state, CtState::New);
    assert_eq!(first(udplite_pkt(4, true), cfg).reason, Some(Reason::UdpliteCoverage));
    assert_eq!(first(udplite_pkt(21, true), cfg).reason, Some(Reason::UdpliteCoverage));
    let off = Config { checksum: false, ..cfg };
    assert_eq!(first(udplite_pkt(8, false), off).reason, Some(Reason::UdpliteNoChecksum));
    let (mut p, side) = udplite_pkt(8, true);
    p.l4_checksum = Checksum::Bad;
    assert_eq!(first((p, side), cfg).reason, Some(Reason::BadChecksum));
    assert_eq!(first((p, side), off).reason, None);
}

#[test]
fn a_new_entry_waits_for_its_own_commit() {
    let mut ct = Conntrack::new(Config::default());
    let (a, sa) = tcp_pkt(true, &seg(SYN, 1, 0));
    let (b, sb) = udp_pkt(true, 4);
    let ia = ct.inspect(None, sa, &a, Timestamp::from_nanos(0), |_, _| None);
    let ib = ct.inspect(None, sb, &b, Timestamp::from_nanos(0), |_, _| None);
    // The SYN's pending entry was replaced by the datagram's: committing the SYN late stores
    // nothing (and says so), committing the datagram stores its own.
    assert_eq!(ct.commit(&ia, true, Some(FlowId(1))).id, None);
    assert_eq!(ct.stats().insert_failed, 1);
    assert_eq!(ct.commit(&ib, true, Some(FlowId(2))).id, Some(FlowId(2)));
    assert_eq!(ct.entry(FlowId(2)).unwrap().tcp_state(), None, "the UDP entry");
}

#[test]
fn an_entry_outlives_a_record_retired_before_its_commit() {
    // The flow table may end a record while counting the packet (a port reused, an idle
    // flow) and start it again in the same or another slot: the connection goes on there.
    let (mut c, cs, ss) = reach(TcpState::Established, Config::default());
    let (p, side) = tcp_pkt(true, &seg(ACK, cs, ss));
    let insp = c.ct.inspect(Some(ID), side, &p, c.now + Span::from_nanos(1), |_, _| None);
    let before = *c.ct.entry(ID).unwrap();
    assert!(c.ct.retire(ID).is_some());
    let out = c.ct.commit(&insp, true, Some(FlowId(9)));
    assert_eq!(out.id, Some(FlowId(9)));
    assert_eq!(c.ct.entry(FlowId(9)), Some(&before));
    // Without a record to go on in, nothing is stored.
    let insp = c.ct.inspect(Some(FlowId(9)), side, &p, c.now + Span::from_nanos(2), |_, _| None);
    c.ct.retire(FlowId(9));
    assert_eq!(c.ct.commit(&insp, false, None), Outcome::default());
}

#[test]
fn a_packet_filled_in_place_is_the_one_built_anew() {
    // Filling one value packet after packet (what the engine does) leaves nothing of the
    // previous packet behind: an ICMP error's quote and identifier, then TCP, UDP and ICMP.
    let error = ipv4(SERVER, CLIENT, 1, [&[3, 3, 0, 0][..], &quoted_udp()].concat(), Some(2));
    let frames = [
        error.clone(),
        ipv4(CLIENT, SERVER, 6, tcp_bytes(&seg(SYN, 7, 0), 40000, 80), Some(16)),
        error,
        ipv4(CLIENT, SERVER, 1, vec![8, 0, 0, 0, 0x12, 0x34, 0, 1], Some(2)),
        ipv4(CLIENT, SERVER, 17, vec![0x13, 0x88, 0, 53, 0, 8, 0, 0], None),
        ipv4(CLIENT, SERVER, 6, tcp_bytes(&seg(ACK, 8, 9), 40000, 80), Some(16)),
    ];
    let mut kept = CtPacket::default();
    for f in &frames {
        let m = PacketMeta::parse(LinkType::Ethernet, f);
        for verify in [true, false] {
            kept.fill(&m, f, verify);
            assert_eq!(kept, CtPacket::from_meta(&m, f, verify));
        }
    }
    assert!(
        CtPacket::from_meta(&PacketMeta::parse(LinkType::Ethernet, &frames[0]), &frames[0], true)
            .quote
            .is_some()
    );
}
