//! The Parquet dataset (`TABLE/rank=R/part-K.parquet`): every table gets a part per input,
//! `rank` lives in the directory name only, a re-run over the same output converts only
//! the ranks it lacks (old parts are not rewritten), and what an interrupted run left of
//! a rank is replaced when that rank is converted again.

use std::fs::File;
use std::path::{Path, PathBuf};

use exporters::tables::dataset::{partition_dir, ranks_in, write_dataset, DatasetOptions};
use exporters::tables::TABLES;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use trace_format::{Category, Event, TraceMeta, TraceWriter};

fn rank_trace(dir: &Path, rank: i64, kernels: usize) -> PathBuf {
    let base = 1_790_857_026_000_000_000;
    let mut meta = TraceMeta::kineto(Some(base));
    meta.set_distributed("nccl", rank, 4);
    let mut writer = TraceWriter::new(Vec::new(), &meta).unwrap();
    let step = Event::complete(
        Category::UserAnnotation,
        "ProfilerStep#1",
        42,
        42,
        base,
        100_000,
    );
    writer.write_event(&step).unwrap();
    for k in 0..kernels {
        let ts = base + 1_000 * k as i64;
        let kernel = Event::complete(Category::Kernel, "gemm", 0, 7, ts, 500)
            .with_arg("stream", 7i64)
            .with_arg("correlation", k as i64);
        writer.write_event(&kernel).unwrap();
    }
    let path = dir.join(format!("rank{rank}.json"));
    std::fs::write(&path, writer.finish().unwrap()).unwrap();
    path
}

fn rows(path: &Path) -> (usize, Vec<String>) {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    let names = reader
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let rows = reader.build().unwrap().map(|b| b.unwrap().num_rows()).sum();
    (rows, names)
}

#[test]
fn dataset_adds_new_ranks_without_rewriting_old_ones() {
    let dir = std::env::temp_dir().join(format!("exporters-dataset-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("dataset");
    let first: Vec<PathBuf> = (0..2)
        .map(|r| rank_trace(&dir, r, 3 + r as usize))
        .collect();
    let options = DatasetOptions {
        threads: 2,
        lenient: false,
    };
    let outcome = write_dataset(&first, &out, &options, &|_, _| {}).unwrap();
    assert_eq!(outcome.converted.len(), 2);
    assert_eq!(outcome.rows[1], 3 + 4, "kernels of both ranks");
    assert_eq!(ranks_in(&out), vec![0, 1]);
    for (table, name) in TABLES.iter().enumerate() {
        for rank in 0..2 {
            let part = partition_dir(&out, table, rank).join("part-0.parquet");
            let (_, names) = rows(&part);
            assert!(
                !names.iter().any(|n| n == "rank"),
                "{name}: rank only in the path"
            );
            assert_eq!(names[0], "file");
        }
    }
    let (kernels, _) = rows(&partition_dir(&out, 1, 1).join("part-0.parquet"));
    assert_eq!(kernels, 4);
    let old = partition_dir(&out, 1, 0).join("part-0.parquet");
    let old_mtime = std::fs::metadata(&old).unwrap().modified().unwrap();

    // An interrupted conversion of rank 2: a kernels part but no `ranks` part.
    let stale = partition_dir(&out, 1, 2);
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("part-0.parquet"), b"not parquet").unwrap();
    std::fs::write(stale.join(".part-0.parquet.tmp"), b"half written").unwrap();
    assert_eq!(
        ranks_in(&out),
        vec![0, 1],
        "a rank without its ranks part is absent"
    );

    std::thread::sleep(std::time::Duration::from_millis(20));
    let mut all = first.clone();
    all.push(rank_trace(&dir, 2, 5));
    let outcome = write_dataset(&all, &out, &options, &|_, _| {}).unwrap();
    assert_eq!(outcome.converted.len(), 1, "only rank 2 is new");
    assert_eq!(outcome.kept.len(), 2);
    assert_eq!(outcome.converted[0].rank.rank, 2);
    assert_eq!(ranks_in(&out), vec![0, 1, 2]);
    assert_eq!(
        std::fs::metadata(&old).unwrap().modified().unwrap(),
        old_mtime,
        "rank 0 was not rewritten"
    );
    let (kernels, _) = rows(&stale.join("part-0.parquet"));
    assert_eq!(kernels, 5, "the stale part was replaced");
    assert!(!stale.join(".part-0.parquet.tmp").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
