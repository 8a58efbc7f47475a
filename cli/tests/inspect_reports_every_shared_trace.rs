//! `neuronprof inspect` on the real traces in `tests/data/traces/`: every file reads
//! cleanly and the figures match counts taken independently of our reader (Python's
//! `json` module over the same files, noted next to each assertion).

mod common;

use std::path::PathBuf;

use common::shared_traces;
use std::process::Command;

fn inspect_json(args: &[PathBuf]) -> (i32, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_neuronprof"))
        .arg("inspect")
        .arg("--json")
        .args(args)
        .output()
        .expect("running neuronprof");
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (out.status.code().unwrap_or(-1), json)
}

fn file<'a>(report: &'a serde_json::Value, suffix: &str) -> &'a serde_json::Value {
    report["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with(suffix))
        .unwrap_or_else(|| panic!("no report for {suffix}"))
}

#[test]
fn every_shared_trace_reads_without_damage() {
    let dir = shared_traces();
    let dirs: Vec<PathBuf> = ["hta", "kineto-legacy", "torch-2.15"]
        .iter()
        .map(|d| dir.join(d))
        .collect();
    let (code, report) = inspect_json(&dirs);
    assert_eq!(code, 0, "{report:#}");
    let files = report["files"].as_array().unwrap();
    assert_eq!(files.len(), 15);
    for f in files {
        assert!(f["damage"].is_null(), "{}", f["path"]);
        assert_eq!(f["skipped_events"], 0, "{}", f["path"]);
        assert!(f["events"].as_u64().unwrap() > 0, "{}", f["path"]);
        assert!(f["first_ts_ns"].as_i64().unwrap() <= f["last_end_ns"].as_i64().unwrap());
    }
    // Counted with Python's json module: len(traceEvents) summed over the 15 files.
    assert_eq!(report["total_events"], 284_134 + 75_718 + 721 + 721 + 720);
}

#[test]
fn flows_memory_events_and_categories_match_independent_counts() {
    let dir = shared_traces();
    let (_, report) = inspect_json(&[
        dir.join("hta/memory_events.json.gz"),
        dir.join("hta/nccl_data.json.gz"),
        dir.join("kineto-legacy/resnet50_2021.json.gz"),
        dir.join("hta/mtia_inference_rank_0.json.gz"),
    ]);
    let memory = file(&report, "memory_events.json.gz");
    assert_eq!(memory["events"], 216_092);
    assert_eq!(memory["memory_events"], 28_010);
    assert_eq!(memory["by_phase"]["i"], 28_012);
    assert_eq!(memory["by_category"]["cpu_instant_event"], 28_010);
    // 22,290 distinct `s` ids, all finished; 20,083 `f` ids without a start.
    assert_eq!(memory["flows"]["ac2g"]["matched"], 22_290);
    assert_eq!(memory["flows"]["ac2g"]["unmatched_finishes"], 20_083);

    let nccl = file(&report, "nccl_data.json.gz");
    // 4,405 starts, of which 4,317 finished (ac2g + fwdbwd); 4,878 finishes without start.
    assert_eq!(nccl["flows"]["ac2g"]["matched"], 3_774);
    assert_eq!(nccl["flows"]["fwdbwd"]["matched"], 543);
    assert_eq!(nccl["flows"]["ac2g"]["unmatched_starts"], 88);
    assert_eq!(nccl["flows"]["ac2g"]["unmatched_finishes"], 4_878);
    assert_eq!(nccl["rank"], 0);

    // The 2021 trace: legacy spellings are counted as written, flows as `ac2g`.
    let legacy = file(&report, "resnet50_2021.json.gz");
    assert_eq!(legacy["by_category"]["Operator"], 23_646);
    assert_eq!(legacy["by_category"]["async"], 18_192);
    assert_eq!(legacy["flows"]["ac2g"]["matched"], 9_096);
    assert_eq!(legacy["memory_events"], 12_838);
    assert_eq!(legacy["devices"].as_array().unwrap().len(), 4);

    // MTIA: one submit can end in several device ops; 635 starts, 619 of them finished.
    let mtia = file(&report, "mtia_inference_rank_0.json.gz");
    assert_eq!(mtia["flows"]["ac2g"]["matched"], 619);
    assert_eq!(mtia["flows"]["ac2g"]["unmatched_starts"], 16);
    assert_eq!(mtia["devices"][0]["name"], "ARTEMIS");
}

#[test]
fn ranks_and_world_size_come_from_distributed_info() {
    let dir = shared_traces();
    let (code, report) = inspect_json(&[dir.join("torch-2.15")]);
    assert_eq!(code, 0);
    // gloo_2rank-rank{0,1} state ranks 0 and 1 of 2; the privateuse1 trace states none.
    assert_eq!(report["ranks"], serde_json::json!([0, 1]));
    assert_eq!(report["world_size"], 2);
    assert_eq!(report["warnings"], serde_json::json!([]));
    let neuron = file(&report, "python_privateuse1_neuron.pt.trace.json.gz");
    assert_eq!(neuron["devices"], serde_json::json!([]));
    assert_eq!(neuron["base_time_ns"], 1_790_857_026_000_000_000_i64);
    assert_eq!(neuron["dropped_records"], serde_json::Value::Null);
}

#[test]
fn text_report_names_ranks_span_and_categories() {
    let dir = shared_traces();
    let out = Command::new(env!("CARGO_BIN_EXE_neuronprof"))
        .arg("inspect")
        .arg(dir.join("hta/two_rank-rank0.json.gz"))
        .arg(dir.join("hta/two_rank-rank1.json.gz"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("2 trace file(s), 9575 events; ranks: 0, 1; world size: 128\n"),
        "{text}"
    );
    assert!(
        text.contains("rank 1 of world size 128 (backend nccl)"),
        "{text}"
    );
    assert!(text.contains("   1154  kernel\n"), "{text}");
    assert!(text.contains("time span: 3.367 s"), "{text}");
    assert!(text.contains("damage: none"), "{text}");
}
