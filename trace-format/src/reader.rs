//! The streaming reader: opens a trace (plain or gzip), pushes its events into a sink.

mod event_de;
mod fast_event;
#[cfg(feature = "fuzzing")]
pub(crate) use fast_event::check_agrees as check_fast_event;
mod input;
mod parallel;
mod parse;

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use crate::error::ReadError;
use crate::meta::{MetaEntry, Placement, TraceMeta};
use crate::sink::{ParallelSink, TraceSink};
use input::{Input, Source};
use parallel::ParallelDeliver;
use parse::{Deliver, Parser, Sequential};

/// Reader settings.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Keep going past damage: events with wrong types or bad numbers are skipped and
    /// counted; at the first error the structure cannot survive (truncation, broken JSON,
    /// corrupt gzip), reading stops and [`ReadReport::damage`] holds the error.
    pub lenient: bool,
    /// When `baseTimeNanoseconds` is not among the keys before `traceEvents`, read the
    /// input a second time, skipping events, to find it after the array (files and
    /// slices only). Default: on.
    pub prescan_base_time: bool,
    /// The largest single JSON value (one event, one metadata value) accepted, in bytes.
    /// Default: 256 MiB.
    pub max_value_bytes: usize,
    /// [`TraceReader::read_parallel`]: the text handed to a worker thread at a time, in
    /// bytes. Default: 512 KiB. Plain inputs smaller than two batches are read on the
    /// calling thread.
    pub batch_bytes: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            lenient: false,
            prescan_base_time: true,
            max_value_bytes: 256 << 20,
            batch_bytes: 512 << 10,
        }
    }
}

impl ReadOptions {
    /// Sets [`ReadOptions::lenient`].
    pub fn with_lenient(mut self, on: bool) -> Self {
        self.lenient = on;
        self
    }

    /// Sets [`ReadOptions::prescan_base_time`].
    pub fn with_prescan_base_time(mut self, on: bool) -> Self {
        self.prescan_base_time = on;
        self
    }

    /// Sets [`ReadOptions::max_value_bytes`] (at least 1 KiB).
    pub fn with_max_value_bytes(mut self, bytes: usize) -> Self {
        self.max_value_bytes = bytes.max(1024);
        self
    }

    /// Sets [`ReadOptions::batch_bytes`] (at least 1).
    pub fn with_batch_bytes(mut self, bytes: usize) -> Self {
        self.batch_bytes = bytes.max(1);
        self
    }
}

/// How `ts` values were turned into absolute nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeBase {
    /// `baseTimeNanoseconds` came before `traceEvents`; `ts` were relative to it.
    Header(i64),
    /// `baseTimeNanoseconds` came after `traceEvents` and was found by the pre-scan.
    Prescan(i64),
    /// No `baseTimeNanoseconds`: `ts` were taken as absolute epoch microseconds.
    Absolute,
    /// `baseTimeNanoseconds` came after `traceEvents` but could not be pre-scanned (a
    /// one-shot reader, or the pre-scan was turned off): events were delivered with
    /// `ts_ns` relative to this base. Add it to get absolute times.
    LateNotApplied(i64),
}

/// What a read did: metadata, counts, and (lenient mode) the damage found.
#[derive(Debug)]
#[non_exhaustive]
pub struct ReadReport {
    /// Metadata read (complete when the input was read to its end).
    pub meta: TraceMeta,
    /// Events handed to the sink.
    pub events_delivered: u64,
    /// Events skipped for local damage (lenient mode).
    pub events_skipped: u64,
    /// The first few errors of skipped events.
    pub skipped_examples: Vec<ReadError>,
    /// The error that stopped a lenient read; `None` when the input was read to its end
    /// (or the sink stopped it).
    pub damage: Option<ReadError>,
    /// Whether the sink asked to stop.
    pub stopped_by_sink: bool,
    /// Bytes of JSON text consumed (after decompression).
    pub bytes_read: u64,
    /// Whether the input was gzip-compressed.
    pub gzip: bool,
    /// How timestamps were resolved.
    pub time_base: TimeBase,
}

impl ReadReport {
    /// Whether the trace was read completely without any damage.
    pub fn is_clean(&self) -> bool {
        self.damage.is_none() && self.events_skipped == 0
    }
}

