use super::*;
use crate::PcapWriter;
use std::io::Cursor;

/// A reader that hands out at most `chunk` bytes per read, to exercise buffer refills.
struct Trickle {
    data: Cursor<Vec<u8>>,
    chunk: usize,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.chunk);
        self.data.read(&mut buf[..n])
    }
}

fn pcap(nanos: bool, frames: &[(u64, &[u8])]) -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new(), LinkType::Ethernet, 65535, nanos).unwrap();
    for (ts, d) in frames {
        w.write(Timestamp(*ts), d.len() as u32 + 4, d).unwrap();
    }
    w.into_inner().unwrap()
}

/// Byte-swaps a little-endian pcap into a big-endian one.
fn to_big_endian(le: &[u8]) -> Vec<u8> {
    let mut out = le.to_vec();
    let swap32 = |b: &mut [u8], o: usize| b[o..o + 4].reverse();
    let swap16 = |b: &mut [u8], o: usize| b[o..o + 2].reverse();
    swap32(&mut out, 0);
    swap16(&mut out, 4);
    swap16(&mut out, 6);
    for o in [8, 12, 16, 20] {
        swap32(&mut out, o);
    }
    let mut p = 24;
    while p < out.len() {
        let cap = u32::from_le_bytes(le[p + 8..p + 12].try_into().unwrap()) as usize;
        for o in 0..4 {
            swap32(&mut out, p + 4 * o);
        }
        p += 16 + cap;
    }
    out
}

/// Builds pcapng blocks in either byte order.
pub(crate) struct Ng {
    pub(crate) out: Vec<u8>,
    be: bool,
}

impl Ng {
    pub(crate) fn new(be: bool) -> Self {
        let mut ng = Self { out: Vec::new(), be };
        ng.section();
        ng
    }
    fn u16(&self, v: u16) -> [u8; 2] {
        if self.be { v.to_be_bytes() } else { v.to_le_bytes() }
    }
    fn u32(&self, v: u32) -> [u8; 4] {
        if self.be { v.to_be_bytes() } else { v.to_le_bytes() }
    }
    pub(crate) fn block(&mut self, ty: u32, body: &[u8]) {
        let mut body = body.to_vec();
        while !body.len().is_multiple_of(4) {
            body.push(0);
        }
        let len = 12 + body.len() as u32;
        let (t, l) = (self.u32(ty), self.u32(len));
        self.out.extend_from_slice(&t);
        self.out.extend_from_slice(&l);
        self.out.extend_from_slice(&body);
        self.out.extend_from_slice(&l);
    }
    pub(crate) fn section(&mut self) {
        let mut b = Vec::new();
        b.extend_from_slice(&self.u32(0x1a2b_3c4d));
        b.extend_from_slice(&self.u16(1));
        b.extend_from_slice(&self.u16(0));
        b.extend_from_slice(&(-1i64).to_le_bytes());
        self.block(0x0a0d_0d0a, &b);
    }
    pub(crate) fn interface(&mut self, link: u16, snaplen: u32, tsresol: Option<u8>) {
        let mut b = Vec::new();
        b.extend_from_slice(&self.u16(link));
        b.extend_from_slice(&self.u16(0));
        b.extend_from_slice(&self.u32(snaplen));
        if let Some(r) = tsresol {
            b.extend_from_slice(&self.u16(9));
            b.extend_from_slice(&self.u16(1));
            b.extend_from_slice(&[r, 0, 0, 0]);
            b.extend_from_slice(&[0, 0, 0, 0]);
        }
        self.block(1, &b);
    }
    pub(crate) fn epb(&mut self, iface: u32, units: u64, origlen: u32, data: &[u8]) {
        let mut b = Vec::new();
        b.extend_from_slice(&self.u32(iface));
        b.extend_from_slice(&self.u32((units >> 32) as u32));
        b.extend_from_slice(&self.u32(units as u32));
        b.extend_from_slice(&self.u32(data.len() as u32));
        b.extend_from_slice(&self.u32(origlen));
        b.extend_from_slice(data);
        self.block(6, &b);
    }
    pub(crate) fn spb(&mut self, origlen: u32, data: &[u8]) {
        let mut b = Vec::new();
        b.extend_from_slice(&self.u32(origlen));
        b.extend_from_slice(data);
        self.block(3, &b);
    }
}

type Seen = (u64, u32, Vec<u8>, LinkType, u32, u64);

fn drain(mut c: Capture, batch: usize) -> (Vec<Seen>, Option<CaptureError>) {
    let mut v = Vec::new();
    loop {
        match c.next_batch(batch) {
            Ok(b) if b.is_empty() => return (v, None),
            Ok(b) => {
                for f in b.iter() {
                    v.push((f.ts.0, f.origlen, f.data.to_vec(), f.link, f.interface, f.offset));
                }
            }
            Err(e) => return (v, Some(e)),
        }
    }
}

