//! Real PyTorch end to end: `python/examples/train_mlp.py` trains on the emulated
//! `neuron` device under `torch.profiler` (CPU + PrivateUse1 activities, a schedule,
//! `tensorboard_trace_handler`), and the trace PyTorch itself writes is checked: neuron
//! kernels, copies and runtime calls, `ac2g` flows pairing launches with kernels,
//! `[memory]` events of device type PrivateUse1, timestamps on PyTorch's host timeline,
//! the loss falling exactly as on the CPU; then the trace goes through our reader,
//! `analysis`, the Perfetto exporter, neuron-top's replay, the viewer's loader and HTA.
//!
//! Needs a Python with torch 2.15: `NEURONPROF_TORCH_PYTHON`, else `target/torch-venv`
//! (`bash scripts/torch-venv`, which `.ci/run` runs). Without either it is skipped with
//! a message — except in CI (`CI` set), where it fails. The C++ extension is built by
//! torch's `cpp_extension` into `<target>/torch-ext` (ninja; about a minute the first
//! time, cached after) and linked to the `libneuronprof_capi.so` cargo built for this
//! test. One Python process runs every PyTorch check (`tests/torch_driver.py`).

#[path = "../../../tests/support/skip.rs"]
mod skip;
#[path = "support/torch.rs"]
mod torch;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::Value;
use torch::{arg_i64, cat, end, events, hta_python, read_trace, traces_in, ts};

const PRIVATEUSE1_DEVICE_TYPE: i64 = 20;
/// How far PyTorch's and our conversions of host time to wall time may disagree, µs.
const CLOCK_SKEW_US: f64 = 2.0;

struct Run {
    result: Value,
    trace: Value,
    trace_path: PathBuf,
    cpu_only: Value,
    attention: Value,
}

fn run_pytorch(python: &Path) -> Run {
    let work = torch::work_dir("torch-test");
    let trace_dir = work.join("neuron");
    let cpu_only = work.join("cpu_only.json");
    let attention = work.join("attention.json");
    let (result, _) = torch::run_driver(
        python,
        "torch_driver.py",
        &[&trace_dir, &cpu_only, &attention],
        &[],
    );
    let traces = traces_in(&trace_dir);
    assert_eq!(traces.len(), 1, "one profiled window: {traces:?}");
    Run {
        result,
        trace: read_trace(&traces[0]),
        trace_path: traces[0].clone(),
        cpu_only: read_trace(&cpu_only),
        attention: read_trace(&attention),
    }
}

