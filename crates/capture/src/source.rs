use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use std::sync::Arc;

use memmap2::Mmap;
use rampart_wire::LinkType;

use crate::Timestamp;
use crate::decode::{Decoder, Format, RawFrame, RecordStats, Step};
use crate::error::{CaptureError, ErrorKind};
use crate::lease;
use crate::live::{Live, LiveConfig, LiveError, LiveMonitor, RingFrame};

/// Bytes the streaming buffer starts with; it doubles only when one record does not fit. A
/// regular file read through the buffer is read in pieces this large.
const STREAM_BUF: usize = 1 << 20;
/// Buffers kept for reuse with [`FileAccess::Handed`] (those handed out and not yet let go
/// of by their readers, beyond these, are dropped when they are).
const MAX_SPARES: usize = 16;
/// A mapped file is paged in this many bytes ahead of the cursor, in one system call per
/// window rather than one page fault per 4 KiB page.
const POPULATE_WINDOW: usize = 16 << 20;

/// One captured frame, borrowed from the capture's mapping or buffer.
#[derive(Clone, Copy, Debug)]
pub struct Frame<'a> {
    /// When the frame was captured.
    pub ts: Timestamp,
    /// Length of the frame on the wire (may exceed `data.len()` when cut by a snap length).
    pub origlen: u32,
    /// Link-layer type of the frame.
    pub link: LinkType,
    /// pcapng interface index (0 for pcap).
    pub interface: u32,
    /// Byte offset of the frame's record in the input.
    pub offset: u64,
    /// The captured bytes.
    pub data: &'a [u8],
}

impl Frame<'_> {
    /// Number of bytes captured.
    #[inline]
    pub fn caplen(&self) -> u32 {
        self.data.len() as u32
    }
}

#[derive(Clone, Copy, Debug)]
struct Desc {
    raw: RawFrame,
    offset: u64,
}

/// A batch of frames handed out by [`Capture::next_batch`]. It borrows the capture, so it must
/// be dropped before the next batch is asked for.
#[derive(Clone, Copy)]
pub struct Batch<'a> {
    buf: &'a [u8],
    descs: &'a [Desc],
    /// The input the frames lie in (`None`: a live ring).
    input: Option<&'a Input>,
}

impl<'a> Batch<'a> {
    /// Number of frames in the batch.
    #[inline]
    pub fn len(&self) -> usize {
        self.descs.len()
    }

    /// Whether the batch is empty, which means the input has ended.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.descs.is_empty()
    }

    /// The frame at `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<Frame<'a>> {
        self.descs.get(i).map(|d| d.frame(self.buf))
    }

    /// The bytes the batch's frames lie in, shareable with other threads: the mapping or
    /// the memory, or with [`FileAccess::Handed`] the buffer the batch was read into, which
    /// the capture never writes again while anyone holds it. `None` for a buffer the capture
    /// reuses (a stream, [`FileAccess::Buffered`]) and for a live ring.
    pub fn shared(&self) -> Option<SharedBytes> {
        match self.input? {
            Input::Mapped(m, _) => Some(SharedBytes(Shared::Mapped(Arc::clone(m)))),
            Input::Memory(v) => Some(SharedBytes(Shared::Memory(Arc::clone(v)))),
            Input::Stream(s) if s.handed => Some(SharedBytes(Shared::Buffer(Arc::clone(&s.buf)))),
            Input::Stream(_) => None,
        }
    }

    /// The frames in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Frame<'a>> + 'a {
        let buf = self.buf;
        self.descs.iter().map(move |d| d.frame(buf))
    }
}

impl Desc {
    #[inline]
    fn frame(self, buf: &[u8]) -> Frame<'_> {
        let start = self.raw.data_start;
        Frame {
            ts: self.raw.ts,
            origlen: self.raw.origlen,
            link: self.raw.link,
            interface: self.raw.interface,
            offset: self.offset,
            data: &buf[start..start + self.raw.caplen as usize],
        }
    }
}

