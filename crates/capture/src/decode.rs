//! The record walker shared by mapped and streamed input: it looks at a byte slice that starts at
//! a record boundary and says what the next record is, or how many bytes it needs.

use crate::Timestamp;
use crate::error::ErrorKind;
use rampart_wire::LinkType;

/// The container format of a capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Classic libpcap.
    Pcap {
        /// Nanosecond timestamps (magic 0xa1b23c4d) rather than microseconds.
        nanos: bool,
        /// Written in big-endian order.
        big_endian: bool,
    },
    /// pcapng.
    Pcapng,
}

/// Largest captured length libpcap accepts for most link types (its `MAXIMUM_SNAPLEN`), and the
/// snap length assumed when a header gives none.
pub(crate) const MAX_SNAPLEN: u32 = 262_144;
/// Original lengths above this are called absurd (unless the link type's own limit is larger):
/// no link carries such a frame, and Linux's largest coalesced (GRO, BIG TCP) packets are
/// 512 KiB.
pub(crate) const MAX_ORIGLEN: u32 = 1 << 20;

/// The largest captured length libpcap accepts for a link type (`max_snaplen_for_dlt`): D-Bus
/// messages (231) up to 128 MiB, EBHSCR (279) 8 MiB, USBPcap (249) 1 MiB, 256 KiB otherwise.
pub(crate) fn max_caplen(link: LinkType) -> u32 {
    match link.to_linktype() {
        231 => 128 << 20,
        279 => 8 << 20,
        249 => 1 << 20,
        _ => MAX_SNAPLEN,
    }
}

/// What the walker noticed in the records it decoded; none of it stops the reading.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordStats {
    /// Records whose captured length exceeds the snap length their header or interface
    /// declares, accepted because it is within libpcap's limit ([`RecordStats::caplen_limit`]).
    /// They are handed out whole (tshark shows them whole; libpcap cuts them to the snap
    /// length).
    pub over_snaplen: u64,
    /// Records whose original length is below their captured length. The frame's `origlen`
    /// is then its captured length.
    pub origlen_short: u64,
    /// Records whose original length is absurd (above 1 MiB, or the link type's own larger
    /// limit), such as 0xffffffff. The frame's `origlen` is then its captured length, so byte
    /// totals are not inflated.
    pub origlen_absurd: u64,
    /// Frames of link types rampart does not parse, by LINKTYPE_ number, in order of first
    /// appearance.
    pub unsupported: Vec<(u32, u64)>,
}

impl RecordStats {
    /// libpcap's limit on a record's captured length for `link`: records above it are corrupt.
    pub fn caplen_limit(link: LinkType) -> u32 {
        max_caplen(link)
    }

    /// Whether anything was noticed.
    pub fn is_clean(&self) -> bool {
        *self == Self::default()
    }

    pub(crate) fn count_unsupported(&mut self, link: u32, n: u64) {
        if n == 0 {
            return;
        }
        match self.unsupported.iter_mut().find(|(l, _)| *l == link) {
            Some((_, c)) => *c += n,
            None => self.unsupported.push((link, n)),
        }
    }

    /// The original length to hand out for a record, counting it when it cannot be right.
    #[inline]
    fn origlen(&mut self, origlen: u32, caplen: u32, limit: u32) -> u32 {
        if origlen < caplen {
            self.origlen_short += 1;
            caplen
        } else if origlen > limit {
            self.origlen_absurd += 1;
            caplen
        } else {
            origlen
        }
    }
}
/// Largest pcapng block accepted; larger ones are called corrupt rather than buffered.
pub(crate) const MAX_BLOCK: u32 = 128 << 20;

const PCAP_HEADER: usize = 24;
const PCAP_RECORD: usize = 16;
const SHB: u32 = 0x0a0d_0d0a;
const BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;

/// A decoded packet record: where its bytes are, relative to the slice given to the decoder.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawFrame {
    pub(crate) ts: Timestamp,
    pub(crate) data_start: usize,
    pub(crate) caplen: u32,
    pub(crate) origlen: u32,
    pub(crate) link: LinkType,
    pub(crate) interface: u32,
}

