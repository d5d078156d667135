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
        w.write(Timestamp::from_nanos(*ts), d.len() as u32 + 4, d).unwrap();
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
                    v.push((
                        f.ts.as_nanos(),
                        f.origlen,
                        f.data.to_vec(),
                        f.link,
                        f.interface,
                        f.offset,
                    ));
                }
            }
            Err(e) => return (v, Some(e)),
        }
    }
}

fn all_ways(bytes: &[u8]) -> Vec<(Vec<Seen>, Option<String>)> {
    let mut out = Vec::new();
    // The same bytes as a file, read through the buffer and (under a lease) mapped; its
    // errors name the file, so "mem" stands in for its path when they are compared.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mem");
    std::fs::write(&file, bytes).unwrap();
    let from_file = |access, batch| {
        let (v, e) = match Capture::open_with(&file, access) {
            Ok(c) => drain(c, batch),
            Err(e) => (Vec::new(), Some(e)),
        };
        (v, e.map(|e| e.to_string().replacen(&file.display().to_string(), "mem", 1)))
    };
    for batch in [1, 3, 64] {
        if !bytes.is_empty() {
            out.push(from_file(FileAccess::Buffered, batch));
            out.push(from_file(FileAccess::Mapped, batch));
            out.push(from_file(FileAccess::Handed, batch));
        }
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

/// A classic pcap record header: seconds, microseconds, captured and original length.
fn record(caplen: u32, origlen: u32) -> Vec<u8> {
    let mut h = vec![0u8; 8];
    h.extend_from_slice(&caplen.to_le_bytes());
    h.extend_from_slice(&origlen.to_le_bytes());
    h
}

fn stats_of(bytes: &[u8]) -> RecordStats {
    let mut c = Capture::from_bytes("mem", bytes.to_vec()).unwrap();
    while c.next_batch(64).is_ok_and(|b| !b.is_empty()) {}
    c.record_stats()
}

#[test]
fn records_longer_than_the_snap_length_are_read_as_libpcap_reads_them() {
    let mut w = PcapWriter::new(Vec::new(), LinkType::Ethernet, 8, false).unwrap();
    w.write(Timestamp::from_nanos(0), 4, b"abcd").unwrap();
    let mut bytes = w.into_inner().unwrap();
    // 100 bytes under a snap length of 8: within libpcap's 256 KiB, so read whole and counted.
    bytes.extend_from_slice(&record(100, 100));
    bytes.extend_from_slice(&[0xab; 100]);
    let (v, e) = read_consistently(&bytes);
    assert!(e.is_none(), "{e:?}");
    assert_eq!(v.len(), 2);
    assert_eq!(v[1].2, vec![0xab; 100]);
    assert_eq!(stats_of(&bytes).over_snaplen, 1);
    // Past libpcap's limit the file is corrupt: the error names the record.
    let at = bytes.len();
    bytes.extend_from_slice(&record(262_145, 262_145));
    bytes.extend_from_slice(&vec![0; 262_145]);
    let (v, e) = read_consistently(&bytes);
    assert_eq!(v.len(), 2);
    let e = e.unwrap();
    assert!(
        e.contains(&format!("byte offset {at}")) && e.contains("exceeds 262144, the largest"),
        "{e}"
    );
    // A header snap length above the limit is the limit, as in libpcap.
    let mut w = PcapWriter::new(Vec::new(), LinkType::Ethernet, u32::MAX, false).unwrap();
    w.write(Timestamp::from_nanos(0), 4, b"abcd").unwrap();
    let mut bytes = w.into_inner().unwrap();
    bytes.extend_from_slice(&record(300_000, 300_000));
    bytes.extend_from_slice(&vec![0; 300_000]);
    let (v, e) = read_consistently(&bytes);
    assert_eq!(v.len(), 1);
    assert!(e.unwrap().contains("exceeds 262144"));
    // Link types with a larger limit in libpcap (USBPcap: 1 MiB) keep it.
    let w = PcapWriter::new(Vec::new(), LinkType::Other(249), 65_535, false).unwrap();
    let mut bytes = w.into_inner().unwrap();
    bytes.extend_from_slice(&record(300_000, 300_000));
    bytes.extend_from_slice(&vec![1; 300_000]);
    let (v, e) = read_consistently(&bytes);
    assert!(e.is_none() && v.len() == 1, "{e:?}");
}

#[test]
fn implausible_original_lengths_are_counted_and_not_summed() {
    let mut w = PcapWriter::new(Vec::new(), LinkType::Ethernet, 65_535, false).unwrap();
    w.write(Timestamp::from_nanos(0), 60, b"ok").unwrap();
    let mut bytes = w.into_inner().unwrap();
    // Original length below the captured length, then 0xffffffff, then 1 MiB exactly.
    for origlen in [3, u32::MAX, 1 << 20] {
        bytes.extend_from_slice(&record(10, origlen));
        bytes.extend_from_slice(b"0123456789");
    }
    let (v, e) = read_consistently(&bytes);
    assert!(e.is_none());
    let orig: Vec<u32> = v.iter().map(|s| s.1).collect();
    assert_eq!(orig, vec![60, 10, 10, 1 << 20]);
    let st = stats_of(&bytes);
    assert_eq!((st.origlen_short, st.origlen_absurd, st.over_snaplen), (1, 1, 0));
    // The same in pcapng, enhanced and simple packet blocks.
    let mut ng = Ng::new(false);
    ng.interface(1, 0, None);
    ng.epb(0, 1, 2, b"abcd");
    ng.epb(0, 1, 0xffff_fff0, b"abcd");
    ng.spb(0xffff_fff0, b"abcd");
    let (v, e) = read_consistently(&ng.out);
    assert!(e.is_none());
    assert_eq!(v.iter().map(|s| s.1).collect::<Vec<_>>(), vec![4, 4, 4]);
    let st = stats_of(&ng.out);
    assert_eq!((st.origlen_short, st.origlen_absurd), (1, 2));
}

#[test]
fn pcapng_records_over_the_interface_snap_length() {
    let mut ng = Ng::new(false);
    ng.interface(1, 4, None);
    ng.epb(0, 1, 10, b"0123456789");
    let (v, e) = read_consistently(&ng.out);
    assert!(e.is_none() && v.len() == 1, "{e:?}");
    assert_eq!(stats_of(&ng.out).over_snaplen, 1);
}

#[test]
fn frames_of_unparsed_link_types_are_counted_by_type() {
    // PPP (9) in classic pcap: every frame.
    let mut w = PcapWriter::new(Vec::new(), LinkType::Other(9), 65_535, false).unwrap();
    for _ in 0..3 {
        w.write(Timestamp::from_nanos(0), 4, b"\xff\x03\x00\x21").unwrap();
    }
    let st = stats_of(&w.into_inner().unwrap());
    assert_eq!(st.unsupported, vec![(9, 3)]);
    // pcapng with Ethernet, C-HDLC (104) and IEEE 802.11 (105) interfaces.
    let mut ng = Ng::new(false);
    ng.interface(1, 0, None);
    ng.interface(104, 0, None);
    ng.interface(105, 0, None);
    for i in [0, 1, 1, 2, 0, 2, 1] {
        ng.epb(i, 1, 4, b"abcd");
    }
    let st = stats_of(&ng.out);
    assert_eq!(st.unsupported, vec![(104, 3), (105, 2)]);
    assert!(stats_of(&pcap(false, &[(1, b"x")])).is_clean());
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
        w.write(Timestamp::from_nanos(*ts), d.len() as u32, d).unwrap();
    }
    let bytes = w.into_inner().unwrap();
    let c = Capture::from_reader("s", Box::new(Cursor::new(bytes))).unwrap();
    let (v, e) = drain(c, 64);
    assert!(e.is_none());
    assert_eq!(v.len(), 12);
}

fn big_capture(records: usize) -> Vec<u8> {
    let payload = [0x5a; 100];
    let frames: Vec<(u64, &[u8])> = (0..records).map(|i| (i as u64 * 1000, &payload[..])).collect();
    pcap(false, &frames)
}

#[test]
fn files_read_mapped_and_buffered_alike() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.pcap");
    // Several buffer fills, with records across the buffer's edges.
    let bytes = big_capture(30_000);
    std::fs::write(&p, &bytes).unwrap();
    let buffered = Capture::open_with(&p, FileAccess::Buffered).unwrap();
    assert!(!buffered.is_mapped());
    assert_eq!(buffered.size(), Some(bytes.len() as u64));
    assert!(buffered.shared().is_none());
    let (a, e) = drain(buffered, 256);
    assert!(e.is_none(), "{e:?}");
    let (b, _) = drain(Capture::from_bytes("c.pcap", bytes).unwrap(), 256);
    assert_eq!(a.len(), 30_000);
    assert_eq!(a, b);
    let opened = Capture::open(&p).unwrap();
    assert!(!opened.is_mapped(), "one reader: a buffer");
    assert_eq!(opened.file_id(), FileId::of_path(&p));
    let (c, e) = drain(opened, 100);
    assert!(e.is_none());
    assert_eq!(a, c);
    let mapped = Capture::open_with(&p, FileAccess::Mapped).unwrap();
    assert!(mapped.shared().is_some() == mapped.is_mapped());
    let (d, e) = drain(mapped, 77);
    assert!(e.is_none());
    assert_eq!(a, d);
}