/// A trace to be read: a path, bytes in memory, or a reader; plain JSON or gzip.
///
/// ```
/// # fn main() -> Result<(), trace_format::ReadError> {
/// let json = br#"{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0,
///     "tid": 7, "ts": 1.5, "dur": 2.0}]}"#;
/// let mut counts = trace_format::CountingSink::default();
/// let report = trace_format::TraceReader::from_slice("example.json", json).read(&mut counts)?;
/// assert_eq!((counts.events, report.events_delivered), (1, 1));
/// # Ok(()) }
/// ```
pub struct TraceReader<'s> {
    source: Source<'s>,
    file: Arc<str>,
    options: ReadOptions,
}

impl std::fmt::Debug for TraceReader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceReader")
            .field("file", &self.file)
            .field("options", &self.options)
            .finish()
    }
}

impl<'s> TraceReader<'s> {
    /// Reads the file at `path` (`.json` or `.json.gz`; gzip is detected by content).
    pub fn open(path: impl AsRef<Path>) -> TraceReader<'static> {
        let path = path.as_ref();
        TraceReader {
            file: Arc::from(path.display().to_string()),
            source: Source::Path(path.to_path_buf()),
            options: ReadOptions::default(),
        }
    }

    /// Reads bytes in memory; `name` is used in error messages.
    pub fn from_slice(name: &str, bytes: &'s [u8]) -> Self {
        TraceReader {
            file: Arc::from(name),
            source: Source::Slice(bytes),
            options: ReadOptions::default(),
        }
    }

    /// Reads from any reader, once (no pre-scan: see [`TimeBase::LateNotApplied`]).
    pub fn from_reader(name: &str, reader: impl Read + 's) -> Self {
        TraceReader {
            file: Arc::from(name),
            source: Source::Reader(Box::new(reader)),
            options: ReadOptions::default(),
        }
    }

    /// Replaces all options.
    pub fn options(mut self, options: ReadOptions) -> Self {
        self.options = options;
        self
    }

    /// Turns lenient mode on or off (see [`ReadOptions::lenient`]).
    pub fn lenient(mut self, lenient: bool) -> Self {
        self.options.lenient = lenient;
        self
    }

    /// Reads the trace into `sink`.
    ///
    /// Strict mode returns the first error. Lenient mode always returns `Ok`, with the
    /// error that stopped it in [`ReadReport::damage`] — events before it were delivered.
    pub fn read<S: TraceSink + ?Sized>(self, sink: &mut S) -> Result<ReadReport, ReadError> {
        self.run(|_| Sequential(sink))
    }

    /// Reads the trace into `sink`, decoding events on `threads` worker threads while the
    /// calling thread reads the input, finds where each event ends and hands the
    /// workers' results to [`ParallelSink::consume`] in order.
    ///
    /// Everything [`read`](TraceReader::read) guarantees holds: metadata before and
    /// after `traceEvents` (and the pre-scan), event indices, the report, lenient skips,
    /// errors (the same text, offset and event index), early stop. Memory stays bounded
    /// (about `3 × threads` batches of [`ReadOptions::batch_bytes`] in flight) for files,
    /// `.gz` and one-shot readers alike. `threads == 0`, and plain inputs smaller than
    /// two batches, are read on the calling thread alone. The calling thread decodes
    /// queued batches itself while it would wait, so on `n` free cores `n - 1` workers
    /// is the usual choice (on 2 vCPUs one worker reads 1.6× as fast as
    /// [`read`](TraceReader::read), two 1.5×: `docs/PERFORMANCE.md`).
    ///
    /// ```
    /// # fn main() -> Result<(), trace_format::ReadError> {
    /// let json = br#"{"traceEvents": [{"ph": "X", "name": "a", "ts": 1.5, "dur": 2},
    ///     {"ph": "X", "name": "b", "ts": 4, "dur": 1}]}"#;
    /// let options = trace_format::ReadOptions::default().with_batch_bytes(16);
    /// let mut sink = trace_format::CollectSink::default();
    /// let report = trace_format::TraceReader::from_slice("example.json", json)
    ///     .options(options)
    ///     .read_parallel(&mut sink, 2)?;
    /// assert_eq!(report.events_delivered, 2);
    /// assert_eq!(sink.events[1].name(), "b");
    /// # Ok(()) }
    /// ```
    pub fn read_parallel<P: ParallelSink + ?Sized>(
        self,
        sink: &mut P,
        threads: usize,
    ) -> Result<ReadReport, ReadError> {
        let batch_bytes = self.options.batch_bytes.max(1);
        self.run(|opened| ParallelDeliver {
            sink,
            threads,
            batch_bytes,
            // Small plain inputs: threads would cost more than they save.
            inline: threads == 0
                || (!opened.is_gzip
                    && opened
                        .size_hint
                        .is_some_and(|len| len < (batch_bytes as u64).saturating_mul(2))),
        })
    }

    /// One read through the delivery that `deliver` makes once the input is open.
    fn run<D: Deliver>(
        mut self,
        deliver: impl FnOnce(&input::Opened<'_>) -> D,
    ) -> Result<ReadReport, ReadError> {
        let lenient = self.options.lenient;
        let opened = match input::open(&mut self.source, &self.file) {
            Ok(opened) => opened,
            Err(e) if lenient => return Ok(empty_report(e)),
            Err(e) => return Err(e),
        };
        let mut deliver = deliver(&opened);
        let input::Opened {
            reader,
            is_gzip: gzip,
            size_hint,
        } = opened;
        let can_reopen = self.options.prescan_base_time && self.source.can_reopen();
        let file = self.file.clone();
        let max = self.options.max_value_bytes;
        let source = &mut self.source;
        let prescan: Option<parse::Prescan<'_>> = if can_reopen {
            Some(Box::new(move || prescan_trailer(source, &file, max)))
        } else {
            None
        };
        let input = Input::new(reader, gzip, self.file.clone(), max, size_hint);
        let mut parser = Parser::new(input, self.file.clone(), lenient, false);
        parser.prescan = prescan;
        let result = parser.run(&mut deliver);
        let damage = match result {
            Ok(()) => None,
            Err(e) if lenient => Some(e),
            Err(e) => return Err(e),
        };
        let late_base = parser.meta.base_time_ns();
        let time_base = match (parser.base_time_ns, parser.base_from_prescan, late_base) {
            (Some(base), false, _) => TimeBase::Header(base),
            (Some(base), true, _) => TimeBase::Prescan(base),
            (None, _, Some(base)) => TimeBase::LateNotApplied(base),
            (None, _, None) => TimeBase::Absolute,
        };
        Ok(ReadReport {
            bytes_read: parser
                .offset_reached
                .unwrap_or_else(|| parser.input.offset_of(parser.input.pos)),
            meta: parser.meta,
            events_delivered: parser.delivered,
            events_skipped: parser.skipped,
            skipped_examples: parser.skipped_examples,
            damage,
            stopped_by_sink: parser.stopped,
            gzip,
            time_base,
        })
    }
}

