//! A `torch.profiler.schedule` that ends mid-cycle (six steps with `wait=1, warmup=1,
//! active=2`, as a Hugging Face training script runs it) writes a second trace that
//! holds little more than the step annotations and one synchronize. Given the folder,
//! `analyze` takes the last window with a complete step and device activity (the real
//! MI300X trace), not that one, and says which and why.
//!
//! The near-empty window is made here from the real trace's own rows (its
//! `ProfilerStep#6` annotation, renamed `#7`, and its first `hipDeviceSynchronize`,
//! moved 10 ms past the trace's end, same process), as the profiler writes it.

#[path = "../../tests/support/skip.rs"]
mod skip;
mod support {
    pub mod traces;
}

use std::io::Read as _;

use analysis::inputs::Window;
use analysis::{analyze_plan, plan_inputs, LoadOptions, ReportOptions};
use serde_json::{json, Value};
use support::traces::shared_traces_dir;

#[test]
fn analyze_takes_the_last_window_with_an_active_step_and_says_why() {
    let Some(shared) = shared_traces_dir() else {
        skip::skipped(
            "analysis: analyze_takes_the_last_window_with_an_active_step_and_says_why",
            "../shared/traces/tracelens is absent (set NEURONPROF_SHARED_TRACES)",
        );
        return;
    };
    let source = shared.join("tracelens/mi300_gaunernst_bert-small-uncased__1016001.json.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&source).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let full: Value = serde_json::from_str(&text).unwrap();
    let events = full["traceEvents"].as_array().unwrap();
    let end_us = events
        .iter()
        .filter_map(|e| Some(e["ts"].as_f64()? + e["dur"].as_f64().unwrap_or(0.0)))
        .fold(f64::MIN, f64::max);
    let shift = |e: &Value, to: f64| {
        let mut e = e.clone();
        e["ts"] = json!(to);
        e
    };
    let step = events
        .iter()
        .find(|e| e["cat"] == "user_annotation" && e["name"] == "ProfilerStep#6")
        .unwrap();
    let sync = events
        .iter()
        .find(|e| e["name"] == "hipDeviceSynchronize")
        .unwrap();
    let mut late_step = shift(step, end_us + 10_000.0);
    late_step["name"] = json!("ProfilerStep#7");
    let mut empty = full.clone();
    empty["traceEvents"] = json!([late_step, shift(sync, end_us + 10_100.0)]);

    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("window-mid-cycle");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&source, dir.join("host_6240.1.pt.trace.json.gz")).unwrap();
    std::fs::write(
        dir.join("host_6240.2.pt.trace.json"),
        serde_json::to_vec(&empty).unwrap(),
    )
    .unwrap();

    let plan = plan_inputs(&[&dir], Window::Latest).unwrap();
    assert_eq!(plan.windows.len(), 1, "one process, two windows");
    assert_eq!(plan.windows[0].files.len(), 2);
    let report = analyze_plan(&plan, &LoadOptions::default(), &ReportOptions::default()).unwrap();
    assert!(
        report.device_activity,
        "the window with the device's work is analyzed: {}",
        report.device_type
    );
    assert_eq!(report.steps.len(), 1);
    assert_eq!(report.steps[0].step, 6);
    let note = report
        .notes
        .iter()
        .find(|n| n.contains("profiling windows"))
        .expect("a note on the windows");
    assert!(
        note.contains("analyzed window 1 of 2, host_6240.1.pt.trace.json.gz")
            && note.contains("host_6240.2.pt.trace.json has no device activity"),
        "{note}"
    );

    // `--window 2` still takes the near-empty one when asked.
    let plan = plan_inputs(&[&dir], Window::Nth(2)).unwrap();
    let report = analyze_plan(&plan, &LoadOptions::default(), &ReportOptions::default()).unwrap();
    assert!(!report.device_activity);
}
