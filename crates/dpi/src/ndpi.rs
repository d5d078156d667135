//! nDPI as a second labeller (the `ndpi` feature): Debian's libndpi 4.2 through a small C
//! shim (`ndpi/shim.c`), fed whole IP packets as ndpiReader feeds them, for comparing labels
//! and speed in the same run. The default build does not have it.
//!
//! The only `unsafe` of the crate is here: calls into the shim, each with the pointers it
//! hands out and nothing else.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::ptr::NonNull;

unsafe extern "C" {
    fn rampart_ndpi_new() -> *mut c_void;
    fn rampart_ndpi_free(m: *mut c_void);
    fn rampart_ndpi_flow_new() -> *mut c_void;
    fn rampart_ndpi_flow_free(f: *mut c_void);
    fn rampart_ndpi_packet(
        m: *mut c_void,
        f: *mut c_void,
        p: *const u8,
        len: u16,
        ms: u64,
        master: *mut u16,
        app: *mut u16,
    ) -> i32;
    fn rampart_ndpi_giveup(m: *mut c_void, f: *mut c_void, master: *mut u16, app: *mut u16);
    fn rampart_ndpi_name(m: *mut c_void, master: u16, app: u16, buf: *mut u8, len: u32) -> u32;
}

/// An nDPI detection module (about 4.5 MB; one per thread: it is neither `Send` nor `Sync`).
pub struct Ndpi {
    module: NonNull<c_void>,
}

impl Ndpi {
    /// A module with every protocol enabled; `None` if nDPI could not make one.
    pub fn new() -> Option<Self> {
        // SAFETY: the shim takes no arguments and returns a module or null.
        let m = unsafe { rampart_ndpi_new() };
        NonNull::new(m).map(|module| Ndpi { module })
    }

    /// A new flow's state (688 bytes in nDPI 4.2).
    pub fn flow(&self) -> Option<NdpiFlow<'_>> {
        // SAFETY: returns a zeroed flow struct of nDPI's size, or null.
        let f = unsafe { rampart_ndpi_flow_new() };
        NonNull::new(f).map(|flow| NdpiFlow { nd: self, flow, done: false, ids: (0, 0) })
    }

    /// nDPI's name for a (master, application) pair: `MASTER.APP`, or one name.
    pub fn name(&self, master: u16, app: u16) -> String {
        let mut buf = [0u8; 64];
        // SAFETY: the module is live, `buf` is writable for its length, and the shim writes a
        // NUL-terminated string of at most that length and returns its length.
        let n = unsafe {
            rampart_ndpi_name(self.module.as_ptr(), master, app, buf.as_mut_ptr(), buf.len() as u32)
        };
        String::from_utf8_lossy(&buf[..(n as usize).min(buf.len())]).into_owned()
    }
}

impl Drop for Ndpi {
    fn drop(&mut self) {
        // SAFETY: the module came from `rampart_ndpi_new` and its flows borrow it, so none
        // outlives it.
        unsafe { rampart_ndpi_free(self.module.as_ptr()) }
    }
}

/// One flow as nDPI sees it.
pub struct NdpiFlow<'a> {
    nd: &'a Ndpi,
    flow: NonNull<c_void>,
    done: bool,
    ids: (u16, u16),
}

impl NdpiFlow<'_> {
    /// Feeds one IP packet (from its IP header) captured at `ms` milliseconds; returns
    /// whether detection is over.
    pub fn feed(&mut self, ip: &[u8], ms: u64) -> bool {
        if self.done || ip.is_empty() {
            return self.done;
        }
        let len = ip.len().min(usize::from(u16::MAX)) as u16;
        let (mut master, mut app) = (0u16, 0u16);
        // SAFETY: module and flow are live and belong together; `ip` is readable for `len`
        // bytes; `master` and `app` are writable.
        let over = unsafe {
            rampart_ndpi_packet(
                self.nd.module.as_ptr(),
                self.flow.as_ptr(),
                ip.as_ptr(),
                len,
                ms,
                &mut master,
                &mut app,
            )
        };
        self.ids = (master, app);
        self.done = over != 0;
        self.done
    }

    /// The label: what detection found, or at the end nDPI's guess (as ndpiReader gives up).
    pub fn label(&mut self) -> String {
        if self.ids == (0, 0) {
            let (mut master, mut app) = (0u16, 0u16);
            // SAFETY: module and flow are live and belong together; outputs are writable.
            unsafe {
                rampart_ndpi_giveup(
                    self.nd.module.as_ptr(),
                    self.flow.as_ptr(),
                    &mut master,
                    &mut app,
                )
            };
            self.ids = (master, app);
            self.done = true;
        }
        self.nd.name(self.ids.0, self.ids.1)
    }
}

impl Drop for NdpiFlow<'_> {
    fn drop(&mut self) {
        // SAFETY: the flow came from `rampart_ndpi_flow_new` and is freed once.
        unsafe { rampart_ndpi_flow_free(self.flow.as_ptr()) }
    }
}
