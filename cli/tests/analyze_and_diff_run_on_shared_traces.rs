//! `neuronprof analyze` and `neuronprof diff` through the binary, on the real traces in
//! `../shared/traces/`, checked against what HTA 0.6 printed (`hta-reference/`).

mod common;

use std::path::PathBuf;

use common::shared_traces;
use std::process::{Command, Output};

fn neuronprof(args: &[&str], paths: &[PathBuf]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neuronprof"))
        .args(args)
        .args(paths)
        .output()
        .unwrap()
}

#[test]
fn analyze_hta_compat_json_matches_hta_temporal_breakdown() {
    let Some(dir) = shared_traces() else { return };
    let out = neuronprof(
        &["analyze", "--hta-compat", "--json"],
        &[
            dir.join("hta/two_rank-rank0.json.gz"),
            dir.join("hta/two_rank-rank1.json.gz"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ranks"], serde_json::json!([0, 1]));
    // hta-reference/two_rank.txt, temporal_breakdown rows for ranks 0 and 1.
    let rows = report["temporal_breakdown"]["ranks"].as_array().unwrap();
    assert_eq!(rows[0]["idle_time_us"], 321378.0);
    assert_eq!(rows[0]["kernel_time_us"], 600058.0);
    assert_eq!(rows[1]["compute_time_us"], 135548.0);
    assert_eq!(rows[1]["non_compute_time_pctg"], 22.72);
}

#[test]
fn analyze_text_report_puts_insights_first_for_one_rank() {
    let Some(dir) = shared_traces() else { return };
    let out = neuronprof(
        &["analyze", "--rank", "0"],
        &[dir.join("hta/nccl_data.json.gz")],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let insights = text.find("\nInsights\n").expect("an insights section");
    let temporal = text
        .find("\nTemporal breakdown\n")
        .expect("a temporal breakdown");
    assert!(insights < temporal, "{text}");
}

#[test]
fn analyze_truncated_trace_names_the_damage_unless_lenient() {
    let Some(dir) = shared_traces() else { return };
    let json = gunzip(&dir.join("hta/simple_add.json.gz"));
    let cut = json.len() / 2;
    let path = std::env::temp_dir().join(format!("neuronprof-analyze-{}.json", std::process::id()));
    std::fs::write(&path, &json[..cut]).unwrap();
    let strict = neuronprof(&["analyze"], std::slice::from_ref(&path));
    assert_eq!(strict.status.code(), Some(2));
    let err = String::from_utf8(strict.stderr).unwrap();
    assert!(
        err.contains(&path.display().to_string()) && err.contains("byte"),
        "{err}"
    );
    let lenient = neuronprof(
        &["analyze", "--lenient", "--json"],
        std::slice::from_ref(&path),
    );
    assert!(
        lenient.status.success(),
        "{}",
        String::from_utf8_lossy(&lenient.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&lenient.stdout).unwrap();
    let errors = report["errors"].as_array().unwrap();
    assert!(
        errors
            .iter()
            .any(|e| e.as_str().unwrap().contains("truncated")),
        "{errors:?}"
    );
}

/// Decompresses with the system `gzip`, so this test needs no gzip crate of its own.
fn gunzip(path: &PathBuf) -> Vec<u8> {
    let out = Command::new("gzip")
        .arg("-dc")
        .arg(path)
        .output()
        .expect("gzip is installed");
    assert!(out.status.success());
    out.stdout
}

#[test]
fn diff_of_identical_first_steps_lists_every_name_as_unchanged() {
    let Some(dir) = shared_traces() else { return };
    let out = neuronprof(
        &["diff", "--json"],
        &[
            dir.join("hta/compare_base.json.gz"),
            dir.join("hta/compare_test.json.gz"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let diff: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = diff["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 7);
    assert!(rows.iter().all(|r| r["counts_change_category"] == "="));
    let text = neuronprof(
        &["diff"],
        &[
            dir.join("hta/compare_base.json.gz"),
            dir.join("hta/compare_test.json.gz"),
        ],
    );
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.starts_with("7 names: 0 added, 0 deleted"), "{text}");
}
