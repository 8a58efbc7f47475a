//! A Hugging Face Transformers GPT-2 (`GPT2LMHeadModel` from a small `GPT2Config`: 2
//! layers, width 128, 4 heads, sequences of 64, nothing downloaded) trains on
//! `torch.accelerator.current_accelerator()` — the emulated `neuron` device — under
//! `torch.profiler` (CPU + PrivateUse1, a schedule), and the same model trains on the
//! CPU under a CPU-only profile (`tests/torch_gpt2_driver.py`). Then:
//!
//! - the losses are finite, fall, and equal the CPU run's bit for bit;
//! - the trace has the model's kernels (matmuls, flash attention, layer norm, embedding, …) on
//!   the neuron device's queue, one launch and one flow per device row;
//! - the host clock holds no numerics: the matmuls' host operators take a fraction of
//!   the time the same operators take on the CPU, where they compute the values — so a
//!   "device waited for the host" finding is about launches, not about the emulator;
//! - `neuronprof analyze` (text and `--json`) reports the three profiled steps, and its
//!   host-bound idle time per step (and the host-bound finding, if any) equals what is
//!   recomputed here from the trace's own rows: an idle stretch of the device is the
//!   host's when the work that ends it was launched after the stretch began;
//! - `neuronprof export` writes a Perfetto trace that validates with every flow paired,
//!   and a Parquet dataset whose `kernels` table (`neuronprof query`) holds every device
//!   row of the trace;
//! - the viewer's loader (`gui::load`) gives the device queue as a track with every
//!   device row and the flows, and its analyses the same steps;
//! - HTA loads the trace and reports the trace's kernels.
//!
//! Needs a Python with torch 2.15 and transformers (`bash scripts/torch-venv`), the
//! `neuronprof` binary next to this test (`cargo build -p neuronprof`; `cargo test
//! --workspace` builds it) and the HTA venv (`bash scripts/hta-venv`); without one the
//! skip is recorded (`tests/support/skip.rs`), and under CI it fails.

#[path = "../../../tests/support/skip.rs"]
mod skip;
#[path = "support/torch.rs"]
mod torch;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use torch::{arg_i64, cat, end, hta_python, read_trace, traces_in, ts};

const TEST: &str = "neuronprof-capi: torch_gpt2";
/// The profiled steps (the driver's schedule: wait 2, warm up 2, active 3).
const ACTIVE_STEPS: [i64; 3] = [4, 5, 6];
/// Largest share of the CPU's matmul host time the neuron run's matmul host operators
/// may take: on the CPU they hold the arithmetic, on neuron only dispatch and launch.
const MATMUL_HOST_SHARE: f64 = 0.25;
/// The analysis finds a step host-bound from this share of host-bound idle time
/// (`analysis::insights::Thresholds`' default).
const HOST_BOUND_STEP_FRACTION: f64 = 0.3;

struct Run {
    result: Value,
    trace_path: PathBuf,
    trace: Value,
    cpu_trace: Value,
}

fn run_pytorch(python: &Path) -> Run {
    let work = torch::work_dir("torch-gpt2");
    let (neuron_dir, cpu_dir) = (work.join("neuron"), work.join("cpu"));
    let (result, _) = torch::run_driver(
        python,
        "torch_gpt2_driver.py",
        &[&neuron_dir, &cpu_dir],
        &[("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1")],
    );
    let traces = traces_in(&neuron_dir);
    assert_eq!(traces.len(), 1, "one profiled window: {traces:?}");
    let cpu_traces = traces_in(&cpu_dir);
    assert_eq!(
        cpu_traces.len(),
        1,
        "one profiled CPU window: {cpu_traces:?}"
    );
    Run {
        result,
        trace: read_trace(&traces[0]),
        trace_path: traces[0].clone(),
        cpu_trace: read_trace(&cpu_traces[0]),
    }
}

/// The `neuronprof` binary cargo built next to this test (`target/<profile>/`).
fn neuronprof_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.parent()?.join("neuronprof");
    path.exists().then_some(path)
}

