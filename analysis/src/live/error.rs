//! Errors of the live model: which document of a stream, at which byte.

use std::fmt;
use std::io;

/// An error reading neuron-monitor documents.
#[derive(Debug)]
#[non_exhaustive]
pub enum LiveError {
    /// A document is not valid JSON or does not have neuron-monitor's layout.
    Parse {
        /// Index of the document in its stream (0 for the first).
        document: u64,
        /// Byte offset in the stream where the problem was found.
        byte_offset: u64,
        /// What was wrong (serde_json's message, with the key path where it knows it).
        message: String,
    },
    /// A document grew past the reader's size limit without closing.
    TooLarge {
        /// Index of the document in its stream.
        document: u64,
        /// Byte offset where it started.
        byte_offset: u64,
        /// The limit in bytes.
        limit_bytes: usize,
    },
    /// Reading the stream failed.
    Io {
        /// Bytes read before the failure.
        byte_offset: u64,
        /// The I/O error.
        source: io::Error,
    },
    /// Replay could not read a trace directory.
    Replay(String),
}

impl LiveError {
    /// True for errors after which a stream reader can go on with the next document.
    pub fn is_recoverable(&self) -> bool {
        matches!(self, LiveError::Parse { .. } | LiveError::TooLarge { .. })
    }
}

impl fmt::Display for LiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LiveError::Parse {
                document,
                byte_offset,
                message,
            } => write!(
                f,
                "document {document} (byte offset {byte_offset}): {message}"
            ),
            LiveError::TooLarge {
                document,
                byte_offset,
                limit_bytes,
            } => write!(
                f,
                "document {document} (byte offset {byte_offset}): larger than {limit_bytes} bytes without closing"
            ),
            LiveError::Io {
                byte_offset,
                source,
            } => write!(f, "reading at byte offset {byte_offset}: {source}"),
            LiveError::Replay(message) => write!(f, "replay: {message}"),
        }
    }
}

impl std::error::Error for LiveError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LiveError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
