//! Kineto traces as tables (events, kernels, collectives, memory, steps), streaming,
//! written as CSV ([`CsvExporter`]) or Parquet ([`ParquetExporter`]).
//!
//! One file per table in an output directory (`events.csv` or `events.parquet`, …), one
//! row per matching event of every input, written as the events are read (bounded
//! memory: Parquet row groups of [`parquet::ROW_GROUP_ROWS`] rows), so a fleet of rank
//! traces can be queried with DuckDB, Spark or DataFusion. CSV as RFC 4180: a header
//! row, comma-separated, fields with a comma, quote or line break in double quotes
//! (quotes doubled); empty field = absent (null in Parquet). Parquet: one row group per
//! [`parquet::ROW_GROUP_ROWS`] rows, Snappy-compressed; column types below (`i64` =
//! Arrow `Int64`, `text` = `Utf8`, all nullable). Times are Unix-epoch nanoseconds (Kineto's `ts` made
//! absolute, see `trace_format`), durations nanoseconds.
//!
//! # Schema
//!
//! Every table starts with `file` (text: the input's path as given) and `rank` (i64:
//! `distributedInfo.rank`, absent when the trace has none). Text columns: `phase,
//! category, name, pid, tid` (pids and tids may be strings in Kineto), `flow_id, args,
//! on, collective, dtype, process_group_name, process_group_ranks`; all other columns
//! are i64 (an arg that is not an integer is absent).
//!
//! | table | one row per | columns after `file, rank` |
//! |---|---|---|
//! | `events.csv` | event of `traceEvents` | `index, phase, category, name, pid, tid, ts_ns, dur_ns, flow_id, args` (`args`: the event's args as a JSON object) |
//! | `kernels.csv` | `X` event of category `kernel`, `gpu_memcpy`, `gpu_memset` (legacy spellings normalised) | `category, name, device, stream, correlation, external_id, ts_ns, dur_ns, bytes` |
//! | `collectives.csv` | `X` event with a `Collective name` arg (host `record_param_comms` and device kernels) | `on` (`host`/`device`), `name, collective, in_msg_nelems, out_msg_nelems, group_size, dtype, process_group_name, process_group_ranks, seq, ts_ns, dur_ns` |
//! | `memory.csv` | `[memory]` instant | `pid, tid, ts_ns, device_type, device_id, addr, bytes, total_allocated, total_reserved` |
//! | `steps.csv` | `X` event named `ProfilerStep#N` | `step, pid, tid, ts_ns, dur_ns` |
//!
//! # Analysis tables
//!
//! `add_analysis(&report)` ([`CsvExporter::add_analysis`],
//! [`ParquetExporter::add_analysis`]) adds the main results of `analysis::analyze` as
//! six more small tables (`analysis_temporal`, `analysis_kernels`, `analysis_steps`,
//! `analysis_collectives`, `analysis_utilization`, `analysis_insights`), with `f64`
//! columns (Arrow `Float64`) besides `i64` and text; their schema is in [`analysis`]
//! ([`ANALYSIS_SCHEMAS`]).

use std::ops::ControlFlow;
use std::path::Path;

use trace_format::{ArgValue, Category, Event, Phase, TraceMeta, TraceReader, TraceSink};

use crate::ExportError;

pub mod analysis;
mod csv;
pub mod parquet;

pub use self::analysis::{analysis_rows, AnalysisColumn, Kind, ANALYSIS_SCHEMAS, ANALYSIS_TABLES};

pub use self::csv::{csv_field, CsvExporter};
pub use self::parquet::ParquetExporter;

/// The tables, in the order of [`TableStats::rows`].
pub const TABLES: [&str; 5] = ["events", "kernels", "collectives", "memory", "steps"];

/// A column: its name and whether it holds integers (else text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    /// Name.
    pub name: &'static str,
    /// `i64` (true) or text.
    pub int: bool,
}

const fn t(name: &'static str) -> Column {
    Column { name, int: false }
}
const fn i(name: &'static str) -> Column {
    Column { name, int: true }
}

