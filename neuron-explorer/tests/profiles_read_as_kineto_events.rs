//! Profile folders written from the published schema read as the Kineto events the
//! analyses take: one per schema major version, LNC=1 and LNC=2, two ranks with a
//! collective; versions, unknown tables and columns, and damage.

mod support;

use std::path::{Path, PathBuf};

use neuron_explorer::{find_profiles, open_trace, FINDINGS_KEY, PROFILE_KEY};
use support::*;
use trace_format::{CollectSink, Event, Phase, ReadReport};

const T0: i64 = 1_790_000_000_000_000_000;

/// A rank's profile: host ops, a runtime call, one device execution (two physical-core
/// rows with `lnc2`), engine instructions, DMA, an all-reduce, counters, a summary.
fn rank_profile(dir: &Path, version: &str, rank: i64, lnc2: bool) {
    let mut rows = vec![
        Spe::framework("ProfilerStep#1", T0, T0 + 20_000),
        Spe {
            flows: &["7"],
            ..Spe::framework("aten::mm", T0 + 1_000, T0 + 4_000)
        },
        Spe {
            name: "nrt_execute",
            source: "neuron_rt",
            tid: 4243,
            nc: Some(0),
            worker: Some(rank),
            flows: &["7"],
            extra: Some(r#"{"nrt_sequence_id": 3, "model_id": 1}"#),
            ..Spe::framework("", T0 + 2_000, T0 + 3_000)
        },
    ];
    let exec = Spe {
        name: "nc_exec_running",
        source: "neuron_hw",
        pid: 4242,
        tid: 0,
        nc: Some(0),
        pcore: Some(0),
        worker: Some(rank),
        flows: &["7"],
        extra: Some(r#"{"model_id": 1}"#),
        ..Spe::framework("", T0 + 5_000, T0 + 9_000)
    };
    rows.push(exec.clone());
    if lnc2 {
        rows.push(Spe {
            pcore: Some(1),
            start_ns: T0 + 5_100,
            end_ns: T0 + 9_300,
            ..exec
        });
    }
    // Split into two files, one row per row group in the second.
    write_events(dir, "SystemProfileEvents_0.parquet", &rows[..2], 1 << 16);
    write_events(dir, "SystemProfileEvents_1.parquet", &rows[2..], 1);
    write_metadata(dir, version, 0, T0 + 5_000);
    write_table(
        dir,
        "Instruction.parquet",
        vec![
            ("start_ts", ints(&[T0 + 5_100, T0 + 6_000, T0 + 6_500])),
            ("end_ts", ints(&[T0 + 6_000, T0 + 6_500, T0 + 7_000])),
            ("duration_ns", ints(&[900, 500, 500])),
            ("engine", strs(&["Tensor", "Vector", "Tensor"])),
            ("pcore_idx", ints(&[0, 0, 0])),
            ("opcode", strs(&["MATMUL", "TENSOR_TENSOR", "MATMUL"])),
            ("operands", strs(&["", "", ""])),
            ("id", ints(&[1, 2, 3])),
            ("pc", ints(&[0, 4, 8])),
            ("bir_id", strs(&["b1", "b2", "b3"])),
            ("raw_flops", ints(&[1_000, 0, 2_000])),
        ],
        2,
    );
    write_table(
        dir,
        "DmaPacketAggregated.parquet",
        vec![
            ("start_ts", ints(&[T0 + 5_000, T0 + 5_500])),
            ("end_ts", ints(&[T0 + 5_400, T0 + 5_900])),
            ("duration_ns", ints(&[400, 400])),
            ("id", ints(&[1, 2])),
            ("queue_idx", ints(&[3, 3])),
            ("queue_name", strs(&["qSyncIO", "qSyncIO"])),
            ("op", strs(&["load", "load"])),
            ("read_bytes", ints(&[4096, 4096])),
            ("write_bytes", ints(&[4096, 4096])),
            ("transfer_bytes", ints(&[4096, 4096])),
            ("throughput", floats(&[1.0e10, 1.0e10])),
            ("source", strs(&["HBM", "HBM"])),
            ("dest", strs(&["SBUF", "SBUF"])),
        ],
        1 << 16,
    );
    write_table(
        dir,
        "CcOp.parquet",
        vec![
            ("start_ts", ints(&[T0 + 7_000 + 300 * rank])),
            ("end_ts", ints(&[T0 + 8_500])),
            ("duration_ns", ints(&[1_500 - 300 * rank])),
            ("operation", strs(&["AllReduce"])),
            ("algorithm", strs(&["ring"])),
            ("num_elements", ints(&[1024])),
            ("dtype", strs(&["float32"])),
            ("op_id", ints(&[0])),
            ("stream_id", ints(&[0])),
            ("stream_index", ints(&[0])),
            ("trigger_engine", strs(&["Sync"])),
            ("input_size", ints(&[4096])),
            ("output_size", ints(&[4096])),
            ("replica_group_id", ints(&[0])),
            ("replica_group", strs(&["[[0, 1]]"])),
        ],
        16,
    );
    write_table(
        dir,
        "HbmUsage.parquet",
        vec![
            ("timestamp", ints(&[T0 + 5_000, T0 + 6_000])),
            ("current_throughput", floats(&[1.0e11, 0.0])),
            ("total_transfer_bytes", ints(&[8192, 8192])),
        ],
        16,
    );
    write_table(
        dir,
        "CpuUsage.parquet",
        vec![
            ("timestamp", ints(&[T0, T0 + 10_000])),
            ("util_percent", floats(&[12.5, 50.0])),
            ("cpu_id", strs(&["all", "all"])),
            ("instance_id", strs(&["i-0test", "i-0test"])),
        ],
        16,
    );
    write_table(
        dir,
        "HostMemUsage.parquet",
        vec![
            ("timestamp", ints(&[T0])),
            ("used_bytes", ints(&[1 << 30])),
            ("used_percent", floats(&[3.0])),
            ("instance_id", strs(&["i-0test"])),
        ],
        16,
    );
    write_table(
        dir,
        "Summary.parquet",
        vec![
            ("total_time", floats(&[0.5])),
            ("model_flops", ints(&[3_000])),
        ],
        16,
    );
    declare_schema(dir, &[]);
}

struct Read {
    events: Vec<Event<'static>>,
    report: ReadReport,
}

impl Read {
    fn complete(&self, category: &str) -> Vec<&Event<'static>> {
        self.events
            .iter()
            .filter(|e| {
                e.phase == Phase::Complete
                    && e.category.as_ref().is_some_and(|c| c.as_str() == category)
            })
            .collect()
    }

    fn findings(&self) -> serde_json::Value {
        self.report.meta.get(FINDINGS_KEY).unwrap().to_value()
    }

    fn list(&self, key: &str) -> Vec<String> {
        serde_json::from_value(self.findings()[key].clone()).unwrap()
    }
}

fn read(dir: &Path, lenient: bool) -> Result<Read, String> {
    let reader = open_trace(dir, lenient).map_err(|e| e.to_string())?;
    let mut sink = CollectSink::default();
    let report = reader.read(&mut sink).map_err(|e| e.to_string())?;
    Ok(Read {
        events: sink.events,
        report,
    })
}

fn arg_i64(e: &Event<'_>, key: &str) -> Option<i64> {
    e.arg(key).and_then(|v| v.as_i64())
}

fn arg_str(e: &Event<'_>, key: &str) -> Option<String> {
    e.arg(key).and_then(|v| v.as_str().map(str::to_owned))
}

fn profile(version: &str, lnc2: bool) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("train@latest");
    rank_profile(&dir, version, 0, lnc2);
    (tmp, dir)
}

