//! A decoder specialised for event objects: splits one `{…}` into its members in a
//! single pass over the bytes, where serde_json's generic deserializer parses every key
//! into a string, buffers every value as a `RawValue` and checks UTF-8 per value.
//!
//! It accepts only text that serde_json accepts too, and gives the same members:
//! [`split_event`] returns `None` on anything it does not take on itself (any syntax
//! error, text that ends before the object does, an escape in a top-level key, nesting
//! deeper than [`MAX_DEPTH`], invalid UTF-8), and the caller then decodes the same text
//! with serde_json, which reports the error exactly as before or decodes the rare valid
//! case. So errors, offsets and messages do not depend on this module; the tests at the
//! bottom and the `fast_event` fuzz target check that whenever it answers, serde_json
//! answers the same.
//!
//! The grammar is RFC 8259's, as serde_json applies it when it skips a value: strings
//! without raw control characters (U+0000–U+001F) and with only the escapes `\" \\ \/
//! \b \f \n \r \t \uXXXX` (a `\u` escape is four hex digits; serde_json does not pair
//! surrogates when it skips, so neither does this); numbers `-? (0 | [1-9][0-9]*) (. [0-9]+)?
//! ([eE] [+-]? [0-9]+)?`; `true`, `false`, `null`; whitespace is space, tab, LF, CR.

use std::borrow::Cow;

use super::event_de::EventFields;
use crate::event::EventKey;

/// Containers nested deeper than this inside one event are left to serde_json.
const MAX_DEPTH: u32 = 64;

