//! Inline ports over AF_PACKET: two interfaces bridged through userspace, every frame
//! received on one either sent out of the other or dropped, by the caller's decision.
//!
//! # How a frame travels
//! Each port is one AF_PACKET socket bound to its interface (promiscuous, every EtherType)
//! with a TPACKET_V2 receive ring: one fixed-size slot per frame, handed over as soon as it is
//! written, so a frame waits for no block to fill (TPACKET_V3's blocks would add up to their
//! timeout to every packet's latency on a quiet link; Suricata's IPS mode uses V2 for the same
//! reason). [`PacketPair::exchange`] takes the waiting frames of both rings, lets the caller
//! decide on them in place (nothing is copied to decide), copies the accepted ones into the
//! other port's transmit ring and has the kernel send them with one `send` per direction, then
//! gives the slots back. The kernel attaches a transmit slot's bytes to its socket buffer by
//! reference and frees the slot when the buffer is freed, so a frame costs one copy in each
//! ring and no message header (with `sendmmsg`, the fallback when the kernel refuses a
//! transmit ring, each frame is copied again into a new buffer: a SYN flood of 200 kpps
//! through the bridge left an established transfer 0.30 of its throughput that way, 0.60
//! through the ring; BENCHMARKS.md).
//!
//! Transmission uses `PACKET_QDISC_BYPASS` (straight to the driver, as a bridge does not
//! queue) and the receive sockets `PACKET_IGNORE_OUTGOING`, so the bridge never sees its own
//! output. A frame that finds its transmit slot still in flight waits briefly (the ring is
//! kicked meanwhile), then is counted as dropped ([`PairStats::tx_dropped`]); so is one the
//! driver keeps refusing with `sendmmsg`. It is never waited on for long.
//!
//! # What the kernel hands over
//! - **VLAN tags** the driver stripped into the ring's metadata are put back before the frame
//!   is decided or sent, so the frame leaves as it came.
//! - **Checksums not yet computed** (`TP_STATUS_CSUMNOTREADY`: frames from a local stack over a
//!   veth with checksum offload) are completed in place, TCP and UDP over IPv4 and IPv6, as the
//!   device that would have sent them does.
//! - **Frames larger than a slot** (merged by receive offload, GRO or LRO, or sent with
//!   segmentation offload over a veth) cannot be forwarded whole: they are counted
//!   ([`PairStats::oversize`]) and dropped. Turn those offloads off on the bridged interfaces
//!   (`ethtool -K IF gro off lro off`) and, on veth peers, segmentation offload on the
//!   senders. Slots are sized from the interfaces' MTU.
//!
//! # Workers
//! With [`PairConfig::fanout`], each port's socket joins the AF_PACKET fanout group of that id
//! on its interface (`PACKET_FANOUT_HASH`): the kernel spreads frames over the group's members
//! by its symmetric flow hash, so both directions of a flow reach the member of the same rank
//! in the two groups. Open one pair per worker, in worker order.
//!
//! The `unsafe` here is confined to the socket calls, the ring mapping and reading and writing
//! slot headers (with the documented acquire/release ordering on the status word).
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

use rampart_wire::check::{finish, pseudo_header, sum};
use rampart_wire::{Family, LinkType, PacketMeta, proto};

use crate::live::LiveError;
use crate::packet_socket::{
    self as ps, PACKET_RX_RING, PACKET_VERSION, SOL_PACKET, TP_STATUS_KERNEL, TP_STATUS_USER,
    setsockopt, sys,
};
use crate::{Frame, Timestamp};

const PACKET_FANOUT: libc::c_int = 18;
const PACKET_TX_RING: libc::c_int = 13;
const PACKET_LOSS: libc::c_int = 14;
/// Transmit slot states (`tp_status` of a TX ring slot).
const TP_STATUS_AVAILABLE: u32 = 0;
const TP_STATUS_SEND_REQUEST: u32 = 1;
const TP_STATUS_WRONG_FORMAT: u32 = 4;
/// Where a frame starts in a TPACKET_V2 transmit slot: `TPACKET2_HDRLEN - sizeof(sockaddr_ll)`.
const TX_DATA: usize = 32;
/// The transmit ring per port, at most (it holds frames until the receiver of each is done
/// with it: the kernel sends a slot's bytes by reference).
const TX_RING_MAX: usize = 32 << 20;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const TPACKET_V2: libc::c_int = 1;
const PACKET_FANOUT_HASH: u32 = 0;
const ARPHRD_ETHER: u32 = 1;

