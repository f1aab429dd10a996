//! Spelling of constants in canonical text (docs/surface.md §6.2): strings as
//! ASCII JSON, bytes, Python's `repr(float)`, and ints of any size in decimal.
//!
//! Python strings may hold lone surrogates (`"\ud800"`), which a Rust `str`
//! cannot; ruff replaces them with U+FFFD. [`PyText`] keeps the code units that
//! CPython would have, by decoding the literal's source again when needed.

use std::fmt::Write as _;

/// The value of a Python `str`: UTF-8 while it holds only Unicode scalar values,
/// code points (surrogates included) once a lone surrogate has been seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PyText {
    /// Text without surrogates.
    Utf8(String),
    /// Text as code points; values 0xD800..=0xDFFF are lone surrogates.
    Wide(Vec<u32>),
}

impl Default for PyText {
    fn default() -> Self {
        Self::Utf8(String::new())
    }
}

impl PyText {
    /// Appends text that has no surrogates.
    pub(crate) fn push_str(&mut self, text: &str) {
        match self {
            Self::Utf8(s) => s.push_str(text),
            Self::Wide(w) => w.extend(text.chars().map(u32::from)),
        }
    }

    /// Appends code points that may include lone surrogates.
    pub(crate) fn push_wide(&mut self, points: &[u32]) {
        if let Self::Utf8(s) = self {
            let mut wide: Vec<u32> = s.chars().map(u32::from).collect();
            wide.extend_from_slice(points);
            *self = Self::Wide(wide);
        } else if let Self::Wide(w) = self {
            w.extend_from_slice(points);
        }
    }

    /// Whether the text is empty.
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Self::Utf8(s) => s.is_empty(),
            Self::Wide(w) => w.is_empty(),
        }
    }

    /// Writes the text as `json.dumps(value, ensure_ascii=True)` does.
    pub(crate) fn write_json(&self, out: &mut String) {
        match self {
            Self::Utf8(s) => write_json_str(out, s),
            Self::Wide(w) => {
                out.push('"');
                w.iter().for_each(|&p| push_json_point(out, p));
                out.push('"');
            }
        }
    }
}

/// Writes a string that has no surrogates as ASCII JSON.
pub(crate) fn write_json_str(out: &mut String, text: &str) {
    out.push('"');
    text.chars()
        .for_each(|c| push_json_point(out, u32::from(c)));
    out.push('"');
}

fn push_json_point(out: &mut String, point: u32) {
    match point {
        0x22 => out.push_str("\\\""),
        0x5C => out.push_str("\\\\"),
        0x08 => out.push_str("\\b"),
        0x09 => out.push_str("\\t"),
        0x0A => out.push_str("\\n"),
        0x0C => out.push_str("\\f"),
        0x0D => out.push_str("\\r"),
        0x20..=0x7E => out.push(char::from(point as u8)),
        0x1_0000.. => {
            let v = point - 0x1_0000;
            let _ = write!(
                out,
                "\\u{:04x}\\u{:04x}",
                0xD800 + (v >> 10),
                0xDC00 + (v & 0x3FF)
            );
        }
        _ => {
            let _ = write!(out, "\\u{point:04x}");
        }
    }
}

/// Writes bytes as `b"..."`: printable ASCII as itself (`"` and `\` escaped), the rest as `\xNN`.
pub(crate) fn write_bytes(out: &mut String, bytes: &[u8]) {
    out.push_str("b\"");
    for &b in bytes {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(char::from(b));
            }
            0x20..=0x7E => out.push(char::from(b)),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out.push('"');
}