fn all_ways(bytes: &[u8]) -> Vec<(Vec<Seen>, Option<String>)> {
    let mut out = Vec::new();
    for batch in [1, 3, 64] {
        let c = Capture::from_bytes("mem", bytes.to_vec());
        let (v, e) = match c {
            Ok(c) => drain(c, batch),
            Err(e) => (Vec::new(), Some(e)),
        };
        out.push((v, e.map(|e| e.to_string())));
        for chunk in [1, 7, 4096] {
            let r = Trickle { data: Cursor::new(bytes.to_vec()), chunk };
            let (v, e) = match Capture::from_reader("mem", Box::new(r)) {
                Ok(c) => drain(c, batch),
                Err(e) => (Vec::new(), Some(e)),
            };
            out.push((v, e.map(|e| e.to_string())));
        }
    }
    out
}

/// Every way of reading gives the same frames and the same error.
fn read_consistently(bytes: &[u8]) -> (Vec<Seen>, Option<String>) {
    let ways = all_ways(bytes);
    for w in &ways[1..] {
        assert_eq!(w, &ways[0]);
    }
    ways.into_iter().next().unwrap()
}

#[test]
fn pcap_micro_and_nano() {
    let frames: [(u64, &[u8]); 2] = [(1_700_000_000_123_456_000, b"abc"), (5_000_000_007, b"")];
    let (v, e) = read_consistently(&pcap(false, &frames));
    assert!(e.is_none());
    assert_eq!(v.len(), 2);
    assert_eq!(v[0].0, 1_700_000_000_123_456_000);
    assert_eq!(v[0].1, 7);
    assert_eq!(v[0].2, b"abc");
    assert_eq!(v[0].5, 24);
    assert_eq!(v[1].5, 24 + 16 + 3);
    assert_eq!(v[1].0, 5_000_000_000, "microsecond files drop the nanoseconds");
    let (v, _) = read_consistently(&pcap(true, &frames));
    assert_eq!(v[1].0, 5_000_000_007);
}

#[test]
fn pcap_big_endian_reads_like_little_endian() {
    let frames: [(u64, &[u8]); 2] = [(1_000_000, b"xyz1"), (2_000_000, b"q")];
    let le = pcap(false, &frames);
    let be = to_big_endian(&le);
    assert_ne!(le, be);
    let c = Capture::from_bytes("be", be.clone()).unwrap();
    assert_eq!(c.format(), Format::Pcap { nanos: false, big_endian: true });
    assert_eq!(read_consistently(&le), read_consistently(&be));
}

#[test]
fn pcapng_blocks_resolutions_interfaces_and_sections() {
    let mut ng = Ng::new(false);
    ng.interface(1, 0, None);
    ng.interface(101, 0, Some(9));
    ng.block(5, &[0; 20]); // an interface statistics block: skipped
    ng.epb(0, 1_500_000, 60, b"first");
    ng.epb(1, 7, 10, b"second");
    ng.spb(3, b"sp!x");
    ng.section();
    ng.interface(113, 0, Some(0x80 | 10));
    ng.epb(0, 3 * 1024, 3, b"new");
    let (v, e) = read_consistently(&ng.out);
    assert!(e.is_none(), "{e:?}");
    let got: Vec<_> = v.iter().map(|s| (s.0, s.1, s.2.as_slice(), s.3, s.4)).collect();
    assert_eq!(
        got,
        vec![
            (1_500_000_000, 60, &b"first"[..], LinkType::Ethernet, 0),
            (7, 10, &b"second"[..], LinkType::Raw, 1),
            (0, 3, &b"sp!"[..], LinkType::Ethernet, 0),
            (3_000_000_000, 3, &b"new"[..], LinkType::LinuxSll, 0),
        ]
    );
}

#[test]
fn pcapng_big_endian() {
    let mut le = Ng::new(false);
    let mut be = Ng::new(true);
    for ng in [&mut le, &mut be] {
        ng.interface(1, 0, Some(6));
        ng.epb(0, 42, 9, b"payload");
    }
    let a = read_consistently(&le.out);
    let b = read_consistently(&be.out);
    assert_eq!(a.0.len(), 1);
    assert_eq!(a.0[0].0, b.0[0].0);
    assert_eq!(a.0[0].2, b.0[0].2);
}