const TP_STATUS_CSUMNOTREADY: u32 = 1 << 3;
const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;

/// Bytes before the frame in a slot: `TPACKET_ALIGN(sizeof(tpacket2_hdr) + sockaddr_ll)`
/// plus the room the kernel leaves so the network header is aligned.
const SLOT_HEADROOM: usize = 96;
/// Room for two VLAN tags past the MTU and the Ethernet header.
const LINK_ROOM: usize = 14 + 8;
/// How often a refused transmission is retried before the frame counts as dropped.
const TX_RETRIES: u32 = 64;

/// The ring size per port when none is given: 64 MiB (32,768 slots of 2 KiB for a 1,500-byte
/// MTU: about 30 ms at 1 Mpps).
pub const DEFAULT_PORT_BUFFER: u64 = 64 << 20;

/// Options of an inline pair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairConfig {
    /// Bytes of receive ring per port (rounded down to whole blocks; at least one block).
    pub ring_bytes: u64,
    /// Fanout group ids for workers (see the module docs): port 0's sockets join group
    /// `id`, port 1's group `id + 1` (a group spans one interface); `None` for one worker.
    pub fanout: Option<u16>,
    /// The longest frame the slots must hold (Ethernet header and tags included); `None`:
    /// from the larger MTU of the two interfaces.
    pub max_frame: Option<u32>,
    /// The `interface` number port 0's frames carry (port 1's is the next one), so that
    /// several pairs feeding one data plane number their ports apart.
    pub first_interface: u32,
    /// Send through a transmit ring (the default; see [`PacketPair`]), or with `sendmmsg`
    /// (also what happens when the kernel refuses the ring).
    pub tx_ring: bool,
}

impl Default for PairConfig {
    fn default() -> Self {
        Self {
            ring_bytes: DEFAULT_PORT_BUFFER,
            fanout: None,
            max_frame: None,
            first_interface: 0,
            tx_ring: true,
        }
    }
}

/// Counters of an inline pair, per port (index 0 and 1 as the ports were given).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PairStats {
    /// Frames taken from the port's ring.
    pub received: [u64; 2],
    /// Frames sent out of the port (forwarded from the other one, or injected).
    pub sent: [u64; 2],
    /// Frames to send out of the port that the driver kept refusing, or that failed.
    pub tx_dropped: [u64; 2],
    /// Frames dropped by the kernel because the port's ring was full (`PACKET_STATISTICS`).
    pub kernel_dropped: [u64; 2],
    /// Frames received on the port too large for a slot (see the module docs), dropped.
    pub oversize: [u64; 2],
    /// Checksums completed on frames received on the port.
    pub checksums_completed: [u64; 2],
    /// AF_XDP: the frames the port's fill ring is kept at (it deepens when traffic needs
    /// it; see [`crate::xdp`]'s "Buffers"); 0 for AF_PACKET.
    pub fill_depth: [u32; 2],
}

/// One bridged interface: its socket, receive ring and transmit ring.
struct Port {
    name: String,
    fd: OwnedFd,
    map: *mut u8,
    map_len: usize,
    slot_size: usize,
    slots: usize,
    /// The next slot the kernel fills after the ones taken.
    next: usize,
    ifindex: i32,
    /// The transmit ring (mapped after the receive ring), if the kernel gave one; else
    /// frames go out by `sendmmsg`.
    tx: Option<TxRing>,
}

/// A TPACKET_V2 transmit ring: frames are copied into slots marked for sending, and one
/// `send` per batch has the kernel transmit them all. The kernel attaches a slot's bytes to
/// the socket buffer by reference (no second copy, no message header per frame) and marks the
/// slot available again once the buffer is freed.
struct TxRing {
    base: *mut u8,
    slot_size: usize,
    slots: usize,
    /// The next slot to fill (a cell: frames are sent while the receive slots they come
    /// from are still borrowed from the pair).
    next: std::cell::Cell<usize>,
}

// SAFETY: the rings are owned by one pair, used by one thread at a time (the receive ring
// through &mut self, the transmit ring's position through a Cell, which is not Sync).
unsafe impl Send for Port {}

/// The MTU of `iface`, from sysfs.
pub fn interface_mtu(iface: &str) -> Option<u32> {
    std::fs::read_to_string(format!("/sys/class/net/{iface}/mtu")).ok()?.trim().parse().ok()
}

