//! The schedule decides which steps are recorded; each saved window goes to
//! `on_trace_ready`, and the tensorboard handler writes one file per window.

mod common;

use std::sync::{Arc, Mutex};

use neuron_backend::{DType, Runtime};
use profiler::{Activity, DeviceDetail, Profiler, ProfilerAction, Schedule};
use trace_format::Phase;

#[test]
fn schedule_records_only_active_steps() {
    let _serial = common::serial();
    let runtime = Runtime::trn2();
    let device = runtime.device(0).unwrap();
    let x = device.ones(&[16, 16], DType::F32).unwrap();
    let dir = common::temp_dir("schedule");
    let files = profiler::tensorboard_trace_handler(&dir, Some("rank0"), true);
    let handler = files.clone();
    let seen: Arc<Mutex<Vec<Vec<u64>>>> = Arc::default();
    let seen_in_handler = Arc::clone(&seen);
    let mut prof = Profiler::builder()
        .device(common::device_info(&device))
        .schedule(Schedule::new(1, 1, 1, 2, 2))
        .on_trace_ready(move |result| {
            seen_in_handler.lock().unwrap().push(result.steps());
            handler.write(result).map(|_| ())
        })
        .start();
    let mut actions = Vec::new();
    for _ in 0..11 {
        actions.push(prof.current_action());
        let y = x.add(&x).unwrap();
        device.synchronize();
        drop(y);
        prof.step().unwrap();
    }
    let last = prof.stop().unwrap().expect("two windows were saved");
    use ProfilerAction::*;
    assert_eq!(
        actions,
        [
            None,
            None,
            Warmup,
            Record,
            RecordAndSave,
            None,
            Warmup,
            Record,
            RecordAndSave,
            None,
            None
        ]
    );
    assert_eq!(*seen.lock().unwrap(), vec![vec![3, 4], vec![7, 8]]);
    assert_eq!(last.steps(), vec![7, 8]);
    assert_eq!(last.window_index(), 1);

    let files = files.files();
    assert_eq!(files.len(), 2);
    for (path, steps) in files.iter().zip(["3 4", "7 8"]) {
        let name = path.file_name().unwrap().to_str().unwrap();
        let middle = name
            .strip_prefix("rank0.")
            .and_then(|n| n.strip_suffix(".pt.trace.json.gz"))
            .unwrap_or_else(|| panic!("bad name {name}"));
        assert!(
            middle.parse::<u64>().unwrap() > 1_600_000_000_000,
            "timestamp_ms"
        );
        let trace = common::read_back(path);
        assert_eq!(trace.meta.trace_name().as_deref(), path.to_str());
        let recorded: Vec<String> = trace
            .events
            .iter()
            .filter_map(|e| e.name().strip_prefix("ProfilerStep#").map(str::to_owned))
            .collect();
        assert_eq!(recorded.join(" "), steps);
        // Two adds per window, nothing from warm-up or idle steps.
        let adds = trace
            .events
            .iter()
            .filter(|e| e.name() == "aten::add")
            .count();
        assert_eq!(adds, 2, "{}", path.display());
        common::assert_tracks_nest(&trace.events);
    }
}

#[test]
fn kernels_only_and_cpu_only_filter_what_is_written() {
    let _serial = common::serial();
    let runtime = Runtime::trn2();
    let device = runtime.device(0).unwrap();
    let x = device.ones(&[64, 64], DType::F32).unwrap();
    let run = |activities: &[Activity], detail: DeviceDetail| {
        let prof = Profiler::builder()
            .activities(activities)
            .device_detail(detail)
            .start();
        let y = x.matmul(&x).unwrap();
        device.synchronize();
        drop(y);
        let result = prof.stop().unwrap().unwrap();
        let json = String::from_utf8(result.write_trace(Vec::new(), None).unwrap()).unwrap();
        (result.activity_counts(), json)
    };
    let (counts, json) = run(&[Activity::Cpu, Activity::Neuron], DeviceDetail::Kernels);
    assert_eq!((counts.instructions, counts.dma_transfers), (0, 0));
    assert!(counts.device_spans >= 1);
    assert!(!json.contains("neuron_instruction") && json.contains("\"cat\": \"kernel\""));
    assert!(json.contains("\"neuron_device_detail\": \"kernels\""));
    assert!(
        json.contains(
            r#""deviceProperties": [{"id": 0, "name": "NeuronCore 0", "deviceType": "neuron"}]"#
        ) || json.contains(r#""deviceType": "neuron", "id": 0, "name": "NeuronCore 0""#),
        "an undescribed device still gets an entry: {}",
        &json[..400]
    );

    let (counts, json) = run(&[Activity::Cpu], DeviceDetail::Instructions);
    assert_eq!(counts.device_spans + counts.instructions + counts.flows, 0);
    assert!(json.contains("aten::matmul") && !json.contains("privateuse1_runtime"));

    let (counts, json) = run(&[Activity::Neuron], DeviceDetail::Instructions);
    assert!(counts.instructions > 0 && counts.device_spans > 0);
    assert!(!json.contains("\"cat\": \"cpu_op\"") && json.contains("nrt_execute"));
    // Launch flows start on runtime calls, so they survive without CPU activity.
    assert!(counts.flows >= 1);
}

#[test]
fn a_range_alive_across_step_is_clipped_not_overlapping() {
    let _serial = common::serial();
    let mut prof = Profiler::builder().activities(&[Activity::Cpu]).start();
    let outer = profiler::record_function("crosses the step");
    prof.step().unwrap();
    drop(outer);
    let result = prof.stop().unwrap().unwrap();
    let json = result.write_trace(Vec::new(), None).unwrap();
    let mut sink = trace_format::CollectSink::default();
    trace_format::TraceReader::from_slice("t.json", &json)
        .read(&mut sink)
        .unwrap();
    let annotations: Vec<_> = sink
        .events
        .iter()
        .filter(|e| e.phase == Phase::Complete && e.name() != "PyTorch Profiler (0)")
        .collect();
    let names: Vec<&str> = annotations.iter().map(|e| e.name()).collect();
    assert_eq!(
        names,
        ["ProfilerStep#0", "crosses the step", "ProfilerStep#1"]
    );
    common::assert_tracks_nest(&sink.events);
}

#[test]
fn a_failing_handler_is_reported_and_dropping_a_session_stops_recording() {
    let _serial = common::serial();
    let mut prof = Profiler::builder()
        .activities(&[Activity::Cpu])
        .schedule(Schedule::new(0, 0, 0, 1, 0))
        .on_trace_ready(|_| Err(profiler::ProfilerError::Handler("disk full".to_owned())))
        .start();
    let err = prof.step().unwrap_err();
    assert_eq!(err.to_string(), "on_trace_ready handler: disk full");
    // The window still happened, and the next one records.
    assert_eq!(prof.current_action(), ProfilerAction::RecordAndSave);
    assert!(runtime_hooks::is_enabled());
    drop(prof);
    assert!(
        !runtime_hooks::is_enabled(),
        "a dropped session stops recording"
    );
    // A new session can start at once.
    let result = Profiler::builder().start().stop().unwrap().unwrap();
    assert_eq!(result.steps(), vec![0]);
}