#[test]
fn a_schema_7_profile_reads_as_host_ops_launches_kernels_engines_dma_collectives_and_counters() {
    let (_tmp, dir) = profile("7.4.0", false);
    let read = read(&dir, false).unwrap();
    assert_eq!(read.report.meta.rank(), Some(0), "worker_gid is the rank");
    let profile = read.report.meta.get(PROFILE_KEY).unwrap().to_value();
    assert_eq!(profile["schema_version"], "7.4.0");
    assert_eq!(profile["lnc"], 1);
    assert_eq!(profile["summary"]["total_time"], 0.5);

    let ops = read.complete("cpu_op");
    assert_eq!(ops.len(), 1);
    assert_eq!(
        (ops[0].name(), ops[0].pid.as_ref().unwrap().as_i64()),
        ("aten::mm", Some(4242))
    );
    assert_eq!(arg_i64(ops[0], "External id"), Some(7));
    assert_eq!(read.complete("user_annotation")[0].name(), "ProfilerStep#1");

    let launches = read.complete("privateuse1_runtime");
    assert_eq!(launches.len(), 1);
    assert_eq!(launches[0].name(), "nrt_execute");
    assert_eq!(arg_i64(launches[0], "correlation"), Some(7));
    assert_eq!(arg_i64(launches[0], "nrt_sequence_id"), Some(3));

    let kernels = read.complete("kernel");
    let exec: Vec<_> = kernels
        .iter()
        .filter(|k| k.arg("Collective name").is_none())
        .collect();
    assert_eq!(exec.len(), 1);
    let k = exec[0];
    assert_eq!(k.name(), "nc_exec_running model 1");
    assert_eq!((k.ts_ns, k.dur_ns), (Some(T0 + 5_000), Some(4_000)));
    assert_eq!(
        (
            arg_i64(k, "device"),
            arg_i64(k, "stream"),
            arg_i64(k, "correlation")
        ),
        (Some(0), Some(0), Some(7))
    );
    let flows: Vec<_> = read
        .events
        .iter()
        .filter(|e| matches!(e.phase, Phase::FlowStart | Phase::FlowFinish))
        .map(|e| {
            (
                e.phase.as_str().to_owned(),
                e.flow_id.as_ref().unwrap().as_i64(),
            )
        })
        .collect();
    assert_eq!(
        flows,
        vec![("s".to_owned(), Some(7)), ("f".to_owned(), Some(7))]
    );

    let cc: Vec<_> = kernels
        .iter()
        .filter(|k| k.arg("Collective name").is_some())
        .collect();
    assert_eq!(cc.len(), 1);
    assert_eq!(
        arg_str(cc[0], "Collective name").as_deref(),
        Some("allreduce")
    );
    assert_eq!(arg_i64(cc[0], "Group size"), Some(2));
    assert_eq!(
        arg_str(cc[0], "Process Group Ranks").as_deref(),
        Some("[0, 1]")
    );
    assert_eq!(arg_i64(cc[0], "In msg nelems"), Some(1024));

    let instructions = read.complete("neuron_instruction");
    assert_eq!(instructions.len(), 3);
    assert_eq!(
        arg_str(instructions[0], "engine").as_deref(),
        Some("TensorE"),
        "the schema's engine names as the profiler's"
    );
    assert_eq!(arg_i64(instructions[2], "flops"), Some(2_000));
    assert_eq!(
        instructions[0].tid, instructions[2].tid,
        "one track per engine"
    );
    let dma = read.complete("neuron_dma");
    assert_eq!(dma.len(), 2);
    assert_eq!(
        (arg_i64(dma[0], "bytes"), arg_i64(dma[0], "dma queue")),
        (Some(4096), Some(3))
    );

    let counters: Vec<&str> = read
        .events
        .iter()
        .filter(|e| e.phase == Phase::Counter)
        .map(|e| e.name())
        .collect();
    assert_eq!(
        counters,
        [
            "HBM",
            "HBM",
            "CPU utilization (%)",
            "CPU utilization (%)",
            "Host memory"
        ]
    );
    assert!(read.list("problems").is_empty());
    assert!(
        read.list("unknown").is_empty(),
        "{:?}",
        read.list("unknown")
    );
    assert!(read.report.is_clean());
}

