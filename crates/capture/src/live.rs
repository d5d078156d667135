//! Live capture: an AF_PACKET socket with a TPACKET_V3 memory-mapped ring.
//!
//! The kernel fills fixed-size blocks of the ring with packets and hands a block over when it
//! is full or after [`BLOCK_TIMEOUT_MS`]; userspace reads the block's packets in place (no
//! copy, no system call per packet) and gives the block back. The snap length is enforced in
//! the kernel by the attached classic-BPF program's return value, as libpcap does: either the
//! caller's compiled filter, or one that accepts everything.
//!
//! # The ring
//! [`LiveConfig::buffer_bytes`] sizes the ring as tcpdump's `-B` sizes libpcap's: by default
//! [`DEFAULT_BUFFER`] (256 MiB), which holds about 1.5 s of 64-byte packets at 1.1 Mpps (each
//! takes 160 bytes of ring with its headers) or about 0.2 s of 1,500-byte packets at 10 Gbit/s.
//! The ring is cut into blocks of 1 MiB (an eighth of a ring smaller than 8 MiB, at least
//! 64 KiB); a packet longer than a block is cut to fit. When the kernel cannot allocate the
//! ring, it is halved until it can (as libpcap shrinks its ring), down to two blocks;
//! [`LiveStats::ring_bytes`] says what was granted.
//!
//! # Loss and the interface
//! [`LiveMonitor`] counts what the kernel dropped (PACKET_STATISTICS) apart from what rampart
//! took from the ring and what it could not use, so that nothing is lost silently. A link that
//! goes down (ENETDOWN on the socket) and comes back up is followed: the kernel stops and
//! restarts delivery on the same socket. An interface that goes away (deleted, or moved to
//! another network namespace: the socket's bound interface index becomes -1) ends the capture
//! with [`crate::ErrorKind::InterfaceGone`], or, with [`LiveConfig::wait_for_interface`], the
//! capture waits for an interface of that name and goes on with it.
//!
//! The `unsafe` here is confined to the socket calls, the mapping, and reading the ring's block
//! and packet headers (fields the kernel writes, read with the documented acquire ordering on
//! the block status word).
#![allow(unsafe_code)]

use std::io;
use std::net::IpAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rampart_wire::LinkType;

use crate::Timestamp;
use crate::error::ErrorKind;
use crate::packet_socket::{
    self as ps, PACKET_RX_RING, PACKET_VERSION, SOL_PACKET, TP_STATUS_KERNEL, TP_STATUS_USER,
    setsockopt, sys,
};

/// The ring size when none is given: 256 MiB (see the module docs).
pub const DEFAULT_BUFFER: u64 = 256 << 20;
/// The smallest ring accepted: 256 KiB (four blocks of 64 KiB).
pub const MIN_BUFFER: u64 = 256 << 10;
/// Milliseconds after which the kernel hands over a block that is not full: the longest a
/// packet waits in the ring on a quiet link.
pub const BLOCK_TIMEOUT_MS: u32 = 50;

/// Options of a live capture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveConfig {
    /// Bytes kept of each packet.
    pub snaplen: u32,
    /// Put the interface in promiscuous mode while capturing.
    pub promisc: bool,
    /// A classic-BPF program (code, jt, jf, k) run in the kernel; its non-zero return value is
    /// the snap length. `None` keeps every packet, cut to `snaplen`.
    pub program: Option<Vec<(u16, u8, u8, u32)>>,
    /// Bytes of ring, as tcpdump's `-B` (at least [`MIN_BUFFER`]).
    pub buffer_bytes: u64,
    /// When the interface does not exist or goes away, wait for one of that name and capture
    /// on it, instead of failing.
    pub wait_for_interface: bool,
}

impl Default for LiveConfig {
    fn default() -> Self {
        Self {
            snaplen: 262_144,
            promisc: false,
            program: None,
            buffer_bytes: DEFAULT_BUFFER,
            wait_for_interface: false,
        }
    }
}

