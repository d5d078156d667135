//! Capture files in, batches of borrowed frames out.
//!
//! [`Capture`] reads classic pcap (microsecond and nanosecond magic, either byte order) and
//! pcapng (section header, interface description with `if_tsresol` and `if_tsoffset`, enhanced,
//! simple and obsolete packet blocks; other blocks skipped; any number of interfaces and
//! sections). A regular file is read through a buffer; for callers that hand frames to other
//! threads, through buffers handed out rather than reused ([`FileAccess::Handed`],
//! [`Batch::shared`]) or memory-mapped under a read lease ([`Capture::open_with`] says why);
//! standard input and pipes are streamed through a buffer that grows only as real bytes
//! arrive.
//! Live capture is [`live`] (AF_PACKET TPACKET_V3); an inline bridge over AF_XDP is [`xdp`].
//!
//! Every frame comes with its timestamp, captured length, original length, link type and the
//! byte offset of its record, so a later stage can name the record in an error.
//!
//! # Errors
//! A bad file gives a [`CaptureError`] that names the file and, for a bad record, its byte
//! offset. Records decoded before an error are handed out first: the error comes on the next
//! call. Nothing is allocated from a length read out of the file. A file that another process
//! truncates or rewrites while it is read ends the reading with an error at the offset reached
//! ([`ErrorKind::Changed`], [`ErrorKind::Shrank`]), never with a signal.
//!
//! # Records as libpcap reads them
//! A record longer than its snap length is accepted up to libpcap's limit for its link type
//! (256 KiB for most) and counted; an original length below the captured length, or above
//! 1 MiB, is counted and replaced by the captured length so byte totals stay true; frames of
//! link types rampart does not parse are counted by type. [`Capture::record_stats`] gives the
//! counts, so a caller can say once what it could not analyse.
//!
//! # Why hand-written
//! One walker serves the buffered, mapped and streamed input, with exact byte offsets in errors
//! and frames that borrow the buffer or mapping; walking record headers is bound by memory
//! bandwidth (23 ns per 128-byte record on this project's machine), so a general-purpose
//! reader buys nothing.
#![deny(unsafe_code)]

mod decode;
mod error;
pub mod filter;
pub mod inline;
mod lease;
pub mod live;
mod packet_socket;
mod source;
mod writer;
pub mod xdp;

pub use decode::{Format, RecordStats};
pub use error::{CaptureError, ErrorKind};
pub use filter::{Filter, FilterError};
pub use inline::{PacketPair, PairConfig, PairStats};
pub use live::{LinkState, LiveConfig, LiveError, LiveMonitor, LiveStats};
pub use rampart_wire::LinkType;
/// A frame's capture time: the instant type of [`rampart_wire::time`], so times keep their
/// type from the capture to every stage.
pub use rampart_wire::{Span, Timestamp};
pub use source::{Batch, Capture, FileAccess, FileId, Frame, SharedBytes};
pub use writer::PcapWriter;
pub use xdp::{XdpConfig, XdpKernelStats, XdpPair, XdpPortStats, XdpStats};

/// An empty vector with `v`'s allocation, for elements of another lifetime: drivers keep one
/// vector of borrowed frames and fill it anew each batch without allocating (the elements are
/// dropped first, so nothing of the old borrows survives; the standard library collects a
/// `map` over a vector's own iterator into the same allocation when the element layouts are
/// the same).
pub(crate) fn recycle<T, U>(mut v: Vec<T>) -> Vec<U> {
    v.clear();
    v.into_iter().map(|_| unreachable!("the vector was emptied")).collect()
}

#[cfg(test)]
mod recycle_tests {
    #[test]
    fn recycling_keeps_the_allocation() {
        let data = [1u8, 2, 3];
        let mut v: Vec<&[u8]> = Vec::with_capacity(64);
        v.push(&data);
        let at = v.as_ptr() as usize;
        let w: Vec<&'static [u8]> = super::recycle(v);
        assert!(w.is_empty());
        assert_eq!(w.as_ptr() as usize, at, "the same allocation");
        assert!(w.capacity() >= 64);
    }
}
