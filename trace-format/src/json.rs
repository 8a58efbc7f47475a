//! Raw JSON text: kept verbatim for round trips, walked without building a tree.

use std::borrow::Cow;
use std::fmt;

/// A piece of valid JSON text (object, array, string, number, literal), kept verbatim.
///
/// Unknown metadata keys, unknown event keys and nested argument values are stored this
/// way so that a read → write round trip reproduces them exactly (big integers and float
/// spellings included). Equality ignores insignificant whitespace.
#[derive(Clone, Debug)]
pub struct RawJson<'a>(Cow<'a, str>);

impl<'a> RawJson<'a> {
    /// Checks that `text` is one complete JSON value and wraps it.
    pub fn parse(text: impl Into<Cow<'a, str>>) -> Result<Self, serde_json::Error> {
        let text = text.into();
        serde_json::from_str::<serde::de::IgnoredAny>(&text)?;
        Ok(RawJson(text))
    }

    /// Serializes `value` to JSON text. Only fails for values JSON cannot express
    /// (maps with non-string keys).
    pub fn from_serialize<T: serde::Serialize + ?Sized>(
        value: &T,
    ) -> Result<RawJson<'static>, serde_json::Error> {
        serde_json::to_string(value).map(|s| RawJson(Cow::Owned(s)))
    }

    /// Wraps text that the caller already knows to be valid JSON (it came from serde_json).
    pub(crate) fn trusted(text: impl Into<Cow<'a, str>>) -> Self {
        RawJson(text.into())
    }

    /// The JSON text, exactly as read (or as built).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Parses the text into a `serde_json::Value` (allocates; for small values).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::from_str(&self.0).unwrap_or(serde_json::Value::Null)
    }

    /// Deserializes the text into `T`.
    pub fn deserialize<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.0)
    }

    /// Copies borrowed text so the value no longer borrows the read buffer.
    pub fn into_owned(self) -> RawJson<'static> {
        RawJson(Cow::Owned(self.0.into_owned()))
    }
}

impl PartialEq for RawJson<'_> {
    fn eq(&self, other: &Self) -> bool {
        significant_bytes(self.as_str()).eq(significant_bytes(other.as_str()))
    }
}

impl fmt::Display for RawJson<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The bytes of JSON text with whitespace outside strings removed.
fn significant_bytes(text: &str) -> impl Iterator<Item = u8> + '_ {
    let mut in_string = false;
    let mut escaped = false;
    text.bytes().filter(move |&b| {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            true
        } else {
            if b == b'"' {
                in_string = true;
            }
            !matches!(b, b' ' | b'\t' | b'\n' | b'\r')
        }
    })
}

/// Appends valid JSON `text` re-spaced the way Python's `json.dumps` and Kineto write it:
/// `", "` between items and `": "` after keys, no other whitespace.
pub(crate) fn write_spaced(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    let mut pos = 0;
    while pos < bytes.len() {
        let b = bytes[pos];
        match b {
            b'"' => {
                let end = string_end(bytes, pos).unwrap_or(bytes.len());
                out.extend_from_slice(&bytes[pos..end]);
                pos = end;
                continue;
            }
            b' ' | b'\t' | b'\n' | b'\r' => {}
            b',' => out.extend_from_slice(b", "),
            b':' => out.extend_from_slice(b": "),
            _ => out.push(b),
        }
        pos += 1;
    }
}

/// Given `bytes[start] == b'"'`, the index just past the closing quote, if present.
pub(crate) fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut pos = start + 1;
    loop {
        let hit = memchr::memchr2(b'"', b'\\', &bytes[pos..])?;
        pos += hit;
        if bytes[pos] == b'\\' {
            pos += 2;
            if pos > bytes.len() {
                return None;
            }
        } else {
            return Some(pos + 1);
        }
    }
}

/// Given the start of a JSON value, the index just past its end, if the value is complete
/// in `bytes`. Does not validate; used to skip values quickly (string- and depth-aware).
/// A number or literal that touches the end of `bytes` counts as incomplete.
pub(crate) fn value_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut pos = start;
    let mut depth = 0usize;
    loop {
        let b = *bytes.get(pos)?;
        match b {
            b'"' => {
                pos = string_end(bytes, pos)?;
                if depth == 0 {
                    return Some(pos);
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                if depth == 0 {
                    return Some(pos);
                }
                depth -= 1;
                if depth == 0 {
                    return Some(pos + 1);
                }
            }
            b',' | b':' | b' ' | b'\t' | b'\n' | b'\r' => {
                if depth == 0 {
                    return Some(pos);
                }
            }
            _ => {
                if depth == 0 {
                    // A scalar: runs until a delimiter.
                    let rest = &bytes[pos..];
                    let len = rest.iter().position(|c| {
                        matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r' | b':')
                    })?;
                    return Some(pos + len);
                }
            }
        }
        pos += 1;
    }
}

/// Bytes that matter to [`object_end`]: quotes and braces.
static OBJECT_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    table[b'"' as usize] = true;
    table[b'{' as usize] = true;
    table[b'}' as usize] = true;
    table
};

