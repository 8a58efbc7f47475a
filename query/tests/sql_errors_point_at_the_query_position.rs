//! A wrong query names the position of the offending text (line, column and a caret),
//! for syntax errors and for unknown tables and columns (in any clause).
//!
//! The engine is read-only unless told otherwise: `COPY … TO` (writes a file),
//! `CREATE EXTERNAL TABLE` (reads any file), `INSERT`, `CREATE VIEW` and `SET` are
//! refused with an error that names the statement and `--allow-write`, and nothing is
//! written; with `allow_write` they run. (Before, any of them ran: `COPY (SELECT …) TO
//! '/any/path'` wrote the file.)

use query::{Engine, OutputFormat, QueryError, QueryOptions, Source};

/// A one-kernel trace in a new scratch folder `query-errors-NAME-PID`.
fn scratch(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("query-errors-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rank0.json");
    std::fs::write(
        &path,
        r#"{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7,
            "ts": 5.0, "dur": 10, "args": {"stream": 7}}]}"#,
    )
    .unwrap();
    (dir, path)
}

fn engine_over(trace: &std::path::Path, allow_write: bool) -> Engine {
    let options = QueryOptions {
        allow_write,
        ..QueryOptions::default()
    };
    Engine::new(Source::Traces(vec![trace.to_owned()]), &options).unwrap()
}

fn engine() -> (Engine, std::path::PathBuf) {
    let (dir, path) = scratch("position");
    (engine_over(&path, false), dir)
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

#[test]
fn writing_and_file_reading_statements_are_refused_by_default() {
    let (dir, trace) = scratch("refused");
    let engine = engine_over(&trace, false);
    let copied = dir.join("copied.csv");
    let secret = dir.join("secret.csv");
    std::fs::write(&secret, "a\n1\n").unwrap();
    for (sql, says) in [
        (
            format!("COPY (SELECT name FROM kernels) TO '{}'", copied.display()),
            "COPY",
        ),
        (
            format!(
                "CREATE EXTERNAL TABLE secret STORED AS CSV LOCATION '{}'",
                secret.display()
            ),
            "CreateExternalTable",
        ),
        ("CREATE VIEW v AS SELECT 1".to_owned(), "CreateView"),
        (
            "INSERT INTO kernels SELECT * FROM kernels".to_owned(),
            "Insert",
        ),
        (
            "SET datafusion.execution.batch_size = 1".to_owned(),
            "SetVariable",
        ),
    ] {
        let err = engine
            .run(&sql, OutputFormat::Csv, &mut Vec::new())
            .expect_err(&sql);
        assert!(matches!(err, QueryError::ReadOnly { .. }), "{sql}: {err:?}");
        let text = err.to_string();
        assert!(
            text.contains(says) && text.contains("--allow-write") && text.contains("read-only"),
            "{sql}: {text}"
        );
        assert!(
            matches!(engine.collect(&sql), Err(QueryError::ReadOnly { .. })),
            "{sql}: collect too"
        );
    }
    assert!(!copied.exists(), "COPY wrote {}", copied.display());
    // Reading the traces is what the engine is for.
    let mut out = Vec::new();
    engine
        .run("SELECT name FROM kernels", OutputFormat::Csv, &mut out)
        .unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "name\ngemm\n");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn allow_write_runs_them() {
    let (dir, trace) = scratch("allowed");
    let engine = engine_over(&trace, true);
    let copied = dir.join("copied.csv");
    let sql = format!("COPY (SELECT name FROM kernels) TO '{}'", copied.display());
    engine
        .run(&sql, OutputFormat::Csv, &mut Vec::new())
        .unwrap();
    let written = std::fs::read_to_string(&copied).unwrap();
    assert!(written.contains("gemm"), "{written}");
    std::fs::remove_dir_all(&dir).unwrap();
}