/// What a live capture's interface is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkState {
    /// Packets can arrive.
    Up,
    /// The link is down (administratively): the kernel delivers nothing until it is up again.
    Down,
    /// The interface is gone; with [`LiveConfig::wait_for_interface`] the capture waits for
    /// one of that name.
    Gone,
}

/// A live capture's counters, as [`LiveMonitor::stats`] reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveStats {
    /// Packets rampart took from the ring (on a loopback interface, each packet once, not its
    /// outgoing copy as well).
    pub received: u64,
    /// Packets the kernel dropped because the ring was full (PACKET_STATISTICS `tp_drops`),
    /// brought up to date about once a second.
    pub kernel_dropped: u64,
    /// Packets rampart took from the ring and could not use (a record that does not fit its
    /// block).
    pub rampart_dropped: u64,
    /// Times the ring was full and the kernel froze it (`tp_freeze_q_cnt`).
    pub freezes: u64,
    /// The ring's size in bytes as the kernel granted it (0 while waiting for the interface).
    pub ring_bytes: u64,
    /// The interface's state.
    pub state: LinkState,
    /// Times the interface went away.
    pub lost: u64,
    /// Times an interface of that name came back and the capture went on with it.
    pub found: u64,
}

/// A live capture's counters and interface state, updated by the capture as it reads and
/// readable from any thread ([`crate::Capture::live_monitor`]).
#[derive(Debug)]
pub struct LiveMonitor {
    received: AtomicU64,
    kernel_dropped: AtomicU64,
    rampart_dropped: AtomicU64,
    freezes: AtomicU64,
    ring_bytes: AtomicU64,
    state: AtomicU8,
    lost: AtomicU64,
    found: AtomicU64,
}

impl LiveMonitor {
    fn new() -> Self {
        Self {
            received: AtomicU64::new(0),
            kernel_dropped: AtomicU64::new(0),
            rampart_dropped: AtomicU64::new(0),
            freezes: AtomicU64::new(0),
            ring_bytes: AtomicU64::new(0),
            state: AtomicU8::new(0),
            lost: AtomicU64::new(0),
            found: AtomicU64::new(0),
        }
    }

    /// The counters now.
    pub fn stats(&self) -> LiveStats {
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        LiveStats {
            received: r(&self.received),
            kernel_dropped: r(&self.kernel_dropped),
            rampart_dropped: r(&self.rampart_dropped),
            freezes: r(&self.freezes),
            ring_bytes: r(&self.ring_bytes),
            state: match self.state.load(Ordering::Relaxed) {
                0 => LinkState::Up,
                1 => LinkState::Down,
                _ => LinkState::Gone,
            },
            lost: r(&self.lost),
            found: r(&self.found),
        }
    }

    fn set_state(&self, s: LinkState) {
        let v = match s {
            LinkState::Up => 0,
            LinkState::Down => 1,
            LinkState::Gone => 2,
        };
        self.state.store(v, Ordering::Relaxed);
    }
}

/// Why a live capture could not start.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// No interface of that name.
    #[error("interface '{0}' does not exist")]
    NoInterface(String),
    /// The ring asked for is more than half the machine's memory (the kernel's ring memory
    /// cannot be swapped out, and allocating it could wake the OOM killer).
    #[error(
        "a ring of {asked} MiB is more than half the memory ({total} MiB); ask for less with -B"
    )]
    RingTooLarge {
        /// MiB asked for.
        asked: u64,
        /// MiB of memory.
        total: u64,
    },
    /// The process lacks the capability to open packet sockets.
    #[error(
        "capturing on '{0}' needs CAP_NET_RAW (run as root, or `setcap cap_net_raw+ep` on the binary)"
    )]
    Permission(String),
    /// Another system call failed.
    #[error("capturing on '{iface}': {what}: {err}")]
    Sys {
        /// The interface.
        iface: String,
        /// The step that failed.
        what: &'static str,
        /// The error.
        err: io::Error,
    },
    /// libxdp, which AF_XDP ([`crate::xdp`]) needs at run time, could not be loaded.
    #[error(
        "AF_XDP needs libxdp at run time and it could not be loaded ({0}); install Debian's \
         libxdp1 (apt-get install libxdp1)"
    )]
    NoLibxdp(String),
    /// An AF_XDP set-up step failed on an interface.
    #[error("AF_XDP on '{iface}': {what}: {err}{detail}")]
    Xdp {
        /// The interface.
        iface: String,
        /// The step that failed.
        what: String,
        /// The error.
        err: io::Error,
        /// What the error most likely means and what libxdp said (empty, or starting with
        /// "; " or " (").
        detail: String,
    },
    /// AF_XDP options that cannot work on an interface.
    #[error("AF_XDP on '{iface}': {why}")]
    XdpConfig {
        /// The interface.
        iface: String,
        /// Why.
        why: String,
    },
}

