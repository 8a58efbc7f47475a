//! The Parquet tables read back with the `parquet`/`arrow` crates: the same row counts
//! as the CSV tables of the same inputs, the documented schema, and values that match.

mod common;

use std::fs::File;

use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
use exporters::tables::{parquet::arrow_schema, TABLES};
use exporters::{CsvExporter, ParquetExporter};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fn read(path: &std::path::Path) -> Vec<RecordBatch> {
    ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap())
        .unwrap()
        .build()
        .unwrap()
        .map(|batch| batch.unwrap())
        .collect()
}

#[test]
fn parquet_tables_read_back_with_row_counts_and_values() {
    let shared = common::shared_dir();
    let inputs = [
        shared.join("torch-2.15/gloo_2rank-rank0.pt.trace.json.gz"),
        shared.join("torch-2.15/python_privateuse1_neuron.pt.trace.json.gz"),
        shared.join("hta/amd_mi250_train.json.gz"),
    ];
    let dir = std::env::temp_dir().join(format!("exporters-parquet-{}", std::process::id()));
    let mut parquet = ParquetExporter::create(&dir.join("parquet")).unwrap();
    let mut csv = CsvExporter::create(&dir.join("csv")).unwrap();
    for input in &inputs {
        parquet.add_path(input).unwrap();
        csv.add_path(input).unwrap();
    }
    let stats = parquet.finish().unwrap();
    let csv_stats = csv.finish().unwrap();
    assert_eq!(stats.rows, csv_stats.rows);
    for (index, table) in TABLES.iter().enumerate() {
        let batches = read(&dir.join("parquet").join(format!("{table}.parquet")));
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        assert_eq!(rows as u64, stats.rows[index], "{table}: rows");
        if let Some(batch) = batches.first() {
            assert_eq!(batch.schema(), arrow_schema(index), "{table}: schema");
        }
    }
    // Steps: rank 0's ProfilerStep numbers and positive durations, as in the CSV.
    let steps = read(&dir.join("parquet/steps.parquet"));
    let batch = &steps[0];
    let column = |name: &str| batch.column(batch.schema().index_of(name).unwrap()).clone();
    let rank = column("rank");
    let rank = rank.as_any().downcast_ref::<Int64Array>().unwrap();
    assert_eq!(rank.value(0), 0);
    let dur = column("dur_ns");
    let dur = dur.as_any().downcast_ref::<Int64Array>().unwrap();
    assert!((0..dur.len()).all(|i| dur.value(i) > 0));
    let file = column("file");
    let file = file.as_any().downcast_ref::<StringArray>().unwrap();
    assert!(file.value(0).ends_with("gloo_2rank-rank0.pt.trace.json.gz"));
    let csv_steps = std::fs::read_to_string(dir.join("csv/steps.csv")).unwrap();
    let first = csv_steps.lines().nth(1).unwrap();
    let step = column("step");
    let step = step.as_any().downcast_ref::<Int64Array>().unwrap();
    assert!(first.contains(&format!(",{},", step.value(0))), "{first}");
    assert!(first.ends_with(&format!(",{}", dur.value(0))), "{first}");
    std::fs::remove_dir_all(&dir).unwrap();
}
