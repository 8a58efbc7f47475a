//! Profile folders for tests, written column by column with Arrow and Parquet directly
//! (not with this crate's writer), with the table and field names and types of the
//! published schema (`profile-schema-reference.rst`, schema 7.4.0).
#![allow(dead_code)]

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{
    ArrayRef, BooleanArray, Float32Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

/// A column of integers (`integer (int64)`).
pub fn ints(values: &[i64]) -> ArrayRef {
    Arc::new(Int64Array::from(values.to_vec()))
}

/// A column of optional integers.
pub fn opt_ints(values: &[Option<i64>]) -> ArrayRef {
    Arc::new(Int64Array::from(values.to_vec()))
}

/// A column of `integer (int32)`.
pub fn ints32(values: &[i32]) -> ArrayRef {
    Arc::new(Int32Array::from(values.to_vec()))
}

/// A column of `number (float)`.
pub fn floats(values: &[f32]) -> ArrayRef {
    Arc::new(Float32Array::from(values.to_vec()))
}

/// A column of strings.
pub fn strs(values: &[&str]) -> ArrayRef {
    Arc::new(StringArray::from(values.to_vec()))
}

/// A column of optional strings.
pub fn opt_strs(values: &[Option<&str>]) -> ArrayRef {
    Arc::new(StringArray::from(values.to_vec()))
}

/// A column of booleans.
pub fn bools(values: &[bool]) -> ArrayRef {
    Arc::new(BooleanArray::from(values.to_vec()))
}

/// A column of `array of string`.
pub fn lists(values: &[&[&str]]) -> ArrayRef {
    let mut builder = ListBuilder::new(StringBuilder::new());
    for row in values {
        for v in *row {
            builder.values().append_value(v);
        }
        builder.append(true);
    }
    Arc::new(builder.finish())
}

/// Writes `dir/<file>` with the columns, `row_group_rows` rows per row group.
pub fn write_table(dir: &Path, file: &str, columns: Vec<(&str, ArrayRef)>, row_group_rows: usize) {
    std::fs::create_dir_all(dir).unwrap();
    let schema = Arc::new(Schema::new(
        columns
            .iter()
            .map(|(name, a)| Field::new(*name, a.data_type().clone(), true))
            .collect::<Vec<_>>(),
    ));
    let batch = RecordBatch::try_new(
        schema.clone(),
        columns.into_iter().map(|(_, a)| a).collect(),
    )
    .unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(row_group_rows.max(1)))
        .build();
    let mut writer =
        ArrowWriter::try_new(File::create(dir.join(file)).unwrap(), schema, Some(props)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

/// The schema reference's type text of an Arrow type.
fn type_text(t: &DataType) -> &'static str {
    match t {
        DataType::Int64 => "integer (int64)",
        DataType::Int32 => "integer (int32)",
        DataType::Float32 | DataType::Float64 => "number (float)",
        DataType::Boolean => "boolean",
        DataType::List(_) => "array of string",
        _ => "string",
    }
}

/// Writes `SchemaFields` declaring every column of every table in `dir` (as a profile
/// does), except the `(table, column)` pairs in `undeclared`.
pub fn declare_schema(dir: &Path, undeclared: &[(&str, &str)]) {
    let mut rows: Vec<(String, String, &'static str)> = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        let table = match name.rsplit_once('_') {
            Some((t, n)) if n.bytes().all(|b| b.is_ascii_digit()) => t.to_owned(),
            _ => name,
        };
        let file = File::open(&path).unwrap();
        let reader =
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
        for field in reader.schema().fields() {
            let row = (
                table.clone(),
                field.name().clone(),
                type_text(field.data_type()),
            );
            if !rows.contains(&row)
                && !undeclared.contains(&(table.as_str(), field.name().as_str()))
            {
                rows.push(row);
            }
        }
    }
    let col = |f: &dyn Fn(&(String, String, &'static str)) -> String| -> Vec<String> {
        rows.iter().map(f).collect()
    };
    let as_refs = |v: &[String]| -> ArrayRef { Arc::new(StringArray::from(v.to_vec())) };
    let tables = col(&|r| r.0.clone());
    let fields = col(&|r| r.1.clone());
    let types = col(&|r| r.2.to_owned());
    let descriptions = col(&|r| format!("{}.{} (test)", r.0, r.1));
    write_table(
        dir,
        "SchemaFields.parquet",
        vec![
            ("table_name", as_refs(&tables)),
            ("table_description", as_refs(&tables)),
            ("field_name", as_refs(&fields)),
            ("field_description", as_refs(&descriptions)),
            ("field_type", as_refs(&types)),
            (
                "field_required",
                Arc::new(BooleanArray::from(vec![false; rows.len()])),
            ),
        ],
        1 << 16,
    );
}

/// One `SystemProfileEvents` row.
#[derive(Clone, Debug)]
pub struct Spe {
    pub name: &'static str,
    pub start_ns: i64,
    pub end_ns: i64,
    pub source: &'static str,
    pub pid: i64,
    pub tid: i64,
    pub nc: Option<i64>,
    pub pcore: Option<i64>,
    pub worker: Option<i64>,
    pub flows: &'static [&'static str],
    pub stream: Option<&'static str>,
    pub extra: Option<&'static str>,
}