/// What the next bytes hold.
pub(crate) enum Step {
    /// A packet record `consumed` bytes long.
    Frame(RawFrame, usize),
    /// A non-packet block (pcapng) `consumed` bytes long, already acted on.
    Skip(usize),
    /// The record is not complete: at least `needed` bytes from the cursor are required.
    Need(usize, &'static str),
}

#[derive(Clone, Copy, Debug)]
struct Interface {
    link: LinkType,
    snaplen: u32,
    /// Timestamp unit: 10^-n when `pow2` is false, 2^-n when true.
    resol: u8,
    pow2: bool,
    offset_secs: i64,
}

/// Walker state: the format and, for pcapng, the current section's byte order and interfaces.
pub(crate) struct Decoder {
    format: Format,
    big_endian: bool,
    pcap_link: LinkType,
    pcap_snaplen: u32,
    /// libpcap's limit for the pcap link type, and the original-length limit.
    pcap_max: u32,
    pcap_origmax: u32,
    interfaces: Vec<Interface>,
    pub(crate) stats: RecordStats,
}

#[inline]
fn rd32(b: &[u8], off: usize, be: bool) -> u32 {
    let a = [b[off], b[off + 1], b[off + 2], b[off + 3]];
    if be { u32::from_be_bytes(a) } else { u32::from_le_bytes(a) }
}

#[inline]
fn rd16(b: &[u8], off: usize, be: bool) -> u16 {
    let a = [b[off], b[off + 1]];
    if be { u16::from_be_bytes(a) } else { u16::from_le_bytes(a) }
}

impl Decoder {
    /// Reads the file header at the start of `b`. Returns the decoder and the header length, or
    /// how many bytes it needs.
    pub(crate) fn open(b: &[u8]) -> Result<Result<(Self, usize), usize>, ErrorKind> {
        if b.len() < 4 {
            return if b.is_empty() { Err(ErrorKind::Empty) } else { Ok(Err(4)) };
        }
        let magic = [b[0], b[1], b[2], b[3]];
        let pcap = match u32::from_le_bytes(magic) {
            0xa1b2_c3d4 => Some((false, false)),
            0xa1b2_3c4d => Some((true, false)),
            _ => match u32::from_be_bytes(magic) {
                0xa1b2_c3d4 => Some((false, true)),
                0xa1b2_3c4d => Some((true, true)),
                _ => None,
            },
        };
        let mut d = Self {
            format: Format::Pcapng,
            big_endian: false,
            pcap_link: LinkType::Ethernet,
            pcap_snaplen: MAX_SNAPLEN,
            pcap_max: MAX_SNAPLEN,
            pcap_origmax: MAX_ORIGLEN,
            interfaces: Vec::new(),
            stats: RecordStats::default(),
        };
        if let Some((nanos, be)) = pcap {
            if b.len() < PCAP_HEADER {
                return Ok(Err(PCAP_HEADER));
            }
            let (major, minor) = (rd16(b, 4, be), rd16(b, 6, be));
            if major != 2 {
                return Err(ErrorKind::Version { format: "pcap", major, minor });
            }
            d.format = Format::Pcap { nanos, big_endian: be };
            d.big_endian = be;
            // The upper bits of the link-type field carry FCS information (LT_FCS_*).
            d.pcap_link = LinkType::from_linktype(rd32(b, 20, be) & 0x03ff_ffff);
            d.pcap_max = max_caplen(d.pcap_link);
            d.pcap_origmax = d.pcap_max.max(MAX_ORIGLEN);
            // As libpcap: no snap length, or one above the link type's limit, means the limit.
            d.pcap_snaplen = match rd32(b, 16, be) {
                0 => d.pcap_max,
                s => s.min(d.pcap_max),
            };
            return Ok(Ok((d, PCAP_HEADER)));
        }
        if u32::from_le_bytes(magic) == SHB {
            // The section header is decoded like any block; it sets the byte order.
            return Ok(Ok((d, 0)));
        }
        Err(ErrorKind::NotACapture { found: hex(&magic), hint: hint(b) })
    }

    /// The container format.
    pub(crate) fn format(&self) -> Format {
        self.format
    }

