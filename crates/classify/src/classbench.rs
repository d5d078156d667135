//! ClassBench filter sets and header traces.
//!
//! A filter line is `@SIP/LEN DIP/LEN SPLO : SPHI DPLO : DPHI 0xPROTO/0xMASK 0xFLAGS/0xMASK`
//! (fields separated by tabs); the first line has the highest priority. The flags field is read
//! and ignored, as every published classifier and benchmark does. A trace line is
//! `SIP DIP SPORT DPORT PROTO FLAGS FILTER` in decimal, addresses as host-order integers;
//! `FILTER` is the rule the header was made from, not necessarily the first that matches.

use std::fmt;

use crate::rule::{Header, Rule};

/// A parse error: where, what was expected, and what was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    /// The file (or other name) being read.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in bytes).
    pub column: usize,
    /// What the parser wanted there.
    pub expected: String,
    /// What it found (a short excerpt).
    pub found: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: expected {}, found {}",
            self.file, self.line, self.column, self.expected, self.found
        )
    }
}

/// A cursor over one line.
struct Cursor<'a> {
    file: &'a str,
    line: usize,
    text: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn error(&self, expected: &str) -> ParseError {
        let rest = &self.text[self.pos..];
        let found = if rest.is_empty() {
            "end of line".to_string()
        } else {
            let end = rest.char_indices().nth(12).map_or(rest.len(), |(i, _)| i);
            format!("{:?}", &rest[..end])
        };
        ParseError {
            file: self.file.to_string(),
            line: self.line,
            column: self.pos + 1,
            expected: expected.to_string(),
            found,
        }
    }

    fn skip_ws(&mut self) {
        let rest = &self.text[self.pos..];
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn eat(&mut self, c: char, what: &str) -> Result<(), ParseError> {
        if self.text[self.pos..].starts_with(c) {
            self.pos += c.len_utf8();
            Ok(())
        } else {
            Err(self.error(what))
        }
    }

    fn digits(&mut self, radix: u32) -> &'a str {
        let rest = &self.text[self.pos..];
        let n = rest.find(|c: char| !c.is_digit(radix)).unwrap_or(rest.len());
        self.pos += n;
        &rest[..n]
    }

    fn decimal(&mut self, what: &str, max: u64) -> Result<u32, ParseError> {
        let start = self.pos;
        let d = self.digits(10);
        match d.parse::<u64>() {
            Ok(v) if v <= max => Ok(v as u32),
            _ => {
                self.pos = start;
                Err(self.error(what))
            }
        }
    }

    fn hex(&mut self, what: &str, max: u64) -> Result<u32, ParseError> {
        let start = self.pos;
        if !(self.text[self.pos..].starts_with("0x") || self.text[self.pos..].starts_with("0X")) {
            return Err(self.error(what));
        }
        self.pos += 2;
        let d = self.digits(16);
        match u64::from_str_radix(d, 16) {
            Ok(v) if v <= max => Ok(v as u32),
            _ => {
                self.pos = start;
                Err(self.error(what))
            }
        }
    }

    fn address(&mut self) -> Result<u32, ParseError> {
        let mut a = 0u32;
        for i in 0..4 {
            if i > 0 {
                self.eat('.', "'.' in a dotted-quad address")?;
            }
            a = (a << 8) | self.decimal("an address byte (0-255)", 255)?;
        }
        Ok(a)
    }

    fn prefix(&mut self) -> Result<(u32, u32), ParseError> {
        let a = self.address()?;
        self.eat('/', "'/' and a prefix length")?;
        let len = self.decimal("a prefix length (0-32)", 32)?;
        Ok(Rule::prefix(a, len as u8))
    }

    fn port_range(&mut self) -> Result<(u32, u32), ParseError> {
        let lo = self.decimal("a port (0-65535)", 65535)?;
        self.skip_ws();
        self.eat(':', "':' between the ends of a port range")?;
        self.skip_ws();
        let at = self.pos;
        let hi = self.decimal("a port (0-65535)", 65535)?;
        if hi < lo {
            self.pos = at;
            return Err(self.error("a port range's upper end at least its lower end"));
        }
        Ok((lo, hi))
    }

    fn field_gap(&mut self) -> Result<(), ParseError> {
        let before = self.pos;
        self.skip_ws();
        if self.pos == before {
            return Err(self.error("whitespace between fields"));
        }
        Ok(())
    }
}