fn check_device_activity(trace: &Value) {
    let pid = events(trace)
        .iter()
        .find(|e| e["cat"] == "cpu_op")
        .map(|e| e["pid"].as_i64().unwrap())
        .expect("PyTorch's operators");
    let kernels = cat(trace, "kernel");
    let copies = cat(trace, "gpu_memcpy");
    let runtime = cat(trace, "privateuse1_runtime");
    let names: HashSet<&str> = kernels
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    for expected in ["addmm_f32", "mm_f32", "gelu_f32", "relu_f32"] {
        assert!(
            names.contains(expected),
            "no {expected} kernel in {names:?}"
        );
    }
    assert!(
        copies
            .iter()
            .any(|c| c["name"] == "Memcpy HtoD (Host -> Neuron)"),
        "no host-to-device copy"
    );
    assert!(
        copies
            .iter()
            .any(|c| c["name"] == "Memcpy DtoH (Neuron -> Host)"),
        "no device-to-host copy (loss.item())"
    );
    // Device rows: pid = device, tid = queue, with device/stream/correlation args and the
    // External id of the PyTorch operator that launched them.
    let mut device_rows: Vec<&Value> = kernels.iter().chain(copies.iter()).copied().collect();
    device_rows.sort_by(|a, b| ts(a).total_cmp(&ts(b)));
    for row in &device_rows {
        assert_eq!(row["pid"], 0, "{row}");
        assert_eq!(row["tid"].as_i64(), Some(arg_i64(row, "stream")), "{row}");
        assert_eq!(arg_i64(row, "device"), 0);
        assert!(arg_i64(row, "correlation") > 0);
        assert!(arg_i64(row, "External id") > 0, "{row}");
    }
    for pair in device_rows.windows(2) {
        assert!(
            end(pair[0]) <= ts(pair[1]) + 1e-3,
            "one queue runs in order"
        );
    }
    let launches: Vec<&Value> = runtime
        .iter()
        .filter(|r| r["name"] == "nrt_execute")
        .copied()
        .collect();
    assert_eq!(
        launches.len(),
        device_rows.len(),
        "one launch per device row"
    );
    for launch in &launches {
        assert_eq!(
            launch["pid"].as_i64(),
            Some(pid),
            "runtime calls on the host"
        );
    }
    // Flows: each launch's ac2g start pairs with its kernel's finish, same correlation.
    let launch_by_corr: HashMap<i64, &Value> = launches
        .iter()
        .map(|l| (arg_i64(l, "correlation"), *l))
        .collect();
    let row_by_corr: HashMap<i64, &Value> = device_rows
        .iter()
        .map(|r| (arg_i64(r, "correlation"), *r))
        .collect();
    let flows = cat(trace, "ac2g");
    let starts: Vec<&Value> = flows.iter().filter(|f| f["ph"] == "s").copied().collect();
    let finishes: HashMap<i64, &Value> = flows
        .iter()
        .filter(|f| f["ph"] == "f")
        .map(|f| (f["id"].as_i64().unwrap(), *f))
        .collect();
    assert_eq!(starts.len(), device_rows.len(), "one ac2g flow per launch");
    for start in &starts {
        let id = start["id"].as_i64().unwrap();
        let launch = launch_by_corr[&id];
        let row = row_by_corr[&id];
        let finish = finishes[&id];
        assert_eq!(start["tid"], launch["tid"]);
        assert!(
            (ts(start) - ts(launch)).abs() < 1e-3,
            "flow starts at its launch"
        );
        assert_eq!(finish["pid"], 0);
        assert!(
            (ts(finish) - ts(row)).abs() < 1e-3,
            "flow ends at its kernel"
        );
        assert!(ts(row) >= ts(launch), "a kernel starts after its launch");
        assert_eq!(arg_i64(launch, "External id"), arg_i64(row, "External id"));
    }
    // Timestamps on PyTorch's host timeline: every launch lies inside the operator
    // (same thread) whose External id it carries, give or take the two clocks'
    // conversion to wall time (PyTorch's TSC-based one, our CLOCK_MONOTONIC anchor):
    // CLOCK_SKEW_US, against operators of tens to hundreds of µs.
    let ops: HashMap<i64, &Value> = cat(trace, "cpu_op")
        .into_iter()
        .map(|o| (arg_i64(o, "External id"), o))
        .collect();
    for launch in &launches {
        let op = ops[&arg_i64(launch, "External id")];
        assert_eq!(op["tid"], launch["tid"], "{launch} in {op}");
        assert!(
            ts(op) <= ts(launch) + CLOCK_SKEW_US && end(launch) <= end(op) + CLOCK_SKEW_US,
            "{launch} outside {op}"
        );
    }
    // The device described as the profiler crate's own traces describe it.
    assert_eq!(trace["dropped_records"], 0, "no records lost");
    let properties = &trace["deviceProperties"][0];
    assert_eq!(properties["name"], "NeuronCore 0 (trn2, LNC=2)");
    assert!(properties["peakTflops"]["bf16"].as_f64().unwrap() > 0.0);
    let process_name = events(trace)
        .iter()
        .find(|e| e["ph"] == "M" && e["name"] == "process_name" && e["pid"] == 0)
        .expect("the device's process is named");
    assert_eq!(process_name["args"]["name"], "NeuronCore 0 (trn2, LNC=2)");
    let steps: Vec<&str> = cat(trace, "user_annotation")
        .iter()
        .filter_map(|e| e["name"].as_str())
        .filter(|n| n.starts_with("ProfilerStep#"))
        .collect();
    assert_eq!(
        steps,
        [
            "ProfilerStep#4",
            "ProfilerStep#5",
            "ProfilerStep#6",
            "ProfilerStep#7"
        ],
        "wait 2, warm-up 2, active 4"
    );
}