/// The slot size for frames up to `max_frame` bytes: a power of two (so slots tile blocks).
fn slot_size(max_frame: u32) -> usize {
    (SLOT_HEADROOM + max_frame as usize).next_power_of_two().max(2048)
}

/// Block size and count for `ring_bytes` of slots of `slot` bytes.
fn geometry(ring_bytes: u64, slot: usize) -> (usize, usize) {
    let block = slot.max(1 << 16);
    let nr = (ring_bytes / block as u64).clamp(1, u64::from(u32::MAX / 2)) as usize;
    (block, nr)
}

#[repr(C)]
struct TpacketReq {
    block_size: u32,
    block_nr: u32,
    frame_size: u32,
    frame_nr: u32,
}

#[repr(C)]
#[derive(Default)]
struct TpacketStats {
    packets: u32,
    drops: u32,
}

impl Port {
    fn open(iface: &str, cfg: &PairConfig, slot: usize) -> Result<Self, LiveError> {
        let ifindex = ps::ifindex(iface)?;
        let kind = std::fs::read_to_string(format!("/sys/class/net/{iface}/type"))
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok());
        if kind != Some(ARPHRD_ETHER) {
            return Err(LiveError::Sys {
                iface: iface.to_string(),
                what: "an inline port must be an Ethernet interface",
                err: io::Error::from(io::ErrorKind::Unsupported),
            });
        }
        let fd = ps::open(iface)?;
        if setsockopt(&fd, SOL_PACKET, PACKET_VERSION, &TPACKET_V2) < 0 {
            return Err(sys(iface, "PACKET_VERSION TPACKET_V2"));
        }
        let one: libc::c_int = 1;
        if setsockopt(&fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one) < 0 {
            return Err(sys(iface, "PACKET_QDISC_BYPASS"));
        }
        if setsockopt(&fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one) < 0 {
            return Err(sys(iface, "PACKET_IGNORE_OUTGOING"));
        }
        // A deep send buffer so a batch is never refused for socket memory (forced when the
        // limit allows, else the system's maximum).
        let sndbuf: libc::c_int = 8 << 20;
        if setsockopt(&fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &sndbuf) < 0 {
            setsockopt(&fd, libc::SOL_SOCKET, libc::SO_SNDBUF, &sndbuf);
        }
        // Frames of the transmit ring the kernel cannot parse are skipped rather than stopping
        // the ring (settable only before any ring exists).
        let loss = setsockopt(&fd, SOL_PACKET, PACKET_LOSS, &one) == 0;
        let (block, mut block_nr) = geometry(cfg.ring_bytes, slot);
        loop {
            let req = TpacketReq {
                block_size: block as u32,
                block_nr: block_nr as u32,
                frame_size: slot as u32,
                frame_nr: (block / slot * block_nr) as u32,
            };
            if setsockopt(&fd, SOL_PACKET, PACKET_RX_RING, &req) == 0 {
                break;
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::ENOMEM) || block_nr <= 1 {
                return Err(LiveError::Sys {
                    iface: iface.to_string(),
                    what: "PACKET_RX_RING",
                    err: e,
                });
            }
            block_nr /= 2;
        }
        let rx_len = block * block_nr;
        // The transmit ring: as the receive ring, at most TX_RING_MAX. Without it (an old
        // kernel), frames go out by sendmmsg.
        let tx_blocks = block_nr.min((TX_RING_MAX / block).max(1));
        let tx_req = TpacketReq {
            block_size: block as u32,
            block_nr: tx_blocks as u32,
            frame_size: slot as u32,
            frame_nr: (block / slot * tx_blocks) as u32,
        };
        let tx_ok =
            cfg.tx_ring && loss && setsockopt(&fd, SOL_PACKET, PACKET_TX_RING, &tx_req) == 0;
        let tx_len = if tx_ok { block * tx_blocks } else { 0 };
        let map_len = rx_len + tx_len;
        let map = ps::map(&fd, map_len, false, iface)?;
        let tx = tx_ok.then(|| TxRing {
            base: map.wrapping_add(rx_len),
            slot_size: slot,
            slots: block / slot * tx_blocks,
            next: std::cell::Cell::new(0),
        });
        let port = Self {
            name: iface.to_string(),
            fd,
            map,
            map_len,
            slot_size: slot,
            slots: block / slot * block_nr,
            next: 0,
            ifindex,
            tx,
        };
        ps::promiscuous(&port.fd, ifindex, iface)?;
        ps::bind_all(&port.fd, ifindex, iface)?;
        if let Some(id) = cfg.fanout {
            let arg: u32 = u32::from(id) | (PACKET_FANOUT_HASH << 16);
            if setsockopt(&port.fd, SOL_PACKET, PACKET_FANOUT, &arg) < 0 {
                return Err(sys(iface, "PACKET_FANOUT"));
            }
        }
        Ok(port)
    }

    fn slot_ptr(&self, i: usize) -> *mut u8 {
        // In bounds: i < slots, and slots tile the mapping (a block holds whole slots).
        self.map.wrapping_add(i * self.slot_size)
    }

    fn status(&self, i: usize) -> &AtomicU32 {
        // SAFETY: the status word is the slot's first, 4-byte aligned u32; the kernel and we
        // hand the slot over through it.
        unsafe { AtomicU32::from_ptr(self.slot_ptr(i).cast()) }
    }

    fn header(&self, i: usize, off: usize) -> u32 {
        // SAFETY: `off` is within the slot's header, which is ours while the status says so.
        unsafe { std::ptr::read_unaligned(self.slot_ptr(i).add(off).cast::<u32>()) }
    }

    /// The slot's bytes (header and frame); ours while its status says user.
    fn slot(&self, i: usize) -> &[u8] {
        // SAFETY: the slot lies in the mapping; it belongs to userspace from the status
        // word's acquire until the release in `give_back`.
        unsafe { std::slice::from_raw_parts(self.slot_ptr(i), self.slot_size) }
    }

    /// [`Port::slot`], to write (a checksum completed in place).
    fn slot_mut(&mut self, i: usize) -> &mut [u8] {
        // SAFETY: as in `slot`; `&mut self` makes this the only reference into the ring.
        unsafe { std::slice::from_raw_parts_mut(self.slot_ptr(i), self.slot_size) }
    }

    fn give_back(&self, i: usize) {
        self.status(i).store(TP_STATUS_KERNEL, Ordering::Release);
    }

    /// Frames dropped by the kernel since the last call.
    fn kernel_drops(&self) -> u64 {
        ps::statistics::<TpacketStats>(&self.fd).map_or(0, |st| u64::from(st.drops))
    }

    /// Whether the bound interface went away (see [`ps::unbound`]).
    fn gone(&self) -> bool {
        ps::unbound(&self.fd, self.ifindex)
    }

    /// Sends `frames` out of this port through its transmit ring, or by `sendmmsg` without
    /// one. Returns (sent, dropped).
    fn send(
        &self,
        frames: &[&[u8]],
        iov: &mut Vec<libc::iovec>,
        msgs: &mut Vec<libc::mmsghdr>,
    ) -> (u64, u64) {
        if self.tx.is_some() {
            return self.send_ring(frames);
        }
        self.send_msgs(frames, iov, msgs)
    }

    /// Copies `frames` into the transmit ring and has the kernel send them with one `send`.
    /// A slot still in flight (its receiver holds the frame) is waited for briefly, with the
    /// ring kicked; if it stays busy, that frame and the rest of the batch are dropped (the
    /// ring is full), as is a frame too long for a slot.
    fn send_ring(&self, frames: &[&[u8]]) -> (u64, u64) {
        let fd = self.fd.as_raw_fd();
        let Some(tx) = &self.tx else { return (0, frames.len() as u64) };
        let (mut queued, mut dropped) = (0u64, 0u64);
        for (k, f) in frames.iter().enumerate() {
            if TX_DATA + f.len() > tx.slot_size {
                dropped += 1;
                continue;
            }
            let slot = tx.base.wrapping_add(tx.next.get() * tx.slot_size);
            // SAFETY: the slot's status word is its first, 4-byte aligned u32 in the mapping;
            // the kernel and we hand the slot over through it.
            let status = unsafe { AtomicU32::from_ptr(slot.cast()) };
            let free = || {
                matches!(
                    status.load(Ordering::Acquire),
                    TP_STATUS_AVAILABLE | TP_STATUS_WRONG_FORMAT
                )
            };
            let mut tries = 0;
            while !free() && tries < TX_RETRIES {
                // In flight: have the kernel send what is queued, and give it a moment.
                kick(fd);
                std::thread::yield_now();
                tries += 1;
            }
            if !free() {
                dropped += (frames.len() - k) as u64;
                break;
            }
            // SAFETY: the slot is ours (available); the frame fits after its header, as
            // checked above, and the slot lies in the mapping.
            unsafe {
                std::ptr::copy_nonoverlapping(f.as_ptr(), slot.add(TX_DATA), f.len());
                // tp_len, then the status that hands the slot to the kernel.
                std::ptr::write_unaligned(slot.add(4).cast::<u32>(), f.len() as u32);
            }
            status.store(TP_STATUS_SEND_REQUEST, Ordering::Release);
            tx.next.set((tx.next.get() + 1) % tx.slots);
            queued += 1;
        }
        if queued > 0 {
            kick(fd);
        }
        (queued, dropped)
    }

    /// Sends `frames` out of this port: one `sendmmsg` for as many as the driver takes, a
    /// short retry when it refuses. Returns (sent, dropped).
    fn send_msgs(
        &self,
        frames: &[&[u8]],
        iov: &mut Vec<libc::iovec>,
        msgs: &mut Vec<libc::mmsghdr>,
    ) -> (u64, u64) {
        iov.clear();
        msgs.clear();
        for f in frames {
            iov.push(libc::iovec { iov_base: f.as_ptr() as *mut libc::c_void, iov_len: f.len() });
        }
        for v in iov.iter_mut() {
            // SAFETY: mmsghdr is plain data; zeroed is a valid value (no address: the socket's
            // bound interface and protocol).
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_iov = v as *mut libc::iovec;
            m.msg_hdr.msg_iovlen = 1;
            msgs.push(m);
        }
        let (mut sent, mut dropped) = (0u64, 0u64);
        let mut at = 0usize;
        let mut tries = 0u32;
        while at < msgs.len() {
            let rest = &mut msgs[at..];
            // SAFETY: `rest` holds valid headers whose iovecs point at live frames.
            let rc = unsafe {
                libc::sendmmsg(
                    self.fd.as_raw_fd(),
                    rest.as_mut_ptr(),
                    rest.len() as libc::c_uint,
                    libc::MSG_DONTWAIT,
                )
            };
            if rc > 0 {
                at += rc as usize;
                sent += rc as u64;
                tries = 0;
                continue;
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EAGAIN | libc::ENOBUFS | libc::EINTR) if tries < TX_RETRIES => {
                    tries += 1;
                    std::thread::yield_now();
                }
                _ => {
                    // Refused for good (link down, frame too long, retries spent): this
                    // frame is dropped, the rest still tried.
                    at += 1;
                    dropped += 1;
                    tries = 0;
                }
            }
        }
        (sent, dropped)
    }
}

