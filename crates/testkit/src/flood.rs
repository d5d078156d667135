//! Captures of floods, made on demand: every packet (or every few) a new flow, as scans, SYN
//! and UDP floods, DNS storms and crafted handshakes look. The tests use small ones; the
//! benchmarks and the memory measurements in BENCHMARKS.md use millions of flows.

use std::io::{self, Write};

/// What each flow of a flood is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// One UDP datagram of 32 random-looking bytes to port 53 (a DNS storm without DNS).
    Udp,
    /// One TCP SYN to port 80 (a SYN flood or a scan).
    Syn,
    /// A TCP SYN, then eight 1,400-byte segments to port 443 whose first is a TLS record
    /// header claiming 16 KB of handshake that never completes (what makes a payload
    /// inspector buffer). The flows run side by side: every flow's SYN, then every flow's
    /// first segment, and so on, so all of them are being inspected at once.
    Tls,
    /// A SYN flood as [`Kind::Syn`] with [`SESSIONS`] connections that live through it: each
    /// opened by a full handshake at the start, then exchanging data (a 100-byte segment
    /// and its acknowledgement) in place of every 16th flood packet, so a stateful firewall
    /// must keep them while the flood fills its table.
    SynWithSessions,
    /// Short TCP conversations with the timestamps option, as RTT measurement sees them: a
    /// handshake, a 64-byte request and its acknowledgement (four packets, two RTT samples
    /// per flow). The flows run side by side, each step of every flow in a scrambled order
    /// of flows, so that every packet finds its flow at a random place in the table.
    Conversations,
}

/// The connections of [`Kind::SynWithSessions`]: from 10.255.0.1, ports 5000 up, to
/// 192.0.2.1 port 443.
pub const SESSIONS: u16 = 16;

/// The Internet checksum of `data` with `sum` already added.
fn checksum(mut sum: u32, data: &[u8]) -> u16 {
    for c in data.chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Source address and port of flow `i`: distinct for up to 2^32 flows.
fn endpoint(i: u32) -> ([u8; 4], u16) {
    let h = i.wrapping_mul(0x9e37_79b9);
    ([10, (h >> 24) as u8, (h >> 16) as u8, (h >> 8) as u8], 1024 + (i % 60_000) as u16)
}

fn frame(src: [u8; 4], sport: u16, dport: u16, proto: u8, l4: &[u8], payload: &[u8]) -> Vec<u8> {
    frame_to(src, sport, [192, 0, 2, 1], dport, proto, l4, payload)
}

/// An Ethernet/IPv4 frame with correct IP and TCP/UDP checksums (a stateful firewall checks
/// them, as Linux does).
fn frame_to(
    src: [u8; 4],
    sport: u16,
    dst: [u8; 4],
    dport: u16,
    proto: u8,
    l4: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    let ip_len = 20 + l4.len() + payload.len();
    let mut f = Vec::with_capacity(14 + ip_len);
    f.extend_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0]);
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&(ip_len as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, proto, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    let mut l4 = l4.to_vec();
    l4[0..2].copy_from_slice(&sport.to_be_bytes());
    l4[2..4].copy_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&l4);
    f.extend_from_slice(payload);
    let ip = checksum(0, &f[14..34]);
    f[24..26].copy_from_slice(&ip.to_be_bytes());
    // The pseudo-header: addresses, protocol, length.
    let mut sum = u32::from(proto) + (ip_len as u32 - 20);
    for w in [&src[..2], &src[2..], &dst[..2], &dst[2..]] {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    let at = 34 + if proto == 6 { 16 } else { 6 };
    let c = checksum(sum, &f[34..]);
    f[at..at + 2].copy_from_slice(&c.to_be_bytes());
    f
}

/// A TCP header with the options NOP NOP TS (TSval, TSecr).
fn tcp_ts(flags: u8, seq: u32, ack: u32, ts: (u32, u32)) -> [u8; 32] {
    let mut t = [0u8; 32];
    t[..20].copy_from_slice(&tcp_ack(flags, seq, ack));
    t[12] = 0x80;
    t[20..24].copy_from_slice(&[1, 1, 8, 10]);
    t[24..28].copy_from_slice(&ts.0.to_be_bytes());
    t[28..32].copy_from_slice(&ts.1.to_be_bytes());
    t
}

