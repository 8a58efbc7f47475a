//! A kernel launched from outside (the PyTorch extension's path) counts in the live
//! report's `top_operators` under its kernel name, as native ops count under theirs
//! (neuron-top's "Top Operators" panel listed only the collectives of a PyTorch job).

#[path = "../../tests/support/skip.rs"]
mod skip;

use neuron_backend::{monitor, DType, ExternalKernel, ExternalLaunch, Runtime};
use serde_json::Value;

#[test]
fn external_kernels_are_in_the_live_operator_table() {
    if !monitor::enabled() {
        skip::skipped(
            "neuron-backend: external_kernels_are_in_the_live_operator_table",
            "NEURONPROF_MONITOR=0 switches publishing off",
        );
        return;
    }
    let runtime = Runtime::trn2();
    let device = runtime.device(0).unwrap();
    // A window needs a sample before the launches (one per 100 ms at most).
    let _ = monitor::report_json(0.0);
    let launch = |name: &str| ExternalLaunch {
        name_id: runtime_hooks::intern(name),
        corr_id: runtime_hooks::next_corr_id(),
        flops: 2 * 512 * 512 * 512,
        bytes: 3 * 512 * 512 * 4,
        kernel: ExternalKernel::Matmul {
            batch: 1,
            m: 512,
            k: 512,
            n: 512,
            dtype: DType::F32,
            bias: false,
        },
    };
    let spans: Vec<u64> = ["mm_f32", "mm_f32", "graph_0_0_forward"]
        .iter()
        .map(|name| {
            let span = device.external_launch(0, &launch(name)).unwrap();
            span.end_ns - span.start_ns
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(150));
    let doc: Value = serde_json::from_str(&monitor::report_json(1.0)).unwrap();
    let ops = doc["neuron_runtime_data"][0]["report"]["neuronprof"]["top_operators"].clone();
    let row = |name: &str| {
        ops.as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} in {ops}: {doc}"))
    };
    assert_eq!(row("mm_f32")["calls"], 2, "{ops}");
    let mm_s = row("mm_f32")["device_time_s"].as_f64().unwrap();
    assert!(
        (mm_s - (spans[0] + spans[1]) as f64 / 1e9).abs() < 1e-12,
        "{ops}"
    );
    assert_eq!(row("graph_0_0_forward")["calls"], 1, "{ops}");
}