/// Has the kernel send the frames marked in a transmit ring (returns at once: `MSG_DONTWAIT`).
fn kick(fd: libc::c_int) {
    // SAFETY: a send of no bytes on a packet socket with a transmit ring: the kernel reads
    // the ring, not the (null, empty) buffer.
    unsafe {
        libc::send(fd, std::ptr::null(), 0, libc::MSG_DONTWAIT);
    }
}

impl Drop for Port {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping made in `open`; no borrow of it outlives self.
        unsafe {
            libc::munmap(self.map.cast(), self.map_len);
        }
    }
}

/// A taken frame: its port and slot, and where its bytes are (the slot, or the pair's
/// scratch buffer when a VLAN tag was put back).
#[derive(Clone, Copy, Debug)]
struct Taken {
    port: u8,
    slot: u32,
    /// Offset of the frame in the slot, or in the scratch buffer.
    start: u32,
    len: u32,
    in_scratch: bool,
    ts: Timestamp,
}

/// Two interfaces bridged through userspace (see the module docs).
pub struct PacketPair {
    ports: [Port; 2],
    taken: Vec<Taken>,
    scratch: Vec<u8>,
    stats: PairStats,
    decisions: Vec<bool>,
    iov: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
    /// Which port is read first (alternates, so neither starves the other).
    first: usize,
    /// The `interface` number of port 0's frames.
    base: u32,
    /// The batch's frames and the ones going out of a port: allocations kept from batch to
    /// batch (empty between them; see [`crate::recycle`]).
    frames: Vec<Frame<'static>>,
    out: Vec<&'static [u8]>,
}

