//! Our analyses in HTA compat mode print the same numbers HTA 0.6 printed on the same
//! traces (`tests/data/traces/hta-reference/*.txt`, vendored with the traces), value by
//! value at HTA's printed precision. Nothing here skips: the traces and the references
//! are part of the repository. The checks themselves are in `support/hta_checks.rs`;
//! `analyses_match_hta_run_here.rs` runs them against HTA 0.5 run on every vendored
//! trace.

mod support {
    pub mod hta_checks;
    pub mod reference;
    pub mod traces;
}

use std::sync::OnceLock;

use analysis::stats::NumpySort;
use analysis::{load_paths, HtaVersion, LoadOptions};
use support::hta_checks::*;
use support::reference::Reference;
use support::traces::traces_dir;

fn load_case(reference: &str, files: &[&str]) -> Case {
    let dir = traces_dir();
    let paths: Vec<_> = files.iter().map(|f| dir.join("hta").join(f)).collect();
    let traces = load_paths(&paths, &LoadOptions::default()).expect("vendored traces load");
    Case {
        reference: Reference::load(reference),
        traces,
        version: HtaVersion::V0_6,
        // HTA's references were printed with numpy's AVX-512 kernel (nccl1's queue
        // length tells the kernels apart).
        sort: NumpySort::Avx512,
    }
}

fn two_rank() -> &'static Case {
    static CASE: OnceLock<Case> = OnceLock::new();
    CASE.get_or_init(|| {
        load_case(
            "two_rank.txt",
            &["two_rank-rank0.json.gz", "two_rank-rank1.json.gz"],
        )
    })
}

fn nccl1() -> &'static Case {
    static CASE: OnceLock<Case> = OnceLock::new();
    CASE.get_or_init(|| load_case("nccl1.txt", &["nccl_data.json.gz"]))
}

/// `mtia.txt` is HTA 0.6 on `hta/mtia_inference_rank_0.json.gz` (14,178 HTA rows, no
/// `ProfilerStep`), the trace vendored beside it.
fn mtia() -> &'static Case {
    static CASE: OnceLock<Case> = OnceLock::new();
    CASE.get_or_init(|| load_case("mtia.txt", &["mtia_inference_rank_0.json.gz"]))
}

fn amd() -> &'static Case {
    static CASE: OnceLock<Case> = OnceLock::new();
    CASE.get_or_init(|| load_case("amd.txt", &["amd_mi250_train.json.gz"]))
}

macro_rules! parity_tests {
    ($case:ident: $($test:ident => $check:ident),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                let case = $case();
                $check(case);
            }
        )*
    };
}

parity_tests!(two_rank:
    two_rank_ranks_device_type_and_iterations_match_hta => check_header,
    two_rank_device_rows_match_hta => check_device_rows,
    two_rank_temporal_breakdown_matches_hta => check_temporal,
    two_rank_comm_comp_overlap_matches_hta => check_overlap,
    two_rank_kernel_breakdown_matches_hta => check_kernel_breakdown,
    two_rank_idle_time_breakdown_matches_hta => check_idle_time,
    two_rank_queue_length_summary_matches_hta => check_queue_length,
    two_rank_memory_bw_summary_matches_hta => check_memory_bw,
    two_rank_kernel_launch_stats_match_hta => check_launch_stats,
    two_rank_potential_stragglers_match_hta => check_stragglers,
);

parity_tests!(nccl1:
    nccl1_ranks_device_type_and_iterations_match_hta => check_header,
    nccl1_device_rows_match_hta => check_device_rows,
    nccl1_temporal_breakdown_matches_hta => check_temporal,
    nccl1_comm_comp_overlap_matches_hta => check_overlap,
    nccl1_kernel_breakdown_matches_hta => check_kernel_breakdown,
    nccl1_idle_time_breakdown_matches_hta => check_idle_time,
    nccl1_memory_bw_summary_matches_hta => check_memory_bw,
    nccl1_kernel_launch_stats_match_hta => check_launch_stats,
    nccl1_potential_stragglers_fail_like_hta => check_stragglers,
);

