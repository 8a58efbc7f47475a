//! Kineto traces as tables (events, kernels, collectives, memory, steps, ranks,
//! operators, flows), streaming, written as CSV ([`CsvExporter`]) or as a Hive-partitioned
//! Parquet dataset ([`ParquetExporter`], [`dataset`]), and read by `neuronprof query`.
//!
//! [`SCHEMAS`] is the one definition of the tables: every column's name, type and meaning.
//! The CSV and Parquet writers and the SQL engine (crate `query`) take their columns from
//! it, and the schema section of `docs/SQL.md` is generated from it ([`schema_markdown`];
//! a test fails when the two differ). That section is included below.
//!
//! CSV as RFC 4180: one file per table in an output directory (`events.csv`, …), a header
//! row, comma-separated, fields with a comma, quote or line break in double quotes (quotes
//! doubled); empty field = absent. Columns in [`SCHEMAS`] order (`file`, `rank` first).
//!
//! Parquet: the fleet layout of [`dataset`], `TABLE/rank=R/part-K.parquet`, where the
//! `rank` column lives in the directory name (Hive partitioning, as Spark, DuckDB and
//! DataFusion read it) and not in the files; row groups of [`parquet::ROW_GROUP_ROWS`]
//! rows, Snappy-compressed.
//!
#![doc = include_str!("../../docs/SQL-schema.md")]

use std::borrow::Cow;
use std::io;

pub mod analysis;
pub mod arrow;
mod csv;
pub mod dataset;
pub mod parquet;
mod rows;

pub use self::analysis::{
    analysis_rows, AnalysisColumn, Kind, ANALYSIS_SCHEMAS, ANALYSIS_TABLES, ANALYSIS_TABLE_COUNT,
};
pub use self::csv::{csv_field, CsvExporter};
pub use self::parquet::ParquetExporter;
pub use self::rows::{read_rows, RankRow};

/// The number of tables.
pub const TABLE_COUNT: usize = 8;

/// The tables, in the order of [`TableStats::rows`] and [`SCHEMAS`].
pub const TABLES: [&str; TABLE_COUNT] = [
    "events",
    "kernels",
    "collectives",
    "memory",
    "steps",
    "ranks",
    "operators",
    "flows",
];

/// What one row of each table is (same order as [`TABLES`]), for the documentation.
pub const TABLE_ROWS: [&str; TABLE_COUNT] = [
    "element of `traceEvents`",
    "`X` event of category `kernel`, `gpu_memcpy` or `gpu_memset` (legacy `Kernel`, `Memcpy`, `Memset` normalised): device activity",
    "`X` event with a `Collective name` arg: host `record_param_comms` and device collective kernels",
    "`[memory]` instant (an allocation, `bytes` > 0, or a free, `bytes` < 0)",
    "`X` event named `ProfilerStep#N`",
    "input file (one rank's trace), written when the file has been read",
    "`X` event of category `cpu_op` or `user_annotation` (legacy `Operator` normalised): host operators and `record_function` ranges",
    "flow event (`ph` `s`, `t` or `f`): launch → device (`ac2g`, id = the correlation) and forward → backward (`fwdbwd`)",
];

/// A column: its name, type and meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    /// Name.
    pub name: &'static str,
    /// `i64` (true) or text.
    pub int: bool,
    /// What it holds (one line, Markdown).
    pub doc: &'static str,
}

const fn t(name: &'static str, doc: &'static str) -> Column {
    Column {
        name,
        int: false,
        doc,
    }
}
const fn i(name: &'static str, doc: &'static str) -> Column {
    Column {
        name,
        int: true,
        doc,
    }
}

const FILE: Column = t("file", "the input trace's path, as given");
const RANK: Column = i(
    "rank",
    "`distributedInfo.rank`, else the file's position among the inputs (as `analyze` numbers ranks); in the Parquet dataset the partition directory `rank=R`",
);
const PID: Column = t(
    "pid",
    "`pid` as written (a number, or a string for some Kineto rows)",
);
const TID: Column = t("tid", "`tid` as written");
const TS: Column = i(
    "ts_ns",
    "start, Unix-epoch nanoseconds (`ts` made absolute)",
);
const DUR: Column = i("dur_ns", "duration, nanoseconds");