// SAFETY: the iovec/mmsghdr scratch vectors hold pointers only during `send`; the pair is
// used by one thread at a time.
unsafe impl Send for PacketPair {}

impl PacketPair {
    /// Opens both ports (`a` is port 0, `b` port 1), promiscuous, with their rings.
    pub fn open(a: &str, b: &str, cfg: &PairConfig) -> Result<Self, LiveError> {
        let max_frame = match cfg.max_frame {
            Some(m) => m,
            None => {
                let mtu =
                    |i: &str| interface_mtu(i).ok_or_else(|| LiveError::NoInterface(i.to_string()));
                mtu(a)?.max(mtu(b)?) + LINK_ROOM as u32
            }
        };
        let slot = slot_size(max_frame);
        let second = PairConfig { fanout: cfg.fanout.map(|id| id.wrapping_add(1)), ..cfg.clone() };
        let ports = [Port::open(a, cfg, slot)?, Port::open(b, &second, slot)?];
        Ok(Self {
            ports,
            taken: Vec::new(),
            scratch: Vec::new(),
            stats: PairStats::default(),
            decisions: Vec::new(),
            iov: Vec::new(),
            msgs: Vec::new(),
            first: 0,
            base: cfg.first_interface,
            frames: Vec::new(),
            out: Vec::new(),
        })
    }

