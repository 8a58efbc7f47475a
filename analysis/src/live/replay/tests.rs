//! Replay on a small hand-written two-rank run whose figures are known, and on real traces.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;

/// A fresh directory under the system temp dir.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("analysis-replay-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Rank 0: an operator launching a 40 µs kernel (10..50 µs) with a 20 µs TensorE
/// instruction and a semaphore wait, memory 1000 → 3000 bytes, an all-reduce 60..100 µs.
/// Rank 1: a kernel 10..30 µs and its all-reduce copy starting late, 80..100 µs.
fn write_two_rank_run(dir: &Path) {
    let rank0 = r#"{"schemaVersion": 1, "distributedInfo": {"backend": "nccom", "rank": 0, "world_size": 2},
      "deviceProperties": [{"id": 0, "name": "NeuronCore 0 (trn2, LNC=2)", "deviceType": "neuron", "coreVersion": "v3",
                            "lnc": 2, "profile": "trn2", "totalGlobalMem": 25769803776}],
      "dropped_records": 3,
      "traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 100, "tid": 7, "ts": 0, "dur": 100},
      {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": 7, "ts": 0, "dur": 10, "args": {"External id": 1}},
      {"ph": "X", "cat": "privateuse1_runtime", "name": "nrt_execute", "pid": 100, "tid": 7, "ts": 1, "dur": 1, "args": {"correlation": 1, "External id": 1}},
      {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 100, "tid": 7, "ts": 5,
       "args": {"Device Type": 20, "Device Id": 0, "Total Allocated": 1000, "Bytes": 1000, "Addr": 1, "Total Reserved": 4096}},
      {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 100, "tid": 7, "ts": 5,
       "args": {"Device Type": 0, "Device Id": -1, "Total Allocated": 500, "Bytes": 500, "Addr": 2, "Total Reserved": 4096}},
      {"ph": "X", "cat": "kernel", "name": "mm_kernel", "pid": 0, "tid": 0, "ts": 10, "dur": 40,
       "args": {"device": 0, "stream": 0, "correlation": 1, "External id": 1, "flops": 4000}},
      {"ph": "X", "cat": "neuron_instruction", "name": "matmul", "pid": 0, "tid": 1000, "ts": 10, "dur": 20,
       "args": {"device": 0, "core": 0, "engine": "TensorE"}},
      {"ph": "X", "cat": "neuron_instruction", "name": "semaphore_wait", "pid": 0, "tid": 1000, "ts": 30, "dur": 10,
       "args": {"device": 0, "core": 0, "engine": "TensorE"}},
      {"ph": "X", "cat": "neuron_dma", "name": "dma HtoD", "pid": 0, "tid": 10108, "ts": 40, "dur": 10,
       "args": {"device": 0, "dma queue": 108, "bytes": 256}},
      {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 100, "tid": 7, "ts": 60,
       "args": {"Device Type": 20, "Device Id": 0, "Total Allocated": 3000, "Bytes": 2000, "Addr": 3, "Total Reserved": 4096}},
      {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32", "pid": 0, "tid": 1, "ts": 60, "dur": 40,
       "args": {"device": 0, "stream": 1, "Collective name": "allreduce", "Process Group Name": "0", "Seq": 0,
                "bytes": 4096, "In msg nelems": 1024, "Group size": 2, "dtype": "Float"}}
    ]}"#;
    let rank1 = r#"{"schemaVersion": 1, "distributedInfo": {"backend": "nccom", "rank": 1, "world_size": 2},
      "traceEvents": [
      {"ph": "X", "cat": "kernel", "name": "mm_kernel", "pid": 1, "tid": 0, "ts": 10, "dur": 20, "args": {"device": 1, "stream": 0}},
      {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32", "pid": 1, "tid": 1, "ts": 80, "dur": 20,
       "args": {"device": 1, "stream": 1, "Collective name": "allreduce", "Process Group Name": "0", "Seq": 0, "bytes": 4096}}
    ]}"#;
    std::fs::write(dir.join("rank0.json"), rank0).unwrap();
    std::fs::write(dir.join("rank1.json"), rank1).unwrap();
}

fn period(us: u64) -> ReplayOptions {
    ReplayOptions {
        period: Some(Duration::from_micros(us)),
        ..ReplayOptions::default()
    }
}

fn ext(doc: &MonitorDocument, rank: usize) -> &NeuronprofReport {
    doc.neuron_runtime_data[rank]
        .report
        .neuronprof
        .as_ref()
        .unwrap()
}

