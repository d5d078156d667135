// Shared by the pcap and pcapng targets: read the input mapped-style and streamed in small
// chunks; both must give the same frames and the same error, and every frame must parse.

use std::io::{Cursor, Read};

use rampart_capture::Capture;
use rampart_flow::FlowKey;
use rampart_wire::PacketMeta;

struct Trickle(Cursor<Vec<u8>>, usize);

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.1);
        self.0.read(&mut buf[..n])
    }
}

fn drain(
    c: Result<Capture, rampart_capture::CaptureError>,
    input_len: usize,
) -> (Vec<(u64, u32, Vec<u8>, u64)>, Option<String>) {
    let mut c = match c {
        Ok(c) => c,
        Err(e) => return (Vec::new(), Some(e.to_string())),
    };
    let mut out = Vec::new();
    let mut last_offset = 0;
    loop {
        match c.next_batch(7) {
            Ok(b) if b.is_empty() => return (out, None),
            Ok(b) => {
                for f in b.iter() {
                    // A frame lies inside its record, and records follow each other.
                    assert!(f.offset as usize + f.data.len() <= input_len);
                    assert!(f.offset >= last_offset);
                    last_offset = f.offset + 1;
                    let m = PacketMeta::parse(f.link, f.data);
                    assert!(usize::from(m.l4_offset) <= f.data.len());
                    let _ = FlowKey::from_meta(&m);
                    out.push((f.ts.as_nanos(), f.origlen, f.data.to_vec(), f.offset));
                }
            }
            Err(e) => return (out, Some(e.to_string())),
        }
    }
}

pub fn check(data: &[u8]) {
    let mapped = drain(Capture::from_bytes("fuzz", data.to_vec()), data.len());
    let chunk = 1 + data.first().copied().unwrap_or(0) as usize % 13;
    let streamed = drain(
        Capture::from_reader("fuzz", Box::new(Trickle(Cursor::new(data.to_vec()), chunk))),
        data.len(),
    );
    assert_eq!(mapped, streamed);
}
