//! Kernels queued behind one graph launch (`hipGraphLaunch`, `cudaGraphLaunch`, a
//! compiled program's `nrt_execute` that runs several kernels) did not wait for the
//! host: the launch statistics, the queue length and the insights count one launch,
//! whose delay is to its first kernel, and say nothing about the device waiting for
//! launches that were never made.
//!
//! No shared trace records a graph replay, so one is made here from a real one: the
//! MI300X Qwen trace (`../shared/traces/tracelens/`), its 1,054 launched kernels and
//! copies kept where the device ran them, their `hipLaunchKernel` /
//! `hipExtModuleLaunchKernel` / `hipModuleLaunchKernel` / `hipMemcpyWithStream` calls
//! replaced by one `hipGraphLaunch` at the first one's time (their flow arrows dropped),
//! and every one of those rows given its correlation: what a HIP graph replay of the
//! same work records.

#[path = "../../tests/support/skip.rs"]
mod skip;
mod support {
    pub mod traces;
}

use std::collections::BTreeSet;
use std::io::Read as _;

use analysis::insights::FindingKind;
use analysis::{analyze, load_paths, LoadOptions, ReportOptions};
use serde_json::{json, Value};
use support::traces::shared_traces_dir;

#[test]
fn kernels_queued_behind_a_graph_launch_did_not_wait_for_the_host() {
    let Some(shared) = shared_traces_dir() else {
        skip::skipped(
            "analysis: kernels_queued_behind_a_graph_launch_did_not_wait_for_the_host",
            "../shared/traces/tracelens is absent (set NEURONPROF_SHARED_TRACES)",
        );
        return;
    };
    let source = shared.join("tracelens/mi300_Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&source).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let mut trace: Value = serde_json::from_str(&text).unwrap();
    let events = trace["traceEvents"].as_array().unwrap().clone();
    let correlation = |e: &Value| e["args"]["correlation"].as_i64();
    let device: BTreeSet<i64> = events
        .iter()
        .filter(|e| matches!(e["cat"].as_str(), Some("kernel" | "gpu_memcpy")))
        .filter_map(correlation)
        .collect();
    let launches: Vec<&Value> = events
        .iter()
        .filter(|e| {
            e["cat"] == "cuda_runtime" && correlation(e).is_some_and(|c| device.contains(&c))
        })
        .collect();
    let launched: BTreeSet<i64> = launches.iter().filter_map(|e| correlation(e)).collect();
    assert_eq!(launched.len(), 1054, "the trace's launched device rows");
    let first = launches
        .iter()
        .min_by(|a, b| {
            a["ts"]
                .as_f64()
                .unwrap()
                .total_cmp(&b["ts"].as_f64().unwrap())
        })
        .unwrap();
    let graph = 1 + events.iter().filter_map(correlation).max().unwrap();
    let mut graph_launch = (*first).clone();
    graph_launch["name"] = json!("hipGraphLaunch");
    graph_launch["dur"] = json!(12.0);
    graph_launch["args"]["correlation"] = json!(graph);
    let mut replay: Vec<Value> = events
        .into_iter()
        .filter(|e| e["cat"] != "ac2g")
        .filter(|e| {
            !(e["cat"] == "cuda_runtime" && correlation(e).is_some_and(|c| launched.contains(&c)))
        })
        .map(|mut e| {
            if e["cat"] != "cuda_runtime" && correlation(&e).is_some_and(|c| launched.contains(&c))
            {
                e["args"]["correlation"] = json!(graph);
            }
            e
        })
        .collect();
    replay.push(graph_launch);
    trace["traceEvents"] = Value::Array(replay);
    let file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("qwen-graph-replay.json");
    std::fs::write(&file, serde_json::to_vec(&trace).unwrap()).unwrap();

    let set = load_paths(&[&file], &LoadOptions::default()).unwrap();
    let report = analyze(&set, &ReportOptions::default());
    let stats = &report.per_rank[0].launch_stats;
    assert_eq!(stats.graph_replays, 1, "{stats:?}");
    assert_eq!(stats.queued_behind_launch, 1053, "{stats:?}");
    assert_eq!(
        stats.launch_delay.count, 1,
        "one launch, one delay: {stats:?}"
    );
    assert!(stats.idle_launch_delay_outliers <= 1, "{stats:?}");
    let deepest = report.per_rank[0]
        .queue_length
        .iter()
        .map(|q| (q.max_queue_length, q.time_blocked_on_full_queue_us))
        .fold((0, 0.0), |a, b| (a.0.max(b.0), a.1 + b.1));
    assert_eq!(
        deepest,
        (1, 0.0),
        "one graph launch is one queued operation"
    );
    let summaries: Vec<&str> = report.insights.iter().map(|f| f.summary.as_str()).collect();
    assert!(
        !report
            .insights
            .iter()
            .any(|f| f.kind == FindingKind::LaunchDelays),
        "{summaries:#?}"
    );
    assert!(
        !summaries.iter().any(|s| s.contains("kernels queued")),
        "{summaries:#?}"
    );
}