/// Parses a filter set; `file` names the input in errors.
pub fn parse_rules(file: &str, text: &str) -> Result<Vec<Rule>, ParseError> {
    let mut rules = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut c = Cursor { file, line: i + 1, text: line, pos: 0 };
        c.skip_ws();
        if c.pos == line.len() {
            continue;
        }
        c.eat('@', "'@' starting a rule")?;
        let (slo, shi) = c.prefix()?;
        c.field_gap()?;
        let (dlo, dhi) = c.prefix()?;
        c.field_gap()?;
        let (splo, sphi) = c.port_range()?;
        c.field_gap()?;
        let (dplo, dphi) = c.port_range()?;
        c.field_gap()?;
        let at = c.pos;
        let pv = c.hex("a protocol value like 0x06", 0xff)?;
        c.eat('/', "'/' and a protocol mask")?;
        let pm = c.hex("a protocol mask (0x00 or 0xFF)", 0xff)?;
        let (plo, phi) = match pm {
            0xff => (pv, pv),
            0 => (0, 255),
            _ => {
                c.pos = at;
                return Err(c.error("a protocol mask of 0x00 or 0xFF"));
            }
        };
        c.field_gap()?;
        c.hex("a flags value like 0x0000", 0xffff)?;
        c.eat('/', "'/' and a flags mask")?;
        c.hex("a flags mask like 0x0200", 0xffff)?;
        c.skip_ws();
        if c.pos != line.len() {
            return Err(c.error("the end of the rule"));
        }
        rules.push(Rule { lo: [slo, dlo, splo, dplo, plo], hi: [shi, dhi, sphi, dphi, phi] });
    }
    Ok(rules)
}

/// One header of a trace, with the rule it was generated from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceEntry {
    /// The header.
    pub header: Header,
    /// The 0-based rule the generator started from.
    pub filter: u32,
}

/// Parses a header trace; `file` names the input in errors.
pub fn parse_trace(file: &str, text: &str) -> Result<Vec<TraceEntry>, ParseError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut c = Cursor { file, line: i + 1, text: line, pos: 0 };
        c.skip_ws();
        if c.pos == line.len() {
            continue;
        }
        let limits: [(&str, u64); 7] = [
            ("a source address (decimal, 0-4294967295)", u64::from(u32::MAX)),
            ("a destination address (decimal, 0-4294967295)", u64::from(u32::MAX)),
            ("a source port (0-65535)", 65535),
            ("a destination port (0-65535)", 65535),
            ("a protocol (0-255)", 255),
            ("a flags value (decimal)", u64::from(u32::MAX)),
            ("a filter number", u64::from(u32::MAX)),
        ];
        let mut v = [0u32; 7];
        for (k, (what, max)) in limits.iter().enumerate() {
            if k > 0 {
                c.field_gap()?;
            }
            v[k] = c.decimal(what, *max)?;
        }
        c.skip_ws();
        if c.pos != line.len() {
            return Err(c.error("the end of the header"));
        }
        out.push(TraceEntry { header: Header([v[0], v[1], v[2], v[3], v[4]]), filter: v[6] });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_rule_and_a_header() {
        let r = parse_rules(
            "t",
            "@91.89.244.16/29\t245.66.202.32/28\t88 : 88\t69 : 69\t0x11/0xFF\t0x0000/0x0000\t\n\
             @0.0.0.0/0\t0.0.0.0/0\t0 : 65535\t0 : 65535\t0x00/0x00\t0x0000/0x0000\n",
        )
        .unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].lo[0], u32::from_be_bytes([91, 89, 244, 16]));
        assert_eq!(r[0].hi[0], u32::from_be_bytes([91, 89, 244, 23]));
        assert_eq!((r[0].lo[4], r[0].hi[4]), (17, 17));
        assert_eq!(r[1], Rule::ANY);
        let t = parse_trace("t", "1923697128\t2273746465\t0\t1221\t6\t4294967295\t261\n").unwrap();
        assert_eq!(t[0].header.0, [1923697128, 2273746465, 0, 1221, 6]);
        assert_eq!(t[0].filter, 261);
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = parse_rules("f", "\n@1.2.3.4/33\t0.0.0.0/0\t0 : 1\t0 : 1\t0x06/0xFF\t0x0/0x0\n")
            .unwrap_err();
        assert_eq!((e.line, e.column), (2, 10));
        assert!(e.to_string().starts_with("f:2:10: expected a prefix length"), "{e}");
        let e = parse_rules("f", "@1.2.3.4/8\t0.0.0.0/0\t9 : 1\t0 : 1\t0x06/0xFF\t0x0/0x0")
            .unwrap_err();
        assert_eq!(e.column, 26);
        assert!(e.expected.contains("upper end"));
        let e = parse_rules("f", "@1.2.3.4/8\t0.0.0.0/0\t0 : 1\t0 : 1\t0x06/0xF0\t0x0/0x0")
            .unwrap_err();
        assert!(e.expected.contains("0x00 or 0xFF"), "{e}");
        let e = parse_trace("f", "1 2 3 4 5 6").unwrap_err();
        assert!(e.expected.contains("whitespace") || e.expected.contains("filter"), "{e}");
        let e = parse_trace("f", "1 2 3 70000 5 6 7").unwrap_err();
        assert_eq!(e.column, 7);
    }
}
