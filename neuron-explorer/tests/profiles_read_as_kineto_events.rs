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
        Some("Tensor")
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
