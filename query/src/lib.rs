//! SQL over Kineto traces and over their Parquet dataset, with an embedded Apache
//! DataFusion engine (Arrow-native; the workspace's `arrow`/`parquet` are the release
//! DataFusion is built on).
//!
//! The tables are those of `exporters::tables` (`events`, `kernels`, `collectives`,
//! `memory`, `steps`, `ranks`, `operators`, `flows`; schema in `docs/SQL.md`, generated
//! from `exporters::tables::SCHEMAS`), over either source:
//!
//! - **trace files** (any Kineto trace: CUDA, CPU, MTIA, AMD, neuron; `.json` or
//!   `.json.gz`): each table is a streaming source ([`traces::TraceTable`]) that reads
//!   the files when the query runs and builds only the columns the query uses, a few
//!   thousand rows at a time, so memory does not grow with the traces;
//! - **a dataset** written by `neuronprof export --format parquet` (the Hive layout of
//!   `exporters::tables::dataset`): each table is a DataFusion listing table over
//!   `TABLE/rank=R/*.parquet` with the partition column `rank`, plus the `analysis_*`
//!   tables.
//!
//! In both, `rank` is each table's last column, so a query gives the same columns over
//! traces, over the dataset, in Spark and in DuckDB (see `docs/SQL.md` for queries that
//! run unchanged on all of them).
//!
//! Errors: SQL errors name the position in the query (line, column, a caret under it,
//! [`QueryError::Sql`]); a damaged trace stops the query with its file, byte offset and
//! event index, unless [`QueryOptions::lenient`], where the readable part is used and the
//! damage is listed in [`QueryOutcome::damaged`] (and in the `ranks` table).
//!
//! # Example
//!
//! ```
//! use query::{Engine, OutputFormat, QueryOptions, Source};
//! # let dir = std::env::temp_dir().join(format!("query-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir).unwrap();
//! # let path = dir.join("rank0.json");
//! # std::fs::write(&path, r#"{"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": [
//! #  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 5.0, "dur": 10,
//! #   "args": {"stream": 7, "correlation": 1}},
//! #  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20.0, "dur": 4,
//! #   "args": {"stream": 7, "correlation": 2}}]}"#).unwrap();
//! let engine = Engine::new(Source::Traces(vec![path]), &QueryOptions::default())?;
//! let mut out = Vec::new();
//! engine.run(
//!     "SELECT name, count(*) AS n, sum(dur_ns) AS total_ns FROM kernels GROUP BY name",
//!     OutputFormat::Csv,
//!     &mut out,
//! )?;
//! assert_eq!(String::from_utf8(out).unwrap(), "name,n,total_ns\ngemm,2,14000\n");
//! # Ok::<(), query::QueryError>(())
//! ```
#![warn(missing_docs)]

mod error;
mod output;
pub mod traces;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::ListingOptions;
use datafusion::execution::context::SQLOptions;
use datafusion::prelude::{SessionConfig, SessionContext};
use exporters::tables::arrow::schema_of;
use exporters::tables::{RankRow, ANALYSIS_TABLES, RANK_COLUMN, SCHEMAS, TABLES};
use futures::StreamExt as _;

pub use error::QueryError;
pub use output::OutputFormat;
use traces::{TraceFiles, TraceTable};

/// What the tables are read from.
#[derive(Clone, Debug)]
pub enum Source {
    /// Kineto trace files (one rank each; a file's rank is `distributedInfo.rank`, else
    /// its position in the list).
    Traces(Vec<PathBuf>),
    /// A dataset directory written by `neuronprof export --format parquet`.
    Dataset(PathBuf),
}

impl Source {
    /// Whether `dir` is a dataset of `export --format parquet` (it has a `ranks/`
    /// directory of `rank=R` partitions).
    pub fn is_dataset(dir: &Path) -> bool {
        dir.join(TABLES[exporters::tables::dataset::MARKER_TABLE])
            .is_dir()
    }
}

/// Settings of an [`Engine`].
#[derive(Clone, Debug)]
pub struct QueryOptions {
    /// Read past damaged events and stop quietly at a truncation (trace files only).
    pub lenient: bool,
    /// Threads of the engine, and parallel reading groups per trace table (default: the
    /// machine's cores).
    pub threads: usize,
    /// Run statements that write files, read files beyond the source or change the
    /// session (DDL such as `CREATE EXTERNAL TABLE`, DML such as `COPY … TO` and
    /// `INSERT`, `SET`); by default they are refused ([`QueryError::ReadOnly`]).
    pub allow_write: bool,
}

impl Default for QueryOptions {
    fn default() -> Self {
        QueryOptions {
            lenient: false,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            allow_write: false,
        }
    }
}

/// What a query did.
#[derive(Clone, Debug, Default)]
pub struct QueryOutcome {
    /// Rows of the result.
    pub rows: u64,
    /// Trace files read with damage (lenient mode): file, byte offset and event of each
    /// damage in [`RankRow::damage`], events skipped in [`RankRow::events_skipped`].
    pub damaged: Vec<RankRow>,
    /// Trace files read to their end by the query.
    pub files_read: usize,
}

