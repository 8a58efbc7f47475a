//! The fleet layout: a Hive-partitioned Parquet dataset, one directory per table and rank.
//!
//! ```text
//! OUT/events/rank=0/part-0.parquet        every table of super::TABLES, per rank
//! OUT/kernels/rank=0/part-0.parquet
//! …
//! OUT/ranks/rank=0/part-0.parquet         written last: the rank is complete
//! OUT/analysis_steps/part-0.parquet       the analysis tables (whole run, not partitioned)
//! ```
//!
//! `rank` is not stored in the files: readers take it from the directory name (Spark's
//! `spark.read.parquet("OUT/kernels")`, DuckDB's `read_parquet('OUT/kernels/*/*.parquet',
//! hive_partitioning = true)`, DataFusion's listing tables with a partition column; all
//! put it last). `part-K` is the K-th file of the rank in one run (a profiler schedule
//! with `repeat` writes several files per rank). Every table gets a file for every input,
//! empty or not, so every table directory exists for readers.
//!
//! [`write_dataset`] converts ranks in parallel (one rank per worker at a time; a worker
//! holds one row group per table, [`super::parquet::ROW_GROUP_ROWS`] rows, so memory is
//! bounded per worker whatever the trace's size). Re-running over the same output adds
//! the ranks it lacks and leaves the others as they are: a rank is present when its
//! `ranks/rank=R/` file exists; files are written under hidden temporary names
//! (`.part-K.parquet.tmp`, which Spark, DuckDB's globs and DataFusion skip) and renamed
//! when complete, the `ranks` file last, so an interrupted run leaves no half rank
//! behind (its leftovers are removed when that rank is converted again).

use std::collections::BTreeMap;
use std::io;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use trace_format::{Event, TraceMeta, TraceReader, TraceSink};

use super::parquet::TableFile;
use super::{read_rows, RankRow, RowSink, Value, RANK_COLUMN, SCHEMAS, TABLES, TABLE_COUNT};
use crate::ExportError;

/// The table whose file marks a rank as complete (`ranks`).
pub const MARKER_TABLE: usize = 5;

/// `TABLE/rank=R` under `out`.
pub fn partition_dir(out: &Path, table: usize, rank: i64) -> PathBuf {
    out.join(TABLES[table]).join(format!("rank={rank}"))
}

/// Whether `out` already holds rank `rank` (its `ranks` file was written).
pub fn has_rank(out: &Path, rank: i64) -> bool {
    std::fs::read_dir(partition_dir(out, MARKER_TABLE, rank))
        .map(|entries| entries.flatten().any(|e| is_part_file(&e.path())))
        .unwrap_or(false)
}

/// The ranks `out` holds, sorted.
pub fn ranks_in(out: &Path) -> Vec<i64> {
    let mut ranks: Vec<i64> = std::fs::read_dir(out.join(TABLES[MARKER_TABLE]))
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    e.file_name()
                        .to_str()?
                        .strip_prefix("rank=")?
                        .parse::<i64>()
                        .ok()
                })
                .filter(|&rank| has_rank(out, rank))
                .collect()
        })
        .unwrap_or_default();
    ranks.sort_unstable();
    ranks
}

fn is_part_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("part-") && n.ends_with(".parquet"))
}

/// The rank a trace declares in `distributedInfo` (read from its header only), if any.
pub fn peek_rank(path: &Path, lenient: bool) -> Result<Option<i64>, ExportError> {
    struct Header(Option<i64>);
    impl TraceSink for Header {
        fn on_header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
            self.0 = meta.rank();
            ControlFlow::Break(())
        }
        fn on_event(&mut self, _: u64, _: &Event<'_>) -> ControlFlow<()> {
            ControlFlow::Break(())
        }
    }
    let mut header = Header(None);
    let reader = match path.is_dir() {
        // A Neuron Explorer profile folder (its header comes first: nothing to pre-scan).
        true => analysis::inputs::open_trace(path, lenient)
            .map_err(|e| ExportError::Open(e.to_string()))?,
        false => TraceReader::open(path)
            .options(trace_format::ReadOptions::default().with_prescan_base_time(false))
            .lenient(lenient),
    };
    match reader.read(&mut header) {
        Ok(_) => Ok(header.0),
        Err(err) => Err(ExportError::Read(err)),
    }
}

