//! TorchNeuron's import surface on the emulated device (`tests/torch_neuronx_driver.py`):
//!
//! - `import torch_neuronx` works once `neuronprof_torch` is loaded (the shim), and
//!   `importlib.util.find_spec("torch_neuronx")` — accelerate's test for a Neuron
//!   device — finds it;
//! - `torch_neuronx.Stream(device)`, `with torch_neuronx.stream(s):`,
//!   `current_stream`, `default_stream`, `synchronize` are torch.neuron's;
//! - `torch_neuronx.profiling`: a `NeuronConfig` passed as `experimental_config` and
//!   `NeuronProfiler(config).export_trace` as `on_trace_ready` write
//!   `<dir>/<host>_pid_<pid>/<timestamp>/trace.json`; DEVICE gives engine instruction
//!   and DMA rows, RUNTIME the runtime rows, CPU_UTIL and HOST_MEMORY counters;
//!   `capture_enabled_for_nc` keeps one core's rows, `max_events_per_nc` caps them;
//!   a bad config is a `ValueError` that names the bad value; the trace reads in
//!   `neuronprof analyze` with its device activity;
//! - a real `torch_neuronx` on the path wins over the shim, and
//!   `NEURONPROF_TORCH_NEURONX=0` switches the shim off.
//!
//! Needs a Python with torch 2.15 (`bash scripts/torch-venv`) and the `neuronprof`
//! binary next to this test; without them the skip is recorded, and under CI it fails.

#[path = "../../../tests/support/skip.rs"]
mod skip;
#[path = "support/torch.rs"]
mod torch;

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

const TEST: &str = "neuronprof-capi: torch_neuronx";

fn categories(trace: &Value) -> BTreeSet<String> {
    torch::events(trace)
        .iter()
        .filter_map(|e| e["cat"].as_str().map(str::to_owned))
        .collect()
}

/// Device rows (kernels and copies) per device pid.
fn device_pids(trace: &Value) -> BTreeSet<i64> {
    torch::events(trace)
        .iter()
        .filter(|e| (e["cat"] == "kernel" || e["cat"] == "gpu_memcpy") && e["ph"] == "X")
        .map(|e| e["pid"].as_i64().unwrap())
        .collect()
}

