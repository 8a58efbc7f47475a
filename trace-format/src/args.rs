//! Event arguments (`args`): an ordered list of keys with typed JSON values.

use std::borrow::Cow;

use crate::json::{unquote, Members, RawJson};

/// One argument value, with its JSON type.
///
/// Integers keep full 64-bit precision (`Int` for values that fit `i64`, `UInt` above);
/// numbers beyond 64 bits or beyond `f64` are kept as their text in `Number`, so they
/// round-trip. Arrays and objects are kept as raw JSON.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue<'a> {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer that fits `i64`.
    Int(i64),
    /// An integer above `i64::MAX` that fits `u64`.
    UInt(u64),
    /// A number with a fraction or exponent.
    Float(f64),
    /// A number that fits neither 64-bit integers nor a finite `f64`, as written.
    Number(Cow<'a, str>),
    /// A string.
    Str(Cow<'a, str>),
    /// An array, as raw JSON (for example `Input Dims`).
    Array(RawJson<'a>),
    /// An object, as raw JSON.
    Object(RawJson<'a>),
}

impl<'a> ArgValue<'a> {
    /// Classifies the text of one valid JSON value.
    pub(crate) fn from_json_text(text: &'a str) -> Self {
        match text.as_bytes().first() {
            Some(b'"') => ArgValue::Str(unquote(text)),
            Some(b'{') => ArgValue::Object(RawJson::trusted(text)),
            Some(b'[') => ArgValue::Array(RawJson::trusted(text)),
            Some(b't') => ArgValue::Bool(true),
            Some(b'f') => ArgValue::Bool(false),
            Some(b'n') | None => ArgValue::Null,
            Some(_) => number_value(text),
        }
    }

    /// The value as `i64` when it is an integer that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            ArgValue::Int(v) => Some(v),
            ArgValue::UInt(v) => i64::try_from(v).ok(),
            _ => None,
        }
    }

    /// The value as `f64` when it is any number (integers converted).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            ArgValue::Int(v) => Some(*v as f64),
            ArgValue::UInt(v) => Some(*v as f64),
            ArgValue::Float(v) => Some(*v),
            ArgValue::Number(text) => text.parse().ok(),
            _ => None,
        }
    }

    /// The value as a string slice when it is a JSON string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            ArgValue::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value as a bool when it is `true` or `false`.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            ArgValue::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// Appends the value as JSON text (Kineto/Python spacing for arrays and objects).
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            ArgValue::Null => out.extend_from_slice(b"null"),
            ArgValue::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            ArgValue::Int(v) => out.extend_from_slice(v.to_string().as_bytes()),
            ArgValue::UInt(v) => out.extend_from_slice(v.to_string().as_bytes()),
            ArgValue::Float(v) => {
                // serde_json prints the shortest text that parses back to the same f64,
                // always with a `.` or exponent, and `null` for non-finite values.
                let _ = serde_json::to_writer(&mut *out, v);
            }
            ArgValue::Number(text) => out.extend_from_slice(text.as_bytes()),
            ArgValue::Str(s) => {
                let _ = serde_json::to_writer(&mut *out, &**s);
            }
            ArgValue::Array(raw) | ArgValue::Object(raw) => {
                crate::json::write_spaced(out, raw.as_str())
            }
        }
    }

    /// Copies borrowed text so the value no longer borrows the read buffer.
    pub fn into_owned(self) -> ArgValue<'static> {
        match self {
            ArgValue::Null => ArgValue::Null,
            ArgValue::Bool(b) => ArgValue::Bool(b),
            ArgValue::Int(v) => ArgValue::Int(v),
            ArgValue::UInt(v) => ArgValue::UInt(v),
            ArgValue::Float(v) => ArgValue::Float(v),
            ArgValue::Number(t) => ArgValue::Number(Cow::Owned(t.into_owned())),
            ArgValue::Str(s) => ArgValue::Str(Cow::Owned(s.into_owned())),
            ArgValue::Array(r) => ArgValue::Array(r.into_owned()),
            ArgValue::Object(r) => ArgValue::Object(r.into_owned()),
        }
    }
}

fn number_value(text: &str) -> ArgValue<'_> {
    let is_integer = !text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'));
    if is_integer {
        if let Ok(v) = text.parse::<i64>() {
            return ArgValue::Int(v);
        }
        if let Ok(v) = text.parse::<u64>() {
            return ArgValue::UInt(v);
        }
        return ArgValue::Number(Cow::Borrowed(text));
    }
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => ArgValue::Float(v),
        _ => ArgValue::Number(Cow::Borrowed(text)),
    }
}