#[test]
fn two_rank_run_becomes_reports_with_known_figures() {
    let dir = temp_dir("known");
    write_two_rank_run(&dir);
    let series = replay_dir(&dir, &period(25)).unwrap();
    assert_eq!(series.documents.len(), 4);
    assert_eq!(series.times_s, vec![25e-6, 50e-6, 75e-6, 100e-6]);
    let docs = &series.documents;
    let entry = |b: usize, r: usize| &docs[b].neuron_runtime_data[r];
    assert_eq!(entry(0, 0).neuron_runtime_tag, "100/rank0");
    assert_eq!(entry(0, 0).pid, 100);
    // Kernel busy share per period on rank 0's device 0: 15/25, 25/25, then nothing:
    // the all-reduce (60..100 µs) is a collective, not compute.
    let util = |b: usize, r: usize, core: u32| {
        entry(b, r)
            .report
            .neuroncore_counters
            .as_ref()
            .unwrap()
            .neuroncores_in_use[&core]
            .neuroncore_utilization
    };
    assert_eq!(
        [util(0, 0, 0), util(1, 0, 0), util(2, 0, 0), util(3, 0, 0)],
        [60.0, 100.0, 0.0, 0.0]
    );
    assert_eq!(
        [util(0, 1, 1), util(1, 1, 1), util(2, 1, 1), util(3, 1, 1)],
        [60.0, 20.0, 0.0, 0.0]
    );
    // Flops: 4000 over 40 µs, 15 µs of it in the first 25 µs period.
    let flops = entry(0, 0)
        .report
        .neuroncore_counters
        .as_ref()
        .unwrap()
        .neuroncores_in_use[&0]
        .flops;
    assert_eq!(flops, Some((1500.0f64 / 25e-6).round()));
    // TensorE: the instruction 10..30 µs; the semaphore wait does not count.
    assert_eq!(ext(&docs[0], 0).engine_utilization[&0]["tensor"], 60.0);
    assert_eq!(ext(&docs[1], 0).engine_utilization[&0]["tensor"], 20.0);
    // DMA: one transfer 40..50 µs.
    assert_eq!(ext(&docs[1], 0).engine_utilization[&0]["dma"], 40.0);
    assert_eq!(ext(&docs[0], 0).engine_utilization[&0]["dma"], 0.0);
    // Memory at each period's end, host and device; peak so far.
    let mem = |b: usize| {
        &entry(b, 0)
            .report
            .memory_used
            .as_ref()
            .unwrap()
            .neuron_runtime_used_bytes
    };
    assert_eq!((mem(0).neuron_device, mem(0).host), (1000, 500));
    assert_eq!(mem(3).neuron_device, 3000);
    assert_eq!(
        mem(3).usage_breakdown.neuroncore_memory_usage[&0].tensors,
        3000
    );
    let hbm = ext(&docs[3], 0).hbm.as_ref().unwrap();
    assert_eq!(
        (hbm.used_bytes, hbm.peak_bytes, hbm.capacity_bytes),
        (3000, 3000, 25769803776)
    );
    // The kernel ends at 50 µs: it completed in the second period; latency from launch.
    let stats = |b: usize| entry(b, 0).report.execution_stats.as_ref().unwrap();
    assert_eq!(stats(0).execution_summary.completed, 0);
    assert!(stats(0).latency_stats.device_latency.is_none());
    assert_eq!(stats(1).execution_summary.completed, 1);
    assert_eq!(
        stats(1).latency_stats.device_latency.as_ref().unwrap().p50,
        Some(40e-6)
    );
    assert_eq!(
        stats(1).latency_stats.total_latency.as_ref().unwrap().p100,
        Some(49e-6)
    );
    // Top operators: aten::mm's kernel time per period.
    assert_eq!(ext(&docs[0], 0).top_operators[0].name, "aten::mm");
    assert_eq!(ext(&docs[0], 0).top_operators[0].calls, 1);
    assert!((ext(&docs[0], 0).top_operators[0].device_time_s - 15e-6).abs() < 1e-12);
    assert_eq!(ext(&docs[1], 0).top_operators[0].calls, 0);
    // At 75 µs rank 0's all-reduce runs, waiting for rank 1, which starts at 80 µs.
    let coll = ext(&docs[2], 0).collectives.as_ref().unwrap();
    assert_eq!(coll.in_flight.len(), 1);
    let f = &coll.in_flight[0];
    assert_eq!(
        (f.op.as_str(), f.group.as_str(), f.seq, f.bytes),
        ("allreduce", "0", 0, 4096)
    );
    assert_eq!(f.waiting_for_ranks, vec![1]);
    assert!((f.age_s - 15e-6).abs() < 1e-12);
    // At the end both finished; rank 1 was the one waited for.
    let last = ext(&docs[3], 0).collectives.as_ref().unwrap();
    assert!(last.in_flight.is_empty());
    assert_eq!(last.completed, 1);
    assert_eq!(last.latency_s.p50, Some(40e-6));
    assert_eq!(last.histogram, vec![(5e-5, 1)]);
    assert_eq!(last.slowest_rank, Some(1));
    assert_eq!(
        ext(&docs[3], 1).collectives.as_ref().unwrap().slowest_rank,
        Some(1)
    );
    // Step, state, metadata.
    assert_eq!(ext(&docs[2], 0).step, None);
    assert_eq!(ext(&docs[3], 0).step, Some(1));
    assert_eq!(ext(&docs[2], 0).state, "running");
    assert_eq!(ext(&docs[3], 0).state, "finished");
    assert_eq!(ext(&docs[0], 0).dropped_records, 3);
    assert_eq!(
        (ext(&docs[0], 0).device.as_str(), ext(&docs[0], 0).lnc),
        ("trn2", 2)
    );
    let hw = docs[0].neuron_hardware_info.as_ref().unwrap();
    assert_eq!(hw.neuroncore_version, "v3d");
    // Every report round-trips through the parser.
    for doc in docs {
        let text = serde_json::to_string(doc).unwrap();
        assert_eq!(&crate::live::parse_document(&text).unwrap(), doc);
    }
}