/// The link type of packets captured on `iface` (from `/sys/class/net/IFACE/type`).
pub fn interface_link(iface: &str) -> Option<LinkType> {
    let t = std::fs::read_to_string(format!("/sys/class/net/{iface}/type")).ok()?;
    Some(match t.trim().parse::<u32>().ok()? {
        // ARPHRD_NONE, ARPHRD_RAWIP: the IP header comes first.
        65534 | 519 => LinkType::Raw,
        // Ethernet, loopback and everything else that AF_PACKET shows with a MAC header.
        _ => LinkType::Ethernet,
    })
}

/// Whether `iface` is a loopback interface (every address on it is the host's own).
pub fn is_loopback(iface: &str) -> bool {
    nix::ifaddrs::getifaddrs().is_ok_and(|mut a| {
        a.any(|i| {
            i.interface_name == iface
                && i.flags.contains(nix::net::if_::InterfaceFlags::IFF_LOOPBACK)
        })
    })
}

/// Every address configured on `iface`, IPv4 and IPv6.
pub fn interface_addresses(iface: &str) -> Vec<IpAddr> {
    let Ok(addrs) = nix::ifaddrs::getifaddrs() else { return Vec::new() };
    addrs
        .filter(|a| a.interface_name == iface)
        .filter_map(|a| {
            let sa = a.address?;
            if let Some(v4) = sa.as_sockaddr_in() {
                Some(IpAddr::V4(v4.ip()))
            } else {
                sa.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip()))
            }
        })
        .collect()
}

const TPACKET_V3: libc::c_int = 2;
const PACKET_OUTGOING: u8 = 4;
const ARPHRD_LOOPBACK: u32 = 772;

/// Blocks are this large when the ring holds at least eight of them.
const BLOCK_SIZE: usize = 1 << 20;
/// The smallest block (a ring of [`MIN_BUFFER`] holds four).
const MIN_BLOCK: usize = 64 << 10;
/// TPACKET_V3 ignores the frame size but checks it divides the block.
const FRAME_SIZE: usize = 2048;
/// How often the kernel's counters are read (the kernel resets them on each read).
const STATS_EVERY: Duration = Duration::from_secs(1);
/// How often a quiet capture checks that its interface still exists.
const CHECK_EVERY: Duration = Duration::from_millis(50);
/// `TPACKET_ALIGN(sizeof(struct tpacket3_hdr))`: where the `sockaddr_ll` follows a packet
/// header.
const SLL_OFFSET: usize = 48;

#[repr(C)]
struct TpacketReq3 {
    block_size: u32,
    block_nr: u32,
    frame_size: u32,
    frame_nr: u32,
    retire_blk_tov: u32,
    sizeof_priv: u32,
    feature_req_word: u32,
}

#[repr(C)]
#[derive(Default)]
struct TpacketStatsV3 {
    packets: u32,
    drops: u32,
    freeze_q_cnt: u32,
}

