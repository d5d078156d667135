//! A paced UDP generator in which every packet is a new flow, for measuring live capture
//! (`scripts/bench-live.sh`).
//!
//! ```text
//! udpgen IFACE RATE_PPS COUNT [FRAME_BYTES] [DST_MAC] [FLOWS] [syn]
//! ```
//!
//! Frames go out of IFACE through an AF_PACKET socket that bypasses the qdisc, in batches of
//! up to 64 per `sendmmsg`. Packet k leaves at `start + k / RATE` (never earlier): before each
//! batch the generator sends what is due, and when nothing is due it sleeps (or, within 200 µs
//! of the next due time, spins). Packet k comes from 10.128.0.0/10 + (k mod 2^22), source port
//! 1024 + (k / 2^22), to 10.127.0.1:9, so no two of the first 250 billion packets share a
//! 5-tuple. The destination MAC defaults to 02:00:00:00:00:02, which no receiver owns: a
//! capture on the peer sees every frame, and the peer's IP stack drops them unprocessed.
//!
//! With FLOWS (not 0), packet k is flow k mod FLOWS: a steady set of flows rather than a new
//! one per packet. With `syn`, the packets are TCP SYNs (to port 9) instead of UDP: a SYN
//! flood from as many sources.
//!
//! At the end it prints what it sent, the time it took, the rate achieved and the largest lag
//! behind the schedule, so a run that could not keep its rate is visible.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::time::{Duration, Instant};

const BATCH: usize = 64;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const SOL_PACKET: libc::c_int = 263;

fn fail(msg: &str) -> ! {
    eprintln!("udpgen: {msg}");
    std::process::exit(2)
}

fn mac(s: &str) -> [u8; 6] {
    let v: Vec<u8> = s.split(':').filter_map(|h| u8::from_str_radix(h, 16).ok()).collect();
    v.try_into().unwrap_or_else(|_| fail(&format!("bad MAC address {s}")))
}

