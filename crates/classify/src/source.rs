//! Rule files and header traces as text: plain, gzip- or zstd-compressed (told apart by
//! their first bytes, whatever the file is called), and which rule format a text is in.

use std::io::Read;
use std::path::Path;

/// The most text one file may decompress to, so that a small compressed file cannot fill
/// memory.
pub const MAX_TEXT: u64 = 1 << 30;

/// How a file was stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// As text.
    None,
    /// gzip (`1f 8b`).
    Gzip,
    /// zstd (`28 b5 2f fd`).
    Zstd,
}

impl Compression {
    /// What the first bytes of a file say.
    pub fn of(bytes: &[u8]) -> Self {
        if bytes.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if bytes.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }
}

/// A file that could not be read as text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct SourceError {
    /// The file.
    pub file: String,
    /// What went wrong.
    pub message: String,
}

/// Reads a file as text, decompressing it if it is gzip or zstd.
pub fn read_text(path: &Path) -> Result<String, SourceError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path)
        .map_err(|e| SourceError { file: file.clone(), message: e.to_string() })?;
    decode(&file, bytes)
}

/// The text of a file's bytes (`file` names it in errors).
pub fn decode(file: &str, bytes: Vec<u8>) -> Result<String, SourceError> {
    let err = |message: String| SourceError { file: file.to_string(), message };
    let how = Compression::of(&bytes);
    let text = match how {
        Compression::None => bytes,
        Compression::Gzip => {
            let mut out = Vec::new();
            flate2::read::MultiGzDecoder::new(bytes.as_slice())
                .take(MAX_TEXT + 1)
                .read_to_end(&mut out)
                .map_err(|e| err(format!("corrupt gzip data: {e}")))?;
            out
        }
        Compression::Zstd => {
            let mut out = Vec::new();
            let mut rest: &[u8] = &bytes;
            // One frame after another, as the zstd tool writes concatenated files.
            while !rest.is_empty() && (out.len() as u64) <= MAX_TEXT {
                let at = bytes.len() - rest.len();
                let mut d = ruzstd::decoding::StreamingDecoder::new(&mut rest)
                    .map_err(|e| err(format!("corrupt zstd data at byte {at}: {e}")))?;
                let room = MAX_TEXT + 1 - out.len() as u64;
                (&mut d)
                    .take(room)
                    .read_to_end(&mut out)
                    .map_err(|e| err(format!("corrupt zstd data after byte {at}: {e}")))?;
            }
            out
        }
    };
    if text.len() as u64 > MAX_TEXT {
        return Err(err(format!("decompresses to more than {} MiB", MAX_TEXT >> 20)));
    }
    String::from_utf8(text).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let inside = if how == Compression::None { "" } else { " of the decompressed text" };
        err(format!("not text: invalid UTF-8 at byte {at}{inside}"))
    })
}

/// Rule file formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// ClassBench filter sets (lines start with `@`).
    ClassBench,
    /// `iptables-save` output (`*filter`, `:CHAIN POLICY`, `-A ...`, `COMMIT`).
    Iptables,
    /// rampart's syntax (`set`, `table`, `chain`).
    Rampart,
    /// nftables (`nft -f` input or `nft list ruleset` output).
    Nft,
}

/// Why the format of a text could not be told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DetectError {
    /// Nothing but blank lines and `#` comments.
    #[error("empty rule file: nothing but blank lines and comments")]
    Empty,
    /// The first line that says something fits no format.
    #[error(
        "line {line}: cannot tell the rule format from {text:?} (ClassBench lines start with @, iptables-save output with *filter, nftables with table FAMILY NAME, flush, define or add, rampart rules with table, chain or set); give --format"
    )]
    Unknown {
        /// Its line, from 1.
        line: usize,
        /// Its first words.
        text: String,
    },
}

