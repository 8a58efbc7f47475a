//! `torch.compile(backend="neuron")` on real PyTorch (issue 18): two Python processes
//! (`tests/torch_compile_driver.py`) share one compile cache.
//!
//! - A 2-layer transformer block trains 20 steps eagerly and compiled from the same
//!   weights and data: the losses agree within 1e-4 (the compiled graphs run the same
//!   ATen CPU kernels) and fall.
//! - Compiled, each profiled step has one `graph_*_forward` and one `graph_*_backward`
//!   kernel (one `nrt_execute` each), whose args say what the program fused (the
//!   gelu → scale → shift chain of each block's MLP), what that saved in HBM traffic, the
//!   aten ops it came from and each pass's modeled time; no per-op kernel of the model
//!   remains. The modeled device time of the profiled steps is less than eager's, with
//!   fewer kernels. `analyze` splits the graph kernels' time by pass (the fused chain one
//!   of them; the parts add up to the graph time), and the diff of the eager and the
//!   compiled traces has the graph kernels added, the matmul kernels deleted, fewer
//!   launches and less device time.
//! - An op the lowerings do not know inside a graph (`renorm`) is an eager kernel of its
//!   own (`renorm_f32`, costed by the default rule, its lowering naming the graph), with
//!   eager's values; the fallback is counted.
//! - `scaled_dot_product_attention` in a graph (forward and backward) takes the CPU's
//!   flash kernels, which the programs lower (no eager fallback), with eager's values.
//! - A data-dependent branch is a graph break Dynamo counts with its reason; called with
//!   another size it is compiled again. The trace of those calls carries the counts
//!   (its top-level `neuron_compile` member), and `analyze` reports the graph break and
//!   the recompile with their reasons, the compiled regions Dynamo's ranges show
//!   (`Torch-Compiled Region: 0/1` for the recompiled frame) and the graph kernels; the
//!   eager trace, profiled before anything was compiled, has no such member.
//! - Default `torch.compile` (Inductor) on a neuron model fails with a message naming
//!   `backend="neuron"`.
//! - A second process compiling the same block hits the compile cache (no misses) and
//!   its trace has no `neuron_compile` range; the first process's trace of a fresh
//!   compile has one. That process records with `NEURONPROF_DETAIL=instructions`: each
//!   graph kernel has its engine instructions (TensorE among several engines) and DMA
//!   transfers under it in the trace, and `analyze` reads the engines' busy time.
//!
//! Needs a Python with torch 2.15 (see `support/torch.rs`); without one the skip is
//! recorded (`tests/support/skip.rs`), and under CI it fails.

#[path = "../../../tests/support/skip.rs"]
mod skip;
#[path = "support/torch.rs"]
mod torch;

use std::path::Path;

use serde_json::Value;
use torch::{arg_i64, cat, events, read_trace, traces_in};

fn only_trace(dir: &Path) -> Value {
    let traces = traces_in(dir);
    assert_eq!(traces.len(), 1, "{traces:?}");
    read_trace(&traces[0])
}

fn count(stats: &Value, key: &str) -> i64 {
    stats[key]
        .as_i64()
        .unwrap_or_else(|| panic!("no count {key:?} in {stats}"))
}

fn kernel_time_us(trace: &Value) -> f64 {
    cat(trace, "kernel")
        .iter()
        .map(|k| k["dur"].as_f64().unwrap())
        .sum()
}

fn check_losses(result: &Value) {
    let eager = torch::f64s(result, "eager_losses");
    let compiled = torch::f64s(result, "compiled_losses");
    assert_eq!(eager.len(), 20);
    assert_eq!(compiled.len(), 20);
    for (step, (e, c)) in eager.iter().zip(&compiled).enumerate() {
        assert!((e - c).abs() <= 1e-4, "step {step}: eager {e} compiled {c}");
    }
    assert!(
        compiled[19] < compiled[0],
        "training lowers the loss: {compiled:?}"
    );
}

