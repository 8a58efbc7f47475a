//! Neuron utilization: engine and core activity, MFU/HFU, DMA, TensorE throttling, steps
//! — on a small synthetic trace with known answers, and on a real trace of our profiler.

use std::path::{Path, PathBuf};

use analysis::analyses::utilization::{utilization, EngineSource, UtilizationOptions};
use analysis::insights::FindingKind;
use analysis::{analyze, load_paths, LoadOptions, ReportOptions};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * b.abs().max(1.0)
}

/// One step of 100 µs; two kernels (one with 1 GFLOP); TensorE instructions on core 0
/// (a restart after 6 µs idle, then one 1 µs after), VectorE on core 1, a
/// `semaphore_wait`; three DMAs, one large; a DMA outside the step.
fn synthetic(dir: &Path, with_instructions: bool) -> PathBuf {
    let mut events = vec![
        r#"{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100}"#.to_owned(),
        r#"{"ph": "X", "cat": "privateuse1_runtime", "name": "nrt_execute", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"correlation": 1}}"#.to_owned(),
        r#"{"ph": "X", "cat": "privateuse1_runtime", "name": "nrt_execute", "pid": 1, "tid": 1, "ts": 2, "dur": 1, "args": {"correlation": 2}}"#.to_owned(),
        r#"{"ph": "X", "cat": "kernel", "name": "matmul_bf16", "pid": 0, "tid": 0, "ts": 10, "dur": 20, "args": {"device": 0, "stream": 0, "correlation": 1, "flops": 1000000000, "TensorE busy (ns)": 15000}}"#.to_owned(),
        r#"{"ph": "X", "cat": "kernel", "name": "add_bf16", "pid": 0, "tid": 0, "ts": 40, "dur": 10, "args": {"device": 0, "stream": 0, "correlation": 2, "VectorE busy (ns)": 5000}}"#.to_owned(),
        r#"{"ph": "X", "cat": "neuron_dma", "name": "dma HtoD", "pid": 0, "tid": 10001, "ts": 0, "dur": 2, "args": {"device": 0, "dma queue": 1, "kernel correlation": 1, "bytes": 1024}}"#.to_owned(),
        r#"{"ph": "X", "cat": "neuron_dma", "name": "dma HtoD", "pid": 0, "tid": 10001, "ts": 2, "dur": 2, "args": {"device": 0, "dma queue": 1, "kernel correlation": 1, "bytes": 1048576}}"#.to_owned(),
        r#"{"ph": "X", "cat": "neuron_dma", "name": "dma DtoD", "pid": 0, "tid": 10002, "ts": 1, "dur": 2, "args": {"device": 0, "dma queue": 2, "kernel correlation": 1, "bytes": 2048}}"#.to_owned(),
        r#"{"ph": "X", "cat": "neuron_dma", "name": "dma DtoH", "pid": 0, "tid": 10002, "ts": 150, "dur": 2, "args": {"device": 0, "dma queue": 2, "kernel correlation": 2, "bytes": 64}}"#.to_owned(),
    ];
    if with_instructions {
        let instr = |name: &str,
                     tid: i64,
                     core: i64,
                     engine: &str,
                     ts: i64,
                     dur: i64,
                     flops: i64| {
            format!(
                r#"{{"ph": "X", "cat": "neuron_instruction", "name": "{name}", "pid": 0, "tid": {tid}, "ts": {ts}, "dur": {dur}, "args": {{"device": 0, "core": {core}, "engine": "{engine}", "kernel correlation": 1, "flops": {flops}}}}}"#
            )
        };
        events.push(instr("matmul", 1000, 0, "TensorE", 10, 4, 600_000_000));
        events.push(instr("semaphore_wait", 1000, 0, "TensorE", 14, 2, 0));
        events.push(instr("matmul", 1000, 0, "TensorE", 20, 5, 600_000_000));
        events.push(instr("matmul", 1000, 0, "TensorE", 26, 2, 0));
        events.push(instr("tensor_tensor", 1101, 1, "VectorE", 40, 5, 0));
    }
    let json = format!(
        r#"{{"deviceProperties": [{{"id": 0, "name": "NeuronCore 0 (trn2, LNC=2)", "deviceType": "neuron", "profile": "trn2", "coreVersion": "v3", "lnc": 2, "peakTflops": {{"bf16": 100.0, "fp32": 25.0}}, "totalGlobalMem": 1000000}}],
            "traceEvents": [{}]}}"#,
        events.join(",\n")
    );
    let path = dir.join(format!("synthetic-{with_instructions}.json"));
    std::fs::write(&path, json).unwrap();
    path
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("analysis-util-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn engines_cores_flops_dma_and_throttling_from_instructions() {
    let dir = temp_dir("instr");
    let set = load_paths(&[synthetic(&dir, true)], &LoadOptions::default()).unwrap();
    let devices = utilization(&set.ranks[0], &UtilizationOptions::default());
    assert_eq!(devices.len(), 1);
    let d = &devices[0];
    assert_eq!((d.device, d.window_us), (0, 100.0));
    assert!(close(d.device_busy_pct, 30.0), "{}", d.device_busy_pct);
    assert_eq!(d.engine_source, EngineSource::Instructions);
    let engines: Vec<_> = d
        .engines
        .iter()
        .map(|e| {
            (
                e.core,
                e.engine.as_str(),
                e.busy_us,
                e.instructions,
                e.wait_us,
            )
        })
        .collect();
    assert_eq!(
        engines,
        [
            (Some(0), "TensorE", 11.0, 3, 2.0),
            (Some(1), "VectorE", 5.0, 1, 0.0)
        ]
    );
    assert!(close(d.engines[0].active_pct, 11.0));
    let cores: Vec<_> = d.cores.iter().map(|c| (c.core, c.busy_us)).collect();
    assert_eq!(cores, [(0, 11.0), (1, 5.0)]);
    assert_eq!(d.model_flops, 1_000_000_000);
    assert_eq!(d.hardware_flops, Some(1_200_000_000));
    assert_eq!(
        (d.peak_tflops, d.peak_dtype.as_deref()),
        (Some(100.0), Some("bf16"))
    );
    assert!(close(d.mfu_pct.unwrap(), 10.0), "{:?}", d.mfu_pct);
    assert!(close(d.hfu_pct.unwrap(), 12.0), "{:?}", d.hfu_pct);
    // TensorE restarts at 10 µs (first) and 20 µs (6 µs idle): 4 + 5 µs issued in the
    // ramp; the instruction at 26 µs follows 1 µs idle, past the ramp.
    assert_eq!(d.tensor_throttled_us, Some(9.0));
    assert_eq!(d.tensor_throttle_events, 2);
    let dma = d.dma.as_ref().unwrap();
    assert_eq!((dma.transfers, dma.bytes, dma.queues), (3, 1_051_648, 2));
    assert_eq!((dma.busy_us, dma.transfer_time_us), (4.0, 6.0));
    assert!(close(dma.active_pct, 4.0));
    assert!(close(dma.queue_utilization_pct, 3.0));
    assert!(close(dma.achieved_gbps.unwrap(), 262.912));
    assert_eq!(
        (dma.small_transfers, dma.small_bytes, dma.small_time_us),
        (2, 3072, 4.0)
    );
    // Peak for another dtype.
    let fp32 = UtilizationOptions::default().with_peak_dtype("fp32");
    let d = &utilization(&set.ranks[0], &fp32)[0];
    assert!(close(d.mfu_pct.unwrap(), 40.0));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn engines_from_kernel_busy_args_without_instructions() {
    let dir = temp_dir("args");
    let set = load_paths(&[synthetic(&dir, false)], &LoadOptions::default()).unwrap();
    let d = &utilization(&set.ranks[0], &UtilizationOptions::default())[0];
    assert_eq!(d.engine_source, EngineSource::KernelArgs);
    let engines: Vec<_> = d
        .engines
        .iter()
        .map(|e| (e.core, e.engine.as_str(), e.busy_us))
        .collect();
    assert_eq!(engines, [(None, "TensorE", 15.0), (None, "VectorE", 5.0)]);
    assert!(d.cores.is_empty());
    assert_eq!((d.hardware_flops, d.hfu_pct), (None, None));
    assert!(close(d.mfu_pct.unwrap(), 10.0));
    assert_eq!(d.tensor_throttled_us, None);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn real_trace_utilization_insights_and_json() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/gpt-2ranks-4steps");
    let paths = [
        dir.join("rank0.pt.trace.json.gz"),
        dir.join("rank1.pt.trace.json.gz"),
    ];
    let set = load_paths(&paths, &LoadOptions::default()).unwrap();
    let report = analyze(&set, &ReportOptions::default());
    assert_eq!(report.utilization.len(), 2);
    for (d, trace) in report.utilization.iter().zip(&set.ranks) {
        assert_eq!(d.rank, trace.rank);
        assert_eq!(d.engine_source, EngineSource::Instructions);
        assert_eq!(d.peak_tflops, Some(158.0));
        // LNC=2: both physical cores ran instructions.
        assert_eq!(d.cores.iter().map(|c| c.core).collect::<Vec<_>>(), [0, 1]);
        // The instructions add up to the kernels' `<engine> busy (ns)` args.
        let from_args = utilization(
            &strip_instructions(trace.clone()),
            &UtilizationOptions::default(),
        );
        assert_eq!(from_args[0].engine_source, EngineSource::KernelArgs);
        for e in &from_args[0].engines {
            let from_instructions: f64 = d
                .engines
                .iter()
                .filter(|i| i.engine == e.engine)
                .map(|i| i.busy_us)
                .sum();
            assert!(
                (from_instructions - e.busy_us).abs() <= 0.01 * e.busy_us + 1.0,
                "{}: {from_instructions} vs {}",
                e.engine,
                e.busy_us
            );
        }
        let mfu = d.mfu_pct.unwrap();
        assert!(mfu > 0.0 && mfu < 1.0, "{mfu}");
        assert!(d.device_busy_pct > 50.0);
        let dma = d.dma.as_ref().unwrap();
        assert!(dma.transfers > 1000);
        assert_eq!(
            dma.small_transfers, dma.transfers,
            "the tiny model moves tiles"
        );
        assert!(d.tensor_throttled_us.unwrap() > 0.0);
        assert_eq!(d.host_bound_steps + d.device_bound_steps, 2);
    }
    let kinds: Vec<_> = report.insights.iter().map(|f| f.kind).collect();
    assert!(kinds.contains(&FindingKind::LowMfu));
    assert!(kinds.contains(&FindingKind::SmallDmas));
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["utilization"][0]["engine_source"], "instructions");
    assert!(json["utilization"][0]["dma"]["small_transfers"].is_u64());
    let text = analysis::render::render_report(&report);
    assert!(text.contains("Neuron utilization") && text.contains("TensorE"));
}