/// Bytes that end a run of plain string content: a quote or a backslash.
static STRING_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// Given `bytes[start] == b'{'`, the index just past the `}` that closes that object, if
/// it is in `bytes`. Counts only braces outside strings (brackets balance inside a valid
/// object), so it is about twice as fast as [`value_end`] on Kineto events; it does not
/// validate, and on invalid text it may stop elsewhere than a parser would (callers
/// that need the parser's verdict parse the text it delimits).
pub(crate) fn object_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut pos = start;
    while pos < bytes.len() {
        let b = bytes[pos];
        if OBJECT_BYTES[b as usize] {
            match b {
                b'"' => {
                    pos += 1;
                    loop {
                        let c = *bytes.get(pos)?;
                        if !STRING_BYTES[c as usize] {
                            pos += 1;
                        } else if c == b'"' {
                            break;
                        } else {
                            pos += 2;
                        }
                    }
                }
                b'{' => depth += 1,
                _ => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(pos + 1);
                    }
                }
            }
        }
        pos += 1;
    }
    None
}

/// Turns the text of a JSON string (with its quotes) into its value, borrowing when it
/// has no escapes.
pub(crate) fn unquote(raw: &str) -> Cow<'_, str> {
    let inner = raw.get(1..raw.len().saturating_sub(1)).unwrap_or("");
    if memchr::memchr(b'\\', inner.as_bytes()).is_none() {
        Cow::Borrowed(inner)
    } else {
        Cow::Owned(serde_json::from_str::<String>(raw).unwrap_or_else(|_| inner.to_owned()))
    }
}

/// Iterates the `(key, raw value)` members of a valid JSON object's text.
#[derive(Clone, Debug)]
pub(crate) struct Members<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Members<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        let pos = text.find('{').map_or(text.len(), |p| p + 1);
        Members { text, pos }
    }
}

impl<'a> Iterator for Members<'a> {
    type Item = (Cow<'a, str>, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        let bytes = self.text.as_bytes();
        let skip_ws = |mut p: usize| {
            while p < bytes.len() && matches!(bytes[p], b' ' | b'\t' | b'\n' | b'\r' | b',') {
                p += 1;
            }
            p
        };
        let key_start = skip_ws(self.pos);
        if bytes.get(key_start) != Some(&b'"') {
            self.pos = bytes.len();
            return None;
        }
        let key_end = string_end(bytes, key_start)?;
        let mut p = key_end;
        while p < bytes.len() && matches!(bytes[p], b' ' | b'\t' | b'\n' | b'\r' | b':') {
            p += 1;
        }
        let value_stop = value_end(bytes, p).unwrap_or(bytes.len());
        self.pos = value_stop;
        let key = unquote(self.text.get(key_start..key_end)?);
        let value = self.text.get(p..value_stop)?;
        Some((key, value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spacing_matches_python() {
        let mut out = Vec::new();
        write_spaced(&mut out, r#"{"rank":0,"s":"a, b:\"c\"","l":[1,2]}"#);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"rank": 0, "s": "a, b:\"c\"", "l": [1, 2]}"#
        );
    }

    #[test]
    fn equality_ignores_whitespace_only() {
        let a = RawJson::parse(r#"{ "a" : [1, 2] }"#).unwrap();
        let b = RawJson::parse(r#"{"a":[1,2]}"#).unwrap();
        let c = RawJson::parse(r#"{"a":[1,3]}"#).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(
            RawJson::parse(r#""a b""#).unwrap(),
            RawJson::parse(r#""ab""#).unwrap()
        );
    }

    #[test]
    fn value_end_handles_nesting_and_strings() {
        let text = br#"{"a": "}", "b": [1, {"c": "\""}]} ,"#;
        assert_eq!(value_end(text, 0), Some(text.len() - 2));
        assert_eq!(value_end(b"123, ", 0), Some(3));
        assert_eq!(value_end(b"123", 0), None);
        assert_eq!(value_end(b"{\"a\": 1", 0), None);
    }

    #[test]
    fn object_end_skips_strings_and_nested_objects() {
        let text = br#"{"a": "}{", "b": [1, {"c": "\"}"}], "d": "\\"} ,"#;
        assert_eq!(object_end(text, 0), Some(text.len() - 2));
        assert_eq!(object_end(br#"{"a": {"b": 1}"#, 0), None);
        assert_eq!(object_end(br#"{"a": "}"#, 0), None);
        assert_eq!(object_end(br#"{"a": "\"#, 0), None);
        assert_eq!(object_end(b"{}", 0), Some(2));
        for cut in 0..text.len() - 2 {
            assert_eq!(object_end(&text[..cut], 0), None, "cut at {cut}");
        }
    }

    #[test]
    fn members_walks_objects() {
        let text = r#"{"External id": 1, "s\"q": "x", "dims": [[1, 2], []], "o": {"k": null}}"#;
        let got: Vec<_> = Members::new(text).collect();
        assert_eq!(got.len(), 4);
        assert_eq!(got[0], (Cow::Borrowed("External id"), "1"));
        assert_eq!(got[1].0, "s\"q");
        assert_eq!(got[2].1, "[[1, 2], []]");
        assert_eq!(got[3].1, r#"{"k": null}"#);
        assert_eq!(Members::new("{}").count(), 0);
    }
}
