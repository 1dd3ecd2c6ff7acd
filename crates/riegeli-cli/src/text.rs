//! Records as readable text: the escaping of `cat --format text` and `describe --show-records`.

/// C-style escaping that keeps valid UTF-8 text readable.
pub(crate) fn escape_text(record: &[u8]) -> String {
    let mut out = String::with_capacity(record.len());
    for chunk in record.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_controls_quotes_and_invalid_utf8() {
        let cases: &[(&[u8], &str)] = &[
            (b"", ""),
            (b"plain text", "plain text"),
            (b"a\nb\rc\td", "a\\nb\\rc\\td"),
            (b"back\\slash \"quoted\"", "back\\\\slash \\\"quoted\\\""),
            (b"\x00\x1f\x7f", "\\x00\\x1f\\x7f"),
            ("héllo €".as_bytes(), "héllo €"),
            (b"\xff\xfeok\xc3", "\\xff\\xfeok\\xc3"),
        ];
        for &(record, escaped) in cases {
            assert_eq!(escape_text(record), escaped, "{record:?}");
        }
    }
}
