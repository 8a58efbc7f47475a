//! On a trace of our own emulator (`tests/data/gpt-2ranks-4steps/`, the `gpt` workload on
//! two trn2 ranks at LNC=2, `tests/data/README.md`), the performance model's FLOPs of every GEMM row
//! equal the FLOPs the emulator itself wrote on the kernels (their `flops` args), and the
//! device is the trace's trn2 logical core with the peaks the trace states.

use std::path::PathBuf;

use analysis::analyses::roofline::{roofline_table, RooflineOptions};
use analysis::{load_paths, LoadOptions};
use perf_model::Category;

#[test]
fn gemm_flops_of_the_model_equal_the_emulators_kernel_flops() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/gpt-2ranks-4steps/rank0.pt.trace.json.gz");
    let traces = load_paths(&[&path], &LoadOptions::default()).expect("trace loads");
    let table = roofline_table(&traces.ranks[0], &RooflineOptions::default()).expect("roofline");
    assert_eq!(
        table.device.as_deref(),
        Some("trn2 (LNC=2)"),
        "{}",
        table.device_source
    );
    let gemms: Vec<_> = table
        .ops
        .iter()
        .filter(|op| op.category == Category::Gemm)
        .collect();
    assert!(gemms.len() >= 3, "GEMM rows: {}", gemms.len());
    for op in &gemms {
        let device = op
            .device_flops_per_call
            .unwrap_or_else(|| panic!("{} {}: no kernel flops", op.name, op.input_dims));
        assert_eq!(
            op.gflops * 1e9,
            device,
            "{} {}: model vs emulator FLOPs",
            op.name,
            op.input_dims
        );
        // The matrix peak is the trace's own (deviceProperties.peakTflops fp32 = 39.5).
        if op.compute_spec == "matrix_fp32" {
            assert_eq!(op.peak.as_ref().map(|p| p.1), Some(39.5));
        }
    }
}
