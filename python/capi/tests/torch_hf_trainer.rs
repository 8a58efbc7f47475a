//! Unmodified Hugging Face code finds and uses the `neuron` device
//! (`tests/torch_hf_trainer_driver.py`, a `Trainer` script with no device code, not even
//! `import neuronprof_torch`):
//!
//! - PyTorch's backend autoloading imports `neuronprof_torch` at `import torch` (the
//!   test puts the package's `torch.backends` entry point on the path, as
//!   `pip install -e python/` does);
//! - accelerate finds a Neuron device (`importlib.util.find_spec("torch_neuronx")`, the
//!   shim) and `Trainer` trains on it: `args.device`, the model's parameters and the
//!   accelerator are on `neuron`;
//! - the 8 losses equal those of the same script with `use_cpu=True` (another process)
//!   within 1e-4 relative;
//! - the profile the script takes with TorchNeuron's API (`torch_neuronx.profiling`) is
//!   laid out as TorchNeuron's, and `neuronprof analyze` finds the device's work and the
//!   profiled steps in it.
//!
//! Needs a Python with torch 2.15, transformers and accelerate (`bash
//! scripts/torch-venv`) and the `neuronprof` binary next to this test; without them the
//! skip is recorded (`tests/support/skip.rs`), and under CI it fails.

#[path = "../../../tests/support/skip.rs"]
mod skip;
#[path = "support/torch.rs"]
mod torch;

use std::path::{Path, PathBuf};

use serde_json::Value;

const TEST: &str = "neuronprof-capi: torch_hf_trainer";
/// Largest relative difference of a neuron loss from the CPU's.
const LOSS_REL_TOLERANCE: f64 = 1e-4;

/// A folder that holds `neuronprof_torch`'s installed metadata (its entry points), as
/// `pip install -e python/` writes it, for PyTorch's backend autoloading.
fn entry_point_dir(work: &Path) -> PathBuf {
    let site = work.join("site");
    let info = site.join("neuronprof_torch-0.1.0.dist-info");
    std::fs::create_dir_all(&info).unwrap();
    std::fs::write(
        info.join("METADATA"),
        "Metadata-Version: 2.1\nName: neuronprof-torch\nVersion: 0.1.0\n",
    )
    .unwrap();
    // The entry point of python/pyproject.toml.
    std::fs::write(
        info.join("entry_points.txt"),
        "[torch.backends]\nneuron = neuronprof_torch:_autoload\n",
    )
    .unwrap();
    site
}

fn run(python: &Path, work: &Path, site: &Path, cpu: bool) -> Value {
    let path = std::env::join_paths([site.to_path_buf(), torch::repo_dir().join("python")])
        .unwrap()
        .into_string()
        .unwrap();
    let out = work.join(if cpu { "cpu" } else { "neuron" });
    let cpu_flag = PathBuf::from("--use-cpu");
    let mut args: Vec<&Path> = vec![&out];
    if cpu {
        args.push(&cpu_flag);
    }
    let (result, _) = torch::run_driver(
        python,
        "torch_hf_trainer_driver.py",
        &args,
        &[
            ("PYTHONPATH", &path),
            ("HF_HUB_OFFLINE", "1"),
            ("TRANSFORMERS_OFFLINE", "1"),
            ("TORCH_DEVICE_BACKEND_AUTOLOAD", "1"),
        ],
    );
    result
}

#[test]
fn an_unmodified_hf_trainer_script_trains_on_neuron_with_the_cpu_losses() {
    let Some(python) = torch::torch_python() else {
        skip::skipped(TEST, torch::NO_TORCH);
        return;
    };
    let Some(binary) = torch::neuronprof_binary() else {
        skip::skipped(TEST, torch::NO_NEURONPROF);
        return;
    };
    let work = torch::work_dir("torch-hf-trainer");
    let site = entry_point_dir(&work);
    let neuron = run(&python, &work, &site, false);
    let cpu = run(&python, &work, &site, true);
    println!("versions: {}", neuron["versions"]);
    assert_eq!(neuron["autoloaded"], true, "{neuron}");
    assert_eq!(neuron["torch_neuronx_shim"], true, "{neuron}");
    // accelerate's default device is `neuron` (the current core), the parameters'
    // `neuron:0`.
    for key in ["args_device", "accelerate_device"] {
        assert!(
            neuron[key].as_str().unwrap().starts_with("neuron"),
            "{key}: {neuron}"
        );
    }
    assert_eq!(neuron["model_device"], "neuron:0", "{neuron}");
    assert_eq!(cpu["args_device"], "cpu", "{cpu}");
    assert_eq!(cpu["model_device"], "cpu", "{cpu}");

    let (n, c) = (torch::f64s(&neuron, "losses"), torch::f64s(&cpu, "losses"));
    assert_eq!(n.len(), 8, "{n:?}");
    assert_eq!(c.len(), 8, "{c:?}");
    for (step, (a, b)) in n.iter().zip(&c).enumerate() {
        assert!(a.is_finite(), "step {step}: {a}");
        let rel = (a - b).abs() / b.abs();
        assert!(
            rel <= LOSS_REL_TOLERANCE,
            "step {step}: neuron {a} vs cpu {b}"
        );
    }
    // The weights change from step to step (random tokens: the loss need not fall in 8).
    assert!(n.windows(2).all(|w| w[0] != w[1]), "{n:?}");
    assert_eq!(
        neuron["logged_losses"].as_array().unwrap().len(),
        8,
        "{neuron}"
    );

    // TorchNeuron's layout, and our tools read it.
    let trace_path = PathBuf::from(neuron["trace"].as_str().expect("a trace"));
    let rel = trace_path
        .strip_prefix(work.join("neuron/profile"))
        .unwrap();
    assert_eq!(rel.components().count(), 3, "{rel:?}");
    assert!(rel.to_string_lossy().contains("_pid_"), "{rel:?}");
    let trace = torch::read_trace(&trace_path);
    let kernels = torch::device_kernels(&trace);
    assert!(
        kernels
            .iter()
            .any(|k| k["name"].as_str().unwrap().starts_with("addmm")
                || k["name"].as_str().unwrap().starts_with("mm")),
        "no matmul kernels on the device"
    );
    assert!(
        !torch::cat(&trace, "neuron_instruction").is_empty(),
        "DEVICE mode"
    );
    assert!(
        !torch::cat(&trace, "neuron_host_counters").is_empty(),
        "CPU_UTIL"
    );
    let report: Value = serde_json::from_str(&torch::neuronprof(
        &binary,
        &[
            "analyze".as_ref(),
            "--json".as_ref(),
            trace_path.as_os_str(),
        ],
    ))
    .expect("analyze --json prints JSON");
    assert_eq!(report["device_activity"], true, "{}", report["errors"]);
    assert!(
        report["device_type"]
            .as_str()
            .unwrap()
            .contains("NeuronCore"),
        "{}",
        report["device_type"]
    );
    let steps = report["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "the two active steps: {steps:?}");
    for step in steps {
        assert!(step["computation_us"].as_f64().unwrap() > 0.0, "{step}");
    }
    let _ = std::fs::remove_dir_all(work);
}
