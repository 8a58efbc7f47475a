//! The ready queries of `docs/SQL.md` (`query/queries/*.sql`) run unchanged on a 16-rank
//! emulator run: `neuronprof query` over the traces and over the Parquet dataset of
//! `neuronprof export --format parquet`, Apache Spark (PySpark, `local[2]`) and DuckDB over
//! that dataset give the same rows, and the cross-rank answers equal `neuronprof
//! analyze`'s: every collective matched across ranks (arrival skew, the rank waited for),
//! the waiting each rank cost the others and the bottleneck rank, and HTA's potential
//! stragglers.
//!
//! Spark and DuckDB come from the venv `bash scripts/spark-venv` makes
//! (`target/spark-venv`, which `.ci/run` creates; `NEURONPROF_SPARK_PYTHON` overrides it)
//! and Spark needs `java`. Without them the test is skipped with a message, except in CI
//! (`CI` set), where it fails.

#[path = "../../tests/support/skip.rs"]
mod skip;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

const QUERIES: [&str; 7] = [
    "top_kernels_per_step",
    "exposed_communication",
    "last_arrival_per_collective",
    "stragglers",
    "potential_stragglers",
    "memory_peak",
    "launch_delay_percentiles",
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn spark_python() -> Option<String> {
    if let Some(python) = std::env::var_os("NEURONPROF_SPARK_PYTHON") {
        return Some(python.to_string_lossy().into_owned());
    }
    let venv = repo().join("target/spark-venv/bin/python");
    let java = Command::new("java").arg("-version").output().is_ok();
    (venv.exists() && java).then(|| venv.to_string_lossy().into_owned())
}

fn neuronprof(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_neuronprof"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "neuronprof {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

type Table = (Vec<String>, Vec<Vec<String>>);

fn parse_csv(text: &str) -> Table {
    let mut lines = text.lines().map(split);
    let header = lines.next().unwrap_or_default();
    (header, lines.collect())
}

/// One CSV line (the queries' text values hold no commas or quotes).
fn split(line: &str) -> Vec<String> {
    line.split(',')
        .map(|f| f.trim_matches('"').to_owned())
        .collect()
}

/// Whether two cells hold the same value: equal text, or numbers within 1e-9 relative.
fn same(a: &str, b: &str) -> bool {
    same_within(a, b, 1e-9)
}

/// Whether two cells hold the same value: equal text, or numbers within `tolerance`
/// relative.
fn same_within(a: &str, b: &str, tolerance: f64) -> bool {
    if a == b {
        return true;
    }
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => (x - y).abs() <= tolerance * x.abs().max(y.abs()).max(1.0),
        _ => matches!((a, b), ("true", "True") | ("false", "False")),
    }
}

fn assert_same(query: &str, what: &str, expected: &Table, got: &Table) {
    // DataFusion's `percentile_cont` quantizes its interpolation weight to steps of 1e-6
    // (datafusion-functions-aggregate, `INTERPOLATION_PRECISION`): between two values
    // it can differ from Spark's and DuckDB's exact interpolation by a millionth of their
    // gap.
    let tolerance = if query == "launch_delay_percentiles" {
        1e-6
    } else {
        1e-9
    };
    assert_eq!(expected.0, got.0, "{query}: {what}: columns");
    assert_eq!(expected.1.len(), got.1.len(), "{query}: {what}: rows");
    for (i, (e, g)) in expected.1.iter().zip(&got.1).enumerate() {
        assert!(
            e.len() == g.len() && e.iter().zip(g).all(|(a, b)| same_within(a, b, tolerance)),
            "{query}: {what}: row {i}: {e:?} != {g:?}"
        );
    }
}

fn column(table: &Table, name: &str) -> usize {
    table
        .0
        .iter()
        .position(|c| c == name)
        .unwrap_or_else(|| panic!("no column {name} in {:?}", table.0))
}

fn f64_of(cell: &str) -> f64 {
    cell.parse()
        .unwrap_or_else(|_| panic!("{cell:?} is not a number"))
}

#[test]
fn sql_queries_agree_on_spark_duckdb_and_analyze() {
    let Some(python) = spark_python() else {
        skip::skipped(
            "sql_queries_agree_on_spark_duckdb_and_analyze",
            "no Spark/DuckDB venv or no java: run `bash scripts/spark-venv` (and install a \
             Java runtime) or set NEURONPROF_SPARK_PYTHON",
        );
        return;
    };
    let dir = std::env::temp_dir().join(format!("neuronprof-sql-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let traces = dir.join("traces");
    let dataset = dir.join("dataset");
    let traces_arg = traces.to_str().unwrap();
    neuronprof(&[
        "run",
        "gpt",
        "--ranks",
        "16",
        "--steps",
        "4",
        "--detail",
        "kernels",
        "--numerics",
        "off",
        "--straggler",
        "5:3",
        // The demo's widths: with host time modeled per op, the tiny shape's steps are
        // host-bound on every rank, a 3x slower device never holds a collective up and
        // the stragglers query (HTA's rule) has no collective long enough to rank.
        "--shape",
        "demo",
        "--out",
        traces_arg,
    ]);
    neuronprof(&[
        "export",
        "--format",
        "parquet",
        traces_arg,
        "-o",
        dataset.to_str().unwrap(),
    ]);

    let queries = repo().join("query/queries");
    let files: Vec<PathBuf> = QUERIES
        .iter()
        .map(|q| queries.join(format!("{q}.sql")))
        .collect();
    let mut engines: BTreeMap<&str, BTreeMap<&str, Table>> = BTreeMap::new();
    for (query, file) in QUERIES.iter().zip(&files) {
        let sql = std::fs::read_to_string(file).unwrap();
        for (engine, source) in [("traces", &traces), ("dataset", &dataset)] {
            let csv = neuronprof(&["query", "--format", "csv", &sql, source.to_str().unwrap()]);
            engines
                .entry(engine)
                .or_default()
                .insert(query, parse_csv(&csv));
        }
    }
    for engine in ["spark", "duckdb"] {
        let out = dir.join(engine);
        let status = Command::new(&python)
            .arg(repo().join("cli/tests/sql/engines.py"))
            .args([engine, dataset.to_str().unwrap(), out.to_str().unwrap()])
            .args(&files)
            .status()
            .unwrap();
        assert!(status.success(), "{engine} failed");
        for query in QUERIES {
            let text = std::fs::read_to_string(out.join(format!("{query}.csv"))).unwrap();
            engines
                .entry(engine)
                .or_default()
                .insert(query, parse_csv(&text));
        }
    }
    let ours = &engines["traces"];
    for query in QUERIES {
        assert!(
            !ours[query].1.is_empty(),
            "{query}: no rows on the 16-rank run"
        );
        for engine in ["dataset", "spark", "duckdb"] {
            assert_same(query, engine, &ours[query], &engines[engine][query]);
        }
    }

    // The cross-rank numbers equal `neuronprof analyze`'s.
    let report: serde_json::Value =
        serde_json::from_str(&neuronprof(&["analyze", "--json", traces_arg])).unwrap();
    let collectives = &report["collectives"];
    let instances = collectives["instances"].as_array().unwrap();
    let last = &ours["last_arrival_per_collective"];
    assert_eq!(last.1.len(), instances.len(), "collective instances");
    for (row, instance) in last.1.iter().zip(instances) {
        assert_eq!(
            row[column(last, "process_group_name")],
            instance["process_group"].as_str().unwrap()
        );
        assert_eq!(
            f64_of(&row[column(last, "seq")]),
            instance["seq"].as_f64().unwrap()
        );
        assert_eq!(
            f64_of(&row[column(last, "waited_for_rank")]),
            instance["waited_for_rank"].as_f64().unwrap()
        );
        assert_eq!(f64_of(&row[column(last, "ranks")]), 16.0);
        assert!(same(
            &row[column(last, "arrival_skew_us")],
            &instance["arrival_skew_us"].to_string()
        ));
    }
    let per_rank: BTreeMap<i64, &serde_json::Value> = collectives["per_rank"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["rank"].as_i64().unwrap(), t))
        .collect();
    let stragglers = &ours["stragglers"];
    assert_eq!(stragglers.1.len(), 16);
    for row in &stragglers.1 {
        let rank: i64 = row[column(stragglers, "rank")].parse().unwrap();
        let totals = per_rank[&rank];
        assert_eq!(
            f64_of(&row[column(stragglers, "times_waited_for")]),
            totals["times_waited_for"].as_f64().unwrap(),
            "rank {rank}"
        );
        let waited = f64_of(&row[column(stragglers, "others_waited_us")]);
        let expected = totals["others_waited_us"].as_f64().unwrap();
        assert!(
            (waited - expected).abs() < 1e-3,
            "rank {rank}: {waited} != {expected}"
        );
    }
    let bottleneck: i64 = stragglers.1[0][column(stragglers, "rank")].parse().unwrap();
    assert_eq!(Some(bottleneck), collectives["bottleneck_rank"].as_i64());

    let hta = &report["stragglers"];
    assert!(
        hta.is_object(),
        "analyze found stragglers: {:?}",
        report["errors"]
    );
    let potential = &ours["potential_stragglers"];
    let kernel = &potential.1[0][column(potential, "kernel")];
    assert_eq!(kernel, hta["kernel"].as_str().unwrap());
    let named: Vec<i64> = potential.1[..2]
        .iter()
        .map(|r| r[column(potential, "rank")].parse().unwrap())
        .collect();
    let expected: Vec<i64> = hta["stragglers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_i64().unwrap())
        .collect();
    assert_eq!(named, expected, "potential stragglers");
    for row in &potential.1 {
        let rank = &row[column(potential, "rank")];
        assert_eq!(
            f64_of(&row[column(potential, "times_marked")]),
            hta["times_marked"][rank.as_str()].as_f64().unwrap(),
            "rank {rank}: times marked"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
