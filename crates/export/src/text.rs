//! Text fields: JSON strings and CSV cells.

/// Appends `s` as a JSON string, quotes included.
pub fn json_string(l: &mut Vec<u8>, s: &str) {
    l.push(b'"');
    json_escaped(l, s);
    l.push(b'"');
}

/// Appends `s` escaped for the inside of a JSON string: quote, backslash and control
/// characters (as `\uXXXX`, or their short forms).
pub fn json_escaped(l: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for &b in s.as_bytes() {
        match b {
            b'"' => l.extend_from_slice(b"\\\""),
            b'\\' => l.extend_from_slice(b"\\\\"),
            b'\n' => l.extend_from_slice(b"\\n"),
            b'\r' => l.extend_from_slice(b"\\r"),
            b'\t' => l.extend_from_slice(b"\\t"),
            0..0x20 | 0x7f => {
                l.extend_from_slice(b"\\u00");
                l.push(HEX[usize::from(b >> 4)]);
                l.push(HEX[usize::from(b & 15)]);
            }
            _ => l.push(b),
        }
    }
}

/// Appends `s` as one CSV cell (RFC 4180): quoted, with quotes doubled, when it holds a comma,
/// quote or line break; as it is otherwise.
pub fn csv_field(l: &mut Vec<u8>, s: &str) {
    if !s.bytes().any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r')) {
        l.extend_from_slice(s.as_bytes());
        return;
    }
    l.push(b'"');
    for &b in s.as_bytes() {
        if b == b'"' {
            l.push(b'"');
        }
        l.push(b);
    }
    l.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn json(s: &str) -> String {
        let mut l = Vec::new();
        json_string(&mut l, s);
        String::from_utf8(l).unwrap()
    }

    fn csv(s: &str) -> String {
        let mut l = Vec::new();
        csv_field(&mut l, s);
        String::from_utf8(l).unwrap()
    }

    #[test]
    fn escapes() {
        assert_eq!(json("a\"b\\c\nd\u{1}é"), "\"a\\\"b\\\\c\\nd\\u0001é\"");
        assert_eq!(csv("plain text"), "plain text");
        assert_eq!(csv("a,b"), "\"a,b\"");
        assert_eq!(csv("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    /// Reads one RFC 4180 cell back.
    fn csv_back(cell: &str) -> String {
        match cell.strip_prefix('"').and_then(|c| c.strip_suffix('"')) {
            Some(inner) => inner.replace("\"\"", "\""),
            None => cell.to_string(),
        }
    }

    /// Reads a JSON string back (the escapes written above).
    fn json_back(q: &str) -> String {
        let inner = &q[1..q.len() - 1];
        let mut out = String::new();
        let mut it = inner.chars();
        while let Some(c) = it.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match it.next().unwrap() {
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'u' => {
                    let h: String = it.by_ref().take(4).collect();
                    out.push(char::from_u32(u32::from_str_radix(&h, 16).unwrap()).unwrap());
                }
                c => out.push(c),
            }
        }
        out
    }

    proptest! {
        #[test]
        fn round_trips(s in any::<String>()) {
            let j = json(&s);
            prop_assert!(!j.bytes().any(|b| b < 0x20), "no raw control bytes");
            prop_assert_eq!(json_back(&j), s.clone());
            prop_assert_eq!(csv_back(&csv(&s)), s);
        }
    }
}