impl From<i64> for ArgValue<'_> {
    fn from(v: i64) -> Self {
        ArgValue::Int(v)
    }
}
impl From<u64> for ArgValue<'_> {
    fn from(v: u64) -> Self {
        i64::try_from(v).map_or(ArgValue::UInt(v), ArgValue::Int)
    }
}
impl From<i32> for ArgValue<'_> {
    fn from(v: i32) -> Self {
        ArgValue::Int(v.into())
    }
}
impl From<f64> for ArgValue<'_> {
    fn from(v: f64) -> Self {
        ArgValue::Float(v)
    }
}
impl From<bool> for ArgValue<'_> {
    fn from(v: bool) -> Self {
        ArgValue::Bool(v)
    }
}
impl<'a> From<&'a str> for ArgValue<'a> {
    fn from(v: &'a str) -> Self {
        ArgValue::Str(Cow::Borrowed(v))
    }
}
impl From<String> for ArgValue<'_> {
    fn from(v: String) -> Self {
        ArgValue::Str(Cow::Owned(v))
    }
}

/// The `args` object of an event: keys in their original order, values with JSON types.
///
/// Read events hold the raw JSON text and decode it on demand (no allocation when a sink
/// ignores args); built events hold a list. Both compare equal when their members do.
#[derive(Clone, Debug)]
pub struct Args<'a>(Repr<'a>);

#[derive(Clone, Debug)]
enum Repr<'a> {
    Raw(Cow<'a, str>),
    List(Vec<(Cow<'a, str>, ArgValue<'a>)>),
}

impl Default for Args<'_> {
    fn default() -> Self {
        Args::new()
    }
}

impl<'a> Args<'a> {
    /// An empty argument list.
    pub fn new() -> Self {
        Args(Repr::List(Vec::new()))
    }

    /// Wraps the text of a valid JSON object (the reader checked it).
    pub(crate) fn from_raw(text: &'a str) -> Self {
        Args(Repr::Raw(Cow::Borrowed(text)))
    }

    /// Appends an argument (builder style). Duplicate keys are kept, as in JSON text.
    pub fn push(&mut self, key: impl Into<Cow<'a, str>>, value: impl Into<ArgValue<'a>>) {
        self.make_list().push((key.into(), value.into()));
    }

    /// Appends an argument and returns `self`, for chaining.
    pub fn with(mut self, key: impl Into<Cow<'a, str>>, value: impl Into<ArgValue<'a>>) -> Self {
        self.push(key, value);
        self
    }

    fn make_list(&mut self) -> &mut Vec<(Cow<'a, str>, ArgValue<'a>)> {
        if let Repr::Raw(_) = self.0 {
            let list: Vec<_> = self.iter().map(|(k, v)| (k, v.into_owned())).collect();
            let list = list
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k.into_owned()), v))
                .collect();
            self.0 = Repr::List(list);
        }
        match &mut self.0 {
            Repr::List(list) => list,
            Repr::Raw(_) => unreachable!("converted to a list just above"),
        }
    }

    /// Looks up the first argument named `key` (for example `correlation`, `Device Type`).
    pub fn get(&self, key: &str) -> Option<ArgValue<'_>> {
        self.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Looks up an integer argument.
    pub fn get_i64(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(|v| v.as_i64())
    }

    /// Iterates `(key, value)` in order.
    pub fn iter(&self) -> ArgsIter<'_> {
        match &self.0 {
            Repr::Raw(text) => ArgsIter(IterRepr::Raw(Members::new(text))),
            Repr::List(list) => ArgsIter(IterRepr::List(list.iter())),
        }
    }

    /// Iterates `(key, value)` in order, decoding a value only when
    /// [`LazyArg::value`] asks for it: a sink that looks for a few keys of many events
    /// pays for the values it uses, not for every number and string of every event.
    pub fn iter_lazy(&self) -> impl Iterator<Item = (Cow<'_, str>, LazyArg<'_>)> + '_ {
        let (raw, list) = match &self.0 {
            Repr::Raw(text) => (Some(Members::new(text)), None),
            Repr::List(list) => (None, Some(list.iter())),
        };
        raw.into_iter()
            .flatten()
            .map(|(k, v)| (k, LazyArg(LazyRepr::Text(v))))
            .chain(
                list.into_iter()
                    .flatten()
                    .map(|(k, v)| (Cow::Borrowed(&**k), LazyArg(LazyRepr::Value(v)))),
            )
    }

    /// The number of arguments.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Raw(_) => self.iter().count(),
            Repr::List(list) => list.len(),
        }
    }

    /// Whether there are no arguments.
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// Appends the object as JSON text.
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        match &self.0 {
            Repr::Raw(text) => crate::json::write_spaced(out, text),
            Repr::List(list) => {
                out.push(b'{');
                for (i, (key, value)) in list.iter().enumerate() {
                    if i > 0 {
                        out.extend_from_slice(b", ");
                    }
                    let _ = serde_json::to_writer(&mut *out, &**key);
                    out.extend_from_slice(b": ");
                    value.write_json(out);
                }
                out.push(b'}');
            }
        }
    }

    /// Copies borrowed text so the arguments no longer borrow the read buffer.
    pub fn into_owned(self) -> Args<'static> {
        match self.0 {
            Repr::Raw(text) => Args(Repr::Raw(Cow::Owned(text.into_owned()))),
            Repr::List(list) => Args(Repr::List(
                list.into_iter()
                    .map(|(k, v)| (Cow::Owned(k.into_owned()), v.into_owned()))
                    .collect(),
            )),
        }
    }
}

