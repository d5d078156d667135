//! The AF_PACKET socket calls live capture and the inline ports share: opening a socket for
//! an interface, options, the ring mapping, promiscuous mode, binding, and reading back the
//! socket's error and bound interface.
//!
//! The `unsafe` here is the system calls themselves, each on a descriptor the caller owns
//! and with buffers of the sizes passed.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::live::LiveError;

pub(crate) const SOL_PACKET: libc::c_int = 263;
pub(crate) const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
pub(crate) const PACKET_RX_RING: libc::c_int = 5;
pub(crate) const PACKET_STATISTICS: libc::c_int = 6;
pub(crate) const PACKET_VERSION: libc::c_int = 10;
const PACKET_MR_PROMISC: libc::c_ushort = 1;
const ETH_P_ALL: u16 = 0x0003;
/// A ring slot or block the kernel owns.
pub(crate) const TP_STATUS_KERNEL: u32 = 0;
/// A ring slot or block handed to userspace.
pub(crate) const TP_STATUS_USER: u32 = 1;

/// The error of the system call just made on `iface`'s socket: a permission error as such.
pub(crate) fn sys(iface: &str, what: &'static str) -> LiveError {
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EPERM | libc::EACCES) => LiveError::Permission(iface.to_string()),
        _ => LiveError::Sys { iface: iface.to_string(), what, err },
    }
}

/// `setsockopt(fd, level, name, v)`; the return code.
pub(crate) fn setsockopt<T>(fd: &OwnedFd, level: libc::c_int, name: libc::c_int, v: &T) -> i32 {
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

/// `iface`'s index, or the error that it does not exist.
pub(crate) fn ifindex(iface: &str) -> Result<i32, LiveError> {
    let cname = CString::new(iface).map_err(|_| LiveError::NoInterface(iface.to_string()))?;
    // SAFETY: a NUL-terminated name.
    let i = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if i == 0 {
        return Err(LiveError::NoInterface(iface.to_string()));
    }
    Ok(i as i32)
}

/// A new AF_PACKET socket of protocol 0: nothing arrives before [`bind_all`], so no frame of
/// another interface.
pub(crate) fn open(iface: &str) -> Result<OwnedFd, LiveError> {
    // SAFETY: plain socket call.
    let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(sys(iface, "socket(AF_PACKET)"));
    }
    // SAFETY: `raw` is a new descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Maps `len` bytes of the socket's ring, read and write, locked in memory first if
/// `locked` (falling back to unlocked under a low RLIMIT_MEMLOCK).
pub(crate) fn map(
    fd: &OwnedFd,
    len: usize,
    locked: bool,
    iface: &str,
) -> Result<*mut u8, LiveError> {
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    let attempt = |flags| {
        // SAFETY: mapping the ring the kernel allocated for this socket.
        unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, fd.as_raw_fd(), 0) }
    };
    let mut m =
        if locked { attempt(libc::MAP_SHARED | libc::MAP_LOCKED) } else { libc::MAP_FAILED };
    if m == libc::MAP_FAILED {
        m = attempt(libc::MAP_SHARED);
    }
    if m == libc::MAP_FAILED {
        return Err(sys(iface, "mapping the ring"));
    }
    Ok(m.cast())
}

/// Puts interface `index` in promiscuous mode for as long as the socket is open.
pub(crate) fn promiscuous(fd: &OwnedFd, index: i32, iface: &str) -> Result<(), LiveError> {
    // SAFETY: packet_mreq is plain data; zeroed is a valid value.
    let mut mreq: libc::packet_mreq = unsafe { std::mem::zeroed() };
    mreq.mr_ifindex = index;
    mreq.mr_type = PACKET_MR_PROMISC;
    if setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mreq) < 0 {
        return Err(sys(iface, "PACKET_ADD_MEMBERSHIP promiscuous"));
    }
    Ok(())
}

/// Binds the socket to interface `index`, every protocol.
pub(crate) fn bind_all(fd: &OwnedFd, index: i32, iface: &str) -> Result<(), LiveError> {
    // SAFETY: sockaddr_ll is plain data; zeroed is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = ETH_P_ALL.to_be();
    sll.sll_ifindex = index;
    // SAFETY: binding to a valid sockaddr_ll of the size passed.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(sys(iface, "bind"));
    }
    Ok(())
}

/// The socket's pending error (SO_ERROR), which reading clears; 0 for none.
pub(crate) fn socket_error(fd: &OwnedFd) -> i32 {
    let mut err: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `err` has room for `len` bytes.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            (&mut err as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc == 0 { err } else { 0 }
}

/// Whether the interface the socket was bound to (index `index`) is gone: the kernel sets the
/// socket's interface index to -1 when its device unregisters (deleted, or moved to another
/// network namespace), so this cannot be fooled by a new interface taking the name.
pub(crate) fn unbound(fd: &OwnedFd, index: i32) -> bool {
    // SAFETY: sockaddr_ll is plain data; zeroed is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    // SAFETY: `sll` has room for `len` bytes.
    let rc = unsafe {
        libc::getsockname(fd.as_raw_fd(), (&mut sll as *mut libc::sockaddr_ll).cast(), &mut len)
    };
    rc == 0 && sll.sll_ifindex != index
}

/// Reads PACKET_STATISTICS into `T` (`tpacket_stats` or `tpacket_stats_v3`); the kernel
/// resets its counters on each read.
pub(crate) fn statistics<T: Default>(fd: &OwnedFd) -> Option<T> {
    let mut st = T::default();
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: `st` has room for `len` bytes.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            SOL_PACKET,
            PACKET_STATISTICS,
            (&mut st as *mut T).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(st)
}
