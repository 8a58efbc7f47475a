//! torch.neuron has the torch.cuda calls profilers and training loops make (issue 16;
//! `tests/torch_parity_driver.py`): `get_device_properties` / `get_device_name` (the
//! device's trace entry: name, HBM, LNC, peak TFLOPS), `is_bf16_supported`,
//! `mem_get_info` (free falls by what the allocator reserves), `reset_peak_memory_stats`
//! (peaks back to the current values), `reset_accumulated_memory_stats`,
//! `synchronize(device)` with every spelling of a device, and `manual_seed` /
//! `manual_seed_all` / `torch.manual_seed` repeating the device's random draws.
//!
//! Needs a Python with torch 2.15 (see `support/torch.rs`); without one the skip is
//! recorded (`tests/support/skip.rs`), and under CI it fails.

#[path = "../../../tests/support/skip.rs"]
mod skip;
#[path = "support/torch.rs"]
mod torch;

use serde_json::{json, Value};

const MIB: i64 = 1 << 20;

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

#[test]
fn torch_device_module_parity() {
    let Some(python) = torch::torch_python() else {
        skip::skipped(
            "neuronprof-capi: torch_device_module_parity",
            torch::NO_TORCH,
        );
        return;
    };
    let (r, _) = torch::run_driver(&python, "torch_parity_driver.py", &[], &[]);
    // trn2 (the default profile): 4 logical cores of LNC=2, 24 GiB of HBM each.
    let props = &r["props"];
    assert_eq!(props["name"], "NeuronCore 0 (trn2, LNC=2)");
    assert_eq!(int(&props["total_memory"]), 24 * 1024 * MIB);
    assert_eq!(props["lnc"], 2);
    assert_eq!(props["profile"], "trn2");
    assert!(
        props["peak_tflops"]["bf16"].as_f64().unwrap() > 0.0,
        "{props}"
    );
    assert_eq!(
        r["names"],
        json!([
            "NeuronCore 0 (trn2, LNC=2)",
            "NeuronCore 1 (trn2, LNC=2)",
            "NeuronCore 2 (trn2, LNC=2)",
            "NeuronCore 3 (trn2, LNC=2)"
        ])
    );
    assert_eq!(r["name_of_device"], "NeuronCore 1 (trn2, LNC=2)");
    assert_eq!(r["bf16"], true);

    let info: Vec<i64> = r["mem_get_info"]
        .as_array()
        .unwrap()
        .iter()
        .map(int)
        .collect();
    let reserved = int(&r["reserved_after"]);
    assert_eq!(info[1], int(&props["total_memory"]), "total is the HBM");
    assert_eq!(info[3], info[1]);
    assert!(reserved >= 64 * MIB, "{r}");
    assert_eq!(
        info[0] - info[2],
        reserved,
        "free falls by the reserved bytes: {r}"
    );

    assert!(int(&r["peak_before_reset"]) >= 64 * MIB, "{r}");
    assert_eq!(r["peak_after_reset"], r["allocated_after_reset"], "{r}");
    assert!(int(&r["peak_after_reset"]) < 64 * MIB, "{r}");
    assert_eq!(
        r["reserved_peak_after_reset"], r["reserved_after_reset"],
        "{r}"
    );
    assert!(int(&r["allocs_before"]) >= 1, "{r}");
    assert_eq!(r["allocs_after"], 0, "{r}");
    assert_eq!(r["synchronized"], true);

    for key in ["manual_seed", "manual_seed_all", "torch_manual_seed"] {
        let pair = r[key].as_array().unwrap();
        assert_eq!(pair[0], pair[1], "{key} repeats the draws");
        assert_eq!(
            pair[0], r["manual_seed"][0],
            "{key} seeds the same generator"
        );
    }
    assert_ne!(
        r["other_seed"], r["manual_seed"][0],
        "another seed, other draws"
    );
}
