//! A read lease on a mapped capture file: the kernel's promise that nobody truncates or
//! rewrites the file without first telling the lease holder.
//!
//! A mapping of a file that another process truncates raises SIGBUS on the next access to a
//! page past the new end, and Rust cannot turn that signal into an error. So a capture file is
//! mapped only under a read lease (`fcntl(F_SETLEASE, F_RDLCK)`): while it is held, a process
//! that opens the file for writing or truncates it blocks in the kernel until the holder
//! releases the lease (or `/proc/sys/fs/lease-break-time`, 45 s by default, has passed). The
//! reader checks the lease before decoding each batch (`F_GETLEASE`, one system call per
//! batch) and, once a break has begun, stops with an error and never touches the mapping
//! again; closing the file and mapping releases the lease and lets the other process go on.
//!
//! The kernel grants the lease only to the file's owner (or with CAP_LEASE), only when nobody
//! has the file open for writing, and only on file systems that support leases; otherwise the
//! file is read through a buffer instead (see [`crate::Capture::open`]), which is safe with any
//! file and only costs a copy.
//!
//! The break notice is a signal: `F_SETSIG` makes it SIGURG, whose default action is to
//! ignore it, so no handler is needed and the process is never killed by the default SIGIO.
#![allow(unsafe_code)]

use std::fs::File;
use std::os::fd::AsRawFd;

/// `F_SETSIG` (`__F_SETSIG` in asm-generic/fcntl.h, the same on every Linux architecture); the
/// libc crate does not export it.
const F_SETSIG: libc::c_int = 10;

/// Takes a read lease on `file` (opened read-only). `false` when the kernel refuses it.
pub(crate) fn take(file: &File) -> bool {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own, with integer arguments only. The signal is set
    // first so that a break can never deliver the default SIGIO, which would kill the process.
    unsafe {
        if libc::fcntl(fd, F_SETSIG, libc::SIGURG) != 0 {
            return false;
        }
        libc::fcntl(fd, libc::F_SETLEASE, libc::F_RDLCK) == 0
    }
}

/// Whether the lease is still held with no break begun: after a break begins, `F_GETLEASE`
/// returns the type the breaker needs (`F_UNLCK`), and after the kernel removes the lease it
/// returns `F_UNLCK` too.
pub(crate) fn held(file: &File) -> bool {
    // SAFETY: as above.
    unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLEASE) == libc::F_RDLCK }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_lease_breaks_when_another_opener_wants_to_write() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        let f = File::open(&p).unwrap();
        if !take(&f) {
            // Not the owner and no CAP_LEASE, leases off, or a file system without leases.
            let owner = nix_uid() == std::fs::metadata(&p).unwrap().uid();
            eprintln!(
                "skipped a_lease_breaks_when_another_opener_wants_to_write: no lease (owner: \
                 {owner}, leases enabled: {})",
                leases_enabled()
            );
            return;
        }
        assert!(held(&f));
        // Opening for writing blocks until the lease is released; without blocking it fails
        // with EWOULDBLOCK and still starts the break.
        let e = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&p)
            .expect_err("the lease holds writers off");
        assert_eq!(e.raw_os_error(), Some(libc::EWOULDBLOCK));
        assert!(!held(&f), "a break has begun");
        drop(f);
        std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    }

    use std::os::unix::fs::OpenOptionsExt;

    fn nix_uid() -> u32 {
        // SAFETY: getuid cannot fail.
        unsafe { libc::getuid() }
    }

    fn leases_enabled() -> bool {
        std::fs::read_to_string("/proc/sys/fs/leases-enable").is_ok_and(|s| s.trim() == "1")
    }
}
