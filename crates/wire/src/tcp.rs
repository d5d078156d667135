//! TCP headers (RFC 9293) and their options (MSS, window scale, SACK, timestamps).

/// Length of a TCP header without options.
pub const MIN_HEADER_LEN: usize = 20;

/// TCP flag bits as they sit in the low 9 bits of bytes 12-13.
pub mod flags {
    /// No more data from sender.
    pub const FIN: u16 = 0x001;
    /// Synchronize sequence numbers.
    pub const SYN: u16 = 0x002;
    /// Reset the connection.
    pub const RST: u16 = 0x004;
    /// Push function.
    pub const PSH: u16 = 0x008;
    /// Acknowledgment field significant.
    pub const ACK: u16 = 0x010;
    /// Urgent pointer field significant.
    pub const URG: u16 = 0x020;
    /// ECN echo.
    pub const ECE: u16 = 0x040;
    /// Congestion window reduced.
    pub const CWR: u16 = 0x080;
    /// ECN nonce (historic, RFC 3540).
    pub const NS: u16 = 0x100;
}

/// A borrowed view of a TCP header; [`Header::new`] checks the 20 fixed bytes are present.
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    bytes: &'a [u8],
}

impl<'a> Header<'a> {
    /// A view of `bytes`, or `None` when fewer than [`MIN_HEADER_LEN`] bytes are present.
    #[inline]
    pub fn new(bytes: &'a [u8]) -> Option<Self> {
        (bytes.len() >= MIN_HEADER_LEN).then_some(Self { bytes })
    }

    /// Source port.
    #[inline]
    pub fn src_port(&self) -> u16 {
        u16::from_be_bytes([self.bytes[0], self.bytes[1]])
    }

    /// Destination port.
    #[inline]
    pub fn dst_port(&self) -> u16 {
        u16::from_be_bytes([self.bytes[2], self.bytes[3]])
    }

    /// Sequence number.
    #[inline]
    pub fn seq(&self) -> u32 {
        u32::from_be_bytes([self.bytes[4], self.bytes[5], self.bytes[6], self.bytes[7]])
    }

    /// Acknowledgment number.
    #[inline]
    pub fn ack(&self) -> u32 {
        u32::from_be_bytes([self.bytes[8], self.bytes[9], self.bytes[10], self.bytes[11]])
    }

    /// Header length in bytes (data offset x 4), options included.
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.bytes[12] >> 4) * 4
    }

    /// The nine flag bits (see [`flags`]).
    #[inline]
    pub fn flags(&self) -> u16 {
        u16::from_be_bytes([self.bytes[12], self.bytes[13]]) & 0x01ff
    }

    /// Window field (unscaled).
    #[inline]
    pub fn window(&self) -> u16 {
        u16::from_be_bytes([self.bytes[14], self.bytes[15]])
    }

    /// Checksum as stored (not verified here).
    #[inline]
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes([self.bytes[16], self.bytes[17]])
    }

    /// Urgent pointer.
    #[inline]
    pub fn urgent(&self) -> u16 {
        u16::from_be_bytes([self.bytes[18], self.bytes[19]])
    }

    /// The options present in the buffer, possibly fewer bytes than the header claims.
    #[inline]
    pub fn options(&self) -> Options<'a> {
        let end = self.header_len().clamp(MIN_HEADER_LEN, self.bytes.len());
        Options { bytes: &self.bytes[MIN_HEADER_LEN..end] }
    }
}

/// One TCP option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpOption<'a> {
    /// Maximum segment size (kind 2).
    Mss(u16),
    /// Window scale shift (kind 3).
    WindowScale(u8),
    /// SACK permitted (kind 4).
    SackPermitted,
    /// SACK blocks (kind 5): the raw 8-byte left/right edge pairs.
    Sack(&'a [u8]),
    /// Timestamps (kind 8): TSval and TSecr.
    Timestamps {
        /// The sender's timestamp value.
        tsval: u32,
        /// The timestamp echoed back.
        tsecr: u32,
    },
    /// Any other option, by kind, with its data.
    Other(u8, &'a [u8]),
}

/// A problem met while iterating options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionError {
    /// An option runs past the captured bytes (snaplen), or past the header.
    Truncated,
    /// An option length below 2, or a known option with the wrong length.
    BadLength,
}

/// Iterator over the options of a header. It stops at end-of-list, at the end of the bytes, or
/// after yielding one error.
#[derive(Clone, Debug)]
pub struct Options<'a> {
    bytes: &'a [u8],
}

impl<'a> Options<'a> {
    /// Iterates raw option bytes (the area after the fixed 20-byte header).
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }
}