fn check_compiled(eager: &Value, compiled: &Value) {
    let kernels = cat(compiled, "kernel");
    let graphs: Vec<&&Value> = kernels
        .iter()
        .filter(|k| k["name"].as_str().unwrap().starts_with("graph_"))
        .collect();
    let forward = graphs
        .iter()
        .filter(|k| k["name"].as_str().unwrap().ends_with("_forward"))
        .count();
    let backward = graphs
        .iter()
        .filter(|k| k["name"].as_str().unwrap().ends_with("_backward"))
        .count();
    assert_eq!(
        (forward, backward),
        (2, 2),
        "one kernel per graph call, 2 steps"
    );
    let launches: Vec<&Value> = cat(compiled, "privateuse1_runtime")
        .into_iter()
        .filter(|r| r["name"] == "nrt_execute")
        .collect();
    for graph in &graphs {
        let corr = arg_i64(graph, "correlation");
        let launched = launches
            .iter()
            .filter(|l| l["args"]["correlation"].as_i64() == Some(corr))
            .count();
        assert_eq!(launched, 1, "one runtime call per graph kernel: {graph}");
        let args = &graph["args"];
        let lowering = args["lowering"].as_str().unwrap();
        assert!(lowering.starts_with("compiled graph: "), "{graph}");
        assert!(arg_i64(graph, "graph_nodes") >= 20, "{graph}");
        let ops = args["aten_ops"].as_str().unwrap();
        assert!(
            ops.contains("aten::addmm") || ops.contains("aten::mm"),
            "{ops}"
        );
        assert!(args["passes"].as_str().unwrap().contains(" ns"), "{graph}");
    }
    // The forward graph fuses each block's gelu → * 0.5 → + 0.1 into the PSUM
    // evacuation of the matmul before it.
    let fwd = graphs
        .iter()
        .find(|k| k["name"].as_str().unwrap().ends_with("_forward"))
        .unwrap();
    assert!(arg_i64(fwd, "fused_nodes") >= 4, "{fwd}");
    assert!(arg_i64(fwd, "hbm_bytes_saved") > 0, "{fwd}");
    assert!(
        fwd["args"]["passes"]
            .as_str()
            .unwrap()
            .contains("addmm+gelu+mul+add"),
        "the gelu chain is fused into its matmul's evacuation: {fwd}"
    );
    // No per-op kernel of the model is left: the model's matmuls are in the graphs
    // (what is left is the optimizer's update and the loss's seed gradient, which run
    // outside the compiled region).
    for k in &kernels {
        let name = k["name"].as_str().unwrap();
        assert!(
            !(name.starts_with("addmm_") || name.starts_with("bmm_") || name.starts_with("mm_")),
            "a matmul outside the graphs: {k}"
        );
    }
    let eager_kernels = cat(eager, "kernel").len();
    assert!(
        kernels.len() * 2 < eager_kernels,
        "compiled {} kernels vs eager {eager_kernels}",
        kernels.len()
    );
    let (eager_us, compiled_us) = (kernel_time_us(eager), kernel_time_us(compiled));
    assert!(
        compiled_us < eager_us,
        "modeled device time: compiled {compiled_us} µs vs eager {eager_us} µs"
    );
}

fn check_fallback(result: &Value, unknown: &Value) {
    assert!(
        result["unknown_max_error"].as_f64().unwrap() <= 1e-6,
        "{result}"
    );
    assert_eq!(result["stats"]["eager_fallback_ops"]["aten::renorm"], 1);
    let renorm: Vec<&Value> = cat(unknown, "kernel")
        .into_iter()
        .filter(|k| k["name"] == "renorm_f32")
        .collect();
    assert_eq!(renorm.len(), 1, "the unknown op is an eager kernel");
    let args = &renorm[0]["args"];
    assert_eq!(args["costed_by"], "default", "{args}");
    assert!(
        args["lowering"]
            .as_str()
            .unwrap()
            .contains("eager fallback in graph_"),
        "{args}"
    );
    assert_eq!(args["eager_fallback"], "aten::renorm", "{args}");
    let graphs = cat(unknown, "kernel")
        .into_iter()
        .filter(|k| k["name"].as_str().unwrap().starts_with("graph_"))
        .count();
    assert_eq!(graphs, 2, "the graph's parts before and after the fallback");
    let compiles = events(unknown)
        .iter()
        .filter(|e| e["name"] == "neuron_compile")
        .count();
    assert_eq!(compiles, 1, "a fresh compile is a host range");
}