/// One argument's value, decoded on demand (see [`Args::iter_lazy`]).
#[derive(Clone, Copy, Debug)]
pub struct LazyArg<'s>(LazyRepr<'s>);

#[derive(Clone, Copy, Debug)]
enum LazyRepr<'s> {
    /// The text of a valid JSON value (from a read event).
    Text(&'s str),
    /// A value of built arguments.
    Value(&'s ArgValue<'s>),
}

impl<'s> LazyArg<'s> {
    /// The value, as [`Args::iter`] would give it.
    pub fn value(&self) -> ArgValue<'s> {
        match self.0 {
            LazyRepr::Text(text) => ArgValue::from_json_text(text),
            LazyRepr::Value(value) => value.clone(),
        }
    }

    /// The JSON text of the value when it is an array (what [`ArgValue::Array`] holds),
    /// without decoding or copying it.
    pub fn array_text(&self) -> Option<&'s str> {
        match self.0 {
            LazyRepr::Text(text) => text.starts_with('[').then_some(text),
            LazyRepr::Value(ArgValue::Array(raw)) => Some(raw.as_str()),
            LazyRepr::Value(_) => None,
        }
    }
}

impl PartialEq for Args<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

/// Iterator over an event's arguments, see [`Args::iter`].
#[derive(Debug)]
pub struct ArgsIter<'s>(IterRepr<'s>);

#[derive(Debug)]
enum IterRepr<'s> {
    Raw(Members<'s>),
    List(std::slice::Iter<'s, (Cow<'s, str>, ArgValue<'s>)>),
}

impl<'s> Iterator for ArgsIter<'s> {
    type Item = (Cow<'s, str>, ArgValue<'s>);

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            IterRepr::Raw(members) => members
                .next()
                .map(|(k, v)| (k, ArgValue::from_json_text(v))),
            IterRepr::List(iter) => iter.next().map(|(k, v)| (Cow::Borrowed(&**k), v.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_args_decode_with_types() {
        let text = r#"{"External id": 7, "big": 18446744073709551615, "huge": 1e999,
            "f": 68.0, "s": "a\"b", "dims": [[1, 2]], "ok": true, "n": null, "o": {"x": 1}}"#;
        let args = Args::from_raw(text);
        assert_eq!(args.get_i64("External id"), Some(7));
        assert_eq!(args.get("big"), Some(ArgValue::UInt(u64::MAX)));
        assert_eq!(args.get("huge"), Some(ArgValue::Number("1e999".into())));
        assert_eq!(args.get("f"), Some(ArgValue::Float(68.0)));
        assert_eq!(args.get("s").unwrap().as_str(), Some("a\"b"));
        assert!(matches!(args.get("dims"), Some(ArgValue::Array(_))));
        assert_eq!(args.get("ok"), Some(ArgValue::Bool(true)));
        assert_eq!(args.get("n"), Some(ArgValue::Null));
        assert!(matches!(args.get("o"), Some(ArgValue::Object(_))));
        assert_eq!(args.len(), 9);
    }

    #[test]
    fn lazy_iteration_gives_the_same_members() {
        let text = r#"{"a": 1, "s": "x\"y", "dims": [[1, 2]], "a": 2.5, "n": null}"#;
        let dims = ArgValue::Array(RawJson::trusted("[[3]]"));
        let built = Args::new()
            .with("a", 1i64)
            .with("s", "q")
            .with("a", 2.5)
            .with("d", dims);
        for args in [Args::from_raw(text), built] {
            let eager: Vec<_> = args.iter().collect();
            let lazy: Vec<_> = args.iter_lazy().map(|(k, v)| (k, v.value())).collect();
            assert_eq!(lazy, eager);
            let arrays: Vec<_> = args.iter_lazy().map(|(_, v)| v.array_text()).collect();
            let expected: Vec<_> = eager
                .iter()
                .map(|(_, v)| match v {
                    ArgValue::Array(raw) => Some(raw.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(arrays, expected);
            assert!(!lazy.is_empty());
        }
    }

    #[test]
    fn built_args_equal_raw_args_after_writing() {
        let built = Args::new().with("a", 1i64).with("b", "x").with("c", 2.5);
        let mut out = Vec::new();
        built.write_json(&mut out);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text, r#"{"a": 1, "b": "x", "c": 2.5}"#);
        assert_eq!(Args::from_raw(&text), built);
        let mut raw = Args::from_raw(&text);
        raw.push("d", true);
        assert_eq!(raw.len(), 4);
    }
}