/// One packet of the current block, as offsets into it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RingFrame {
    pub(crate) ts: Timestamp,
    pub(crate) start: usize,
    pub(crate) caplen: u32,
    pub(crate) origlen: u32,
}

/// The socket and its mapped ring.
pub(crate) struct Ring {
    fd: OwnedFd,
    map: *mut u8,
    map_len: usize,
    block_size: usize,
    block_nr: usize,
    block: usize,
    /// The block being read: packets left, offset of the next one.
    held: Option<(u32, usize)>,
    loopback: bool,
    ifindex: i32,
    pub(crate) link: LinkType,
    /// The socket reported ENETDOWN: the link is down until it is seen up again.
    down: bool,
    /// Records that did not fit their block, not yet added to the monitor.
    unusable: u64,
}

/// The ring geometry for a ring of `bytes`: block size and number of blocks.
fn geometry(bytes: u64) -> (usize, usize) {
    let bytes = bytes.max(MIN_BUFFER);
    let block = if bytes >= 8 * BLOCK_SIZE as u64 {
        BLOCK_SIZE
    } else {
        // The largest power of two at most an eighth of the ring, at least MIN_BLOCK.
        let eighth = (bytes / 8).max(MIN_BLOCK as u64);
        (1u64 << (63 - eighth.leading_zeros())) as usize
    };
    let nr = (bytes / block as u64).clamp(2, u64::from(u32::MAX / 2)) as usize;
    (block, nr)
}

// SAFETY: the ring is owned by one Capture and only touched through &mut self.
unsafe impl Send for Ring {}