/// The format of a rule file, from its first line that is not blank or a `#` comment (and,
/// for a `table NAME {` that both rampart syntax and nftables start with, from whether a
/// chain in it has a `hook`, or the file starts `#!/usr/sbin/nft`).
pub fn detect(text: &str) -> Result<Format, DetectError> {
    if text.trim_start().starts_with("#!") && text.lines().next().is_some_and(|l| l.contains("nft"))
    {
        return Ok(Format::Nft);
    }
    let Some((i, line)) =
        text.lines().map(str::trim).enumerate().find(|(_, l)| !l.is_empty() && !l.starts_with('#'))
    else {
        return Err(DetectError::Empty);
    };
    let first = line.split_whitespace().next().unwrap_or("");
    if line.starts_with('@') {
        Ok(Format::ClassBench)
    } else if line.starts_with('*')
        || line.starts_with(':')
        || matches!(first, "-A" | "-N" | "-P" | "COMMIT")
    {
        Ok(Format::Iptables)
    } else if matches!(first, "flush" | "define" | "add" | "create" | "insert" | "redefine") {
        Ok(Format::Nft)
    } else if first == "table" {
        let words: Vec<&str> = line.split_whitespace().take_while(|w| *w != "{").collect();
        let hooked = text.lines().any(|l| {
            let l = l.trim_start();
            l.starts_with("type ") && l.contains(" hook ")
        });
        if words.len() >= 3 || hooked { Ok(Format::Nft) } else { Ok(Format::Rampart) }
    } else if matches!(first, "set" | "chain") {
        Ok(Format::Rampart)
    } else {
        Err(DetectError::Unknown { line: i + 1, text: line.chars().take(40).collect() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn formats_from_the_first_line_that_says_something() {
        assert_eq!(
            detect("# c\n\n@1.2.3.4/32 0.0.0.0/0 0 : 65535 0 : 65535 0x06/0xFF\n"),
            Ok(Format::ClassBench)
        );
        assert_eq!(detect("# Generated by iptables-save\n*filter\n"), Ok(Format::Iptables));
        assert_eq!(detect("  table filter {\n"), Ok(Format::Rampart));
        assert_eq!(detect("set s = { 10.0.0.1 }\n"), Ok(Format::Rampart));
        assert_eq!(detect("#!/usr/sbin/nft -f\nflush ruleset\n"), Ok(Format::Nft));
        assert_eq!(detect("# rules\nflush ruleset\n"), Ok(Format::Nft));
        assert_eq!(detect("table inet filter {\n"), Ok(Format::Nft));
        assert_eq!(detect("define lan = 10.0.0.0/8\n"), Ok(Format::Nft));
        assert_eq!(
            detect("table filter {\n chain input {\n  type filter hook input priority 0;\n }\n}\n"),
            Ok(Format::Nft)
        );
        assert_eq!(detect("table filter {\n  default drop\n}\n"), Ok(Format::Rampart));
        assert_eq!(detect("\n# only\n   \n"), Err(DetectError::Empty));
        assert!(matches!(detect("\nhello world\n"), Err(DetectError::Unknown { line: 2, .. })));
    }

    #[test]
    fn compressed_text_reads_as_the_text() {
        let text = "*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n".repeat(50);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(text.as_bytes()).unwrap();
        let mut gz = gz.finish().unwrap();
        assert_eq!(Compression::of(&gz), Compression::Gzip);
        assert_eq!(decode("r.gz", gz.clone()).unwrap(), text);
        // Two members, as `cat a.gz b.gz` makes.
        let one = gz.clone();
        gz.extend_from_slice(&one);
        assert_eq!(decode("r.gz", gz.clone()).unwrap(), text.repeat(2));
        gz.truncate(gz.len() - 5);
        assert!(decode("r.gz", gz).unwrap_err().message.contains("corrupt gzip"));
        // zstd: a frame stored raw (one raw block) is valid zstd, written here by hand.
        let mut z = vec![0x28, 0xb5, 0x2f, 0xfd];
        let body = b"table t {\n}\n";
        // Frame header: single segment, 1-byte content size.
        z.extend_from_slice(&[0x20, body.len() as u8]);
        // Last block, raw, its size.
        let h = 1u32 | ((body.len() as u32) << 3);
        z.extend_from_slice(&h.to_le_bytes()[..3]);
        z.extend_from_slice(body);
        assert_eq!(Compression::of(&z), Compression::Zstd);
        assert_eq!(decode("r.zst", z.clone()).unwrap(), "table t {\n}\n");
        let two = [z.clone(), z.clone()].concat();
        assert_eq!(decode("r.zst", two).unwrap(), "table t {\n}\n".repeat(2));
        z.truncate(z.len() - 3);
        assert!(decode("r.zst", z).unwrap_err().message.contains("corrupt zstd"));
        let e = decode("r", vec![b'a', 0xff, b'b']).unwrap_err();
        assert_eq!(e.to_string(), "r: not text: invalid UTF-8 at byte 1");
    }
}
