//! The tables of Kineto trace files as DataFusion tables, streamed from the reader.
//!
//! A scan of one table reads its files in `partitions` groups (one reading thread per
//! group, the files of a group one after another), builds only the projected columns
//! ([`exporters::tables::arrow::BatchBuilder`]) and hands [`BATCH_ROWS`]-row batches to
//! DataFusion through a channel of [`CHANNEL_BATCHES`] batches: memory holds a few
//! batches per partition, never a whole trace. A query that stops early (`LIMIT`) closes
//! the channel and the readers stop. Each table scanned reads the files again (a join of
//! `kernels` and `steps` reads every file twice): the price of never keeping a trace.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::TableType;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::stream::RecordBatchReceiverStreamBuilder;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::ExecutionPlan;
use exporters::tables::arrow::{sql_columns, BatchBuilder};
use exporters::tables::{read_rows, RankRow, RowSink, Value, SCHEMAS, TABLES};
use tokio::sync::mpsc::Sender;

/// Rows per record batch handed to DataFusion.
pub const BATCH_ROWS: usize = 8192;

/// Batches buffered between a reading thread and DataFusion.
pub const CHANNEL_BATCHES: usize = 2;

/// The input files: path and the rank used when the trace declares none (its position).
#[derive(Clone, Debug)]
pub struct TraceFiles {
    files: Arc<Vec<(PathBuf, i64)>>,
    lenient: bool,
    reads: Arc<Mutex<BTreeMap<PathBuf, RankRow>>>,
}

impl TraceFiles {
    /// The files, in the order given (a file's fallback rank is its position).
    pub fn new(files: Vec<PathBuf>, lenient: bool) -> Self {
        let files = files
            .into_iter()
            .enumerate()
            .map(|(i, f)| (f, i as i64))
            .collect();
        TraceFiles {
            files: Arc::new(files),
            lenient,
            reads: Arc::default(),
        }
    }

    /// What the reads found per file (ranks, events, damage), for every file read to
    /// its end by some scan so far.
    pub fn reads(&self) -> Vec<RankRow> {
        self.reads
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect()
    }

    /// The number of files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether there are no files.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// One table (index into `exporters::tables::TABLES`) over trace files.
#[derive(Debug)]
pub struct TraceTable {
    table: usize,
    files: TraceFiles,
    schema: SchemaRef,
    partitions: usize,
}

impl TraceTable {
    /// Table `table` over `files`, read in at most `partitions` parallel groups.
    pub fn new(table: usize, files: TraceFiles, partitions: usize) -> Self {
        let schema = exporters::tables::arrow::schema_of(table, &sql_columns(table));
        TraceTable {
            table,
            files,
            schema,
            partitions: partitions.max(1),
        }
    }
}

#[async_trait]
impl TableProvider for TraceTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let sql = sql_columns(self.table);
        // Projection indices are into the SQL column order; the builder wants schema
        // indices.
        let columns: Vec<usize> = match projection {
            Some(p) => p.iter().map(|&i| sql[i]).collect(),
            None => sql.clone(),
        };
        let schema = exporters::tables::arrow::schema_of(self.table, &columns);
        let groups = self.partitions.min(self.files.len()).max(1);
        let partitions: Vec<Arc<dyn PartitionStream>> = (0..groups)
            .map(|group| {
                Arc::new(TracePartition {
                    table: self.table,
                    files: self.files.clone(),
                    columns: columns.clone(),
                    schema: schema.clone(),
                    group,
                    groups,
                }) as Arc<dyn PartitionStream>
            })
            .collect();
        let exec = StreamingTableExec::try_new(schema, partitions, None, [], false, limit)?;
        Ok(Arc::new(exec))
    }
}

/// The files `group`, `group + groups`, … of one table scan.
struct TracePartition {
    table: usize,
    files: TraceFiles,
    columns: Vec<usize>,
    schema: SchemaRef,
    group: usize,
    groups: usize,
}

impl fmt::Debug for TracePartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TracePartition")
            .field("table", &TABLES[self.table])
            .field("group", &self.group)
            .field("groups", &self.groups)
            .finish_non_exhaustive()
    }
}

impl PartitionStream for TracePartition {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let mut builder =
            RecordBatchReceiverStreamBuilder::new(self.schema.clone(), CHANNEL_BATCHES);
        let tx = builder.tx();
        let (table, columns, files) = (self.table, self.columns.clone(), self.files.clone());
        let (group, groups) = (self.group, self.groups);
        builder.spawn_blocking(move || {
            let mut sink = BatchSink {
                builder: BatchBuilder::new(table, columns),
                tx,
                closed: false,
            };
            for (path, fallback) in files.files.iter().skip(group).step_by(groups) {
                match read_rows(path, *fallback, files.lenient, &mut sink) {
                    Ok(read) => {
                        files
                            .reads
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .insert(path.clone(), read);
                    }
                    Err(_) if sink.closed => return Ok(()),
                    Err(err) => return Err(DataFusionError::External(Box::new(err))),
                }
            }
            if !sink.builder.is_empty() {
                sink.send()?;
            }
            Ok(())
        });
        builder.build()
    }
}

/// Fills a batch builder and sends full batches.
struct BatchSink {
    builder: BatchBuilder,
    tx: Sender<Result<RecordBatch>>,
    closed: bool,
}

impl BatchSink {
    fn send(&mut self) -> Result<()> {
        let batch = self.builder.finish()?;
        if self.tx.blocking_send(Ok(batch)).is_err() {
            // The query needs no more rows (LIMIT, or it was cancelled).
            self.closed = true;
            return Err(DataFusionError::Execution("query finished".into()));
        }
        Ok(())
    }
}

impl RowSink for BatchSink {
    fn wants(&self, table: usize) -> bool {
        table == self.builder.table()
    }

    fn wants_column(&self, _table: usize, column: usize) -> bool {
        self.builder.has_column(column)
    }

    fn row(&mut self, _table: usize, values: &[Value<'_>]) -> io::Result<()> {
        debug_assert_eq!(values.len(), SCHEMAS[self.builder.table()].len());
        self.builder.append(values);
        if self.builder.len() >= BATCH_ROWS {
            self.send().map_err(io::Error::other)?;
        }
        Ok(())
    }
}