fn check_memory(trace: &Value) {
    let memory: Vec<&Value> = events(trace)
        .iter()
        .filter(|e| e["name"] == "[memory]" && e["args"]["Device Type"] == PRIVATEUSE1_DEVICE_TYPE)
        .collect();
    assert!(
        memory.len() > 20,
        "[memory] events of the neuron device: {}",
        memory.len()
    );
    let allocations = memory.iter().filter(|m| arg_i64(m, "Bytes") > 0).count();
    let frees = memory.iter().filter(|m| arg_i64(m, "Bytes") < 0).count();
    assert!(
        allocations > 0 && frees > 0,
        "{allocations} allocations, {frees} frees"
    );
    for m in &memory {
        assert_eq!(arg_i64(m, "Device Id"), 0);
        // Sizes and totals are the caching allocator's: blocks of 256-byte multiples
        // inside 2 MiB (small pool) or larger segments.
        assert_eq!(arg_i64(m, "Bytes").abs() % 256, 0, "{m}");
        assert!(
            arg_i64(m, "Total Reserved") >= arg_i64(m, "Total Allocated"),
            "{m}"
        );
        assert_eq!(arg_i64(m, "Total Reserved") % (2 << 20), 0, "{m}");
    }
}

fn check_losses(result: &Value) {
    let losses = |key: &str| -> Vec<f64> {
        result[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    let (neuron, cpu) = (losses("neuron_losses"), losses("cpu_losses"));
    assert_eq!(neuron.len(), 12);
    let first = neuron[..3].iter().sum::<f64>() / 3.0;
    let last = neuron[neuron.len() - 3..].iter().sum::<f64>() / 3.0;
    assert!(last < first - 0.05, "the loss falls: {neuron:?}");
    // The direct path ran the training; the copying run went through cpu_fallback.
    let counts = |key: &str| -> (u64, u64) {
        let pair = result[key].as_array().expect(key);
        (pair[0].as_u64().unwrap(), pair[1].as_u64().unwrap())
    };
    let (direct, copied) = counts("fallback_counts");
    assert!(
        direct > 100 && direct > 10 * copied,
        "direct {direct}, copied {copied}"
    );
    let (direct_after, copied_after) = counts("fallback_counts_after_copying");
    assert!(
        copied_after >= copied + 100,
        "copied {copied} -> {copied_after}"
    );
    assert_eq!(direct_after, direct, "the copying run used no direct path");
    let copying = losses("neuron_copying_losses");
    assert_eq!(copying.len(), cpu.len());
    // Bit-identical: every op of the MLP's training runs ATen's CPU kernel on the
    // tensors' own memory (both fallback paths).
    assert_eq!(neuron, cpu, "neuron vs cpu losses");
    assert_eq!(copying, cpu, "copying path vs cpu losses");
}

fn check_reader_analysis_perfetto(path: &Path) {
    let mut counts = trace_format::CountingSink::default();
    let report = trace_format::read_path(path, &mut counts).expect("our reader reads it");
    assert!(report.damage.is_none());
    let by_category = counts.by_category();
    for category in [
        "kernel",
        "gpu_memcpy",
        "privateuse1_runtime",
        "ac2g",
        "cpu_op",
    ] {
        assert!(
            by_category.get(category).copied().unwrap_or(0) > 0,
            "{category}: {by_category:?}"
        );
    }
    let set = analysis::load_paths(&[path], &analysis::LoadOptions::default()).unwrap();
    let analyzed = analysis::analyze(&set, &analysis::ReportOptions::default());
    let temporal = analyzed
        .temporal_breakdown
        .expect("temporal breakdown runs");
    assert!(temporal.ranks[0].compute_time_us > 0.0);
    let rank = &analyzed.per_rank[0];
    assert!(
        rank.launch_stats.correlation.count > 0,
        "launches paired with kernels"
    );
    let neuron_memory = rank
        .memory
        .devices
        .iter()
        .find(|d| d.device.starts_with("privateuse1"))
        .expect("memory timeline of the neuron device");
    assert!(neuron_memory.peak_allocated_bytes > 0);
    let mut exporter = exporters::PerfettoExporter::new(Vec::new());
    exporter.add_path(path).expect("converts to Perfetto");
    let (bytes, stats) = exporter.finish().unwrap();
    assert!(!bytes.is_empty() && stats.slices > 0 && stats.flow_events > 0);
}

/// neuron-top's replay (`analysis::live`) and the desktop viewer's loader (`gui`) read
/// the trace: reports with the NeuronCore busy, a timeline with the device's queue and
/// the launch→kernel flows.
fn check_replay_and_viewer(trace_dir: &Path, trace: &Path) {
    let series = analysis::live::replay_dir(trace_dir, &analysis::live::ReplayOptions::default())
        .expect("neuron-top replays it");
    assert!(!series.documents.is_empty());
    let busiest = serde_json::to_value(&series.documents)
        .unwrap()
        .to_string()
        .split("\"neuroncore_utilization\":")
        .skip(1)
        .filter_map(|rest| rest.split([',', '}']).next()?.parse::<f64>().ok())
        .fold(0.0f64, f64::max);
    assert!(busiest > 0.0, "a report shows the NeuronCore busy");
    let files = vec![trace.to_path_buf()];
    let timeline = gui::load::load_timeline(&files, &gui::load::Progress::for_files(&files))
        .expect("the viewer loads it");
    assert!(
        timeline.tracks.iter().any(|t| t.label.contains("stream 0")),
        "the device queue is a track"
    );
    assert!(!timeline.flows.is_empty(), "flows matched");
}

fn check_hta(trace_dir: &Path) {
    let Some(python) = hta_python() else {
        skip::skipped(
            "neuronprof-capi: torch_training_profiles_neuron (its HTA part)",
            "no HTA venv: run `bash scripts/hta-venv`",
        );
        return;
    };
    let script = r#"
import sys
from hta.trace_analysis import TraceAnalysis
analysis = TraceAnalysis(trace_dir=sys.argv[1])
breakdown = analysis.get_temporal_breakdown(visualize=False)
print("compute", [float(x) for x in breakdown["compute_time(us)"]])
kernels = analysis.get_gpu_kernel_breakdown(visualize=False)[0]
print("kernel types", sorted(kernels["kernel_type"]))
"#;
    let stdout = torch::run_hta(&python, script, trace_dir);
    assert!(
        stdout.contains("'COMPUTATION'") && stdout.contains("'MEMORY'"),
        "{stdout}"
    );
}

/// `scaled_dot_product_attention` on neuron takes the kernel the CPU takes: flash
/// attention for the CPU by default (one kernel each way, costed as attention) and with
/// a mask whose last dimension is strided (which GPU kernels refuse), math when flash
/// is switched off; output and gradients equal the CPU's bit for bit.
fn check_attention(result: &Value, trace: &Value) {
    const FLASH: &str = "ScaledDotProductFlashAttentionForCpuBackward0";
    const SDP_FLASH: i64 = 1; // sdp::SDPBackend::flash_attention
    const SDP_MATH: i64 = 0;
    for (path, choice) in [
        ("attention_flash", SDP_FLASH),
        ("attention_math", SDP_MATH),
        ("attention_flash_strided_mask", SDP_FLASH),
    ] {
        let r = &result[path];
        assert_eq!(r["cpu"]["choice"], choice, "{path}: {r}");
        assert_eq!(r["neuron"]["choice"], r["cpu"]["choice"], "{path}: {r}");
        assert_eq!(r["neuron"]["grad_fn"], r["cpu"]["grad_fn"], "{path}: {r}");
        assert_eq!(r["max_diff"].as_f64(), Some(0.0), "{path}: {r}");
    }
    assert_eq!(result["attention_flash"]["neuron"]["grad_fn"], FLASH);
    assert_eq!(
        result["attention_flash_strided_mask"]["neuron"]["grad_fn"],
        FLASH
    );
    assert_ne!(result["attention_math"]["neuron"]["grad_fn"], FLASH);
    let kernels = cat(trace, "kernel");
    let names: Vec<&str> = kernels
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    for (name, lowering) in [
        (
            "_scaled_dot_product_flash_attention_for_cpu_f32",
            "attention: ",
        ),
        (
            "_scaled_dot_product_flash_attention_for_cpu_backward_f32",
            "attention backward: ",
        ),
    ] {
        let kernel = kernels
            .iter()
            .find(|k| k["name"] == name)
            .unwrap_or_else(|| panic!("no {name} kernel among {names:?}"));
        let args = &kernel["args"];
        assert!(
            args["lowering"]
                .as_str()
                .is_some_and(|l| l.starts_with(lowering)),
            "{name} costed as attention: {args}"
        );
        assert!(args.get("costed_by").is_none(), "{name}: {args}");
    }
    for math in ["bmm_f32", "_softmax_f32", "_safe_softmax_f32"] {
        assert!(
            !names.contains(&math),
            "no math-path kernel ({math}) in {names:?}"
        );
    }
}

#[test]
fn torch_training_profiles_neuron() {
    let Some(python) = torch::torch_python() else {
        skip::skipped(
            "neuronprof-capi: torch_training_profiles_neuron",
            torch::NO_TORCH,
        );
        return;
    };
    let run = run_pytorch(&python);
    let result = &run.result;
    assert_eq!(result["backend"], "neuron");
    assert_eq!(
        result["accelerator"], "neuron",
        "torch.accelerator knows the device"
    );
    assert!(result["accelerator_count"].as_i64().unwrap() >= 1);
    assert_eq!(result["accelerator_count"], result["neuron_count"]);
    assert!(result["max_memory_allocated"].as_i64().unwrap() > 0);
    // Bit-identical: every op of the layer runs its CPU kernel, and
    // `scaled_dot_product_attention` takes the CPU's choice of kernel (flash attention
    // for the CPU). On PyTorch's math path, which a non-CPU device gets without that
    // choice, the layer was 4.8e-7 off.
    let diff = result["transformer_max_diff"].as_f64().unwrap();
    assert_eq!(diff, 0.0, "a transformer layer on neuron:1 vs cpu");
    assert!(
        result["transformer_memory_on_1"].as_i64().unwrap() > 0,
        "it ran on neuron:1"
    );
    let table = result["table"].as_str().unwrap();
    assert!(
        table.contains("Self NEURON"),
        "key_averages has device columns:\n{table}"
    );
    assert!(
        cat(&run.cpu_only, "kernel").is_empty() && cat(&run.cpu_only, "gpu_memcpy").is_empty(),
        "a CPU-only profile holds no device activity"
    );
    check_losses(result);
    check_attention(result, &run.attention);
    check_device_activity(&run.trace);
    check_memory(&run.trace);
    check_reader_analysis_perfetto(&run.trace_path);
    check_replay_and_viewer(run.trace_path.parent().unwrap(), &run.trace_path);
    check_hta(run.trace_path.parent().unwrap());
    let _ = std::fs::remove_dir_all(run.trace_path.parent().unwrap().parent().unwrap());
}