impl Ring {
    pub(crate) fn open(iface: &str, cfg: &LiveConfig) -> Result<Self, LiveError> {
        let ifindex = ps::ifindex(iface)?;
        let link = interface_link(iface).unwrap_or(LinkType::Ethernet);
        let loopback = std::fs::read_to_string(format!("/sys/class/net/{iface}/type"))
            .is_ok_and(|t| t.trim().parse() == Ok(ARPHRD_LOOPBACK));
        let fd = ps::open(iface)?;
        let program = cfg.program.clone().unwrap_or_else(|| vec![(0x06, 0, 0, cfg.snaplen)]);
        let mut insns: Vec<libc::sock_filter> = program
            .iter()
            .map(|&(code, jt, jf, k)| libc::sock_filter { code, jt, jf, k })
            .collect();
        let fprog = libc::sock_fprog { len: insns.len() as u16, filter: insns.as_mut_ptr() };
        if setsockopt(&fd, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &fprog) < 0 {
            return Err(sys(iface, "attaching the filter"));
        }
        if setsockopt(&fd, SOL_PACKET, PACKET_VERSION, &TPACKET_V3) < 0 {
            return Err(sys(iface, "PACKET_VERSION TPACKET_V3"));
        }
        if let Some(total) = memory_bytes()
            && cfg.buffer_bytes > total / 2
        {
            return Err(LiveError::RingTooLarge {
                asked: cfg.buffer_bytes >> 20,
                total: total >> 20,
            });
        }
        let (block_size, mut block_nr) = geometry(cfg.buffer_bytes);
        loop {
            let req = TpacketReq3 {
                block_size: block_size as u32,
                block_nr: block_nr as u32,
                frame_size: FRAME_SIZE as u32,
                frame_nr: (block_size / FRAME_SIZE * block_nr) as u32,
                retire_blk_tov: BLOCK_TIMEOUT_MS,
                sizeof_priv: 0,
                feature_req_word: 0,
            };
            if setsockopt(&fd, SOL_PACKET, PACKET_RX_RING, &req) == 0 {
                break;
            }
            // Too large for the memory at hand: halve it, as libpcap shrinks its ring.
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::ENOMEM) || block_nr <= 2 {
                return Err(match e.raw_os_error() {
                    Some(libc::EPERM | libc::EACCES) => LiveError::Permission(iface.to_string()),
                    _ => {
                        LiveError::Sys { iface: iface.to_string(), what: "PACKET_RX_RING", err: e }
                    }
                });
            }
            block_nr /= 2;
        }
        let map_len = block_size * block_nr;
        let map = ps::map(&fd, map_len, true, iface)?;
        let ring = Self {
            fd,
            map,
            map_len,
            block_size,
            block_nr,
            block: 0,
            held: None,
            loopback,
            ifindex,
            link,
            down: false,
            unusable: 0,
        };
        if cfg.promisc {
            ps::promiscuous(&ring.fd, ifindex, iface)?;
        }
        ps::bind_all(&ring.fd, ifindex, iface)?;
        Ok(ring)
    }

    fn block_ptr(&self, i: usize) -> *mut u8 {
        // In bounds: i < block_nr and the mapping holds block_nr blocks.
        self.map.wrapping_add(i * self.block_size)
    }

    fn status(&self, i: usize) -> &AtomicU32 {
        // SAFETY: the block status word (offset 8 of the block descriptor) is 4-aligned inside
        // the mapping, and the kernel writes it atomically.
        unsafe { AtomicU32::from_ptr(self.block_ptr(i).add(8).cast()) }
    }

    fn read_u32(&self, off: usize) -> u32 {
        // SAFETY: callers pass offsets inside the held block, which the kernel does not touch
        // while its status says it belongs to userspace.
        unsafe { std::ptr::read_unaligned(self.block_ptr(self.block).add(off).cast::<u32>()) }
    }

    /// The held block's bytes.
    pub(crate) fn block_bytes(&self) -> &[u8] {
        // SAFETY: the block is ours until `release`, and the borrow of self keeps it held.
        unsafe { std::slice::from_raw_parts(self.block_ptr(self.block), self.block_size) }
    }

    /// Fills `out` with up to `max` packets of the current block (waiting up to `timeout_ms`
    /// for one); returns with `out` empty on timeout.
    pub(crate) fn next(
        &mut self,
        max: usize,
        timeout_ms: i32,
        out: &mut Vec<RingFrame>,
    ) -> io::Result<()> {
        out.clear();
        loop {
            if let Some((left, off)) = self.held {
                if left == 0 {
                    self.status(self.block).store(TP_STATUS_KERNEL, Ordering::Release);
                    self.held = None;
                    self.block = (self.block + 1) % self.block_nr;
                    if !out.is_empty() {
                        return Ok(());
                    }
                    continue;
                }
                let mut left = left;
                let mut off = off;
                while left > 0 && out.len() < max {
                    let next = self.read_u32(off) as usize;
                    let sec = self.read_u32(off + 4);
                    let nsec = self.read_u32(off + 8);
                    let caplen = self.read_u32(off + 12);
                    let origlen = self.read_u32(off + 16);
                    let mac = (self.read_u32(off + 24) & 0xffff) as usize;
                    let pkttype = self.block_bytes().get(off + SLL_OFFSET + 10).copied();
                    // On loopback every packet shows twice, outgoing and incoming; keep one.
                    let skip = self.loopback && pkttype == Some(PACKET_OUTGOING);
                    let start = off + mac;
                    if !skip {
                        if start + caplen as usize <= self.block_size {
                            out.push(RingFrame {
                                ts: Timestamp::from_parts(u64::from(sec), nsec),
                                start,
                                caplen,
                                origlen: origlen.max(caplen),
                            });
                        } else {
                            self.unusable += 1;
                        }
                    }
                    left -= 1;
                    off = if next == 0 { off } else { off + next };
                }
                self.held = Some((left, off));
                if !out.is_empty() {
                    return Ok(());
                }
                continue;
            }
            if self.status(self.block).load(Ordering::Acquire) & TP_STATUS_USER != 0 {
                let n = self.read_u32(12);
                let first = self.read_u32(16) as usize;
                self.held = Some((n, first));
                continue;
            }
            let mut pfd = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN | libc::POLLERR,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let rc = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
            if rc < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    return Ok(());
                }
                return Err(e);
            }
            if rc == 0 {
                return Ok(());
            }
            if pfd.revents & libc::POLLERR != 0 {
                // The pending error is read (and so cleared); ENETDOWN means the link went
                // down, or the interface is going away (the caller tells which).
                return match self.socket_error() {
                    0 => Ok(()),
                    libc::ENETDOWN | libc::ENXIO | libc::ENODEV => {
                        self.down = true;
                        Ok(())
                    }
                    e => Err(io::Error::from_raw_os_error(e)),
                };
            }
            if self.status(self.block).load(Ordering::Acquire) & TP_STATUS_USER == 0 {
                return Ok(());
            }
        }
    }

    /// The socket's pending error (SO_ERROR), which reading clears.
    fn socket_error(&self) -> i32 {
        ps::socket_error(&self.fd)
    }

    /// Whether the bound interface is gone (see [`ps::unbound`]).
    fn gone(&self) -> bool {
        ps::unbound(&self.fd, self.ifindex)
    }

    /// The kernel's counters since the last read (it resets them on each read): packets
    /// dropped and ring freezes.
    fn kernel_counts(&mut self) -> (u64, u64) {
        ps::statistics::<TpacketStatsV3>(&self.fd)
            .map_or((0, 0), |st| (u64::from(st.drops), u64::from(st.freeze_q_cnt)))
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping made in `open`; no borrow of it outlives self.
        unsafe {
            libc::munmap(self.map.cast(), self.map_len);
        }
    }
}