#[test]
fn lnc2_rows_of_one_execution_are_one_kernel_of_the_logical_core_in_schema_12() {
    let (_tmp, dir) = profile("12.0.1", true);
    let read = read(&dir, false).unwrap();
    let profile = read.report.meta.get(PROFILE_KEY).unwrap().to_value();
    assert_eq!(
        (profile["schema_version"].as_str(), profile["lnc"].as_i64()),
        (Some("12.0.1"), Some(2))
    );
    let exec: Vec<_> = read
        .complete("kernel")
        .into_iter()
        .filter(|k| k.arg("Collective name").is_none())
        .collect();
    assert_eq!(exec.len(), 1, "two physical-core rows, one kernel");
    assert_eq!(
        (exec[0].ts_ns, exec[0].dur_ns),
        (Some(T0 + 5_000), Some(4_300))
    );
    assert_eq!(arg_str(exec[0], "pcore_idx").as_deref(), Some("[0, 1]"));
}

#[test]
fn an_unknown_major_version_is_an_error_naming_it_and_the_known_ones() {
    let (_tmp, dir) = profile("99.1.0", false);
    let message = read(&dir, true)
        .err()
        .expect("an unknown major fails, even leniently");
    assert!(
        message.contains("profile_schema_version 99.1.0"),
        "{message}"
    );
    assert!(message.contains("known: 7, 12"), "{message}");
    assert!(message.contains("Metadata.parquet"), "{message}");
}

