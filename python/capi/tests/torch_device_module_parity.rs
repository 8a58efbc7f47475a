//! torch.neuron has the torch.cuda calls profilers and training loops make (issue 16;
//! `tests/torch_parity_driver.py`): `get_device_properties` / `get_device_name` (the
//! device's trace entry: name, HBM, LNC, peak TFLOPS), `is_bf16_supported`,
//! `mem_get_info` (free falls by what the allocator reserves), `reset_peak_memory_stats`
//! (peaks back to the current values), `reset_accumulated_memory_stats`,
//! `synchronize(device)` with every spelling of a device, and `manual_seed` /
//! `manual_seed_all` / `torch.manual_seed` repeating the device's random draws;
//! `torch.accelerator.memory.*` (the extension's `c10::DeviceAllocator`) agreeing with
//! `torch.neuron.*` and with the tensors' sizes; and stream-ordered reuse: a freed block
//! goes back to its own stream at once, never to another stream, and after
//! `record_stream(side)` not before the side stream passed the free (allocated at once,
//! still active until then); memory snapshots (`torch.neuron.memory._record_memory_history`
//! / `_dump_snapshot` / `_snapshot`) with torch.cuda's keys, segments whose totals are
//! `memory_stats`', blocks in their states with the allocating line's Python frame, the
//! alloc / free_requested / free_completed trace, read by `torch.cuda._memory_viz`'s
//! `trace_plot`, `segment_plot` and `segsum`.
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

    check_accelerator_memory(&r["accelerator_memory"]);
    check_stream_reuse(&r["stream_reuse"]);
    check_snapshot(&r["snapshot"]);

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

fn check_accelerator_memory(m: &Value) {
    const LARGE: i64 = 3 * MIB;
    const SMALL: i64 = 1024; // 1000 bytes rounded to the small pool's size class
    assert_eq!(m["equal"], true, "accelerator and neuron stats differ: {m}");
    assert_eq!(m["keys_differ"], json!([]), "{m}");
    assert_eq!(m["equal_at_end"], true, "{m}");
    assert_eq!(int(&m["allocated"]), LARGE + SMALL, "{m}");
    assert_eq!(m["neuron_allocated"], m["allocated"], "{m}");
    assert_eq!(int(&m["after_free"]), SMALL, "{m}");
    assert_eq!(int(&m["peak"]), LARGE + SMALL, "{m}");
    assert_eq!(m["neuron_peak"], m["peak"], "{m}");
    assert_eq!(int(&m["allocation.all.allocated"]), 2, "{m}");
    assert_eq!(int(&m["allocation.all.freed"]), 1, "{m}");
    assert_eq!(
        int(&m["allocated_bytes.large_pool.allocated"]),
        LARGE,
        "{m}"
    );
    assert_eq!(int(&m["allocated_bytes.large_pool.freed"]), LARGE, "{m}");
    assert!(
        int(&m["allocated_bytes.small_pool.current"]) >= SMALL,
        "{m}"
    );
    assert!(int(&m["requested_bytes.small_pool.current"]) >= 1000, "{m}");
    assert_eq!(
        m["active_bytes.all.current"], m["allocated_bytes.all.current"],
        "nothing pending: {m}"
    );
    assert_eq!(int(&m["peak_after_reset"]), SMALL, "{m}");
    assert_eq!(m["neuron_peak_after_reset"], m["peak_after_reset"], "{m}");
    assert_eq!(int(&m["allocs_after_reset"]), 0, "{m}");
    assert_eq!(
        m["info"][0], m["info"][1],
        "get_memory_info = mem_get_info: {m}"
    );
}

fn check_stream_reuse(r: &Value) {
    assert_eq!(r["own_stream_reuses_at_once"], true, "{r}");
    assert_eq!(r["other_stream_gets_other_block"], true, "{r}");
    // The side stream's host copies last what their bytes take over the host link
    // (trn2, the default profile): they keep it busy for milliseconds.
    let link_bytes_per_ns = neuron_backend::DeviceProfile::trn2().host_link_bytes_per_ns;
    let link_ms = (int(&r["copies"]) * int(&r["copy_bytes"])) as f64 / link_bytes_per_ns / 1e6;
    let copies_ms = r["copies_ms"].as_f64().unwrap();
    assert!(
        copies_ms >= 0.99 * link_ms,
        "the side stream's copies take {copies_ms} ms, their bytes over the host link {link_ms} ms: {r}"
    );
    assert_eq!(
        r["side_busy_at_free"], true,
        "the side stream's copies should still run at the free: {r}"
    );
    assert_eq!(
        r["side_busy_after"], true,
        "the side stream's copies should still run at the next allocation: {r}"
    );
    // What CUDA's caching allocator guarantees for a block freed while a stream it was
    // recorded on still has queued work: no longer allocated, still active, and not
    // handed out until that work completed; reused afterwards.
    assert_eq!(int(&r["allocated_drop"]), 4 * MIB, "{r}");
    assert_eq!(
        int(&r["active_drop"]),
        0,
        "active until the side stream passes: {r}"
    );
    assert_eq!(
        r["reused_while_side_busy"], false,
        "reused before the side stream passed the free: {r}"
    );
    assert_eq!(r["reused_after_side_passed"], true, "{r}");
    assert_eq!(r["active_after"], r["allocated_after"], "{r}");
}

fn check_snapshot(s: &Value) {
    assert_eq!(
        s["keys"],
        json!([
            "allocator_settings",
            "device_traces",
            "external_annotations",
            "host_segments",
            "host_traces",
            "segments"
        ]),
        "{s}"
    );
    let sums = &s["sums"];
    assert_eq!(sums["total_size"], sums["reserved_bytes"], "{s}");
    assert_eq!(sums["allocated_size"], sums["allocated_bytes"], "{s}");
    assert_eq!(sums["active_size"], sums["active_bytes"], "{s}");
    assert_eq!(s["tiled"], true, "blocks tile their segments: {s}");
    assert_eq!(
        s["states"],
        json!({"x": "active_allocated", "y": "inactive", "z": "active_pending_free"}),
        "{s}"
    );
    assert_eq!(int(&s["x_block"]["size"]), 5 * MIB, "{s}");
    assert_eq!(int(&s["x_block"]["requested_size"]), 5 * MIB, "{s}");
    let driver = s["driver"].as_str().unwrap();
    let line = &s["x_line"];
    assert!(
        s["x_block"]["frames"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f[0].as_str().unwrap().ends_with(driver) && &f[1] == line),
        "the allocating line is in the block's frames: {s}"
    );
    assert_eq!(s["actions"]["x"], json!(["alloc"]), "{s}");
    assert_eq!(
        s["actions"]["y"],
        json!(["alloc", "free_requested", "free_completed"]),
        "{s}"
    );
    assert_eq!(
        s["actions"]["z"],
        json!(["alloc", "free_requested"]),
        "z waits for the side stream: {s}"
    );
    assert_eq!(
        s["z_after"],
        json!(["alloc", "free_requested", "free_completed"]),
        "{s}"
    );
    assert_eq!(
        s["sizes"],
        json!({"x": [5 * MIB], "y": [1024], "z": [4 * MIB]}),
        "{s}"
    );
    assert_eq!(s["times_ordered"], true, "{s}");
    for key in ["trace_plot", "segment_plot", "segsum"] {
        assert!(int(&s[key]) > 100, "{key}: {s}");
    }
}
