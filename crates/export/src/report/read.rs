//! The reader of `rampart report --records` and `--samples`: rampart's own JSON lines (flow
//! records as `rampart flows` writes them, RTT samples as `rampart rtt --format json` does),
//! read as untrusted input.
//!
//! The files may come from anywhere, so the reader is a parser of hostile bytes: it never
//! panics, bounds a line's length ([`MAX_LINE`]) and the nesting of values it skips
//! ([`MAX_DEPTH`]), and every error names the line (numbered from 1) and what is wrong with it.
//! Only the fields the report uses are read; unknown fields are skipped whatever their value,
//! so records from a newer rampart still load. Blank lines are skipped.

use std::io::BufRead;

use super::{FlowRow, RttStat, SamplePoint};

/// Longest line read, in bytes (flow records are well under 2 KiB).
pub const MAX_LINE: usize = 1 << 20;
/// Deepest nesting of arrays and objects skipped inside a line.
pub const MAX_DEPTH: usize = 32;

/// What went wrong reading a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadError {
    /// The line, numbered from 1.
    pub line: u64,
    /// What is wrong with it.
    pub message: String,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ReadError {}

/// A JSON value of a top-level field (nested values are skipped and kept as `Other`).
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Str(String),
    Num(f64),
    /// The number's text was a non-negative integer that fits in a u64.
    Int(u64),
    Bool(bool),
    Null,
    Other,
}

/// A cursor over one line.
struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl<'a> Parser<'a> {
    fn err<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("{what} at column {}", self.at + 1))
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.s.get(self.at) {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        self.ws();
        if self.peek() == Some(c) {
            self.at += 1;
            Ok(())
        } else {
            self.err(&format!("expected '{}'", c as char))
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let Some(h) = self.s.get(self.at..self.at + 4) else {
            return self.err("truncated \\u escape");
        };
        let mut v = 0u32;
        for &b in h {
            let d = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'f' => b - b'a' + 10,
                b'A'..=b'F' => b - b'A' + 10,
                _ => return self.err("bad \\u escape"),
            };
            v = v * 16 + u32::from(d);
        }
        self.at += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, String> {
        self.expect(b'"')?;
        let mut out = Vec::new();
        loop {
            let Some(b) = self.peek() else { return self.err("unterminated string") };
            self.at += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let Some(e) = self.peek() else { return self.err("unterminated string") };
                    self.at += 1;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = self.hex4()?;
                            let code = if (0xd800..0xdc00).contains(&hi)
                                && self.s.get(self.at..self.at + 2) == Some(b"\\u")
                            {
                                self.at += 2;
                                let lo = self.hex4()?;
                                if !(0xdc00..0xe000).contains(&lo) {
                                    return self.err("unpaired surrogate");
                                }
                                0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)
                            } else {
                                hi
                            };
                            // A lone surrogate becomes U+FFFD rather than an error.
                            char::from_u32(code).unwrap_or('\u{fffd}')
                        }
                        _ => return self.err("bad escape"),
                    };
                    let mut buf = [0; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                0..0x20 => return self.err("control character in a string"),
                _ => out.push(b),
            }
        }
        String::from_utf8(out).or_else(|_| self.err("string is not UTF-8"))
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.at;
        while let Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') = self.peek() {
            self.at += 1;
        }
        let text = std::str::from_utf8(&self.s[start..self.at]).unwrap_or("");
        if let Ok(n) = text.parse::<u64>() {
            return Ok(Value::Int(n));
        }
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Value::Num(v)),
            _ => {
                self.at = start;
                self.err("bad number")
            }
        }
    }

    fn word(&mut self, w: &[u8], v: Value) -> Result<Value, String> {
        if self.s.get(self.at..self.at + w.len()) == Some(w) {
            self.at += w.len();
            Ok(v)
        } else {
            self.err("unexpected character")
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        self.ws();
        match self.peek() {
            Some(b'"') => self.string().map(Value::Str),
            Some(b't') => self.word(b"true", Value::Bool(true)),
            Some(b'f') => self.word(b"false", Value::Bool(false)),
            Some(b'n') => self.word(b"null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(open @ (b'[' | b'{')) => {
                if depth >= MAX_DEPTH {
                    return self.err("values nested too deeply");
                }
                self.at += 1;
                let close = if open == b'[' { b']' } else { b'}' };
                self.ws();
                if self.peek() == Some(close) {
                    self.at += 1;
                    return Ok(Value::Other);
                }
                loop {
                    if open == b'{' {
                        self.ws();
                        self.string()?;
                        self.expect(b':')?;
                    }
                    self.value(depth + 1)?;
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.at += 1,
                        Some(c) if c == close => {
                            self.at += 1;
                            return Ok(Value::Other);
                        }
                        _ => return self.err("expected ',' or the end of the value"),
                    }
                }
            }
            None => self.err("unexpected end of line"),
            _ => self.err("unexpected character"),
        }
    }

    /// One line's object: its fields in order.
    fn object(&mut self) -> Result<Vec<(String, Value)>, String> {
        self.expect(b'{')?;
        let mut fields = Vec::new();
        self.ws();
        if self.peek() == Some(b'}') {
            self.at += 1;
        } else {
            loop {
                self.ws();
                let k = self.string()?;
                self.expect(b':')?;
                let v = self.value(1)?;
                fields.push((k, v));
                self.ws();
                match self.peek() {
                    Some(b',') => self.at += 1,
                    Some(b'}') => {
                        self.at += 1;
                        break;
                    }
                    _ => return self.err("expected ',' or '}'"),
                }
            }
        }
        self.ws();
        if self.at != self.s.len() {
            return self.err("text after the object");
        }
        Ok(fields)
    }
}

