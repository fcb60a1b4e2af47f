//! Integral numbers written with a fraction or an exponent. JSON Schema counts `19.0` and `1e3` as
//! integers, and so do the clients generated from our document, but serde refuses them for an
//! integer field. Rewriting them as plain integers before parsing gives both readings one answer;
//! a float field reads the rewritten text the same as before.

/// Longest integer we write out: well inside i64, and no count anyone means is longer.
const MAX_DIGITS: usize = 18;

/// `body`, copied for the in-place parser, with every integral number outside strings that has a
/// fraction or an exponent written as a plain integer. Text that is not valid JSON is copied as
/// it is: the parser that follows reports it.
pub fn normalized(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        let b = body[i];
        if b == b'"' {
            let end = string_end(body, i + 1);
            out.extend_from_slice(&body[i..end]);
            i = end;
        } else if b == b'-' || b.is_ascii_digit() {
            let end = number_end(body, i);
            push_number(&mut out, &body[i..end]);
            i = end;
        } else {
            out.push(b);
            i += 1;
        }
    }
    out
}

/// The index just past the string whose content starts at `from` (or the end of the body).
fn string_end(body: &[u8], from: usize) -> usize {
    let mut i = from;
    while i < body.len() {
        match body[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    body.len()
}

fn number_end(body: &[u8], from: usize) -> usize {
    let len = body[from..]
        .iter()
        .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
        .unwrap_or(body.len() - from);
    from + len
}

fn push_number(out: &mut Vec<u8>, token: &[u8]) {
    match integral(token) {
        Some(digits) => out.extend_from_slice(digits.as_bytes()),
        None => out.extend_from_slice(token),
    }
}

/// The plain integer `token` denotes, when it has a fraction or an exponent and its value is an
/// integer. Worked on the digits, not through f64, so no rounding can turn 1.0000001 into 1.
fn integral(token: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(token).ok()?;
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], text[at + 1..].parse::<i32>().ok()?),
        None if text.contains('.') => (text, 0),
        None => return None,
    };
    let (whole, fraction) = match mantissa.split_once('.') {
        // JSON wants digits on both sides of a point.
        Some((_, "")) => return None,
        Some(parts) => parts,
        None => (mantissa, ""),
    };
    if whole.is_empty() || !whole.bytes().chain(fraction.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits: String = [whole, fraction].concat();
    // Where the decimal point falls in `digits` once the exponent is applied.
    let point = i64::try_from(whole.len()).ok()? + i64::from(exponent);
    let point = usize::try_from(point.max(0)).ok()?;
    if point > MAX_DIGITS + digits.len() {
        return None;
    }
    let (int, rest) = digits.split_at(point.min(digits.len()));
    if rest.bytes().any(|b| b != b'0') {
        return None;
    }
    let mut int = int.to_owned();
    int.extend(std::iter::repeat_n('0', point.saturating_sub(digits.len())));
    let int = int.trim_start_matches('0');
    if int.len() > MAX_DIGITS {
        return None;
    }
    Some(match (int.is_empty(), negative) {
        (true, _) => "0".to_owned(),
        (false, true) => format!("-{int}"),
        (false, false) => int.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::normalized;

    fn n(s: &str) -> String {
        String::from_utf8(normalized(s.as_bytes())).unwrap_or_default()
    }

    #[test]
    fn integral_floats_become_integers() {
        assert_eq!(n(r#"{"a":19.0,"b":[1e3,-2.50E1,-0.0]}"#), r#"{"a":19,"b":[1000,-25,0]}"#);
        assert_eq!(n("{\"a\": 2761.0 }"), "{\"a\": 2761 }");
    }

    #[test]
    fn other_numbers_and_strings_are_kept() {
        let same = r#"{"r":0.4,"big":1e300,"i":7,"s":"1.0 \" 2.0","e":"\\"}"#;
        assert_eq!(n(same), same);
        for kept in ["1.0000001", "1e-1", "12e-1", "1e19", "1234567890123456789.0", "1.", "-.5"] {
            assert_eq!(n(kept), kept);
        }
        assert_eq!(n("[120e-1,0.0e5,5e0,-1.50e1]"), "[12,0,5,-15]");
    }

    #[test]
    fn broken_text_is_copied() {
        for s in ["{\"a\":\"unterminated", "{\"a\":1.0.0}", "-", "{\"a\":\"\\"] {
            assert_eq!(n(s), s);
        }
    }
}