#[test]
fn unknown_tables_and_columns_are_listed_once_and_read_around() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p@latest");
    rank_profile(&dir, "7.4.0", 0, false);
    write_table(&dir, "FutureTable_0.parquet", vec![("x", ints(&[1]))], 16);
    write_table(&dir, "FutureTable_1.parquet", vec![("x", ints(&[2]))], 16);
    write_table(
        &dir,
        "Warning.parquet",
        vec![
            ("message", strs(&["clock drift"])),
            ("category", strs(&["sync"])),
            ("new_field", ints(&[1])),
        ],
        16,
    );
    declare_schema(&dir, &[("Warning", "new_field")]);
    let read = read(&dir, false).unwrap();
    assert_eq!(
        read.list("unknown"),
        ["table FutureTable", "column Warning.new_field"]
    );
    assert_eq!(read.complete("neuron_instruction").len(), 3);
}

#[test]
fn a_wrong_column_type_names_table_column_and_row_group_and_lenient_reads_the_rest() {
    let (_tmp, dir) = profile("7.4.0", false);
    // Instruction.start_ts as strings, in the second of two row groups.
    write_table(
        &dir,
        "Instruction.parquet",
        vec![
            ("start_ts", strs(&["1", "2", "3"])),
            ("end_ts", ints(&[2, 3, 4])),
            ("duration_ns", ints(&[1, 1, 1])),
            ("engine", strs(&["Tensor", "Tensor", "Tensor"])),
            ("opcode", strs(&["MATMUL", "MATMUL", "MATMUL"])),
        ],
        2,
    );
    declare_schema(&dir, &[]);
    let strict = read(&dir, false).err().expect("strict read fails");
    assert!(
        strict.contains(
            "table Instruction, column start_ts, row group 0: type Utf8, expected integer"
        ),
        "{strict}"
    );
    let lenient = read(&dir, true).unwrap();
    let problems = lenient.list("problems");
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].contains("row group 0") && problems[1].contains("row group 1"));
    assert!(lenient.complete("neuron_instruction").is_empty());
    assert_eq!(
        lenient.complete("neuron_dma").len(),
        2,
        "the other tables are read"
    );
    assert_eq!(lenient.complete("kernel").len(), 2);
}