enum Input {
    /// A regular file under a read lease (see [`crate::lease`]), kept open to check it.
    Mapped(Arc<Mmap>, File),
    Memory(Arc<[u8]>),
    Stream(Stream),
}

/// Identifies a file: its device and inode, whatever name, link or descriptor reaches it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileId {
    /// `st_dev`.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
}

impl FileId {
    /// The file `path` names (following symbolic links), if it exists.
    pub fn of_path(path: &Path) -> Option<Self> {
        std::fs::metadata(path).ok().map(|m| Self { dev: m.dev(), ino: m.ino() })
    }

    /// The regular file behind an open descriptor (`None` for pipes, sockets, terminals).
    pub fn of_fd(fd: std::os::fd::BorrowedFd<'_>) -> Option<Self> {
        let f = File::from(fd.try_clone_to_owned().ok()?);
        let m = f.metadata().ok()?;
        m.is_file().then(|| Self { dev: m.dev(), ino: m.ino() })
    }
}

/// The whole input of a mapped or in-memory capture, shared so that other threads can read the
/// frames of batches already handed out while the capture goes on ([`Capture::shared`]).
#[derive(Clone)]
pub struct SharedBytes(Shared);

#[derive(Clone)]
enum Shared {
    Mapped(Arc<Mmap>),
    Memory(Arc<[u8]>),
    /// A buffer handed out ([`FileAccess::Handed`]).
    Buffer(Arc<Vec<u8>>),
}

/// How [`Capture::open_with`] reads a regular file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FileAccess {
    /// Through a buffer (what [`Capture::open`] does): frames borrow a 1 MiB buffer that the
    /// next read refills. The cheapest way for one thread: the buffer stays in the cache, where
    /// a mapping costs page-table work and TLB misses (BENCHMARKS.md).
    #[default]
    Buffered,
    /// Mapped when the kernel grants a read lease (else through a buffer), so that frames lie
    /// in one [`SharedBytes`] that other threads can read ([`Capture::shared`]).
    Mapped,
    /// Through buffers that are handed out rather than reused: each batch's frames lie in
    /// one buffer that other threads can read ([`Batch::shared`]), and the capture reads on
    /// into another (a free one of those handed out before, or a new one) while any thread
    /// still holds it. The kernel's copy into the buffer costs less than mapping the pages in
    /// and out and reading every record from memory for the first time (BENCHMARKS.md,
    /// `--workers`).
    Handed,
}

impl std::ops::Deref for SharedBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.0 {
            Shared::Mapped(m) => m,
            Shared::Memory(v) => v,
            Shared::Buffer(b) => b,
        }
    }
}

impl std::fmt::Debug for SharedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedBytes({} bytes)", self.len())
    }
}

impl SharedBytes {
    /// Where `data` (a frame of this capture) starts in the input, or `None` if it does not lie
    /// inside it.
    pub fn offset_of(&self, data: &[u8]) -> Option<usize> {
        let base = self.as_ptr() as usize;
        let p = data.as_ptr() as usize;
        (p >= base && p + data.len() <= base + self.len()).then(|| p - base)
    }
}

struct Stream {
    reader: Box<dyn Read + Send>,
    /// Shared only with [`FileAccess::Handed`] (else always unique, written in place).
    buf: Arc<Vec<u8>>,
    /// Buffers handed out (with [`FileAccess::Handed`]), reused once nobody else holds them.
    spares: Vec<Arc<Vec<u8>>>,
    handed: bool,
    end: usize,
    eof: bool,
    /// A regular file read through the buffer: the file and its size when it was opened (the
    /// reader stops there, so a file that grows is read as it was).
    file: Option<(File, u64)>,
    /// Bytes read so far.
    read: u64,
}

