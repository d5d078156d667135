use super::*;
use rampart_dpi::App;
use rampart_flow::{Flow, FlowKey, PacketInfo};
use rampart_rtt::RttSummary;
use std::collections::HashMap;

fn record(family: u8, proto: u8, sport: u16, dport: u16) -> FlowRecord {
    let (mut a, mut b) = ([0u8; 16], [0u8; 16]);
    if family == 4 {
        a[..4].copy_from_slice(&[10, 0, 0, 1]);
        b[..4].copy_from_slice(&[192, 0, 2, 10]);
    } else {
        a = "2001:db8::1".parse::<std::net::Ipv6Addr>().unwrap().octets();
        b = "2001:db8::53".parse::<std::net::Ipv6Addr>().unwrap().octets();
    }
    // The first packet comes from `a`: it is the initiator.
    let family = IpFamily::from_version(family).expect("4 or 6");
    let (key, side) = FlowKey::new(a, sport, b, dport, proto, family, KeyKind::Ports);
    let p = PacketInfo {
        key,
        side,
        hash: 0,
        ts: rampart_wire::Timestamp::from_nanos(1_700_000_000_123_456_789),
        wire_len: 60,
        tcp_flags: 0x02,
    };
    let mut flow = Flow::start(&p);
    flow.last = rampart_wire::Timestamp::from_nanos(1_700_000_002_623_999_999);
    flow.packets = [10, 20];
    flow.bytes = [1000, 20000];
    flow.tcp_flags = [0x1b, 0x12];
    FlowRecord {
        flow,
        start: flow.first,
        end: EndReason::Fin,
        rtt: None,
        app: None,
        ct: None,
        verdict: None,
        conn: None,
    }
}

