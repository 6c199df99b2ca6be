//! Small, fast JSON text helpers for the streaming writers (no per-event allocation).

/// `s` as the inside of a JSON string literal.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o
}

/// Appends an unsigned integer.
#[inline]
pub fn push_u64(b: &mut Vec<u8>, v: u64) {
    b.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Appends `ns` as microseconds with exactly three decimals (ns precision, no rounding):
/// the exact integer form of [`crate::time::us`], for the Chrome trace's hot loop.
#[inline]
pub fn push_us(b: &mut Vec<u8>, ns: u64) {
    push_u64(b, ns / 1000);
    let f = (ns % 1000) as u16;
    b.extend_from_slice(&[
        b'.',
        b'0' + (f / 100) as u8,
        b'0' + (f / 10 % 10) as u8,
        b'0' + (f % 10) as u8,
    ]);
}

/// Appends `ns * scale` as microseconds with three decimals; exact when `scale` is 1.
#[inline]
pub fn push_scaled_us(b: &mut Vec<u8>, ns: u64, scale: f64) {
    if scale == 1.0 {
        push_us(b, ns);
    } else {
        use std::io::Write;
        let _ = write!(b, "{:.3}", crate::time::us(crate::time::scaled(ns, scale)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_keep_every_nanosecond() {
        let mut b = Vec::new();
        for ns in [0u64, 7, 1000, 123_456_789, u64::MAX] {
            push_us(&mut b, ns);
            b.push(b' ');
        }
        assert_eq!(
            String::from_utf8(b).unwrap(),
            "0.000 0.007 1.000 123456.789 18446744073709551.615 "
        );
        let mut b = Vec::new();
        push_scaled_us(&mut b, 1500, 2.0);
        assert_eq!(b, b"3.000");
    }

    #[test]
    fn escape_handles_quotes_and_controls() {
        assert_eq!(escape("a\"b\\c\n\u{1}é"), "a\\\"b\\\\c\\n\\u0001é");
    }
}
