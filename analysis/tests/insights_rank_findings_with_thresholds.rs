//! Insights on the two-rank CUDA trace: the device idle more than half the time and
//! communication barely overlapped are found, with their numbers and thresholds, ranked,
//! each once for both ranks.

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
    // The same finding on both ranks is one line: the ranks, the count, median, min, max.
    let idle: Vec<_> = report
        .insights
        .iter()
        .filter(|f| f.kind == FindingKind::DeviceIdle)
        .collect();
    assert_eq!(idle.len(), 1, "one line for both ranks: {idle:?}");
    let idle = idle[0];
    // temporal_breakdown of two_rank.txt: 53.56 and 54.72 % idle.
    assert_eq!((idle.rank, &idle.ranks, idle.count), (None, &vec![0, 1], 2));
    assert_eq!(
        (idle.value_min, idle.value_max, idle.threshold),
        (53.56, 54.72, 50.0)
    );
    assert!((idle.value - 54.14).abs() < 1e-9, "median {}", idle.value);
    assert!(
        idle.summary.starts_with("ranks [0, 1]: device idle")
            && idle.summary.contains("median 54.1%")
            && idle.summary.contains("min 53.6%, max 54.7%"),
        "{}",
        idle.summary
    );
    let overlap: Vec<_> = report
        .insights
        .iter()
        .filter(|f| f.kind == FindingKind::CommunicationNotOverlapped)
        .collect();
    assert_eq!(overlap.len(), 1, "{overlap:?}");
    assert_eq!(
        (
            &overlap[0].ranks,
            overlap[0].value_min,
            overlap[0].value_max
        ),
        (&vec![0, 1], 11.81, 20.05)
    );
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
