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
    /// A record's captured length exceeds the snap length (or the sane maximum).
    #[error("record length {len} exceeds the snap length {limit}")]
    RecordTooLong {
        /// The captured length in the record header.
        len: u32,
        /// The limit it broke.
        limit: u32,
    },
    /// A pcapng block is inconsistent.
    #[error("corrupt pcapng block: {0}")]
    BadBlock(String),
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
            ErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}
