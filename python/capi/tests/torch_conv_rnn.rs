//! Convolutions and RNNs run on `neuron` as device kernels
//! (`tests/torch_conv_rnn_driver.py`):
//!
//! - Conv1d/2d/3d and ConvTranspose1d/2d/3d with stride, dilation, groups (depthwise
//!   too), every padding mode (zeros, reflect, replicate, circular, `"same"`), with and
//!   without bias, channels-last input: forward and backward give the CPU's outputs and
//!   gradients bit for bit (`convolution_overrideable` / `_backward_overrideable` run
//!   the CPU's convolution on the device memory);
//! - nn.LSTM and nn.GRU (2 layers, bidirectional, without bias), LSTMCell, GRUCell:
//!   outputs and gradients within float32 rounding of the CPU's (the fused cells sum
//!   the gates in the CPU's order; the backward is the cell's formula, so the last bits
//!   may differ from autograd's chain of pointwise ops);
//! - a profiled CNN + LSTM + GRU step has `conv2d`, `conv_transpose2d` (and their
//!   backwards) and the fused cells as device rows, the convolutions costed as TensorE
//!   implicit GEMMs with their FLOPs.
//!
//! Needs a Python with torch 2.15 (`bash scripts/torch-venv`); without one the skip is
//! recorded (`tests/support/skip.rs`), and under CI it fails.

#[path = "../../../tests/support/skip.rs"]
mod skip;
#[path = "support/torch.rs"]
mod torch;

use std::path::Path;

use serde_json::Value;

const TEST: &str = "neuronprof-capi: torch_conv_rnn";
/// Largest relative difference of an RNN's outputs and gradients from the CPU's.
const RNN_REL_TOLERANCE: f64 = 1e-5;

#[test]
fn convolutions_and_rnns_run_on_neuron_with_the_cpu_values_and_device_rows() {
    let Some(python) = torch::torch_python() else {
        skip::skipped(TEST, torch::NO_TORCH);
        return;
    };
    let work = torch::work_dir("torch-conv-rnn");
    let (result, _) = torch::run_driver(&python, "torch_conv_rnn_driver.py", &[&work], &[]);
    let cases = result["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 21, "{cases:#?}");
    let failed: Vec<&Value> = cases.iter().filter(|c| c.get("error").is_some()).collect();
    assert!(failed.is_empty(), "failed on neuron: {failed:#?}");
    for case in cases {
        let name = case["name"].as_str().unwrap();
        println!(
            "{name}: equal {}, max abs diff {}, max rel diff {}",
            case["equal"], case["max_abs_diff"], case["max_rel_diff"]
        );
        if name.starts_with("conv") {
            assert_eq!(case["equal"], true, "{case}");
        } else {
            let rel = case["max_rel_diff"].as_f64().unwrap();
            assert!(rel <= RNN_REL_TOLERANCE, "{case}");
        }
    }
    assert!(result["loss"].as_f64().unwrap().is_finite(), "{result}");

    let trace = torch::read_trace(Path::new(result["trace"].as_str().unwrap()));
    let kernels = torch::device_kernels(&trace);
    let find = |prefix: &str| -> Vec<&Value> {
        kernels
            .iter()
            .copied()
            .filter(|k| k["name"].as_str().unwrap().starts_with(prefix))
            .collect()
    };
    for (prefix, lowering) in [
        ("conv2d_f32", "convolution as implicit GEMM"),
        (
            "conv_transpose2d_f32",
            "convolution as implicit GEMM of its adjoint",
        ),
        ("conv2d_backward_f32", "convolution as "),
        (
            "conv_transpose2d_backward_f32",
            "convolution as 2 implicit GEMMs (transposed)",
        ),
    ] {
        let rows = find(prefix);
        assert_eq!(rows.len(), 1, "{prefix}: {rows:?}");
        let args = &rows[0]["args"];
        assert!(
            args["lowering"].as_str().unwrap().starts_with(lowering),
            "{prefix}: {args}"
        );
        assert!(args.get("costed_by").is_none(), "{prefix}: {args}");
        assert!(args["flops"].as_i64().unwrap() > 0, "{prefix}: {args}");
        assert!(rows[0]["dur"].as_f64().unwrap() > 0.0, "{prefix}");
    }
    // Conv2d(1 -> 8, 3x3) on 2 x 8 x 12: 2 · (2·8·12) · 9 · 8 multiply-adds, plus the bias.
    let conv = find("conv2d_f32")[0];
    assert_eq!(
        conv["args"]["flops"].as_i64().unwrap(),
        2 * (2 * 8 * 12) * 9 * 8 + 2 * 8 * 12 * 8
    );
    // 24 timesteps (the transposed convolution doubles 12): one fused cell per step,
    // forward and backward.
    for (prefix, count) in [
        ("_thnn_fused_lstm_cell_f32", 24),
        ("_thnn_fused_lstm_cell_backward_f32", 24),
        ("_thnn_fused_gru_cell_f32", 24),
        ("_thnn_fused_gru_cell_backward_f32", 24),
    ] {
        assert_eq!(find(prefix).len(), count, "{prefix}");
    }
    let _ = std::fs::remove_dir_all(work);
}