    /// Decodes up to `room` consecutive classic pcap records from `b[*pos..]`, calling `push`
    /// with each frame (its `data_start` relative to `b`) and its record's start. Returns the
    /// bytes the next record needs when it is incomplete, or `None` once `room` frames are out.
    /// One tight loop per batch: no per-record dispatch on the byte order.
    #[inline]
    pub(crate) fn pcap_run(
        &mut self,
        b: &[u8],
        pos: &mut usize,
        room: usize,
        nanos: bool,
        push: impl FnMut(RawFrame, usize),
    ) -> Result<Option<(usize, &'static str)>, ErrorKind> {
        if self.big_endian {
            self.pcap_loop::<true>(b, pos, room, nanos, push)
        } else {
            self.pcap_loop::<false>(b, pos, room, nanos, push)
        }
    }

    #[inline(always)]
    fn pcap_loop<const BE: bool>(
        &mut self,
        b: &[u8],
        pos: &mut usize,
        room: usize,
        nanos: bool,
        mut push: impl FnMut(RawFrame, usize),
    ) -> Result<Option<(usize, &'static str)>, ErrorKind> {
        for _ in 0..room {
            let p = *pos;
            let Some(h) = b.get(p..p + PCAP_RECORD) else {
                return Ok(Some((PCAP_RECORD, "record header")));
            };
            let w = |i: usize| {
                let a = [h[i], h[i + 1], h[i + 2], h[i + 3]];
                if BE { u32::from_be_bytes(a) } else { u32::from_le_bytes(a) }
            };
            let (secs, frac, caplen, origlen) = (w(0), w(4), w(8), w(12));
            if caplen > self.pcap_snaplen {
                // libpcap reads records up to its limit whatever the header says.
                if caplen > self.pcap_max {
                    return Err(ErrorKind::RecordTooLong { len: caplen, limit: self.pcap_max });
                }
                self.stats.over_snaplen += 1;
            }
            let origlen = if origlen < caplen || origlen > self.pcap_origmax {
                self.stats.origlen(origlen, caplen, self.pcap_origmax)
            } else {
                origlen
            };
            let total = PCAP_RECORD + caplen as usize;
            if b.len() - p < total {
                return Ok(Some((total, "record")));
            }
            let nanos = if nanos { frac } else { frac.saturating_mul(1000) };
            let frame = RawFrame {
                ts: Timestamp::from_parts(u64::from(secs), nanos),
                data_start: p + PCAP_RECORD,
                caplen,
                origlen,
                link: self.pcap_link,
                interface: 0,
            };
            push(frame, p);
            *pos = p + total;
        }
        Ok(None)
    }

