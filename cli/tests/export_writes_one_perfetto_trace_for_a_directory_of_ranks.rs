//! `neuronprof export --format perfetto DIR -o OUT.pftrace` converts every rank file of
//! a directory into one valid Perfetto trace and prints what it converted and split.

mod common;

use std::process::Command;

#[test]
fn export_writes_one_perfetto_trace_for_a_directory_of_ranks() {
    let shared = common::shared_traces();
    let dir = std::env::temp_dir().join(format!("neuronprof-export-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for rank in ["two_rank-rank0.json.gz", "two_rank-rank1.json.gz"] {
        std::fs::copy(shared.join("hta").join(rank), dir.join(rank)).unwrap();
    }
    let out = dir.join("both.pftrace");
    let output = Command::new(env!("CARGO_BIN_EXE_neuronprof"))
        .args(["export", "--format", "perfetto"])
        .arg(&dir)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("converted 2 file(s)"), "{stdout}");
    assert!(stdout.contains("split: "), "{stdout}");
    assert!(
        stdout.contains(" endpoint(s) on their enclosing slice"),
        "{stdout}"
    );
    let bytes = std::fs::read(&out).unwrap();
    let summary = exporters::perfetto::validate::validate(&bytes).unwrap();
    assert!(summary.slices > 1000, "{summary:?}");
    assert!(
        stdout.contains(&format!("slices {}", summary.slices)),
        "{stdout}"
    );
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("rank 0: ") && text.contains("rank 1: "));

    // The same ranks as CSV tables.
    let tables = dir.join("tables");
    let output = Command::new(env!("CARGO_BIN_EXE_neuronprof"))
        .args(["export", "--format", "csv"])
        .arg(&dir)
        .arg("-o")
        .arg(&tables)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("kernels.csv: "), "{stdout}");
    let kernels = std::fs::read_to_string(tables.join("kernels.csv")).unwrap();
    assert!(kernels.lines().count() > 100, "{kernels:.200}");
    // The analysis results as tables too: one temporal row per rank.
    let temporal = std::fs::read_to_string(tables.join("analysis_temporal.csv")).unwrap();
    assert_eq!(temporal.lines().count(), 3, "{temporal}");
    assert!(stdout.contains("analysis_steps.csv: "), "{stdout}");

    let parquet = dir.join("parquet");
    let output = Command::new(env!("CARGO_BIN_EXE_neuronprof"))
        .args(["export", "--format", "parquet"])
        .arg(&dir)
        .arg("-o")
        .arg(&parquet)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("kernels/rank=*/: "), "{stdout}");
    assert!(stdout.contains("dataset "), "{stdout}");
    for rank in 0..2 {
        assert!(parquet
            .join(format!("events/rank={rank}/part-0.parquet"))
            .is_file());
        assert!(parquet
            .join(format!("ranks/rank={rank}/part-0.parquet"))
            .is_file());
    }
    assert!(parquet.join("analysis_insights/part-0.parquet").is_file());
    // A second run keeps both ranks as they are.
    let again = Command::new(env!("CARGO_BIN_EXE_neuronprof"))
        .args(["export", "--format", "parquet"])
        .arg(&dir)
        .arg("-o")
        .arg(&parquet)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert!(again.status.success(), "{stdout}");
    assert!(
        stdout.contains("(0 file(s) converted now, 2 kept as they were)"),
        "{stdout}"
    );

    // A usage error: an unknown format exits 2 without writing.
    let bad = Command::new(env!("CARGO_BIN_EXE_neuronprof"))
        .args(["export", "--format", "excel"])
        .arg(&dir)
        .args(["-o", "/dev/null"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}