/// A multiplier that visits `0..n` in a scrambled order (`i * m mod n` for `i` in `0..n`):
/// odd and prime, so coprime to `n` unless `n` is a multiple of it.
fn scramble(n: u32) -> u64 {
    [1_000_003u64, 999_983, 104_729].into_iter().find(|m| u64::from(n) % m != 0).unwrap_or(1)
}

fn tcp(flags: u8, seq: u32) -> [u8; 20] {
    tcp_ack(flags, seq, 0)
}

fn tcp_ack(flags: u8, seq: u32, ack: u32) -> [u8; 20] {
    let mut t = [0u8; 20];
    t[4..8].copy_from_slice(&seq.to_be_bytes());
    t[8..12].copy_from_slice(&ack.to_be_bytes());
    t[12] = 0x50;
    t[13] = flags;
    t[14..16].copy_from_slice(&64240u16.to_be_bytes());
    t
}

/// Writes a classic pcap (microseconds, Ethernet) of `flows` flows of `kind`, one flow
/// starting every `gap_us` microseconds.
pub fn write(out: &mut impl Write, kind: Kind, flows: u32, gap_us: u64) -> io::Result<()> {
    for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 262_144, 1] {
        out.write_all(&v.to_le_bytes())?;
    }
    let mut t = 1_700_000_000_000_000u64;
    let record = |out: &mut dyn Write, t: u64, f: &[u8]| -> io::Result<()> {
        for v in [(t / 1_000_000) as u32, (t % 1_000_000) as u32, f.len() as u32, f.len() as u32] {
            out.write_all(&v.to_le_bytes())?;
        }
        out.write_all(f)
    };
    let junk: Vec<u8> = (0..1400u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let udp = |i: u32| {
        let (src, sport) = endpoint(i);
        let mut udp = [0u8; 8];
        udp[4..6].copy_from_slice(&40u16.to_be_bytes());
        frame(src, sport, 53, 17, &udp, &junk[(i % 997) as usize..][..32])
    };
    let tls = |i: u32, k: u32| {
        let (src, sport) = endpoint(i);
        if k == 0 {
            return frame(src, sport, 443, 6, &tcp(0x02, 0), &[]);
        }
        let mut p = junk.clone();
        if k == 1 {
            // A handshake record of 16 KB holding a ClientHello of about 16 KB.
            p[..9].copy_from_slice(&[0x16, 0x03, 0x01, 0x40, 0x00, 0x01, 0x00, 0x3f, 0xfc]);
        }
        frame(src, sport, 443, 6, &tcp(0x18, 1 + (k - 1) * 1400), &p)
    };
    match kind {
        Kind::Udp | Kind::Syn => {
            for i in 0..flows {
                let f = match kind {
                    Kind::Udp => udp(i),
                    _ => {
                        let (src, sport) = endpoint(i);
                        frame(src, sport, 80, 6, &tcp(0x02, i), &[])
                    }
                };
                record(out, t, &f)?;
                t += gap_us;
            }
        }
        Kind::SynWithSessions => {
            let (client, server) = ([10, 255, 0, 1], [192, 0, 2, 1]);
            let (c0, s0) = (1_000u32, 500_000u32);
            let to_server = |k: u16, flags, seq, ack, data: &[u8]| {
                frame_to(client, 5000 + k, server, 443, 6, &tcp_ack(flags, seq, ack), data)
            };
            let to_client = |k: u16, flags, seq, ack| {
                frame_to(server, 443, client, 5000 + k, 6, &tcp_ack(flags, seq, ack), &[])
            };
            for k in 0..SESSIONS {
                for f in [
                    to_server(k, 0x02, c0, 0, &[]),
                    to_client(k, 0x12, s0, c0 + 1),
                    to_server(k, 0x10, c0 + 1, s0 + 1, &[]),
                ] {
                    record(out, t, &f)?;
                    t += gap_us;
                }
            }
            let data = [0x42u8; 100];
            let mut sent = vec![0u32; usize::from(SESSIONS)];
            for i in 0..flows {
                let f = if i % 16 == 15 {
                    let turn = (i / 16) as usize;
                    let k = turn % usize::from(SESSIONS);
                    let seq = c0 + 1 + sent[k] * 100;
                    if (turn / usize::from(SESSIONS)).is_multiple_of(2) {
                        sent[k] += 1;
                        to_server(k as u16, 0x18, seq, s0 + 1, &data)
                    } else {
                        to_client(k as u16, 0x10, s0 + 1, seq)
                    }
                } else {
                    let (src, sport) = endpoint(i);
                    frame(src, sport, 80, 6, &tcp(0x02, i), &[])
                };
                record(out, t, &f)?;
                t += gap_us;
            }
        }
        Kind::Conversations => {
            let server = [192, 0, 2, 1];
            let m = scramble(flows);
            let request = &junk[..64];
            for step in 0..4u32 {
                for i in 0..flows {
                    let j = (u64::from(i) * m % u64::from(flows)) as u32;
                    let (client, port) = endpoint(j);
                    let (c0, s0) = (j.wrapping_mul(7919), j.wrapping_mul(104_729));
                    // Each host's clock ticks once between its two segments.
                    let (tc, ts) = (j, j ^ 0x5555_5555);
                    let f = match step {
                        0 => frame_to(
                            client,
                            port,
                            server,
                            443,
                            6,
                            &tcp_ts(0x02, c0, 0, (tc, 0)),
                            &[],
                        ),
                        1 => {
                            let h = tcp_ts(0x12, s0, c0.wrapping_add(1), (ts, tc));
                            frame_to(server, 443, client, port, 6, &h, &[])
                        }
                        2 => {
                            let h =
                                tcp_ts(0x18, c0.wrapping_add(1), s0.wrapping_add(1), (tc + 1, ts));
                            frame_to(client, port, server, 443, 6, &h, request)
                        }
                        _ => {
                            let h = tcp_ts(
                                0x10,
                                s0.wrapping_add(1),
                                c0.wrapping_add(65),
                                (ts + 1, tc + 1),
                            );
                            frame_to(server, 443, client, port, 6, &h, &[])
                        }
                    };
                    record(out, t, &f)?;
                    t += gap_us;
                }
            }
        }
        Kind::Tls => {
            for k in 0..9 {
                for i in 0..flows {
                    record(out, t, &tls(i, k))?;
                    t += gap_us;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_is_a_capture_of_distinct_flows() {
        let mut v = Vec::new();
        write(&mut v, Kind::Udp, 1000, 10).unwrap();
        assert_eq!(v.len(), 24 + 1000 * (16 + 14 + 20 + 8 + 32));
        let mut seen = std::collections::HashSet::new();
        for i in 0..100_000 {
            assert!(seen.insert(endpoint(i)), "flow {i} repeats an endpoint");
        }
        let mut v = Vec::new();
        write(&mut v, Kind::Tls, 2, 10).unwrap();
        assert_eq!(v.len(), 24 + 2 * (16 + 54 + 8 * (16 + 54 + 1400)));
    }

    #[test]
    fn conversations_visit_every_flow_once_per_step() {
        for n in [1u32, 7, 1000, 4096, 1_000_003 * 3] {
            let m = scramble(n);
            assert!(m > 1 && u64::from(n) % m != 0, "{n}: {m}");
        }
        let n = 1000;
        let mut v = Vec::new();
        write(&mut v, Kind::Conversations, n, 1).unwrap();
        let per_flow = 4 * (16 + 14 + 20 + 32) + 64;
        assert_eq!(v.len(), 24 + n as usize * per_flow);
        // Every step names each client once: the source (or destination) port of a frame.
        let mut at = 24;
        for step in 0..4 {
            let mut seen = std::collections::HashSet::new();
            for _ in 0..n {
                let len = u32::from_le_bytes(v[at + 8..at + 12].try_into().unwrap()) as usize;
                let f = &v[at + 16..at + 16 + len];
                let client = if step % 2 == 0 { &f[26..30] } else { &f[30..34] };
                assert!(seen.insert(client.to_vec()), "step {step} repeats a flow");
                at += 16 + len;
            }
        }
        assert_eq!(at, v.len());
    }

    #[test]
    fn checksums_verify() {
        let f = frame(endpoint(7).0, 1234, 80, 6, &tcp(0x02, 9), b"abc");
        // A correct checksum sums to zero over the checksummed bytes.
        assert_eq!(checksum(0, &f[14..34]), 0);
        let mut sum = 6 + (f.len() as u32 - 34);
        for w in f[26..34].chunks(2) {
            sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
        }
        assert_eq!(checksum(sum, &f[34..]), 0);
        let u = frame(endpoint(8).0, 1234, 53, 17, &[0, 0, 0, 0, 0, 11, 0, 0], b"abc");
        let mut sum = 17 + 11;
        for w in u[26..34].chunks(2) {
            sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
        }
        assert_eq!(checksum(sum, &u[34..]), 0);
    }
}