#[test]
fn a_truncated_parquet_file_names_file_and_table_and_lenient_reads_the_rest() {
    let (_tmp, dir) = profile("7.4.0", false);
    let path = dir.join("DmaPacketAggregated.parquet");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let strict = read(&dir, false).err().expect("strict read fails");
    assert!(
        strict.contains("DmaPacketAggregated.parquet: table DmaPacketAggregated"),
        "{strict}"
    );
    let lenient = read(&dir, true).unwrap();
    assert!(lenient
        .list("problems")
        .iter()
        .any(|p| p.contains("DmaPacketAggregated")));
    assert!(lenient.complete("neuron_dma").is_empty());
    assert_eq!(
        lenient.complete("neuron_instruction").len(),
        3,
        "the other tables are read"
    );
}

#[test]
fn an_empty_metadata_table_is_an_error_and_lenient_reads_the_rest() {
    let (_tmp, dir) = profile("7.4.0", false);
    write_table(
        &dir,
        "Metadata.parquet",
        vec![
            ("profile_schema_version", strs(&[])),
            ("ntff_version", ints32(&[])),
        ],
        16,
    );
    let strict = read(&dir, false).err().expect("strict read fails");
    assert!(
        strict.contains("Metadata.parquet: table Metadata is empty"),
        "{strict}"
    );
    let lenient = read(&dir, true).unwrap();
    assert_eq!(lenient.list("problems").len(), 1);
    assert_eq!(lenient.complete("kernel").len(), 2);
}

#[test]
fn schema_fields_disagreeing_with_a_table_is_an_error_naming_both() {
    let (_tmp, dir) = profile("7.4.0", false);
    // SchemaFields says CcOp.num_elements is a string; the file holds integers.
    write_table(
        &dir,
        "SchemaFields.parquet",
        vec![
            ("table_name", strs(&["CcOp"])),
            ("table_description", strs(&["CcOp"])),
            ("field_name", strs(&["num_elements"])),
            ("field_description", strs(&["test"])),
            ("field_type", strs(&["string"])),
            ("field_required", bools(&[true])),
        ],
        16,
    );
    let strict = read(&dir, false).err().expect("strict read fails");
    assert!(
        strict.contains(
            "table CcOp, column num_elements: SchemaFields says type string, the file holds Int64"
        ),
        "{strict}"
    );
    let lenient = read(&dir, true).unwrap();
    assert_eq!(lenient.list("problems").len(), 1);
    assert_eq!(lenient.complete("kernel").len(), 2);
}

#[test]
fn a_system_only_capture_says_what_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sys@latest");
    write_events(
        &dir,
        "SystemProfileEvents.parquet",
        &[Spe::framework("aten::add", T0, T0 + 10)],
        16,
    );
    let read = read(&dir, false).unwrap();
    let missing = read.list("missing").join("\n");
    for table in [
        "Metadata",
        "SchemaFields",
        "CcOp",
        "Instruction",
        "DmaPacketAggregated",
    ] {
        assert!(missing.contains(table), "{missing}");
    }
    assert_eq!(read.complete("cpu_op").len(), 1);
}

#[test]
fn a_data_path_holds_one_profile_per_rank() {
    let tmp = tempfile::tempdir().unwrap();
    let global = tmp.path().join("profiles").join("global");
    rank_profile(&global.join("rank1@latest"), "7.4.0", 1, false);
    rank_profile(&global.join("rank0@latest"), "7.4.0", 0, true);
    let found = find_profiles(tmp.path());
    assert_eq!(
        found,
        [global.join("rank0@latest"), global.join("rank1@latest")]
    );
    let ranks: Vec<_> = found
        .iter()
        .map(|d| read(d, false).unwrap().report.meta.rank())
        .collect();
    assert_eq!(ranks, [Some(0), Some(1)]);
    assert_eq!(
        find_profiles(&global.join("rank1@latest")),
        [global.join("rank1@latest")]
    );
}

