//! A launch whose work starts late is a finding only where the device sat idle waiting
//! for it. On HTA's MTIA trace 264 of 444 launches start more than 100 µs late, every one
//! behind work already running on the device (its streams are busy 96 % of the time):
//! the device-bound case, no finding. (A launch there runs several device rows; only
//! the first waited for the launch, the others were queued behind it: HTA pairs each
//! row with the launch and counts 811 of 991.) On the two-rank CUDA trace, rank 0's device sat
//! idle through 363 of its 469 late launches: a finding, with both counts.

mod support {
    pub mod traces;
}

use analysis::insights::FindingKind;
use analysis::{analyze, load_paths, LoadOptions, ReportOptions};
use support::traces::traces_dir;

fn launch_findings(report: &analysis::Report) -> Vec<&analysis::insights::Finding> {
    report
        .insights
        .iter()
        .filter(|f| f.kind == FindingKind::LaunchDelays)
        .collect()
}

#[test]
fn late_launches_behind_queued_work_are_not_a_finding() {
    let traces = load_paths(
        &[traces_dir().join("hta/mtia_inference_rank_0.json.gz")],
        &LoadOptions::default(),
    )
    .unwrap();
    let report = analyze(&traces, &ReportOptions::default());
    let stats = &report.per_rank[0].launch_stats;
    assert_eq!(
        (
            stats.launch_delay.count,
            stats.launch_delay_outliers,
            stats.idle_launch_delay_outliers
        ),
        (444, 264, 0)
    );
    assert!(launch_findings(&report).is_empty(), "{:?}", report.insights);
}

#[test]
fn late_launches_on_an_idle_device_are_a_finding() {
    let dir = traces_dir();
    let paths = [
        dir.join("hta/two_rank-rank0.json.gz"),
        dir.join("hta/two_rank-rank1.json.gz"),
    ];
    let traces = load_paths(&paths, &LoadOptions::default()).unwrap();
    let report = analyze(&traces, &ReportOptions::default());
    let stats = &report.per_rank[0].launch_stats;
    assert_eq!(
        (
            stats.launch_delay.count,
            stats.launch_delay_outliers,
            stats.idle_launch_delay_outliers
        ),
        (602, 469, 363)
    );
    let findings = launch_findings(&report);
    assert_eq!(findings.len(), 1, "{:?}", report.insights);
    assert!(
        findings[0]
            .summary
            .contains("sat idle more than 100 us waiting for 363 of 602 launches (469 started"),
        "{}",
        findings[0].summary
    );
}