/// A line's fields, looked up by name.
struct Fields(Vec<(String, Value)>);

impl Fields {
    fn get(&self, k: &str) -> Option<&Value> {
        self.0.iter().find(|(n, _)| n == k).map(|(_, v)| v)
    }

    fn text(&self, k: &str) -> Result<Option<String>, String> {
        match self.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Str(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("field \"{k}\" is not a string")),
        }
    }

    fn need_text(&self, k: &str) -> Result<String, String> {
        self.text(k)?.ok_or_else(|| format!("field \"{k}\" is missing"))
    }

    fn int(&self, k: &str) -> Result<Option<u64>, String> {
        match self.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Int(n)) => Ok(Some(*n)),
            Some(_) => Err(format!("field \"{k}\" is not a non-negative integer")),
        }
    }

    fn need_int(&self, k: &str) -> Result<u64, String> {
        self.int(k)?.ok_or_else(|| format!("field \"{k}\" is missing"))
    }

    fn port(&self, k: &str) -> Result<u16, String> {
        let n = self.int(k)?.unwrap_or(0);
        u16::try_from(n).map_err(|_| format!("field \"{k}\" is not a port number"))
    }

    /// A non-negative finite number (seconds).
    fn num(&self, k: &str) -> Result<Option<f64>, String> {
        match self.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Int(n)) => Ok(Some(*n as f64)),
            Some(Value::Num(v)) if *v >= 0.0 => Ok(Some(*v)),
            Some(_) => Err(format!("field \"{k}\" is not a non-negative number")),
        }
    }

    fn need_num(&self, k: &str) -> Result<f64, String> {
        self.num(k)?.ok_or_else(|| format!("field \"{k}\" is missing"))
    }

    /// `proto`: a name, or a protocol number written as a number.
    fn proto(&self) -> Result<String, String> {
        match self.get("proto") {
            Some(Value::Str(s)) => Ok(s.clone()),
            Some(Value::Int(n)) if *n < 256 => Ok(n.to_string()),
            Some(_) => Err("field \"proto\" is neither a name nor a protocol number".into()),
            None => Err("field \"proto\" is missing".into()),
        }
    }

    fn rtt(&self, side: &str) -> Result<Option<RttStat>, String> {
        let count = self.int(&format!("rtt_{side}_count"))?;
        let Some(count) = count.filter(|&c| c > 0) else { return Ok(None) };
        let stat = |k: &str| self.num(&format!("rtt_{side}_{k}"));
        match (stat("min")?, stat("median")?, stat("max")?) {
            (Some(min), Some(median), Some(max)) => Ok(Some(RttStat { count, min, median, max })),
            _ => Err(format!("rtt_{side}_count is {count} but min, median or max is missing")),
        }
    }
}

fn parse(line: &[u8]) -> Result<Fields, String> {
    Parser { s: line, at: 0 }.object().map(Fields)
}

/// Parses one flow record line (`rampart flows --format json`).
pub fn parse_flow(line: &[u8]) -> Result<FlowRow, String> {
    let f = parse(line)?;
    if f.get("packets_fwd").is_none() && f.get("rtt").is_some() {
        return Err("this is an RTT sample, not a flow record (give it with --samples)".into());
    }
    let first = f.need_num("first")?;
    let last = f.need_num("last")?.max(first);
    Ok(FlowRow {
        proto: f.proto()?,
        src: f.need_text("src")?,
        sport: f.port("sport")?,
        dst: f.need_text("dst")?,
        dport: f.port("dport")?,
        first,
        last,
        packets: [f.need_int("packets_fwd")?, f.need_int("packets_rev")?],
        bytes: [f.need_int("bytes_fwd")?, f.need_int("bytes_rev")?],
        flags: [
            f.text("tcp_flags_fwd")?.unwrap_or_default(),
            f.text("tcp_flags_rev")?.unwrap_or_default(),
        ],
        end_reason: f.text("end_reason")?.unwrap_or_else(|| "unknown".into()),
        rtt: [f.rtt("src")?, f.rtt("dst")?],
        app: f.text("app")?,
        server_name: match f.text("sni")? {
            Some(s) => Some(s),
            None => f.text("http_host")?,
        },
        ct_state: f.text("ct_state")?,
        verdict: f.text("verdict")?,
        rule: f.text("rule")?,
        uid: f.text("uid")?,
    })
}