impl Spe {
    /// A framework (host) event.
    pub fn framework(name: &'static str, start_ns: i64, end_ns: i64) -> Spe {
        Spe {
            name,
            start_ns,
            end_ns,
            source: "framework",
            pid: 4242,
            tid: 4242,
            nc: None,
            pcore: None,
            worker: None,
            flows: &[],
            stream: None,
            extra: None,
        }
    }
}

/// Writes `SystemProfileEvents` (as `<file>`), ids from 1.
pub fn write_events(dir: &Path, file: &str, rows: &[Spe], row_group_rows: usize) {
    let n = rows.len() as i64;
    write_table(
        dir,
        file,
        vec![
            ("id", ints(&(1..=n).collect::<Vec<_>>())),
            (
                "name",
                strs(&rows.iter().map(|r| r.name).collect::<Vec<_>>()),
            ),
            (
                "start_ts",
                ints(&rows.iter().map(|r| r.start_ns).collect::<Vec<_>>()),
            ),
            (
                "end_ts",
                ints(&rows.iter().map(|r| r.end_ns).collect::<Vec<_>>()),
            ),
            (
                "duration_ns",
                ints(
                    &rows
                        .iter()
                        .map(|r| r.end_ns - r.start_ns)
                        .collect::<Vec<_>>(),
                ),
            ),
            (
                "trace_event_source",
                strs(&rows.iter().map(|r| r.source).collect::<Vec<_>>()),
            ),
            ("instance_id", strs(&vec!["i-0test"; rows.len()])),
            (
                "process_id",
                ints(&rows.iter().map(|r| r.pid).collect::<Vec<_>>()),
            ),
            (
                "thread_id",
                ints(&rows.iter().map(|r| r.tid).collect::<Vec<_>>()),
            ),
            (
                "nc_idx",
                opt_ints(&rows.iter().map(|r| r.nc).collect::<Vec<_>>()),
            ),
            (
                "pcore_idx",
                opt_ints(&rows.iter().map(|r| r.pcore).collect::<Vec<_>>()),
            ),
            (
                "worker_gid",
                opt_ints(&rows.iter().map(|r| r.worker).collect::<Vec<_>>()),
            ),
            (
                "flow_id",
                lists(&rows.iter().map(|r| r.flows).collect::<Vec<_>>()),
            ),
            (
                "framework_stream_id",
                opt_strs(&rows.iter().map(|r| r.stream).collect::<Vec<_>>()),
            ),
            (
                "extra_attributes_json",
                opt_strs(&rows.iter().map(|r| r.extra).collect::<Vec<_>>()),
            ),
        ],
        row_group_rows,
    );
}

/// Writes `Metadata` with the given schema version (required fields of 7.4.0).
pub fn write_metadata(dir: &Path, version: &str, neuroncore_idx: i64, first_hw_ns: i64) {
    write_table(
        dir,
        "Metadata.parquet",
        vec![
            ("profile_schema_version", strs(&[version])),
            ("ntff_version", ints32(&[2])),
            ("num_physical_cores", ints32(&[1])),
            ("vnc_enabled", bools(&[false])),
            ("first_hw_timestamp", ints(&[first_hw_ns])),
            ("last_hw_timestamp", ints(&[first_hw_ns + 10_000])),
            ("first_ts", strs(&["2026-12-07T00:00:00Z"])),
            ("last_ts", strs(&["2026-12-07T00:00:01Z"])),
            ("dma_ddr_bandwidth", floats(&[1.0e11])),
            ("hbm_ddr_bandwidth", floats(&[2.9e12])),
            ("tensor_engine_num_rows", ints(&[128])),
            ("tensor_engine_num_cols", ints(&[128])),
            ("neuroncore_clock_freq", floats(&[2.8])),
            ("ticks_per_nanosec", ints(&[1])),
            ("instance_type", strs(&["trn2.48xlarge"])),
            ("neuroncore_idx", ints(&[neuroncore_idx])),
        ],
        16,
    );
}