#[test]
fn torch_neuronx_streams_and_profiling_work_on_the_emulated_device() {
    let Some(python) = torch::torch_python() else {
        skip::skipped(TEST, torch::NO_TORCH);
        return;
    };
    let Some(binary) = torch::neuronprof_binary() else {
        skip::skipped(TEST, torch::NO_NEURONPROF);
        return;
    };
    let work = torch::work_dir("torch-neuronx");
    let (result, _) = torch::run_driver(&python, "torch_neuronx_driver.py", &[&work], &[]);
    assert_eq!(result["find_spec"], true, "{result}");
    assert_eq!(result["shim"], true, "{result}");
    let streams = &result["streams"];
    for key in [
        "side_is_stream",
        "current_inside_is_side",
        "current_after_is_default",
        "value_ok",
    ] {
        assert_eq!(streams[key], true, "{key}: {streams}");
    }
    assert_eq!(streams["side_device"], "neuron:0", "{streams}");
    assert_ne!(streams["side_stream_id"], 0, "a user stream: {streams}");

    // TorchNeuron's layout: <dir>/<instance>_pid_<pid>/<timestamp>/trace.json.
    let layout = result["layout"].as_array().unwrap();
    assert_eq!(layout.len(), 5, "{layout:?}");
    for path in layout {
        let parts: Vec<&str> = path.as_str().unwrap().split('/').collect();
        assert_eq!(parts.len(), 4, "{path}");
        assert!(parts[1].contains("_pid_"), "{path}");
        assert_eq!(parts[3], "trace.json", "{path}");
    }
    let sessions = &result["sessions"];
    let load = |name: &str| torch::read_trace(Path::new(sessions[name].as_str().unwrap()));

    let all = load("all");
    let cats = categories(&all);
    for cat in [
        "kernel",
        "privateuse1_runtime",
        "neuron_instruction",
        "neuron_dma",
        "neuron_host_counters",
    ] {
        assert!(cats.contains(cat), "all modes: no {cat} in {cats:?}");
    }
    let counters: BTreeSet<&str> = torch::cat(&all, "neuron_host_counters")
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        counters,
        BTreeSet::from(["CPU utilization", "Host memory"]),
        "{counters:?}"
    );
    let memory = torch::cat(&all, "neuron_host_counters")
        .into_iter()
        .find(|e| e["name"] == "Host memory")
        .unwrap();
    assert!(
        memory["args"]["process resident bytes"].as_i64().unwrap() > 1 << 20,
        "{memory}"
    );
    assert_eq!(device_pids(&all), BTreeSet::from([0, 1]));
    assert_eq!(all["neuron_profile"]["emulated"], true);

    let core0 = load("core0");
    assert_eq!(
        device_pids(&core0),
        BTreeSet::from([0]),
        "capture_enabled_for_nc=\"0\""
    );
    assert!(
        core0["neuron_profile"]["left_out"]["core_not_captured"]
            .as_i64()
            .unwrap()
            > 0
    );

    let runtime_only = categories(&load("runtime_only"));
    assert!(
        runtime_only.contains("privateuse1_runtime"),
        "{runtime_only:?}"
    );
    assert!(
        !runtime_only.contains("neuron_instruction"),
        "no DEVICE mode: {runtime_only:?}"
    );
    let device_only = categories(&load("device_only"));
    assert!(
        device_only.contains("neuron_instruction"),
        "{device_only:?}"
    );
    assert!(
        !device_only.contains("privateuse1_runtime"),
        "no RUNTIME mode: {device_only:?}"
    );

    let capped = load("max_events");
    let mut per_core = std::collections::BTreeMap::<i64, usize>::new();
    for e in torch::events(&capped) {
        if ["kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"]
            .iter()
            .any(|c| e["cat"] == *c)
            && e["ph"] == "X"
        {
            *per_core.entry(e["pid"].as_i64().unwrap()).or_default() += 1;
        }
    }
    assert!(per_core.values().all(|&n| n <= 4), "{per_core:?}");
    assert!(
        capped["neuron_profile"]["left_out"]["over_max_events"]
            .as_i64()
            .unwrap()
            > 0
    );

    let errors = &result["errors"];
    for (key, names) in [
        ("bad_core", "'x'"),
        ("bad_range", "'5-2'"),
        ("bad_mode", "'GPU'"),
        ("bad_max", "max_events_per_nc=0"),
    ] {
        let message = errors[key]
            .as_str()
            .unwrap_or_else(|| panic!("{key}: no error"));
        assert!(message.contains(names), "{key}: {message}");
    }
    assert_eq!(result["real_wins"][0], "True", "{result}");
    assert!(
        !result["real_wins"][1]
            .as_str()
            .unwrap()
            .contains("neuronprof_torch"),
        "{result}"
    );
    assert_eq!(result["disabled"], "None", "{result}");

    // Our tools read the folder's trace: analyze sees the device's work.
    let path = sessions["all"].as_str().unwrap();
    let report: Value = serde_json::from_str(&torch::neuronprof(
        &binary,
        &["analyze".as_ref(), "--json".as_ref(), path.as_ref()],
    ))
    .expect("analyze --json prints JSON");
    assert_device_activity(&report);
    let _ = std::fs::remove_dir_all(work);
}

/// `neuronprof analyze --json` found device work on a NeuronCore, and its temporal
/// breakdown has computation time.
pub fn assert_device_activity(report: &Value) {
    assert_eq!(report["device_activity"], true, "{}", report["errors"]);
    let device = report["device_type"].as_str().unwrap();
    assert!(device.contains("NeuronCore"), "{device}");
    let compute_us = report["temporal_breakdown"]["ranks"][0]["compute_time_us"]
        .as_f64()
        .unwrap_or(0.0);
    assert!(compute_us > 0.0, "{}", report["temporal_breakdown"]);
}