/// TorchNeuron's framework trace as torch.profiler writes it (Kineto JSON: host operators
/// and `privateuse1_driver` / `privateuse1_runtime` rows, no device rows), for the
/// process of `rank_profile`'s runtime rows: the driver call of `aten::mm` carries the
/// `nrt_sequence_id` the profile's `nrt_execute` has. Its own correlation 7 is the
/// profile's flow id too, on purpose.
fn framework_trace(path: &Path, base_ns: i64) {
    let us = |ns: i64| format!("{:.3}", (ns - base_ns) as f64 / 1000.0);
    let text = format!(
        r#"{{"schemaVersion": 1, "deviceProperties": [],
  "distributedInfo": {{"backend": "neuron", "rank": 1, "world_size": 2}},
  "displayTimeUnit": "ms", "baseTimeNanoseconds": {base_ns},
  "traceEvents": [
  {{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 4242, "tid": 4242, "ts": {t0}, "dur": 20.0}},
  {{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 4242, "tid": 4242, "ts": {t1}, "dur": 3.0, "args": {{"External id": 11, "Input Dims": [[64, 64], [64, 64]]}}}},
  {{"ph": "X", "cat": "privateuse1_driver", "name": "neuron_stream_submit", "pid": 4242, "tid": 4250, "ts": {t2}, "dur": 0.5, "args": {{"External id": 11, "correlation": 7, "nrt_sequence_id": 3}}}},
  {{"ph": "X", "cat": "privateuse1_runtime", "name": "neuronStreamSynchronize", "pid": 4242, "tid": 4242, "ts": {t3}, "dur": 5.0, "args": {{"External id": 12, "correlation": 8}}}}
  ],
  "traceName": "trace.json"}}"#,
        t0 = us(T0),
        t1 = us(T0 + 1_000),
        t2 = us(T0 + 1_500),
        t3 = us(T0 + 10_000),
    );
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_framework_trace_merges_with_its_system_profile_into_one_rank_with_ops_linked_to_device_executions(
) {
    let (_tmp, dir) = profile("7.4.0", true);
    let trace = dir.parent().unwrap().join("trace.json");
    // Kineto's base: wall time floored, before every event of both.
    framework_trace(&trace, T0 - 123_456);
    let reader = neuron_explorer::open_trace_with_framework(&dir, &trace, false).unwrap();
    let mut sink = CollectSink::default();
    let report = reader.read(&mut sink).unwrap();
    let read = Read {
        events: sink.events,
        report,
    };
    // The trace's header: its rank, not the profile's worker_gid.
    assert_eq!(read.report.meta.rank(), Some(1));
    // Host operators come from the trace only (the profile's framework rows, the same
    // operators as Neuron Explorer ingests them, are left out).
    let ops = read.complete("cpu_op");
    assert_eq!(ops.len(), 1, "{ops:?}");
    assert_eq!(ops[0].ts_ns, Some(T0 + 1_000));
    assert!(ops[0].arg("Input Dims").is_some());
    assert_eq!(read.complete("user_annotation").len(), 1);
    // The chain: aten::mm (External id 11) → driver call (nrt_sequence_id 3) →
    // nrt_execute (flow 7) → the LNC=2 execution, one kernel.
    let offset = neuron_explorer::framework::MERGED_FLOW_OFFSET;
    let launches = read.complete("privateuse1_runtime");
    let nrt = launches.iter().find(|e| e.name() == "nrt_execute").unwrap();
    assert_eq!(arg_i64(nrt, "External id"), Some(11));
    assert_eq!(arg_i64(nrt, "correlation"), Some(7 + offset));
    let kernels: Vec<_> = read
        .complete("kernel")
        .into_iter()
        .filter(|e| e.name().starts_with("nc_exec_running"))
        .collect();
    assert_eq!(kernels.len(), 1);
    let kernel = kernels[0];
    assert_eq!(arg_i64(kernel, "External id"), Some(11));
    assert_eq!(arg_i64(kernel, "correlation"), Some(7 + offset));
    // No stream in the profile: the driver call's thread, as the schema propagates it.
    assert_eq!(arg_i64(kernel, "stream"), Some(4250));
    assert_eq!(kernel.dur_ns, Some(4_300));
    // The trace's own correlation 7 stays its own: no kernel answers it.
    let driver = read.complete("privateuse1_driver");
    assert_eq!(arg_i64(driver[0], "correlation"), Some(7));
    assert!(!read
        .complete("kernel")
        .iter()
        .any(|k| arg_i64(k, "correlation") == Some(7)));
    // The flow from the runtime call reaches the kernel.
    let flows: Vec<_> = read
        .events
        .iter()
        .filter(|e| e.phase == Phase::FlowStart || e.phase == Phase::FlowFinish)
        .filter(|e| e.flow_id.as_ref().and_then(|i| i.as_i64()) == Some(7 + offset))
        .collect();
    assert_eq!(flows.len(), 2, "{flows:?}");
    let linked = read.findings()["framework"].as_str().unwrap().to_owned();
    assert!(
        linked.contains("1 driver calls")
            && linked.contains("linked 1 runtime calls and 2 device-execution rows")
            && linked.contains("(0 rows unlinked)")
            && linked.contains("median runtime-call start − driver-call start: 500 ns")
            && linked.contains("2 framework rows of the profile left out"),
        "{linked}"
    );
}