#[test]
fn not_a_capture_and_empty() {
    let e = Capture::from_bytes("t.txt", b"GET / HTTP/1.1\r\n".to_vec()).err().unwrap();
    assert!(e.is_not_a_capture());
    assert!(e.to_string().starts_with("t.txt: not a capture file"), "{e}");
    let e = Capture::from_bytes("empty", Vec::new()).err().unwrap();
    assert!(e.is_not_a_capture());
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("empty.pcap");
    std::fs::write(&p, b"").unwrap();
    let e = Capture::open(&p).err().unwrap();
    assert!(matches!(e.kind, ErrorKind::Empty));
    assert!(e.to_string().contains("empty.pcap"));
}

#[test]
fn truncated_record_keeps_earlier_frames_and_names_the_offset() {
    let mut bytes = pcap(false, &[(1, b"0123456789"), (2, b"abcdefghij")]);
    bytes.truncate(bytes.len() - 3);
    let (v, e) = read_consistently(&bytes);
    assert_eq!(v.len(), 1);
    let e = e.unwrap();
    assert!(e.contains("byte offset 50") && e.contains("cut off"), "{e}");
    // Cut inside the second record's header.
    bytes.truncate(24 + 26 + 5);
    let (v, e) = read_consistently(&bytes);
    assert_eq!(v.len(), 1);
    assert!(e.unwrap().contains("record header cut off"));
    // Cut inside the file header.
    let e = Capture::from_bytes("x", bytes[..10].to_vec()).err().unwrap();
    assert!(!e.is_not_a_capture());
    assert!(e.to_string().contains("file header cut off"), "{e}");
}

#[test]
fn record_longer_than_snaplen() {
    let mut w = PcapWriter::new(Vec::new(), LinkType::Ethernet, 8, false).unwrap();
    w.write(Timestamp(0), 4, b"abcd").unwrap();
    let mut bytes = w.into_inner().unwrap();
    bytes.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 100, 0, 0, 0, 100, 0, 0, 0]);
    let (v, e) = read_consistently(&bytes);
    assert_eq!(v.len(), 1);
    let e = e.unwrap();
    assert!(e.contains("byte offset 44") && e.contains("exceeds the snap length 8"), "{e}");
}

#[test]
fn corrupt_pcapng_blocks() {
    let mut ng = Ng::new(false);
    ng.interface(1, 0, None);
    ng.epb(0, 1, 1, b"a");
    let good = ng.out.clone();
    // A block length that is not a multiple of 4.
    let mut bad = good.clone();
    bad.extend_from_slice(&[6, 0, 0, 0, 13, 0, 0, 0, 0, 0, 0, 0, 0]);
    let (v, e) = read_consistently(&bad);
    assert_eq!(v.len(), 1);
    assert!(e.unwrap().contains(&format!("byte offset {}", good.len())));
    // A packet naming an interface that does not exist.
    let mut ng2 = Ng::new(false);
    ng2.interface(1, 0, None);
    ng2.epb(3, 1, 1, b"a");
    let (_, e) = read_consistently(&ng2.out);
    assert!(e.unwrap().contains("interface 3"));
    // A mismatched trailing length.
    let mut bad = good.clone();
    let n = bad.len();
    bad[n - 1] = 9;
    let (_, e) = read_consistently(&bad);
    assert!(e.unwrap().contains("trailing length"));
    // A captured length that runs past the block.
    let mut ng3 = Ng::new(false);
    ng3.interface(1, 0, None);
    ng3.epb(0, 1, 1, b"abcd");
    let n = ng3.out.len();
    ng3.out[n - 16] = 200; // the captured-length field
    let (_, e) = read_consistently(&ng3.out);
    assert!(e.unwrap().contains("runs past the block end"));
}

#[test]
fn stream_records_larger_than_the_initial_buffer() {
    let big = vec![7u8; 200_000];
    let frames: Vec<(u64, &[u8])> = (0..12).map(|i| (i, &big[..])).collect();
    let mut w = PcapWriter::new(Vec::new(), LinkType::Ethernet, 262_144, false).unwrap();
    for (ts, d) in &frames {
        w.write(Timestamp(*ts), d.len() as u32, d).unwrap();
    }
    let bytes = w.into_inner().unwrap();
    let c = Capture::from_reader("s", Box::new(Cursor::new(bytes))).unwrap();
    let (v, e) = drain(c, 64);
    assert!(e.is_none());
    assert_eq!(v.len(), 12);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Any bytes after a valid header: mapped and streamed reading agree and nothing panics.
    #[test]
    fn arbitrary_tails_read_consistently(tail in proptest::collection::vec(0u8..=255, 0..300),
                                         ng in proptest::bool::ANY) {
        let mut bytes = if ng {
            let mut n = Ng::new(false);
            n.interface(1, 0, None);
            n.out
        } else {
            pcap(false, &[])
        };
        bytes.extend_from_slice(&tail);
        read_consistently(&bytes);
    }
}