#[test]
fn buffers_handed_out_are_never_written_while_held_and_reused_once_let_go() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.pcap");
    // Many buffer fills, with records across the buffers' edges.
    let bytes = big_capture(60_000);
    std::fs::write(&p, &bytes).unwrap();
    let (want, _) = drain(Capture::from_bytes("c.pcap", bytes.clone()).unwrap(), 256);
    let mut c = Capture::open_with(&p, FileAccess::Handed).unwrap();
    assert!(c.shares_batches() && c.shared().is_none());
    // Every batch's bytes are held (as workers hold a job's) along with where its frames lie.
    let mut held: Vec<(SharedBytes, Vec<(usize, usize)>)> = Vec::new();
    let mut n = 0;
    loop {
        let b = c.next_batch(256).unwrap();
        if b.is_empty() {
            break;
        }
        let shared = b.shared().expect("a handed batch shares its bytes");
        let spans = b
            .iter()
            .map(|f| (shared.offset_of(f.data).expect("the frame lies in them"), f.data.len()))
            .collect();
        n += b.len();
        held.push((shared, spans));
    }
    assert_eq!(n, want.len());
    let distinct = |h: &[(SharedBytes, Vec<(usize, usize)>)]| {
        let mut p: Vec<usize> = h.iter().map(|(s, _)| s.as_ptr() as usize).collect();
        p.dedup();
        p.len()
    };
    assert!(distinct(&held) > 3, "several buffers");
    // Read to the end with everything held, every frame is still what the file holds.
    let mut k = 0;
    for (shared, spans) in &held {
        for &(at, len) in spans {
            assert_eq!(&shared[at..at + len], &want[k].2[..], "frame {k}");
            k += 1;
        }
    }
    // Let go of each batch as soon as it is read: a few buffers go round.
    let mut c = Capture::open_with(&p, FileAccess::Handed).unwrap();
    let mut seen = std::collections::HashSet::new();
    while let Ok(b) = c.next_batch(256) {
        if b.is_empty() {
            break;
        }
        seen.insert(b.shared().unwrap().as_ptr() as usize);
    }
    assert!(seen.len() <= 3, "{} buffers for one held at a time", seen.len());
}

