//! Live capture: an AF_PACKET socket with a TPACKET_V3 memory-mapped ring.
//!
//! The kernel fills fixed-size blocks of the ring with packets and hands a block over when it
//! is full or after a short timeout; userspace reads the block's packets in place (no copy, no
//! system call per packet) and gives the block back. The snap length is enforced in the kernel
//! by the attached classic-BPF program's return value, as libpcap does: either the caller's
//! compiled filter, or one that accepts everything.
//!
//! The `unsafe` here is confined to the socket calls, the mapping, and reading the ring's block
//! and packet headers (fields the kernel writes, read with the documented acquire ordering on
//! the block status word).
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::net::IpAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

use rampart_wire::LinkType;

use crate::Timestamp;

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
}

impl Default for LiveConfig {
    fn default() -> Self {
        Self { snaplen: 262_144, promisc: false, program: None }
    }
}

/// Why a live capture could not start.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// No interface of that name.
    #[error("interface '{0}' does not exist")]
    NoInterface(String),
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

const SOL_PACKET: libc::c_int = 263;
const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
const PACKET_RX_RING: libc::c_int = 5;
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_VERSION: libc::c_int = 10;
const TPACKET_V3: libc::c_int = 2;
const PACKET_MR_PROMISC: libc::c_ushort = 1;
const PACKET_OUTGOING: u8 = 4;
const ETH_P_ALL: u16 = 0x0003;
const TP_STATUS_USER: u32 = 1;
const TP_STATUS_KERNEL: u32 = 0;
const ARPHRD_LOOPBACK: u32 = 772;

const BLOCK_SIZE: usize = 1 << 20;
const BLOCK_NR: usize = 16;
const FRAME_SIZE: usize = 2048;
/// Milliseconds after which the kernel hands over a block that is not full.
const BLOCK_TIMEOUT_MS: u32 = 50;
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
    block: usize,
    /// The block being read: packets left, offset of the next one.
    held: Option<(u32, usize)>,
    loopback: bool,
    pub(crate) link: LinkType,
    received: u64,
    dropped: u64,
}

// SAFETY: the ring is owned by one Capture and only touched through &mut self.
unsafe impl Send for Ring {}

fn sys(iface: &str, what: &'static str) -> LiveError {
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EPERM | libc::EACCES) => LiveError::Permission(iface.to_string()),
        _ => LiveError::Sys { iface: iface.to_string(), what, err },
    }
}

fn setsockopt<T>(fd: &OwnedFd, level: libc::c_int, name: libc::c_int, v: &T) -> libc::c_int {
    // SAFETY: `v` points to a live value of the size passed.
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (v as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    }
}

impl Ring {
    pub(crate) fn open(iface: &str, cfg: &LiveConfig) -> Result<Self, LiveError> {
        let cname = CString::new(iface).map_err(|_| LiveError::NoInterface(iface.to_string()))?;
        // SAFETY: a NUL-terminated name.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if ifindex == 0 {
            return Err(LiveError::NoInterface(iface.to_string()));
        }
        let link = interface_link(iface).unwrap_or(LinkType::Ethernet);
        let loopback = std::fs::read_to_string(format!("/sys/class/net/{iface}/type"))
            .is_ok_and(|t| t.trim().parse() == Ok(ARPHRD_LOOPBACK));
        // Protocol 0: no packets arrive until the bind below, so none from other interfaces.
        // SAFETY: plain socket call.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(sys(iface, "socket(AF_PACKET)"));
        }
        // SAFETY: `raw` is a new descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
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
        let req = TpacketReq3 {
            block_size: BLOCK_SIZE as u32,
            block_nr: BLOCK_NR as u32,
            frame_size: FRAME_SIZE as u32,
            frame_nr: (BLOCK_SIZE * BLOCK_NR / FRAME_SIZE) as u32,
            retire_blk_tov: BLOCK_TIMEOUT_MS,
            sizeof_priv: 0,
            feature_req_word: 0,
        };
        if setsockopt(&fd, SOL_PACKET, PACKET_RX_RING, &req) < 0 {
            return Err(sys(iface, "PACKET_RX_RING"));
        }
        let map_len = BLOCK_SIZE * BLOCK_NR;
        // SAFETY: mapping the ring the kernel just allocated for this socket.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_LOCKED,
                fd.as_raw_fd(),
                0,
            )
        };
        let map = if map == libc::MAP_FAILED {
            // MAP_LOCKED can fail under a low RLIMIT_MEMLOCK; the ring works unlocked too.
            // SAFETY: as above.
            let m = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    map_len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    fd.as_raw_fd(),
                    0,
                )
            };
            if m == libc::MAP_FAILED {
                return Err(sys(iface, "mapping the ring"));
            }
            m
        } else {
            map
        };
        let ring = Self {
            fd,
            map: map.cast(),
            map_len,
            block: 0,
            held: None,
            loopback,
            link,
            received: 0,
            dropped: 0,
        };
        if cfg.promisc {
            // SAFETY: packet_mreq is plain data; zeroed is a valid value.
            let mut mreq: libc::packet_mreq = unsafe { std::mem::zeroed() };
            mreq.mr_ifindex = ifindex as libc::c_int;
            mreq.mr_type = PACKET_MR_PROMISC;
            if setsockopt(&ring.fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mreq) < 0 {
                return Err(sys(iface, "PACKET_ADD_MEMBERSHIP promiscuous"));
            }
        }
        // SAFETY: sockaddr_ll is plain data; zeroed is a valid value.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = ETH_P_ALL.to_be();
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: binding to a valid sockaddr_ll of the size passed.
        let rc = unsafe {
            libc::bind(
                ring.fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(sys(iface, "bind"));
        }
        Ok(ring)
    }

    fn block_ptr(&self, i: usize) -> *mut u8 {
        // In bounds: i < BLOCK_NR and the mapping holds BLOCK_NR blocks.
        self.map.wrapping_add(i * BLOCK_SIZE)
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
        unsafe { std::slice::from_raw_parts(self.block_ptr(self.block), BLOCK_SIZE) }
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
                    self.block = (self.block + 1) % BLOCK_NR;
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
                    if !skip && start + caplen as usize <= BLOCK_SIZE {
                        out.push(RingFrame {
                            ts: Timestamp::from_parts(u64::from(sec), nsec),
                            start,
                            caplen,
                            origlen,
                        });
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
            if self.status(self.block).load(Ordering::Acquire) & TP_STATUS_USER == 0 {
                return Ok(());
            }
        }
    }

    /// Packets received and dropped by the kernel so far (the kernel resets its counters on
    /// each read, so they are summed here).
    pub(crate) fn stats(&mut self) -> (u64, u64) {
        let mut st = TpacketStatsV3::default();
        let mut len = std::mem::size_of::<TpacketStatsV3>() as libc::socklen_t;
        // SAFETY: `st` has room for `len` bytes.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                SOL_PACKET,
                PACKET_STATISTICS,
                (&mut st as *mut TpacketStatsV3).cast(),
                &mut len,
            )
        };
        if rc == 0 {
            self.received += u64::from(st.packets);
            self.dropped += u64::from(st.drops);
        }
        (self.received, self.dropped)
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
