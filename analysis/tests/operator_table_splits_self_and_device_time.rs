//! The operator table: self host time subtracts direct children (runtime calls
//! included, as torch's key_averages counts them), device time follows `External id`,
//! totals include nested operators, shapes split rows on demand.

mod support {
    pub mod traces;
}

use analysis::analyses::operators::operator_table;
use analysis::{load_paths, LoadOptions};
use support::traces::traces_dir;

const TRACE: &str = r#"{"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 0, "dur": 100, "args": {"External id": 1, "Input Dims": [[2, 3]]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": 10, "dur": 50, "args": {"External id": 2}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 20, "dur": 5, "args": {"correlation": 9, "External id": 2}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 70, "dur": 20, "args": {"External id": 3}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 200, "dur": 50, "args": {"External id": 4, "Input Dims": [[4, 3]]}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 30, "dur": 30, "args": {"stream": 7, "correlation": 9, "External id": 2}},
  {"ph": "X", "cat": "kernel", "name": "relu_kernel", "pid": 0, "tid": 7, "ts": 95, "dur": 5, "args": {"stream": 7, "correlation": 10, "External id": 3}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 210, "dur": 7, "args": {"stream": 7, "correlation": 11, "External id": 4}}
]}"#;

#[test]
fn self_total_and_device_time_per_operator() {
    let dir = std::env::temp_dir().join(format!("analysis-ops-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ops.json");
    std::fs::write(&path, TRACE).unwrap();
    let traces = load_paths(&[&path], &LoadOptions::default()).unwrap();
    // Everything the table needs was kept by the one read.
    std::fs::remove_dir_all(&dir).unwrap();
    let table = operator_table(&traces.ranks[0], false).unwrap();
    let rows: Vec<(&str, u64, f64, f64, f64, f64)> = table
        .operators
        .iter()
        .map(|o| {
            (
                o.name.as_str(),
                o.calls,
                o.cpu_total_us,
                o.cpu_self_us,
                o.device_self_us,
                o.device_total_us,
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("aten::linear", 2, 150.0, 80.0, 7.0, 42.0),
            // The launch is a CPU event of its own, inside addmm (as in key_averages);
            // its External id's kernel is addmm's.
            ("aten::addmm", 1, 50.0, 45.0, 30.0, 30.0),
            ("aten::relu", 1, 20.0, 20.0, 5.0, 5.0),
            ("cudaLaunchKernel", 1, 5.0, 5.0, 0.0, 0.0),
        ]
    );
    let by_shape = operator_table(&traces.ranks[0], true).unwrap();
    let linear: Vec<&str> = by_shape
        .operators
        .iter()
        .filter(|o| o.name == "aten::linear")
        .map(|o| o.input_dims.as_str())
        .collect();
    assert_eq!(linear, ["[[2, 3]]", "[[4, 3]]"]);
}

#[test]
fn real_trace_device_time_is_attributed_to_operators() {
    let dir = traces_dir();
    let traces = load_paths(
        &[dir.join("hta/nccl_data.json.gz")],
        &LoadOptions::default(),
    )
    .unwrap();
    let table = operator_table(&traces.ranks[0], false).unwrap();
    let step = table
        .operators
        .iter()
        .find(|o| o.name == "ProfilerStep*")
        .expect("steps are user annotations in the table");
    assert!(step.device_total_us > 0.0 && step.cpu_self_us <= step.cpu_total_us);
    let self_device: f64 = table.operators.iter().map(|o| o.device_self_us).sum();
    assert!(self_device > 0.0);
    assert!(table
        .operators
        .iter()
        .all(|o| o.device_self_us <= o.device_total_us + 1e-6));
}