/// `scaled_dot_product_attention` in a graph: its flash kernels (the CPU's choice) are
/// nodes of the forward and backward programs, not eager fallbacks, and the values are
/// eager's.
fn check_attention(result: &Value, trace: &Value) {
    assert_eq!(result["attention_max_diff"].as_f64(), Some(0.0), "{result}");
    let fallbacks = result["stats"]["eager_fallback_ops"].as_object().unwrap();
    assert!(
        !fallbacks.keys().any(|op| op.contains("scaled_dot_product")),
        "attention is lowered in the program: {fallbacks:?}"
    );
    let kernels = cat(trace, "kernel");
    let graphs: Vec<&&Value> = kernels
        .iter()
        .filter(|k| k["name"].as_str().unwrap().starts_with("graph_"))
        .collect();
    assert_eq!(graphs.len(), 2, "forward and backward: {kernels:?}");
    const FLASH: &str = "aten::_scaled_dot_product_flash_attention_for_cpu";
    for graph in &graphs {
        let name = graph["name"].as_str().unwrap();
        let ops = graph["args"]["aten_ops"].as_str().unwrap();
        let backward = format!("{FLASH}_backward");
        if name.ends_with("_forward") {
            assert!(ops.contains(FLASH) && !ops.contains(&backward), "{graph}");
        } else {
            assert!(
                name.ends_with("_backward") && ops.contains(&backward),
                "{graph}"
            );
        }
    }
    for k in &kernels {
        let name = k["name"].as_str().unwrap();
        assert!(
            !name.starts_with("_scaled_dot_product"),
            "attention outside the graphs: {k}"
        );
    }
}