impl<'a> Iterator for Options<'a> {
    type Item = Result<TcpOption<'a>, OptionError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (&kind, rest) = self.bytes.split_first()?;
            match kind {
                0 => {
                    self.bytes = &[];
                    return None;
                }
                1 => {
                    self.bytes = rest;
                    continue;
                }
                _ => {}
            }
            let Some(&len) = rest.first() else {
                self.bytes = &[];
                return Some(Err(OptionError::Truncated));
            };
            let len = usize::from(len);
            if len < 2 {
                self.bytes = &[];
                return Some(Err(OptionError::BadLength));
            }
            let Some(opt) = self.bytes.get(..len) else {
                self.bytes = &[];
                return Some(Err(OptionError::Truncated));
            };
            self.bytes = &self.bytes[len..];
            let data = &opt[2..];
            let parsed = match (kind, len) {
                (2, 4) => TcpOption::Mss(u16::from_be_bytes([data[0], data[1]])),
                (3, 3) => TcpOption::WindowScale(data[0]),
                (4, 2) => TcpOption::SackPermitted,
                (5, _) if (len - 2) % 8 == 0 && len > 2 => TcpOption::Sack(data),
                (8, 10) => TcpOption::Timestamps {
                    tsval: u32::from_be_bytes([data[0], data[1], data[2], data[3]]),
                    tsecr: u32::from_be_bytes([data[4], data[5], data[6], data[7]]),
                },
                (2..=5 | 8, _) => {
                    self.bytes = &[];
                    return Some(Err(OptionError::BadLength));
                }
                _ => TcpOption::Other(kind, data),
            };
            return Some(Ok(parsed));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // 40000 -> 443, seq 1, ack 2, data offset 11 (44 bytes), SYN|ACK, window 65535,
    // options: MSS 1460, SACK permitted, timestamps 7/9, NOP, window scale 7, EOL padding.
    static HEADER: [u8; 44] = [
        0x9c, 0x40, 0x01, 0xbb, 0, 0, 0, 1, 0, 0, 0, 2, 0xb0, 0x12, 0xff, 0xff, 0x12, 0x34, 0, 0,
        2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 7, 0, 0, 0, 9, 1, 3, 3, 7, 0, 0, 0, 0,
    ];

    #[test]
    fn deconstruct() {
        let h = Header::new(&HEADER).unwrap();
        assert_eq!(h.src_port(), 40000);
        assert_eq!(h.dst_port(), 443);
        assert_eq!(h.seq(), 1);
        assert_eq!(h.ack(), 2);
        assert_eq!(h.header_len(), 44);
        assert_eq!(h.flags(), flags::SYN | flags::ACK);
        assert_eq!(h.window(), 65535);
        assert_eq!(h.checksum(), 0x1234);
        assert_eq!(h.urgent(), 0);
        let opts: Vec<_> = h.options().collect();
        assert_eq!(
            opts,
            vec![
                Ok(TcpOption::Mss(1460)),
                Ok(TcpOption::SackPermitted),
                Ok(TcpOption::Timestamps { tsval: 7, tsecr: 9 }),
                Ok(TcpOption::WindowScale(7)),
            ]
        );
    }

    #[test]
    fn options_cut_by_snaplen() {
        let h = Header::new(&HEADER[..30]).unwrap();
        let opts: Vec<_> = h.options().collect();
        assert_eq!(opts.last(), Some(&Err(OptionError::Truncated)));
        assert_eq!(opts[0], Ok(TcpOption::Mss(1460)));
    }

    #[test]
    fn bad_option_lengths() {
        let opts: Vec<_> = Options::new(&[8, 1, 0, 0]).collect();
        assert_eq!(opts, vec![Err(OptionError::BadLength)]);
        let opts: Vec<_> = Options::new(&[2, 3, 0]).collect();
        assert_eq!(opts, vec![Err(OptionError::BadLength)]);
        let opts: Vec<_> = Options::new(&[5, 6, 0, 0, 0, 0]).collect();
        assert_eq!(opts, vec![Err(OptionError::BadLength)]);
        let opts: Vec<_> = Options::new(&[30, 3, 9]).collect();
        assert_eq!(opts, vec![Ok(TcpOption::Other(30, &[9]))]);
    }

    #[test]
    fn sack_blocks() {
        let mut b = vec![5, 18];
        b.extend_from_slice(&[0; 16]);
        let opts: Vec<_> = Options::new(&b).collect();
        assert!(matches!(opts[0], Ok(TcpOption::Sack(d)) if d.len() == 16));
    }
}
