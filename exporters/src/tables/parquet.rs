//! The tables as Parquet files (Arrow schema, Snappy, bounded row groups).

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{Float64Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use super::{
    analysis_rows, read_rows, Cell, Kind, RowSink, TableStats, ANALYSIS_SCHEMAS, ANALYSIS_TABLES,
    SCHEMAS, TABLES,
};
use crate::ExportError;

/// Rows buffered per table before they are written as one row group.
pub const ROW_GROUP_ROWS: usize = 65_536;

/// The Arrow schema of table `table` (index into [`TABLES`]).
pub fn arrow_schema(table: usize) -> SchemaRef {
    let fields: Vec<Field> = SCHEMAS[table]
        .iter()
        .map(|c| {
            let kind = if c.int {
                DataType::Int64
            } else {
                DataType::Utf8
            };
            Field::new(c.name, kind, true)
        })
        .collect();
    Arc::new(Schema::new(fields))
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

enum Builder {
    Int(Int64Builder),
    Float(Float64Builder),
    Text(StringBuilder),
}

impl Builder {
    fn append(&mut self, cell: &Cell) {
        match (self, cell) {
            (Builder::Int(b), Cell::Int(value)) => b.append_option(*value),
            (Builder::Float(b), Cell::Float(value)) => b.append_option(*value),
            (Builder::Float(b), Cell::Int(value)) => b.append_option(value.map(|v| v as f64)),
            (Builder::Text(b), Cell::Text(value)) => b.append_option(value.as_deref()),
            (Builder::Text(b), Cell::Int(value)) => b.append_option(value.map(|v| v.to_string())),
            (Builder::Text(b), Cell::Float(value)) => b.append_option(value.map(|v| v.to_string())),
            (Builder::Int(b), _) => b.append_null(),
            (Builder::Float(b), Cell::Text(_)) => b.append_null(),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::Int(b) => Arc::new(b.finish()),
            Builder::Float(b) => Arc::new(b.finish()),
            Builder::Text(b) => Arc::new(b.finish()),
        }
    }
}

struct Table {
    schema: SchemaRef,
    writer: ArrowWriter<File>,
    builders: Vec<Builder>,
    buffered: usize,
}

impl Table {
    fn builders(table: usize) -> Vec<Builder> {
        SCHEMAS[table]
            .iter()
            .map(|c| {
                if c.int {
                    Builder::Int(Int64Builder::new())
                } else {
                    Builder::Text(StringBuilder::new())
                }
            })
            .collect()
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.buffered == 0 {
            return Ok(());
        }
        let columns: Vec<ArrayRef> = self.builders.iter_mut().map(Builder::finish).collect();
        let batch = RecordBatch::try_new(self.schema.clone(), columns).map_err(io::Error::other)?;
        self.writer.write(&batch).map_err(io::Error::other)?;
        self.writer.flush().map_err(io::Error::other)?;
        self.buffered = 0;
        Ok(())
    }
}

/// Writes the tables of one or more traces as `TABLE.parquet` files in a directory.
pub struct ParquetExporter {
    tables: Vec<Table>,
    dir: std::path::PathBuf,
    stats: TableStats,
}

impl std::fmt::Debug for ParquetExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetExporter")
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl ParquetExporter {
    /// Creates (or truncates) `events.parquet` … `steps.parquet` in `dir`.
    pub fn create(dir: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let mut tables = Vec::new();
        let mut files = Vec::new();
        for (index, name) in TABLES.iter().enumerate() {
            let path = dir.join(format!("{name}.parquet"));
            let schema = arrow_schema(index);
            let props = WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .build();
            let writer = ArrowWriter::try_new(File::create(&path)?, schema.clone(), Some(props))
                .map_err(io::Error::other)?;
            tables.push(Table {
                schema,
                writer,
                builders: Table::builders(index),
                buffered: 0,
            });
            files.push(path);
        }
        Ok(ParquetExporter {
            tables,
            dir: dir.to_owned(),
            stats: TableStats {
                rows: [0; 5],
                files,
                ..TableStats::default()
            },
        })
    }

    /// Adds the rows of one trace file.
    pub fn add_path(&mut self, path: &Path) -> Result<(), ExportError> {
        read_rows(path, self)
    }

    /// Writes the analysis tables (`analysis_temporal.parquet` …, see
    /// [`super::analysis`]) of `report` into the same directory, one row group each.
    pub fn add_analysis(&mut self, report: &analysis::Report) -> io::Result<()> {
        let tables = analysis_rows(report);
        for (index, rows) in tables.iter().enumerate() {
            let path = self.dir.join(format!("{}.parquet", ANALYSIS_TABLES[index]));
            let schema = analysis_arrow_schema(index);
            let mut builders: Vec<Builder> = ANALYSIS_SCHEMAS[index]
                .iter()
                .map(|c| match c.kind {
                    Kind::Int => Builder::Int(Int64Builder::new()),
                    Kind::Float => Builder::Float(Float64Builder::new()),
                    Kind::Text => Builder::Text(StringBuilder::new()),
                })
                .collect();
            for row in rows {
                for (builder, cell) in builders.iter_mut().zip(row) {
                    builder.append(cell);
                }
            }
            let columns: Vec<ArrayRef> = builders.iter_mut().map(Builder::finish).collect();
            let batch = RecordBatch::try_new(schema.clone(), columns).map_err(io::Error::other)?;
            let props = WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .build();
            let mut writer = ArrowWriter::try_new(File::create(&path)?, schema, Some(props))
                .map_err(io::Error::other)?;
            writer.write(&batch).map_err(io::Error::other)?;
            writer.close().map_err(io::Error::other)?;
            self.stats.analysis_rows[index] = rows.len() as u64;
            self.stats.files.push(path);
        }
        Ok(())
    }

    /// Writes the last row groups and the footers; returns the row counts.
    pub fn finish(mut self) -> io::Result<TableStats> {
        for table in &mut self.tables {
            table.flush()?;
        }
        for table in self.tables {
            table.writer.close().map_err(io::Error::other)?;
        }
        Ok(self.stats)
    }
}

impl RowSink for ParquetExporter {
    fn row(&mut self, table: usize, cells: &[Cell]) -> io::Result<()> {
        let target = &mut self.tables[table];
        for (builder, cell) in target.builders.iter_mut().zip(cells) {
            builder.append(cell);
        }
        target.buffered += 1;
        self.stats.rows[table] += 1;
        if target.buffered >= ROW_GROUP_ROWS {
            target.flush()?;
        }
        Ok(())
    }
}
