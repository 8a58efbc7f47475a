//! `neuronprof inspect` on damaged input: the report keeps what was read, names the
//! file, byte offset and event index of the damage, and the exit status says so.

use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("neuronprof-inspect-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn inspect(paths: &[&Path], json: bool) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_neuronprof"));
    cmd.arg("inspect");
    if json {
        cmd.arg("--json");
    }
    cmd.args(paths).output().unwrap()
}

const TRACE: &str = r#"{"schemaVersion": 1, "distributedInfo": {"rank": 3, "world_size": 4},
 "baseTimeNanoseconds": 1000000000, "dropped_records": 17, "traceEvents": [
 {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1.000, "dur": 5.000},
 {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 2.000, "dur": 3.000,
  "args": {"device": 0, "stream": 7, "correlation": 5}},
 {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1,
  "ts": 2.500, "args": {"Device Type": 20, "Device Id": 0, "Bytes": 4096}},
 {"ph": "s", "id": 5, "pid": 1, "tid": 1, "ts": 1.500, "cat": "ac2g", "name": "ac2g"},
 {"ph": "f", "id": 5, "pid": 0, "tid": 7, "ts": 2.000, "cat": "ac2g", "name": "ac2g", "bp": "e"}
]}"#;

#[test]
fn clean_synthetic_trace_reports_neuron_memory_and_dropped_records() {
    let dir = scratch("clean");
    let path = dir.join("rank3.json");
    std::fs::write(&path, TRACE).unwrap();
    let out = inspect(&[&path], true);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = &report["files"][0];
    assert_eq!(f["rank"], 3);
    assert_eq!(f["dropped_records"], 17);
    assert_eq!(f["memory_events_by_device_type"]["20"], 1);
    assert_eq!(f["flows"]["ac2g"]["matched"], 1);
    assert_eq!(f["devices"][0]["device_events"], 1);
    assert_eq!(f["first_ts_ns"], 1_000_001_000_i64);
    assert_eq!(f["last_end_ns"], 1_000_006_000_i64);
}

#[test]
fn truncated_trace_reports_byte_offset_and_event_index() {
    let dir = scratch("truncated");
    let path = dir.join("cut.json");
    let cut = TRACE.find("{\"ph\": \"i\"").unwrap() + 20;
    std::fs::write(&path, &TRACE[..cut]).unwrap();
    let out = inspect(&[&path], false);
    assert_eq!(out.status.code(), Some(1), "damage gives exit status 1");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("events: 2\n"),
        "both events before the cut are counted: {text}"
    );
    let expected = format!(
        "DAMAGE: {}: byte {cut}, event #2: trace is truncated",
        path.display()
    );
    assert!(text.contains(&expected), "wanted {expected:?} in {text}");
}

#[test]
fn wrong_type_event_is_skipped_and_reported() {
    let dir = scratch("wrongtype");
    let path = dir.join("bad.json");
    std::fs::write(&path, TRACE.replace("\"dur\": 3.000", "\"dur\": \"three\"")).unwrap();
    let out = inspect(&[&path], true);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = &report["files"][0];
    assert_eq!(f["skipped_events"], 1);
    assert_eq!(f["events"], 4);
    let example = f["skipped_examples"][0].as_str().unwrap();
    assert!(
        example.contains("bad.json: byte") && example.contains("event #1"),
        "{example}"
    );
}

#[test]
fn missing_path_is_a_usage_error() {
    let out = inspect(&[Path::new("/nonexistent/trace.json")], false);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("/nonexistent/trace.json"), "{err}");
}

#[test]
fn directory_without_traces_is_a_usage_error() {
    let dir = scratch("empty");
    std::fs::write(dir.join("notes.txt"), "no traces").unwrap();
    let out = inspect(&[&dir], false);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("the directory holds no trace"));
}
