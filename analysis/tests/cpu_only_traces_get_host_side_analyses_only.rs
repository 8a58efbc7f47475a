//! A trace without device activity (HTA's CPU-only sample, PyTorch 2.15 gloo DDP ranks)
//! says so and gets the host-side analyses only: no device type, no temporal breakdown
//! or step split, no finding about a device it does not have ("device waited 100 % for
//! the host"), no note per device analysis; the operator table is there.

mod support {
    pub mod traces;
}

use analysis::{analyze, load_paths, render, LoadOptions, ReportOptions};
use support::traces::traces_dir;

#[test]
fn cpu_only_traces_get_host_side_analyses_only() {
    let dir = traces_dir();
    for files in [
        vec![dir.join("hta/cpu_only_rank34.json.gz")],
        vec![
            dir.join("torch-2.15/gloo_2rank-rank0.pt.trace.json.gz"),
            dir.join("torch-2.15/gloo_2rank-rank1.pt.trace.json.gz"),
        ],
    ] {
        let traces = load_paths(&files, &LoadOptions::default()).unwrap();
        let report = analyze(&traces, &ReportOptions::default());
        let what = format!("{files:?}");
        assert!(!report.device_activity, "{what}");
        assert_eq!(report.device_type, "none", "{what}");
        assert!(report.temporal_breakdown.is_none(), "{what}");
        assert!(report.steps.is_empty(), "{what}");
        assert!(report.insights.is_empty(), "{what}: {:?}", report.insights);
        assert!(report.errors.is_empty(), "{what}: {:?}", report.errors);
        assert!(
            report.per_rank[0]
                .operators
                .as_ref()
                .is_some_and(|t| !t.operators.is_empty()),
            "{what}"
        );
        let text = render::render_report(&report);
        assert!(
            text.lines().next().unwrap().contains(
                "device none (no device activity in the traces: host-side analyses only)"
            ),
            "{text}"
        );
        for device_section in [
            "Temporal breakdown",
            "Kernels",
            "Idle time",
            "Launch statistics",
        ] {
            assert!(!text.contains(device_section), "{what}: {text}");
        }
        assert!(text.contains("Operators, rank"), "{text}");
    }
}