/// The IPv4 header checksum (RFC 791) of `h`, whose checksum field is zero.
fn checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = h.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], c[1]]))).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Writes packet `k` into `f` (already holding the Ethernet header): UDP, or a TCP SYN.
fn fill(f: &mut [u8], k: u64, syn: bool) {
    let len = f.len();
    let src = 0x0a80_0000u32 | (k & 0x3f_ffff) as u32;
    let sport = 1024 + ((k >> 22) % 60_000) as u16;
    let proto = if syn { 6 } else { 17 };
    let ip = &mut f[14..34];
    ip.copy_from_slice(&[0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, proto, 0, 0, 0, 0, 0, 0, 10, 127, 0, 1]);
    ip[2..4].copy_from_slice(&((len - 14) as u16).to_be_bytes());
    ip[12..16].copy_from_slice(&src.to_be_bytes());
    let c = checksum(ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    if syn {
        // A SYN with no options; the checksum over the pseudo-header and the segment.
        let seg_len = len - 34;
        let t = &mut f[34..];
        t.fill(0);
        t[0..2].copy_from_slice(&sport.to_be_bytes());
        t[2..4].copy_from_slice(&9u16.to_be_bytes());
        t[4..8].copy_from_slice(&(k as u32).to_be_bytes());
        t[12] = 5 << 4;
        t[13] = 0x02;
        t[14..16].copy_from_slice(&64240u16.to_be_bytes());
        let mut pseudo = Vec::with_capacity(12 + seg_len);
        pseudo.extend_from_slice(&src.to_be_bytes());
        pseudo.extend_from_slice(&[10, 127, 0, 1, 0, 6]);
        pseudo.extend_from_slice(&(seg_len as u16).to_be_bytes());
        pseudo.extend_from_slice(&f[34..]);
        let c = checksum(&pseudo);
        f[50..52].copy_from_slice(&c.to_be_bytes());
        return;
    }
    let udp = &mut f[34..42];
    udp[0..2].copy_from_slice(&sport.to_be_bytes());
    udp[2..4].copy_from_slice(&9u16.to_be_bytes());
    udp[4..6].copy_from_slice(&((len - 34) as u16).to_be_bytes());
    udp[6..8].copy_from_slice(&[0, 0]);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        fail("usage: udpgen IFACE RATE_PPS COUNT [FRAME_BYTES] [DST_MAC] [FLOWS] [syn]");
    }
    let iface = &args[1];
    let rate: f64 = args[2].parse().unwrap_or_else(|_| fail("RATE_PPS must be a number"));
    let count: u64 = args[3].parse().unwrap_or_else(|_| fail("COUNT must be a number"));
    let size: usize = args.get(4).map_or(60, |s| s.parse().unwrap_or_else(|_| fail("FRAME_BYTES")));
    if !(42..=1514).contains(&size) || rate <= 0.0 {
        fail("FRAME_BYTES must be 42 to 1514, RATE_PPS positive");
    }
    let dst = mac(args.get(5).map_or("02:00:00:00:00:02", String::as_str));
    let flows: u64 = args.get(6).map_or(0, |s| s.parse().unwrap_or_else(|_| fail("FLOWS")));
    let syn = args.get(7).is_some_and(|s| s == "syn");
    if syn && size < 54 {
        fail("a SYN needs FRAME_BYTES of at least 54");
    }
    let name = CString::new(iface.as_str()).unwrap_or_else(|_| fail("bad interface name"));
    // SAFETY: a NUL-terminated name.
    let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if ifindex == 0 {
        fail(&format!("no interface {iface}"));
    }
    // SAFETY: plain socket calls on a descriptor this function owns until exit.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) };
    if fd < 0 {
        fail("socket(AF_PACKET) failed (root or CAP_NET_RAW needed)");
    }
    let one: libc::c_int = 1;
    // SAFETY: `one` lives across the call and its size is passed.
    unsafe {
        libc::setsockopt(
            fd,
            SOL_PACKET,
            PACKET_QDISC_BYPASS,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
    // SAFETY: sockaddr_ll is plain data; zeroed is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_ifindex = ifindex as i32;
    sll.sll_halen = 6;
    sll.sll_addr[..6].copy_from_slice(&dst);
    // SAFETY: binding to a valid sockaddr_ll of the size passed.
    let rc = unsafe {
        libc::bind(
            fd,
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        fail("bind failed");
    }
    let mut frames = vec![vec![0u8; size]; BATCH];
    for f in &mut frames {
        f[0..6].copy_from_slice(&dst);
        f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x01]);
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    }
    let mut iov: Vec<libc::iovec> = frames
        .iter_mut()
        .map(|f| libc::iovec { iov_base: f.as_mut_ptr().cast(), iov_len: f.len() })
        .collect();
    // SAFETY: mmsghdr is plain data; zeroed is a valid value, filled in below.
    let mut msgs: Vec<libc::mmsghdr> = (0..BATCH).map(|_| unsafe { std::mem::zeroed() }).collect();
    for (m, v) in msgs.iter_mut().zip(iov.iter_mut()) {
        m.msg_hdr.msg_iov = v;
        m.msg_hdr.msg_iovlen = 1;
    }
    let period = 1.0 / rate;
    let start = Instant::now();
    let mut sent = 0u64;
    let mut lag = Duration::ZERO;
    while sent < count {
        let now = start.elapsed().as_secs_f64();
        let due = ((now / period) as u64 + 1).min(count);
        if due <= sent {
            let wait = (sent as f64 * period - now).max(0.0);
            if wait > 200e-6 {
                std::thread::sleep(Duration::from_secs_f64(wait - 100e-6));
            }
            continue;
        }
        lag = lag.max(Duration::from_secs_f64((now - sent as f64 * period).max(0.0)));
        let n = ((due - sent) as usize).min(BATCH);
        for (i, f) in frames.iter_mut().take(n).enumerate() {
            let k = sent + i as u64;
            fill(f, if flows == 0 { k } else { k % flows }, syn);
        }
        // SAFETY: `msgs[..n]` point at `iov[..n]`, which point at live frames.
        let rc = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), n as libc::c_uint, 0) };
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ENOBUFS) || e.kind() == std::io::ErrorKind::WouldBlock
            {
                continue;
            }
            fail(&format!("sendmmsg: {e}"));
        }
        sent += rc as u64;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "sent {sent} frames of {size} bytes in {secs:.3} s: {:.0} pps (asked {rate:.0}); \
         largest lag behind schedule {:.3} ms",
        sent as f64 / secs,
        lag.as_secs_f64() * 1e3
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_packet_is_a_new_flow_with_a_valid_header() {
        let mut seen = std::collections::HashSet::new();
        let mut f = vec![0u8; 60];
        for k in (0..5_000_000u64).step_by(997).chain([(1 << 22) - 1, 1 << 22, 5 << 22]) {
            fill(&mut f, k, false);
            assert_eq!(checksum(&f[14..34]), 0, "the header sums to 0xffff");
            assert!(seen.insert((f[26..30].to_vec(), f[34..36].to_vec())), "{k}");
        }
    }

    #[test]
    fn syns_are_valid_tcp_segments() {
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        fill(&mut f, 12345, true);
        let meta = rampart_wire::PacketMeta::parse(rampart_wire::LinkType::Ethernet, &f[..]);
        assert_eq!((meta.proto, meta.dport, meta.tcp.flags as u8), (6, 9, 0x02));
        let c = meta.checksums(&f);
        assert_eq!(c.l4, rampart_wire::check::Checksum::Good);
    }
}
