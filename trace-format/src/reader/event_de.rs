//! Decoding one event object: [`super::fast_event`] (or serde_json, for what that leaves
//! aside) splits it into raw members (borrowed from the buffer, no allocation), then each
//! member is checked and converted here.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::args::Args;
use crate::category::Category;
use crate::error::{excerpt, Location, ReadError};
use crate::event::{Event, Ident, Phase};
use crate::json::{unquote, RawJson};
use crate::time::{parse_us_to_ns, NumberProblem};

/// The members of one event object, as the text of valid JSON values borrowed from the
/// buffer.
#[derive(Default, Debug)]
pub(crate) struct EventFields<'a> {
    pub(crate) ph: Option<&'a str>,
    pub(crate) cat: Option<&'a str>,
    pub(crate) name: Option<&'a str>,
    pub(crate) pid: Option<&'a str>,
    pub(crate) tid: Option<&'a str>,
    pub(crate) ts: Option<&'a str>,
    pub(crate) dur: Option<&'a str>,
    pub(crate) id: Option<&'a str>,
    pub(crate) bp: Option<&'a str>,
    pub(crate) s: Option<&'a str>,
    pub(crate) args: Option<&'a str>,
    pub(crate) extra: Vec<(Cow<'a, str>, &'a str)>,
}

/// A key, borrowed when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

impl<'de> Deserialize<'de> for EventFields<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldsVisitor;
        impl<'de> Visitor<'de> for FieldsVisitor {
            type Value = EventFields<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an event object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut fields = EventFields::default();
                while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                    let value = map.next_value::<&'de RawValue>()?.get();
                    // Byte patterns compile to a decision tree on length and bytes,
                    // where a `&str` match would call memcmp per candidate key.
                    let slot = match key.as_bytes() {
                        [b'p', b'h'] => &mut fields.ph,
                        [b'c', b'a', b't'] => &mut fields.cat,
                        [b'n', b'a', b'm', b'e'] => &mut fields.name,
                        [b'p', b'i', b'd'] => &mut fields.pid,
                        [b't', b'i', b'd'] => &mut fields.tid,
                        [b't', b's'] => &mut fields.ts,
                        [b'd', b'u', b'r'] => &mut fields.dur,
                        [b'i', b'd'] => &mut fields.id,
                        [b'b', b'p'] => &mut fields.bp,
                        [b's'] => &mut fields.s,
                        [b'a', b'r', b'g', b's'] => &mut fields.args,
                        _ => {
                            fields.extra.push((key, value));
                            continue;
                        }
                    };
                    *slot = Some(value);
                }
                Ok(fields)
            }
        }
        deserializer.deserialize_map(FieldsVisitor)
    }
}

/// What the converter needs to know to resolve times and report errors.
pub(crate) struct EventContext<'c> {
    pub(crate) file: &'c std::sync::Arc<str>,
    /// The event's text (to turn member positions into offsets).
    pub(crate) text: &'c [u8],
    /// Text offset of `text[0]`.
    pub(crate) text_offset: u64,
    pub(crate) index: u64,
    pub(crate) base_time_ns: Option<i64>,
}

