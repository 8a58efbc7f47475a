//! The crate's error type.

use std::fmt;
use std::path::PathBuf;

/// What went wrong while handing a trace over or writing it.
#[derive(Debug)]
#[non_exhaustive]
pub enum ProfilerError {
    /// Writing a trace file failed.
    Write {
        /// The file being written.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A user `on_trace_ready` handler failed.
    Handler(String),
}

impl fmt::Display for ProfilerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProfilerError::Write { path, source } => {
                write!(f, "writing trace {}: {source}", path.display())
            }
            ProfilerError::Handler(message) => write!(f, "on_trace_ready handler: {message}"),
        }
    }
}

impl std::error::Error for ProfilerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProfilerError::Write { source, .. } => Some(source),
            ProfilerError::Handler(_) => None,
        }
    }
}
