//! RSS keys: the Microsoft default, the symmetric `0x6d5a` key, and keys given in hex.

use std::fmt;

/// The Microsoft verification key (also the Intel 82599 default and many drivers' fallback).
pub const MS_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

/// Longest key supported (Intel X710/i40e use 52 bytes).
pub const MAX_KEY: usize = 52;

/// A Toeplitz key of 40 or 52 bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    bytes: [u8; MAX_KEY],
    len: u8,
}

/// Why a key was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The text is neither a known name nor hex.
    #[error("key {0:?} is not `ms`, `symmetric` or hex bytes (optionally separated by ':')")]
    NotHex(String),
    /// The key has a length NICs do not use.
    #[error("key has {0} bytes; RSS keys have 40 or 52")]
    Length(usize),
}

impl Key {
    /// A key from its bytes (40 or 52 of them).
    pub fn new(bytes: &[u8]) -> Result<Self, KeyError> {
        if bytes.len() != 40 && bytes.len() != 52 {
            return Err(KeyError::Length(bytes.len()));
        }
        let mut b = [0; MAX_KEY];
        b[..bytes.len()].copy_from_slice(bytes);
        Ok(Self { bytes: b, len: bytes.len() as u8 })
    }

    /// The Microsoft default key (40 bytes).
    pub fn ms() -> Self {
        Self::new(&MS_KEY).expect("40 bytes")
    }

    /// Woo and Park's symmetric key, `0x6d5a` repeated over `len` bytes (40 or 52). Its period
    /// of 16 bits makes the hash unchanged when source and destination (addresses and ports)
    /// swap, at the price of only 2^16 distinct hashes: good for choosing a queue, never for a
    /// flow-table hash.
    pub fn symmetric(len: usize) -> Result<Self, KeyError> {
        let b: Vec<u8> = [0x6d, 0x5a].into_iter().cycle().take(len).collect();
        Self::new(&b)
    }

    /// Parses `ms`, `symmetric` (40 bytes), `symmetric52`, or hex bytes, with or without `:`
    /// between them (as `ethtool -x` prints keys).
    pub fn parse(s: &str) -> Result<Self, KeyError> {
        match s {
            "ms" | "microsoft" => return Ok(Self::ms()),
            "symmetric" => return Self::symmetric(40),
            "symmetric52" => return Self::symmetric(52),
            _ => {}
        }
        let hex: String = s.trim().trim_start_matches("0x").chars().filter(|c| *c != ':').collect();
        if hex.is_empty()
            || !hex.len().is_multiple_of(2)
            || !hex.bytes().all(|c| c.is_ascii_hexdigit())
        {
            return Err(KeyError::NotHex(s.to_string()));
        }
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("checked hex digits"))
            .collect();
        Self::new(&bytes)
    }

    /// The key's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Always false: a key has 40 or 52 bytes.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The longest input the key covers: every input bit needs 32 key bits from its position.
    pub fn max_input(&self) -> usize {
        (self.len() * 8 - 31) / 8
    }

    /// Key bit `i` (bit 0 is the most significant bit of byte 0); zero past the end.
    #[inline]
    pub fn bit(&self, i: usize) -> u32 {
        match self.bytes.get(i / 8) {
            Some(b) if i / 8 < self.len() => u32::from(b >> (7 - i % 8)) & 1,
            _ => 0,
        }
    }

    /// The 32-bit window of key bits `i..i+32`, most significant first: what input bit `i`
    /// contributes to the hash when it is set.
    pub fn window(&self, i: usize) -> u32 {
        (0..32).fold(0, |w, t| (w << 1) | self.bit(i + t))
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({self})")
    }
}

impl fmt::Display for Key {
    /// Hex bytes separated by `:`, as `ethtool -x` prints them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.as_bytes().iter().enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_hex() {
        assert_eq!(Key::parse("ms").unwrap().as_bytes(), &MS_KEY);
        let hex: String = MS_KEY.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(Key::parse(&hex).unwrap(), Key::ms());
        assert_eq!(Key::parse(&Key::ms().to_string()).unwrap(), Key::ms());
        let s = Key::parse("symmetric").unwrap();
        assert_eq!(s.len(), 40);
        assert!(s.as_bytes().chunks(2).all(|c| c == [0x6d, 0x5a]));
        assert_eq!(Key::parse("symmetric52").unwrap().len(), 52);
        assert_eq!(Key::parse("6d5a"), Err(KeyError::Length(2)));
        assert!(matches!(Key::parse("zz"), Err(KeyError::NotHex(_))));
        assert!(matches!(Key::parse("abc"), Err(KeyError::NotHex(_))));
    }

    #[test]
    fn windows_and_input_limits() {
        let k = Key::ms();
        assert_eq!(k.window(0), 0x6d5a56da);
        assert_eq!(k.window(8), 0x5a56da25);
        assert_eq!(k.window(4), 0xd5a56da2);
        assert_eq!(k.max_input(), 36);
        assert_eq!(Key::symmetric(52).unwrap().max_input(), 48);
        assert_eq!(k.bit(320), 0);
    }
}
