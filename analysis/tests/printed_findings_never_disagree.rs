//! One report never contradicts itself: on every real trace (the vendored ones and the
//! shared Hugging Face traces on MI300X and H100), in both modes, no two findings about
//! one rank and step disagree ([`analysis::insights::disagreements`]: host-bound and
//! device-bound at once, or measured over different windows). On the timesformer trace
//! the report said both "step 6: device waited 223268 us (58 %) for the host" (over the
//! step's host window) and "step 6: device-bound: busy 99 %" (over its device window).

#[path = "../../tests/support/skip.rs"]
mod skip;
mod support {
    pub mod traces;
}

use std::path::PathBuf;

use analysis::insights::disagreements;
use analysis::{analyze, load_paths, render, LoadOptions, Mode, ReportOptions};
use support::traces::{shared_trace_files, shared_traces_dir, traces_dir};

fn check(files: &[PathBuf]) {
    let set = load_paths(files, &LoadOptions::default()).unwrap();
    for mode in [Mode::Default, Mode::HtaCompat] {
        let report = analyze(&set, &ReportOptions::default().with_mode(mode));
        let found = disagreements(&report.insights);
        assert!(
            found.is_empty(),
            "{files:?} ({mode:?}) contradicts itself:\n{}\n\n{}",
            found.join("\n"),
            render::render_report(&report)
        );
    }
}

#[test]
fn findings_on_the_vendored_traces_never_disagree() {
    for file in shared_trace_files(&traces_dir()) {
        check(&[file]);
    }
}

#[test]
fn findings_on_hugging_face_traces_never_disagree() {
    let Some(shared) = shared_traces_dir() else {
        skip::skipped(
            "analysis: findings_on_hugging_face_traces_never_disagree",
            "../shared/traces/tracelens is absent (set NEURONPROF_SHARED_TRACES)",
        );
        return;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(shared.join("tracelens"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 6, "{files:?}");
    for file in files {
        check(&[file]);
    }
    // The timesformer step is one step, measured over its device window: device-bound,
    // and the host's longer window is said, not a second verdict.
    let file =
        shared.join("tracelens/mi300_facebook_timesformer-base-finetuned-k400__1016002.json.gz");
    let set = load_paths(&[file], &LoadOptions::default()).unwrap();
    let report = analyze(&set, &ReportOptions::default());
    let summaries: Vec<&str> = report.insights.iter().map(|f| f.summary.as_str()).collect();
    assert!(
        !summaries
            .iter()
            .any(|s| s.contains("for the host to launch")),
        "{summaries:#?}"
    );
    assert!(
        summaries
            .iter()
            .any(|s| s.contains("step 6 (device window): device-bound")
                && s.contains("the host's window of the step is")),
        "{summaries:#?}"
    );
}
