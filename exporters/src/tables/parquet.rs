//! Parquet files of one table: Arrow schema from [`super::SCHEMAS`], Snappy, bounded
//! row groups; and [`ParquetExporter`], which writes traces one by one into a dataset.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{Float64Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use super::arrow::BatchBuilder;
use super::{
    analysis_rows, dataset, Cell, Kind, TableStats, Value, ANALYSIS_SCHEMAS, ANALYSIS_TABLES,
    ANALYSIS_TABLE_COUNT,
};
use crate::ExportError;

/// Rows buffered per table before they are written as one row group.
pub const ROW_GROUP_ROWS: usize = 65_536;

/// The Arrow schema of table `table` (index into [`super::TABLES`]), every column in
/// [`super::SCHEMAS`] order (what a CSV file holds).
pub fn arrow_schema(table: usize) -> SchemaRef {
    let columns: Vec<usize> = (0..super::SCHEMAS[table].len()).collect();
    super::arrow::schema_of(table, &columns)
}

/// The Arrow schema of analysis table `table` (index into [`ANALYSIS_TABLES`]).
pub fn analysis_arrow_schema(table: usize) -> SchemaRef {
    let fields: Vec<Field> = ANALYSIS_SCHEMAS[table]
        .iter()
        .map(|c| {
            let kind = match c.kind {
                Kind::Int => DataType::Int64,
                Kind::Float => DataType::Float64,
                Kind::Text => DataType::Utf8,
            };
            Field::new(c.name, kind, true)
        })
        .collect();
    Arc::new(Schema::new(fields))
}

fn properties() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build()
}

/// One Parquet file of one table, written row group by row group.
pub struct TableFile {
    builder: BatchBuilder,
    writer: ArrowWriter<File>,
    rows: u64,
}

