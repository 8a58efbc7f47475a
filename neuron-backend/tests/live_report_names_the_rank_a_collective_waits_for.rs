//! A collective that waits for a late rank is listed in flight on the ranks that
//! arrived, naming the missing rank; once done it is counted, and the late rank is the
//! one the others waited for.

#[path = "../../tests/support/skip.rs"]
mod skip;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use neuron_backend::dist::{ReduceOp, World, WorldConfig};
use neuron_backend::monitor;
use neuron_backend::Tensor;
use serde_json::Value;

fn my_ranks(period_s: f64, running_only: bool) -> Vec<Value> {
    let doc: Value = serde_json::from_str(&monitor::report_json(period_s)).unwrap();
    let prefix = format!("{}/rank", std::process::id());
    let mut ranks: Vec<Value> = doc["neuron_runtime_data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["neuron_runtime_tag"]
                .as_str()
                .is_some_and(|t| t.starts_with(&prefix))
                && (!running_only || e["report"]["neuronprof"]["state"] == "running")
        })
        .cloned()
        .collect();
    ranks.sort_by_key(|e| e["report"]["neuronprof"]["rank"].as_u64());
    ranks
}

#[test]
fn in_flight_collective_names_the_late_rank() {
    if !monitor::enabled() {
        skip::skipped(
            "neuron-backend: in_flight_collective_names_the_late_rank",
            "NEURONPROF_MONITOR=0 switches publishing off",
        );
        return;
    }
    let mut config = WorldConfig::new(3);
    config.numerics = false;
    let world = World::new(config).unwrap();
    let go = AtomicBool::new(false);
    let (waiting, after) = std::thread::scope(|scope| {
        let ranks = scope.spawn(|| {
            world.run(|rank| {
                let x = Tensor::from_f32(&[1024], vec![1.0; 1024])?.to_device(rank.device())?;
                if rank.rank() == 2 {
                    // The late rank: arrives when the main thread has seen the others
                    // wait. Sleeping is not host time on a rank's CPU-time clock, so it
                    // is also late in modeled time by 1 ms of host work.
                    while !go.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    let now = runtime_hooks::clock::now_ns();
                    runtime_hooks::clock::advance_to(now + 1_000_000);
                }
                let y = rank.world_group().all_reduce(&x, ReduceOp::Sum)?;
                rank.device().synchronize();
                Ok::<_, neuron_backend::BackendError>(y.shape().to_vec())
            })
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        let waiting = loop {
            let ranks = my_ranks(1.0, true);
            let in_flight = |e: &Value| {
                e["report"]["neuronprof"]["collectives"]["in_flight"]
                    .as_array()
                    .map_or(0, Vec::len)
            };
            // Rank 1 can enter the collective after rank 0's entry was read: wait until
            // both early ranks list only the late one (each must, within the deadline).
            let waits_for_late = |e: &Value| {
                e["report"]["neuronprof"]["collectives"]["in_flight"][0]["waiting_for_ranks"]
                    == serde_json::json!([2])
            };
            if ranks.len() == 3
                && in_flight(&ranks[0]) == 1
                && in_flight(&ranks[1]) == 1
                && waits_for_late(&ranks[0])
                && waits_for_late(&ranks[1])
            {
                break ranks;
            }
            assert!(
                Instant::now() < deadline,
                "ranks 0 and 1 never both showed waiting for rank 2 only: {ranks:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        go.store(true, Ordering::Relaxed);
        for result in ranks.join().unwrap() {
            result.unwrap();
        }
        (waiting, my_ranks(monitor::MAX_PERIOD_S, false))
    });

    for entry in &waiting[..2] {
        let f = &entry["report"]["neuronprof"]["collectives"]["in_flight"][0];
        assert_eq!(f["op"], "all_reduce", "{f}");
        assert_eq!(f["group"], "0");
        assert_eq!(f["seq"], 0);
        assert_eq!(f["bytes"], 4096);
        assert_eq!(f["waiting_for_ranks"], serde_json::json!([2]), "{f}");
        assert!(f["age_s"].as_f64().unwrap() >= 0.0);
    }
    assert_eq!(
        waiting[2]["report"]["neuronprof"]["collectives"]["in_flight"]
            .as_array()
            .unwrap()
            .len(),
        0,
        "the late rank has not called yet"
    );
    // After: every rank counts the collective, none is in flight, and ranks 0 and 1
    // waited (in modeled time) for rank 2.
    assert_eq!(after.len(), 3);
    for (rank, entry) in after.iter().enumerate() {
        let c = &entry["report"]["neuronprof"]["collectives"];
        assert_eq!(c["completed"], 1);
        assert!(c["in_flight"].as_array().unwrap().is_empty());
        assert_eq!(c["latency_s"]["count"], 1);
        assert!(c["latency_s"]["p50"].as_f64().unwrap() > 0.0);
        if rank < 2 {
            assert_eq!(c["slowest_rank"], 2, "rank {rank}: {c}");
        }
    }
}
