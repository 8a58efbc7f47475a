//! A damaged rank file stops a strict query with its file and byte offset; with
//! `lenient` its readable part is queried and the damage is reported (file, byte offset,
//! events skipped) in the outcome and in the `ranks` table.

use query::{Engine, OutputFormat, QueryError, QueryOptions, Source};

const GOOD: &str = r#"{"distributedInfo": {"rank": 0, "world_size": 2}, "traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 5.0, "dur": 10},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20.0, "dur": 10}]}"#;

// Rank 1: its second event has a string `dur`, and the file is cut after the third.
const DAMAGED: &str = r#"{"distributedInfo": {"rank": 1, "world_size": 2}, "traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 5.0, "dur": 10},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 9.0, "dur": "x"},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 30.0, "dur": 10},
  {"ph": "X", "cat": "ker"#;

#[test]
fn damaged_rank_is_reported_and_read_with_lenient() {
    let dir = std::env::temp_dir().join(format!("query-damage-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("rank0.json");
    let damaged = dir.join("rank1.json");
    std::fs::write(&good, GOOD).unwrap();
    std::fs::write(&damaged, DAMAGED).unwrap();
    let files = vec![good.clone(), damaged.clone()];
    let sql = "SELECT rank, COUNT(*) AS kernels FROM kernels GROUP BY rank ORDER BY rank";

    let strict = Engine::new(Source::Traces(files.clone()), &QueryOptions::default()).unwrap();
    let err = strict
        .run(sql, OutputFormat::Csv, &mut Vec::new())
        .unwrap_err();
    assert!(matches!(err, QueryError::Engine(_)), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("rank1.json: byte "), "{text}");
    assert!(text.contains("event #1"), "{text}");

    let options = QueryOptions {
        lenient: true,
        ..QueryOptions::default()
    };
    let lenient = Engine::new(Source::Traces(files), &options).unwrap();
    let mut out = Vec::new();
    let outcome = lenient.run(sql, OutputFormat::Csv, &mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "rank,kernels\n0,2\n1,2\n");
    assert_eq!(outcome.files_read, 2);
    assert_eq!(outcome.damaged.len(), 1);
    let report = &outcome.damaged[0];
    assert_eq!((report.rank, report.events_skipped), (1, 1));
    assert!(
        report
            .damage
            .iter()
            .any(|d| d.contains("rank1.json: byte ") && d.contains("`dur`")),
        "{:?}",
        report.damage
    );
    assert!(
        report.damage.iter().any(|d| d.contains("truncated")),
        "{:?}",
        report.damage
    );

    let mut out = Vec::new();
    lenient
        .run(
            "SELECT rank, events, events_skipped, damage IS NOT NULL AS damaged FROM ranks ORDER BY rank",
            OutputFormat::Csv,
            &mut out,
        )
        .unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "rank,events,events_skipped,damaged\n0,2,0,false\n1,2,1,true\n"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