/// The machine's memory (`MemTotal` in /proc/meminfo), if it can be read.
fn memory_bytes() -> Option<u64> {
    let m = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = m
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()?;
    Some(kib << 10)
}

/// Whether the interface `name` is administratively up.
fn is_up(name: &str) -> bool {
    nix::ifaddrs::getifaddrs().is_ok_and(|mut a| {
        a.any(|i| {
            i.interface_name == name && i.flags.contains(nix::net::if_::InterfaceFlags::IFF_UP)
        })
    })
}

/// Whether an interface named `name` exists in this network namespace.
fn exists(name: &str) -> bool {
    nix::net::if_::if_nametoindex(name).is_ok()
}

/// A live capture: the ring (none while waiting for the interface), its configuration for
/// opening it again, and the counters.
pub(crate) struct Live {
    name: String,
    cfg: LiveConfig,
    ring: Option<Ring>,
    link: LinkType,
    monitor: Arc<LiveMonitor>,
    last_stats: Instant,
    last_check: Instant,
}

impl Live {
    pub(crate) fn open(name: &str, cfg: &LiveConfig) -> Result<Self, LiveError> {
        let monitor = Arc::new(LiveMonitor::new());
        let ring = if cfg.wait_for_interface && !exists(name) {
            // Waiting for the interface: say now if capturing could never work.
            // SAFETY: plain socket call; the descriptor is closed right away.
            let fd =
                unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
            if fd < 0 {
                return Err(sys(name, "socket(AF_PACKET)"));
            }
            // SAFETY: a descriptor we own.
            drop(unsafe { OwnedFd::from_raw_fd(fd) });
            monitor.set_state(LinkState::Gone);
            None
        } else {
            let ring = Ring::open(name, cfg)?;
            monitor.ring_bytes.store(ring.map_len as u64, Ordering::Relaxed);
            Some(ring)
        };
        let link = ring.as_ref().map_or(LinkType::Ethernet, |r| r.link);
        let now = Instant::now();
        Ok(Self {
            name: name.to_string(),
            cfg: cfg.clone(),
            ring,
            link,
            monitor,
            last_stats: now,
            last_check: now,
        })
    }

    pub(crate) fn link(&self) -> LinkType {
        self.link
    }

    pub(crate) fn monitor(&self) -> Arc<LiveMonitor> {
        Arc::clone(&self.monitor)
    }

    /// The held block's bytes (nothing while waiting for the interface).
    pub(crate) fn block_bytes(&self) -> &[u8] {
        self.ring.as_ref().map_or(&[], |r| r.block_bytes())
    }