impl EventContext<'_> {
    fn location_of(&self, raw: &str) -> Location {
        let delta = (raw.as_ptr() as usize).wrapping_sub(self.text.as_ptr() as usize);
        let delta = if delta <= self.text.len() { delta } else { 0 };
        Location {
            file: self.file.clone(),
            byte_offset: self.text_offset + delta as u64,
            event_index: Some(self.index),
        }
    }

    fn wrong_type(&self, field: &str, expected: &'static str, raw: &str) -> ReadError {
        ReadError::WrongType {
            at: self.location_of(raw),
            field: field.to_owned(),
            expected,
            found: excerpt(raw),
        }
    }

    fn bad_number(&self, field: &str, raw: &str, problem: &'static str) -> ReadError {
        ReadError::BadNumber {
            at: self.location_of(raw),
            field: field.to_owned(),
            value: excerpt(raw),
            problem,
        }
    }

    fn string<'a>(
        &self,
        field: &str,
        raw: Option<&'a str>,
    ) -> Result<Option<Cow<'a, str>>, ReadError> {
        match raw {
            None => Ok(None),
            Some(text) if text.starts_with('"') => Ok(Some(unquote(text))),
            Some(text) => Err(self.wrong_type(field, "a string", text)),
        }
    }

    fn ident<'a>(&self, field: &str, raw: Option<&'a str>) -> Result<Option<Ident<'a>>, ReadError> {
        let Some(text) = raw else {
            return Ok(None);
        };
        match text.as_bytes()[0] {
            b'"' => Ok(Some(Ident::Str(unquote(text)))),
            b'-' | b'0'..=b'9' => match text.parse::<i64>() {
                Ok(n) => Ok(Some(Ident::Num(n))),
                Err(_) if text.bytes().all(|b| b == b'-' || b.is_ascii_digit()) => {
                    Err(self.bad_number(field, text, "out of range for i64"))
                }
                Err(_) => Err(self.wrong_type(field, "an integer or a string", text)),
            },
            _ => Err(self.wrong_type(field, "an integer or a string", text)),
        }
    }

    fn micros(&self, field: &str, raw: Option<&str>) -> Result<Option<i64>, ReadError> {
        let Some(text) = raw else {
            return Ok(None);
        };
        if !matches!(text.as_bytes()[0], b'-' | b'0'..=b'9') {
            return Err(self.wrong_type(field, "a number", text));
        }
        match parse_us_to_ns(text) {
            Ok(ns) => Ok(Some(ns)),
            Err(problem @ NumberProblem::OutOfRange) | Err(problem @ NumberProblem::NotANumber) => {
                Err(self.bad_number(field, text, problem.describe()))
            }
        }
    }

    /// Checks and converts the members into an [`Event`].
    pub(crate) fn build<'a>(&self, fields: EventFields<'a>) -> Result<Event<'a>, ReadError> {
        let phase = match self.string("ph", fields.ph)? {
            Some(ph) => Phase::parse(ph),
            None => {
                return Err(ReadError::WrongType {
                    at: Location {
                        file: self.file.clone(),
                        byte_offset: self.text_offset,
                        event_index: Some(self.index),
                    },
                    field: "ph".to_owned(),
                    expected: "a string",
                    found: "no `ph` key".to_owned(),
                })
            }
        };
        let ts_ns = match self.micros("ts", fields.ts)? {
            // Kineto: absolute ns = ts * 1000 + baseTimeNanoseconds (kineto-format.md, "Time").
            Some(rel) => match self.base_time_ns {
                Some(base) => match rel.checked_add(base) {
                    Some(abs) => Some(abs),
                    None => {
                        let text = fields.ts.unwrap_or("");
                        return Err(self.bad_number(
                            "ts",
                            text,
                            "out of range after adding baseTimeNanoseconds",
                        ));
                    }
                },
                None => Some(rel),
            },
            None => None,
        };
        let dur_ns = self.micros("dur", fields.dur)?;
        if let (Some(dur), Some(raw)) = (dur_ns, fields.dur) {
            if dur < 0 {
                return Err(self.bad_number("dur", raw, "negative duration"));
            }
        }
        let args = match fields.args {
            None => None,
            Some(text) if text.starts_with('{') => Some(Args::from_raw(text)),
            Some(text) => return Err(self.wrong_type("args", "an object", text)),
        };
        Ok(Event {
            phase,
            category: self.string("cat", fields.cat)?.map(Category::parse),
            name: self.string("name", fields.name)?,
            pid: self.ident("pid", fields.pid)?,
            tid: self.ident("tid", fields.tid)?,
            ts_ns,
            dur_ns,
            flow_id: self.ident("id", fields.id)?,
            binding_point: self.string("bp", fields.bp)?,
            scope: self.string("s", fields.s)?,
            args,
            extra: fields
                .extra
                .into_iter()
                .map(|(k, v)| (k, RawJson::trusted(v)))
                .collect(),
        })
    }
}
