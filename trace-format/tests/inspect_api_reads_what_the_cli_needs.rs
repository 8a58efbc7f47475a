//! What `neuronprof inspect` needs, read from real traces: rank and world size, devices,
//! base time, unknown metadata keys, and per event phase, category (original and
//! normalised), name, pid/tid, times, flows and args by key.

#[path = "support/shared.rs"]
mod shared;

use std::collections::HashMap;
use std::ops::ControlFlow;

use trace_format::{
    from_fn, read_path, read_path_lenient, ArgValue, Category, CollectSink, FlowEnd, Ident, Phase,
    ReadError, TraceMeta, TraceReader, TraceWriter,
};

#[test]
fn metadata_gives_rank_devices_base_and_unknown_keys() {
    let dir = shared::traces_dir();
    let report = read_path(
        dir.join("hta/nccl_data.json.gz"),
        &mut CollectSink::default(),
    )
    .unwrap();
    let meta = &report.meta;
    assert_eq!((meta.rank(), meta.world_size()), (Some(0), Some(2)));
    let devices = meta.device_properties();
    assert_eq!(devices.len(), 8);
    assert_eq!(devices[3].device_id, Some(3));
    assert_eq!(devices[3].name.as_deref(), Some("NVIDIA A100-PG509-200"));
    assert_eq!(meta.base_time_ns(), Some(1_711_964_646_000_000_000));
    let unknown: Vec<_> = meta.unknown_entries().map(|e| e.key.as_str()).collect();
    assert_eq!(unknown, ["INFO"]);

    let report = read_path(
        dir.join("torch-2.15/gloo_2rank-rank1.pt.trace.json.gz"),
        &mut CollectSink::default(),
    )
    .unwrap();
    let info = report.meta.distributed_info().unwrap();
    assert_eq!(info.backend.as_deref(), Some("gloo"));
    assert_eq!(info.pg_config[0].ranks, [0, 1]);
    assert_eq!(
        report.meta.get("host_name").unwrap().as_str(),
        "\"builder\""
    );
}

#[test]
fn a_dropped_record_count_under_a_metadata_key_can_be_read() {
    let mut meta = TraceMeta::kineto(Some(0));
    meta.set_i64("neuronprof_dropped_records", 12);
    let bytes = TraceWriter::new(Vec::new(), &meta)
        .unwrap()
        .finish()
        .unwrap();
    let report = TraceReader::from_slice("t", &bytes)
        .read(&mut CollectSink::default())
        .unwrap();
    let dropped = report
        .meta
        .get("neuronprof_dropped_records")
        .unwrap()
        .deserialize::<u64>();
    assert_eq!(dropped.unwrap(), 12);
}

#[test]
fn events_give_fields_flows_and_args() {
    let dir = shared::traces_dir();
    // Flows: ac2g starts and finishes pair up by id; kernels carry the same correlation.
    let mut starts: HashMap<i64, u64> = HashMap::new();
    let mut finishes: HashMap<i64, u64> = HashMap::new();
    let mut kernel_correlations = 0;
    let mut first_kernel = None;
    let mut sink = from_fn(|_, event| {
        if event.normalized_category() == Some(Category::Ac2g) {
            let id = event.flow_id.as_ref().and_then(Ident::as_i64).unwrap();
            match event.flow_end() {
                Some(FlowEnd::Start) => *starts.entry(id).or_default() += 1,
                Some(FlowEnd::Finish) => *finishes.entry(id).or_default() += 1,
                other => panic!("{other:?}"),
            }
        }
        if event.category == Some(Category::Kernel) {
            kernel_correlations +=
                u64::from(event.arg("correlation").and_then(|v| v.as_i64()).is_some());
            if first_kernel.is_none() {
                first_kernel = Some(event.clone().into_owned());
            }
        }
        ControlFlow::Continue(())
    });
    read_path(dir.join("hta/nccl_data.json.gz"), &mut sink).unwrap();
    assert_eq!(kernel_correlations, 2700);
    assert!(finishes.keys().filter(|id| starts.contains_key(id)).count() > 3000);
    let kernel = first_kernel.unwrap();
    assert_eq!(kernel.phase, Phase::Complete);
    assert!(matches!(kernel.pid, Some(Ident::Num(_))));
    assert!(kernel.ts_ns.unwrap() > 1_711_964_646_000_000_000);
    assert!(kernel.dur_ns.unwrap() >= 0);

    // `[memory]` instants: `Device Type`, `Bytes` by key; string pids on spans.
    let mut memory = CollectSink::default();
    read_path(
        dir.join("torch-2.15/gloo_2rank-rank0.pt.trace.json.gz"),
        &mut memory,
    )
    .unwrap();
    let mem = memory.events.iter().find(|e| e.is_memory_event()).unwrap();
    assert_eq!(mem.category, Some(Category::CpuInstantEvent));
    assert_eq!(mem.scope.as_deref(), Some("t"));
    assert_eq!(mem.arg("Device Type"), Some(ArgValue::Int(0)));
    assert_eq!(mem.arg("finished"), Some(ArgValue::Bool(false)));
    let span = memory
        .events
        .iter()
        .find(|e| e.category == Some(Category::Trace))
        .unwrap();
    assert_eq!(span.pid, Some(Ident::Str("Spans".into())));
    assert!(memory.events.last().unwrap().is_record_window_end());
}

#[test]
fn lenient_reads_of_missing_files_report_the_damage() {
    let report = read_path_lenient("/nonexistent/trace.json", &mut CollectSink::default());
    assert!(matches!(report.damage, Some(ReadError::Io { .. })));
    assert_eq!(report.events_delivered, 0);
    let err = read_path("/nonexistent/trace.json", &mut CollectSink::default()).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("/nonexistent/trace.json: byte 0: cannot read"),
        "{err}"
    );
}

#[test]
fn gzip_files_written_by_the_writer_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json.gz");
    let mut writer = TraceWriter::create(&path, &TraceMeta::kineto(Some(5_000)), true).unwrap();
    writer
        .write_event(&trace_format::Event::complete(
            Category::PrivateUse1Runtime,
            "launch",
            1,
            2,
            6_000,
            10,
        ))
        .unwrap();
    writer.finish().unwrap().close().unwrap();
    let mut sink = CollectSink::default();
    let report = read_path(&path, &mut sink).unwrap();
    assert!(report.gzip);
    assert_eq!(
        sink.events[0].category.as_ref().map(Category::as_str),
        Some("privateuse1_runtime")
    );
    assert_eq!(sink.events[0].ts_ns, Some(6_000));
}