/// The columns of each table (same order as [`TABLES`]).
pub const SCHEMAS: [&[Column]; 5] = [
    &[
        t("file"),
        i("rank"),
        i("index"),
        t("phase"),
        t("category"),
        t("name"),
        t("pid"),
        t("tid"),
        i("ts_ns"),
        i("dur_ns"),
        t("flow_id"),
        t("args"),
    ],
    &[
        t("file"),
        i("rank"),
        t("category"),
        t("name"),
        i("device"),
        i("stream"),
        i("correlation"),
        i("external_id"),
        i("ts_ns"),
        i("dur_ns"),
        i("bytes"),
    ],
    &[
        t("file"),
        i("rank"),
        t("on"),
        t("name"),
        t("collective"),
        i("in_msg_nelems"),
        i("out_msg_nelems"),
        i("group_size"),
        t("dtype"),
        t("process_group_name"),
        t("process_group_ranks"),
        i("seq"),
        i("ts_ns"),
        i("dur_ns"),
    ],
    &[
        t("file"),
        i("rank"),
        t("pid"),
        t("tid"),
        i("ts_ns"),
        i("device_type"),
        i("device_id"),
        i("addr"),
        i("bytes"),
        i("total_allocated"),
        i("total_reserved"),
    ],
    &[
        t("file"),
        i("rank"),
        i("step"),
        t("pid"),
        t("tid"),
        i("ts_ns"),
        i("dur_ns"),
    ],
];

/// One value of a row.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// An integer column's value.
    Int(Option<i64>),
    /// A text column's value.
    Text(Option<String>),
    /// A float column's value (analysis tables only).
    Float(Option<f64>),
}

/// Rows written per table (same order as [`TABLES`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableStats {
    /// Rows per table.
    pub rows: [u64; 5],
    /// Rows per analysis table (same order as [`ANALYSIS_TABLES`]; zeros unless
    /// `add_analysis` was called).
    pub analysis_rows: [u64; 6],
    /// The files written.
    pub files: Vec<std::path::PathBuf>,
}

/// Where rows go (one implementation per file format).
pub(crate) trait RowSink {
    /// Takes one row of table `table` (cells in [`SCHEMAS`] order).
    fn row(&mut self, table: usize, cells: &[Cell]) -> std::io::Result<()>;
}

/// Reads one trace and pushes its rows into `rows`.
pub(crate) fn read_rows(path: &Path, rows: &mut dyn RowSink) -> Result<(), ExportError> {
    let mut sink = Rows {
        rows,
        file: path.display().to_string(),
        rank: None,
        cells: Vec::new(),
        error: None,
    };
    let result = TraceReader::open(path).read(&mut sink);
    if let Some(source) = sink.error.take() {
        return Err(ExportError::Write {
            input: path.to_owned(),
            source,
        });
    }
    result.map(|_| ()).map_err(ExportError::Read)
}

struct Rows<'r> {
    rows: &'r mut dyn RowSink,
    file: String,
    rank: Option<i64>,
    cells: Vec<Cell>,
    error: Option<std::io::Error>,
}

fn text(value: Option<impl ToString>) -> Cell {
    Cell::Text(value.map(|v| v.to_string()))
}

fn int_arg(event: &Event<'_>, key: &str) -> Cell {
    Cell::Int(event.arg(key).and_then(|v| v.as_i64()))
}

fn text_arg(event: &Event<'_>, key: &str) -> Cell {
    Cell::Text(event.arg(key).map(|v| arg_text(&v)))
}

