//! The Parquet dataset reads back with the `parquet`/`arrow` crates: the same row counts
//! as the CSV tables of the same inputs, the documented schema (without `rank`, which is
//! the `rank=R` directory), and values that match.

mod common;

use std::fs::File;

use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
use exporters::tables::arrow::schema_of;
use exporters::tables::{RANK_COLUMN, SCHEMAS, TABLES};
use exporters::{CsvExporter, ParquetExporter};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// Every `part-*.parquet` under `table_dir/rank=*/`.
fn parts(table_dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut parts = Vec::new();
    for rank in std::fs::read_dir(table_dir).unwrap() {
        for part in std::fs::read_dir(rank.unwrap().path()).unwrap() {
            parts.push(part.unwrap().path());
        }
    }
    assert!(!parts.is_empty(), "{}", table_dir.display());
    parts
}

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
    // Ranks: gloo rank 0 from distributedInfo, the others by position (1, 2) unless
    // they declare one.
    for (index, table) in TABLES.iter().enumerate() {
        let mut rows = 0;
        for part in parts(&dir.join("parquet").join(table)) {
            let batches = read(&part);
            rows += batches.iter().map(|b| b.num_rows()).sum::<usize>();
            if let Some(batch) = batches.first() {
                let columns: Vec<usize> = (0..SCHEMAS[index].len())
                    .filter(|&c| c != RANK_COLUMN)
                    .collect();
                assert_eq!(
                    batch.schema(),
                    schema_of(index, &columns),
                    "{table}: schema"
                );
            }
        }
        assert_eq!(rows as u64, stats.rows[index], "{table}: rows");
    }
    // Steps: rank 0's ProfilerStep numbers and positive durations, as in the CSV.
    let steps = read(&dir.join("parquet/steps/rank=0/part-0.parquet"));
    let batch = &steps[0];
    let column = |name: &str| batch.column(batch.schema().index_of(name).unwrap()).clone();
    assert!(
        batch.schema().index_of("rank").is_err(),
        "rank is the directory"
    );
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
