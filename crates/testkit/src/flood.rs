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
}

/// Source address and port of flow `i`: distinct for up to 2^32 flows.
fn endpoint(i: u32) -> ([u8; 4], u16) {
    let h = i.wrapping_mul(0x9e37_79b9);
    ([10, (h >> 24) as u8, (h >> 16) as u8, (h >> 8) as u8], 1024 + (i % 60_000) as u16)
}

fn frame(src: [u8; 4], sport: u16, dport: u16, proto: u8, l4: &[u8], payload: &[u8]) -> Vec<u8> {
    let ip_len = 20 + l4.len() + payload.len();
    let mut f = Vec::with_capacity(14 + ip_len);
    f.extend_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0]);
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&(ip_len as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, proto, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&[192, 0, 2, 1]);
    let mut l4 = l4.to_vec();
    l4[0..2].copy_from_slice(&sport.to_be_bytes());
    l4[2..4].copy_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&l4);
    f.extend_from_slice(payload);
    f
}

fn tcp(flags: u8, seq: u32) -> [u8; 20] {
    let mut t = [0u8; 20];
    t[4..8].copy_from_slice(&seq.to_be_bytes());
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
}