/// Runs `neuronprof ARGS…`; its standard output.
fn neuronprof(binary: &Path, args: &[&std::ffi::OsStr]) -> String {
    let output = Command::new(binary)
        .args(args)
        .output()
        .expect("run neuronprof");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "neuronprof {args:?} failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

fn check_losses(result: &Value) {
    let (neuron, cpu) = (
        torch::f64s(result, "neuron_losses"),
        torch::f64s(result, "cpu_losses"),
    );
    assert_eq!(neuron.len(), 8, "{neuron:?}");
    assert_eq!(cpu.len(), neuron.len(), "{cpu:?}");
    assert!(neuron.iter().all(|l| l.is_finite()), "{neuron:?}");
    let last = (neuron[6] + neuron[7]) / 2.0;
    assert!(last < neuron[0] - 0.1, "the loss falls: {neuron:?}");
    // Bit for bit: every op runs the CPU's kernel, the fused ones too (layer norm,
    // scaled dot-product attention's flash kernel for the CPU).
    for (step, (n, c)) in neuron.iter().zip(&cpu).enumerate() {
        assert_eq!(n, c, "step {step}: neuron vs cpu");
    }
}

/// Kernels, copies and memsets: the rows the device runs.
fn device_rows(trace: &Value) -> Vec<&Value> {
    let mut rows: Vec<&Value> = ["kernel", "gpu_memcpy", "gpu_memset"]
        .iter()
        .flat_map(|c| cat(trace, c))
        .collect();
    rows.sort_by(|a, b| ts(a).total_cmp(&ts(b)));
    rows
}

fn check_device_activity(trace: &Value) {
    let properties = &trace["deviceProperties"][0];
    assert!(
        properties["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("NeuronCore 0")),
        "{properties}"
    );
    let rows = device_rows(trace);
    for row in &rows {
        assert_eq!(row["pid"], 0, "a device row on the device's process: {row}");
        assert_eq!(arg_i64(row, "device"), 0, "{row}");
    }
    let names: BTreeSet<&str> = cat(trace, "kernel")
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    // GPT-2's Conv1D layers (addmm), its LM head tied to the token embedding (mm),
    // attention (causal sdpa takes the CPU's flash-attention kernel on neuron, forward
    // and backward), layer norm (its own CPU kernel, forward and backward), the
    // embeddings (index_select forward), the tanh GELU, the cross-entropy loss, AdamW's
    // foreach update.
    for expected in [
        "addmm_f32",
        "mm_f32",
        "_scaled_dot_product_flash_attention_for_cpu_f32",
        "_scaled_dot_product_flash_attention_for_cpu_backward_f32",
        "native_layer_norm_f32",
        "native_layer_norm_backward_f32",
        "index_select_f32",
        "embedding_dense_backward_f32",
        "tanh_f32",
        "_log_softmax_f32",
        "nll_loss_forward_f32",
        "addcdiv_f32",
    ] {
        assert!(
            names.contains(expected),
            "no {expected} kernel among {names:?}"
        );
    }
    // Not sdpa's math path (which a non-CPU device takes without the CPU's choice).
    for math in ["bmm_f32", "_softmax_f32", "_softmax_backward_data_f32"] {
        assert!(!names.contains(math), "{math} kernel among {names:?}");
    }
    let launches = cat(trace, "privateuse1_runtime")
        .into_iter()
        .filter(|r| r["name"] == "nrt_execute")
        .count();
    assert_eq!(launches, rows.len(), "one launch per device row");
    let flow_starts = cat(trace, "ac2g")
        .into_iter()
        .filter(|f| f["ph"] == "s")
        .count();
    assert_eq!(flow_starts, rows.len(), "one ac2g flow per device row");
    let steps: Vec<i64> = step_windows(trace).iter().map(|w| w.0).collect();
    assert_eq!(steps, ACTIVE_STEPS, "wait 2, warm up 2, active 3");
}

/// `ProfilerStep#N` windows: (N, start µs, end µs).
fn step_windows(trace: &Value) -> Vec<(i64, f64, f64)> {
    let mut windows: Vec<(i64, f64, f64)> = cat(trace, "user_annotation")
        .iter()
        .filter_map(|e| {
            let n = e["name"].as_str()?.strip_prefix("ProfilerStep#")?;
            Some((n.parse().ok()?, ts(e), end(e)))
        })
        .collect();
    windows.sort_by_key(|w| w.0);
    windows
}

/// Total duration of the outermost host operators named `name` (a nested call of the
/// same operator is not counted twice).
fn host_op_us(trace: &Value, name: &str) -> f64 {
    let mut by_thread: HashMap<i64, Vec<(f64, f64)>> = HashMap::new();
    for op in cat(trace, "cpu_op")
        .into_iter()
        .filter(|o| o["name"] == name)
    {
        by_thread
            .entry(op["tid"].as_i64().unwrap_or(0))
            .or_default()
            .push((ts(op), end(op)));
    }
    let mut total = 0.0;
    for spans in by_thread.values_mut() {
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut outer_end = f64::NEG_INFINITY;
        for &(start, stop) in spans.iter() {
            if start >= outer_end {
                total += stop - start;
                outer_end = stop;
            }
        }
    }
    total
}

/// The host clock holds no numerics: the same three profiled steps' matmul operators
/// (forward and backward) cost the neuron run's host a fraction of what they cost the
/// CPU run, whose operators compute the values.
fn check_host_clock(trace: &Value, cpu_trace: &Value) {
    let ops = ["aten::addmm", "aten::mm"];
    let neuron: f64 = ops.iter().map(|o| host_op_us(trace, o)).sum();
    let cpu: f64 = ops.iter().map(|o| host_op_us(cpu_trace, o)).sum();
    println!("matmul host operators: neuron {neuron:.0} us, cpu {cpu:.0} us");
    assert!(
        neuron > 0.0 && cpu > 0.0,
        "neuron {neuron} us, cpu {cpu} us"
    );
    assert!(
        neuron < MATMUL_HOST_SHARE * cpu,
        "the neuron run's matmul operators took {neuron:.0} us of host time, the CPU's \
         {cpu:.0} us: numerics on the host clock?"
    );
}

/// Each aten operator the model calls is one profiled operator, as on the CPU: per name,
/// the calls that sit directly inside a call of the same name (a composite such as
/// `aten::add.Scalar` calling `aten::add.Tensor`) are no more than the CPU run's, and
/// there are as many matmuls. The optimizer's step is left out of the comparison: AdamW
/// takes its foreach path on neuron (a foreach device, as CUDA) and its per-tensor path
/// on the CPU, so the two runs call different operators there (on neuron each
/// `_foreach_div_` runs PyTorch's per-tensor composite, whose `div_.Scalar` holds a
/// `div_`, on any device). (While structured ops ran as their `.out` composite, each
/// `aten::addmm` on neuron held a second `aten::addmm`, its `.out`, and key_averages()
/// counted two calls per call.)
fn check_operator_counts(trace: &Value, cpu_trace: &Value) {
    let (neuron, cpu) = (self_nested(trace), self_nested(cpu_trace));
    let twice: Vec<String> = neuron
        .iter()
        .filter(|(name, n)| **n > cpu.get(*name).copied().unwrap_or(0))
        .map(|(name, n)| {
            format!(
                "{name}: {n} inside itself (CPU {})",
                cpu.get(name).copied().unwrap_or(0)
            )
        })
        .collect();
    assert!(
        twice.is_empty(),
        "operators profiled twice per call on neuron: {twice:?}"
    );
    for name in ["aten::addmm", "aten::mm"] {
        let count = |t: &Value| {
            cat(t, "cpu_op")
                .iter()
                .filter(|o| o["name"] == name)
                .count()
        };
        println!(
            "{name}: neuron {} calls, cpu {}",
            count(trace),
            count(cpu_trace)
        );
        assert_eq!(
            count(trace),
            count(cpu_trace),
            "{name} calls, neuron vs CPU"
        );
    }
}

/// Per operator name, the calls whose innermost enclosing operator on their thread has
/// the same name, outside the optimizer's steps (`Optimizer.step#` annotations).
fn self_nested(trace: &Value) -> BTreeMap<String, usize> {
    let optimizer: Vec<(f64, f64)> = cat(trace, "user_annotation")
        .into_iter()
        .filter(|a| {
            a["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("Optimizer.step#"))
        })
        .map(|a| (ts(a), end(a)))
        .collect();
    assert!(
        !optimizer.is_empty(),
        "no Optimizer.step# annotation in the trace"
    );
    let mut by_thread: HashMap<i64, Vec<(f64, f64, &str)>> = HashMap::new();
    for op in cat(trace, "cpu_op") {
        if optimizer.iter().any(|&(a, b)| ts(op) >= a && end(op) <= b) {
            continue;
        }
        by_thread
            .entry(op["tid"].as_i64().unwrap_or(0))
            .or_default()
            .push((ts(op), end(op), op["name"].as_str().unwrap_or("")));
    }
    let mut nested = BTreeMap::new();
    for spans in by_thread.values_mut() {
        spans.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let mut open: Vec<(f64, f64, &str)> = Vec::new();
        for &(start, stop, name) in spans.iter() {
            while open.last().is_some_and(|o| !(start >= o.0 && stop <= o.1)) {
                open.pop();
            }
            if open.last().is_some_and(|o| o.2 == name) {
                *nested.entry(name.to_string()).or_insert(0) += 1;
            }
            open.push((start, stop, name));
        }
    }
    nested
}

/// Per profiled step (N, host-bound idle µs, step µs), recomputed from the trace: the
/// device rows clipped to the step, swept by start; an idle stretch is host-bound when
/// the work that ends it was launched (its `nrt_execute` began) after the stretch
/// began, and so is the idle time after the step's last row.
fn host_bound_idle(trace: &Value) -> Vec<(i64, f64, f64)> {
    let launch_start: HashMap<i64, f64> = cat(trace, "privateuse1_runtime")
        .into_iter()
        .filter(|r| r["name"] == "nrt_execute")
        .map(|r| (arg_i64(r, "correlation"), ts(r)))
        .collect();
    let rows = device_rows(trace);
    step_windows(trace)
        .into_iter()
        .map(|(step, ws, we)| {
            let mut clipped: Vec<(f64, f64, Option<f64>)> = rows
                .iter()
                .map(|r| {
                    (
                        ts(r).max(ws),
                        end(r).min(we),
                        launch_start.get(&arg_i64(r, "correlation")).copied(),
                    )
                })
                .filter(|(s, e, _)| s < e)
                .collect();
            clipped.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (mut busy_until, mut idle) = (ws, 0.0);
            let mut i = 0;
            while i < clipped.len() {
                let start = clipped[i].0;
                let (mut latest_launch, mut group_end) = (None::<f64>, busy_until);
                while i < clipped.len() && clipped[i].0 == start {
                    if let Some(l) = clipped[i].2 {
                        latest_launch = Some(latest_launch.map_or(l, |m| m.max(l)));
                    }
                    group_end = group_end.max(clipped[i].1);
                    i += 1;
                }
                if start > busy_until && latest_launch.is_some_and(|l| l > busy_until) {
                    idle += start - busy_until;
                }
                busy_until = busy_until.max(group_end);
            }
            idle += (we - busy_until).max(0.0);
            (step, idle, we - ws)
        })
        .collect()
}

/// `neuronprof analyze` and `analyze --json`: the profiled steps, each step's
/// host-bound idle time as recomputed from the trace, and a host-bound finding exactly
/// when a step's share reaches the threshold, with the largest share.
fn check_analyze(binary: &Path, trace_path: &Path, trace: &Value) {
    let text = neuronprof(binary, &["analyze".as_ref(), trace_path.as_os_str()]);
    assert!(text.contains("Steps"), "no Steps section:\n{text}");
    let report: Value = serde_json::from_str(&neuronprof(
        binary,
        &[
            "analyze".as_ref(),
            "--json".as_ref(),
            trace_path.as_os_str(),
        ],
    ))
    .expect("analyze --json prints JSON");
    let steps = report["steps"].as_array().expect("steps in the report");
    let numbers: Vec<i64> = steps.iter().map(|s| s["step"].as_i64().unwrap()).collect();
    assert_eq!(numbers, ACTIVE_STEPS, "{steps:?}");
    let expected = host_bound_idle(trace);
    let mut largest_share = 0.0f64;
    for (s, &(step, idle_us, dur_us)) in steps.iter().zip(&expected) {
        assert_eq!(s["step"].as_i64(), Some(step));
        let reported = s["host_bound_idle_us"].as_f64().unwrap();
        let reported_dur = s["dur_us"].as_f64().unwrap();
        println!(
            "step {step}: {dur_us:.0} us, host-bound idle {idle_us:.0} us (analyze: \
             {reported:.0} of {reported_dur:.0} us, {})",
            s["bound"]
        );
        assert!(
            (reported_dur - dur_us).abs() < 1.0,
            "step {step}: {reported_dur} vs {dur_us} us"
        );
        assert!(
            (reported - idle_us).abs() <= 0.01 * dur_us + 1.0,
            "step {step}: analyze says the device waited {reported:.1} us for the host, \
             the trace {idle_us:.1} us"
        );
        let parts: f64 = [
            "computation_us",
            "communication_us",
            "memory_us",
            "other_device_us",
            "host_bound_idle_us",
            "other_idle_us",
        ]
        .iter()
        .map(|k| s[k].as_f64().unwrap())
        .sum();
        assert!((parts - reported_dur).abs() < 1.0, "{s}");
        largest_share = largest_share.max(idle_us / dur_us);
    }
    let finding = report["insights"]
        .as_array()
        .expect("insights in the report")
        .iter()
        .find(|f| f["kind"] == "host_bound_step");
    match finding {
        Some(f) => {
            assert!(
                largest_share >= HOST_BOUND_STEP_FRACTION - 0.01,
                "a host-bound finding the trace does not support (largest share \
                 {largest_share:.3}): {f}"
            );
            let value_max = f["value_max"].as_f64().unwrap();
            assert!(
                (value_max - largest_share).abs() < 0.02,
                "finding's largest share {value_max} vs the trace's {largest_share}: {f}"
            );
            assert!(
                text.contains("for the host to launch"),
                "the text report lacks the finding:\n{text}"
            );
        }
        None => assert!(
            largest_share < HOST_BOUND_STEP_FRACTION + 0.01,
            "no host-bound finding, but the device waited {:.0}% of a step for the host",
            largest_share * 100.0
        ),
    }
}

/// The flows of the trace: launch→kernel (`ac2g`, one per device row) and PyTorch's
/// forward→backward ones.
fn flow_count(trace: &Value) -> usize {
    torch::events(trace)
        .iter()
        .filter(|e| e["ph"] == "s")
        .count()
}

/// `neuronprof export`: a Perfetto trace with every flow paired, and a Parquet dataset
/// whose `kernels` table holds every device row of the trace.
fn check_export(binary: &Path, trace_path: &Path, trace: &Value, work: &Path) {
    let pftrace = work.join("gpt2.pftrace");
    let printed = neuronprof(
        binary,
        &[
            "export".as_ref(),
            "--format".as_ref(),
            "perfetto".as_ref(),
            trace_path.as_os_str(),
            "-o".as_ref(),
            pftrace.as_os_str(),
        ],
    );
    let bytes = std::fs::read(&pftrace).expect("the Perfetto trace is written");
    let summary = exporters::perfetto::validate::validate(&bytes)
        .unwrap_or_else(|e| panic!("{} does not validate: {e:?}", pftrace.display()));
    let rows = device_rows(trace);
    assert!(
        summary.slices as usize > rows.len(),
        "{summary:?}\n{printed}"
    );
    let flows = flow_count(trace);
    assert!(
        flows > rows.len(),
        "{flows} flows, {} device rows",
        rows.len()
    );
    assert_eq!(summary.flows_paired as usize, flows, "{summary:?}");
    assert_eq!(summary.flows_unterminated + summary.flows_unstarted, 0);

    let dataset = work.join("gpt2-dataset");
    neuronprof(
        binary,
        &[
            "export".as_ref(),
            "--format".as_ref(),
            "parquet".as_ref(),
            trace_path.as_os_str(),
            "-o".as_ref(),
            dataset.as_os_str(),
        ],
    );
    let counted: Value = serde_json::from_str(&neuronprof(
        binary,
        &[
            "query".as_ref(),
            "SELECT count(*) AS n, count(DISTINCT name) AS names FROM kernels".as_ref(),
            dataset.as_os_str(),
            "--format".as_ref(),
            "json".as_ref(),
        ],
    ))
    .expect("query --format json prints JSON");
    let names: BTreeSet<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(
        counted[0]["n"].as_u64(),
        Some(rows.len() as u64),
        "{counted}"
    );
    assert_eq!(
        counted[0]["names"].as_u64(),
        Some(names.len() as u64),
        "{counted}"
    );
}

/// The viewer's loader: the device queue as a track holding every device row, the
/// flows, and the analyses' steps.
fn check_viewer(trace_path: &Path, trace: &Value) {
    let files = vec![trace_path.to_path_buf()];
    let timeline = gui::load::load_timeline(&files, &gui::load::Progress::for_files(&files))
        .expect("the viewer loads it");
    let queue = timeline
        .tracks
        .iter()
        .find(|t| t.label.contains("stream 0"))
        .unwrap_or_else(|| {
            let labels: Vec<&str> = timeline.tracks.iter().map(|t| t.label.as_str()).collect();
            panic!("no track of the device queue among {labels:?}")
        });
    let slices: usize = queue.rows().iter().map(|r| r.len()).sum();
    let on_queue = device_rows(trace)
        .into_iter()
        .filter(|r| r["tid"] == 0)
        .count();
    assert_eq!(slices, on_queue, "the queue track holds every device row");
    assert_eq!(
        timeline.flows.len(),
        flow_count(trace),
        "every flow matched"
    );
    let analyses = gui::load::run_analyses(&files).expect("the viewer's analyses run");
    let steps: Vec<i64> = analyses.report.steps.iter().map(|s| s.step).collect();
    assert_eq!(steps, ACTIVE_STEPS);
}

/// HTA reads the trace: its kernel breakdown names the trace's kernels, and its
/// temporal breakdown counts computation.
fn check_hta(trace_dir: &Path, trace: &Value) {
    let Some(python) = hta_python() else {
        skip::skipped(
            &format!("{TEST} (its HTA part)"),
            "no HTA venv: run `bash scripts/hta-venv`",
        );
        return;
    };
    let script = r#"
import json, sys
from hta.trace_analysis import TraceAnalysis
analysis = TraceAnalysis(trace_dir=sys.argv[1])
temporal = analysis.get_temporal_breakdown(visualize=False)
kernels = analysis.get_gpu_kernel_breakdown(visualize=False, num_kernels=1000)[1]
print("HTA " + json.dumps({
    "compute_us": [float(x) for x in temporal["compute_time(us)"]],
    "names": sorted(set(kernels["name"])),
}))
"#;
    let stdout = torch::run_hta(&python, script, trace_dir);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("HTA "))
        .unwrap_or_else(|| panic!("no HTA line:\n{stdout}"));
    let hta: Value = serde_json::from_str(line).unwrap();
    assert!(
        hta["compute_us"][0].as_f64().is_some_and(|c| c > 0.0),
        "{hta}"
    );
    let reported: BTreeSet<&str> = hta["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let kernels: BTreeSet<&str> = cat(trace, "kernel")
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    let missing: Vec<&&str> = kernels.difference(&reported).collect();
    assert!(
        missing.is_empty(),
        "HTA lacks kernels {missing:?}: {reported:?}"
    );
}

/// The memory snapshot taken during the run (after the step that closes the profiled
/// window, model and optimizer state alive): its segments' totals are memory_stats' at
/// that moment (reserved, allocated, active), blocks are allocated, its trace has the
/// run's allocations, every host free and every block made reusable, and
/// torch.cuda._memory_viz draws it.
fn check_snapshot(s: &Value) {
    assert_eq!(s["after_step"], 6, "{s}");
    assert_eq!(
        s["segments"], s["stats"],
        "snapshot totals vs memory_stats: {s}"
    );
    assert!(s["segments"][0].as_i64().unwrap() > 0, "{s}");
    assert!(
        s["segments"][1].as_i64().unwrap() > 0,
        "nothing allocated during the run: {s}"
    );
    let actions = &s["actions"];
    assert!(actions["alloc"].as_i64().unwrap() > 100, "{s}");
    assert_eq!(actions["free_requested"], actions["free_completed"], "{s}");
    for key in ["segment_plot", "trace_plot"] {
        assert!(s[key].as_i64().unwrap() > 100, "{key}: {s}");
    }
}

#[test]
fn torch_gpt2() {
    let Some(python) = torch::torch_python() else {
        skip::skipped(TEST, torch::NO_TORCH);
        return;
    };
    let Some(binary) = neuronprof_binary() else {
        skip::skipped(
            TEST,
            "the neuronprof binary is not built next to this test: cargo build -p \
             neuronprof (cargo test --workspace does)",
        );
        return;
    };
    let run = run_pytorch(&python);
    let result = &run.result;
    assert_eq!(result["device"], "neuron", "{result}");
    println!(
        "torch {}, transformers {}, attention {}",
        result["torch"], result["transformers"], result["attn_implementation"]
    );
    assert!(result["max_memory_allocated"].as_i64().unwrap() > 0);
    assert_eq!(result["tied_on_cpu"], true, "{result}");
    assert_eq!(
        result["tied_on_device"], true,
        "Module.to(neuron) keeps the LM head tied to the embedding"
    );
    check_losses(result);
    check_snapshot(&result["snapshot"]);
    check_device_activity(&run.trace);
    check_host_clock(&run.trace, &run.cpu_trace);
    check_operator_counts(&run.trace, &run.cpu_trace);
    check_analyze(&binary, &run.trace_path, &run.trace);
    let trace_dir = run.trace_path.parent().unwrap();
    let work = trace_dir.parent().unwrap();
    check_export(&binary, &run.trace_path, &run.trace, work);
    check_viewer(&run.trace_path, &run.trace);
    check_hta(trace_dir, &run.trace);
    let _ = std::fs::remove_dir_all(work);
}