/// Python's `repr(float)`: shortest round-trip digits, fixed notation for
/// exponents in `-4..16`, otherwise `d.ddde±XX`.
pub(crate) fn float_repr(value: f64) -> String {
    if value.is_nan() {
        return "nan".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    // `{:e}` gives a shortest digit string that reads back as the same double
    // ("1.5e-5"), but when two of that length do, it may not pick the one
    // closest to the exact value as Python does (1429035198630573.25 has .2
    // and .3). Formatting to that many digits rounds the exact value (half to
    // even), which is the closest one, and it reads back too.
    let shortest = format!("{value:e}");
    let digits = shortest
        .split_once('e')
        .map_or(shortest.as_str(), |(m, _)| m)
        .bytes()
        .filter(u8::is_ascii_digit)
        .count();
    let nearest = format!("{value:.prec$e}", prec = digits.saturating_sub(1));
    let sci = if nearest.parse::<f64>().is_ok_and(|back| back == value) {
        nearest
    } else {
        shortest
    };
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exponent: i64 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let digits = match digits.trim_end_matches('0') {
        "" => "0",
        trimmed => trimmed,
    };
    let mut out = String::from(sign);
    if (-4..16).contains(&exponent) {
        if exponent < 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exponent - 1) as usize));
            out.push_str(digits);
        } else {
            let point = exponent as usize + 1;
            if digits.len() <= point {
                out.push_str(digits);
                out.extend(std::iter::repeat_n('0', point - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..point]);
                out.push('.');
                out.push_str(&digits[point..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(
            out,
            "e{}{:02}",
            if exponent < 0 { '-' } else { '+' },
            exponent.abs()
        );
    }
    out
}

/// The decimal digits of an int literal as ruff keeps it: a plain decimal number
/// for values that fit in a `u64`, else the literal's source text (a `0x`/`0o`/`0b`
/// prefix, underscores) which is converted here.
pub(crate) fn int_decimal(text: &str) -> String {
    let clean: String = text.chars().filter(|&c| c != '_').collect();
    let lower = clean.to_ascii_lowercase();
    let (radix, digits) = match lower.get(..2) {
        Some("0x") => (16, &lower[2..]),
        Some("0o") => (8, &lower[2..]),
        Some("0b") => (2, &lower[2..]),
        _ => (10, lower.as_str()),
    };
    if radix == 10 {
        let trimmed = digits.trim_start_matches('0');
        return if trimmed.is_empty() { "0" } else { trimmed }.to_owned();
    }
    radix_to_decimal(digits, radix)
}

/// Converts digits in `radix` to decimal with base-10⁹ limbs (least significant first).
fn radix_to_decimal(digits: &str, radix: u32) -> String {
    const BASE: u64 = 1_000_000_000;
    let mut limbs: Vec<u64> = vec![0];
    for d in digits.chars().filter_map(|c| c.to_digit(radix)) {
        let mut carry = u64::from(d);
        for limb in &mut limbs {
            let value = *limb * u64::from(radix) + carry;
            *limb = value % BASE;
            carry = value / BASE;
        }
        while carry > 0 {
            limbs.push(carry % BASE);
            carry /= BASE;
        }
    }
    let mut out = String::with_capacity(limbs.len() * 9);
    let mut iter = limbs.iter().rev();
    if let Some(top) = iter.next() {
        let _ = write!(out, "{top}");
    }
    for limb in iter {
        let _ = write!(out, "{limb:09}");
    }
    out
}

/// How the body of a string literal is decoded again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Body {
    /// A raw string: backslashes are literal.
    pub raw: bool,
    /// The literal part of an f-string: `{{` and `}}` stand for one brace.
    pub braces: bool,
}

/// Decodes the source text of a string literal's body to code points, as CPython
/// does, keeping `\ud800`-style escapes as lone surrogates. Returns None if an
/// escape does not decode (the parser would have rejected it).
pub(crate) fn decode_body(source: &str, body: Body) -> Option<Vec<u32>> {
    let mut out = Vec::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        if body.braces && (c == '{' || c == '}') {
            if chars.peek() == Some(&c) {
                chars.next();
            }
            out.push(u32::from(c));
            continue;
        }
        if c != '\\' || body.raw {
            out.push(u32::from(c));
            continue;
        }
        let Some(e) = chars.next() else {
            out.push(u32::from('\\'));
            break;
        };
        let simple = match e {
            '\n' => None,
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                None
            }
            '\\' | '\'' | '"' => Some(u32::from(e)),
            'a' => Some(7),
            'b' => Some(8),
            'f' => Some(12),
            'n' => Some(10),
            'r' => Some(13),
            't' => Some(9),
            'v' => Some(11),
            '0'..='7' => {
                let mut value = e.to_digit(8)?;
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            value = value * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                Some(value)
            }
            'x' | 'u' | 'U' => {
                let width = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut value = 0u32;
                for _ in 0..width {
                    value = value.checked_mul(16)? + chars.next()?.to_digit(16)?;
                }
                if value > 0x10_FFFF {
                    return None;
                }
                Some(value)
            }
            'N' => {
                if chars.next()? != '{' {
                    return None;
                }
                let name: String = chars.by_ref().take_while(|&c| c != '}').collect();
                Some(u32::from(unicode_names2::character(&name)?))
            }
            other => {
                // An unknown escape keeps its backslash.
                out.push(u32::from('\\'));
                Some(u32::from(other))
            }
        };
        out.extend(simple);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), String>;

    fn check(got: &str, want: &str) -> TestResult {
        if got == want {
            Ok(())
        } else {
            Err(format!("got {got:?}, want {want:?}"))
        }
    }

    #[test]
    fn floats_are_spelled_like_python_repr() -> TestResult {
        let cases = [
            (0.5, "0.5"),
            (1e-9, "1e-09"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (1e-5, "1e-05"),
            (2.0, "2.0"),
            (123.456, "123.456"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (0.0, "0.0"),
            (f64::INFINITY, "inf"),
            (3.25, "3.25"),
            (1e22, "1e+22"),
            (12345678901234567.0, "1.2345678901234568e+16"),
            // 1429035198630573.25 exactly: .2 and .3 both read back; Python picks .2.
            (f64::from_bits(0x4314_4ecc_bd8b_2ab5), "1429035198630573.2"),
        ];
        for (value, want) in cases {
            check(&float_repr(value), want)?;
        }
        Ok(())
    }

    #[test]
    fn big_ints_are_converted_to_decimal() -> TestResult {
        check(&int_decimal("16"), "16")?;
        check(
            &int_decimal("0x1_0000_0000_0000_0000"),
            "18446744073709551616",
        )?;
        check(
            &int_decimal("0o7777777777777777777777"),
            "73786976294838206463",
        )?;
        check(&int_decimal("0B1"), "1")?;
        check(
            &int_decimal("123456789012345678901234567890"),
            "123456789012345678901234567890",
        )
    }

    #[test]
    fn strings_are_ascii_json_with_surrogate_pairs() -> TestResult {
        let mut out = String::new();
        write_json_str(&mut out, "a\"b\\\u{e9}\u{1f600}\u{7f}\t\u{8}\u{c}\r\n\u{0}");
        check(&out, r#""a\"b\\\u00e9\ud83d\ude00\u007f\t\b\f\r\n\u0000""#)?;
        let mut wide = PyText::default();
        wide.push_str("x");
        wide.push_wide(&[0xD800]);
        let mut out = String::new();
        wide.write_json(&mut out);
        check(&out, r#""x\ud800""#)
    }

    #[test]
    fn bytes_escape_everything_but_printable_ascii() -> TestResult {
        let mut out = String::new();
        write_bytes(&mut out, b"\x00a\"\\\xff ~");
        check(&out, r#"b"\x00a\"\\\xff ~""#)
    }

    #[test]
    fn string_bodies_decode_like_cpython() -> Result<(), String> {
        let plain = Body {
            raw: false,
            braces: false,
        };
        let got = decode_body(
            r"a\ud800\x41\101\n\q\N{BULLET}\
z",
            plain,
        )
        .ok_or("did not decode")?;
        let want: Vec<u32> = vec![
            u32::from('a'),
            0xD800,
            0x41,
            0x41,
            0x0A,
            u32::from('\\'),
            u32::from('q'),
            0x2022,
            u32::from('z'),
        ];
        if got != want {
            return Err(format!("{got:x?}"));
        }
        let fmiddle = Body {
            raw: true,
            braces: true,
        };
        let got = decode_body(r"{{\d}}", fmiddle).ok_or("did not decode")?;
        if got != "{\\d}".chars().map(u32::from).collect::<Vec<_>>() {
            return Err(format!("{got:x?}"));
        }
        Ok(())
    }
}