    /// Reads the kernel's counters into the monitor now, and returns them.
    pub(crate) fn refresh(&mut self) -> LiveStats {
        if let Some(r) = &mut self.ring {
            let (dropped, freezes) = r.kernel_counts();
            let m = &self.monitor;
            m.kernel_dropped.fetch_add(dropped, Ordering::Relaxed);
            m.freezes.fetch_add(freezes, Ordering::Relaxed);
            m.rampart_dropped.fetch_add(std::mem::take(&mut r.unusable), Ordering::Relaxed);
        }
        self.last_stats = Instant::now();
        self.monitor.stats()
    }

    /// Up to `max` packets (waiting up to `timeout_ms` for one), or none: on a quiet link,
    /// while the link is down, or while waiting for the interface to come back.
    pub(crate) fn next(
        &mut self,
        max: usize,
        timeout_ms: i32,
        out: &mut Vec<RingFrame>,
    ) -> Result<(), ErrorKind> {
        out.clear();
        let Some(ring) = &mut self.ring else {
            return self.wait(timeout_ms);
        };
        ring.next(max, timeout_ms, out).map_err(ErrorKind::Live)?;
        let m = &self.monitor;
        if !out.is_empty() {
            m.received.fetch_add(out.len() as u64, Ordering::Relaxed);
            if ring.down {
                ring.down = false;
                m.set_state(LinkState::Up);
            }
        } else if ring.down || self.last_check.elapsed() >= CHECK_EVERY {
            self.last_check = Instant::now();
            if ring.gone() {
                self.refresh();
                self.ring = None;
                self.monitor.set_state(LinkState::Gone);
                self.monitor.lost.fetch_add(1, Ordering::Relaxed);
                if !self.cfg.wait_for_interface {
                    return Err(ErrorKind::InterfaceGone);
                }
                return Ok(());
            }
            if ring.down {
                let up = is_up(&self.name);
                m.set_state(if up { LinkState::Up } else { LinkState::Down });
                ring.down = !up;
            }
        }
        if self.last_stats.elapsed() >= STATS_EVERY {
            self.refresh();
        }
        Ok(())
    }

    /// Waiting for the interface: opens it again once one of that name exists.
    fn wait(&mut self, timeout_ms: i32) -> Result<(), ErrorKind> {
        if exists(&self.name)
            && let Ok(ring) = Ring::open(&self.name, &self.cfg)
        {
            self.link = ring.link;
            self.monitor.ring_bytes.store(ring.map_len as u64, Ordering::Relaxed);
            self.monitor.set_state(LinkState::Up);
            self.monitor.found.fetch_add(1, Ordering::Relaxed);
            self.ring = Some(ring);
            self.last_stats = Instant::now();
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(timeout_ms.max(1) as u64));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_read_from_meminfo() {
        assert!(memory_bytes().is_some_and(|m| m >= 64 << 20), "{:?}", memory_bytes());
    }

    #[test]
    fn ring_geometry() {
        assert_eq!(geometry(DEFAULT_BUFFER), (1 << 20, 256));
        assert_eq!(geometry(8 << 20), (1 << 20, 8));
        assert_eq!(geometry(4 << 20), (512 << 10, 8));
        assert_eq!(geometry(MIN_BUFFER), (64 << 10, 4));
        // Below the minimum, the minimum.
        assert_eq!(geometry(1), (64 << 10, 4));
        // Not a multiple of the block: what fits.
        assert_eq!(geometry((100 << 20) + 5), (1 << 20, 100));
        for kib in [256u64, 300, 1000, 4096, 65_536, 1 << 20] {
            let (b, n) = geometry(kib << 10);
            assert!(b.is_power_of_two() && b >= MIN_BLOCK && n >= 2, "{kib} KiB: {b} x {n}");
            assert!((b * n) as u64 <= (kib << 10).max(MIN_BUFFER));
        }
    }
}
