//! A wrong query names the position of the offending text (line, column and a caret),
//! for syntax errors and for unknown tables and columns.

use query::{Engine, OutputFormat, QueryError, QueryOptions, Source};

fn engine() -> (Engine, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("query-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rank0.json");
    std::fs::write(
        &path,
        r#"{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7,
            "ts": 5.0, "dur": 10, "args": {"stream": 7}}]}"#,
    )
    .unwrap();
    (
        Engine::new(Source::Traces(vec![path]), &QueryOptions::default()).unwrap(),
        dir,
    )
}

fn error(engine: &Engine, sql: &str) -> (String, Option<(u64, u64)>) {
    match engine.run(sql, OutputFormat::Csv, &mut Vec::new()) {
        Err(err @ QueryError::Sql { .. }) => {
            let QueryError::Sql { position, .. } = &err else {
                unreachable!()
            };
            (err.to_string(), *position)
        }
        other => panic!("{sql}: expected a SQL error, got {other:?}"),
    }
}

#[test]
fn sql_errors_point_at_the_query_position() {
    let (engine, dir) = engine();
    let (text, position) = error(&engine, "SELECT name\nFORM kernels");
    // `FORM` reads as an alias of `name`; then `kernels` is where the statement should end.
    assert_eq!(position, Some((2, 6)), "{text}");
    assert!(text.contains("found: kernels\n"), "{text}");
    assert!(text.ends_with("    FORM kernels\n         ^"), "{text}");

    let (text, position) = error(&engine, "SELECT nme, dur_ns FROM kernels");
    assert_eq!(position, Some((1, 8)), "{text}");
    assert!(text.contains("nme"), "{text}");
    assert!(
        text.ends_with("    SELECT nme, dur_ns FROM kernels\n           ^"),
        "{text}"
    );

    let (text, position) = error(&engine, "SELECT name FROM kernals");
    assert!(text.contains("kernals"), "{text}");
    assert_eq!(position, Some((1, 18)), "{text}");

    // A correct query still runs.
    let mut out = Vec::new();
    engine
        .run(
            "SELECT name, dur_ns, rank FROM kernels",
            OutputFormat::Csv,
            &mut out,
        )
        .unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "name,dur_ns,rank\ngemm,10000,0\n"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