fn strip_instructions(mut trace: analysis::RankTrace) -> analysis::RankTrace {
    trace.engine_rows.clear();
    trace
}

/// A Neuron Explorer profile's `Throttle` rows, as the `neuron-explorer` reader gives
/// them (`neuron_throttle`, one track per physical core): the time any core of the
/// device was throttled in the window, and the spans starting in it; a Kineto trace of
/// the emulator has none.
#[test]
fn measured_throttling_is_the_union_of_throttle_spans_in_the_window() {
    let dir = temp_dir("throttle");
    let path = synthetic(&dir, true);
    let text = std::fs::read_to_string(&path).unwrap();
    let throttle = |core: i64, ts: i64, dur: i64| {
        format!(
            r#"{{"ph": "X", "cat": "neuron_throttle", "name": "throttle activity_0", "pid": 0, "tid": {}, "ts": {ts}, "dur": {dur}, "args": {{"device": 0, "core": {core}, "type": "activity_0", "k": 3, "n": 4, "utilization_limit_pct": 75.0}}}}"#,
            8500 + core
        )
    };
    // Core 0 throttled 10..30 µs, core 1 20..40 µs (overlapping: 30 µs of the window),
    // and a span from 90 µs that runs past the step's end (10 µs of it counts).
    let rows = [
        throttle(0, 10, 20),
        throttle(1, 20, 20),
        throttle(0, 90, 50),
    ]
    .join(",\n");
    let throttled = dir.join("throttled.json");
    std::fs::write(
        &throttled,
        text.replacen(
            "\"traceEvents\": [",
            &format!("\"traceEvents\": [{rows},\n"),
            1,
        ),
    )
    .unwrap();
    let set = load_paths(&[throttled], &LoadOptions::default()).unwrap();
    let d = &utilization(&set.ranks[0], &UtilizationOptions::default())[0];
    assert_eq!(d.throttled_us, Some(40.0));
    assert!(close(d.throttled_pct.unwrap(), 40.0));
    assert_eq!(d.throttle_events, 3);
    // Not device work: busy time is the kernels' as before.
    assert!(close(d.device_busy_pct, 30.0), "{}", d.device_busy_pct);

    let plain = load_paths(&[path], &LoadOptions::default()).unwrap();
    let d = &utilization(&plain.ranks[0], &UtilizationOptions::default())[0];
    assert_eq!((d.throttled_us, d.throttle_events), (None, 0));
}
