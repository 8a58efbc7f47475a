//! Traces written by our profiler for the emulated neuron device (`tests/data/README.md`
//! says how they were made): collectives, idle time and the device label.

use std::path::PathBuf;

use analysis::analyses::idle_time::IdleCategory;
use analysis::analyses::stragglers::potential_stragglers;
use analysis::{analyze, load_paths, Frames, LoadOptions, Mode, ReportOptions, TraceSet};

fn gpt_two_ranks() -> TraceSet {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/gpt-2ranks-4steps");
    let paths = [
        dir.join("rank0.pt.trace.json.gz"),
        dir.join("rank1.pt.trace.json.gz"),
    ];
    load_paths(&paths, &LoadOptions::default()).unwrap()
}

#[test]
fn neuron_collective_kernels_are_communication_in_both_modes() {
    let set = gpt_two_ranks();
    for mode in [Mode::Default, Mode::HtaCompat] {
        let frames = Frames::build(&set, mode);
        let collectives: Vec<_> = frames.ranks[0]
            .device_rows()
            .filter(|r| frames.ranks[0].name(r).starts_with("ncclDevKernel_"))
            .collect();
        assert!(!collectives.is_empty());
        assert!(collectives
            .iter()
            .all(|r| r.kernel_type == analysis::KernelType::Communication));
    }
    // Rank 1 runs 2x slower: it arrives last at every collective and waits for no one,
    // so its own copies are short; the default mode still finds it, HTA's name rule
    // does not see neuron collectives.
    let frames = Frames::build(&set, Mode::Default);
    let stragglers = potential_stragglers(&frames, 1).unwrap();
    assert!(stragglers.kernel.starts_with("ncclDevKernel_AllReduce"));
    assert_eq!(stragglers.stragglers, vec![1]);
    let compat = Frames::build(&set, Mode::HtaCompat);
    assert!(potential_stragglers(&compat, 1).is_err());
}

#[test]
fn collectives_are_found_by_their_args_in_default_mode() {
    // Neuron's names (`ncclDevKernel_…`) and a name no rule knows, both with NCCL args:
    // the default mode finds the late rank; HTA's rule (`ncclKernel*`) finds nothing.
    for name in ["ncclDevKernel_AllReduce_Sum_bf16_MESH", "all_reduce_bf16"] {
        stragglers_with_collective_named(name);
    }
}

