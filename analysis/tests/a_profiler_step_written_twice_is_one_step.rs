//! PyTorch 2.x writes each `ProfilerStep#N` twice: a `user_annotation` on the host and
//! a `gpu_user_annotation` on the device's stream. On real Hugging Face traces (MI300X
//! and H100, `../shared/traces/tracelens/`) that is one step with a host window and a
//! device window, listed once; its split is over the device window, and there its idle
//! and busy time equal TraceLens's `gpu_timeline.csv` to the microsecond.

#[path = "../../tests/support/skip.rs"]
mod skip;
mod support {
    pub mod traces;
}

use std::path::Path;

use analysis::analyses::steps::StepWindow;
use analysis::{analyze, load_paths, render, LoadOptions, Mode, ReportOptions};
use support::traces::shared_traces_dir;

const TRACES: [&str; 6] = [
    "h100_Falconsai_nsfw_image_detection__1016002",
    "h100_gaunernst_bert-small-uncased__1016001",
    "mi300_Falconsai_nsfw_image_detection__1016002",
    "mi300_Qwen_Qwen1.5-0.5B-Chat__1016005",
    "mi300_facebook_timesformer-base-finetuned-k400__1016002",
    "mi300_gaunernst_bert-small-uncased__1016001",
];

/// TraceLens's `gpu_timeline.csv`: `type,time ms,percent` → µs by type.
fn gpu_timeline_us(dir: &Path, trace: &str) -> std::collections::BTreeMap<String, f64> {
    let path = dir.join(format!("{trace}_perf_report_csvs/gpu_timeline.csv"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    text.lines()
        .skip(1)
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            (
                cells[0].to_owned(),
                cells[1].parse::<f64>().unwrap() * 1000.0,
            )
        })
        .collect()
}

#[test]
fn a_profiler_step_written_twice_is_one_step_with_a_host_and_a_device_window() {
    let Some(shared) = shared_traces_dir() else {
        skip::skipped(
            "analysis: a_profiler_step_written_twice_is_one_step_with_a_host_and_a_device_window",
            "../shared/traces/tracelens is absent (set NEURONPROF_SHARED_TRACES)",
        );
        return;
    };
    let dir = shared.join("tracelens");
    for trace in TRACES {
        let file = dir.join(format!("{trace}.json.gz"));
        let set = load_paths(&[&file], &LoadOptions::default()).unwrap();
        let tracelens = gpu_timeline_us(&dir, trace);
        for mode in [Mode::Default, Mode::HtaCompat] {
            let report = analyze(&set, &ReportOptions::default().with_mode(mode));
            let what = format!("{trace} ({mode:?})");
            let steps: Vec<i64> = report.steps.iter().map(|s| s.step).collect();
            assert_eq!(steps, vec![6], "{what}: one step 6, not one per annotation");
            let s = &report.steps[0];
            assert_eq!(s.window, StepWindow::Device, "{what}");
            assert_eq!(Some(s.dur_us), s.device_dur_us, "{what}");
            assert!(
                s.host_dur_us.is_some_and(|h| h > 0.0 && h != s.dur_us),
                "{what}: the host window is there too: {s:?}"
            );
            let parts = s.busy_us() + s.host_bound_idle_us + s.other_idle_us;
            assert!((parts - s.dur_us).abs() < 1e-6, "{what}: {s:?}");
            if mode == Mode::Default {
                // TraceLens times are ns-exact ms; ours are µs from ns.
                let idle = s.host_bound_idle_us + s.other_idle_us;
                assert!(
                    (idle - tracelens["idle_time"]).abs() < 1.0,
                    "{what}: idle {idle} us, TraceLens {} us",
                    tracelens["idle_time"]
                );
                assert!(
                    (s.busy_us() - tracelens["busy_time"]).abs() < 1.0,
                    "{what}: busy {} us, TraceLens {} us",
                    s.busy_us(),
                    tracelens["busy_time"]
                );
                assert!(
                    (s.dur_us - tracelens["total_time"]).abs() < 1.0,
                    "{what}: window {} us, TraceLens {} us",
                    s.dur_us,
                    tracelens["total_time"]
                );
            }
            for u in &report.utilization {
                assert_eq!(
                    u.host_bound_steps + u.device_bound_steps,
                    1,
                    "{what}: one step counted once: {u:?}"
                );
            }
            let text = render::render_report(&report);
            let steps_table = text
                .split("\nSteps")
                .nth(1)
                .unwrap_or_else(|| panic!("{what}: no Steps table in\n{text}"));
            let rows = steps_table
                .lines()
                .skip(2)
                .take_while(|l| !l.trim().is_empty())
                .count();
            assert_eq!(rows, 1, "{what}: one row in\n{steps_table}");
            let json = serde_json::to_value(&report).unwrap();
            assert_eq!(json["steps"].as_array().map(Vec::len), Some(1), "{what}");
            assert_eq!(json["steps"][0]["window"], "device", "{what}");
        }
    }
}
