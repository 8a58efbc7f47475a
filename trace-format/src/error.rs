//! Read errors: what went wrong and where (file, byte offset, event index).

use std::fmt;
use std::io;
use std::sync::Arc;

/// Where in the input an error was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The file name (or the name given for an in-memory input).
    pub file: Arc<str>,
    /// Byte offset in the JSON text (after gzip decompression, for `.gz` input).
    pub byte_offset: u64,
    /// Index in `traceEvents` of the event being read, if inside the event array.
    pub event_index: Option<u64>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: byte {}", self.file, self.byte_offset)?;
        if let Some(index) = self.event_index {
            write!(f, ", event #{index}")?;
        }
        Ok(())
    }
}

/// An error found while reading a trace. Every variant says where (see [`Location`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The file could not be opened or read.
    #[error("{at}: cannot read: {source}")]
    Io {
        /// Where.
        at: Location,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// The gzip stream is corrupt or cut short.
    #[error("{at}: corrupt or truncated gzip data: {source}")]
    Gzip {
        /// Where (offset in the decompressed text produced so far).
        at: Location,
        /// The decoder's error.
        #[source]
        source: io::Error,
    },
    /// The JSON text ends before the trace object is complete (a killed process).
    #[error("{at}: trace is truncated: input ends inside {inside}")]
    Truncated {
        /// Where the input ended.
        at: Location,
        /// What was being read (`"an event"`, `"the top-level object"`).
        inside: &'static str,
    },
    /// The text is not valid JSON.
    #[error("{at}: invalid JSON: {message}")]
    Syntax {
        /// Where.
        at: Location,
        /// What the parser expected.
        message: String,
    },
    /// The text is not valid UTF-8.
    #[error("{at}: invalid UTF-8")]
    InvalidUtf8 {
        /// Where.
        at: Location,
    },
    /// A field has the wrong JSON type (a string `ts`, an `args` array, a non-object event).
    #[error("{at}: `{field}` has the wrong type: expected {expected}, found {found}")]
    WrongType {
        /// Where (the value's first byte).
        at: Location,
        /// The key, e.g. `ts`.
        field: String,
        /// The expected type.
        expected: &'static str,
        /// The start of what was found.
        found: String,
    },
    /// A number is unusable: out of range, not finite (`NaN`), or a negative duration.
    #[error("{at}: `{field}` = {value}: {problem}")]
    BadNumber {
        /// Where (the value's first byte).
        at: Location,
        /// The key, e.g. `dur`.
        field: String,
        /// The number as written (shortened).
        value: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// One JSON value (an event or metadata value) is larger than the reader's limit.
    #[error("{at}: a single value is larger than the {limit_bytes}-byte limit")]
    TooLarge {
        /// Where the value starts.
        at: Location,
        /// The limit ([`crate::ReadOptions::max_value_bytes`]).
        limit_bytes: usize,
    },
}

impl ReadError {
    /// Where the error was found.
    pub fn location(&self) -> &Location {
        match self {
            ReadError::Io { at, .. }
            | ReadError::Gzip { at, .. }
            | ReadError::Truncated { at, .. }
            | ReadError::Syntax { at, .. }
            | ReadError::InvalidUtf8 { at }
            | ReadError::WrongType { at, .. }
            | ReadError::BadNumber { at, .. }
            | ReadError::TooLarge { at, .. } => at,
        }
    }

    /// Whether the error is confined to one event whose extent is known, so a lenient
    /// reader can skip that event and go on.
    pub fn is_event_local(&self) -> bool {
        matches!(
            self,
            ReadError::WrongType { .. }
                | ReadError::BadNumber { .. }
                | ReadError::InvalidUtf8 { .. }
        ) && self.location().event_index.is_some()
    }
}

/// Shortens `text` to at most 40 bytes (on a char boundary) for error messages.
pub(crate) fn excerpt(text: &str) -> String {
    if text.len() <= 40 {
        return text.to_owned();
    }
    let mut end = 40;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