fn analyzed(dir: &Path) -> (analysis::Report, String) {
    let traces = traces_in(dir);
    let set = analysis::load_paths(&traces, &analysis::LoadOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let report = analysis::analyze(&set, &analysis::ReportOptions::default());
    let text = analysis::render::render_report(&report);
    (report, text)
}

fn check_breaks(result: &Value, work: &Path, eager: &Value) {
    assert!(
        eager.get("neuron_compile").is_none(),
        "nothing was compiled before the eager window"
    );
    let trace = only_trace(&work.join("breaks"));
    let meta = &trace["neuron_compile"];
    assert!(
        meta.is_object(),
        "the trace carries the compile counts: {trace:.200}"
    );
    let (report, text) = analyzed(&work.join("breaks"));
    assert_eq!(report.compile.len(), 1, "{:?}", report.compile);
    let rank = &report.compile[0];
    let counts = rank.counts.as_ref().expect("the member is read");
    assert!(
        counts
            .graph_breaks
            .iter()
            .any(|b| b.reason.contains("item()") && b.count >= 1),
        "{counts:?}"
    );
    // Each reason as Dynamo worded it (stats()), with what Kineto would mangle replaced:
    // it turns a metadata value's backslashes into '/', so the member has no escapes.
    let from_stats: Vec<String> = result["stats_after_breaks"]["graph_breaks"]
        .as_object()
        .expect("stats' graph breaks")
        .keys()
        .map(|k| {
            k.chars()
                .take(400)
                .collect::<String>()
                .replace("\r\n", "\n")
                .replace('\n', "; ")
                .replace('"', "'")
                .replace('\\', "/")
        })
        .collect();
    for b in &counts.graph_breaks {
        assert!(from_stats.contains(&b.reason), "{b:?} vs {from_stats:?}");
    }
    assert!(counts.recompiles >= 1, "{counts:?}");
    let recompile = &counts.recompile_reasons[0];
    assert_eq!(recompile.function, "branchy", "{counts:?}");
    assert!(
        recompile.reason.contains("16"),
        "the failed size guard: {counts:?}"
    );
    let regions = rank.regions.as_ref().expect("host operators were loaded");
    assert!(
        regions.iter().any(|r| r.compile == Some(0))
            && regions.iter().any(|r| r.compile >= Some(1)),
        "Dynamo's ranges show the first and the recompiled frame: {regions:?}"
    );
    assert!(rank.graph_kernels >= 2, "{rank:?}");
    assert!(
        rank.compile_ranges >= 1,
        "fresh compiles in the window: {rank:?}"
    );
    use analysis::insights::FindingKind;
    for kind in [FindingKind::GraphBreaks, FindingKind::Recompiles] {
        assert!(
            report.insights.iter().any(|f| f.kind == kind),
            "{kind:?} in the insights: {text}"
        );
    }
    assert!(text.contains("torch.compile"), "{text}");
    assert!(text.contains("graph break x"), "{text}");
    assert!(
        text.contains("recompile ") && text.contains(" of branchy: "),
        "{text}"
    );
}

/// `analyze` splits the graph kernels' time by pass: the gelu chain fused into its
/// matmul's evacuation is one pass with time of its own, and the parts add up to the
/// graph time.
fn check_passes(dir: &Path) {
    let (report, text) = analyzed(dir);
    let compile = report.compile.first().expect("a torch.compile table");
    let passes = &compile.passes;
    let gelu = passes
        .iter()
        .find(|p| p.pass.ends_with("gelu+mul+add"))
        .unwrap_or_else(|| panic!("the fused chain is a pass: {passes:?}"));
    assert!(gelu.device_us > 0.0 && gelu.calls >= 2, "{gelu:?}");
    assert!(
        passes
            .iter()
            .any(|p| p.pass.contains("mm") && p.device_us > 0.0),
        "{passes:?}"
    );
    let parts: f64 = passes.iter().map(|p| p.device_us).sum::<f64>() + compile.between_passes_us;
    assert!(
        (parts - compile.graph_kernel_us).abs() <= 1e-6 * compile.graph_kernel_us.max(1.0),
        "passes {parts} µs vs graph kernels {} µs",
        compile.graph_kernel_us
    );
    assert!(text.contains("graph kernel time by pass"), "{text}");
    assert!(text.contains(&format!("\n{}", passes[0].pass)), "{text}");
}

/// The roofline of a compiled trace made now (the vendored one, checked on a plain clone
/// by `analysis/tests/roofline_costs_compiled_graphs_by_pass.rs`, goes stale if the
/// extension changes): every graph kernel is a call of a row of its own whose passes'
/// FLOPs and bytes add up to the kernel's own `flops` and `bytes` args, and the
/// launching `CompiledFunction` is no longer "not covered".
fn check_graph_roofline(dir: &Path, trace: &Value) {
    use analysis::analyses::roofline::{roofline_table, RooflineOptions};
    let set = analysis::load_paths(&traces_in(dir), &analysis::LoadOptions::default())
        .expect("the compiled trace loads");
    let table = roofline_table(&set.ranks[0], &RooflineOptions::default()).expect("a table");
    let graph_kernels: Vec<&Value> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["cat"] == "kernel"
                && analysis::analyses::compile::is_graph_kernel(e["name"].as_str().unwrap_or(""))
        })
        .collect();
    let graphs: Vec<_> = table
        .ops
        .iter()
        .filter(|op| op.category == perf_model::Category::CompiledGraph)
        .collect();
    let calls: u64 = graphs.iter().map(|g| g.count).sum();
    assert!(!graph_kernels.is_empty());
    assert_eq!(
        calls as usize,
        graph_kernels.len(),
        "one call per graph kernel"
    );
    for g in &graphs {
        let kernel = graph_kernels
            .iter()
            .find(|e| e["name"] == g.name.as_str())
            .unwrap_or_else(|| panic!("{}: no such kernel", g.name));
        let passes = g.passes.as_ref().expect("a graph row lists its passes");
        let flops: f64 = passes.iter().map(|p| p.gflops * 1e9).sum();
        let bytes: f64 = passes.iter().map(|p| p.data_moved_bytes).sum();
        let (stated_flops, stated_bytes) = (
            kernel["args"]["flops"].as_f64().unwrap(),
            kernel["args"]["bytes"].as_f64().unwrap(),
        );
        assert!(
            (flops - stated_flops).abs() <= 1e-6 * stated_flops,
            "{}",
            g.name
        );
        assert!(
            (bytes - stated_bytes).abs() <= 1e-6 * stated_bytes,
            "{}",
            g.name
        );
    }
    assert!(
        !table
            .uncovered
            .iter()
            .any(|u| u.name.starts_with("CompiledFunction")),
        "{:?}",
        table.uncovered
    );
}