/// The columns of each table (same order as [`TABLES`]). Every table starts with `file`
/// and `rank`.
pub const SCHEMAS: [&[Column]; TABLE_COUNT] = [
    &[
        FILE,
        RANK,
        i("index", "position in `traceEvents`"),
        t("phase", "`ph` (`X`, `i`, `s`, `f`, `C`, `M`, …)"),
        t("category", "`cat` as written"),
        t("name", "`name`"),
        PID,
        TID,
        TS,
        DUR,
        t("flow_id", "`id` of flow events"),
        t("args", "the event's `args` as a JSON object"),
    ],
    &[
        FILE,
        RANK,
        t("category", "`kernel`, `gpu_memcpy` or `gpu_memset`"),
        t("name", "kernel name"),
        i("device", "`device` arg"),
        i("stream", "`stream` arg (the device queue)"),
        i("correlation", "`correlation` arg: the launch's correlation id (= the `ac2g` flow id)"),
        i("external_id", "`External id` arg: the host operator that launched it"),
        TS,
        DUR,
        i("bytes", "`bytes` arg (copies and memsets)"),
        t("collective", "`Collective name` arg of a collective kernel (`allreduce`, …); null for computation and copies"),
    ],
    &[
        FILE,
        RANK,
        t("side", "`host` (the `record_param_comms` operator) or `device` (the kernel)"),
        t("name", "event name"),
        t("collective", "`Collective name` (`allreduce`, `allgather`, …)"),
        i("in_msg_nelems", "`In msg nelems`"),
        i("out_msg_nelems", "`Out msg nelems`"),
        i("group_size", "`Group size`"),
        t("dtype", "`dtype`"),
        t("process_group_name", "`Process Group Name`"),
        t("process_group_ranks", "`Process Group Ranks` (JSON text)"),
        i("seq", "`Seq`: the collective's sequence number in its process group"),
        TS,
        DUR,
    ],
    &[
        FILE,
        RANK,
        PID,
        TID,
        i("ts_ns", "time, Unix-epoch nanoseconds"),
        i("device_type", "`Device Type` (0 CPU, 1 CUDA, 20 PrivateUse1 such as `neuron`)"),
        i("device_id", "`Device Id`"),
        i("addr", "`Addr`"),
        i("bytes", "`Bytes`: positive for an allocation, negative for a free"),
        i("total_allocated", "`Total Allocated` after the event, bytes"),
        i("total_reserved", "`Total Reserved` after the event, bytes"),
    ],
    &[
        FILE,
        RANK,
        i("step", "N of `ProfilerStep#N`"),
        PID,
        TID,
        TS,
        DUR,
    ],
    &[
        FILE,
        RANK,
        i("world_size", "`distributedInfo.world_size`"),
        t("backend", "`distributedInfo.backend` (`nccl`, `gloo`, …)"),
        i("base_time_ns", "`baseTimeNanoseconds`"),
        i("events", "events read from `traceEvents`"),
        i("events_skipped", "damaged events skipped by a lenient read"),
        t("damage", "lenient reads: where the file is damaged (file, byte offset, event) and why; empty when clean"),
        i("first_ts_ns", "earliest event start"),
        i("last_end_ns", "latest event end"),
        t("devices", "`deviceProperties` as JSON"),
    ],
    &[
        FILE,
        RANK,
        t("category", "`cpu_op` or `user_annotation`"),
        t("name", "operator name (`aten::mm`, `ProfilerStep#3`, `forward`, …)"),
        PID,
        TID,
        TS,
        DUR,
        i("external_id", "`External id` arg (the kernels it launched carry it)"),
        i("sequence_number", "`Sequence number` arg (autograd: forward ↔ backward)"),
        i("fwd_thread_id", "`Fwd thread id` arg"),
        t("input_dims", "`Input Dims` arg as JSON text"),
        t("input_types", "`Input type` arg as JSON text"),
    ],
    &[
        FILE,
        RANK,
        t("phase", "`s` (start), `t` (step) or `f` (finish)"),
        t("category", "the flow's kind, normalised: `ac2g` (launch → device) or `fwdbwd`"),
        t("flow_id", "`id`: for `ac2g` the launch's correlation id"),
        t("name", "`name`"),
        PID,
        TID,
        i("ts_ns", "time, Unix-epoch nanoseconds"),
        t("binding_point", "`bp` (`e`: bound to the enclosing slice)"),
    ],
];

