//! Trace diff on `hta/compare_base.json.gz` and `hta/compare_test.json.gz` (the same files
//! as HTA's `tests/data/trace_compare/{base,test}`, identical git blobs) gives what HTA's
//! own `tests/test_trace_diff.py` (v0.6.1) expects; the numbers below are transcribed
//! from that file's `setUp`.

mod support {
    pub mod traces;
}

use std::collections::BTreeMap;

use analysis::analyses::trace_diff::{compare_traces, ops_summary, DeviceFilter, DiffOptions};
use analysis::{load_paths, LoadOptions, Mode, TraceSet};
use support::traces::traces_dir;

fn load(file: &str) -> TraceSet {
    let path = traces_dir().join("hta").join(file);
    load_paths(&[path], &LoadOptions::default()).expect("trace loads")
}

fn options(device: DeviceFilter, short: bool) -> DiffOptions {
    DiffOptions::default()
        .at(1, vec![1010])
        .device(device)
        .short_names(short)
        .mode(Mode::HtaCompat)
}

#[test]
fn base_trace_cpu_summary_matches_hta_test() {
    let base = load("compare_base.json.gz");
    let summary = ops_summary(&base, &options(DeviceFilter::Cpu, false)).unwrap();
    let got: BTreeMap<&str, (u64, f64)> = summary
        .ops
        .iter()
        .map(|(n, t)| (n.as_str(), (t.counts, t.total_duration_us)))
        .collect();
    // test_trace_diff.py, "test_user_annotation_summary".
    let expected: BTreeMap<&str, (u64, f64)> = [
        ("ProfilerStep#1010", (1, 122149.0)),
        ("aten::as_strided", (1, 0.0)),
        ("aten::empty", (1, 0.0)),
        ("cudaEventQuery", (1, 4.0)),
        ("cudaLaunchKernel", (1, 4.0)),
        ("nccl:all_reduce", (1, 67.0)),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, expected);
    // "test_num_gpu_events": 1.
    let gpu = ops_summary(&base, &options(DeviceFilter::Gpu, false)).unwrap();
    assert_eq!(gpu.ops.values().map(|t| t.counts).sum::<u64>(), 1);
}

#[test]
fn change_categories_and_ops_diff_match_hta_test() {
    let (base, test) = (load("compare_base.json.gz"), load("compare_test.json.gz"));
    let count = |device| {
        let diff = compare_traces(
            &ops_summary(&base, &options(device, true)).unwrap(),
            &ops_summary(&test, &options(device, true)).unwrap(),
        );
        let mut by: BTreeMap<char, usize> = BTreeMap::new();
        for row in &diff.rows {
            *by.entry(row.counts_change_category).or_default() += 1;
        }
        by
    };
    // "counts_change_categories": cpu {"=": 5, "+": 3, "-": 1}, gpu {"-": 1}.
    assert_eq!(
        count(DeviceFilter::Cpu),
        [('+', 3), ('-', 1), ('=', 5)].into_iter().collect()
    );
    assert_eq!(count(DeviceFilter::Gpu), [('-', 1)].into_iter().collect());
    let diff = compare_traces(
        &ops_summary(&base, &options(DeviceFilter::Cpu, false)).unwrap(),
        &ops_summary(&test, &options(DeviceFilter::Cpu, false)).unwrap(),
    )
    .ops_diff();
    assert_eq!(
        diff.added,
        ["AddmmBackward0", "All2All_Pooled_Req", "CatBackward0"]
    );
    assert_eq!(diff.deleted, ["nccl:all_reduce"]);
    assert!(diff.increased.is_empty() && diff.decreased.is_empty());
    assert_eq!(
        diff.unchanged,
        [
            "ProfilerStep#1010",
            "aten::as_strided",
            "aten::empty",
            "cudaEventQuery",
            "cudaLaunchKernel"
        ]
    );
}

#[test]
fn unknown_iteration_is_an_error() {
    let base = load("compare_base.json.gz");
    let err = ops_summary(&base, &DiffOptions::default().at(1, vec![7])).unwrap_err();
    assert!(err.to_string().contains("no iteration 7"), "{err}");
}
