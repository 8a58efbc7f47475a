//! A process that is one rank of a multi-process job (a PyTorch rank under `torchrun`,
//! on `neuron:<LOCAL_RANK>`) holds an emulated runtime of the whole device, but drives
//! one core: its live report lists only the cores it used, so `neuron-top` summing
//! the ranks' entries counts each core and its HBM once (it showed 16 logical cores and
//! 4 x the HBM for a 4-rank job on one trn2 device).

#[path = "../../tests/support/skip.rs"]
mod skip;

use neuron_backend::{monitor, DType, Runtime};
use serde_json::Value;

#[test]
fn a_rank_process_reports_only_the_cores_it_uses() {
    if !monitor::enabled() {
        skip::skipped(
            "neuron-backend: a_rank_process_reports_only_the_cores_it_uses",
            "NEURONPROF_MONITOR=0 switches publishing off",
        );
        return;
    }
    let runtime = Runtime::trn2();
    let entry = || {
        let doc: Value = serde_json::from_str(&monitor::report_json(0.0)).unwrap();
        let entries = doc["neuron_runtime_data"].as_array().unwrap().clone();
        assert_eq!(entries.len(), 1, "{doc}");
        entries[0].clone()
    };
    let cores = |entry: &Value| {
        let cores = &entry["report"]["neuroncore_counters"]["neuroncores_in_use"];
        let mut keys: Vec<String> = cores.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    };
    let all_cores = cores(&entry());
    assert_eq!(all_cores.len(), 4, "one trn2 device: 4 logical cores");

    // Rank 1 of 4 works on core 1 only.
    monitor::set_process_rank(1, 4);
    assert_eq!(cores(&entry()), all_cores, "nothing used yet: every core");
    let device = runtime.device(1).unwrap();
    let x = device.zeros(&[1 << 20], DType::F32).unwrap();
    let _y = x.add(&x).unwrap();
    let report = entry();
    assert_eq!(cores(&report), ["1"], "{report}");
    let memory = report["report"]["memory_used"]["neuron_runtime_used_bytes"]["usage_breakdown"]
        ["neuroncore_memory_usage"]
        .as_object()
        .map(|m| m.keys().cloned().collect::<Vec<_>>());
    assert_eq!(memory, Some(vec!["1".to_string()]), "{report}");
    let capacity = report["report"]["neuronprof"]["hbm"]["capacity_bytes"].as_u64();
    let one_core = device.memory_capacity_bytes();
    assert_eq!(capacity, Some(one_core), "{report}");
}