/// `neuronprof diff eager/ compiled/` (the library it runs): the graph kernels are new,
/// the model's per-op matmul kernels are gone, there are fewer launches and less device
/// time.
fn check_diff(eager: &Path, compiled: &Path) {
    use analysis::analyses::trace_diff::{compare_traces, ops_summary, DeviceFilter, DiffOptions};
    let summary = |dir: &Path, device: DeviceFilter| {
        let set = analysis::load_paths(&traces_in(dir), &analysis::LoadOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        ops_summary(&set, &DiffOptions::default().device(device)).unwrap()
    };
    let diff = compare_traces(
        &summary(eager, DeviceFilter::All),
        &summary(compiled, DeviceFilter::All),
    );
    let ops = diff.ops_diff();
    assert!(
        ops.added
            .iter()
            .any(|n| analysis::analyses::compile::is_graph_kernel(n)),
        "{ops:?}"
    );
    assert!(
        ops.deleted
            .iter()
            .any(|n| n.starts_with("addmm_") || n.starts_with("mm_")),
        "{ops:?}"
    );
    let launches = diff
        .rows
        .iter()
        .find(|r| r.name == "nrt_execute")
        .expect("launches in both");
    assert!(
        launches.test_counts * 2 < launches.control_counts,
        "{launches:?}"
    );
    let device = compare_traces(
        &summary(eager, DeviceFilter::Gpu),
        &summary(compiled, DeviceFilter::Gpu),
    );
    let (before, after) = device.rows.iter().fold((0.0, 0.0), |(b, a), r| {
        (
            b + r.control_total_duration_us,
            a + r.test_total_duration_us,
        )
    });
    assert!(after < before, "device time {before} -> {after} µs");
    // No host operator takes no time: the ops PyTorch recorded while the emulator
    // computed a graph's values (its nodes' CPU kernels, their `aten::empty`s) lay
    // inside a cut and are left out, not listed at 0 µs.
    let host = compare_traces(
        &summary(eager, DeviceFilter::Cpu),
        &summary(compiled, DeviceFilter::Cpu),
    );
    // The queue submission is the exception: the launch's modeled cost comes before it
    // and a submission that finds a free slot takes no time (neuron-backend's
    // `HostCost`: the same in the built-in workloads), so `nrt_queue_submit` is 0 µs
    // unless the queue was full.
    for r in host.rows.iter().filter(|r| r.name != "nrt_queue_submit") {
        assert!(
            (r.control_counts == 0 || r.control_total_duration_us > 0.0)
                && (r.test_counts == 0 || r.test_total_duration_us > 0.0),
            "a host operator at 0 µs: {r:?}"
        );
    }
}

/// With `NEURONPROF_DETAIL=instructions`: every graph kernel has engine instructions
/// (on several engines, TensorE among them) and DMA transfers under it, each inside its
/// kernel's span and pointing at it by `kernel correlation`; the warp's marker counts
/// them; `analyze` reads the engines' busy time from them.
fn check_engine_rows(trace: &Value, dir: &Path) {
    let kernels = cat(trace, "kernel");
    // Copies have their DMA transfers too.
    let by_corr: std::collections::HashMap<i64, &Value> = ["kernel", "gpu_memcpy", "gpu_memset"]
        .iter()
        .flat_map(|c| cat(trace, c))
        .map(|k| (arg_i64(k, "correlation"), k))
        .collect();
    let instructions = cat(trace, "neuron_instruction");
    let dmas = cat(trace, "neuron_dma");
    assert!(!instructions.is_empty() && !dmas.is_empty(), "engine rows");
    let marker = &trace["neuronprof_cut"];
    assert_eq!(
        marker["engine_rows"].as_u64(),
        Some((instructions.len() + dmas.len()) as u64),
        "{marker}"
    );
    assert_eq!(marker["engine_rows_dropped"].as_u64(), Some(0), "{marker}");
    assert!(
        marker["host_ops_in_cuts"].as_u64().unwrap() > 0,
        "the graph nodes' CPU ops are left out: {marker}"
    );
    let mut under: std::collections::HashMap<i64, std::collections::BTreeSet<String>> =
        Default::default();
    for row in instructions.iter().chain(&dmas) {
        let corr = arg_i64(row, "kernel correlation");
        let kernel = by_corr
            .get(&corr)
            .unwrap_or_else(|| panic!("an engine row of no device row in the trace: {row}"));
        // Times are whole ns written in µs with 3 decimals: 1 ns of rounding each way.
        assert!(
            torch::ts(row) >= torch::ts(kernel) - 0.001
                && torch::end(row) <= torch::end(kernel) + 0.001,
            "{row} outside its kernel {kernel}"
        );
        let track = row["args"]["engine"]
            .as_str()
            .map_or_else(|| "dma".to_owned(), str::to_owned);
        under.entry(corr).or_default().insert(track);
    }
    for graph in kernels
        .iter()
        .filter(|k| k["name"].as_str().unwrap().starts_with("graph_"))
    {
        let tracks = under
            .get(&arg_i64(graph, "correlation"))
            .unwrap_or_else(|| panic!("no engine rows under {graph}"));
        assert!(
            tracks.contains("TensorE") && tracks.contains("dma") && tracks.len() >= 3,
            "{tracks:?} under {graph}"
        );
    }
    // Named tracks, as the profiler crate's own traces have them.
    let names: Vec<&str> = events(trace)
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    assert!(names.iter().any(|n| n.starts_with("TensorE")), "{names:?}");
    assert!(
        names.iter().any(|n| n.starts_with("DMA queue")),
        "{names:?}"
    );
    let (report, _) = analyzed(dir);
    let device = report
        .utilization
        .iter()
        .find(|d| d.engine_source == analysis::analyses::utilization::EngineSource::Instructions)
        .unwrap_or_else(|| panic!("analyze reads the engine rows: {:?}", report.utilization));
    let busy: Vec<&str> = device
        .engines
        .iter()
        .filter(|e| e.busy_us > 0.0 && e.instructions > 0)
        .map(|e| e.engine.as_str())
        .collect();
    assert!(
        busy.iter().any(|e| e.starts_with("TensorE")),
        "analyze reads the engines' busy time: {busy:?}"
    );
}

#[test]
fn torch_compile_runs_graphs_as_device_programs() {
    let Some(python) = torch::torch_python() else {
        skip::skipped(
            "neuronprof-capi: torch_compile_runs_graphs_as_device_programs",
            torch::NO_TORCH,
        );
        return;
    };
    let work = torch::work_dir("torch-compile");
    let cache = work.join("compile-cache");
    let cache_env = cache.to_str().unwrap();
    let env = [("NEURONPROF_COMPILE_CACHE", cache_env)];
    let (result, _) = torch::run_driver(
        &python,
        "torch_compile_driver.py",
        &[Path::new("train"), &work],
        &env,
    );
    check_losses(&result);
    let eager = only_trace(&work.join("eager"));
    let compiled = only_trace(&work.join("compiled"));
    check_compiled(&eager, &compiled);
    check_passes(&work.join("compiled"));
    check_graph_roofline(&work.join("compiled"), &compiled);
    check_diff(&work.join("eager"), &work.join("compiled"));
    check_fallback(&result, &only_trace(&work.join("unknown")));
    check_attention(&result, &only_trace(&work.join("attention")));
    check_breaks(&result, &work, &eager);
    let stats = &result["stats"];
    assert!(
        count(&result["stats_after_train"], "cache_misses") >= 2,
        "{stats}"
    );
    let breaks = stats["graph_breaks"].as_object().unwrap();
    assert!(
        breaks.keys().any(|reason| reason.contains("item()")),
        "the data-dependent branch is a graph break: {stats}"
    );
    let default_error = result["default_error"].as_str().unwrap_or_default();
    assert!(
        default_error.contains("backend=\"neuron\""),
        "Inductor's error names the backend: {default_error:?}"
    );

    // A second process: every graph from the cache, with engine rows.
    let env = [
        ("NEURONPROF_COMPILE_CACHE", cache_env),
        ("NEURONPROF_DETAIL", "instructions"),
    ];
    let (again, _) = torch::run_driver(
        &python,
        "torch_compile_driver.py",
        &[Path::new("again"), &work],
        &env,
    );
    let stats = &again["stats"];
    assert!(count(stats, "cache_hits") >= 2, "{stats}");
    assert_eq!(count(stats, "cache_misses"), 0, "{stats}");
    let trace = only_trace(&work.join("again"));
    assert!(
        !events(&trace).iter().any(|e| e["name"] == "neuron_compile"),
        "a cache hit shows no compile range"
    );
    let graphs = cat(&trace, "kernel")
        .into_iter()
        .filter(|k| k["name"].as_str().unwrap().starts_with("graph_"))
        .count();
    assert_eq!(graphs, 4, "2 steps, forward and backward");
    check_engine_rows(&trace, &work.join("again"));
    let _ = std::fs::remove_dir_all(&work);
}
