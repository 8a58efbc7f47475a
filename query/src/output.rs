//! Writing a query's result: an aligned table, CSV, JSON or Parquet.

use std::io::Write;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::json::writer::JsonArray;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::Compression;
use datafusion::parquet::file::properties::WriterProperties;

use crate::QueryError;

/// How `neuronprof query` writes its result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutputFormat {
    /// Aligned columns with a header (the rows are collected first).
    #[default]
    Table,
    /// CSV with a header row (RFC 4180 quoting).
    Csv,
    /// A JSON array of objects, one per row; nulls written as `null`.
    Json,
    /// A Parquet file (Snappy): needs a file, not a terminal.
    Parquet,
}

impl OutputFormat {
    /// Parses a `--format` value.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "table" => OutputFormat::Table,
            "csv" => OutputFormat::Csv,
            "json" => OutputFormat::Json,
            "parquet" => OutputFormat::Parquet,
            _ => return None,
        })
    }
}

type Json<'w> = datafusion::arrow::json::Writer<&'w mut (dyn Write + Send), JsonArray>;

/// Writes batches as they come.
pub(crate) enum Writer<'w> {
    Table {
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
        out: &'w mut (dyn Write + Send),
    },
    Csv(
        datafusion::arrow::csv::Writer<&'w mut (dyn Write + Send)>,
        u64,
    ),
    Json(Box<Json<'w>>, u64),
    Parquet(ArrowWriter<&'w mut (dyn Write + Send)>, u64),
}

fn io(err: impl std::error::Error + Send + Sync + 'static) -> QueryError {
    QueryError::Io(std::io::Error::other(err))
}

impl<'w> Writer<'w> {
    pub(crate) fn new(
        format: OutputFormat,
        schema: SchemaRef,
        out: &'w mut (dyn Write + Send),
    ) -> Result<Self, QueryError> {
        Ok(match format {
            OutputFormat::Table => Writer::Table {
                schema,
                batches: Vec::new(),
                out,
            },
            OutputFormat::Csv => Writer::Csv(
                datafusion::arrow::csv::WriterBuilder::new()
                    .with_header(true)
                    .build(out),
                0,
            ),
            OutputFormat::Json => Writer::Json(
                Box::new(
                    datafusion::arrow::json::WriterBuilder::new()
                        .with_explicit_nulls(true)
                        .build::<_, JsonArray>(out),
                ),
                0,
            ),
            OutputFormat::Parquet => {
                let props = WriterProperties::builder()
                    .set_compression(Compression::SNAPPY)
                    .build();
                Writer::Parquet(
                    ArrowWriter::try_new(out, schema, Some(props)).map_err(io)?,
                    0,
                )
            }
        })
    }

    pub(crate) fn write(&mut self, batch: &RecordBatch) -> Result<(), QueryError> {
        let rows = batch.num_rows() as u64;
        match self {
            Writer::Table { batches, .. } => batches.push(batch.clone()),
            Writer::Csv(w, n) => {
                w.write(batch).map_err(io)?;
                *n += rows;
            }
            Writer::Json(w, n) => {
                w.write(batch).map_err(io)?;
                *n += rows;
            }
            Writer::Parquet(w, n) => {
                w.write(batch).map_err(io)?;
                *n += rows;
            }
        }
        Ok(())
    }

    /// Finishes the output; returns the rows written.
    pub(crate) fn finish(self) -> Result<u64, QueryError> {
        match self {
            Writer::Table {
                schema,
                batches,
                out,
            } => {
                let rows = batches.iter().map(|b| b.num_rows() as u64).sum();
                let text = if batches.is_empty() {
                    datafusion::arrow::util::pretty::pretty_format_batches(&[
                        RecordBatch::new_empty(schema),
                    ])
                } else {
                    datafusion::arrow::util::pretty::pretty_format_batches(&batches)
                }
                .map_err(io)?;
                writeln!(out, "{text}")?;
                out.flush()?;
                Ok(rows)
            }
            Writer::Csv(w, n) => {
                let out = w.into_inner();
                out.flush()?;
                Ok(n)
            }
            Writer::Json(mut w, n) => {
                w.finish().map_err(io)?;
                let out = w.into_inner();
                writeln!(out)?;
                out.flush()?;
                Ok(n)
            }
            Writer::Parquet(w, n) => {
                w.close().map_err(io)?;
                Ok(n)
            }
        }
    }
}
