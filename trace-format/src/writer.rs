//! The streaming writer: Kineto's file layout, key order and number formats.

mod format;
mod output;

use std::io::{self, Write};
use std::path::Path;

use crate::event::Event;
use crate::json::write_spaced;
use crate::meta::{MetaEntry, Placement, TraceMeta, KNOWN_KEYS};
pub use output::Output;

/// One event as [`TraceWriter`] writes it (times relative to `base_time_ns`), for
/// writers that place events themselves ([`crate::retime`]'s appended events).
pub(crate) fn write_event_json(out: &mut Vec<u8>, event: &Event<'_>, base_time_ns: Option<i64>) {
    format::write_event(out, event, base_time_ns);
}

/// Writer settings.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct WriteOptions {
    /// Make sure the trace ends with Kineto's `Record Window End` global instant: one
    /// passed to [`TraceWriter::write_event`] is held back and written last; if none was
    /// passed, one is added at the latest event end. Default: on. Turn it off to copy a
    /// trace that has none.
    pub record_window_end: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            record_window_end: true,
        }
    }
}

impl WriteOptions {
    /// Sets [`WriteOptions::record_window_end`].
    pub fn with_record_window_end(mut self, on: bool) -> Self {
        self.record_window_end = on;
        self
    }
}

/// Writes a Kineto trace to any `io::Write`, event by event, never holding the document.
///
/// The layout is libkineto's (Kineto's JSON as libkineto's `output_json.cpp` writes it):
/// `schemaVersion`, `deviceProperties`, other metadata (`distributedInfo` …),
/// `displayTimeUnit`, `baseTimeNanoseconds`, `traceEvents`, then keys that belong after
/// the events (logs such as `INFO`) and `traceName`. Metadata values are re-spaced like
/// Python's `json.dumps` (`", "`, `": "`), so `distributedInfo` reads `"rank": 0` — the
/// form HTA's regex `"rank":\s+(\d+)` needs. `ts` is written relative to
/// `baseTimeNanoseconds` when the metadata has one (absolute otherwise), and `ts`/`dur`
/// are microseconds with exactly three decimals.
///
/// ```
/// use trace_format::{Category, Event, TraceMeta, TraceWriter};
/// # fn main() -> std::io::Result<()> {
/// let mut meta = TraceMeta::kineto(Some(1_700_000_000_000_000_000));
/// meta.set_distributed("gloo", 0, 2);
/// let mut writer = TraceWriter::new(Vec::new(), &meta)?;
/// writer.write_event(&Event::complete(Category::Kernel, "k", 0, 7, 1_700_000_000_000_001_500, 2_000))?;
/// let json = String::from_utf8(writer.finish()?).unwrap();
/// assert!(json.contains(r#""rank": 0"#));
/// assert!(json.contains(r#""ts": 1.500, "dur": 2.000"#));
/// assert!(json.contains("Record Window End"));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct TraceWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
    base_time_ns: Option<i64>,
    options: WriteOptions,
    after: Vec<MetaEntry>,
    window_end: Option<Event<'static>>,
    latest_ns: Option<i64>,
    events_written: u64,
}

/// Buffered bytes are handed to the output once they pass this size.
const FLUSH_AT: usize = 256 << 10;

impl<W: Write> TraceWriter<W> {
    /// Starts a trace: writes the metadata that precedes `traceEvents`.
    pub fn new(out: W, meta: &TraceMeta) -> io::Result<Self> {
        TraceWriter::with_options(out, meta, WriteOptions::default())
    }

    /// Like [`TraceWriter::new`], with options.
    pub fn with_options(out: W, meta: &TraceMeta, options: WriteOptions) -> io::Result<Self> {
        let mut writer = TraceWriter {
            out,
            buf: Vec::with_capacity(FLUSH_AT + 4096),
            base_time_ns: meta.base_time_ns(),
            options,
            after: Vec::new(),
            window_end: None,
            latest_ns: None,
            events_written: 0,
        };
        writer.buf.extend_from_slice(b"{");
        let mut first = true;
        let known = |key: &str| meta.entries().iter().rev().find(|e| e.key == key);
        for key in ["schemaVersion", "deviceProperties"] {
            if let Some(entry) = known(key) {
                writer.member(&entry.key, entry.value.as_str(), &mut first);
            }
        }
        // Unknown keys keep their order; `distributedInfo` (once) stays where it was.
        let last_distributed = known("distributedInfo");
        for entry in meta.entries() {
            let is_distributed = last_distributed.is_some_and(|d| std::ptr::eq(d, entry));
            let unknown_before = !KNOWN_KEYS.contains(&entry.key.as_str())
                && entry.placement == Placement::BeforeEvents;
            if is_distributed || unknown_before {
                writer.member(&entry.key, entry.value.as_str(), &mut first);
            }
        }
        for key in ["displayTimeUnit", "baseTimeNanoseconds"] {
            if let Some(entry) = known(key) {
                writer.member(&entry.key, entry.value.as_str(), &mut first);
            }
        }
        if !first {
            writer.buf.push(b',');
        }
        writer.buf.extend_from_slice(b"\n  \"traceEvents\": [");
        writer.set_trailer(meta);
        writer.flush_if_full()?;
        Ok(writer)
    }