    /// Decodes the pcapng block at the start of `b` (classic pcap goes through
    /// [`Decoder::pcap_run`]).
    pub(crate) fn pcapng_block(&mut self, b: &[u8]) -> Result<Step, ErrorKind> {
        if b.len() < 12 {
            return Ok(Step::Need(12, "block header"));
        }
        let raw_type = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        if raw_type == SHB {
            let magic = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
            self.big_endian = match magic {
                BYTE_ORDER_MAGIC => false,
                m if m.swap_bytes() == BYTE_ORDER_MAGIC => true,
                _ => {
                    return Err(ErrorKind::BadBlock(format!("bad byte-order magic {magic:#010x}")));
                }
            };
        }
        let be = self.big_endian;
        let btype = rd32(b, 0, be);
        let len = rd32(b, 4, be);
        if len < 12 || !len.is_multiple_of(4) {
            return Err(ErrorKind::BadBlock(format!(
                "block length {len} is not a multiple of 4 of at least 12"
            )));
        }
        if len > MAX_BLOCK {
            return Err(ErrorKind::BadBlock(format!("block length {len} exceeds {MAX_BLOCK}")));
        }
        let len_us = len as usize;
        if b.len() < len_us {
            return Ok(Step::Need(len_us, "block"));
        }
        if rd32(b, len_us - 4, be) != len {
            return Err(ErrorKind::BadBlock(format!(
                "trailing length {} differs from leading length {len}",
                rd32(b, len_us - 4, be)
            )));
        }
        let body = &b[8..len_us - 4];
        match btype {
            SHB => {
                if body.len() < 16 {
                    return Err(ErrorKind::BadBlock("section header shorter than 28".into()));
                }
                let (major, minor) = (rd16(body, 4, be), rd16(body, 6, be));
                if major != 1 {
                    return Err(ErrorKind::Version { format: "pcapng", major, minor });
                }
                self.interfaces.clear();
                Ok(Step::Skip(len_us))
            }
            1 => {
                if body.len() < 8 {
                    return Err(ErrorKind::BadBlock(
                        "interface description shorter than 20".into(),
                    ));
                }
                let mut iface = Interface {
                    link: LinkType::from_linktype(u32::from(rd16(body, 0, be))),
                    snaplen: rd32(body, 4, be),
                    resol: 6,
                    pow2: false,
                    offset_secs: 0,
                };
                for (code, val) in Options::new(&body[8..], be) {
                    match (code, val.len()) {
                        (9, 1) => {
                            iface.pow2 = val[0] & 0x80 != 0;
                            iface.resol = val[0] & 0x7f;
                        }
                        (14, 8) => {
                            let a: [u8; 8] = val.try_into().unwrap_or_default();
                            iface.offset_secs =
                                if be { i64::from_be_bytes(a) } else { i64::from_le_bytes(a) };
                        }
                        _ => {}
                    }
                }
                self.interfaces.push(iface);
                Ok(Step::Skip(len_us))
            }
            // Enhanced packet block, and the obsolete packet block with a 16-bit interface id.
            6 | 2 => {
                if body.len() < 20 {
                    return Err(ErrorKind::BadBlock("packet block shorter than 32".into()));
                }
                let id = if btype == 6 { rd32(body, 0, be) } else { u32::from(rd16(body, 0, be)) };
                let iface = self.interface(id)?;
                let units = (u64::from(rd32(body, 4, be)) << 32) | u64::from(rd32(body, 8, be));
                let caplen = rd32(body, 12, be);
                let origlen = rd32(body, 16, be);
                if caplen as usize > body.len() - 20 {
                    return Err(ErrorKind::BadBlock(format!(
                        "captured length {caplen} runs past the block end ({} bytes of data)",
                        body.len() - 20
                    )));
                }
                let max = max_caplen(iface.link);
                if caplen > max {
                    return Err(ErrorKind::RecordTooLong { len: caplen, limit: max });
                }
                if iface.snaplen != 0 && caplen > iface.snaplen {
                    self.stats.over_snaplen += 1;
                }
                let origlen = self.stats.origlen(origlen, caplen, max.max(MAX_ORIGLEN));
                self.count_link(iface.link);
                let frame = RawFrame {
                    ts: iface.timestamp(units),
                    data_start: 28,
                    caplen,
                    origlen,
                    link: iface.link,
                    interface: id,
                };
                Ok(Step::Frame(frame, len_us))
            }
            3 => {
                if body.len() < 4 {
                    return Err(ErrorKind::BadBlock("simple packet block shorter than 16".into()));
                }
                let iface = self.interface(0)?;
                let origlen = rd32(body, 0, be);
                let mut caplen = origlen.min((body.len() - 4) as u32);
                if iface.snaplen != 0 {
                    caplen = caplen.min(iface.snaplen);
                }
                let origlen =
                    self.stats.origlen(origlen, caplen, max_caplen(iface.link).max(MAX_ORIGLEN));
                self.count_link(iface.link);
                let frame = RawFrame {
                    ts: Timestamp::from_nanos(0),
                    data_start: 12,
                    caplen,
                    origlen,
                    link: iface.link,
                    interface: 0,
                };
                Ok(Step::Frame(frame, len_us))
            }
            _ => Ok(Step::Skip(len_us)),
        }
    }

    /// The pcap link type (for a classic pcap file, every frame's).
    pub(crate) fn pcap_link(&self) -> LinkType {
        self.pcap_link
    }

    /// The link type of the file's frames as far as read: a classic pcap file's, or the first
    /// interface of the current pcapng section's (`None` before one is described).
    pub(crate) fn first_link(&self) -> Option<LinkType> {
        match self.format {
            Format::Pcap { .. } => Some(self.pcap_link),
            _ => self.interfaces.first().map(|i| i.link),
        }
    }

    #[inline]
    fn count_link(&mut self, link: LinkType) {
        if !link.is_supported() {
            self.stats.count_unsupported(link.to_linktype(), 1);
        }
    }

