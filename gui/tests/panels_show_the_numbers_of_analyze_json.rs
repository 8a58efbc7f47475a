//! The analysis panels show the numbers `neuronprof analyze --json` prints: the same
//! `analysis::analyze` run (default mode, all ranks), serialized, then each value looked
//! up in the panel as the panel formats it.

mod support;

use analysis::{analyze, load_paths, LoadOptions, ReportOptions};
use egui_kittest::kittest::Queryable as _;
use gui::ui::panels_ui::us;
use serde_json::Value;

fn shown(harness: &egui_kittest::Harness<'static, gui::ViewerApp>, text: &str) -> bool {
    harness.query_all_by_label(text).count() >= 1
}

#[test]
fn panels_show_the_numbers_of_analyze_json() {
    let dir = support::traces_dir();
    let files = vec![
        dir.join("hta/two_rank-rank0.json.gz"),
        dir.join("hta/two_rank-rank1.json.gz"),
    ];
    let set = load_paths(&files, &LoadOptions::default().with_lenient(true)).unwrap();
    let json = serde_json::to_value(analyze(&set, &ReportOptions::default())).unwrap();

    let mut harness = support::viewer(files);
    support::wait_loaded(&mut harness);

    // Both ranks are on the timeline, one group per process of each.
    let timeline = harness.state().loaded.as_ref().unwrap().timeline.clone();
    assert!(timeline
        .groups
        .iter()
        .any(|g| g.label.starts_with("rank 0 ")));
    assert!(timeline
        .groups
        .iter()
        .any(|g| g.label.starts_with("rank 1 ")));

    // Overview: the temporal breakdown of every rank, and every step's duration.
    let ranks = json["temporal_breakdown"]["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 2);
    for rank in ranks {
        for key in [
            "idle_time_us",
            "compute_time_us",
            "non_compute_time_us",
            "kernel_time_us",
        ] {
            let v = rank[key].as_f64().unwrap();
            assert!(
                shown(&harness, &us(v)),
                "{key} = {} of rank {}",
                us(v),
                rank["rank"]
            );
        }
    }
    for step in json["steps"].as_array().unwrap() {
        let v = step["dur_us"].as_f64().unwrap();
        assert!(shown(&harness, &us(v)), "step duration {}", us(v));
    }

    // Kernels: every kernel's total time.
    harness.get_by_label("Kernels").click();
    harness.run_steps(3);
    let kernels = json["kernel_breakdown"]["kernels"].as_array().unwrap();
    assert!(!kernels.is_empty());
    for k in kernels {
        let v = k["sum_us"].as_f64().unwrap();
        assert!(
            shown(&harness, &us(v)),
            "kernel {} sum {}",
            k["name"],
            us(v)
        );
    }

    // Collectives: each rank's waiting time.
    harness.get_by_label("Collectives").click();
    harness.run_steps(3);
    for r in json["collectives"]["per_rank"].as_array().unwrap() {
        let v = r["wait_us"].as_f64().unwrap();
        assert!(
            shown(&harness, &us(v)),
            "collective wait {} of rank {}",
            us(v),
            r["rank"]
        );
    }
    let _: &Value = &json;
}
