use std::io::{self, Write};

use crate::Timestamp;
use rampart_wire::LinkType;

/// Writes classic pcap files (little-endian, microsecond or nanosecond timestamps).
pub struct PcapWriter<W: Write> {
    out: W,
    nanos: bool,
    snaplen: u32,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header and returns the writer.
    pub fn new(mut out: W, link: LinkType, snaplen: u32, nanos: bool) -> io::Result<Self> {
        let magic: u32 = if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 };
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&magic.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        h[16..20].copy_from_slice(&snaplen.to_le_bytes());
        h[20..24].copy_from_slice(&link.to_linktype().to_le_bytes());
        out.write_all(&h)?;
        Ok(Self { out, nanos, snaplen })
    }

    /// Appends one record; `data` longer than the snap length is cut to it.
    pub fn write(&mut self, ts: Timestamp, origlen: u32, data: &[u8]) -> io::Result<()> {
        let data = &data[..data.len().min(self.snaplen as usize)];
        let frac = if self.nanos { ts.subsec_nanos() } else { ts.subsec_micros() };
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&(ts.secs() as u32).to_le_bytes());
        h[4..8].copy_from_slice(&frac.to_le_bytes());
        h[8..12].copy_from_slice(&(data.len() as u32).to_le_bytes());
        h[12..16].copy_from_slice(&origlen.max(data.len() as u32).to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(data)
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}
