//! The critical path in HTA-compat mode equals HTA 0.5's on HTA's own critical-path
//! trace (`tests/data/traces/hta/simple_add.json.gz`, vendored; annotation
//! `[param|pytorch.model.alex_net|0|0|0|measure|forward]`, instance 1, as in HTA's
//! `tests/test_critical_path_analysis.py`): the path's length, its summary by
//! `bound_by`, every edge of its breakdown (attributed event, type, duration, class),
//! the set of critical events, and the graph's node and edge counts; and on the NCCL
//! training trace (`tests/data/traces/hta/nccl_data.json.gz`, `ProfilerStep` instance
//! 1: 15,600 nodes, a 6,146-node path).
//!
//! Checked twice: against HTA run here (`scripts/hta_critical_path.py` in the HTA venv,
//! `bash scripts/hta-venv`; recorded as skipped without it, failing under `CI`), and
//! against a stored copy of what HTA 0.5.0 printed
//! (`tests/data/traces/hta-reference/critical_path_{simple_add,nccl_data}.json`,
//! vendored with the traces), so a clone without the venv still checks the numbers.

#[path = "../../tests/support/skip.rs"]
mod skip;

use std::path::{Path, PathBuf};
use std::process::Command;

use analysis::critical_path::{build_graph, Options};
use analysis::stats::NumpySort;
use analysis::{load_paths, LoadOptions};
use serde_json::Value;

/// (case, trace under the vendored traces, annotation, instance).
const CASES: [(&str, &str, &str, usize); 2] = [
    (
        "simple_add",
        "hta/simple_add.json.gz",
        "[param|pytorch.model.alex_net|0|0|0|measure|forward]",
        1,
    ),
    ("nccl_data", "hta/nccl_data.json.gz", "ProfilerStep", 1),
];

/// The vendored real traces (`tests/data/README.md`).
fn vendored() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/traces")
}

fn hta_python() -> Option<PathBuf> {
    if let Some(python) = std::env::var_os("NEURONPROF_HTA_PYTHON") {
        return Some(python.into());
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/hta-venv/bin/python");
    if venv.exists() {
        return Some(venv);
    }
    skip::skipped(
        &skip::this_test(),
        "no HTA: run `bash scripts/hta-venv` or set NEURONPROF_HTA_PYTHON",
    );
    None
}

/// Ours, in the shape the script prints.
fn ours(trace: &Path, annotation: &str, instance: usize, sort: NumpySort) -> Value {
    let set = load_paths(&[trace], &LoadOptions::default().with_timeline(true)).expect("load");
    let mut options = Options::hta(0, annotation, instance);
    options.numpy_sort = sort;
    let graph = build_graph(&set, &options).expect("graph");
    let path = graph.critical_path().expect("path");
    let edge_ids = graph.graph.longest_path(|e| e.weight).expect("path");
    let mut breakdown: Vec<(i64, String, i64, String)> = path
        .path
        .iter()
        .map(|e| {
            (
                e.event_index.map_or(-1, |i| i as i64),
                e.kind.to_owned(),
                e.duration_us as i64,
                e.bound_by.to_owned(),
            )
        })
        .collect();
    breakdown.sort();
    let summary: serde_json::Map<String, Value> = path
        .summary
        .iter()
        .map(|s| (s.bound_by.to_owned(), Value::from(s.duration_us as i64)))
        .collect();
    let events: Vec<u64> = graph
        .path_events(&edge_ids)
        .into_iter()
        .map(|(_, i)| i)
        .collect();
    serde_json::json!({
        "nodes": graph.graph.connected_nodes(),
        "edges": graph.graph.edges.len(),
        "path_nodes": edge_ids.len() + 1,
        "length": path.length_us as i64,
        "summary": summary,
        "breakdown": breakdown.iter().map(|(i, t, d, b)| {
            serde_json::json!([if *i < 0 { Value::Null } else { Value::from(*i) }, t, d, b])
        }).collect::<Vec<_>>(),
        "critical_events": events,
    })
}

fn compare(hta: &Value, ours: &Value, label: &str) {
    for key in [
        "nodes",
        "edges",
        "path_nodes",
        "length",
        "summary",
        "critical_events",
    ] {
        assert_eq!(ours[key], hta[key], "{label}: {key} differs");
    }
    let (h, o) = (
        hta["breakdown"].as_array().unwrap(),
        ours["breakdown"].as_array().unwrap(),
    );
    assert_eq!(o.len(), h.len(), "{label}: path edges");
    for (a, b) in o.iter().zip(h) {
        assert_eq!(a, b, "{label}: breakdown edge");
    }
}

fn stored_case(index: usize) {
    let (name, file, annotation, instance) = CASES[index];
    let trace = vendored().join(file);
    let stored: Value = serde_json::from_str(
        &std::fs::read_to_string(
            vendored().join(format!("hta-reference/critical_path_{name}.json")),
        )
        .expect("stored HTA output"),
    )
    .expect("json");
    assert_eq!(stored["hta_version"], "0.5.0");
    let sort: NumpySort = stored["numpy_kernel"][1].as_str().unwrap().parse().unwrap();
    compare(
        &stored,
        &ours(&trace, annotation, instance, sort),
        &format!("{name}: stored HTA 0.5.0 output"),
    );
}

fn live_case(index: usize) {
    let (name, file, annotation, instance) = CASES[index];
    let trace = vendored().join(file);
    let Some(python) = hta_python() else { return };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("hta-critical-path-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(&trace, dir.join(trace.file_name().unwrap())).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/hta_critical_path.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(&dir)
        .args(["0", annotation, &instance.to_string()])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(
        out.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let hta: Value = serde_json::from_slice(&out.stdout).expect("HTA's JSON");
    let sort: NumpySort = hta["numpy_kernel"][1].as_str().unwrap().parse().unwrap();
    eprintln!(
        "HTA {} with numpy {:?}",
        hta["hta_version"], hta["numpy_kernel"]
    );
    compare(
        &hta,
        &ours(&trace, annotation, instance, sort),
        &format!("{name}: HTA run here"),
    );
}

#[test]
fn simple_add_equals_the_stored_hta_output() {
    stored_case(0);
}

#[test]
fn simple_add_equals_hta_run_here() {
    live_case(0);
}

#[test]
fn nccl_data_equals_the_stored_hta_output() {
    stored_case(1);
}

#[test]
fn nccl_data_equals_hta_run_here() {
    live_case(1);
}
