//! Kineto JSON → Perfetto protobuf (TrackEvent), streaming.
//!
//! See the crate docs for the wire format and the track layout. [`PerfettoExporter`]
//! takes one or more Kineto files (one per rank) and writes one `.pftrace`;
//! [`validate`] checks such a file semantically.

pub mod archive;
mod clock;
mod convert;
mod intern;
mod lanes;
pub mod proto;
mod spill;
mod tracks;
mod utilization;
pub mod validate;

use std::io::Write;
use std::path::{Path, PathBuf};

use trace_format::{ReadError, TraceReader};

pub use convert::SEQUENCE_ID;

pub use spill::DEFAULT_BUDGET_BYTES;

/// Counts of what was converted; totals over all files of one output.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// Events read from the inputs.
    pub events_read: u64,
    /// `X` events written as begin/end pairs.
    pub slices: u64,
    /// Slices that overlap others on their thread without nesting, put on extra lanes.
    pub split_slices: u64,
    /// Tracks with split slices, most split first.
    pub split_tracks: Vec<SplitTrack>,
    /// Instants written (`i` events other than `[memory]`).
    pub instants: u64,
    /// `[memory]` events (each gives up to two counter values).
    pub memory_events: u64,
    /// Counter values written (`C` series values and `[memory]` totals).
    pub counter_values: u64,
    /// Counter values derived, not read: engine utilization (`%` per time bucket, about
    /// 2,000 buckets over the trace's span, at least 10 µs each).
    pub derived_counter_values: u64,
    /// Flow events (`s`, `t`, `f`) written as flow ids: `flows_bound + flows_unbound`.
    pub flow_events: u64,
    /// Flow events whose ids sit on the begin event of the innermost slice of their
    /// track enclosing their time (as Perfetto's JSON importer binds them).
    pub flows_bound: u64,
    /// Flow events no slice of their track encloses, written as instants named after
    /// the flow kind (`ac2g`, `fwdbwd`) carrying the ids.
    pub flows_unbound: u64,
    /// `M` events (used for names).
    pub metadata_events: u64,
    /// Events without a timestamp (or flow id), skipped.
    pub skipped_no_time: u64,
    /// Events of phases TrackEvent has no place for (`B`/`E` and others), skipped.
    pub skipped_unsupported: u64,
    /// Counter values that are not numbers, skipped.
    pub skipped_counter_values: u64,
    /// Sorted runs spilled to temporary files (0 when everything fit the budget).
    pub spilled_runs: u64,
    /// Track descriptors written.
    pub tracks: u64,
    /// Packets written.
    pub packets: u64,
    /// Bytes written.
    pub bytes_written: u64,
}

/// A Kineto track whose slices needed extra lanes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitTrack {
    /// The track's name in the output.
    pub track: String,
    /// Lanes used (1 + extra tracks).
    pub lanes: usize,
    /// Slices put on the extra lanes.
    pub split_slices: u64,
}

/// What went wrong, and where.
#[derive(Debug)]
pub enum ExportError {
    /// Reading an input failed (the error carries file, byte offset, event index).
    Read(ReadError),
    /// An input could not be opened (a Neuron Explorer profile folder with an unknown
    /// schema version, say); the reason names the path.
    Open(String),
    /// Writing the output failed.
    Write {
        /// The input being converted when it failed.
        input: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl std::fmt::Display for ExportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExportError::Read(err) => write!(f, "reading: {err}"),
            ExportError::Open(reason) => write!(f, "opening: {reason}"),
            ExportError::Write { input, source } => {
                write!(
                    f,
                    "writing the output while converting {}: {source}",
                    input.display()
                )
            }
        }
    }
}

impl std::error::Error for ExportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ExportError::Read(err) => Some(err),
            ExportError::Open(_) => None,
            ExportError::Write { source, .. } => Some(source),
        }
    }
}

/// Writes Kineto traces into one Perfetto trace, file by file, streaming.
///
/// All inputs share one packet sequence and one time axis (Kineto timestamps are Unix
/// epoch ns), so several ranks line up. Memory is bounded by the sort budget, the number
/// of tracks and the interning tables, not by the trace's size: slices are sorted per
/// track by an external merge sort (spilling to the temporary directory past the
/// budget), because Kineto writes a thread's events in runs per kind, not in time order.
#[derive(Debug)]
pub struct PerfettoExporter<W: Write> {
    converter: convert::Converter<W>,
    files: u32,
}

impl<W: Write> PerfettoExporter<W> {
    /// An exporter writing into `out` (wrap files in a `BufWriter`).
    pub fn new(out: W) -> Self {
        PerfettoExporter {
            converter: convert::Converter::new(out, DEFAULT_BUDGET_BYTES),
            files: 0,
        }
    }

    /// Sets the memory for sorting slices by time (default [`DEFAULT_BUDGET_BYTES`]);
    /// past it, sorted runs go to temporary files and are merged at the end. The flow
    /// endpoints and their bindings to slices are sorted under the same budget each (so
    /// at most three budgets at once; flows are a small share of a trace). Call before
    /// adding files.
    pub fn sort_budget_bytes(mut self, bytes: usize) -> Self {
        self.converter.sorter = spill::Sorter::new(bytes);
        self.converter.flows = spill::Sorter::new(bytes);
        self
    }

    /// Labels the groups of a file without a rank `file N` (the CLI does this when it
    /// converts several files), so groups of different files are told apart.
    pub fn label_unranked_files(mut self, on: bool) -> Self {
        self.converter.label_files = on;
        self
    }

    /// Keeps `pids` out of the output: a process with one of them gets a synthetic pid
    /// (for files that will share a machine with the trace that used them: a machine
    /// is one pid namespace). Call before adding files.
    pub fn avoid_pids(mut self, pids: impl IntoIterator<Item = i32>) -> Self {
        self.converter.avoid_pids(pids);
        self
    }

    /// The pids of the process groups written so far.
    pub fn pids(&self) -> Vec<i32> {
        self.converter.pids()
    }

    /// Converts one Kineto file (`.json` or `.json.gz`). Its process groups are labelled
    /// `rank N` when the trace states its rank (`distributedInfo`).
    pub fn add_path(&mut self, path: impl AsRef<Path>) -> Result<(), ExportError> {
        let path = path.as_ref();
        let reader = analysis::inputs::open_trace(path, false)
            .map_err(|e| ExportError::Open(e.to_string()))?;
        self.add_reader(path, reader)
    }

    /// Converts one trace from a [`TraceReader`]; `input` names it in errors.
    pub fn add_reader(&mut self, input: &Path, reader: TraceReader<'_>) -> Result<(), ExportError> {
        self.converter.file = self.files;
        self.files += 1;
        let result = reader.read(&mut self.converter);
        if let Some(source) = self.converter.error.take() {
            return Err(ExportError::Write {
                input: input.to_owned(),
                source,
            });
        }
        result.map(|_| ()).map_err(ExportError::Read)
    }

    /// Writes what is still buffered and returns the output and the counts.
    pub fn finish(self) -> Result<(W, ExportStats), ExportError> {
        self.converter
            .finish()
            .map_err(|source| ExportError::Write {
                input: PathBuf::new(),
                source,
            })
    }
}