/// Bytes that end a run of plain string content: `"`, `\` and the control characters.
static STRING_STOP: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// Splits the event object at the start of `text` into its members. Returns the
/// members and the length of the object's text (up to and including its `}`), or `None`
/// where serde_json must decide (see the module docs).
pub(crate) fn split_event(text: &[u8]) -> Option<(EventFields<'_>, usize)> {
    let mut cur = Cursor {
        bytes: text,
        pos: 0,
    };
    if cur.peek()? != b'{' {
        return None;
    }
    cur.pos += 1;
    // Member positions: (key start, key end, value start, value end).
    let mut known: [Option<(usize, usize)>; EventKey::COUNT] = [None; EventKey::COUNT];
    let mut extra: Vec<[usize; 4]> = Vec::new();
    cur.skip_ws();
    if cur.peek()? == b'}' {
        cur.pos += 1;
    } else {
        loop {
            if cur.peek()? != b'"' {
                return None;
            }
            let key_start = cur.pos + 1;
            if cur.string()? {
                // Escaped keys are parsed (unescaped) by serde_json.
                return None;
            }
            let key_end = cur.pos - 1;
            cur.skip_ws();
            if cur.peek()? != b':' {
                return None;
            }
            cur.pos += 1;
            cur.skip_ws();
            let value_start = cur.pos;
            cur.value()?;
            let span = (value_start, cur.pos);
            match EventKey::parse(&text[key_start..key_end]) {
                // A repeated key: the last value wins, as in serde_json's map visitor.
                Some(k) => known[k as usize] = Some(span),
                None => extra.push([key_start, key_end, span.0, span.1]),
            }
            cur.skip_ws();
            match cur.peek()? {
                b',' => {
                    cur.pos += 1;
                    cur.skip_ws();
                }
                b'}' => {
                    cur.pos += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    let end = cur.pos;
    // Every position kept is next to an ASCII delimiter, so a char boundary.
    let text = std::str::from_utf8(&text[..end]).ok()?;
    let get = |k: EventKey| known[k as usize].map(|(a, b)| &text[a..b]);
    let fields = EventFields {
        ph: get(EventKey::Ph),
        cat: get(EventKey::Cat),
        name: get(EventKey::Name),
        pid: get(EventKey::Pid),
        tid: get(EventKey::Tid),
        ts: get(EventKey::Ts),
        dur: get(EventKey::Dur),
        id: get(EventKey::Id),
        bp: get(EventKey::Bp),
        s: get(EventKey::Scope),
        args: get(EventKey::Args),
        extra: extra
            .into_iter()
            .map(|[ks, ke, vs, ve]| (Cow::Borrowed(&text[ks..ke]), &text[vs..ve]))
            .collect(),
    };
    Some((fields, end))
}

struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    /// At a `"`: moves past the closing quote. Returns whether the string had escapes.
    fn string(&mut self) -> Option<bool> {
        let bytes = self.bytes;
        let mut p = self.pos + 1;
        let mut escaped = false;
        loop {
            let c = *bytes.get(p)?;
            if !STRING_STOP[c as usize] {
                p += 1;
                continue;
            }
            match c {
                b'"' => {
                    self.pos = p + 1;
                    return Some(escaped);
                }
                b'\\' => {
                    escaped = true;
                    match *bytes.get(p + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => p += 2,
                        b'u' => {
                            let hex = bytes.get(p + 2..p + 6)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            p += 6;
                        }
                        _ => return None,
                    }
                }
                // A raw control character.
                _ => return None,
            }
        }
    }

    fn digits(&mut self) -> usize {
        let from = self.pos;
        while let Some(b'0'..=b'9') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
        self.pos - from
    }

    /// At `-` or a digit: moves past the number.
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek()? {
            b'0' => {
                self.pos += 1;
                // One leading zero only.
                if let Some(b'0'..=b'9') = self.peek() {
                    return None;
                }
            }
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        Some(())
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        if self.bytes.get(self.pos..self.pos + word.len())? != word {
            return None;
        }
        self.pos += word.len();
        Some(())
    }

    /// A scalar at `pos` (string, number, literal); `None` on anything else.
    fn scalar(&mut self, first: u8) -> Option<()> {
        match first {
            b'"' => self.string().map(|_| ()),
            b'-' | b'0'..=b'9' => self.number(),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => None,
        }
    }

    /// An object key and its `:` (whitespace skipped before and after).
    fn key(&mut self) -> Option<()> {
        self.skip_ws();
        if self.peek()? != b'"' {
            return None;
        }
        self.string()?;
        self.skip_ws();
        if self.peek()? != b':' {
            return None;
        }
        self.pos += 1;
        Some(())
    }

    /// Moves past one complete value starting at `pos` (no leading whitespace).
    fn value(&mut self) -> Option<()> {
        // Open containers, innermost in bit 0: 1 for an array, 0 for an object.
        let mut stack: u64 = 0;
        let mut depth: u32 = 0;
        loop {
            // A value starts here.
            self.skip_ws();
            match self.peek()? {
                open @ (b'{' | b'[') => {
                    self.pos += 1;
                    self.skip_ws();
                    let close = if open == b'{' { b'}' } else { b']' };
                    if self.peek()? == close {
                        self.pos += 1;
                    } else {
                        depth += 1;
                        if depth > MAX_DEPTH {
                            return None;
                        }
                        stack = (stack << 1) | u64::from(open == b'[');
                        if open == b'{' {
                            self.key()?;
                        }
                        continue;
                    }
                }
                first => self.scalar(first)?,
            }
            // A value ended: close what ends here, until a `,` calls for the next value.
            loop {
                if depth == 0 {
                    return Some(());
                }
                self.skip_ws();
                let in_array = stack & 1 == 1;
                match self.peek()? {
                    b',' => {
                        self.pos += 1;
                        if !in_array {
                            self.key()?;
                        }
                        break;
                    }
                    b']' if in_array => {}
                    b'}' if !in_array => {}
                    _ => return None,
                }
                self.pos += 1;
                stack >>= 1;
                depth -= 1;
            }
        }
    }
}

/// The checks shared by the tests and the `fast_event` fuzz target.
#[cfg(any(test, feature = "fuzzing"))]
mod check {
    use super::{split_event, EventFields};

    /// serde_json's split of the same text: the members and the length read.
    fn by_serde(text: &[u8]) -> Option<(String, usize)> {
        let mut stream = serde_json::Deserializer::from_slice(text).into_iter::<EventFields<'_>>();
        let fields = stream.next()?.ok()?;
        Some((format!("{fields:?}"), stream.byte_offset()))
    }

    pub(super) fn by_fast(text: &[u8]) -> Option<(String, usize)> {
        split_event(text).map(|(fields, used)| (format!("{fields:?}"), used))
    }

    /// Whenever the fast split answers, serde_json answers the same.
    pub(crate) fn check_agrees(text: &[u8]) {
        if let Some(fast) = by_fast(text) {
            let serde = by_serde(text);
            assert_eq!(
                Some(&fast),
                serde.as_ref(),
                "fast split differs from serde_json on {:?}",
                String::from_utf8_lossy(text)
            );
        }
    }
}
#[cfg(feature = "fuzzing")]
pub(crate) use check::check_agrees;

#[cfg(test)]
mod tests {
    use super::check::{by_fast, check_agrees};
    use super::*;

    const SAMPLE: &str = r#"{"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4>(int, \"q\" \u00e9)", "pid": 0, "tid": "stream 7", "ts": 1695851412345678.125, "dur": 3.5e2, "id": -12, "bp": "e", "s": "t", "args": {"External id": 31, "device": 0, "grid": [108, 1, 1], "nested": {"a": [true, false, null, {}], "b": []}, "big": 18446744073709551616, "neg": -0.0e-7}, "extra": {"k": "v"}, "ph": "i"}"#;

    #[test]
    fn splits_a_kineto_event_like_serde_json() {
        let (fields, used) = split_event(SAMPLE.as_bytes()).expect("fast path takes it");
        assert_eq!(used, SAMPLE.len());
        assert_eq!(fields.ph, Some(r#""i""#), "the last repeated key wins");
        assert_eq!(fields.dur, Some("3.5e2"));
        assert_eq!(fields.extra.len(), 1);
        check_agrees(SAMPLE.as_bytes());
        // With text after the object (the next event), only the object is read.
        let mut longer = SAMPLE.as_bytes().to_vec();
        longer.extend_from_slice(b",\n  {\"ph\": \"X\"}]");
        assert_eq!(split_event(&longer).map(|f| f.1), Some(SAMPLE.len()));
        check_agrees(&longer);
    }

    #[test]
    fn leaves_what_serde_json_rejects_or_unescapes_to_serde_json() {
        for bad in [
            r#"{"ph": "X",}"#,
            r#"{"ph": 01}"#,
            r#"{"ph": 1.}"#,
            r#"{"ph": 1e}"#,
            r#"{"ph": -}"#,
            r#"{"ph": tru}"#,
            r#"{"ph": [1,]}"#,
            r#"{"ph": {"a" 1}}"#,
            r#"{"ph": {1: 1}}"#,
            r#"{"ph": "\x"}"#,
            r#"{"ph": "\u12G4"}"#,
            "{\"ph\": \"a\u{1}b\"}",
            r#"{"p\u0068": "X"}"#,
            r#"{"ph": "X""#,
            r#"{"ph": NaN}"#,
            r#"{"ph": "X"] "#,
            r#" {"ph": "X"}"#,
        ] {
            assert_eq!(by_fast(bad.as_bytes()), None, "{bad}");
        }
        // Invalid UTF-8 inside a string.
        assert_eq!(by_fast(b"{\"name\": \"\xff\"}"), None);
        // Deep nesting goes to serde_json; 64 levels are still taken.
        let deep = |n: usize| format!("{{\"args\": {}1{}}}", "[".repeat(n), "]".repeat(n));
        assert!(by_fast(deep(MAX_DEPTH as usize).as_bytes()).is_some());
        assert_eq!(by_fast(deep(MAX_DEPTH as usize + 1).as_bytes()), None);
        check_agrees(deep(MAX_DEPTH as usize).as_bytes());
    }

    /// Every prefix, and every single-byte change at every position of a sample, to a
    /// set of bytes that matter to JSON: the fast split never accepts what serde_json
    /// rejects, nor splits differently.
    #[test]
    fn agrees_with_serde_json_on_every_cut_and_byte_change() {
        let sample = SAMPLE.as_bytes();
        let mut accepted = 0;
        for cut in 0..=sample.len() {
            check_agrees(&sample[..cut]);
        }
        let replacements = b"{}[]\",:\\ 0-1.eE+tfnu\x01\x7f\xc3\xa9\xff/x";
        let mut text = sample.to_vec();
        for pos in 0..sample.len() {
            for &b in replacements {
                text[pos] = b;
                check_agrees(&text);
                accepted += usize::from(by_fast(&text).is_some());
                // Deleting the byte, and inserting one, too.
                let mut shorter = sample.to_vec();
                shorter.remove(pos);
                check_agrees(&shorter);
                let mut longer = sample.to_vec();
                longer.insert(pos, b);
                check_agrees(&longer);
            }
            text[pos] = sample[pos];
        }
        // The comparison ran on accepted texts, not only on rejected ones.
        assert!(accepted > 1000, "only {accepted} changed texts accepted");
    }
}
