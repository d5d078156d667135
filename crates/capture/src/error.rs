use std::fmt;

/// What went wrong with a capture file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Reading failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The file is empty.
    #[error("empty file, expected a pcap or pcapng capture")]
    Empty,
    /// The first bytes are no capture magic number.
    #[error("not a capture file: expected a pcap or pcapng magic number, found {found}{hint}")]
    NotACapture {
        /// The first bytes, in hex.
        found: String,
        /// A hint when the bytes are recognisable (compressed data, text).
        hint: &'static str,
    },
    /// A header or record runs past the end of the input.
    #[error("{what} cut off: needs {needed} bytes, only {available} left in the file")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes the item needs.
        needed: u64,
        /// Bytes that were left.
        available: u64,
    },
    /// A record's captured length exceeds the largest libpcap accepts for its link type.
    #[error("record length {len} exceeds {limit}, the largest libpcap accepts for this link type")]
    RecordTooLong {
        /// The captured length in the record header.
        len: u32,
        /// The limit it broke.
        limit: u32,
    },
    /// A pcapng block is inconsistent.
    #[error("corrupt pcapng block: {0}")]
    BadBlock(String),
    /// A file read through a buffer ended before the size it had when it was opened: another
    /// process truncated it.
    #[error(
        "the file shrank while it was read ({was} bytes when opened, {now} now): another \
         process truncated it"
    )]
    Shrank {
        /// Size when opened.
        was: u64,
        /// Size now (as far as could be found out).
        now: u64,
    },
    /// Another process opened a mapped file for writing or truncated it; reading stopped
    /// before any byte could change under the reader.
    #[error(
        "another process opened the file for writing or truncated it; reading stopped here, \
         before the file could change"
    )]
    Changed,
    /// The interface of a live capture was deleted or moved to another network namespace.
    #[error("the interface went away (deleted, or moved to another network namespace)")]
    InterfaceGone,
    /// A live capture's socket failed.
    #[error("capture failed: {0}")]
    Live(std::io::Error),
    /// The capture's version is not one this reader knows.
    #[error("unsupported {format} version {major}.{minor}")]
    Version {
        /// pcap or pcapng.
        format: &'static str,
        /// Major version.
        major: u16,
        /// Minor version.
        minor: u16,
    },
}

/// An error reading a capture: the file, the byte offset where it was found, and what.
#[derive(Debug)]
pub struct CaptureError {
    /// The file as the user named it (`-` for standard input).
    pub path: String,
    /// Byte offset of the bad header, record or block, when known.
    pub offset: Option<u64>,
    /// What went wrong.
    pub kind: ErrorKind,
}

impl CaptureError {
    pub(crate) fn new(path: &str, offset: Option<u64>, kind: ErrorKind) -> Self {
        Self { path: path.to_owned(), offset, kind }
    }

    /// Whether the input is not a capture at all (wrong magic, empty, unknown version), as
    /// opposed to a capture that goes bad part-way. Command-line tools exit 2 for the former
    /// and 1 for the latter.
    pub fn is_not_a_capture(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::Empty | ErrorKind::NotACapture { .. } | ErrorKind::Version { .. }
        ) || (matches!(self.kind, ErrorKind::Io(_)) && self.offset.is_none())
    }
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(off) => write!(f, "{}: byte offset {off}: {}", self.path, self.kind),
            None => write!(f, "{}: {}", self.path, self.kind),
        }
    }
}

impl std::error::Error for CaptureError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Io(e) | ErrorKind::Live(e) => Some(e),
            _ => None,
        }
    }
}
