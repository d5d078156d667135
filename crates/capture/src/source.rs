use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use std::sync::Arc;

use memmap2::Mmap;
use rampart_wire::LinkType;

use crate::Timestamp;
use crate::decode::{Decoder, Format, RawFrame, Step};
use crate::error::{CaptureError, ErrorKind};
use crate::live::{LiveConfig, LiveError, Ring, RingFrame};

/// Bytes the streaming buffer starts with; it doubles only when one record does not fit.
const STREAM_BUF: usize = 1 << 20;
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
    Mapped(Arc<Mmap>),
    Memory(Arc<[u8]>),
    Stream(Stream),
}

/// The whole input of a mapped or in-memory capture, shared so that other threads can read the
/// frames of batches already handed out while the capture goes on ([`Capture::shared`]).
#[derive(Clone)]
pub struct SharedBytes(Shared);

#[derive(Clone)]
enum Shared {
    Mapped(Arc<Mmap>),
    Memory(Arc<[u8]>),
}

impl std::ops::Deref for SharedBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.0 {
            Shared::Mapped(m) => m,
            Shared::Memory(v) => v,
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
    buf: Vec<u8>,
    end: usize,
    eof: bool,
}

impl Stream {
    /// One read into the free space (retrying on EINTR), unless the input has ended. A pipe
    /// hands out what has arrived, so a live producer's packets are processed as they come.
    fn read_some(&mut self) -> io::Result<()> {
        while !self.eof && self.end < self.buf.len() {
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
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
    /// A live capture's ring, and the packets of the batch handed out.
    live: Option<Box<Ring>>,
    ring_frames: Vec<RingFrame>,
}

impl Capture {
    /// Opens a capture file; `-` reads standard input. Regular files are memory-mapped, other
    /// files (pipes, devices) are streamed.
    pub fn open(path: &Path) -> Result<Self, CaptureError> {
        let name = path.display().to_string();
        if name == "-" {
            return Self::from_reader(&name, Box::new(io::stdin()));
        }
        let err = |e: io::Error| CaptureError::new(&name, None, ErrorKind::Io(e));
        let file = File::open(path).map_err(err)?;
        let meta = file.metadata().map_err(err)?;
        if !meta.is_file() {
            return Self::from_reader(&name, Box::new(file));
        }
        if meta.len() == 0 {
            return Err(CaptureError::new(&name, None, ErrorKind::Empty));
        }
        let map = map_file(&file).map_err(err)?;
        Self::start(name, Input::Mapped(Arc::new(map)))
    }

    /// Reads a capture held in memory (tests, fuzzing, embedded captures).
    pub fn from_bytes(name: &str, bytes: Vec<u8>) -> Result<Self, CaptureError> {
        Self::start(name.to_owned(), Input::Memory(bytes.into()))
    }

    /// Streams a capture from any reader, holding at most one batch of records in memory.
    pub fn from_reader(name: &str, reader: Box<dyn Read + Send>) -> Result<Self, CaptureError> {
        let mut s = Stream { reader, buf: vec![0; STREAM_BUF], end: 0, eof: false };
        // Enough for any file header.
        while !s.eof && s.end < 64 {
            s.read_some().map_err(|e| CaptureError::new(name, None, ErrorKind::Io(e)))?;
        }
        Self::start(name.to_owned(), Input::Stream(s))
    }

    fn start(name: String, input: Input) -> Result<Self, CaptureError> {
        let (bytes, size): (&[u8], Option<u64>) = match &input {
            Input::Mapped(m) => (&m[..], Some(m.len() as u64)),
            Input::Memory(v) => (&v[..], Some(v.len() as u64)),
            Input::Stream(s) => (&s.buf[..s.end], None),
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
        })
    }

    /// Starts a live capture on `iface` (AF_PACKET, TPACKET_V3 ring).
    pub fn live(iface: &str, cfg: &LiveConfig) -> Result<Self, LiveError> {
        let ring = Ring::open(iface, cfg)?;
        // The decoder is never used for a live capture; give it a valid empty pcap to hold.
        let mut header = [0u8; 24];
        header[..4].copy_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        header[4..6].copy_from_slice(&2u16.to_le_bytes());
        header[6..8].copy_from_slice(&4u16.to_le_bytes());
        header[16..20].copy_from_slice(&cfg.snaplen.to_le_bytes());
        header[20..24].copy_from_slice(&ring.link.to_linktype().to_le_bytes());
        let mut c = Self::start(iface.to_owned(), Input::Memory(header.to_vec().into()))
            .expect("a well-formed pcap header");
        c.size = None;
        c.live = Some(Box::new(ring));
        Ok(c)
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

    /// Live capture: packets the kernel delivered to the ring and packets it dropped, so far.
    pub fn kernel_stats(&mut self) -> Option<(u64, u64)> {
        self.live.as_mut().map(|r| r.stats())
    }

    fn next_live(&mut self, max: usize) -> Result<Batch<'_>, CaptureError> {
        let Some(ring) = self.live.as_deref_mut() else { unreachable!("checked by the caller") };
        // A live capture waits up to 100 ms, so callers see their stop flag promptly.
        ring.next(max.max(1), 100, &mut self.ring_frames)
            .map_err(|e| CaptureError::new(&self.name, None, ErrorKind::Io(e)))?;
        let link = ring.link;
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
        Ok(Batch { buf: ring.block_bytes(), descs: &self.descs })
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
        if !self.done
            && let Err(e) = self.decode(max.max(1))
        {
            if self.descs.is_empty() {
                self.done = true;
                return Err(e);
            }
            self.pending = Some(e);
        }
        let buf: &[u8] = match &self.input {
            Input::Mapped(m) => m,
            Input::Memory(v) => v,
            Input::Stream(s) => &s.buf[..s.end],
        };
        Ok(Batch { buf, descs: &self.descs })
    }

    /// The whole input, shareable with other threads, for a capture read from a mapped file or
    /// memory (`None` for streams and live captures, whose buffers are reused). Every frame
    /// [`Capture::next_batch`] hands out lies inside it.
    pub fn shared(&self) -> Option<SharedBytes> {
        if self.live.is_some() {
            return None;
        }
        match &self.input {
            Input::Mapped(m) => Some(SharedBytes(Shared::Mapped(Arc::clone(m)))),
            Input::Memory(v) => Some(SharedBytes(Shared::Memory(Arc::clone(v)))),
            Input::Stream(_) => None,
        }
    }

    fn decode(&mut self, max: usize) -> Result<(), CaptureError> {
        if let Input::Mapped(m) = &self.input
            && self.pos + POPULATE_WINDOW / 2 >= self.populated
            && self.populated < m.len()
        {
            let len = POPULATE_WINDOW.min(m.len() - self.populated);
            // A hint: kernels before 5.14 refuse it, and then pages fault in one by one.
            let _ = m.advise_range(memmap2::Advice::PopulateRead, self.populated, len);
            self.populated += len;
        }
        if let Input::Stream(s) = &mut self.input {
            // Move the partial record left over from the last batch to the front.
            s.buf.copy_within(self.pos..s.end, 0);
            s.end -= self.pos;
            self.pos = 0;
        }
        while self.descs.len() < max {
            let (bytes, eof): (&[u8], bool) = match &self.input {
                Input::Mapped(m) => (&m[..], true),
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
            if rest == 0 && eof {
                self.done = true;
                return Ok(());
            }
            if eof {
                let kind =
                    ErrorKind::Truncated { what, needed: needed as u64, available: rest as u64 };
                return Err(CaptureError::new(&self.name, Some(self.abs), kind));
            }
            if !self.descs.is_empty() {
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
    /// reads more.
    fn read_more(&mut self) -> Result<(), CaptureError> {
        let Input::Stream(s) = &mut self.input else {
            return Ok(());
        };
        s.buf.copy_within(self.pos..s.end, 0);
        s.end -= self.pos;
        self.pos = 0;
        if s.end == s.buf.len() {
            let len = s.buf.len() * 2;
            s.buf.resize(len, 0);
        }
        s.read_some().map_err(|e| CaptureError::new(&self.name, Some(self.abs), e.into()))
    }
}

/// Maps a capture file read-only.
#[allow(unsafe_code)]
fn map_file(file: &File) -> io::Result<Mmap> {
    // SAFETY: the mapping is read-only and only ever read through `&[u8]`. memmap2 asks the
    // caller to promise that nobody truncates or rewrites the file while it is mapped; a capture
    // file being read is assumed stable, as tcpdump and Wireshark assume. If another process
    // truncates it anyway, the kernel raises SIGBUS on access; no memory is corrupted.
    let map = unsafe { Mmap::map(file)? };
    // Capture files are read once, front to back.
    let _ = map.advise(memmap2::Advice::Sequential);
    Ok(map)
}

#[cfg(test)]
mod tests;
