//! Insights on the two-rank CUDA trace: the device idle more than half the time and
//! communication barely overlapped are found, with their numbers and thresholds, ranked.

mod support {
    pub mod traces;
}

use analysis::insights::FindingKind;
use analysis::{analyze, load_paths, render, LoadOptions, ReportOptions};
use support::traces::traces_dir;

#[test]
fn two_rank_findings() {
    let dir = traces_dir();
    let paths = [
        dir.join("hta/two_rank-rank0.json.gz"),
        dir.join("hta/two_rank-rank1.json.gz"),
    ];
    let traces = load_paths(&paths, &LoadOptions::default()).unwrap();
    let report = analyze(&traces, &ReportOptions::hta_reference());
    let idle: Vec<(Option<i64>, f64, f64)> = report
        .insights
        .iter()
        .filter(|f| f.kind == FindingKind::DeviceIdle)
        .map(|f| (f.rank, f.value, f.threshold))
        .collect();
    // temporal_breakdown of two_rank.txt: 53.56 and 54.72 % idle.
    assert_eq!(idle, [(Some(1), 54.72, 50.0), (Some(0), 53.56, 50.0)]);
    let overlap: Vec<(Option<i64>, f64)> = report
        .insights
        .iter()
        .filter(|f| f.kind == FindingKind::CommunicationNotOverlapped)
        .map(|f| (f.rank, f.value))
        .collect();
    assert_eq!(overlap.len(), 2, "{overlap:?}");
    assert!(overlap.contains(&(Some(0), 11.81)) && overlap.contains(&(Some(1), 20.05)));
    assert!(report.insights.windows(2).all(|w| w[0].score >= w[1].score));
    let text = render::render_report(&report);
    let first_section = text.lines().nth(2).unwrap_or("");
    assert!(
        first_section.starts_with("Insights"),
        "insights come first:\n{text}"
    );
}

#[test]
fn one_step_can_be_selected_even_the_last() {
    let dir = traces_dir();
    let paths = [
        dir.join("hta/two_rank-rank0.json.gz"),
        dir.join("hta/two_rank-rank1.json.gz"),
    ];
    let traces = load_paths(&paths, &LoadOptions::default()).unwrap();
    let options = ReportOptions::hta_reference();
    let default = analyze(&traces, &options);
    let first = analyze(&traces, &options.clone().with_step(Some(551)));
    let last = analyze(&traces, &options.with_step(Some(552)));
    let kernel_time =
        |r: &analysis::Report| r.temporal_breakdown.as_ref().unwrap().ranks[0].kernel_time_us;
    // HTA's selection is step 551 (the last step is dropped), so these agree …
    assert_eq!(kernel_time(&first), kernel_time(&default));
    // … and the last step can be analyzed on its own.
    assert_ne!(kernel_time(&last), kernel_time(&default));
    assert!(last.steps.iter().all(|s| s.step == 552));
}
