//! Column buffers of one table being written, flushed to Parquet a row group at a time.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{
    ArrayRef, BooleanArray, Float32Array, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringArray,
};
use arrow_schema::{Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use crate::error::NeuronError;

/// Rows per row group written.
pub const ROW_GROUP_ROWS: usize = 64 * 1024;

/// A column type as the schema reference gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// `integer (int64)`.
    I64,
    /// `integer (int32)`.
    I32,
    /// `number (float)`.
    F32,
    /// `string`.
    Str,
    /// `boolean`.
    Bool,
    /// `array of string`.
    StrList,
}

impl Ty {
    /// The `SchemaFields.field_type` text.
    pub fn schema_text(self) -> &'static str {
        match self {
            Ty::I64 => "integer (int64)",
            Ty::I32 => "integer (int32)",
            Ty::F32 => "number (float)",
            Ty::Str => "string",
            Ty::Bool => "boolean",
            Ty::StrList => "array of string",
        }
    }
}

/// One column's values (the variant matches its [`Ty`]).
#[derive(Debug)]
enum Values {
    Int(Vec<Option<i64>>),
    Float(Vec<Option<f64>>),
    Str(Vec<Option<String>>),
    Bool(Vec<Option<bool>>),
    List(Vec<Option<Vec<String>>>),
}

/// A value for [`TableBuf::push`].
#[derive(Clone, Debug, PartialEq)]
pub enum V {
    /// Null.
    Null,
    /// An integer.
    I(i64),
    /// A number.
    F(f64),
    /// A string.
    S(String),
    /// A boolean.
    B(bool),
    /// A list of strings.
    L(Vec<String>),
}

/// A column of a written table: name, type, unit, required.
pub type ColumnSpec = (&'static str, Ty, &'static str, bool);

/// A table being written: its spec, buffered rows and the Parquet writer.
pub struct TableBuf {
    /// The table name.
    pub name: &'static str,
    /// Its columns.
    pub spec: &'static [ColumnSpec],
    values: Vec<Values>,
    rows: usize,
    total_rows: u64,
    writer: Option<ArrowWriter<File>>,
    path: PathBuf,
}

impl std::fmt::Debug for TableBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableBuf")
            .field("name", &self.name)
            .field("rows", &self.rows)
            .finish()
    }
}

impl TableBuf {
    /// A table written to `dir/<name>.parquet` (created at its first flush).
    pub fn new(dir: &Path, name: &'static str, spec: &'static [ColumnSpec]) -> Self {
        TableBuf {
            name,
            spec,
            values: spec.iter().map(|c| empty(c.1)).collect(),
            rows: 0,
            total_rows: 0,
            writer: None,
            path: dir.join(format!("{name}.parquet")),
        }
    }

    /// Appends a row: `(column, value)` pairs; columns not given are null.
    pub fn push(&mut self, row: &[(&str, V)]) -> Result<(), NeuronError> {
        for (i, (name, _, _, _)) in self.spec.iter().enumerate() {
            let value = row
                .iter()
                .find(|(c, _)| c == name)
                .map_or(&V::Null, |(_, v)| v);
            match (&mut self.values[i], value) {
                (Values::Int(v), V::I(x)) => v.push(Some(*x)),
                (Values::Float(v), V::F(x)) => v.push(Some(*x)),
                (Values::Float(v), V::I(x)) => v.push(Some(*x as f64)),
                (Values::Str(v), V::S(x)) => v.push(Some(x.clone())),
                (Values::Bool(v), V::B(x)) => v.push(Some(*x)),
                (Values::List(v), V::L(x)) => v.push(Some(x.clone())),
                (Values::Int(v), _) => v.push(None),
                (Values::Float(v), _) => v.push(None),
                (Values::Str(v), _) => v.push(None),
                (Values::Bool(v), _) => v.push(None),
                (Values::List(v), _) => v.push(None),
            }
        }
        self.rows += 1;
        self.total_rows += 1;
        if self.rows >= ROW_GROUP_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), NeuronError> {
        if self.rows == 0 {
            return Ok(());
        }
        let arrays: Vec<ArrayRef> = self
            .spec
            .iter()
            .zip(self.values.iter_mut())
            .map(|(c, values)| to_array(c.1, std::mem::replace(values, empty(c.1))))
            .collect();
        let schema = Arc::new(Schema::new(
            self.spec
                .iter()
                .zip(&arrays)
                .map(|(c, a)| Field::new(c.0, a.data_type().clone(), true))
                .collect::<Vec<_>>(),
        ));
        let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(|e| self.error(e))?;
        if self.writer.is_none() {
            let file = File::create(&self.path).map_err(|e| NeuronError::io(&self.path, e))?;
            let props = WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
                .build();
            let writer =
                ArrowWriter::try_new(file, schema, Some(props)).map_err(|e| self.error(e))?;
            self.writer = Some(writer);
        }
        let writer = self.writer.as_mut().expect("created above");
        let result = writer.write(&batch).and_then(|()| writer.flush());
        result.map_err(|e| self.error(e))?;
        self.rows = 0;
        Ok(())
    }

    /// Writes what is buffered and closes the file; a table without rows writes no file
    /// (the layout has a table only when the profile holds such data). Returns the rows.
    pub fn finish(mut self) -> Result<u64, NeuronError> {
        self.flush()?;
        if let Some(writer) = self.writer.take() {
            writer.close().map_err(|e| self.error(e))?;
        }
        Ok(self.total_rows)
    }

    fn error(&self, e: impl ToString) -> NeuronError {
        NeuronError::Parquet {
            file: self.path.clone(),
            table: self.name.to_owned(),
            row_group: None,
            message: e.to_string(),
        }
    }
}

fn empty(ty: Ty) -> Values {
    match ty {
        Ty::I64 | Ty::I32 => Values::Int(Vec::new()),
        Ty::F32 => Values::Float(Vec::new()),
        Ty::Str => Values::Str(Vec::new()),
        Ty::Bool => Values::Bool(Vec::new()),
        Ty::StrList => Values::List(Vec::new()),
    }
}

fn to_array(ty: Ty, values: Values) -> ArrayRef {
    match (ty, values) {
        (Ty::I32, Values::Int(v)) => Arc::new(Int32Array::from(
            v.into_iter()
                .map(|x| x.map(|x| x.clamp(i32::MIN.into(), i32::MAX.into()) as i32))
                .collect::<Vec<_>>(),
        )),
        (_, Values::Int(v)) => Arc::new(Int64Array::from(v)),
        (Ty::F32, Values::Float(v)) => Arc::new(Float32Array::from(
            v.into_iter()
                .map(|x| x.map(|x| x as f32))
                .collect::<Vec<_>>(),
        )),
        (_, Values::Float(v)) => Arc::new(Float64Array::from(v)),
        (_, Values::Str(v)) => Arc::new(StringArray::from(v)),
        (_, Values::Bool(v)) => Arc::new(BooleanArray::from(v)),
        (_, Values::List(v)) => {
            let mut builder = ListBuilder::new(StringBuilder::new());
            for row in v {
                match row {
                    Some(items) => {
                        for item in items {
                            builder.values().append_value(item);
                        }
                        builder.append(true);
                    }
                    None => builder.append(false),
                }
            }
            Arc::new(builder.finish())
        }
    }
}
