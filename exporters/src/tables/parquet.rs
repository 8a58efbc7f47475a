//! The tables as Parquet files (Arrow schema, Snappy, bounded row groups).

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use super::{read_rows, Cell, RowSink, TableStats, SCHEMAS, TABLES};
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

enum Builder {
    Int(Int64Builder),
    Text(StringBuilder),
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
        let columns: Vec<ArrayRef> = self
            .builders
            .iter_mut()
            .map(|b| -> ArrayRef {
                match b {
                    Builder::Int(b) => Arc::new(b.finish()),
                    Builder::Text(b) => Arc::new(b.finish()),
                }
            })
            .collect();
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
            stats: TableStats {
                rows: [0; 5],
                files,
            },
        })
    }

    /// Adds the rows of one trace file.
    pub fn add_path(&mut self, path: &Path) -> Result<(), ExportError> {
        read_rows(path, self)
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
            match (builder, cell) {
                (Builder::Int(b), Cell::Int(value)) => b.append_option(*value),
                (Builder::Text(b), Cell::Text(value)) => b.append_option(value.as_deref()),
                (Builder::Int(b), Cell::Text(_)) => b.append_null(),
                (Builder::Text(b), Cell::Int(value)) => {
                    b.append_option(value.map(|v| v.to_string()))
                }
            }
        }
        target.buffered += 1;
        self.stats.rows[table] += 1;
        if target.buffered >= ROW_GROUP_ROWS {
            target.flush()?;
        }
        Ok(())
    }
}
