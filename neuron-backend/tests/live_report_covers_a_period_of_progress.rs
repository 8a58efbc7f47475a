//! A rank that waits in real time (here for a peer that sleeps between its steps) makes
//! no emulated progress meanwhile: its host clock stands still. Every report of a
//! running rank still covers a period in which it worked, so it never reads 0 %
//! utilization and nothing done between two busy reports (neuron-top's "all" tab
//! flickered between 98 % and 0 % on a 2-rank run).

#[path = "../../tests/support/skip.rs"]
mod skip;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use neuron_backend::monitor;
use neuron_backend::workloads::{run_with_hooks, FnHooks, Workload, WorkloadConfig};
use serde_json::Value;

/// Rank 1 sleeps this long after each of its first steps; rank 0 waits for it in the
/// next step's all-reduce.
const PAUSE: Duration = Duration::from_millis(1600);
const PAUSED_STEPS: usize = 3;

fn my_ranks(doc: &Value) -> Vec<Value> {
    let prefix = format!("{}/rank", std::process::id());
    doc["neuron_runtime_data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["neuron_runtime_tag"]
                .as_str()
                .is_some_and(|t| t.starts_with(&prefix))
        })
        .cloned()
        .collect()
}

#[test]
fn a_rank_waiting_for_a_peer_keeps_its_last_busy_period() {
    if !monitor::enabled() {
        skip::skipped(
            "neuron-backend: a_rank_waiting_for_a_peer_keeps_its_last_busy_period",
            "NEURONPROF_MONITOR=0 switches publishing off",
        );
        return;
    }
    let mut config = WorkloadConfig::new(Workload::Gpt);
    config.ranks = 2;
    config.steps = PAUSED_STEPS + 2;
    config.numerics = false;
    config.detail = neuron_backend::RecordDetail::Kernels;
    let done = AtomicBool::new(false);
    let reports = std::thread::scope(|scope| {
        let run = scope.spawn(|| {
            let hooks = FnHooks {
                on_start: |_rank| {},
                on_step: |step: &neuron_backend::workloads::StepReport| {
                    if step.rank == 1 && step.step < PAUSED_STEPS {
                        std::thread::sleep(PAUSE);
                    }
                },
            };
            let result = run_with_hooks(&config, &hooks);
            done.store(true, Ordering::Relaxed);
            result
        });
        // A report every 100 ms (each one also extends the history the next report's
        // window is taken from).
        let mut reports = Vec::new();
        while !done.load(Ordering::Relaxed) {
            let doc: Value = serde_json::from_str(&monitor::report_json(1.0)).unwrap();
            reports.push(doc);
            std::thread::sleep(Duration::from_millis(100));
        }
        run.join().unwrap().expect("the workload runs");
        reports
    });

    let mut checked = 0;
    let mut widened = 0;
    let mut seen_busy = std::collections::BTreeSet::new();
    for (i, doc) in reports.iter().enumerate() {
        for entry in my_ranks(doc) {
            let ext = &entry["report"]["neuronprof"];
            // From the first finished step on (before it a rank may not have submitted
            // anything yet), while it runs.
            if ext["state"] != "running" || ext["step"].is_null() {
                continue;
            }
            let report = &entry["report"];
            let tag = entry["neuron_runtime_tag"].as_str().unwrap();
            let period = report["neuroncore_counters"]["period"].as_f64().unwrap();
            if period < 0.95 {
                continue; // the history is younger than the period
            }
            let completed = report["execution_stats"]["execution_summary"]["completed"]
                .as_u64()
                .unwrap();
            let util = report["neuroncore_counters"]["neuroncores_in_use"]
                .as_object()
                .unwrap()
                .values()
                .map(|c| c["neuroncore_utilization"].as_f64().unwrap())
                .sum::<f64>();
            // Until the history holds some of the rank's work (its first step may run
            // before the first sample), its window is the whole history and empty.
            if !seen_busy.contains(tag) {
                if completed > 0 {
                    seen_busy.insert(tag.to_string());
                }
                continue;
            }
            checked += 1;
            if period > 1.2 {
                widened += 1;
            }
            assert!(
                completed > 0 && util > 0.0,
                "report {i}, {tag} (step {}): {completed} done, {util:.1} % busy over a \
                 window of {period:.2} s",
                ext["step"]
            );
        }
    }
    // Both ranks sat through ≥ 1.6 s pauses: some reports were taken in them.
    assert!(
        checked >= 20,
        "only {checked} reports of running ranks checked"
    );
    assert!(
        widened >= 2,
        "no report had to look past a pause ({checked} checked)"
    );
}
