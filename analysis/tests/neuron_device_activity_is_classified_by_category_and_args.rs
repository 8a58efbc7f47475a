//! A `neuron` (PrivateUse1) trace, shaped as DESIGN.md describes ours: launches are
//! `privateuse1_runtime` calls, collectives are kernels with collective args, copies are
//! `gpu_memcpy` with names unlike CUDA's. The default mode classifies them by category and
//! args; HTA's name rules (compat mode) see everything as computation.

use analysis::analyses::kernel_breakdown::kernel_breakdown;
use analysis::analyses::launch_stats::launch_stats;
use analysis::analyses::overlap::comm_comp_overlap;
use analysis::analyses::queue_length::{queue_length_summary, queue_length_summary_with_limit};
use analysis::analyses::steps::{step_splits, Bound};
use analysis::analyses::temporal::temporal_breakdown;
use analysis::analyses::transfers::{transfers, SMALL_TRANSFER_BYTES};
use analysis::{load_paths, Frames, LoadOptions, Mode};

const TRACE: &str = r#"{"schemaVersion": 1, "deviceProperties": [],
 "distributedInfo": {"backend": "neuron", "rank": 0, "world_size": 1},
 "baseTimeNanoseconds": 1700000000000000000,
 "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 10, "tid": 10, "ts": 0.000, "dur": 30.000},
  {"ph": "X", "cat": "privateuse1_runtime", "name": "nrt_execute", "pid": 10, "tid": 10, "ts": 0.000, "dur": 1.000, "args": {"correlation": 1}},
  {"ph": "X", "cat": "privateuse1_runtime", "name": "nrt_execute", "pid": 10, "tid": 10, "ts": 1.500, "dur": 0.500, "args": {"correlation": 2}},
  {"ph": "X", "cat": "privateuse1_runtime", "name": "nrt_copy", "pid": 10, "tid": 10, "ts": 3.000, "dur": 0.500, "args": {"correlation": 3}},
  {"ph": "X", "cat": "kernel", "name": "matmul_bf16", "pid": 0, "tid": 1, "ts": 2.000, "dur": 10.000, "args": {"device": 0, "stream": 1, "correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "all_reduce", "pid": 0, "tid": 2, "ts": 5.000, "dur": 10.000, "args": {"device": 0, "stream": 2, "correlation": 2, "Collective name": "allreduce", "In msg nelems": 1024, "Group size": 2, "dtype": "BFloat16"}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "copy_host_to_device", "pid": 0, "tid": 1, "ts": 20.000, "dur": 2.000, "args": {"device": 0, "stream": 1, "correlation": 3, "bytes": 1024, "memory bandwidth (GB/s)": 0.512}},
  {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 10, "tid": 10, "ts": 0.500, "args": {"Device Type": 20, "Device Id": 0, "Bytes": 1024, "Total Allocated": 1024, "Total Reserved": 2048}}
 ]}"#;

/// Written once per test process: the tests run in parallel and must not read a file
/// another one is still writing.
fn load() -> analysis::TraceSet {
    static PATH: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let path = PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("analysis-neuron-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("neuron.json");
        std::fs::write(&path, TRACE).unwrap();
        path
    });
    load_paths(&[path], &LoadOptions::default()).unwrap()
}

#[test]
fn default_mode_uses_categories_and_collective_args() {
    let traces = load();
    let frames = Frames::build(&traces, Mode::Default);
    let t = &temporal_breakdown(&frames).unwrap().ranks[0];
    assert_eq!(
        (
            t.kernel_time_us,
            t.idle_time_us,
            t.compute_time_us,
            t.non_compute_time_us
        ),
        (20.0, 5.0, 10.0, 5.0)
    );
    let o = &comm_comp_overlap(&frames).ranks[0];
    assert_eq!(
        (o.comm_time_us, o.overlap_time_us, o.comp_comm_overlap_pctg),
        (10.0, 7.0, Some(70.0))
    );
    let k = kernel_breakdown(&frames, 10, 0.8);
    let by: Vec<(&str, f64)> = k
        .by_type
        .iter()
        .map(|t| (t.kernel_type.as_str(), t.sum_us))
        .collect();
    assert_eq!(
        by,
        [
            ("COMPUTATION overlapping COMMUNICATION", 7.0),
            ("COMMUNICATION", 3.0),
            ("COMPUTATION", 3.0),
            ("MEMORY", 2.0)
        ]
    );
    let stats = launch_stats(&frames.ranks[0], 50.0, 100.0);
    assert_eq!(
        stats.gpu_duration.count, 3,
        "privateuse1_runtime launches are paired"
    );
    assert_eq!(stats.launch_delay.max, Some(16.5));
    let queues = queue_length_summary(&frames.ranks[0]);
    assert_eq!(queues.iter().map(|q| q.stream).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(
        queues[0].max_queue_length, 1,
        "stream 1 ran matmul before the copy was launched"
    );
    assert_eq!(queues[0].queue_length.count, 4);
    assert_eq!(queues[0].time_blocked_on_full_queue_us, 0.0);
    let tiny = queue_length_summary_with_limit(&frames.ranks[0], 1);
    // Stream 1 holds one queued item from 0 to 2 µs (matmul) and 3 to 20 µs (the copy).
    assert_eq!(tiny[0].time_blocked_on_full_queue_us, 19.0);
}

#[test]
fn hta_compat_mode_sees_only_computation_in_neuron_names() {
    let traces = load();
    let frames = Frames::build(&traces, Mode::HtaCompat);
    let t = &temporal_breakdown(&frames).unwrap().ranks[0];
    assert_eq!(
        (t.kernel_time_us, t.compute_time_us, t.non_compute_time_us),
        (20.0, 15.0, 0.0)
    );
    assert_eq!(
        comm_comp_overlap(&frames).ranks[0].comp_comm_overlap_pctg,
        None
    );
    assert_eq!(
        launch_stats(&frames.ranks[0], 50.0, 100.0)
            .gpu_duration
            .count,
        0
    );
}

#[test]
fn step_split_separates_exposed_communication_and_host_bound_idle() {
    let traces = load();
    let frames = Frames::build_with(&traces, Mode::Default, false);
    let steps = step_splits(&frames);
    assert_eq!(steps.len(), 1);
    let s = &steps[0];
    assert_eq!((s.step, s.start_us, s.dur_us), (1, 0.0, 30.0));
    assert_eq!(
        (
            s.computation_us,
            s.communication_us,
            s.memory_us,
            s.other_device_us,
            s.host_bound_idle_us,
            s.other_idle_us
        ),
        (10.0, 3.0, 2.0, 0.0, 8.0, 7.0),
        "comm under matmul is hidden; the gaps before matmul and the copy were queued work \
         waiting, the tail had nothing launched"
    );
}

#[test]
fn transfers_and_step_bound() {
    let traces = load();
    let frames = Frames::build_with(&traces, Mode::Default, false);
    assert_eq!(
        step_splits(&frames)[0].bound,
        Bound::Device,
        "15 us busy vs 8 us host-bound"
    );
    let t = transfers(&frames.ranks[0], SMALL_TRANSFER_BYTES);
    assert_eq!(t.len(), 1);
    assert_eq!(
        (
            t[0].kind.as_str(),
            t[0].count,
            t[0].bytes,
            t[0].small_count,
            t[0].busy_us
        ),
        ("copy_host_to_device", 1, 1024, 1, 2.0)
    );
    assert_eq!(t[0].achieved_gbps, Some(0.512));
}