/// The index of `table` in [`TABLES`].
pub fn table_index(table: &str) -> Option<usize> {
    TABLES.iter().position(|t| *t == table)
}

/// The index of the `rank` column in every table's [`SCHEMAS`] entry.
pub const RANK_COLUMN: usize = 1;

/// One value of a row as the writers and the SQL engine receive it: borrowed from the
/// event where possible.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    /// An integer column's value.
    Int(Option<i64>),
    /// A text column's value.
    Text(Option<Cow<'a, str>>),
}

/// One value of an analysis table's row.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// An integer column's value.
    Int(Option<i64>),
    /// A text column's value.
    Text(Option<String>),
    /// A float column's value.
    Float(Option<f64>),
}

/// Rows written per table (same order as [`TABLES`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableStats {
    /// Rows per table.
    pub rows: [u64; TABLE_COUNT],
    /// Rows per analysis table (same order as [`ANALYSIS_TABLES`]; zeros unless
    /// `add_analysis` was called).
    pub analysis_rows: [u64; ANALYSIS_TABLE_COUNT],
    /// The files written.
    pub files: Vec<std::path::PathBuf>,
}

/// Where rows go: a file writer, an Arrow batch builder.
pub trait RowSink {
    /// Whether rows of `table` are wanted (the reader computes no others).
    fn wants(&self, table: usize) -> bool;

    /// Whether column `column` of `table` is wanted; when not, the reader may pass
    /// `Text(None)` for it instead of computing it (the `args` JSON of `events`).
    fn wants_column(&self, table: usize, column: usize) -> bool {
        let _ = (table, column);
        true
    }

    /// Takes one row of `table`, values in [`SCHEMAS`] order.
    fn row(&mut self, table: usize, values: &[Value<'_>]) -> io::Result<()>;
}

/// The schema of every table as Markdown: the section of `docs/SQL.md` between the
/// `schema` markers, and of these docs.
pub fn schema_markdown() -> String {
    let mut out = String::from(
        "# Schema\n\n\
         Generated from `exporters::tables::SCHEMAS` (run `cargo run -p exporters --example \
         sql_schema > docs/SQL-schema.md` after changing it; a test checks they agree).\n\n\
         Column types: `i64` (Arrow `Int64`, Spark `bigint`, DuckDB `BIGINT`) or `text` \
         (Arrow `Utf8`, Spark `string`, DuckDB `VARCHAR`), all nullable: absent in the \
         trace = null. Times are Unix-epoch nanoseconds (Kineto's `ts` made absolute with \
         `baseTimeNanoseconds`), durations nanoseconds. In every table `rank` is the last \
         column, both in `neuronprof query` and in the Parquet dataset (where it is the \
         Hive partition `rank=R`, so Spark and DuckDB also put it last).\n",
    );
    for (index, table) in TABLES.iter().enumerate() {
        out.push_str(&format!(
            "\n## `{table}`\n\nOne row per {}.\n\n| column | type | meaning |\n|---|---|---|\n",
            TABLE_ROWS[index]
        ));
        let columns = SCHEMAS[index]
            .iter()
            .enumerate()
            .filter(|(c, _)| *c != RANK_COLUMN)
            .chain(std::iter::once((RANK_COLUMN, &SCHEMAS[index][RANK_COLUMN])));
        for (_, column) in columns {
            let kind = if column.int { "i64" } else { "text" };
            out.push_str(&format!(
                "| `{}` | {kind} | {} |\n",
                column.name, column.doc
            ));
        }
    }
    out
}
