//! Every vendored real trace goes through every analysis, in both modes,
//! renders as text and serializes as JSON, without panicking; traces with device
//! activity get a temporal breakdown.

mod support {
    pub mod traces;
}

use analysis::{analyze, load_paths, render, LoadOptions, Mode, ReportOptions};
use support::traces::traces_dir;

#[test]
fn every_shared_trace_is_analyzed_in_both_modes() {
    let dir = traces_dir();
    let cases: &[(&[&str], bool)] = &[
        (
            &["hta/two_rank-rank0.json.gz", "hta/two_rank-rank1.json.gz"],
            true,
        ),
        (&["hta/nccl_data.json.gz"], true),
        (&["hta/mtia_inference_rank_0.json.gz"], true),
        (&["hta/amd_mi250_train.json.gz"], true),
        (&["hta/memory_events.json.gz"], true),
        (&["hta/simple_add.json.gz"], true),
        (&["hta/compare_base.json.gz"], true),
        (&["hta/triton_example.json.gz"], true),
        (&["hta/cpu_only_rank34.json.gz"], false),
        (&["kineto-legacy/resnet50_2021.json.gz"], true),
        (
            &[
                "torch-2.15/gloo_2rank-rank0.pt.trace.json.gz",
                "torch-2.15/gloo_2rank-rank1.pt.trace.json.gz",
            ],
            false,
        ),
        (
            &["torch-2.15/python_privateuse1_neuron.pt.trace.json.gz"],
            false,
        ),
    ];
    for (files, has_device) in cases {
        let paths: Vec<_> = files.iter().map(|f| dir.join(f)).collect();
        let traces = load_paths(&paths, &LoadOptions::default())
            .unwrap_or_else(|e| panic!("{files:?}: {e}"));
        for mode in [Mode::Default, Mode::HtaCompat] {
            let options = ReportOptions::hta_reference().with_mode(mode);
            let report = analyze(&traces, &options);
            assert_eq!(
                report.temporal_breakdown.is_some(),
                *has_device,
                "{files:?} {mode:?}: {:?}",
                report.errors
            );
            let text = render::render_report(&report);
            // Without device activity the default mode gives the host side only.
            let device_sections = *has_device || mode == Mode::HtaCompat;
            assert_eq!(text.contains("Kernel types"), device_sections, "{files:?}");
            assert_eq!(
                text.contains("host-side analyses only"),
                !device_sections,
                "{files:?}"
            );
            let json = serde_json::to_string(&report).expect("report serializes");
            assert!(json.starts_with('{'), "{files:?}");
        }
    }
}

#[test]
fn step_splits_add_up_on_real_traces() {
    use analysis::analyses::steps::step_splits;
    use analysis::Frames;
    let dir = traces_dir();
    for files in [
        &["hta/two_rank-rank0.json.gz", "hta/two_rank-rank1.json.gz"][..],
        &["hta/nccl_data.json.gz"][..],
    ] {
        let paths: Vec<_> = files.iter().map(|f| dir.join(f)).collect();
        let traces = load_paths(&paths, &LoadOptions::default()).unwrap();
        let splits = step_splits(&Frames::build_with(&traces, Mode::Default, false));
        assert!(!splits.is_empty(), "{files:?}");
        for s in &splits {
            let parts = s.computation_us
                + s.communication_us
                + s.memory_us
                + s.other_device_us
                + s.host_bound_idle_us
                + s.other_idle_us;
            assert!((parts - s.dur_us).abs() < 1e-6, "{files:?} {s:?}");
            // Waiting for a late peer is a part of the exposed communication.
            assert!(
                s.peer_wait_us >= 0.0 && s.peer_wait_us <= s.communication_us + 1e-6,
                "{files:?} {s:?}"
            );
        }
        // `analyze` gives each step the same split, its waiting for peers included.
        let report = analyze(&traces, &ReportOptions::default());
        assert_eq!(report.steps, splits, "{files:?}");
    }
}

#[test]
fn a_truncated_trace_is_read_leniently_and_its_damage_reported() {
    let json = r#"{"traceEvents": [
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1.0, "dur": 1, "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 3.0, "dur": 2, "args": {"stream": 7, "correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": "bad", "dur": 2},
  {"ph": "X", "cat": "kernel", "name": "k3", "pid": 0, "tid": 7, "ts": 9.0, "du"#;
    let dir = std::env::temp_dir().join(format!("analysis-damaged-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cut.json");
    std::fs::write(&path, json).unwrap();
    let strict = load_paths(&[&path], &LoadOptions::default()).unwrap_err();
    assert!(strict.to_string().contains("cut.json"), "{strict}");
    let traces = load_paths(&[&path], &LoadOptions::default().with_lenient(true)).unwrap();
    let report = analyze(&traces, &ReportOptions::default());
    assert_eq!(
        report.temporal_breakdown.unwrap().ranks[0].kernel_time_us,
        2.0
    );
    let note = report.errors.join("\n");
    assert!(
        note.contains("2 events read, 1 damaged events skipped"),
        "{note}"
    );
    assert!(note.contains("truncated"), "{note}");
}