    /// The interfaces' names, port 0 first.
    pub fn names(&self) -> [&str; 2] {
        [&self.ports[0].name, &self.ports[1].name]
    }

    /// Whether both ports send through a transmit ring (see [`PairConfig::tx_ring`]).
    pub fn tx_ring(&self) -> bool {
        self.ports.iter().all(|p| p.tx.is_some())
    }

    /// Receive slots per port.
    pub fn slots(&self) -> usize {
        self.ports[0].slots
    }

    /// Bytes of one slot (the longest frame is this less the slot's header).
    pub fn slot_bytes(&self) -> usize {
        self.ports[0].slot_size
    }

    /// The counters, with the kernel's drops read now.
    pub fn stats(&mut self) -> PairStats {
        for p in 0..2 {
            self.stats.kernel_dropped[p] += self.ports[p].kernel_drops();
        }
        self.stats
    }

    /// Whether either port's receive ring is at least half full (the reader is falling
    /// behind): the slot half a ring ahead of the next one to read is already written.
    pub fn backlogged(&self) -> bool {
        self.ports.iter().any(|p| {
            let ahead = (p.next + p.slots / 2) % p.slots.max(1);
            p.status(ahead).load(Ordering::Relaxed) & TP_STATUS_USER != 0
        })
    }

    /// The first port whose interface went away, if any.
    pub fn gone(&self) -> Option<&str> {
        self.ports.iter().find(|p| p.gone()).map(|p| p.name.as_str())
    }

    /// Takes the frames waiting in port `p`'s ring (up to `room` of them).
    fn take(&mut self, p: usize, room: usize) {
        let mut n = 0;
        while n < room {
            let port = &self.ports[p];
            let i = port.next;
            let status = port.status(i).load(Ordering::Acquire);
            if status & TP_STATUS_USER == 0 {
                break;
            }
            let len = port.header(i, 4);
            let snap = port.header(i, 8);
            let mac = port.header(i, 12) as u16 as usize;
            let ts = Timestamp::from_parts(u64::from(port.header(i, 16)), port.header(i, 20));
            let vlan = port.header(i, 24);
            self.ports[p].next = (i + 1) % self.ports[p].slots;
            self.stats.received[p] += 1;
            n += 1;
            if snap < len || mac + snap as usize > self.ports[p].slot_size {
                // Larger than a slot: it cannot leave whole.
                self.stats.oversize[p] += 1;
                self.ports[p].give_back(i);
                continue;
            }
            let mut t = Taken {
                port: p as u8,
                slot: i as u32,
                start: mac as u32,
                len: snap,
                in_scratch: false,
                ts,
            };
            if status & TP_STATUS_VLAN_VALID != 0 && snap >= 12 {
                // Put the tag the driver took off back between the addresses and the type.
                let tci = (vlan & 0xffff) as u16;
                let tpid = if status & TP_STATUS_VLAN_TPID_VALID != 0 {
                    (vlan >> 16) as u16
                } else {
                    0x8100
                };
                let bytes = &self.ports[p].slot(i)[mac..mac + snap as usize];
                let start = self.scratch.len();
                self.scratch.extend_from_slice(&bytes[..12]);
                self.scratch.extend_from_slice(&tpid.to_be_bytes());
                self.scratch.extend_from_slice(&tci.to_be_bytes());
                self.scratch.extend_from_slice(&bytes[12..]);
                t.start = start as u32;
                t.len = snap + 4;
                t.in_scratch = true;
            }
            if status & TP_STATUS_CSUMNOTREADY != 0 {
                let frame: &mut [u8] = if t.in_scratch {
                    &mut self.scratch[t.start as usize..(t.start + t.len) as usize]
                } else {
                    &mut self.ports[p].slot_mut(i)[mac..mac + snap as usize]
                };
                if complete_checksum(frame) {
                    self.stats.checksums_completed[p] += 1;
                }
            }
            self.taken.push(t);
        }
    }

