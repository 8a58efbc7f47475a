//! Every `torch.fft` function (and `stft` / `istft`) runs on `neuron` and gives the
//! CPU's values (`tests/torch_fft_driver.py`: real and complex inputs, float32 and
//! float64, `n`/`s`/`dim`/`norm` arguments, a transposed and a conjugated view). They
//! used to kill the Python process with a segmentation fault; an op the device could not
//! run must raise a Python exception naming it instead, and none does. A profiled
//! rfft / irfft pipeline has its FFT kernels as device rows.
//!
//! Needs a Python with torch 2.15 (`bash scripts/torch-venv`); without one the skip is
//! recorded (`tests/support/skip.rs`), and under CI it fails.

#[path = "../../../tests/support/skip.rs"]
mod skip;
#[path = "support/torch.rs"]
mod torch;

use std::path::Path;

const TEST: &str = "neuronprof-capi: torch_fft";

#[test]
fn every_torch_fft_function_runs_on_neuron_with_the_cpu_values() {
    let Some(python) = torch::torch_python() else {
        skip::skipped(TEST, torch::NO_TORCH);
        return;
    };
    let work = torch::work_dir("torch-fft");
    let (result, _) = torch::run_driver(&python, "torch_fft_driver.py", &[&work], &[]);
    let cases = result["cases"].as_array().expect("cases");
    assert!(cases.len() >= 28, "{}", cases.len());
    let failed: Vec<&serde_json::Value> =
        cases.iter().filter(|c| c.get("error").is_some()).collect();
    assert!(failed.is_empty(), "ops that raised on neuron: {failed:#?}");
    for case in cases {
        assert_eq!(case["device"], "neuron:0", "{case}");
        assert_eq!(case["dtype"][0], case["dtype"][1], "{case}");
        assert_eq!(case["shape"][0], case["shape"][1], "{case}");
        // The CPU's own kernels on the device memory: the same values, bit for bit.
        assert_eq!(case["equal"], true, "neuron differs from the CPU: {case}");
    }
    let trace = torch::read_trace(Path::new(result["trace"].as_str().unwrap()));
    let names: Vec<&str> = torch::device_kernels(&trace)
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    for kernel in ["_fft_r2c", "_fft_c2r"] {
        assert!(
            names.iter().any(|n| n.starts_with(kernel)),
            "no {kernel} kernel among the device rows {names:?}"
        );
    }
    let _ = std::fs::remove_dir_all(work);
}