#[test]
fn automatic_period_is_round_and_gives_about_the_target() {
    let dir = temp_dir("auto");
    write_two_rank_run(&dir);
    let series = replay_dir(&dir, &ReplayOptions::default()).unwrap();
    // 100 µs span / 100 reports = 1 µs.
    assert_eq!(series.period_s, 1e-6);
    assert_eq!(series.documents.len(), 100);
    assert_eq!(round_period(3), 5);
    assert_eq!(round_period(1100), 2000);
    assert_eq!(round_period(0), 1);
}

#[test]
fn bad_inputs_say_what_is_wrong() {
    let dir = temp_dir("bad");
    let err = replay_dir(&dir, &ReplayOptions::default()).unwrap_err();
    assert!(
        err.to_string().contains("no .json or .json.gz trace"),
        "{err}"
    );
    write_two_rank_run(&dir);
    let too_many = ReplayOptions {
        period: Some(Duration::from_nanos(1)),
        max_documents: 1000,
        ..ReplayOptions::default()
    };
    let err = replay_dir(&dir, &too_many).unwrap_err();
    assert!(err.to_string().contains("100000 reports"), "{err}");
    std::fs::write(dir.join("rank1.json"), "{\"traceEvents\": [").unwrap();
    let err = replay_dir(&dir, &period(25)).unwrap_err();
    assert!(err.to_string().contains("rank1.json"), "{err}");
    std::fs::copy(dir.join("rank0.json"), dir.join("rank1.json")).unwrap();
    let err = replay_dir(&dir, &period(25)).unwrap_err();
    assert!(err.to_string().contains("two traces claim rank 0"), "{err}");
    assert!(err.to_string().contains("rank1.json"), "{err}");
}

#[test]
fn real_two_rank_cuda_traces_replay() {
    // The vendored real traces (tests/data/README.md).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/traces/hta");
    let files = ["two_rank-rank0.json.gz", "two_rank-rank1.json.gz"];
    let out = temp_dir("cuda");
    for f in files {
        std::fs::copy(dir.join(f), out.join(f)).unwrap();
    }
    let series = replay_dir(&out, &ReplayOptions::default()).unwrap();
    // The automatic period is rounded up to 1-2-5: between 40 and 100 reports.
    let n = series.documents.len();
    assert!((40..=100).contains(&n), "{n} reports");
    let doc = &series.documents[series.documents.len() / 2];
    assert_eq!(doc.neuron_runtime_data.len(), 2);
    // Some period has GPU busy time and collectives complete by the end.
    let busy = series.documents.iter().any(|d| {
        d.neuron_runtime_data[0]
            .report
            .neuroncore_counters
            .as_ref()
            .is_some_and(|c| {
                c.neuroncores_in_use
                    .values()
                    .any(|u| u.neuroncore_utilization > 0.0)
            })
    });
    assert!(busy);
    let last = series.documents.last().unwrap();
    let coll = ext(last, 0).collectives.as_ref().unwrap();
    assert!(coll.completed > 0, "{coll:?}");
    assert!(ext(last, 0).top_operators.len() <= 10);
}
