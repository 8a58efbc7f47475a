//! A wrong query names the position of the offending text (line, column and a caret),
//! for syntax errors and for unknown tables and columns (in any clause).

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

    // The engine gives no span for a column unknown in GROUP BY or ORDER BY: the
    // column is found in the query (not in the string literal or the comment).
    let sql = "SELECT name, count(*) AS n FROM kernels -- by nme\n\
               WHERE name <> 'nme' GROUP BY nme";
    let (text, position) = error(&engine, sql);
    assert_eq!(position, Some((2, 30)), "{text}");
    // Selected and in the input, `kernels.name` is listed once.
    assert_eq!(text.matches("kernels.name,").count(), 1, "{text}");
    let (text, position) = error(&engine, "SELECT name FROM kernels ORDER BY Dur");
    assert_eq!(position, Some((1, 35)), "{text}");

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