impl std::fmt::Debug for TableFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableFile")
            .field("builder", &self.builder)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl TableFile {
    /// Creates `path` for `columns` (indices into [`super::SCHEMAS`]`[table]`).
    pub fn create(path: &Path, table: usize, columns: Vec<usize>) -> io::Result<Self> {
        let builder = BatchBuilder::new(table, columns);
        let writer =
            ArrowWriter::try_new(File::create(path)?, builder.schema(), Some(properties()))
                .map_err(io::Error::other)?;
        Ok(TableFile {
            builder,
            writer,
            rows: 0,
        })
    }

    /// Appends one row (values in [`super::SCHEMAS`] order).
    pub fn append(&mut self, values: &[Value<'_>]) -> io::Result<()> {
        self.builder.append(values);
        self.rows += 1;
        if self.builder.len() >= ROW_GROUP_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.builder.is_empty() {
            return Ok(());
        }
        let batch = self.builder.finish().map_err(io::Error::other)?;
        self.writer.write(&batch).map_err(io::Error::other)?;
        self.writer.flush().map_err(io::Error::other)
    }

    /// Writes the last row group and the footer; returns the rows written.
    pub fn close(mut self) -> io::Result<u64> {
        self.flush()?;
        self.writer.close().map_err(io::Error::other)?;
        Ok(self.rows)
    }
}

/// Writes traces one by one into a Parquet dataset (the layout of [`dataset`]); for many
/// ranks in parallel, use [`dataset::write_dataset`].
#[derive(Debug)]
pub struct ParquetExporter {
    dir: PathBuf,
    stats: TableStats,
    files: u64,
}

impl ParquetExporter {
    /// Writes into `dir` (created if missing). Ranks already in it are kept.
    pub fn create(dir: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        Ok(ParquetExporter {
            dir: dir.to_owned(),
            stats: TableStats::default(),
            files: 0,
        })
    }

    /// Converts one trace file into `TABLE/rank=R/part-K.parquet` (its rank from
    /// `distributedInfo`, else the number of files added before it); a rank already in
    /// the dataset gets its next part number.
    pub fn add_path(&mut self, path: &Path) -> Result<(), ExportError> {
        let fallback = self.files as i64;
        self.files += 1;
        let written = dataset::convert_file(&self.dir, path, fallback, None, false)?;
        for (total, rows) in self.stats.rows.iter_mut().zip(written.rows) {
            *total += rows;
        }
        self.stats.files.extend(written.files);
        Ok(())
    }

    /// Writes the analysis tables (`analysis_temporal/part-0.parquet` …, see
    /// [`super::analysis`]) of `report`, replacing earlier ones.
    pub fn add_analysis(&mut self, report: &analysis::Report) -> io::Result<()> {
        let (rows, files) = write_analysis(&self.dir, report)?;
        self.stats.analysis_rows = rows;
        self.stats.files.extend(files);
        Ok(())
    }

    /// Returns the row counts.
    pub fn finish(self) -> io::Result<TableStats> {
        Ok(self.stats)
    }
}

/// Writes `ANALYSIS_TABLE/part-0.parquet` for each analysis table of `report` into the
/// dataset `dir` (one row group each; not partitioned, since collectives span ranks),
/// replacing what was there. Returns rows per table and the files.
pub fn write_analysis(
    dir: &Path,
    report: &analysis::Report,
) -> io::Result<([u64; ANALYSIS_TABLE_COUNT], Vec<PathBuf>)> {
    let tables = analysis_rows(report);
    let mut counts = [0; ANALYSIS_TABLE_COUNT];
    let mut files = Vec::new();
    for (index, rows) in tables.iter().enumerate() {
        let table_dir = dir.join(ANALYSIS_TABLES[index]);
        std::fs::create_dir_all(&table_dir)?;
        let path = table_dir.join("part-0.parquet");
        let schema = analysis_arrow_schema(index);
        let mut builders: Vec<AnalysisBuilder> = ANALYSIS_SCHEMAS[index]
            .iter()
            .map(|c| match c.kind {
                Kind::Int => AnalysisBuilder::Int(Int64Builder::new()),
                Kind::Float => AnalysisBuilder::Float(Float64Builder::new()),
                Kind::Text => AnalysisBuilder::Text(StringBuilder::new()),
            })
            .collect();
        for row in rows {
            for (builder, cell) in builders.iter_mut().zip(row) {
                builder.append(cell);
            }
        }
        let columns: Vec<ArrayRef> = builders.iter_mut().map(AnalysisBuilder::finish).collect();
        let batch = RecordBatch::try_new(schema.clone(), columns).map_err(io::Error::other)?;
        let temp = table_dir.join(".part-0.parquet.tmp");
        let mut writer = ArrowWriter::try_new(File::create(&temp)?, schema, Some(properties()))
            .map_err(io::Error::other)?;
        writer.write(&batch).map_err(io::Error::other)?;
        writer.close().map_err(io::Error::other)?;
        std::fs::rename(&temp, &path)?;
        counts[index] = rows.len() as u64;
        files.push(path);
    }
    Ok((counts, files))
}

enum AnalysisBuilder {
    Int(Int64Builder),
    Float(Float64Builder),
    Text(StringBuilder),
}

impl AnalysisBuilder {
    fn append(&mut self, cell: &Cell) {
        match (self, cell) {
            (AnalysisBuilder::Int(b), Cell::Int(value)) => b.append_option(*value),
            (AnalysisBuilder::Float(b), Cell::Float(value)) => b.append_option(*value),
            (AnalysisBuilder::Float(b), Cell::Int(value)) => {
                b.append_option(value.map(|v| v as f64))
            }
            (AnalysisBuilder::Text(b), Cell::Text(value)) => b.append_option(value.as_deref()),
            (AnalysisBuilder::Text(b), Cell::Int(value)) => {
                b.append_option(value.map(|v| v.to_string()))
            }
            (AnalysisBuilder::Text(b), Cell::Float(value)) => {
                b.append_option(value.map(|v| v.to_string()))
            }
            (AnalysisBuilder::Int(b), _) => b.append_null(),
            (AnalysisBuilder::Float(b), Cell::Text(_)) => b.append_null(),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            AnalysisBuilder::Int(b) => Arc::new(b.finish()),
            AnalysisBuilder::Float(b) => Arc::new(b.finish()),
            AnalysisBuilder::Text(b) => Arc::new(b.finish()),
        }
    }
}
