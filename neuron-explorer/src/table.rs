//! One table, read row group by row group, with typed column access that names the
//! table, column and row group of anything wrong.

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;

use crate::error::NeuronError;

/// Rows decoded at a time inside a row group.
const BATCH_ROWS: usize = 64 * 1024;

/// One row group (or a part of one) of a table, with where it came from.
#[derive(Debug)]
pub struct Batch {
    /// The rows.
    pub rows: RecordBatch,
    /// The table.
    pub table: String,
    /// The file.
    pub file: PathBuf,
    /// The row group in the file.
    pub row_group: usize,
}

/// Reads the row groups of a table's files in order, keeping only `columns` (the
/// columns absent from a file are absent from its batches). Memory: one batch.
#[derive(Debug)]
pub struct TableReader {
    table: String,
    columns: Vec<&'static str>,
    files: Vec<PathBuf>,
    file_index: usize,
    current: Option<OpenFile>,
}

struct OpenFile {
    file: File,
    meta: ArrowReaderMetadata,
    next_row_group: usize,
    batches: Option<(
        usize,
        parquet::arrow::arrow_reader::ParquetRecordBatchReader,
    )>,
}

impl std::fmt::Debug for OpenFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenFile")
            .field("next_row_group", &self.next_row_group)
            .finish()
    }
}

impl TableReader {
    /// A reader of `files` (one table's parts) keeping `columns` (empty: all).
    pub fn new(table: &str, files: &[PathBuf], columns: &[&'static str]) -> Self {
        TableReader {
            table: table.to_owned(),
            columns: columns.to_vec(),
            files: files.to_vec(),
            file_index: 0,
            current: None,
        }
    }

    fn parquet_error(
        &self,
        file: &Path,
        row_group: Option<usize>,
        e: impl ToString,
    ) -> NeuronError {
        NeuronError::Parquet {
            file: file.to_path_buf(),
            table: self.table.clone(),
            row_group,
            message: e.to_string(),
        }
    }

    /// The next batch; `Ok(None)` at the end. After an error the reader moves on to
    /// the next row group (or file), so a lenient caller can keep reading.
    pub fn next_batch(&mut self) -> Result<Option<Batch>, NeuronError> {
        loop {
            if self.current.is_none() {
                let Some(path) = self.files.get(self.file_index).cloned() else {
                    return Ok(None);
                };
                self.file_index += 1;
                let file = File::open(&path).map_err(|e| NeuronError::io(&path, e))?;
                let meta = ArrowReaderMetadata::load(&file, Default::default())
                    .map_err(|e| self.parquet_error(&path, None, e))?;
                self.current = Some(OpenFile {
                    file,
                    meta,
                    next_row_group: 0,
                    batches: None,
                });
            }
            let path = self.files[self.file_index - 1].clone();
            let open = self.current.as_mut().expect("opened above");
            if let Some((row_group, reader)) = &mut open.batches {
                let row_group = *row_group;
                match reader.next() {
                    Some(Ok(rows)) => {
                        return Ok(Some(Batch {
                            rows,
                            table: self.table.clone(),
                            file: path,
                            row_group,
                        }))
                    }
                    Some(Err(e)) => {
                        open.batches = None;
                        return Err(self.parquet_error(&path, Some(row_group), e));
                    }
                    None => open.batches = None,
                }
                continue;
            }
            let row_groups = open.meta.metadata().num_row_groups();
            if open.next_row_group >= row_groups {
                self.current = None;
                continue;
            }
            let row_group = open.next_row_group;
            open.next_row_group += 1;
            let built = open
                .file
                .try_clone()
                .map_err(|e| NeuronError::io(&path, e))
                .and_then(|file| {
                    let builder =
                        ParquetRecordBatchReaderBuilder::new_with_metadata(file, open.meta.clone());
                    let mask =
                        projection(builder.schema(), builder.parquet_schema(), &self.columns);
                    builder
                        .with_row_groups(vec![row_group])
                        .with_projection(mask)
                        .with_batch_size(BATCH_ROWS)
                        .build()
                        .map_err(|e| NeuronError::Parquet {
                            file: path.clone(),
                            table: self.table.clone(),
                            row_group: Some(row_group),
                            message: e.to_string(),
                        })
                })?;
            open.batches = Some((row_group, built));
        }
    }
}

fn projection(
    schema: &arrow_schema::SchemaRef,
    parquet: &parquet::schema::types::SchemaDescriptor,
    columns: &[&str],
) -> ProjectionMask {
    if columns.is_empty() {
        return ProjectionMask::all();
    }
    let roots = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| columns.contains(&f.name().as_str()))
        .map(|(i, _)| i);
    ProjectionMask::roots(parquet, roots)
}