fn empty_report(damage: ReadError) -> ReadReport {
    ReadReport {
        meta: TraceMeta::new(),
        events_delivered: 0,
        events_skipped: 0,
        skipped_examples: Vec::new(),
        damage: Some(damage),
        stopped_by_sink: false,
        bytes_read: 0,
        gzip: false,
        time_base: TimeBase::Absolute,
    }
}

/// Reads the input again, skipping events, and returns the keys after `traceEvents`.
/// Errors end the pre-scan quietly: the main pass reports them where they are.
fn prescan_trailer(source: &mut Source<'_>, file: &Arc<str>, max: usize) -> Vec<MetaEntry> {
    let Ok(input::Opened {
        reader,
        is_gzip: gzip,
        size_hint,
    }) = input::open(source, file)
    else {
        return Vec::new();
    };
    let input = Input::new(reader, gzip, file.clone(), max, size_hint);
    let mut parser = Parser::new(input, file.clone(), false, true);
    let mut ignore = crate::sink::from_fn(|_, _| std::ops::ControlFlow::Continue(()));
    let _ = parser.run(&mut Sequential(&mut ignore));
    parser
        .meta
        .entries()
        .iter()
        .filter(|e| e.placement == Placement::AfterEvents)
        .cloned()
        .collect()
}

/// Reads the trace at `path` into `sink`, strictly (the first error is returned).
pub fn read_path<S: TraceSink + ?Sized>(
    path: impl AsRef<Path>,
    sink: &mut S,
) -> Result<ReadReport, ReadError> {
    TraceReader::open(path).read(sink)
}

/// Reads the trace at `path` into `sink`, leniently: everything up to the damage is
/// delivered and the damage is in [`ReadReport::damage`]. Never fails.
pub fn read_path_lenient<S: TraceSink + ?Sized>(
    path: impl AsRef<Path>,
    sink: &mut S,
) -> ReadReport {
    match TraceReader::open(path).lenient(true).read(sink) {
        Ok(report) => report,
        Err(e) => empty_report(e),
    }
}
