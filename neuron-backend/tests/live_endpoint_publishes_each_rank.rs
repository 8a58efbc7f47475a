//! The live endpoint over its socket: a 4-rank workload is published as four entries
//! with their own utilization and memory (host memory: the process's resident memory),
//! values move between requests, and a bad
//! request gets an error document instead of a report.

#[path = "../../tests/support/skip.rs"]
mod skip;

use std::io::{Read as _, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use neuron_backend::monitor;
use neuron_backend::workloads::{run_with_hooks, FnHooks, Workload, WorkloadConfig};
use serde_json::Value;

fn ask(path: &Path, request: &str) -> String {
    let mut stream = UnixStream::connect(path).expect("connecting to the endpoint");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

fn entries(answer: &str) -> Vec<Value> {
    let doc: Value = serde_json::from_str(answer).expect("the answer is one JSON document");
    assert_eq!(
        doc["neuron_hardware_info"]["neuron_device_type"],
        "trainium2"
    );
    doc["neuron_runtime_data"].as_array().unwrap().clone()
}

fn rank_entries(answer: &str, pid: u32) -> Vec<Value> {
    let mut ranks: Vec<Value> = entries(answer)
        .into_iter()
        .filter(|e| {
            e["neuron_runtime_tag"]
                .as_str()
                .is_some_and(|t| t.starts_with(&format!("{pid}/rank")))
        })
        .collect();
    ranks.sort_by_key(|e| e["report"]["neuronprof"]["rank"].as_u64());
    ranks
}

#[test]
fn four_ranks_are_published_separately_and_change_between_requests() {
    if !monitor::enabled() {
        skip::skipped(
            "neuron-backend: four_ranks_are_published_separately_and_change_between_requests",
            "NEURONPROF_MONITOR=0 switches the endpoint off",
        );
        return;
    }
    let path = monitor::start().expect("the endpoint starts");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "socket mode");
    let dir_mode = std::fs::metadata(path.parent().unwrap())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dir_mode, 0o700, "directory mode");

    // Malformed requests: an error document naming the problem, and the server goes on.
    let bad = ask(&path, "hello\n");
    let bad: Value = serde_json::from_str(&bad).unwrap();
    assert!(
        bad["error"].as_str().unwrap().contains("bad request"),
        "{bad}"
    );
    let bad: Value = serde_json::from_str(&ask(&path, "{\"period_s\": -2}\n")).unwrap();
    assert!(bad["error"].as_str().unwrap().contains("period_s"), "{bad}");

    let mut config = WorkloadConfig::new(Workload::Gpt);
    config.ranks = 4;
    config.batch = 8;
    config.steps = 400;
    config.numerics = false;
    config.detail = neuron_backend::RecordDetail::Kernels;
    let stop_sleeping = AtomicBool::new(false);
    let pid = std::process::id();
    let (first, second) = std::thread::scope(|scope| {
        let run = scope.spawn(|| {
            let hooks = FnHooks {
                on_start: |_rank| {},
                // Paces the run so that it outlives the requests below.
                on_step: |_step: &_| {
                    if !stop_sleeping.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                },
            };
            run_with_hooks(&config, &hooks)
        });
        // Prime: the first request after a quiet spell starts the history.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ranks = rank_entries(&ask(&path, "{\"period_s\": 0.3}\n"), pid);
            if ranks.len() == 4 || Instant::now() > deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(400));
        let first = ask(&path, "{\"period_s\": 0.3}\n");
        std::thread::sleep(Duration::from_millis(400));
        let second = ask(&path, "{\"period_s\": 0.3}\n");
        stop_sleeping.store(true, Ordering::Relaxed);
        run.join().unwrap().expect("the workload runs");
        (first, second)
    });

    // The answer is the one schema the readers use: it parses into it and serializes
    // back to the same document, nothing lost or added.
    let typed: monitor_schema::MonitorDocument = serde_json::from_str(&first).unwrap();
    assert_eq!(
        serde_json::to_value(&typed).unwrap(),
        serde_json::from_str::<Value>(&first).unwrap()
    );
    let a = rank_entries(&first, pid);
    let b = rank_entries(&second, pid);
    assert_eq!(a.len(), 4, "one entry per rank: {first}");
    for (rank, (x, y)) in a.iter().zip(&b).enumerate() {
        let ext = &x["report"]["neuronprof"];
        assert_eq!(ext["rank"], rank as u64);
        assert_eq!(ext["world_size"], 4);
        assert_eq!(ext["workload"], "gpt");
        assert_eq!(ext["schema"], monitor::SCHEMA_VERSION);
        assert_eq!(x["pid"], pid);
        assert_eq!(x["address"], path.display().to_string());
        let period = x["report"]["neuroncore_counters"]["period"]
            .as_f64()
            .unwrap();
        assert!(period > 0.2, "the window covers the period: {period}");
        let cores = x["report"]["neuroncore_counters"]["neuroncores_in_use"]
            .as_object()
            .unwrap();
        assert_eq!(cores.len(), 1, "a rank drives one logical core");
        let (core, counters) = cores.iter().next().unwrap();
        let util = counters["neuroncore_utilization"].as_f64().unwrap();
        assert!(
            util > 0.0 && util <= 100.0,
            "rank {rank} utilization {util}"
        );
        let engines = &ext["engine_utilization"][core];
        assert!(engines["tensor"].as_f64().unwrap() > 0.0, "{engines}");
        let used = ext["hbm"]["used_bytes"].as_u64().unwrap();
        assert!(used > 0, "rank {rank} holds its parameters");
        let device_mem = x["report"]["memory_used"]["neuron_runtime_used_bytes"]["neuron_device"]
            .as_u64()
            .unwrap();
        assert!(device_mem >= used);
        // Host memory is the process's resident memory (this test binary holds tens
        // of MiB at least), all of it the application's, the same for every rank.
        let host_used = &x["report"]["memory_used"]["neuron_runtime_used_bytes"];
        let host = host_used["host"].as_u64().unwrap();
        assert!(host > 8 << 20, "rank {rank}: host memory {host} bytes");
        assert_eq!(
            host_used["usage_breakdown"]["host"]["application_memory"].as_u64(),
            Some(host)
        );
        assert_eq!(
            a[0]["report"]["memory_used"]["neuron_runtime_used_bytes"]["host"].as_u64(),
            Some(host),
            "one process, one resident figure"
        );
        let completed = x["report"]["execution_stats"]["execution_summary"]["completed"]
            .as_u64()
            .unwrap();
        assert!(completed > 0);
        let p50 = &x["report"]["execution_stats"]["latency_stats"]["device_latency"]["p50"];
        assert!(p50.as_f64().unwrap() > 0.0, "{p50}");
        assert!(!ext["top_operators"].as_array().unwrap().is_empty());
        let coll = &ext["collectives"];
        assert!(
            coll["completed"].as_u64().unwrap() > 0,
            "gradients are all-reduced"
        );
        assert!(coll["latency_s"]["p50"].as_f64().unwrap() > 0.0);
        assert!(!coll["histogram"].as_array().unwrap().is_empty());
        // Between the two requests the rank ran more steps.
        let step = |e: &Value| e["report"]["neuronprof"]["step"].as_u64();
        assert!(
            step(y) > step(x),
            "rank {rank}: {:?} -> {:?}",
            step(x),
            step(y)
        );
        assert!(
            y["report"]["neuronprof"]["collectives"]["completed"].as_u64()
                > coll["completed"].as_u64()
        );
    }
    // Each rank reports its own memory and identity, not a copy of rank 0's.
    let tags: std::collections::BTreeSet<_> = a
        .iter()
        .map(|e| e["neuron_runtime_tag"].to_string())
        .collect();
    assert_eq!(tags.len(), 4);
}