/// Parses one RTT sample line (`rampart rtt --format json`).
pub fn parse_sample(line: &[u8]) -> Result<SamplePoint, String> {
    let f = parse(line)?;
    if f.get("packets_fwd").is_some() {
        return Err("this is a flow record, not an RTT sample (give it with --records)".into());
    }
    Ok(SamplePoint {
        time: f.need_num("time")?,
        rtt: f.need_num("rtt")?,
        src: f.need_text("src")?,
        sport: f.port("sport")?,
        dst: f.need_text("dst")?,
        dport: f.port("dport")?,
    })
}

/// Reads every line of `input` with `parse`, handing each result to `each`; the first bad
/// line stops it with its number.
pub fn read_lines<T>(
    mut input: impl BufRead,
    parse: fn(&[u8]) -> Result<T, String>,
    each: &mut dyn FnMut(T),
) -> Result<u64, ReadError> {
    let mut buf = Vec::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        n += 1;
        let read = std::io::Read::take(&mut input, MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| ReadError { line: n, message: e.to_string() })?;
        if read == 0 {
            return Ok(n - 1);
        }
        if buf.len() > MAX_LINE {
            return Err(ReadError { line: n, message: format!("longer than {MAX_LINE} bytes") });
        }
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        each(parse(line).map_err(|message| ReadError { line: n, message })?);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FLOW: &str = "{\"proto\":\"tcp\",\"src\":\"10.0.0.2\",\"sport\":80,\"dst\":\"10.0.0.1\",\
        \"dport\":40000,\"community_id\":\"1:x\",\"first\":1700000000.000001,\
        \"last\":1700000001.500000,\"duration\":1.499999,\"packets_fwd\":3,\"bytes_fwd\":180,\
        \"packets_rev\":2,\"bytes_rev\":1500,\"tcp_flags_fwd\":\"APSF\",\"tcp_flags_rev\":\"AS\",\
        \"end_reason\":\"fin\",\"rtt_src_count\":2,\"rtt_src_min\":0.000001000,\
        \"rtt_src_median\":0.000001500,\"rtt_src_max\":0.000002000,\"rtt_dst_count\":0,\
        \"app\":\"TLS.YouTube\",\"sni\":\"a\\u003cb\\\"\",\"future\":[1,{\"x\":[]}]}";

    #[test]
    fn reads_a_flow_record() {
        let r = parse_flow(FLOW.as_bytes()).unwrap();
        assert_eq!((r.src.as_str(), r.sport, r.dport), ("10.0.0.2", 80, 40000));
        assert_eq!((r.packets, r.bytes), ([3, 2], [180, 1500]));
        assert_eq!(r.rtt[0].unwrap().count, 2);
        assert!(r.rtt[1].is_none());
        assert_eq!(r.server_name.as_deref(), Some("a<b\""));
        assert_eq!(r.app.as_deref(), Some("TLS.YouTube"));
    }

    #[test]
    fn reads_a_sample() {
        let s = parse_sample(
            b"{\"time\":1.5,\"rtt\":0.012000000,\"min_rtt\":0.01,\"proto\":\"tcp\",\
              \"src\":\"fd00::1\",\"sport\":443,\"dst\":\"fd00::2\",\"dport\":5000,\
              \"method\":\"ts\"}",
        )
        .unwrap();
        assert_eq!((s.time, s.rtt, s.sport), (1.5, 0.012, 443));
    }

    #[test]
    fn errors_name_the_line_and_say_what() {
        let input = format!("{FLOW}\n\n{{\"proto\":\"tcp\"}}\n");
        let mut n = 0;
        let e = read_lines(input.as_bytes(), parse_flow, &mut |_| n += 1).unwrap_err();
        assert_eq!(n, 1);
        assert_eq!(e.line, 3);
        assert!(e.message.contains("\"first\" is missing"), "{e}");
        for (bad, says) in [
            (&b"{\"proto\":\"tcp\""[..], "expected ','"),
            (b"[1]", "expected '{'"),
            (b"{\"a\":1} x", "text after"),
            (b"{\"a\":\"\\ud800\\u0041\"}", "unpaired"),
            (b"{\"a\":\"\xff\"}", "not UTF-8"),
            (b"{\"a\":1e999}", "bad number"),
        ] {
            let e = parse_flow(bad).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(100), "]".repeat(100));
        assert!(parse_flow(deep.as_bytes()).unwrap_err().contains("nested too deeply"));
        let e = parse_flow(b"{\"time\":1,\"rtt\":0.1}").unwrap_err();
        assert!(e.contains("--samples"), "{e}");
        let neg = FLOW.replace("\"bytes_fwd\":180", "\"bytes_fwd\":-1");
        assert!(parse_flow(neg.as_bytes()).unwrap_err().contains("bytes_fwd"));
        let long = vec![b' '; MAX_LINE + 10];
        let e = read_lines(&long[..], parse_flow, &mut |_| {}).unwrap_err();
        assert!(e.message.contains("longer than"), "{e}");
    }
}