parity_tests!(mtia:
    mtia_ranks_device_type_and_iterations_match_hta => check_header,
    mtia_device_rows_match_hta => check_device_rows,
    mtia_temporal_breakdown_matches_hta => check_temporal,
    mtia_comm_comp_overlap_matches_hta => check_overlap,
    mtia_kernel_breakdown_matches_hta => check_kernel_breakdown,
    mtia_idle_time_breakdown_matches_hta => check_idle_time,
    mtia_queue_length_summary_matches_hta => check_queue_length,
    mtia_memory_bw_summary_matches_hta => check_memory_bw,
    mtia_kernel_launch_stats_match_hta => check_launch_stats,
    mtia_potential_stragglers_fail_like_hta => check_stragglers,
);

parity_tests!(amd:
    amd_ranks_device_type_and_iterations_match_hta => check_header,
    amd_device_rows_match_hta => check_device_rows,
    amd_temporal_breakdown_matches_hta => check_temporal,
    amd_comm_comp_overlap_matches_hta => check_overlap,
    amd_kernel_breakdown_matches_hta => check_kernel_breakdown,
    amd_idle_time_breakdown_matches_hta => check_idle_time,
    amd_queue_length_summary_matches_hta => check_queue_length,
    amd_memory_bw_summary_matches_hta => check_memory_bw,
    amd_kernel_launch_stats_match_hta => check_launch_stats,
    amd_potential_stragglers_fail_like_hta => check_stragglers,
);

/// nccl1's queue length: HTA sorts launches (+1) and kernel starts (−1) with numpy's
/// unstable quicksort, and on this trace (rounded to µs) 42 of the 5,032 points share a
/// timestamp with another. Their order decides some step values: the sum of the 5,004
/// stream-7 values is 4,036 with every −1 first, 4,118 with every +1 first, 4,072 in the
/// order of numpy's scalar introsort and 4,076 (HTA's printed mean) in the order of
/// numpy's AVX-512 argsort (x86-simd-sort), which compat mode reproduces.
#[test]
fn nccl1_queue_length_summary_matches_hta() {
    let case = nccl1();
    check_queue_length(case);
}

/// Where the default mode must differ from HTA on MTIA: HTA's rounding (`ts` up, the end
/// down, to whole µs) gives 207 sub-µs `event_record` rows a duration of −1 µs, and HTA
/// sums them: its table says `event_record` −198 µs in all, min −1 (compat mode prints
/// the same, checked value by value above). A negative duration is damage, not time: the
/// default mode keeps the exact durations (every one positive), and both modes' reports
/// say so in a note.
#[test]
fn mtia_negative_durations_are_htas_rounding_and_the_default_mode_keeps_exact_ones() {
    use analysis::analyses::kernel_breakdown::kernel_breakdown;
    use analysis::{analyze, Frames, Mode, ReportOptions};
    let case = mtia();
    let compat = kernel_breakdown(&case.frames(), 5, 0.8);
    let hta = compat
        .kernels
        .iter()
        .find(|k| &*k.name == "event_record")
        .expect("event_record in compat mode");
    assert_eq!((hta.sum_us, hta.min_us), (-198.0, -1.0), "HTA's table");

    let frames = Frames::build_for(&case.traces, Mode::Default, HtaVersion::V0_6, true);
    let default = kernel_breakdown(&frames, 5, 0.8);
    let exact = default
        .kernels
        .iter()
        .find(|k| &*k.name == "event_record")
        .expect("event_record in the default mode");
    assert!(exact.min_us > 0.0, "exact durations: {exact:?}");
    assert_eq!(exact.count, 291, "every event_record row, none folded");
    let trace = &case.traces.ranks[0];
    let exact_sum_ns: i64 = trace
        .rows
        .iter()
        .filter(|r| trace.name(r) == "event_record")
        .map(|r| r.dur_ns)
        .sum();
    assert!((exact.sum_us - exact_sum_ns as f64 / 1000.0).abs() < 1e-6);

    for (options, says) in [
        (
            ReportOptions::hta_reference(),
            "counted so here, as HTA does",
        ),
        (ReportOptions::default(), "keep their exact durations"),
    ] {
        let report = analyze(&case.traces, &options);
        assert!(
            report
                .notes
                .iter()
                .any(|n| n.contains("207 sub-us device rows") && n.contains(says)),
            "{:?}: {:?}",
            options.mode,
            report.notes
        );
    }
}
