//! Kineto traces (what `torch.profiler` writes), read and written, streaming.
//!
//! neuronprof's traces are Kineto JSON, so Perfetto, chrome://tracing, TensorBoard and
//! Holistic Trace Analysis (HTA) read them. This crate is the one place that knows the
//! format: a model of the trace, a streaming reader that pushes events into a
//! [`TraceSink`] (never the whole document in memory), and a streaming [`TraceWriter`]
//! that follows libkineto's conventions to the byte where tools care. It depends on no
//! other workspace crate.
//!
//! # Key types
//!
//! - [`TraceReader`]: opens a path (`.json` or `.json.gz`, gzip detected by its magic
//!   bytes), a slice or any reader; [`TraceReader::read`] pushes into a [`TraceSink`] and
//!   returns a [`ReadReport`] (metadata, counts, damage in lenient mode, [`TimeBase`]).
//!   Shortcuts: [`read_path`], [`read_path_lenient`].
//! - [`TraceSink`]: `on_header(&TraceMeta)`, `on_event(index, &Event)`,
//!   `on_trailer(&TraceMeta)`. Ready-made: [`CountingSink`], [`CollectSink`], [`from_fn`].
//! - [`TraceReader::read_parallel`] with a [`ParallelSink`]: one file's events decoded on
//!   worker threads; the sink's [`EventMapper`] turns each event into an owned item there,
//!   and [`ParallelSink::consume`] takes the items in event order on the calling thread.
//!   [`CollectSink`] is both kinds of sink.
//! - [`Event`]: phase, category, name, pid/tid ([`Ident`]: number or string), `ts_ns`,
//!   `dur_ns`, `flow_id`, binding point, instant scope, [`Args`], unknown keys. Borrowed
//!   from the read buffer; [`Event::into_owned`] to keep it.
//! - [`Category`]: every Kineto category, legacy spellings, and `Other`;
//!   [`Category::normalized`].
//! - [`Args`] / [`ArgValue`]: ordered, typed arguments (`event.arg("correlation")`).
//! - [`TraceMeta`]: all top-level keys in order, raw, with typed accessors
//!   ([`TraceMeta::rank`], [`TraceMeta::device_properties`], [`TraceMeta::base_time_ns`]…).
//! - [`ReadError`]: what went wrong and where ([`Location`]: file, byte offset, event index).
//! - [`TraceWriter`]: writes a trace event by event into any `io::Write` (plain, or gzip
//!   through [`Output`]). `examples/rewrite_trace.rs` streams a trace from the reader
//!   straight into the writer.
//! - [`retime`] / [`retime_path`]: a trace's `ts`/`dur` through a time map, streaming,
//!   every other byte kept (the PyTorch extension moves PyTorch's host events onto the
//!   emulator's cut timeline with it).
//!
//! # Example
//!
//! ```
//! use std::ops::ControlFlow;
//! use trace_format::{Category, Event, TraceMeta, TraceReader, TraceSink, TraceWriter};
//!
//! // A sink that sums kernel time per device.
//! #[derive(Default)]
//! struct KernelTime { rank: Option<i64>, busy_ns: i64, launches: u64 }
//!
//! impl TraceSink for KernelTime {
//!     fn on_header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
//!         self.rank = meta.rank();
//!         ControlFlow::Continue(())
//!     }
//!     fn on_event(&mut self, _index: u64, event: &Event<'_>) -> ControlFlow<()> {
//!         match event.normalized_category() {
//!             Some(Category::Kernel) => self.busy_ns += event.dur_ns.unwrap_or(0),
//!             Some(Category::PrivateUse1Runtime) => self.launches += 1,
//!             _ => {}
//!         }
//!         ControlFlow::Continue(())
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Write a small trace into memory…
//! let base = 1_790_857_026_000_000_000;
//! let mut meta = TraceMeta::kineto(Some(base));
//! meta.set_distributed("gloo", 0, 2);
//! let mut writer = TraceWriter::new(Vec::new(), &meta)?;
//! writer.write_event(
//!     &Event::complete(Category::PrivateUse1Runtime, "launch", 4242, 4242, base + 1_000, 3_000)
//!         .with_arg("correlation", 7i64),
//! )?;
//! writer.write_event(
//!     &Event::complete(Category::Kernel, "matmul", 0, 1, base + 5_000, 12_500)
//!         .with_arg("correlation", 7i64)
//!         .with_arg("device", 0i64),
//! )?;
//! let bytes = writer.finish()?;
//!
//! // …and read it back through a sink.
//! let mut sink = KernelTime::default();
//! let report = TraceReader::from_slice("example.json", &bytes).read(&mut sink)?;
//! assert_eq!((sink.rank, sink.busy_ns, sink.launches), (Some(0), 12_500, 1));
//! assert_eq!(report.events_delivered, 3); // two events and `Record Window End`
//! # Ok(()) }
//! ```
//!
//! # Wire format
//!
//! Facts from libkineto's `output_json.cpp` and real traces, summarised in the project's
//! Kineto's JSON as libkineto's `output_json.cpp` writes it.
//!
//! **Envelope.** One JSON object. Kineto writes its keys in this order:
//!
//! ```text
//! {
//!   "schemaVersion": 1,
//!   "deviceProperties": [{"id": 0, "name": "…", "totalGlobalMem": …}, …],
//!   "distributedInfo": {"backend": "gloo", "rank": 0, "world_size": 2, …},   (and other metadata keys)
//!   "displayTimeUnit": "ms",
//!   "baseTimeNanoseconds": 1790857026000000000,
//!   "traceEvents": [ {…}, …, {"ph": "i", "s": "g", "name": "Record Window End", …} ],
//!   "traceName": "/path/of/trace.json"
//! }
//! ```
//!
//! Real traces vary: `baseTimeNanoseconds` and log arrays (`INFO`, `ERROR`) after
//! `traceEvents`, no `baseTimeNanoseconds` at all (absolute timestamps), a bare event
//! array. The reader accepts all of these and keeps every key (unknown ones raw, in
//! order: [`TraceMeta::unknown_entries`]).
//!
//! **Events** (key order as Kineto writes them; `ts`/`dur` in µs with three decimals):
//!
//! | `ph` | shape | keys |
//! |---|---|---|
//! | `X` | activity with a duration | `ph, cat, name, pid, tid, ts, dur, args` |
//! | `i` | instant (`[memory]`: `"s": "t"`; markers: `"s": "g"`) | `ph, cat, s, name, pid, tid, ts, args` |
//! | `s` / `f` | flow start / finish (`ac2g`: id = correlation; `fwdbwd`) | `ph, id, pid, tid, ts, cat, name` (+ `bp: "e"` on `f`) |
//! | `M` | `process_name`, `thread_name`, sort indices, labels | `ph, name, ts, pid, tid, args` |
//! | `C` | counter samples | `ph, cat, name, pid, tid, ts, args` |
//!
//! Other phases are kept as [`Phase::Other`] with all their keys. Example event:
//!
//! ```text
//! {"ph": "X", "cat": "kernel", "name": "matmul", "pid": 0, "tid": 1, "ts": 5.000,
//!  "dur": 12.500, "args": {"correlation": 7, "device": 0}}
//! ```
//!
//! # Choices
//!
//! **Timestamps.** Every `ts` becomes absolute nanoseconds since the Unix epoch
//! ([`Event::ts_ns`], `i64`). When `baseTimeNanoseconds` is known, `ts` is relative to it
//! (`ts * 1000 + base`), otherwise absolute. Numbers are converted from their decimal
//! text, not through `f64`, so `5117290934333.719` µs is exactly `…333_719` ns (digits
//! below the nanosecond round half away from zero). If `baseTimeNanoseconds` comes only
//! after `traceEvents`, the reader pre-scans a file or slice once, skipping events
//! without decoding them, to find it before the first event is delivered
//! ([`TimeBase::Prescan`]; for `.gz` this decompresses twice). A one-shot reader cannot be
//! pre-scanned: its events keep relative times and the report says
//! [`TimeBase::LateNotApplied`] with the base to add.
//!
//! **Lenient mode** ([`TraceReader::lenient`]). Traces of killed processes end mid-event.
//! A lenient read delivers every event up to the damage and returns the error in
//! [`ReadReport::damage`]; an event that is well delimited but bad inside (wrong type,
//! number out of range, invalid UTF-8) is skipped and counted, and reading goes on.
//! Strict mode returns the first error.
//!
//! **Legacy traces.** Before mid-2021 Kineto wrote `Operator`, `Runtime`, `Kernel`,
//! `Memcpy`, `Memset` and flow category `async`/`async_cpu_to_gpu`. They are distinct
//! [`Category`] variants, so writing reproduces them, and [`Category::normalized`] (or
//! [`Event::normalized_category`]) gives `cpu_op`, `cuda_runtime`, `kernel`,
//! `gpu_memcpy`, `gpu_memset`, `ac2g`.
//!
//! **Round trips.** Unknown metadata keys, unknown event keys, nested args and numbers
//! that do not fit 64 bits are kept as raw JSON text, so read → write → read gives the
//! same events, metadata and args (tested on every shared real trace). The writer
//! re-spaces JSON like Python's `json.dumps` (`"rank": 0`: HTA's rank regex needs the
//! space).
//!
//! **Errors.** [`ReadError`] variants carry a [`Location`]; the reader never panics on
//! any input (fuzzed with `cargo fuzz`, see `docs/RELIABILITY.md`).
//!
//! **Parallel read** ([`TraceReader::read_parallel`]). The issue asks for speed on one
//! large file but is silent on how; the choices: the calling thread keeps the input and
//! the envelope scanner (metadata, pre-scan, separators: the sequential code itself),
//! delimits each event by counting braces outside strings, copies about
//! [`ReadOptions::batch_bytes`] (512 KiB) of consecutive events into a batch, and sends
//! it to a worker; workers decode events exactly as the sequential reader does and run
//! the [`EventMapper`]; the calling thread takes batches back in order, hands items to
//! `consume`, and decodes queued batches itself instead of waiting. At most three
//! batches per worker are in flight, so memory stays bounded for files, `.gz` and
//! one-shot readers. Results equal the sequential read's — events, indices, report,
//! lenient skips, errors to the byte — because nothing is decided differently: errors
//! the scanner meets come from the sequential calls on the same state; an event
//! serde_json rejects on a worker makes the calling thread put the text from that event
//! on back in front of the input and read that one element with the sequential code
//! (then scanning resumes); events the scanner cannot delimit (cut short, unbalanced,
//! over 1 MiB) are read the same way. The map/consume split exists because `consume`
//! holds the sink mutably while workers share the mapper; a mapper that panics panics
//! the read. Both halves get the event's text ([`EventText`]: `map_in`, `consume_in`,
//! the same bytes for the same event on every path), so a mapper keeps names as
//! 8-byte [`TextSpan`]s instead of copies allocated on a worker and freed on the calling
//! thread; outcome vectors go back to the workers for reuse. Tested against sequential reads on every shared trace and on small traces
//! cut or damaged at every byte (`tests/parallel_read_matches_sequential.rs`), and
//! fuzzed against them (`fuzz/fuzz_targets/parallel_read.rs`, batches of 1–64 bytes,
//! strict and lenient). Fuzzing found two differences, both fixed and kept as tests:
//! put-back text enlarged the buffer past the value limit, and a syntax error quoted
//! what the buffer held, which depended on where it ended (both reads now read on to 40
//! bytes before quoting); then 259,232 inputs in 5 minutes gave no difference.
//!
//! # Performance
//!
//! The reader scans the top-level object itself and splits each event object with a
//! decoder specialised for events (`reader/fast_event.rs`): one pass over the bytes
//! that checks the JSON grammar, matches the keys the model names by their bytes and
//! keeps every value as a borrowed slice of one reusable buffer, then one UTF-8 check of
//! the whole object. serde_json decodes only what that pass leaves aside (any syntax
//! error, escaped top-level keys, nesting deeper than 64), so errors and their
//! locations are serde_json's as before; the decoder is checked against serde_json on
//! every cut and byte change of a sample event. A sink that ignores args allocates
//! nothing per event ([`Args::iter_lazy`] decodes only the values asked for), and memory
//! stays at the buffer (4 MiB, growing only for a single larger value) whatever the
//! file size. On the project's 2-vCPU build VM, a 1 GB plain trace parses into a
//! [`CountingSink`] at 721 MB/s (3.3 M events/s; 515 MB/s with serde_json decoding
//! every event, same run) with a 6.5 MiB peak RSS; gzip input at 365 MB/s of
//! decompressed JSON (measured before the specialised decoder); the writer emits 4.6 M
//! events/s. [`TraceReader::read_parallel`] with one
//! worker reads a 1 GB trace into an analysis-like sink 1.60× as fast as the sequential
//! read when the VM's second core is free (3.16 s → 1.97 s; 100 MB plain or gzip: 1.57–1.59×),
//! at about 19 % more CPU time. Details and commands: `docs/PERFORMANCE.md`, section
//! trace-format (run `examples/parse_bench.rs` or `examples/parallel_bench.rs` on a file
//! made by `examples/make_large_trace.rs`).
#![warn(missing_docs)]