/// The sizes of the batches a capture hands out.
fn batch_sizes(mut c: Capture, max: usize) -> Vec<usize> {
    let mut v = Vec::new();
    while let Ok(b) = c.next_batch(max) {
        if b.is_empty() {
            break;
        }
        v.push(b.len());
    }
    v
}

#[test]
fn a_buffered_file_ends_its_batches_where_a_mapping_does() {
    // Batch boundaries decide when idle flows are ended, so they must not depend on how the
    // file is read. Records of varied lengths straddle every buffer refill.
    let sizes: Vec<Vec<u8>> = (0..40_000).map(|i| vec![i as u8; 40 + (i * 7919) % 1400]).collect();
    let frames: Vec<(u64, &[u8])> = sizes.iter().map(|d| (1, &d[..])).collect();
    let bytes = pcap(false, &frames);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.pcap");
    std::fs::write(&p, &bytes).unwrap();
    for max in [1, 256, 1000] {
        let want = batch_sizes(Capture::from_bytes("m", bytes.clone()).unwrap(), max);
        assert!(want[..want.len() - 1].iter().all(|&n| n == max));
        for access in [FileAccess::Buffered, FileAccess::Mapped, FileAccess::Handed] {
            let got = batch_sizes(Capture::open_with(&p, access).unwrap(), max);
            assert_eq!(got, want, "{access:?}, batches of {max}");
        }
    }
}

#[test]
fn a_buffered_file_that_shrinks_ends_with_an_error_at_the_offset_reached() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.pcap");
    let bytes = big_capture(30_000);
    std::fs::write(&p, &bytes).unwrap();
    let mut c = Capture::open_with(&p, FileAccess::Buffered).unwrap();
    let mut seen = c.next_batch(10).unwrap().len();
    // Cut the file in the middle of a record, far past what the buffer holds.
    let cut = 24 + 116 * 20_000 + 50;
    std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(cut).unwrap();
    let e = loop {
        match c.next_batch(1000) {
            Ok(b) if b.is_empty() => panic!("a shrunk file must not end cleanly"),
            Ok(b) => seen += b.len(),
            Err(e) => break e,
        }
    };
    assert!(
        matches!(e.kind, ErrorKind::Shrank { was, now } if was == bytes.len() as u64 && now == cut)
    );
    // Every whole record before the cut was handed out, and the error names the cut record.
    assert_eq!(seen, 20_000);
    assert_eq!(e.offset, Some(24 + 116 * 20_000));
    let msg = e.to_string();
    assert!(msg.contains("c.pcap: byte offset 2320024: the file shrank"), "{msg}");
    assert!(!e.is_not_a_capture());
}

#[test]
fn a_mapped_file_stops_before_another_process_can_change_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.pcap");
    std::fs::write(&p, big_capture(5_000)).unwrap();
    let mut c = Capture::open_with(&p, FileAccess::Mapped).unwrap();
    if !c.is_mapped() {
        // No lease here (not the owner, or leases off): the buffered test covers this case.
        return;
    }
    let first = c.next_batch(100).unwrap().len();
    assert_eq!(first, 100);
    // A writer that will not wait starts the lease break and is refused; the file is intact.
    use std::os::unix::fs::OpenOptionsExt;
    let e = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&p)
        .expect_err("held off by the lease");
    assert_eq!(e.raw_os_error(), Some(libc::EWOULDBLOCK));
    let e = c.next_batch(100).err().expect("reading stops once the lease breaks");
    assert!(matches!(e.kind, ErrorKind::Changed));
    assert_eq!(e.offset, Some(24 + 116 * 100));
    assert!(e.to_string().contains("another process opened the file for writing"), "{e}");
    // The capture and its mapping gone, the writer gets in.
    drop(c);
    std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(10).unwrap();
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