/// A SQL engine over one source.
pub struct Engine {
    ctx: SessionContext,
    allow_write: bool,
    runtime: tokio::runtime::Runtime,
    traces: Option<TraceFiles>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("traces", &self.traces)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Registers the tables of `source`.
    pub fn new(source: Source, options: &QueryOptions) -> Result<Self, QueryError> {
        let threads = options.threads.max(1);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .max_blocking_threads(threads.max(2) * 2)
            .thread_name("neuronprof-query")
            .enable_all()
            .build()
            .map_err(QueryError::Io)?;
        let mut config = SessionConfig::new().with_target_partitions(threads);
        config.options_mut().sql_parser.collect_spans = true;
        let ctx = SessionContext::new_with_config(config);
        let mut traces = None;
        match source {
            Source::Traces(files) => {
                if files.is_empty() {
                    return Err(QueryError::NoInput);
                }
                let files = TraceFiles::new(files, options.lenient);
                for (table, name) in TABLES.iter().enumerate() {
                    let provider = TraceTable::new(table, files.clone(), threads);
                    ctx.register_table(*name, Arc::new(provider))
                        .map_err(QueryError::engine)?;
                }
                traces = Some(files);
            }
            Source::Dataset(dir) => runtime.block_on(register_dataset(&ctx, &dir))?,
        }
        Ok(Engine {
            ctx,
            allow_write: options.allow_write,
            runtime,
            traces,
        })
    }

    /// Runs `sql` and writes its result to `out` in `format`, batch by batch as the
    /// engine produces them (`table` collects the rows first to align them).
    pub fn run(
        &self,
        sql: &str,
        format: OutputFormat,
        out: &mut (dyn Write + Send),
    ) -> Result<QueryOutcome, QueryError> {
        let rows = self.runtime.block_on(async {
            let frame = self.plan(sql).await?;
            let mut stream = frame
                .execute_stream()
                .await
                .map_err(|e| QueryError::from_datafusion(e, sql))?;
            let mut writer = output::Writer::new(format, stream.schema(), out)?;
            while let Some(batch) = stream.next().await {
                let batch = batch.map_err(|e| QueryError::from_datafusion(e, sql))?;
                writer.write(&batch)?;
            }
            writer.finish()
        })?;
        Ok(self.outcome(rows))
    }

    /// Runs `sql` and returns its result as record batches.
    pub fn collect(&self, sql: &str) -> Result<Vec<RecordBatch>, QueryError> {
        self.runtime.block_on(async {
            let frame = self.plan(sql).await?;
            frame
                .collect()
                .await
                .map_err(|e| QueryError::from_datafusion(e, sql))
        })
    }

    /// Plans `sql`, refusing what a read-only engine must not run: the planner reads
    /// no file, so nothing has been written or read when it is refused.
    async fn plan(&self, sql: &str) -> Result<datafusion::dataframe::DataFrame, QueryError> {
        let state = self.ctx.state();
        let plan = state
            .create_logical_plan(sql)
            .await
            .map_err(|e| QueryError::from_datafusion(e, sql))?;
        let options = SQLOptions::new()
            .with_allow_ddl(self.allow_write)
            .with_allow_dml(self.allow_write)
            .with_allow_statements(self.allow_write);
        options
            .verify_plan(&plan)
            .map_err(|e| QueryError::ReadOnly {
                statement: e.message().into_owned(),
            })?;
        self.ctx
            .execute_logical_plan(plan)
            .await
            .map_err(|e| QueryError::from_datafusion(e, sql))
    }

    /// What the trace reads found so far (empty for a dataset).
    pub fn reads(&self) -> Vec<RankRow> {
        self.traces.as_ref().map(|t| t.reads()).unwrap_or_default()
    }

    fn outcome(&self, rows: u64) -> QueryOutcome {
        let reads = self.reads();
        QueryOutcome {
            rows,
            files_read: reads.len(),
            damaged: reads.into_iter().filter(RankRow::is_damaged).collect(),
        }
    }
}

/// Registers every table directory of a dataset: the trace tables with the `rank`
/// partition column (last), the analysis tables as they are.
async fn register_dataset(ctx: &SessionContext, dir: &Path) -> Result<(), QueryError> {
    if !Source::is_dataset(dir) {
        return Err(QueryError::NotADataset(dir.to_owned()));
    }
    for (table, name) in TABLES.iter().enumerate() {
        let table_dir = dir.join(name);
        if !table_dir.is_dir() {
            continue;
        }
        let columns: Vec<usize> = (0..SCHEMAS[table].len())
            .filter(|&c| c != RANK_COLUMN)
            .collect();
        let file_schema = schema_of(table, &columns);
        let options = ListingOptions::new(Arc::new(ParquetFormat::default()))
            .with_file_extension(".parquet")
            .with_table_partition_cols(vec![("rank".to_owned(), DataType::Int64)]);
        ctx.register_listing_table(
            *name,
            listing_url(&table_dir),
            options,
            Some(file_schema),
            None,
        )
        .await
        .map_err(QueryError::engine)?;
    }
    for name in ANALYSIS_TABLES {
        let table_dir = dir.join(name);
        if !table_dir.is_dir() {
            continue;
        }
        let index = ANALYSIS_TABLES.iter().position(|t| *t == name).unwrap_or(0);
        let schema = exporters::tables::parquet::analysis_arrow_schema(index);
        let options =
            ListingOptions::new(Arc::new(ParquetFormat::default())).with_file_extension(".parquet");
        ctx.register_listing_table(name, listing_url(&table_dir), options, Some(schema), None)
            .await
            .map_err(QueryError::engine)?;
    }
    Ok(())
}

/// A directory as a listing-table URL (absolute, ending in `/`).
fn listing_url(dir: &Path) -> String {
    let absolute = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
    format!("{}/", absolute.display())
}

/// The SQL column names of a table, for help texts: `table(col, col, …, rank)`.
pub fn table_signature(table: usize) -> String {
    let schema = schema_of(table, &exporters::tables::arrow::sql_columns(table));
    let names: Vec<&str> = schema
        .fields()
        .iter()
        .map(|f: &Arc<Field>| f.name().as_str())
        .collect();
    format!("{}({})", TABLES[table], names.join(", "))
}