    fn member(&mut self, key: &str, value: &str, first: &mut bool) {
        if !*first {
            self.buf.push(b',');
        }
        *first = false;
        self.buf.extend_from_slice(b"\n  ");
        format::write_str(&mut self.buf, key);
        self.buf.extend_from_slice(b": ");
        write_spaced(&mut self.buf, value);
    }

    /// Replaces the keys written after `traceEvents` with those of `meta` (unknown keys
    /// placed after the events, then `traceName`). Use it with the complete metadata a
    /// reader hands to [`crate::TraceSink::on_trailer`].
    pub fn set_trailer(&mut self, meta: &TraceMeta) {
        self.after = meta
            .entries()
            .iter()
            .filter(|e| {
                e.placement == Placement::AfterEvents && !KNOWN_KEYS.contains(&e.key.as_str())
            })
            .cloned()
            .collect();
        if let Some(name) = meta.get("traceName") {
            self.after.push(MetaEntry {
                key: "traceName".to_owned(),
                value: name.clone(),
                placement: Placement::AfterEvents,
            });
        }
    }

    /// Writes one event (a `Record Window End` instant is held back and written last).
    pub fn write_event(&mut self, event: &Event<'_>) -> io::Result<()> {
        if let Some(end) = event.end_ns() {
            self.latest_ns = Some(self.latest_ns.map_or(end, |l| l.max(end)));
        }
        if self.options.record_window_end && event.is_record_window_end() {
            self.window_end = Some(event.clone().into_owned());
            return Ok(());
        }
        self.write_now(event);
        self.flush_if_full()
    }

    fn write_now(&mut self, event: &Event<'_>) {
        if self.events_written > 0 {
            self.buf.push(b',');
        }
        self.buf.extend_from_slice(b"\n  ");
        format::write_event(&mut self.buf, event, self.base_time_ns);
        self.events_written += 1;
    }

    fn flush_if_full(&mut self) -> io::Result<()> {
        if self.buf.len() >= FLUSH_AT {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// The output (bytes still buffered in the writer have not reached it yet).
    pub fn output(&self) -> &W {
        &self.out
    }

    /// The number of events written so far.
    pub fn events_written(&self) -> u64 {
        self.events_written
    }

    /// Ends the trace (the `Record Window End` instant, `]`, trailing keys, `}`), flushes,
    /// and returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        if self.options.record_window_end {
            let window_end = self.window_end.take().unwrap_or_else(|| {
                let ts = self.latest_ns.or(self.base_time_ns).unwrap_or(0);
                Event::instant(None, "Record Window End", "g", "", "", ts)
            });
            self.write_now(&window_end);
        }
        self.buf.extend_from_slice(b"\n  ]");
        for entry in std::mem::take(&mut self.after) {
            self.buf.extend_from_slice(b",\n  ");
            format::write_str(&mut self.buf, &entry.key);
            self.buf.extend_from_slice(b": ");
            write_spaced(&mut self.buf, entry.value.as_str());
        }
        self.buf.extend_from_slice(b"\n}\n");
        self.out.write_all(&self.buf)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

impl TraceWriter<Output<io::BufWriter<std::fs::File>>> {
    /// Creates the file at `path` and starts a trace in it, gzip-compressed if `gzip`.
    /// Finish with [`TraceWriter::finish`] then [`Output::close`].
    pub fn create(path: impl AsRef<Path>, meta: &TraceMeta, gzip: bool) -> io::Result<Self> {
        let file = io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
        let out = if gzip {
            Output::gzip(file)
        } else {
            Output::plain(file)
        };
        TraceWriter::new(out, meta)
    }
}