    fn interface(&self, id: u32) -> Result<Interface, ErrorKind> {
        self.interfaces.get(id as usize).copied().ok_or_else(|| {
            ErrorKind::BadBlock(format!(
                "packet names interface {id}, but the section describes {}",
                self.interfaces.len()
            ))
        })
    }
}

impl Interface {
    fn timestamp(&self, units: u64) -> Timestamp {
        let u = u128::from(units);
        let ns: u128 = if self.pow2 {
            if self.resol >= 64 { 0 } else { (u * 1_000_000_000) >> self.resol }
        } else if self.resol <= 9 {
            u * 10u128.pow(u32::from(9 - self.resol))
        } else if self.resol <= 38 {
            u / 10u128.pow(u32::from(self.resol - 9))
        } else {
            0
        };
        let ns = ns.min(u128::from(u64::MAX)) as u64;
        let off = self.offset_secs.unsigned_abs().saturating_mul(1_000_000_000);
        Timestamp::from_nanos(if self.offset_secs >= 0 {
            ns.saturating_add(off)
        } else {
            ns.saturating_sub(off)
        })
    }
}

/// Iterator over pcapng options: (code, value). Stops at opt_endofopt or at malformed data.
struct Options<'a> {
    b: &'a [u8],
    be: bool,
}

impl<'a> Options<'a> {
    fn new(b: &'a [u8], be: bool) -> Self {
        Self { b, be }
    }
}

impl<'a> Iterator for Options<'a> {
    type Item = (u16, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.b.len() < 4 {
            return None;
        }
        let code = rd16(self.b, 0, self.be);
        let len = usize::from(rd16(self.b, 2, self.be));
        if code == 0 {
            return None;
        }
        let val = self.b.get(4..4 + len)?;
        let padded = (4 + len).div_ceil(4) * 4;
        self.b = self.b.get(padded..).unwrap_or_default();
        Some((code, val))
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(" ")
}

fn hint(b: &[u8]) -> &'static str {
    match b {
        [0x28, 0xb5, 0x2f, 0xfd, ..] => " (zstd-compressed data: decompress it first)",
        [0x1f, 0x8b, ..] => " (gzip-compressed data: decompress it first)",
        [0xfd, b'7', b'z', b'X', ..] => " (xz-compressed data: decompress it first)",
        [b'B', b'Z', b'h', ..] => " (bzip2-compressed data: decompress it first)",
        _ if b.iter().take(64).all(|c| c.is_ascii_graphic() || c.is_ascii_whitespace()) => {
            " (this looks like text)"
        }
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamp_resolutions() {
        let mut i = Interface {
            link: LinkType::Ethernet,
            snaplen: 0,
            resol: 6,
            pow2: false,
            offset_secs: 0,
        };
        assert_eq!(i.timestamp(1_500_000), Timestamp::from_nanos(1_500_000_000));
        i.resol = 9;
        assert_eq!(i.timestamp(7), Timestamp::from_nanos(7));
        i.resol = 12;
        assert_eq!(i.timestamp(7_000), Timestamp::from_nanos(7));
        i.pow2 = true;
        i.resol = 10;
        assert_eq!(i.timestamp(1024 * 3), Timestamp::from_nanos(3_000_000_000));
        i.pow2 = false;
        i.resol = 0;
        i.offset_secs = -1;
        assert_eq!(i.timestamp(5), Timestamp::from_nanos(4_000_000_000));
        i.offset_secs = 2;
        assert_eq!(i.timestamp(u64::MAX), Timestamp::from_nanos(u64::MAX));
    }

    #[test]
    fn magic_detection() {
        assert!(matches!(Decoder::open(&[]), Err(ErrorKind::Empty)));
        assert!(matches!(Decoder::open(&[0xd4, 0xc3]), Ok(Err(4))));
        let err = Decoder::open(b"hello world, not a capture").err().unwrap();
        assert!(err.to_string().contains("looks like text"), "{err}");
        let err = Decoder::open(&[0x28, 0xb5, 0x2f, 0xfd, 0, 0]).err().unwrap();
        assert!(err.to_string().contains("zstd"), "{err}");
    }

    #[test]
    fn options_iterator_stops_on_bad_length() {
        let b = [9, 0, 1, 0, 6, 0, 0, 0, 2, 0, 200, 0, 1];
        let v: Vec<_> = Options::new(&b, false).collect();
        assert_eq!(v, vec![(9, &[6u8][..])]);
    }
}