/// What converting one file wrote.
#[derive(Clone, Debug)]
pub struct Converted {
    /// The `ranks` row (rank, events, damage).
    pub rank: RankRow,
    /// Rows per table.
    pub rows: [u64; TABLE_COUNT],
    /// The files written.
    pub files: Vec<PathBuf>,
}

/// Writes the parts of one file into temporary files; renames them on completion.
struct PartWriter {
    tables: Vec<Option<TableFile>>,
    temps: Vec<PathBuf>,
    finals: Vec<PathBuf>,
}

impl RowSink for PartWriter {
    fn wants(&self, _table: usize) -> bool {
        true
    }

    fn row(&mut self, table: usize, values: &[Value<'_>]) -> io::Result<()> {
        match &mut self.tables[table] {
            Some(file) => file.append(values),
            None => Ok(()),
        }
    }
}

impl PartWriter {
    fn create(out: &Path, rank: i64, part: usize) -> io::Result<Self> {
        let mut writer = PartWriter {
            tables: Vec::new(),
            temps: Vec::new(),
            finals: Vec::new(),
        };
        for (table, schema) in SCHEMAS.iter().enumerate() {
            let dir = partition_dir(out, table, rank);
            std::fs::create_dir_all(&dir)?;
            let temp = dir.join(format!(".part-{part}.parquet.tmp"));
            let columns: Vec<usize> = (0..schema.len()).filter(|&c| c != RANK_COLUMN).collect();
            writer.temps.push(temp.clone());
            writer.finals.push(dir.join(format!("part-{part}.parquet")));
            match TableFile::create(&temp, table, columns) {
                Ok(file) => writer.tables.push(Some(file)),
                Err(err) => {
                    writer.discard();
                    return Err(err);
                }
            }
        }
        Ok(writer)
    }

    /// Closes every file and renames it into place, the marker table last.
    fn commit(mut self) -> io::Result<([u64; TABLE_COUNT], Vec<PathBuf>)> {
        let mut rows = [0; TABLE_COUNT];
        for (table, file) in self.tables.iter_mut().enumerate() {
            if let Some(file) = file.take() {
                rows[table] = file.close()?;
            }
        }
        let order = (0..TABLE_COUNT)
            .filter(|&t| t != MARKER_TABLE)
            .chain([MARKER_TABLE]);
        for table in order {
            std::fs::rename(&self.temps[table], &self.finals[table])?;
        }
        Ok((rows, std::mem::take(&mut self.finals)))
    }

    fn discard(&mut self) {
        self.tables.clear();
        for temp in &self.temps {
            let _ = std::fs::remove_file(temp);
        }
    }
}

/// Converts one trace into `out` as part `part` of its rank (`None`: the rank's next
/// free part number). The rank is `distributedInfo.rank`, else `fallback_rank`.
pub fn convert_file(
    out: &Path,
    path: &Path,
    fallback_rank: i64,
    part: Option<usize>,
    lenient: bool,
) -> Result<Converted, ExportError> {
    let rank = peek_rank(path, lenient)?.unwrap_or(fallback_rank);
    let part = part.unwrap_or_else(|| next_part(out, rank));
    let write_error = |source| ExportError::Write {
        input: path.to_owned(),
        source,
    };
    let mut writer = PartWriter::create(out, rank, part).map_err(write_error)?;
    let row = match read_rows(path, rank, lenient, &mut writer) {
        Ok(row) => row,
        Err(err) => {
            writer.discard();
            return Err(err);
        }
    };
    let (rows, files) = writer.commit().map_err(write_error)?;
    Ok(Converted {
        rank: row,
        rows,
        files,
    })
}

fn next_part(out: &Path, rank: i64) -> usize {
    std::fs::read_dir(partition_dir(out, MARKER_TABLE, rank))
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| is_part_file(&e.path()))
                .count()
        })
        .unwrap_or(0)
}