impl Stream {
    /// One read into the free space (retrying on EINTR), unless the input has ended. A pipe
    /// hands out what has arrived, so a live producer's packets are processed as they come.
    fn read_some(&mut self) -> io::Result<()> {
        // Unique here: a buffer handed out is replaced before reading (`Capture::read_more`).
        let Some(buf) = Arc::get_mut(&mut self.buf) else {
            return Err(io::Error::other("reading into a buffer still handed out"));
        };
        while !self.eof && self.end < buf.len() {
            match self.reader.read(&mut buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    self.end += n;
                    self.read += n as u64;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// For a file read through the buffer that ended early: its size when opened and now.
    fn shrank(&self) -> Option<(u64, u64)> {
        let (file, size) = self.file.as_ref()?;
        (self.eof && self.read < *size)
            .then(|| (*size, file.metadata().map_or(self.read, |m| m.len())))
    }
}

/// An open capture: pcap or pcapng, from a mapped file, memory, or a stream.
pub struct Capture {
    name: String,
    input: Input,
    decoder: Decoder,
    /// Cursor into the mapping, memory or stream buffer.
    pos: usize,
    /// Byte offset in the input of the byte at `pos`.
    abs: u64,
    size: Option<u64>,
    descs: Vec<Desc>,
    pending: Option<CaptureError>,
    done: bool,
    /// End of the part of a mapping already paged in.
    populated: usize,
    /// A live capture, and the packets of the batch handed out.
    live: Option<Box<Live>>,
    ring_frames: Vec<RingFrame>,
    /// The input file, when it is one (also standard input redirected from a file).
    id: Option<FileId>,
    /// Frames handed out (for a classic pcap file's link-type count).
    handed: u64,
}

impl Capture {
    /// Opens a capture file; `-` reads standard input. Pipes and devices are streamed; a
    /// regular file is read through a buffer ([`FileAccess::Buffered`]). A file that another
    /// process truncates while it is read gives an error naming the byte offset, never a crash.
    pub fn open(path: &Path) -> Result<Self, CaptureError> {
        Self::open_with(path, FileAccess::Buffered)
    }

    /// [`Capture::open`], choosing how a regular file is read.
    ///
    /// Read through a buffer, the file is read up to the size it had when opened; if it
    /// shrinks, the reading ends with [`ErrorKind::Shrank`] at the offset where the bytes ran
    /// out. A mapping lets frames borrow the page cache with no copy, so other threads can
    /// read them ([`Capture::shared`]), but a mapped file that shrinks raises SIGBUS, which no
    /// Rust program can turn into an error. So with [`FileAccess::Mapped`] a file is mapped
    /// only under a read lease, which makes the kernel hold off any writer or truncation until
    /// the reader has stopped (the reader checks the lease before each batch and stops with
    /// [`ErrorKind::Changed`]); without a lease (not the file's owner, the file open for
    /// writing elsewhere, a file system without leases) it is read through a buffer.
    pub fn open_with(path: &Path, access: FileAccess) -> Result<Self, CaptureError> {
        let name = path.display().to_string();
        if name == "-" {
            let id = FileId::of_fd(std::os::fd::AsFd::as_fd(&io::stdin()));
            let mut c = Self::from_reader(&name, Box::new(io::stdin()))?;
            c.id = id;
            c.hand_out(access == FileAccess::Handed);
            return Ok(c);
        }
        let err = |e: io::Error| CaptureError::new(&name, None, ErrorKind::Io(e));
        let file = File::open(path).map_err(err)?;
        let meta = file.metadata().map_err(err)?;
        if !meta.is_file() {
            let mut c = Self::from_reader(&name, Box::new(file))?;
            c.hand_out(access == FileAccess::Handed);
            return Ok(c);
        }
        let id = Some(FileId { dev: meta.dev(), ino: meta.ino() });
        if meta.len() == 0 {
            return Err(CaptureError::new(&name, None, ErrorKind::Empty));
        }
        let mut c = if access == FileAccess::Mapped && lease::take(&file) {
            let map = map_file(&file).map_err(err)?;
            Self::start(name, Input::Mapped(Arc::new(map), file))?
        } else {
            let size = meta.len();
            let reader = Box::new(file.try_clone().map_err(err)?.take(size));
            let mut s = Stream::new(reader);
            s.file = Some((file, size));
            Self::start_stream(&name, s)?
        };
        c.hand_out(access == FileAccess::Handed);
        c.id = id;
        Ok(c)
    }

    /// The input file (device and inode), when the capture reads one: to refuse writing an
    /// output over it.
    pub fn file_id(&self) -> Option<FileId> {
        self.id
    }

    /// Read a stream through buffers handed out ([`FileAccess::Handed`]).
    fn hand_out(&mut self, on: bool) {
        if let Input::Stream(s) = &mut self.input {
            s.handed = on;
        }
    }

    /// Whether each batch's frames lie in bytes other threads can read ([`Batch::shared`]):
    /// a mapping, memory, or buffers handed out.
    pub fn shares_batches(&self) -> bool {
        match &self.input {
            Input::Mapped(..) | Input::Memory(_) => self.live.is_none(),
            Input::Stream(s) => s.handed,
        }
    }

    /// Whether a regular file is being read through a mapping (else a buffer).
    pub fn is_mapped(&self) -> bool {
        matches!(self.input, Input::Mapped(..))
    }

    /// Reads a capture held in memory (tests, fuzzing, embedded captures).
    pub fn from_bytes(name: &str, bytes: Vec<u8>) -> Result<Self, CaptureError> {
        Self::start(name.to_owned(), Input::Memory(bytes.into()))
    }

    /// Streams a capture from any reader, holding at most one batch of records in memory.
    pub fn from_reader(name: &str, reader: Box<dyn Read + Send>) -> Result<Self, CaptureError> {
        Self::start_stream(name, Stream::new(reader))
    }

    fn start_stream(name: &str, mut s: Stream) -> Result<Self, CaptureError> {
        // Enough for any file header.
        while !s.eof && s.end < 64 {
            s.read_some().map_err(|e| CaptureError::new(name, None, ErrorKind::Io(e)))?;
        }
        if let Some((was, now)) = s.shrank()
            && s.end < 64
        {
            let kind = ErrorKind::Shrank { was, now };
            return Err(CaptureError::new(name, Some(s.end as u64), kind));
        }
        Self::start(name.to_owned(), Input::Stream(s))
    }

    fn start(name: String, input: Input) -> Result<Self, CaptureError> {
        let (bytes, size): (&[u8], Option<u64>) = match &input {
            Input::Mapped(m, _) => (&m[..], Some(m.len() as u64)),
            Input::Memory(v) => (&v[..], Some(v.len() as u64)),
            Input::Stream(s) => (&s.buf[..s.end], s.file.as_ref().map(|f| f.1)),
        };
        let (decoder, header) = match Decoder::open(bytes) {
            Ok(Ok(d)) => d,
            Ok(Err(needed)) => {
                let kind = ErrorKind::Truncated {
                    what: "file header",
                    needed: needed as u64,
                    available: bytes.len() as u64,
                };
                return Err(CaptureError::new(&name, Some(0), kind));
            }
            Err(kind) => return Err(CaptureError::new(&name, None, kind)),
        };
        Ok(Self {
            name,
            input,
            decoder,
            pos: header,
            abs: header as u64,
            size,
            descs: Vec::with_capacity(256),
            pending: None,
            done: false,
            populated: 0,
            live: None,
            ring_frames: Vec::new(),
            id: None,
            handed: 0,
        })
    }

    /// Starts a live capture on `iface` (AF_PACKET, TPACKET_V3 ring; see [`crate::live`]).
    pub fn live(iface: &str, cfg: &LiveConfig) -> Result<Self, LiveError> {
        let live = Live::open(iface, cfg)?;
        // The decoder is never used for a live capture; give it a valid empty pcap to hold.
        let mut header = [0u8; 24];
        header[..4].copy_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        header[4..6].copy_from_slice(&2u16.to_le_bytes());
        header[6..8].copy_from_slice(&4u16.to_le_bytes());
        header[16..20].copy_from_slice(&cfg.snaplen.to_le_bytes());
        header[20..24].copy_from_slice(&live.link().to_linktype().to_le_bytes());
        let mut c = Self::start(iface.to_owned(), Input::Memory(header.to_vec().into()))
            .expect("a well-formed pcap header");
        c.size = None;
        c.live = Some(Box::new(live));
        Ok(c)
    }

    /// A live capture's counters and interface state, shared so that another thread (or a
    /// callback that cannot borrow the capture) can report them while it runs.
    pub fn live_monitor(&self) -> Option<Arc<LiveMonitor>> {
        self.live.as_ref().map(|l| l.monitor())
    }

    /// What the reader noticed in the records handed out so far: records longer than their
    /// snap length, implausible original lengths, frames of link types rampart does not parse.
    pub fn record_stats(&self) -> RecordStats {
        let mut st = self.decoder.stats.clone();
        if matches!(self.decoder.format(), Format::Pcap { .. }) && self.live.is_none() {
            let link = self.decoder.pcap_link();
            if !link.is_supported() {
                st.count_unsupported(link.to_linktype(), self.handed);
            }
        }
        st
    }

    /// The link type of the file's frames, as the file declares it so far: a classic pcap
    /// file's, a pcapng file's first interface (`None` before its description is read, and
    /// for a live capture). For an output that must say a link type before any frame.
    pub fn link_type(&self) -> Option<LinkType> {
        if self.live.is_some() { None } else { self.decoder.first_link() }
    }

    /// The name the capture was opened with.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The container format.
    pub fn format(&self) -> Format {
        self.decoder.format()
    }

    /// Total input size in bytes, when known (not for streams).
    pub fn size(&self) -> Option<u64> {
        self.size
    }

    /// Bytes of input consumed so far (packets, for a live capture).
    pub fn position(&self) -> u64 {
        self.abs
    }

    /// Whether this is a live capture (an empty batch then means "nothing yet", not the end).
    pub fn is_live(&self) -> bool {
        self.live.is_some()
    }

    /// Live capture: packets rampart took from the ring and packets the kernel dropped because
    /// the ring was full, so far (the counters are brought up to date first).
    pub fn kernel_stats(&mut self) -> Option<(u64, u64)> {
        self.live.as_mut().map(|l| {
            let s = l.refresh();
            (s.received, s.kernel_dropped)
        })
    }

    fn next_live(&mut self, max: usize) -> Result<Batch<'_>, CaptureError> {
        let Some(live) = self.live.as_deref_mut() else { unreachable!("checked by the caller") };
        // A live capture waits up to 100 ms, so callers see their stop flag promptly.
        live.next(max.max(1), 100, &mut self.ring_frames)
            .map_err(|kind| CaptureError::new(&self.name, None, kind))?;
        let link = live.link();
        self.abs += self.ring_frames.len() as u64;
        self.descs.extend(self.ring_frames.iter().map(|f| Desc {
            raw: RawFrame {
                ts: f.ts,
                data_start: f.start,
                caplen: f.caplen,
                origlen: f.origlen,
                link,
                interface: 0,
            },
            offset: 0,
        }));
        Ok(Batch { buf: live.block_bytes(), descs: &self.descs, input: None })
    }

    /// Hands out up to `max` frames. An empty batch means the input ended cleanly. After an
    /// error, frames decoded before it are handed out first and the error comes next time.
    pub fn next_batch(&mut self, max: usize) -> Result<Batch<'_>, CaptureError> {
        self.descs.clear();
        if self.live.is_some() {
            return self.next_live(max);
        }
        if let Some(e) = self.pending.take() {
            self.done = true;
            return Err(e);
        }
        // A mapped file is read only while the lease holds: once another process wants to
        // write or truncate it, not one more byte of the mapping is touched.
        if !self.done
            && let Input::Mapped(_, file) = &self.input
            && !lease::held(file)
        {
            self.done = true;
            return Err(CaptureError::new(&self.name, Some(self.abs), ErrorKind::Changed));
        }
        if !self.done
            && let Err(e) = self.decode(max.max(1))
        {
            if self.descs.is_empty() {
                self.done = true;
                return Err(e);
            }
            self.pending = Some(e);
        }
        self.handed += self.descs.len() as u64;
        let buf: &[u8] = match &self.input {
            Input::Mapped(m, _) => m,
            Input::Memory(v) => v,
            Input::Stream(s) => &s.buf[..s.end],
        };
        Ok(Batch { buf, descs: &self.descs, input: Some(&self.input) })
    }

    /// The whole input, shareable with other threads, for a capture read from a mapped file or
    /// memory (`None` for streams and live captures, whose buffers are reused). Every frame
    /// [`Capture::next_batch`] hands out lies inside it.
    pub fn shared(&self) -> Option<SharedBytes> {
        if self.live.is_some() {
            return None;
        }
        match &self.input {
            Input::Mapped(m, _) => Some(SharedBytes(Shared::Mapped(Arc::clone(m)))),
            Input::Memory(v) => Some(SharedBytes(Shared::Memory(Arc::clone(v)))),
            Input::Stream(_) => None,
        }
    }

    fn decode(&mut self, max: usize) -> Result<(), CaptureError> {
        if let Input::Mapped(m, _) = &self.input
            && self.pos + POPULATE_WINDOW / 2 >= self.populated
            && self.populated < m.len()
        {
            let len = POPULATE_WINDOW.min(m.len() - self.populated);
            // A hint: kernels before 5.14 refuse it, and then pages fault in one by one.
            let _ = m.advise_range(memmap2::Advice::PopulateRead, self.populated, len);
            self.populated += len;
        }
        // A stream's bytes before the cursor belong to batches already handed back; they are
        // dropped when more must be read (`read_more`), not here, so a buffer full of records
        // is not moved once per batch.
        while self.descs.len() < max {
            let (bytes, eof): (&[u8], bool) = match &self.input {
                Input::Mapped(m, _) => (&m[..], true),
                Input::Memory(v) => (&v[..], true),
                Input::Stream(s) => (&s.buf[..s.end], s.eof),
            };
            let need = if let Format::Pcap { nanos, .. } = self.decoder.format() {
                let base = self.abs - self.pos as u64;
                let descs = &mut self.descs;
                let room = max - descs.len();
                let run = self.decoder.pcap_run(bytes, &mut self.pos, room, nanos, |raw, rec| {
                    descs.push(Desc { raw, offset: base + rec as u64 })
                });
                self.abs = base + self.pos as u64;
                match run.map_err(|k| CaptureError::new(&self.name, Some(self.abs), k))? {
                    None => return Ok(()),
                    Some(need) => need,
                }
            } else {
                let rest = &bytes[self.pos..];
                let step = self
                    .decoder
                    .pcapng_block(rest)
                    .map_err(|k| CaptureError::new(&self.name, Some(self.abs), k))?;
                match step {
                    Step::Frame(mut raw, n) => {
                        raw.data_start += self.pos;
                        self.descs.push(Desc { raw, offset: self.abs });
                        self.advance(n);
                        continue;
                    }
                    Step::Skip(n) => {
                        self.advance(n);
                        continue;
                    }
                    Step::Need(needed, what) => (needed, what),
                }
            };
            let (needed, what) = need;
            let rest = bytes.len() - self.pos;
            if eof
                && let Input::Stream(s) = &self.input
                && let Some((was, now)) = s.shrank()
            {
                let kind = ErrorKind::Shrank { was, now };
                return Err(CaptureError::new(&self.name, Some(self.abs), kind));
            }
            if rest == 0 && eof {
                self.done = true;
                return Ok(());
            }
            if eof {
                let kind =
                    ErrorKind::Truncated { what, needed: needed as u64, available: rest as u64 };
                return Err(CaptureError::new(&self.name, Some(self.abs), kind));
            }
            // A pipe hands out what has arrived (a live producer's packets are processed as
            // they come); a file fills every batch, so batches end where a mapping's would.
            let file = matches!(&self.input, Input::Stream(s) if s.file.is_some());
            if !self.descs.is_empty() && !file {
                return Ok(());
            }
            self.read_more()?;
        }
        Ok(())
    }

    #[inline]
    fn advance(&mut self, n: usize) {
        self.pos += n;
        self.abs += n as u64;
    }

    /// Streams only: makes room (compacting, then doubling once the buffer is full of real
    /// bytes, so growth follows bytes that arrived, never a length read from the file) and
    /// reads more. The records of the batch being built stay, moved with their frames.
    fn read_more(&mut self) -> Result<(), CaptureError> {
        let Input::Stream(s) = &mut self.input else {
            return Ok(());
        };
        let base = self.abs - self.pos as u64;
        let keep = self.descs.first().map_or(self.pos, |d| (d.offset - base) as usize);
        let full = s.end - keep == s.buf.len();
        match Arc::get_mut(&mut s.buf) {
            Some(buf) => buf.copy_within(keep..s.end, 0),
            None => {
                // Handed out and still held: the bytes still to be used go on in a free
                // buffer of those handed out before, or a new one.
                let len = s.buf.len();
                let free = s.spares.iter().position(|b| Arc::strong_count(b) == 1);
                let mut next = match free {
                    Some(i) => s.spares.swap_remove(i),
                    None => Arc::new(vec![0; len]),
                };
                // Unique (free or new), so this neither copies nor waits.
                let buf = Arc::make_mut(&mut next);
                buf.resize(len.max(buf.len()), 0);
                buf[..s.end - keep].copy_from_slice(&s.buf[keep..s.end]);
                let old = std::mem::replace(&mut s.buf, next);
                if s.spares.len() < MAX_SPARES {
                    s.spares.push(old);
                }
            }
        }
        s.end -= keep;
        self.pos -= keep;
        for d in &mut self.descs {
            d.raw.data_start -= keep;
        }
        if full {
            // Unique now: written in place above, or replaced by a free buffer.
            let buf = Arc::make_mut(&mut s.buf);
            let len = buf.len() * 2;
            buf.resize(len, 0);
        }
        s.read_some().map_err(|e| CaptureError::new(&self.name, Some(self.abs), e.into()))
    }
}

impl Stream {
    fn new(reader: Box<dyn Read + Send>) -> Self {
        Self {
            reader,
            buf: Arc::new(vec![0; STREAM_BUF]),
            spares: Vec::new(),
            handed: false,
            end: 0,
            eof: false,
            file: None,
            read: 0,
        }
    }
}

/// Maps a capture file read-only; the caller holds a read lease on it.
#[allow(unsafe_code)]
fn map_file(file: &File) -> io::Result<Mmap> {
    // SAFETY: the mapping is read-only and only ever read through `&[u8]`. memmap2 asks the
    // caller to promise that nobody truncates or rewrites the file while it is mapped. The
    // caller holds a read lease (crate::lease): the kernel blocks any process that opens the
    // file for writing or truncates it until the lease is released, and the reader checks the
    // lease before every batch and stops reading the mapping once a break has begun. The
    // mapping keeps the open file, and so the lease, alive until the last frame borrowed from
    // it is gone.
    let map = unsafe { Mmap::map(file)? };
    // Capture files are read once, front to back.
    let _ = map.advise(memmap2::Advice::Sequential);
    Ok(map)
}

#[cfg(test)]
mod tests;