/// An integer column of any integer width.
#[derive(Debug)]
pub struct IntCol<'a>(&'a dyn Array);

impl<'a> IntCol<'a> {
    /// Wraps an array already checked to be of this kind.
    pub(crate) fn wrap(array: &'a dyn Array) -> Self {
        IntCol(array)
    }

    /// The value at `row`, `None` when null.
    pub fn get(&self, row: usize) -> Option<i64> {
        let a = self.0;
        if a.is_null(row) {
            return None;
        }
        Some(match a.data_type() {
            DataType::Int64 => a.as_primitive::<Int64Type>().value(row),
            DataType::Int32 => a.as_primitive::<Int32Type>().value(row).into(),
            DataType::Int16 => a.as_primitive::<Int16Type>().value(row).into(),
            DataType::Int8 => a.as_primitive::<Int8Type>().value(row).into(),
            DataType::UInt64 => a.as_primitive::<UInt64Type>().value(row) as i64,
            DataType::UInt32 => a.as_primitive::<UInt32Type>().value(row).into(),
            DataType::UInt16 => a.as_primitive::<UInt16Type>().value(row).into(),
            DataType::UInt8 => a.as_primitive::<UInt8Type>().value(row).into(),
            _ => return None,
        })
    }
}

/// A floating-point column (integers are taken too).
#[derive(Debug)]
pub struct FloatCol<'a>(&'a dyn Array);

impl<'a> FloatCol<'a> {
    /// Wraps an array already checked to be of this kind.
    pub(crate) fn wrap(array: &'a dyn Array) -> Self {
        FloatCol(array)
    }

    /// The value at `row`, `None` when null.
    pub fn get(&self, row: usize) -> Option<f64> {
        let a = self.0;
        if a.is_null(row) {
            return None;
        }
        match a.data_type() {
            DataType::Float64 => Some(a.as_primitive::<Float64Type>().value(row)),
            DataType::Float32 => Some(a.as_primitive::<Float32Type>().value(row).into()),
            _ => IntCol(a).get(row).map(|v| v as f64),
        }
    }
}

/// A string column (`Utf8`, `LargeUtf8` or `Utf8View`).
#[derive(Debug)]
pub struct StrCol<'a>(&'a dyn Array);

impl<'a> StrCol<'a> {
    /// Wraps an array already checked to be of this kind.
    pub(crate) fn wrap(array: &'a dyn Array) -> Self {
        StrCol(array)
    }

    /// The value at `row`, `None` when null.
    pub fn get(&self, row: usize) -> Option<&'a str> {
        let a = self.0;
        if a.is_null(row) {
            return None;
        }
        match a.data_type() {
            DataType::Utf8 => Some(a.as_string::<i32>().value(row)),
            DataType::LargeUtf8 => Some(a.as_string::<i64>().value(row)),
            DataType::Utf8View => Some(a.as_string_view().value(row)),
            _ => None,
        }
    }
}

/// A boolean column.
#[derive(Debug)]
pub struct BoolCol<'a>(&'a dyn Array);

impl<'a> BoolCol<'a> {
    /// Wraps an array already checked to be of this kind.
    pub(crate) fn wrap(array: &'a dyn Array) -> Self {
        BoolCol(array)
    }

    /// The value at `row`, `None` when null.
    pub fn get(&self, row: usize) -> Option<bool> {
        (!self.0.is_null(row)).then(|| self.0.as_boolean().value(row))
    }
}

/// A list column (of strings or integers): the values of a row as text.
#[derive(Debug)]
pub struct ListCol<'a>(&'a dyn Array);

impl<'a> ListCol<'a> {
    /// Wraps an array already checked to be of this kind.
    pub(crate) fn wrap(array: &'a dyn Array) -> Self {
        ListCol(array)
    }