mod args;
mod category;
mod error;
mod event;
mod json;
mod meta;
mod reader;
mod retime;
mod sink;
mod time;
mod writer;

/// Internal checks the fuzz targets call (`--features fuzzing`); not a stable API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    /// Panics unless the specialised event decoder agrees with serde_json on `text`:
    /// whenever it splits an event, serde_json splits it into the same members.
    pub fn fast_event_agrees_with_serde_json(text: &[u8]) {
        crate::reader::check_fast_event(text);
    }
}

pub use args::{ArgValue, Args, ArgsIter, LazyArg};
pub use category::Category;
pub use error::{Location, ReadError};
pub use event::{Event, FlowEnd, Ident, Phase};
pub use json::RawJson;
pub use meta::{
    DeviceProperties, DistributedInfo, MetaEntry, Placement, ProcessGroupConfig, TraceMeta,
};
pub use reader::{read_path, read_path_lenient, ReadOptions, ReadReport, TimeBase, TraceReader};
pub use retime::{
    retime, retime_path, AppendContext, AppendEvents, DropEvent, MarkerValue, RetimeError,
    RetimeOptions, RetimeStats,
};
pub use sink::{
    from_fn, CollectSink, CountingSink, EventMapper, EventText, FnSink, OwnedEvent, ParallelSink,
    TextSpan, TraceSink,
};
pub use writer::{Output, TraceWriter, WriteOptions};
