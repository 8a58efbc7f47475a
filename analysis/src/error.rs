//! Errors of this crate: what went wrong and where.

use std::fmt;
use std::path::PathBuf;

use trace_format::ReadError;

/// An error from loading traces or running an analysis.
#[derive(Debug)]
#[non_exhaustive]
pub enum AnalysisError {
    /// A trace could not be read; the inner error carries file, byte offset and event index.
    Read {
        /// The trace file.
        path: PathBuf,
        /// The reader's error, with its [`trace_format::Location`] (boxed: it is large).
        source: Box<ReadError>,
    },
    /// A path given as input is unusable: missing, unreadable, a directory without a
    /// trace.
    Input {
        /// The path.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The profiling window asked for does not exist for a rank.
    NoSuchWindow {
        /// The window asked for (from 1).
        window: usize,
        /// The rank.
        rank: i64,
        /// Its files, in time order.
        files: Vec<PathBuf>,
    },
    /// No trace was given, or none had analyzable events.
    NoTraces,
    /// Two trace files claim the same rank.
    DuplicateRank {
        /// The rank.
        rank: i64,
        /// The second file claiming it.
        path: PathBuf,
    },
    /// An analysis cannot run on this input (HTA raises an exception in the same case).
    NotApplicable {
        /// The analysis, e.g. `"potential_stragglers"`.
        analysis: &'static str,
        /// Why.
        reason: String,
    },
}

impl fmt::Display for AnalysisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // The reader's error starts with its location (file, byte offset, event
            // index), so it is the whole message, and not also the `source()`: a
            // chain printer (`{:#}`) would repeat it.
            AnalysisError::Read { source, .. } => write!(f, "{source}"),
            AnalysisError::NoSuchWindow {
                window,
                rank,
                files,
            } => {
                let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
                write!(
                    f,
                    "--window {window}: rank {rank} has {} profiling window(s): {}",
                    files.len(),
                    names.join(", ")
                )
            }
            AnalysisError::Input { path, reason } => write!(f, "{}: {reason}", path.display()),
            AnalysisError::NoTraces => f.write_str("no trace with analyzable events"),
            AnalysisError::DuplicateRank { rank, path } => {
                write!(
                    f,
                    "{}: rank {rank} already given by another file",
                    path.display()
                )
            }
            AnalysisError::NotApplicable { analysis, reason } => {
                write!(f, "{analysis} not applicable: {reason}")
            }
        }
    }
}

impl std::error::Error for AnalysisError {}