    /// The values at `row` as text (empty when null).
    pub fn get(&self, row: usize) -> Vec<String> {
        let a = self.0;
        if a.is_null(row) {
            return Vec::new();
        }
        let values: ArrayRef = match a.data_type() {
            DataType::List(_) => a.as_list::<i32>().value(row),
            DataType::LargeList(_) => a.as_list::<i64>().value(row),
            _ => return Vec::new(),
        };
        let strings = StrCol(values.as_ref());
        let ints = IntCol(values.as_ref());
        (0..values.len())
            .filter_map(|i| {
                strings
                    .get(i)
                    .map(str::to_owned)
                    .or_else(|| ints.get(i).map(|v| v.to_string()))
            })
            .collect()
    }
}

fn is_int(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Int64
            | DataType::Int32
            | DataType::Int16
            | DataType::Int8
            | DataType::UInt64
            | DataType::UInt32
            | DataType::UInt16
            | DataType::UInt8
    )
}

fn is_str(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

impl Batch {
    /// Rows in the batch.
    pub fn len(&self) -> usize {
        self.rows.num_rows()
    }

    /// Whether the batch has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.num_rows() == 0
    }

    fn column(
        &self,
        name: &str,
        expected: &'static str,
        ok: impl Fn(&DataType) -> bool,
    ) -> Result<Option<&dyn Array>, NeuronError> {
        let Some(array) = self.rows.column_by_name(name) else {
            return Ok(None);
        };
        if !ok(array.data_type()) {
            return Err(NeuronError::ColumnType {
                file: self.file.clone(),
                table: self.table.clone(),
                column: name.to_owned(),
                row_group: self.row_group,
                expected,
                found: array.data_type().to_string().into(),
            });
        }
        Ok(Some(array.as_ref()))
    }

    fn required<T>(&self, name: &str, col: Option<T>) -> Result<T, NeuronError> {
        col.ok_or_else(|| NeuronError::MissingColumn {
            file: self.file.clone(),
            table: self.table.clone(),
            column: name.to_owned(),
        })
    }

    /// An integer column, `None` when absent; a wrong type is an error.
    pub fn int(&self, name: &str) -> Result<Option<IntCol<'_>>, NeuronError> {
        Ok(self.column(name, "integer", is_int)?.map(IntCol))
    }

    /// A required integer column.
    pub fn int_req(&self, name: &str) -> Result<IntCol<'_>, NeuronError> {
        let col = self.int(name)?;
        self.required(name, col)
    }

    /// A number column, `None` when absent.
    pub fn float(&self, name: &str) -> Result<Option<FloatCol<'_>>, NeuronError> {
        let ok = |t: &DataType| is_int(t) || matches!(t, DataType::Float32 | DataType::Float64);
        Ok(self.column(name, "number", ok)?.map(FloatCol))
    }

    /// A string column, `None` when absent.
    pub fn str(&self, name: &str) -> Result<Option<StrCol<'_>>, NeuronError> {
        Ok(self.column(name, "string", is_str)?.map(StrCol))
    }

    /// A required string column.
    pub fn str_req(&self, name: &str) -> Result<StrCol<'_>, NeuronError> {
        let col = self.str(name)?;
        self.required(name, col)
    }

    /// A boolean column, `None` when absent.
    pub fn bool(&self, name: &str) -> Result<Option<BoolCol<'_>>, NeuronError> {
        Ok(self
            .column(name, "boolean", |t| *t == DataType::Boolean)?
            .map(BoolCol))
    }

    /// A list column, `None` when absent.
    pub fn list(&self, name: &str) -> Result<Option<ListCol<'_>>, NeuronError> {
        let ok = |t: &DataType| matches!(t, DataType::List(_) | DataType::LargeList(_));
        Ok(self.column(name, "array of string", ok)?.map(ListCol))
    }

    /// The value of a required column at `row`, or an error naming the row.
    pub fn need<T>(&self, column: &str, row: usize, value: Option<T>) -> Result<T, NeuronError> {
        value.ok_or_else(|| NeuronError::NullValue {
            file: self.file.clone(),
            table: self.table.clone(),
            column: column.to_owned(),
            row_group: self.row_group,
            row,
        })
    }
}