impl Rows<'_> {
    fn start(&mut self) {
        self.cells.clear();
        self.cells.push(Cell::Text(Some(self.file.clone())));
        self.cells.push(Cell::Int(self.rank));
    }

    fn end(&mut self, table: usize) -> std::io::Result<()> {
        debug_assert_eq!(self.cells.len(), SCHEMAS[table].len());
        self.rows.row(table, &self.cells)
    }

    fn rows(&mut self, index: u64, event: &Event<'_>) -> std::io::Result<()> {
        self.start();
        self.cells.extend([
            Cell::Int(i64::try_from(index).ok()),
            text(Some(event.phase.as_str())),
            text(event.category.as_ref().map(|c| c.as_str())),
            text(event.name.as_deref()),
            text(event.pid.as_ref()),
            text(event.tid.as_ref()),
            Cell::Int(event.ts_ns),
            Cell::Int(event.dur_ns),
            text(event.flow_id.as_ref()),
            Cell::Text(event.args.as_ref().map(args_json)),
        ]);
        self.end(0)?;
        let complete = event.phase == Phase::Complete;
        let category = event.normalized_category();
        if complete
            && matches!(
                category,
                Some(Category::Kernel | Category::GpuMemcpy | Category::GpuMemset)
            )
        {
            self.start();
            self.cells.push(text(category.as_ref().map(|c| c.as_str())));
            self.cells.push(text(event.name.as_deref()));
            for key in ["device", "stream", "correlation", "External id"] {
                self.cells.push(int_arg(event, key));
            }
            self.cells
                .extend([Cell::Int(event.ts_ns), Cell::Int(event.dur_ns)]);
            self.cells.push(int_arg(event, "bytes"));
            self.end(1)?;
        }
        if complete && event.arg("Collective name").is_some() {
            self.start();
            let on = if category.as_ref().is_some_and(|c| c.is_device_activity()) {
                "device"
            } else {
                "host"
            };
            self.cells.push(text(Some(on)));
            self.cells.push(text(event.name.as_deref()));
            self.cells.push(text_arg(event, "Collective name"));
            for key in ["In msg nelems", "Out msg nelems", "Group size"] {
                self.cells.push(int_arg(event, key));
            }
            for key in ["dtype", "Process Group Name", "Process Group Ranks"] {
                self.cells.push(text_arg(event, key));
            }
            self.cells.push(int_arg(event, "Seq"));
            self.cells
                .extend([Cell::Int(event.ts_ns), Cell::Int(event.dur_ns)]);
            self.end(2)?;
        }
        if event.is_memory_event() {
            self.start();
            self.cells.push(text(event.pid.as_ref()));
            self.cells.push(text(event.tid.as_ref()));
            self.cells.push(Cell::Int(event.ts_ns));
            for key in [
                "Device Type",
                "Device Id",
                "Addr",
                "Bytes",
                "Total Allocated",
                "Total Reserved",
            ] {
                self.cells.push(int_arg(event, key));
            }
            self.end(3)?;
        }
        if let Some(step) = event
            .name()
            .strip_prefix("ProfilerStep#")
            .filter(|_| complete)
        {
            self.start();
            self.cells.push(Cell::Int(step.parse().ok()));
            self.cells.push(text(event.pid.as_ref()));
            self.cells.push(text(event.tid.as_ref()));
            self.cells
                .extend([Cell::Int(event.ts_ns), Cell::Int(event.dur_ns)]);
            self.end(4)?;
        }
        Ok(())
    }
}

impl TraceSink for Rows<'_> {
    fn on_header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
        self.rank = meta.rank();
        ControlFlow::Continue(())
    }

    fn on_event(&mut self, index: u64, event: &Event<'_>) -> ControlFlow<()> {
        match self.rows(index, event) {
            Ok(()) => ControlFlow::Continue(()),
            Err(err) => {
                self.error = Some(err);
                ControlFlow::Break(())
            }
        }
    }
}

fn arg_text(value: &ArgValue<'_>) -> String {
    match value {
        ArgValue::Null => String::new(),
        ArgValue::Bool(b) => b.to_string(),
        ArgValue::Int(n) => n.to_string(),
        ArgValue::UInt(n) => n.to_string(),
        ArgValue::Float(x) => x.to_string(),
        ArgValue::Number(text) | ArgValue::Str(text) => text.to_string(),
        ArgValue::Array(raw) | ArgValue::Object(raw) => raw.as_str().to_owned(),
    }
}

fn args_json(args: &trace_format::Args<'_>) -> String {
    let mut out = String::from("{");
    for (i, (key, value)) in args.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&serde_json::to_string(&*key).unwrap_or_default());
        out.push_str(": ");
        let text = match &value {
            ArgValue::Null => "null".to_owned(),
            ArgValue::Str(text) => serde_json::to_string(&**text).unwrap_or_default(),
            ArgValue::Float(x) if !x.is_finite() => "null".to_owned(),
            other => arg_text(other),
        };
        out.push_str(&text);
    }
    out.push('}');
    out
}