#[test]
fn a_damaged_framework_trace_is_an_error_naming_it_and_lenient_reads_the_profile() {
    let (_tmp, dir) = profile("7.4.0", false);
    let trace = dir.parent().unwrap().join("trace.json");
    framework_trace(&trace, T0 - 1_000);
    let text = std::fs::read_to_string(&trace).unwrap();
    // Cut inside the driver call's row: the operators before it survive.
    let cut = text.find("privateuse1_driver").unwrap();
    std::fs::write(&trace, &text[..cut]).unwrap();
    let err = match neuron_explorer::open_trace_with_framework(&dir, &trace, false) {
        Ok(_) => panic!("a truncated trace opened"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("trace.json"), "{err}");
    let reader = neuron_explorer::open_trace_with_framework(&dir, &trace, true).unwrap();
    let mut sink = CollectSink::default();
    let report = reader.read(&mut sink).unwrap();
    let read = Read {
        events: sink.events,
        report,
    };
    let problems = read.list("problems");
    assert!(
        problems.iter().any(|p| p.contains("trace.json")),
        "{problems:?}"
    );
    assert_eq!(
        read.complete("cpu_op").len(),
        1,
        "what the trace held before the cut"
    );
    assert!(read
        .complete("kernel")
        .iter()
        .any(|k| k.name().starts_with("nc_exec_running")));
}

#[test]
fn active_time_barriers_semaphores_and_throttling_become_engine_barrier_counter_and_throttle_rows()
{
    let (_tmp, dir) = profile("7.4.0", true);
    // Ingested with --ignore-instruction-trace: ActiveTime instead of Instruction.
    std::fs::remove_file(dir.join("Instruction.parquet")).unwrap();
    write_table(
        &dir,
        "ActiveTime.parquet",
        vec![
            ("start_ts", ints(&[T0 + 5_100, T0 + 6_000, T0 + 5_200])),
            ("end_ts", ints(&[T0 + 5_900, T0 + 7_000, T0 + 6_200])),
            ("duration_ns", ints(&[800, 1_000, 1_000])),
            ("engine", strs(&["tensor", "tensor", "vector"])),
            ("pcore_idx", ints(&[0, 0, 1])),
        ],
        2,
    );
    write_table(
        &dir,
        "CoreBarriers.parquet",
        vec![
            ("start_ts", ints(&[T0 + 7_000])),
            ("end_ts", ints(&[T0 + 7_400])),
            ("duration_ns", ints(&[400])),
            ("engine_name", strs(&["GpSimd"])),
            ("id", ints(&[1])),
            ("semaphore", ints(&[9])),
            ("compiler_pc", ints(&[64])),
            ("compiler_opcode", strs(&["PSEUDO_CORE_BARRIER"])),
            (
                "compiler_operands",
                strs(&["$S[45]>=16 $S[8]++@complete semaphore=9 id=1"]),
            ),
            ("pcore_idx", ints(&[1])),
        ],
        16,
    );
    write_table(
        &dir,
        "SemaphoreUpdate.parquet",
        vec![
            ("timestamp", ints(&[T0 + 7_100, T0 + 7_300])),
            ("id", strs(&["9", "9"])),
            ("value", ints32(&[1, 2])),
            ("update_source", strs(&["GpSimd", "GpSimd"])),
            ("pcore_idx", ints(&[1, 1])),
        ],
        16,
    );
    write_table(
        &dir,
        "Throttle.parquet",
        vec![
            ("duration", ints(&[2_000])),
            ("k", ints32(&[3])),
            ("n", ints32(&[4])),
            ("timestamp", ints(&[T0 + 5_000])),
            ("type", strs(&["activity_0"])),
            ("pcore_idx", ints(&[0])),
        ],
        16,
    );
    declare_schema(&dir, &[]);
    let read = read(&dir, false).unwrap();

    // Engine activity from ActiveTime, on the engines' tracks, with the profiler's names.
    let active = read.complete("neuron_instruction");
    assert_eq!(active.len(), 3);
    assert!(active.iter().all(|e| e.name() == "active"));
    let tensor: Vec<_> = active
        .iter()
        .filter(|e| arg_str(e, "engine").as_deref() == Some("TensorE"))
        .collect();
    assert_eq!(tensor.len(), 2);
    assert_eq!(
        tensor[0].tid, tensor[1].tid,
        "one track per engine and core"
    );
    let vector = active
        .iter()
        .find(|e| arg_str(e, "engine").as_deref() == Some("VectorE"))
        .unwrap();
    assert_eq!(arg_i64(vector, "core"), Some(1));
    assert_ne!(vector.tid, tensor[0].tid);
    let missing = read.list("missing").join("\n");
    assert!(
        missing.contains("engine utilization from ActiveTime"),
        "{missing}"
    );

    let barriers = read.complete("neuron_core_barrier");
    assert_eq!(barriers.len(), 1);
    assert_eq!(barriers[0].name(), "core barrier GpSimdE");
    assert_eq!(barriers[0].dur_ns, Some(400));
    assert_eq!(arg_i64(barriers[0], "semaphore"), Some(9));
    assert_eq!(arg_i64(barriers[0], "core"), Some(1));
    assert!(
        barriers[0].arg("stream").is_none() && barriers[0].arg("correlation").is_none(),
        "a barrier is a wait, not device work"
    );

    let semaphores: Vec<_> = read
        .events
        .iter()
        .filter(|e| e.phase == Phase::Counter && e.name() == "semaphore 9")
        .collect();
    assert_eq!(semaphores.len(), 2);
    assert_eq!(arg_i64(semaphores[1], "core 1"), Some(2));

    let throttle = read.complete("neuron_throttle");
    assert_eq!(throttle.len(), 1);
    assert_eq!(throttle[0].ts_ns, Some(T0 + 5_000));
    assert_eq!(throttle[0].dur_ns, Some(2_000));
    assert_eq!(
        throttle[0]
            .arg("utilization_limit_pct")
            .and_then(|v| v.as_f64()),
        Some(75.0)
    );
    assert_eq!(arg_str(throttle[0], "type").as_deref(), Some("activity_0"));
}