    fn bytes(&self, t: &Taken) -> &[u8] {
        if t.in_scratch {
            &self.scratch[t.start as usize..(t.start + t.len) as usize]
        } else {
            &self.ports[usize::from(t.port)].slot(t.slot as usize)
                [t.start as usize..(t.start + t.len) as usize]
        }
    }

    /// Waits up to `timeout_ms` for either port to have a frame.
    fn wait(&self, timeout_ms: i32) -> io::Result<()> {
        let mut pfd = [0, 1].map(|p| libc::pollfd {
            fd: self.ports[p].fd.as_raw_fd(),
            events: libc::POLLIN | libc::POLLERR,
            revents: 0,
        });
        // SAFETY: two valid pollfds.
        let rc = unsafe { libc::poll(pfd.as_mut_ptr(), 2, timeout_ms) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        for (p, f) in pfd.iter().enumerate() {
            if f.revents & libc::POLLERR != 0 {
                // The pending error (ENETDOWN while a link is down) is read, and so cleared;
                // a port that went away is found by `gone`.
                ps::socket_error(&self.ports[p].fd);
            }
        }
        Ok(())
    }

    /// Receives up to `max` frames from both ports (waiting up to `timeout_ms` when none
    /// waits), hands them to `decide` (port 0's frames have `interface` 0, port 1's 1), which
    /// pushes one decision per frame: `true` sends it out of the other port, `false` drops
    /// it. Returns how many frames were received. (With [`PairConfig::first_interface`] the
    /// frames' numbers start there.)
    pub fn exchange(
        &mut self,
        max: usize,
        timeout_ms: i32,
        decide: &mut dyn FnMut(&[Frame<'_>], &mut Vec<bool>),
    ) -> io::Result<usize> {
        self.taken.clear();
        self.scratch.clear();
        let max = max.max(1);
        let first = self.first;
        self.first ^= 1;
        self.take(first, max.div_ceil(2));
        self.take(first ^ 1, max - self.taken.len());
        if self.taken.len() < max {
            self.take(first, max - self.taken.len());
        }
        if self.taken.is_empty() {
            self.wait(timeout_ms)?;
            self.take(first, max.div_ceil(2));
            self.take(first ^ 1, max - self.taken.len());
        }
        let n = self.taken.len();
        if n == 0 {
            return Ok(0);
        }
        let mut decisions = std::mem::take(&mut self.decisions);
        decisions.clear();
        let mut frames: Vec<Frame<'_>> = crate::recycle(std::mem::take(&mut self.frames));
        let out: Vec<&[u8]> = crate::recycle(std::mem::take(&mut self.out));
        frames.extend(self.taken.iter().map(|t| {
            let data = self.bytes(t);
            Frame {
                ts: t.ts,
                origlen: data.len() as u32,
                link: LinkType::Ethernet,
                interface: self.base + u32::from(t.port),
                offset: 0,
                data,
            }
        }));
        decide(&frames, &mut decisions);
        let frames = crate::recycle(frames);
        // Out of each port, what came in on the other and was accepted.
        let (mut iov, mut msgs) = (std::mem::take(&mut self.iov), std::mem::take(&mut self.msgs));
        let mut out_frames = out;
        let (mut sent, mut dropped) = ([0u64; 2], [0u64; 2]);
        for out in 0..2 {
            out_frames.clear();
            out_frames.extend(
                self.taken
                    .iter()
                    .zip(decisions.iter().chain(std::iter::repeat(&false)))
                    .filter(|(t, d)| **d && usize::from(t.port) != out)
                    .map(|(t, _)| self.bytes(t)),
            );
            if !out_frames.is_empty() {
                (sent[out], dropped[out]) = self.ports[out].send(&out_frames, &mut iov, &mut msgs);
            }
        }
        iov.clear();
        msgs.clear();
        let out_frames = crate::recycle(out_frames);
        (self.frames, self.out) = (frames, out_frames);
        (self.iov, self.msgs) = (iov, msgs);
        for p in 0..2 {
            self.stats.sent[p] += sent[p];
            self.stats.tx_dropped[p] += dropped[p];
        }
        for t in &self.taken {
            self.ports[usize::from(t.port)].give_back(t.slot as usize);
        }
        self.decisions = decisions;
        Ok(n)
    }

    /// Sends `data` (a whole Ethernet frame built by the caller, such as the reset a rejected
    /// packet gets) out of the port whose frames carry `interface`. Returns whether it was
    /// sent.
    pub fn inject(&mut self, interface: u32, data: &[u8]) -> io::Result<bool> {
        let p = (interface.saturating_sub(self.base) as usize).min(1);
        let (mut iov, mut msgs) = (std::mem::take(&mut self.iov), std::mem::take(&mut self.msgs));
        let (sent, dropped) = self.ports[p].send(&[data], &mut iov, &mut msgs);
        iov.clear();
        msgs.clear();
        (self.iov, self.msgs) = (iov, msgs);
        self.stats.sent[p] += sent;
        self.stats.tx_dropped[p] += dropped;
        Ok(sent == 1)
    }
}

/// Completes the TCP or UDP checksum of an Ethernet frame whose checksum the sender's stack
/// left to the device (the field holds a partial sum). Returns whether it did.
pub fn complete_checksum(frame: &mut [u8]) -> bool {
    let meta = PacketMeta::parse(LinkType::Ethernet, frame);
    if meta.family == Family::None || meta.is_fragment() || meta.l4_offset == 0 {
        return false;
    }
    let field = match meta.proto {
        proto::TCP => 16,
        proto::UDP => 6,
        _ => return false,
    };
    let l4 = usize::from(meta.l4_offset);
    let end = usize::from(meta.l3_offset) + meta.ip_wire_len as usize;
    if end > frame.len() || end < l4 + field + 2 {
        return false;
    }
    frame[l4 + field] = 0;
    frame[l4 + field + 1] = 0;
    let seg = &frame[l4..end];
    let acc =
        sum(seg, pseudo_header(meta.family, &meta.src, &meta.dst, meta.proto, seg.len() as u32));
    let mut c = finish(acc);
    if meta.proto == proto::UDP && c == 0 {
        c = 0xffff;
    }
    frame[l4 + field..l4 + field + 2].copy_from_slice(&c.to_be_bytes());
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_hold_the_mtu_and_tile_blocks() {
        assert_eq!(slot_size(1500 + LINK_ROOM as u32), 2048);
        assert_eq!(slot_size(9000 + LINK_ROOM as u32), 16384);
        let (block, nr) = geometry(DEFAULT_PORT_BUFFER, 2048);
        assert_eq!(block % 2048, 0);
        assert_eq!(block * nr, DEFAULT_PORT_BUFFER as usize);
        let (block, nr) = geometry(1000, 16384);
        assert_eq!((block, nr), (1 << 16, 1));
        let (block, _) = geometry(1 << 20, 1 << 17);
        assert_eq!(block, 1 << 17);
    }

    fn udp_frame(v6: bool) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        let payload = b"hello, checksum";
        if v6 {
            f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0]);
            f.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
            f.extend_from_slice(&[17, 64]);
            f.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8].repeat(4));
            f.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb9].repeat(4));
        } else {
            let total = (20 + 8 + payload.len()) as u16;
            f.extend_from_slice(&[0x08, 0x00, 0x45, 0]);
            f.extend_from_slice(&total.to_be_bytes());
            f.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
            let c = finish(sum(&f[14..34], 0));
            f[24..26].copy_from_slice(&c.to_be_bytes());
        }
        f.extend_from_slice(&1234u16.to_be_bytes());
        f.extend_from_slice(&53u16.to_be_bytes());
        f.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        f.extend_from_slice(&[0x12, 0x34]);
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn checksums_left_to_the_device_are_completed() {
        for v6 in [false, true] {
            let mut f = udp_frame(v6);
            assert!(complete_checksum(&mut f));
            let meta = PacketMeta::parse(LinkType::Ethernet, &f);
            assert_eq!(meta.checksums(&f).l4, rampart_wire::check::Checksum::Good, "v6 {v6}");
            // Completing again gives the same bytes.
            let again = f.clone();
            assert!(complete_checksum(&mut f));
            assert_eq!(f, again);
        }
        // Not TCP or UDP, or cut short: left alone.
        let mut f = udp_frame(false);
        f[23] = 47;
        assert!(!complete_checksum(&mut f));
        let mut f = udp_frame(false);
        f.truncate(40);
        assert!(!complete_checksum(&mut f));
    }
}
