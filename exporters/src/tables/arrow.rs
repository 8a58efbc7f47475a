//! Rows into Arrow record batches: the Parquet writers and the SQL engine (crate `query`)
//! both build their batches here, from a projection of a table's columns.

use std::sync::Arc;

use arrow_array::builder::{Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};

use super::{Value, RANK_COLUMN, SCHEMAS};

/// The Arrow field of column `column` of table `table`.
pub fn field(table: usize, column: usize) -> Field {
    let c = &SCHEMAS[table][column];
    let kind = if c.int {
        DataType::Int64
    } else {
        DataType::Utf8
    };
    Field::new(c.name, kind, true)
}

/// The column order of `table` as SQL sees it (`neuronprof query`, and the Parquet
/// dataset with its `rank=R` partition): every column of [`SCHEMAS`] but `rank`, then
/// `rank` last.
pub fn sql_columns(table: usize) -> Vec<usize> {
    let mut columns: Vec<usize> = (0..SCHEMAS[table].len())
        .filter(|&c| c != RANK_COLUMN)
        .collect();
    columns.push(RANK_COLUMN);
    columns
}

/// The Arrow schema of `columns` (indices into [`SCHEMAS`]`[table]`).
pub fn schema_of(table: usize, columns: &[usize]) -> SchemaRef {
    Arc::new(Schema::new(
        columns.iter().map(|&c| field(table, c)).collect::<Vec<_>>(),
    ))
}

enum Builder {
    Int(Int64Builder),
    Text(StringBuilder),
}

/// Builds record batches of some columns of one table from rows in [`SCHEMAS`] order.
pub struct BatchBuilder {
    table: usize,
    columns: Vec<usize>,
    schema: SchemaRef,
    builders: Vec<Builder>,
    rows: usize,
}

impl std::fmt::Debug for BatchBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchBuilder")
            .field("table", &self.table)
            .field("columns", &self.columns)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl BatchBuilder {
    /// A builder of `columns` (indices into [`SCHEMAS`]`[table]`, in the batch's order).
    pub fn new(table: usize, columns: Vec<usize>) -> Self {
        let schema = schema_of(table, &columns);
        let builders = columns
            .iter()
            .map(|&c| {
                if SCHEMAS[table][c].int {
                    Builder::Int(Int64Builder::new())
                } else {
                    Builder::Text(StringBuilder::new())
                }
            })
            .collect();
        BatchBuilder {
            table,
            columns,
            schema,
            builders,
            rows: 0,
        }
    }

    /// The schema of the batches.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The table.
    pub fn table(&self) -> usize {
        self.table
    }

    /// Whether column `column` (index into [`SCHEMAS`]`[table]`) is built.
    pub fn has_column(&self, column: usize) -> bool {
        self.columns.contains(&column)
    }

    /// Rows appended since the last [`BatchBuilder::finish`].
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether no row was appended since the last [`BatchBuilder::finish`].
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Appends one row (all of the table's values, in [`SCHEMAS`] order).
    pub fn append(&mut self, values: &[Value<'_>]) {
        for (builder, &column) in self.builders.iter_mut().zip(&self.columns) {
            match (builder, &values[column]) {
                (Builder::Int(b), Value::Int(v)) => b.append_option(*v),
                (Builder::Text(b), Value::Text(v)) => b.append_option(v.as_deref()),
                (Builder::Int(b), Value::Text(_)) => b.append_null(),
                (Builder::Text(b), Value::Int(v)) => b.append_option(v.map(|v| v.to_string())),
            }
        }
        self.rows += 1;
    }

    /// The rows appended so far as one batch; the builder starts empty again.
    pub fn finish(&mut self) -> Result<RecordBatch, ArrowError> {
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
        let rows = std::mem::take(&mut self.rows);
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows)),
        )
    }
}