fn stragglers_with_collective_named(name: &str) {
    let dir = std::env::temp_dir().join(format!(
        "analysis-coll-args-{}-{}",
        std::process::id(),
        name.len()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let mut paths = Vec::new();
    for rank in 0..3i64 {
        let mut events = Vec::new();
        for step in 1..=3i64 {
            let t = step * 1000;
            let late = if rank == 2 { 300 } else { 0 };
            events.push(format!(
                r#"{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{step}", "pid": 1, "tid": 1, "ts": {t}, "dur": 1000}}"#
            ));
            let corr = step * 10;
            events.push(format!(
                r#"{{"ph": "X", "cat": "privateuse1_runtime", "name": "nrt_execute", "pid": 1, "tid": 1, "ts": {}, "dur": 5, "args": {{"correlation": {corr}}}}}"#,
                t + 10
            ));
            events.push(format!(
                r#"{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": 3, "ts": {}, "dur": {}, "args": {{"stream": 3, "correlation": {corr}, "Collective name": "allreduce", "Process Group Name": "0", "Seq": {step}, "Group size": 3, "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "BFloat16"}}}}"#,
                t + 100 + late,
                // The late rank waits for no one: its copy is the short one.
                if rank == 2 { 2 } else { 400 }
            ));
        }
        let path = dir.join(format!("rank{rank}.json"));
        std::fs::write(
            &path,
            format!(
                r#"{{"distributedInfo": {{"rank": {rank}}}, "traceEvents": [{}]}}"#,
                events.join(",\n")
            ),
        )
        .unwrap();
        paths.push(path);
    }
    let set = load_paths(&paths, &LoadOptions::default()).unwrap();
    let stragglers = potential_stragglers(&Frames::build(&set, Mode::Default), 1).unwrap();
    assert_eq!(stragglers.kernel, name);
    assert_eq!(stragglers.stragglers, vec![2]);
    // Two candidates: every rank is among the two latest in some way; the tie goes to
    // the latest starter.
    let two = potential_stragglers(&Frames::build(&set, Mode::Default), 2).unwrap();
    assert_eq!(two.stragglers[0], 2);
    assert!(potential_stragglers(&Frames::build(&set, Mode::HtaCompat), 1).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn back_to_back_kernels_have_no_negative_kernel_wait() {
    // Each neuron launch has two runtime rows with its correlation (`nrt_execute`,
    // `nrt_queue_submit`); HTA's merge keeps the kernel twice, and the copy's gap to
    // itself was −duration.
    let set = gpt_two_ranks();
    let report = analyze(&set, &ReportOptions::default().with_ranks(Some(vec![0, 1])));
    for rank in &report.per_rank {
        let kernel_wait: Vec<_> = rank
            .idle_time
            .entries
            .iter()
            .filter(|e| e.idle_category == IdleCategory::KernelWait)
            .collect();
        assert!(!kernel_wait.is_empty());
        for entry in rank.idle_time.entries.iter() {
            assert!(entry.idle_time_us >= 0.0, "{entry:?}");
            assert!(
                entry.interval_stats.min.is_none_or(|m| m >= 0.0),
                "{entry:?}"
            );
        }
    }
    let frames = Frames::build(&set, Mode::Default);
    for frame in &frames.ranks {
        let mut seen = std::collections::HashSet::new();
        for row in frame.device_rows() {
            assert!(seen.insert(row.row), "device row kept twice");
        }
    }
}

#[test]
fn device_label_comes_from_device_properties() {
    let set = gpt_two_ranks();
    assert_eq!(
        set.ranks[0].device_label(),
        "Trainium2 NeuronCore (trn2, LNC=2)"
    );
    let report = analyze(&set, &ReportOptions::default());
    assert_eq!(report.device_type, "Trainium2 NeuronCore (trn2, LNC=2)");
    // Compat mode keeps HTA's label (no CUDA/HIP launch names here).
    let compat = analyze(&set, &ReportOptions::hta_reference());
    assert_eq!(compat.device_type, "UNKNOWN GPU");
}

#[test]
fn each_launch_is_queued_and_timed_once() {
    // Two runtime rows per neuron launch: the queue must still drain to 0.
    let set = gpt_two_ranks();
    let report = analyze(&set, &ReportOptions::default());
    let rank0 = &report.per_rank[0];
    for stream in &rank0.queue_length {
        assert_eq!(stream.queue_length.min, Some(0.0), "{stream:?}");
        assert!(stream.max_queue_length < 50, "{stream:?}");
    }
    let kernels = Frames::build(&set, Mode::Default).ranks[0]
        .device_rows()
        .count() as u64;
    assert_eq!(rank0.launch_stats.launch_delay.count, kernels);
}

#[test]
fn repeated_correlation_ids_pair_each_kernel_with_its_own_launch() {
    // The same correlation id twice (as in traces stitched from copies): the default
    // mode pairs each kernel with the launch just before it, not with both.
    let dir = std::env::temp_dir().join(format!("analysis-repeat-corr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rank0.json");
    let mut events = Vec::new();
    for (i, t) in [0i64, 1000].into_iter().enumerate() {
        events.push(format!(
            r#"{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": 1, "tid": 1, "ts": {t}, "dur": 1000}}"#,
            i + 1
        ));
        events.push(format!(
            r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {}, "dur": 10, "args": {{"correlation": 7}}}}"#,
            t + 10
        ));
        events.push(format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": {}, "dur": 100, "args": {{"stream": 7, "correlation": 7}}}}"#,
            t + 40
        ));
    }
    std::fs::write(
        &path,
        format!(r#"{{"traceEvents": [{}]}}"#, events.join(",\n")),
    )
    .unwrap();
    let set = load_paths(&[&path], &LoadOptions::default()).unwrap();
    let frames = Frames::build_with(&set, Mode::Default, false);
    let stats = analysis::analyses::launch_stats::launch_stats(&frames.ranks[0], 50.0, 100.0);
    assert_eq!(stats.launch_delay.count, 2);
    assert_eq!(stats.launch_delay.max, Some(20.0));
    // HTA's merge pairs all four ways.
    let compat = Frames::build_with(&set, Mode::HtaCompat, false);
    let hta = analysis::analyses::launch_stats::launch_stats(&compat.ranks[0], 50.0, 100.0);
    assert_eq!(hta.launch_delay.count, 4);
    // HTA's queue length asserts one launch per device row and raises here.
    use analysis::analyses::queue_length::queue_length_summary;
    assert!(queue_length_summary(&compat.ranks[0]).is_empty());
    let queue = queue_length_summary(&frames.ranks[0]);
    assert_eq!(queue[0].max_queue_length, 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Rank 1 runs 2x slower, so rank 0's collectives wait for it: of rank 0's exposed
/// communication, the waiting is told apart from moving data (`peer_wait_us`, the
/// Steps table's "of which waiting for peers"), never more than its collectives waited
/// in the step; the slow rank waits for nobody; and the rank that waits is not called
/// device-bound.
#[test]
fn waiting_for_a_late_peer_is_told_apart_from_moving_data() {
    let report = analyze(&gpt_two_ranks(), &ReportOptions::default());
    assert_eq!(report.collectives.bottleneck_rank, Some(1));
    let (mut waited_us, mut exposed_us) = (0.0, 0.0);
    for s in &report.steps {
        let in_collectives: f64 = report
            .collectives
            .per_step
            .iter()
            .filter(|c| c.rank == s.rank && c.step == Some(s.step))
            .map(|c| c.wait_us)
            .sum();
        assert!(s.peer_wait_us <= s.communication_us + 1e-6, "{s:?}");
        assert!(s.peer_wait_us <= in_collectives + 1e-6, "{s:?}");
        if s.rank == 1 {
            assert_eq!(s.peer_wait_us, 0.0, "the slow rank waits for nobody: {s:?}");
        } else {
            waited_us += s.peer_wait_us;
            exposed_us += s.communication_us;
        }
    }
    // Rank 0's exposed communication is nearly all waiting (369 of 379 us in step 2).
    assert!(waited_us > 0.9 * exposed_us, "{waited_us} of {exposed_us}");
    let text = analysis::render::render_report(&report);
    assert!(
        text.contains("of which waiting for peers us"),
        "the Steps table shows it: {text}"
    );
    for f in &report.insights {
        if f.kind == analysis::insights::FindingKind::DeviceBoundStep {
            assert_eq!(f.rank, Some(1), "{}", f.summary);
        }
    }
    // The utilization's busy time holds the same waiting, told apart: the time the
    // device ran only collectives waiting for a peer is the steps' exposed waiting
    // (the window spans the steps), none on the slow rank; and the MFU finding that
    // quotes the busy share says so.
    for d in &report.utilization {
        let rank_waited: f64 = report
            .steps
            .iter()
            .filter(|s| s.rank == d.rank)
            .map(|s| s.peer_wait_us)
            .sum();
        assert!(d.peer_wait_pct <= d.device_busy_pct, "{d:?}");
        assert!(
            (d.peer_wait_pct - 100.0 * d.peer_wait_us / d.window_us).abs() < 1e-9,
            "{d:?}"
        );
        if d.rank == 1 {
            assert_eq!(d.peer_wait_us, 0.0, "the slow rank waits for nobody: {d:?}");
        } else {
            assert!(
                (d.peer_wait_us - rank_waited).abs() <= 0.01 * rank_waited + 1.0,
                "the steps' exposed waiting {rank_waited} us: {d:?}"
            );
            assert!(d.working_pct() < d.device_busy_pct, "{d:?}");
        }
    }
    assert!(
        text.contains("of it only waiting for peers %"),
        "the utilization table shows it: {text}"
    );
    for f in &report.insights {
        if f.kind == analysis::insights::FindingKind::LowMfu && f.rank == Some(0) {
            assert!(f.summary.contains("waiting for peers"), "{}", f.summary);
        }
    }
}