/// Settings of [`write_dataset`].
#[derive(Clone, Copy, Debug)]
pub struct DatasetOptions {
    /// Ranks converted at a time (default: the machine's cores).
    pub threads: usize,
    /// Read past damage (see `trace_format::ReadOptions::lenient`).
    pub lenient: bool,
}

impl Default for DatasetOptions {
    fn default() -> Self {
        DatasetOptions {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            lenient: false,
        }
    }
}

/// What [`write_dataset`] did.
#[derive(Clone, Debug, Default)]
pub struct DatasetOutcome {
    /// The files converted, by rank then part.
    pub converted: Vec<Converted>,
    /// Inputs not converted because their rank was already in the dataset: (file, rank).
    pub kept: Vec<(PathBuf, i64)>,
    /// Rows written per table, over the converted files.
    pub rows: [u64; TABLE_COUNT],
}

impl DatasetOutcome {
    /// The converted files that had damage (lenient reads).
    pub fn damaged(&self) -> impl Iterator<Item = &RankRow> {
        self.converted
            .iter()
            .map(|c| &c.rank)
            .filter(|r| r.is_damaged())
    }
}

/// Converts `inputs` into the dataset `out`, ranks in parallel; ranks already in `out`
/// are kept as they are (their inputs listed in [`DatasetOutcome::kept`]). A file's rank
/// is `distributedInfo.rank`, else its position in `inputs`. `progress(done, total)` is
/// called as ranks finish.
pub fn write_dataset(
    inputs: &[PathBuf],
    out: &Path,
    options: &DatasetOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<DatasetOutcome, ExportError> {
    std::fs::create_dir_all(out).map_err(|source| ExportError::Write {
        input: out.to_owned(),
        source,
    })?;
    let mut by_rank: BTreeMap<i64, Vec<&Path>> = BTreeMap::new();
    for (position, path) in inputs.iter().enumerate() {
        let rank = peek_rank(path, options.lenient)?.unwrap_or(position as i64);
        by_rank.entry(rank).or_default().push(path);
    }
    let mut outcome = DatasetOutcome::default();
    let mut pending: Vec<(i64, Vec<&Path>)> = Vec::new();
    for (rank, files) in by_rank {
        if has_rank(out, rank) {
            outcome
                .kept
                .extend(files.iter().map(|f| (f.to_path_buf(), rank)));
        } else {
            pending.push((rank, files));
        }
    }
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results: Mutex<Vec<Result<Vec<Converted>, ExportError>>> = Mutex::new(Vec::new());
    let total = pending.len();
    std::thread::scope(|scope| {
        for _ in 0..options.threads.clamp(1, total.max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= pending.len() || failed.load(Ordering::Relaxed) {
                    break;
                }
                let (rank, files) = &pending[i];
                let result = convert_rank(out, *rank, files, options.lenient);
                failed.fetch_or(result.is_err(), Ordering::Relaxed);
                results
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(result);
                progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
            });
        }
    });
    let mut converted = Vec::new();
    for result in results.into_inner().unwrap_or_else(|p| p.into_inner()) {
        converted.extend(result?);
    }
    converted.sort_by(|a, b| (a.rank.rank, &a.files).cmp(&(b.rank.rank, &b.files)));
    for c in &converted {
        for (total, rows) in outcome.rows.iter_mut().zip(c.rows) {
            *total += rows;
        }
    }
    outcome.converted = converted;
    Ok(outcome)
}

/// Converts the files of one rank (removing what an interrupted run left of it).
fn convert_rank(
    out: &Path,
    rank: i64,
    files: &[&Path],
    lenient: bool,
) -> Result<Vec<Converted>, ExportError> {
    for table in 0..TABLE_COUNT {
        let dir = partition_dir(out, table, rank);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|source| ExportError::Write {
                input: dir.clone(),
                source,
            })?;
        }
    }
    files
        .iter()
        .enumerate()
        .map(|(part, file)| convert_file(out, file, rank, Some(part), lenient))
        .collect()
}