/// Every message handed to `emit`, copied.
fn run(
    enc: &mut Encoder,
    mut f: impl FnMut(&mut Encoder, &mut dyn FnMut(Message<'_>) -> io::Result<()>),
) -> Vec<(Vec<u8>, u32)> {
    let mut out = Vec::new();
    let mut emit = |m: Message<'_>| {
        out.push((m.bytes.to_vec(), m.records));
        Ok(())
    };
    f(enc, &mut emit);
    out
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

/// A minimal independent reader of the messages: templates into `templates`, data records as
/// lists of (element, enterprise, value) triples.
#[derive(Default)]
struct Reader {
    templates: HashMap<u16, Vec<(u16, u16, u32)>>,
}

type Decoded = Vec<(u16, u32, Vec<u8>)>;

impl Reader {
    fn read(&mut self, m: &[u8]) -> Vec<(u16, Decoded)> {
        assert_eq!(be16(m, 0), 10, "version");
        assert_eq!(usize::from(be16(m, 2)), m.len(), "message length");
        let mut at = HEADER;
        let mut out = Vec::new();
        while at < m.len() {
            let (id, len) = (be16(m, at), usize::from(be16(m, at + 2)));
            assert!(len >= 4 && at + len <= m.len(), "set length {len} at {at}");
            let body = &m[at + 4..at + len];
            if id == 2 {
                let mut p = 0;
                while p + 4 <= body.len() {
                    let (tid, n) = (be16(body, p), be16(body, p + 2));
                    p += 4;
                    let mut f = Vec::new();
                    for _ in 0..n {
                        let (raw, flen) = (be16(body, p), be16(body, p + 2));
                        p += 4;
                        let pen = if raw & 0x8000 != 0 {
                            p += 4;
                            be32(body, p - 4)
                        } else {
                            0
                        };
                        f.push((raw & 0x7fff, flen, pen));
                    }
                    self.templates.insert(tid, f);
                }
                assert_eq!(p, body.len(), "template set without padding");
            } else {
                let t = self.templates.get(&id).expect("the template came first").clone();
                let mut p = 0;
                while p < body.len() {
                    let mut rec = Vec::new();
                    for &(ie, flen, pen) in &t {
                        let n = if flen == VARIABLE {
                            let n = usize::from(body[p]);
                            p += 1;
                            if n == 255 {
                                p += 2;
                                usize::from(be16(body, p - 2))
                            } else {
                                n
                            }
                        } else {
                            usize::from(flen)
                        };
                        rec.push((ie, pen, body[p..p + n].to_vec()));
                        p += n;
                    }
                    out.push((id, rec));
                }
                assert_eq!(p, body.len(), "data set holds whole records");
            }
            at += len;
        }
        out
    }
}

fn value(rec: &Decoded, ie: u16, pen: u32) -> u64 {
    let v = &rec.iter().find(|(i, p, _)| *i == ie && *p == pen).unwrap().2;
    v.iter().fold(0, |acc, b| acc << 8 | u64::from(*b))
}

#[test]
fn the_template_message_byte_by_byte() {
    let m = template_message(&Config::default());
    // 16 header + set header 4 + two templates of 4 + 26 fields * 4 + 13 PENs * 4.
    assert_eq!(m.len(), 16 + 4 + 2 * (4 + 26 * 4 + 13 * 4));
    assert_eq!(&m[16..20], &[0, 2, 1, 68]); // set 2, length 324
    assert_eq!(&m[20..24], &[1, 0, 0, 26]); // template 256, 26 fields
    assert_eq!(&m[24..32], &[0, 152, 0, 8, 0, 153, 0, 8]); // flowStart/EndMilliseconds
    assert_eq!(&m[32..40], &[0, 8, 0, 4, 0, 12, 0, 4]); // IPv4 addresses
    assert_eq!(&m[40..56], &[0, 7, 0, 2, 0, 11, 0, 2, 0, 4, 0, 1, 0, 6, 0, 1]);
    assert_eq!(&m[56..64], &[0, 1, 0, 8, 0, 2, 0, 8]); // octet/packetDeltaCount
    // Reverse octetDeltaCount: enterprise bit, PEN 29305 (0x7279).
    assert_eq!(&m[64..72], &[0x80, 1, 0, 8, 0, 0, 0x72, 0x79]);
    assert_eq!(&m[72..80], &[0x80, 2, 0, 8, 0, 0, 0x72, 0x79]);
    assert_eq!(&m[80..88], &[0, 239, 0, 1, 0, 136, 0, 1]);
    // rampart's first element: RTT count towards the initiator, PEN 32473 (0x7ed9).
    assert_eq!(&m[88..96], &[0x80, 1, 0, 4, 0, 0, 0x7e, 0xd9]);
    let v6 = 20 + 4 + 26 * 4 + 13 * 4;
    assert_eq!(&m[v6..v6 + 4], &[1, 1, 0, 26]);
    assert_eq!(&m[v6 + 12..v6 + 20], &[0, 27, 0, 16, 0, 28, 0, 16]);
    let mut r = Reader::default();
    assert!(
        r.read(&{
            let mut m = m.clone();
            header(&mut m, 0, 0, 1);
            m
        })
        .is_empty()
    );
    assert_eq!(r.templates[&256].len(), 26);
    assert_eq!(r.templates[&257][25], (rampart_ie::COMMUNITY_ID, VARIABLE, DOCUMENTATION_PEN));
}

#[test]
fn a_data_record_byte_by_byte() {
    let mut enc = Encoder::new(Config::default()).unwrap();
    let msgs = run(&mut enc, |e, emit| {
        e.add(&record(4, 6, 40000, 443), 1_800_000_000, emit).unwrap();
        e.flush(1_800_000_000, emit).unwrap();
    });
    // Templates twice (UDP), then the data.
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[0], msgs[1]);
    let (m, n) = &msgs[2];
    assert_eq!(*n, 1);
    let cid = "1:pEIrDxOUEbROdxgXdmq1Af+o8Yc=";
    let rec_len = 122 - 24 + 1 + 1 + cid.len();
    assert_eq!(m.len(), 16 + 4 + rec_len);
    // Header: version 10, length, export time, sequence 0, domain 1.
    assert_eq!(&m[..4], &[0, 10, 0, m.len() as u8]);
    assert_eq!(be32(m, 4), 1_800_000_000);
    assert_eq!(be32(m, 8), 0);
    assert_eq!(be32(m, 12), 1);
    assert_eq!(be16(m, 16), 256);
    assert_eq!(usize::from(be16(m, 18)), 4 + rec_len);
    let d = &m[20..];
    let mut want = Vec::new();
    want.extend_from_slice(&1_700_000_000_123u64.to_be_bytes());
    want.extend_from_slice(&1_700_000_002_623u64.to_be_bytes());
    want.extend_from_slice(&[10, 0, 0, 1, 192, 0, 2, 10]);
    want.extend_from_slice(&[0x9c, 0x40, 0x01, 0xbb, 6, 0x1b]);
    for v in [1000u64, 10, 20000, 20] {
        want.extend_from_slice(&v.to_be_bytes());
    }
    want.extend_from_slice(&[1, 3]); // initiator, end of flow detected
    want.extend_from_slice(&[0; 32]); // no RTT
    want.extend_from_slice(&[0, 0x12, 0]); // no identification, responder flags, no app name
    want.push(cid.len() as u8);
    want.extend_from_slice(cid.as_bytes());
    assert_eq!(d, &want[..]);
    assert_eq!(community_id::of_flow(&record(4, 6, 40000, 443).flow, 0).unwrap().as_str(), cid);
}

#[test]
fn rtt_and_application_fields() {
    let mut r = record(6, 6, 40000, 443);
    let mut s = RttSummary::default();
    // dirs[0]: samples the initiator's packets completed, the path towards the initiator.
    s.dirs[0] = DirSummary {
        count: 3,
        min: rampart_wire::Span::from_nanos(1_500_000),
        median: rampart_wire::Span::from_nanos(2_000_000),
        max: rampart_wire::Span::from_nanos(9_000_999),
    };
    r.rtt = Some(s);
    r.app = Some(App {
        label: rampart_dpi::Label { master: rampart_dpi::Proto::Tls, app: Some("YouTube") },
        by: rampart_dpi::By::Dpi,
        meta: None,
    });
    let mut enc = Encoder::new(Config { pen: 99, ..Config::default() }).unwrap();
    let msgs = run(&mut enc, |e, emit| {
        e.add(&r, 5, emit).unwrap();
        e.flush(5, emit).unwrap();
    });
    let mut rd = Reader::default();
    rd.read(&msgs[0].0);
    let recs = rd.read(&msgs[2].0);
    assert_eq!(recs.len(), 1);
    let (tid, rec) = &recs[0];
    assert_eq!(*tid, TEMPLATE_V6);
    assert_eq!(value(rec, rampart_ie::RTT_INITIATOR_COUNT, 99), 3);
    assert_eq!(value(rec, rampart_ie::RTT_INITIATOR_MIN_US, 99), 1500);
    assert_eq!(value(rec, rampart_ie::RTT_INITIATOR_MEDIAN_US, 99), 2000);
    assert_eq!(value(rec, rampart_ie::RTT_INITIATOR_MAX_US, 99), 9000);
    assert_eq!(value(rec, rampart_ie::RTT_RESPONDER_COUNT, 99), 0);
    assert_eq!(value(rec, rampart_ie::APP_BY, 99), 1);
    let name = &rec.iter().find(|(i, p, _)| *i == 96 && *p == 0).unwrap().2;
    assert_eq!(name, b"TLS.YouTube");
    let src = &rec.iter().find(|(i, p, _)| *i == 27 && *p == 0).unwrap().2;
    assert_eq!(src[..], "2001:db8::1".parse::<std::net::Ipv6Addr>().unwrap().octets());
    assert_eq!(value(rec, 1, REVERSE_PEN), 20000);
    assert_eq!(value(rec, 2, REVERSE_PEN), 20);
}

#[test]
fn sequence_numbers_count_data_records() {
    let mut enc = Encoder::new(Config::default()).unwrap();
    let msgs = run(&mut enc, |e, emit| {
        for _ in 0..3 {
            e.add(&record(4, 17, 5353, 53), 0, emit).unwrap();
        }
        e.flush(0, emit).unwrap();
        e.flush(0, emit).unwrap(); // nothing waiting: nothing sent
        for _ in 0..2 {
            e.add(&record(6, 17, 5353, 53), 0, emit).unwrap();
        }
        e.flush(0, emit).unwrap();
    });
    let seqs: Vec<(u32, u32)> = msgs.iter().map(|(m, n)| (be32(m, 8), *n)).collect();
    assert_eq!(seqs, [(0, 0), (0, 0), (0, 3), (3, 2)]);
    assert_eq!(enc.sequence(), 5);
}

#[test]
fn templates_are_refreshed_by_time_and_by_count() {
    let cfg = Config { template_refresh_secs: 10, template_every: 3, ..Config::default() };
    let mut enc = Encoder::new(cfg).unwrap();
    let at = |enc: &mut Encoder, now: u64| {
        run(enc, |e, emit| {
            e.add(&record(4, 6, 1, 2), now, emit).unwrap();
            e.flush(now, emit).unwrap();
        })
        .iter()
        .filter(|(_, n)| *n == 0)
        .count()
    };
    assert_eq!(at(&mut enc, 100), 2, "two copies before the first data");
    assert_eq!(at(&mut enc, 105), 0);
    assert_eq!(at(&mut enc, 110), 1, "10 s after the last time");
    assert_eq!(at(&mut enc, 111), 0);
    assert_eq!(at(&mut enc, 112), 0);
    assert_eq!(at(&mut enc, 113), 1, "3 data messages since");
    // Over TCP: once.
    let mut enc = Encoder::new(Config { reliable: true, ..cfg }).unwrap();
    assert_eq!(at(&mut enc, 100), 1);
    for t in [200, 300, 400, 500] {
        assert_eq!(at(&mut enc, t), 0);
    }
}

#[test]
fn messages_stay_under_the_mtu() {
    for mtu in [512, 1400] {
        let mut enc = Encoder::new(Config { mtu, ..Config::default() }).unwrap();
        let msgs = run(&mut enc, |e, emit| {
            for i in 0..100u16 {
                let fam = if i % 7 < 3 { 6 } else { 4 };
                let mut r = record(fam, 6, 1000 + i, 80);
                r.flow.packets[0] = u64::from(i);
                e.add(&r, 0, emit).unwrap();
            }
            e.flush(0, emit).unwrap();
        });
        let mut rd = Reader::default();
        let mut ports = Vec::new();
        let mut seq = 0;
        for (m, n) in &msgs {
            assert!(m.len() <= mtu, "{} > {mtu}", m.len());
            let recs = rd.read(m);
            assert_eq!(recs.len(), *n as usize);
            if *n > 0 {
                assert_eq!(be32(m, 8), seq);
                seq += n;
                // Full messages are nearly full: no room for another IPv6 record.
                if ports.len() + recs.len() < 100 {
                    assert!(m.len() + 4 + 150 > mtu, "{} octets of {mtu}", m.len());
                }
            }
            for (_, rec) in recs {
                ports.push(value(&rec, 7, 0) as u16);
                assert_eq!(value(&rec, 2, 0), value(&rec, 7, 0) - 1000);
            }
        }
        assert_eq!(ports, (1000..1100).collect::<Vec<u16>>(), "every record, in order");
        assert!(msgs.iter().filter(|(_, n)| *n > 0).count() > 1);
    }
    assert!(Encoder::new(Config { mtu: 511, ..Config::default() }).is_err());
}

#[test]
fn long_application_names_are_cut() {
    let mut s = "é".repeat(150).into_bytes();
    truncate_utf8(&mut s, MAX_APP_NAME);
    assert_eq!(s.len(), MAX_APP_NAME);
    let mut s = b"a".to_vec().into_iter().chain("é".repeat(150).into_bytes()).collect::<Vec<_>>();
    truncate_utf8(&mut s, MAX_APP_NAME);
    assert_eq!(s.len(), MAX_APP_NAME - 1);
    assert!(std::str::from_utf8(&s).is_ok());
    let mut b = Vec::new();
    put_var(&mut b, &[7; 300]);
    assert_eq!(&b[..3], &[255, 1, 44]);
    assert_eq!(b.len(), 303);
}

#[test]
fn targets() {
    assert_eq!(
        Target::parse("127.0.0.1:4739").unwrap(),
        Target { transport: Transport::Udp, addr: "127.0.0.1:4739".into() }
    );
    let t = Target::parse("tcp://[::1]:4739").unwrap();
    assert_eq!(t.transport, Transport::Tcp);
    assert_eq!(t.to_string(), "tcp://[::1]:4739");
    assert_eq!(Target::parse("udp://collector:9995").unwrap().to_string(), "udp://collector:9995");
    for bad in ["127.0.0.1", "sctp://h:1", ":4739", "h:0", "h:65536", "h:x"] {
        assert!(Target::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn udp_export_reaches_a_socket_and_survives_no_listener() {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let t = Target::parse(&rx.local_addr().unwrap().to_string()).unwrap();
    let mut x = Exporter::connect(t, Config::default(), Duration::from_secs(1)).unwrap();
    for _ in 0..40 {
        x.record(&record(4, 6, 1, 2)).unwrap();
    }
    x.flush().unwrap();
    let s = x.stats();
    assert_eq!((s.records, s.template_messages, s.lost), (40, 2, 0));
    let mut rd = Reader::default();
    let mut got = 0;
    let mut buf = [0u8; 65536];
    for _ in 0..s.messages + s.template_messages {
        let n = rx.recv(&mut buf).unwrap();
        got += rd.read(&buf[..n]).len();
    }
    assert_eq!(got, 40);
    // Nobody listening any more: the system refuses later sends; they are counted, once
    // said, and the export goes on.
    drop(rx);
    for _ in 0..200 {
        x.record(&record(4, 6, 1, 2)).unwrap();
        x.flush().unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    let s = x.stats();
    assert!(s.lost > 0 && s.lost + s.records == 240, "{s:?}");
    let w = x.take_warning().unwrap();
    assert!(w.starts_with("IPFIX collector udp://127.0.0.1:") && w.contains("lost"), "{w}");
    assert!(x.take_warning().is_none());
}

#[test]
fn tcp_export_and_a_refused_connection() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let reader = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut all = Vec::new();
        io::Read::read_to_end(&mut s, &mut all).unwrap();
        all
    });
    let t = Target::parse(&format!("tcp://{addr}")).unwrap();
    let mut x = Exporter::connect(t, Config::default(), Duration::from_secs(5)).unwrap();
    for i in 0..30 {
        x.record(&record(if i % 2 == 0 { 4 } else { 6 }, 17, 1, 2)).unwrap();
    }
    x.flush().unwrap();
    drop(x);
    let all = reader.join().unwrap();
    let mut rd = Reader::default();
    let (mut at, mut n, mut templates) = (0, 0, 0);
    while at < all.len() {
        let len = usize::from(be16(&all, at + 2));
        let recs = rd.read(&all[at..at + len]).len();
        templates += usize::from(recs == 0);
        n += recs;
        at += len;
    }
    assert_eq!((n, templates), (30, 1));
    // A port nobody listens on: an error naming the collector.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let t = Target::parse(&format!("tcp://{free}")).unwrap();
    let e = Exporter::connect(t, Config::default(), Duration::from_secs(5)).err().unwrap();
    assert!(
        e.to_string().starts_with(&format!("IPFIX collector tcp://{free}: cannot connect")),
        "{e}"
    );
}

/// A firewall's record of a TCP connection: Zeek's state and history from the TCP-state stage
/// over a handshake, data and closes, distinct health counters each way, conntrack's summary,
/// the last verdict and its rule, and an application.
fn firewall_record(family: u8, rule: Option<&str>) -> FlowRecord {
    use rampart_flow::{Dir, FlowId};
    use rampart_tcpstate::{DirCounters, TcpSeg, TcpStateStage};
    use rampart_wire::tcp::flags::{ACK, FIN, SYN};
    let mut r = record(family, 6, 40000, 443);
    let mut st = TcpStateStage::new();
    let id = FlowId(3);
    let segs = [
        (Dir::Original, 100, 0, SYN, 0),
        (Dir::Reply, 500, 101, SYN | ACK, 0),
        (Dir::Original, 101, 501, ACK, 0),
        (Dir::Original, 101, 501, ACK, 10),
        (Dir::Reply, 501, 111, ACK, 20),
        (Dir::Original, 111, 521, FIN | ACK, 0),
        (Dir::Reply, 521, 112, FIN | ACK, 0),
        (Dir::Original, 112, 522, ACK, 0),
    ];
    for (i, (dir, seq, ack, flags, payload)) in segs.into_iter().enumerate() {
        let s = TcpSeg { seq, ack, flags, window: 1000, payload };
        st.observe_segment(
            id,
            i == 0,
            dir,
            rampart_wire::Timestamp::from_nanos(1_000 * i as u64),
            &s,
        );
    }
    let mut conn = st.retire_flow(id, &r.flow);
    conn.dirs[0] = DirCounters { retrans: 1, out_of_order: 2, lost: 3, zero_window: 4 };
    conn.dirs[1] = DirCounters { retrans: 70_000, out_of_order: 6, lost: 7, zero_window: 8 };
    r.conn = Some(conn);
    r.ct = Some(rampart_conntrack::Summary {
        ct_state: rampart_conntrack::CtState::Established,
        tcp_state: Some(rampart_conntrack::TcpState::TimeWait),
        assured: true,
        seen_reply: true,
    });
    r.verdict = Some((rampart_engine::Verdict::Reject, rule.map(std::sync::Arc::from)));
    r.app = Some(App {
        label: rampart_dpi::Label { master: rampart_dpi::Proto::Tls, app: Some("YouTube") },
        by: rampart_dpi::By::Dpi,
        meta: None,
    });
    r
}

/// The string value of element `ie` of enterprise `pen`.
fn text(rec: &Decoded, ie: u16, pen: u32) -> String {
    let v = &rec.iter().find(|(i, p, _)| *i == ie && *p == pen).unwrap().2;
    String::from_utf8(v.clone()).unwrap()
}

#[test]
fn tcp_and_firewall_elements_round_trip() {
    use rampart_ie::*;
    let pen = 4242;
    for family in [4, 6] {
        let r = firewall_record(family, Some("forward:7 reject-9999"));
        let conn = r.conn.unwrap();
        assert!(!conn.history.is_empty());
        let cfg = Config { pen, tcp: true, firewall: true, ..Config::default() };
        let mut enc = Encoder::new(cfg).unwrap();
        let msgs = run(&mut enc, |e, emit| {
            e.add(&r, 5, emit).unwrap();
            e.flush(5, emit).unwrap();
        });
        let mut rd = Reader::default();
        assert!(rd.read(&msgs[0].0).is_empty());
        // The templates the message carries are the field lists `template_fields` gives.
        for v6 in [false, true] {
            let want: Vec<(u16, u16, u32)> = template_fields(v6, &cfg)
                .iter()
                .map(|f| (f.id, f.len, f.pen.unwrap_or(0)))
                .collect();
            assert_eq!(rd.templates[&template_id(v6, &cfg)], want);
        }
        // The reader walks the record by the template's lengths and must end exactly at the
        // end of the set: the record is as long as its template says.
        let recs = rd.read(&msgs[2].0);
        assert_eq!(recs.len(), 1);
        let (tid, rec) = &recs[0];
        assert_eq!(*tid, if family == 6 { 263 } else { 262 });
        assert_eq!(text(rec, CONN_STATE, pen), "SF");
        assert_eq!(text(rec, CONN_HISTORY, pen), conn.history.as_str());
        for (ie, fwd, rev) in [
            (TCP_RETRANSMISSIONS, 1, 70_000),
            (TCP_OUT_OF_ORDER, 2, 6),
            (TCP_GAPS, 3, 7),
            (TCP_ZERO_WINDOWS, 4, 8),
        ] {
            assert_eq!(value(rec, ie, pen), fwd, "element {ie}");
            assert_eq!(value(rec, ie | REVERSE_BIT, pen), rev, "reverse element {ie}");
        }
        // No rampart element is sent under the reverse enterprise number of IANA's elements.
        let reverse: Vec<u16> =
            rec.iter().filter(|(_, p, _)| *p == REVERSE_PEN).map(|(i, _, _)| *i).collect();
        assert_eq!(reverse, [1, 2]);
        assert_eq!(value(rec, FORWARDING_STATUS, 0), 0x81, "dropped: ACL deny");
        assert_eq!(value(rec, FIREWALL_VERDICT, pen), 3);
        assert_eq!(value(rec, CT_STATE, pen), 2);
        assert_eq!(value(rec, CT_TCP_STATE, pen), 7);
        assert_eq!(value(rec, CT_ASSURED, pen), 1);
        assert_eq!(text(rec, FIREWALL_RULE, pen), "forward:7 reject-9999");
        // The base elements are still there and right.
        assert_eq!(text(rec, 96, 0), "TLS.YouTube");
        assert_eq!(value(rec, 1, REVERSE_PEN), 20000);
        assert_eq!(value(rec, 136, 0), 3);
    }
}

#[test]
fn records_without_the_groups_values_send_empty_and_zero() {
    use rampart_ie::*;
    let cfg = Config { tcp: true, firewall: true, ..Config::default() };
    let pen = cfg.pen;
    let r = record(4, 17, 5353, 53);
    let mut enc = Encoder::new(cfg).unwrap();
    let msgs = run(&mut enc, |e, emit| {
        e.add(&r, 5, emit).unwrap();
        e.flush(5, emit).unwrap();
    });
    let mut rd = Reader::default();
    rd.read(&msgs[0].0);
    let recs = rd.read(&msgs[2].0);
    let rec = &recs[0].1;
    assert_eq!(text(rec, CONN_STATE, pen), "");
    assert_eq!(text(rec, CONN_HISTORY, pen), "");
    assert_eq!(text(rec, FIREWALL_RULE, pen), "");
    assert_eq!(value(rec, TCP_RETRANSMISSIONS | REVERSE_BIT, pen), 0);
    assert_eq!(value(rec, FORWARDING_STATUS, 0), 0);
    assert_eq!(value(rec, FIREWALL_VERDICT, pen), 0);
    assert_eq!(value(rec, CT_ASSURED, pen), 2, "false");
    // A drop that no rule gave (a full table): dropped, reason unknown.
    let mut r = firewall_record(4, None);
    r.verdict = Some((rampart_engine::Verdict::Drop, None));
    assert_eq!(forwarding_status(&r), 0x80);
    r.verdict = Some((rampart_engine::Verdict::Accept, Some("policy".into())));
    assert_eq!((forwarding_status(&r), verdict_code(&r)), (0x40, 1));
}

#[test]
fn each_group_has_its_own_template_ids_and_the_default_is_unchanged() {
    let mut ids = std::collections::BTreeSet::new();
    for (tcp, firewall) in [(false, false), (true, false), (false, true), (true, true)] {
        let cfg = Config { tcp, firewall, ..Config::default() };
        let n = fields(false, cfg.pen).len()
            + if tcp { tcp_fields(cfg.pen).len() } else { 0 }
            + if firewall { firewall_fields(cfg.pen).len() } else { 0 };
        for v6 in [false, true] {
            assert!(ids.insert(template_id(v6, &cfg)));
            assert_eq!(template_fields(v6, &cfg).len(), n);
        }
        // Only the two templates of the run's groups are sent.
        let mut rd = Reader::default();
        let mut m = template_message(&cfg);
        header(&mut m, 0, 0, 1);
        rd.read(&m);
        let mut sent: Vec<u16> = rd.templates.keys().copied().collect();
        sent.sort_unstable();
        assert_eq!(sent, [template_id(false, &cfg), template_id(true, &cfg)]);
    }
    assert_eq!(ids.into_iter().collect::<Vec<_>>(), (256..264).collect::<Vec<_>>());
    let base = Config::default();
    assert_eq!((template_id(false, &base), template_id(true, &base)), (TEMPLATE_V4, TEMPLATE_V6));
    assert_eq!(template_fields(true, &base), fields(true, base.pen));
}

#[test]
fn the_largest_record_of_every_group_fits_the_smallest_message() {
    use rampart_tcpstate::HISTORY_MAX;
    // The bound from the templates: fixed fields, then each string at its longest (the
    // Community ID is 30 octets; conn_state at most 6).
    let cfg = Config { mtu: MIN_MTU, tcp: true, firewall: true, ..Config::default() };
    let fixed = fixed_len(true, &cfg);
    let strings = (1 + MAX_APP_NAME) + (1 + 30) + (1 + 6) + (1 + HISTORY_MAX) + (1 + MAX_RULE_NAME);
    assert!(HEADER + 4 + fixed + strings <= MIN_MTU, "{} octets", HEADER + 4 + fixed + strings);
    // And a record with a long application name and a long rule name, encoded.
    let long = "r".repeat(21) + &"é".repeat(100);
    let mut r = firewall_record(6, Some(&long));
    r.app = Some(App {
        label: rampart_dpi::Label {
            master: rampart_dpi::Proto::Tls,
            app: Some("y".repeat(400).leak()),
        },
        by: rampart_dpi::By::Dpi,
        meta: None,
    });
    let mut enc = Encoder::new(cfg).unwrap();
    let msgs = run(&mut enc, |e, emit| {
        e.add(&r, 5, emit).unwrap();
        e.flush(5, emit).unwrap();
    });
    assert!(msgs.iter().all(|(m, _)| m.len() <= MIN_MTU));
    let mut rd = Reader::default();
    for (m, _) in &msgs[..msgs.len() - 1] {
        rd.read(m);
    }
    let recs = rd.read(&msgs[msgs.len() - 1].0);
    let rule = text(&recs[0].1, rampart_ie::FIREWALL_RULE, cfg.pen);
    // Cut at a character boundary, at most MAX_RULE_NAME octets.
    assert_eq!(rule, long[..MAX_RULE_NAME - 1]);
}

#[test]
fn templates_that_do_not_fit_one_message_go_in_two() {
    let cfg = Config { mtu: MIN_MTU, tcp: true, firewall: true, ..Config::default() };
    assert!(template_message(&cfg).len() > MIN_MTU);
    let mut enc = Encoder::new(cfg).unwrap();
    let msgs = run(&mut enc, |e, emit| {
        e.add(&record(4, 6, 1, 2), 5, emit).unwrap();
        e.flush(5, emit).unwrap();
    });
    // Two copies of the two template messages, then the data.
    assert_eq!(msgs.len(), 5);
    let mut rd = Reader::default();
    for (m, n) in &msgs[..4] {
        assert!(m.len() <= MIN_MTU && *n == 0);
        assert!(rd.read(m).is_empty());
    }
    assert_eq!(rd.templates.len(), 2);
    assert_eq!(rd.read(&msgs[4].0).len(), 1);
    // Refreshed by time: both template messages again (once), then the data.
    let later = 5 + cfg.template_refresh_secs;
    let msgs = run(&mut enc, |e, emit| {
        e.add(&record(6, 6, 1, 2), later, emit).unwrap();
        e.flush(later, emit).unwrap();
    });
    assert_eq!(msgs.iter().map(|(_, n)| *n).collect::<Vec<_>>(), [0, 0, 1]);
    assert_eq!(msgs[0].0[16..], template_set_message(&cfg, &[false])[16..]);
    assert_eq!(msgs[1].0[16..], template_set_message(&cfg, &[true])[16..]);
    // At the default size, one message holds both.
    let cfg = Config { mtu: 1400, ..cfg };
    assert_eq!(template_messages(&cfg).len(), 1);
}

#[test]
fn strings_come_after_every_fixed_length_field() {
    for (tcp, firewall) in [(false, false), (true, false), (false, true), (true, true)] {
        let cfg = Config { tcp, firewall, ..Config::default() };
        for v6 in [false, true] {
            let f = template_fields(v6, &cfg);
            let first_var = f.iter().position(|x| x.len == VARIABLE).unwrap();
            assert!(f[first_var..].iter().all(|x| x.len == VARIABLE), "{tcp} {firewall}");
            assert_eq!(
                fixed_len(v6, &cfg),
                f[..first_var].iter().map(|x| usize::from(x.len)).sum()
            );
        }
    }
}
