//! `torch.compile` in a trace: compiled regions, graph kernels, graph breaks and
//! recompiles (no HTA counterpart).
//!
//! Two sources, each used where it exists:
//! - **The trace's own events**, in any `torch.compile` trace (CUDA, CPU, neuron):
//!   Dynamo wraps each call of compiled code in a `record_function` range named
//!   `Torch-Compiled Region: F/C` (PyTorch 2.15, `torch/_dynamo/convert_frame.py`: the
//!   annotation of the frame's guarded code, `F` the frame's id and `C` its compile
//!   count), so the distinct regions a window ran, and a region `F/C` with `C > 0` (the
//!   frame compiled again), are read off the host operators. On neuron traces the
//!   compiled graphs are device kernels named `graph_<frame>_<compile>_<kind>`
//!   (`kind`: `forward`, `backward`, `inference`; python/neuronprof_torch/compile.py),
//!   and a fresh compile is a host range `neuron_compile`.
//! - **The `neuron_compile` top-level member** neuronprof's PyTorch extension adds to a
//!   trace when the profiler stops (python/README.md, "Compiled graphs"): Dynamo's own
//!   counts — graph breaks by reason, recompiles with the failed guard — and the neuron
//!   backend's (graphs, calls, compile-cache hits and misses, eager fallbacks by op).
//!   They are counted since the process started, not per window: a graph is usually
//!   compiled in a step before the profiler's active window.
//!
//! A member that is not valid JSON of that shape is an error of the report naming the
//! rank and file, never a panic; the trace's own counts still stand.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::classify::is_device_work_category;
use crate::model::{HostOpKind, RankTrace};

/// The top-level trace member with the extension's compile counts.
pub const TRACE_KEY: &str = "neuron_compile";

/// Prefix of Dynamo's range around each call of compiled code.
pub const REGION_PREFIX: &str = "Torch-Compiled Region: ";

/// A compiled region the window ran (one `Torch-Compiled Region: F/C` name).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompiledRegion {
    /// The compile id as Dynamo wrote it (`0/0`, `1/2`, `0/0_1` for a restarted attempt).
    pub compile_id: String,
    /// `F`, when the id parses.
    pub frame: Option<i64>,
    /// `C`, when the id parses: 0 for a frame's first compile, more for a recompile.
    pub compile: Option<i64>,
    /// Calls in the window.
    pub calls: u64,
    /// Σ host duration of those calls, µs.
    pub host_us: f64,
}

/// A graph break Dynamo counted, with its reason.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraphBreak {
    /// Dynamo's reason.
    pub reason: String,
    /// How many times Dynamo broke a graph for it.
    pub count: u64,
}

/// A compile Dynamo made because a frame's guard failed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recompile {
    /// Dynamo's compile id (`F/C`).
    pub compile_id: String,
    /// The function (code object) compiled again.
    pub function: String,
    /// The first guard that failed.
    pub reason: String,
}

/// The `neuron_compile` member: counts since the process started.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompileCounts {
    /// AOTAutograd graphs the neuron backend compiled (forward, backward, inference).
    #[serde(default)]
    pub graphs: u64,
    /// Calls of those graphs.
    #[serde(default)]
    pub calls: u64,
    /// Device kernels their calls launched (one per program part).
    #[serde(default)]
    pub kernels_launched: u64,
    /// Compile-cache hits.
    #[serde(default)]
    pub cache_hits: u64,
    /// Compile-cache misses (fresh compiles).
    #[serde(default)]
    pub cache_misses: u64,
    /// Nodes the lowerings did not know, run as eager kernels inside a graph, by op.
    #[serde(default)]
    pub eager_fallback_ops: BTreeMap<String, u64>,
    /// Graphs Dynamo captured.
    #[serde(default)]
    pub unique_graphs: u64,
    /// Dynamo's graph breaks by reason, most frequent first.
    #[serde(default)]
    pub graph_breaks: Vec<GraphBreak>,
    /// Recompiles among the compiles Dynamo still keeps the metrics of.
    #[serde(default)]
    pub recompiles: u64,
    /// Each of those recompiles, with its reason.
    #[serde(default)]
    pub recompile_reasons: Vec<Recompile>,
    /// How many compiles' metrics Dynamo kept (the recompiles are counted among them).
    #[serde(default)]
    pub compiles_kept: u64,
    /// The bound of Dynamo's metrics deque (`null` when unknown).
    #[serde(default)]
    pub compiles_kept_limit: Option<u64>,
}

impl CompileCounts {
    /// Σ graph breaks over the reasons.
    pub fn graph_break_count(&self) -> u64 {
        self.graph_breaks.iter().map(|b| b.count).sum()
    }
}

/// `torch.compile` on one rank. JSON: `{"rank", "regions": [CompiledRegion…] | null,
/// "graph_kernels", "graph_kernel_us", "device_kernel_us", "compile_ranges",
/// "compile_range_us", "counts": CompileCounts | null}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankCompile {
    /// The rank.
    pub rank: i64,
    /// Dynamo's compiled regions in the window, by compile id; `null` when the trace was
    /// loaded without host operators.
    pub regions: Option<Vec<CompiledRegion>>,
    /// Device kernels of compiled graphs (`graph_<frame>_<compile>_<kind>`).
    pub graph_kernels: u64,
    /// Their Σ duration, µs.
    pub graph_kernel_us: f64,
    /// Σ duration of every kernel, copy and memset, µs (what the graphs' share is of).
    pub device_kernel_us: f64,
    /// `neuron_compile` host ranges (fresh compiles in the window).
    pub compile_ranges: u64,
    /// Their Σ duration, µs.
    pub compile_range_us: f64,
    /// The `neuron_compile` member's counts, when the trace has one.
    pub counts: Option<CompileCounts>,
    /// The graph kernels' time by pass (the aten ops a pass ran, fused ones joined by
    /// `+`), from their `passes`/`pass_spans_ns` args: at each instant a kernel's time
    /// is split evenly among the passes running then, so the passes and
    /// `between_passes_us` add up to the graph kernels' time. Largest first.
    pub passes: Vec<PassTime>,
    /// Graph kernel time in which no pass ran (waiting for a DMA or a queue), µs.
    pub between_passes_us: f64,
}

/// One pass label's share of the graph kernels' time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PassTime {
    /// The pass's aten ops (`gelu+mul+add`, `addmm`).
    pub pass: String,
    /// Graph kernels it ran in (once per kernel call and pass).
    pub calls: u64,
    /// Its share of their time, µs.
    pub device_us: f64,
}

/// Splits one kernel of `dur_ns` among its passes' `spans` (clipped to the kernel): at
/// each instant evenly among the passes running; adds each pass's share to `into` by
/// label, and returns the time no pass ran.
fn split_by_pass(
    dur_ns: i64,
    labels: &[crate::model::NameId],
    spans: &[(i64, i64)],
    into: &mut BTreeMap<crate::model::NameId, (u64, f64)>,
) -> f64 {
    let (shares, between) = pass_shares(dur_ns, spans);
    for (label, share) in labels.iter().zip(shares) {
        let e = into.entry(*label).or_default();
        e.0 += 1;
        e.1 += share;
    }
    between
}

/// Each pass's share (ns) of one kernel of `dur_ns` whose passes ran over `spans` (ns
/// after its start, clipped to the kernel): at each instant the time is split evenly
/// among the passes running, so the shares and the time no pass ran (returned second)
/// add up to `dur_ns`.
pub(crate) fn pass_shares(dur_ns: i64, spans: &[(i64, i64)]) -> (Vec<f64>, f64) {
    let mut shares = vec![0.0; spans.len()];
    let mut edges: Vec<(i64, usize, bool)> = Vec::with_capacity(2 * spans.len());
    for (i, &(start, end)) in spans.iter().enumerate() {
        let (start, end) = (start.clamp(0, dur_ns), end.clamp(0, dur_ns));
        if end > start {
            edges.push((start, i, true));
            edges.push((end, i, false));
        }
    }
    edges.sort_by_key(|&(t, _, starts)| (t, starts));
    let mut running: Vec<usize> = Vec::new();
    let (mut at, mut covered) = (0i64, 0i64);
    for (t, i, starts) in edges {
        if t > at && !running.is_empty() {
            let share = (t - at) as f64 / running.len() as f64;
            for &r in &running {
                shares[r] += share;
            }
            covered += t - at;
        }
        at = t;
        if starts {
            running.push(i);
        } else if let Some(p) = running.iter().position(|&r| r == i) {
            running.swap_remove(p);
        }
    }
    (shares, (dur_ns - covered) as f64)
}

impl RankCompile {
    /// Frames the window ran in a compiled version other than their first (`F/C`,
    /// `C > 0`).
    pub fn recompiled_regions(&self) -> Vec<&CompiledRegion> {
        self.regions
            .iter()
            .flatten()
            .filter(|r| r.compile.is_some_and(|c| c > 0))
            .collect()
    }
}

/// Whether `name` is a neuron compiled-graph kernel: `graph_<n>[_<n>]_<kind>`.
pub fn is_graph_kernel(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("graph_") else {
        return false;
    };
    let Some((ids, kind)) = rest.rsplit_once('_') else {
        return false;
    };
    matches!(kind, "forward" | "backward" | "inference")
        && !ids.is_empty()
        && ids
            .split('_')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
}

/// `F/C` (or `F/C_A`) into frame and compile; `None` for ids of other shapes.
fn parse_compile_id(id: &str) -> (Option<i64>, Option<i64>) {
    let Some((frame, compile)) = id.split_once('/') else {
        return (None, None);
    };
    let compile = compile.split('_').next().unwrap_or(compile);
    (frame.parse().ok(), compile.parse().ok())
}

/// `torch.compile` on `trace` (`None` when it shows none: no compiled region, graph
/// kernel, compile range or `neuron_compile` member), and an error message when the
/// member is damaged (the counts from the trace's events still returned).
pub fn rank_compile(trace: &RankTrace) -> (Option<RankCompile>, Option<String>) {
    let mut error = None;
    let counts = trace.compile_meta.as_deref().and_then(|raw| {
        match serde_json::from_str::<CompileCounts>(raw) {
            Ok(counts) => Some(counts),
            Err(e) => {
                error = Some(format!(
                    "rank {} ({}): the top-level `{TRACE_KEY}` member is not the extension's \
                     compile counts: {e}",
                    trace.rank,
                    trace.path.display()
                ));
                None
            }
        }
    });
    let mut graph_kernels = 0;
    let mut graph_kernel_ns = 0i64;
    let mut device_ns = 0i64;
    for row in &trace.rows {
        if !is_device_work_category(trace.category(row)) {
            continue;
        }
        device_ns += row.dur_ns;
        if is_graph_kernel(trace.name(row)) {
            graph_kernels += 1;
            graph_kernel_ns += row.dur_ns;
        }
    }
    let mut by_pass: BTreeMap<crate::model::NameId, (u64, f64)> = BTreeMap::new();
    let mut between_ns = 0.0;
    for graph in &trace.graph_passes {
        let Some(row) = trace.rows.get(graph.row) else {
            continue;
        };
        if is_graph_kernel(trace.name(row)) {
            between_ns += split_by_pass(row.dur_ns, &graph.labels, &graph.spans, &mut by_pass);
        }
    }
    let mut passes: Vec<PassTime> = by_pass
        .into_iter()
        .map(|(label, (calls, ns))| PassTime {
            pass: trace.names.get(label).to_owned(),
            calls,
            device_us: ns / 1e3,
        })
        .collect();
    passes.sort_by(|a, b| {
        b.device_us
            .total_cmp(&a.device_us)
            .then_with(|| a.pass.cmp(&b.pass))
    });
    if !trace.graph_passes_unreadable.is_empty() {
        let listed: Vec<String> = trace
            .graph_passes_unreadable
            .iter()
            .take(5)
            .map(u64::to_string)
            .collect();
        let message = format!(
            "rank {} ({}): {} graph kernels' passes/pass_spans_ns/pass_costs args could not \
             be read (events {}{}); their time is not split by pass and they have no roofline \
             row",
            trace.rank,
            trace.path.display(),
            trace.graph_passes_unreadable.len(),
            listed.join(", "),
            if trace.graph_passes_unreadable.len() > 5 {
                ", …"
            } else {
                ""
            }
        );
        error = Some(match error {
            Some(e) => format!("{e}; {message}"),
            None => message,
        });
    }
    let mut compile_ranges = 0;
    let mut compile_range_ns = 0i64;
    let regions = trace.host_ops.as_ref().map(|ops| {
        let mut by_id: BTreeMap<&str, (u64, i64)> = BTreeMap::new();
        for op in ops
            .operators
            .iter()
            .filter(|o| o.kind == HostOpKind::Operator)
        {
            let name = ops.names.get(op.name);
            if let Some(id) = name.strip_prefix(REGION_PREFIX) {
                let entry = by_id.entry(id).or_default();
                entry.0 += 1;
                entry.1 += op.dur_ns;
            } else if name == TRACE_KEY {
                compile_ranges += 1;
                compile_range_ns += op.dur_ns;
            }
        }
        let mut regions: Vec<CompiledRegion> = by_id
            .into_iter()
            .map(|(id, (calls, ns))| {
                let (frame, compile) = parse_compile_id(id);
                CompiledRegion {
                    compile_id: id.to_owned(),
                    frame,
                    compile,
                    calls,
                    host_us: ns as f64 / 1e3,
                }
            })
            .collect();
        regions.sort_by_key(|r| (r.frame.unwrap_or(i64::MAX), r.compile, r.compile_id.clone()));
        regions
    });
    let shows_compile = counts.is_some()
        || graph_kernels > 0
        || compile_ranges > 0
        || regions.as_ref().is_some_and(|r| !r.is_empty());
    let report = shows_compile.then(|| RankCompile {
        rank: trace.rank,
        regions,
        graph_kernels,
        graph_kernel_us: graph_kernel_ns as f64 / 1e3,
        device_kernel_us: device_ns as f64 / 1e3,
        compile_ranges,
        compile_range_us: compile_range_ns as f64 / 1e3,
        counts,
        passes,
        between_passes_us: between_ns / 1e3,
    });
    (report, error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graph_kernel_names() {
        assert!(is_graph_kernel("graph_0_0_forward"));
        assert!(is_graph_kernel("graph_12_3_backward"));
        assert!(is_graph_kernel("graph_4_inference"));
        assert!(!is_graph_kernel("graph_0_0_sideways"));
        assert!(!is_graph_kernel("graph__forward"));
        assert!(!is_graph_kernel("graph_x_forward"));
        assert!(!is_graph_kernel("addmm_f32"));
    }

    #[test]
    fn a_kernel_is_split_evenly_among_the_passes_running() {
        let mut names = crate::model::Names::default();
        let graph = crate::model::GraphPasses::parse(
            0,
            "addmm 600 ns; gelu+mul+add 400 ns; addmm 100 ns",
            "0-600; 400-800; 900-1000",
            &mut names,
        )
        .unwrap();
        // 0-400 addmm alone, 400-600 both, 600-800 gelu alone, 800-900 none, 900-1000
        // addmm; the kernel lasts 1,100 ns: 100 ns after the last pass.
        let mut into = BTreeMap::new();
        let between = split_by_pass(1_100, &graph.labels, &graph.spans, &mut into);
        let by_label: BTreeMap<&str, (u64, f64)> =
            into.iter().map(|(l, v)| (names.get(*l), *v)).collect();
        assert_eq!(by_label["addmm"], (2, 600.0));
        assert_eq!(by_label["gelu+mul+add"], (1, 300.0));
        assert_eq!(between, 200.0);
        let total: f64 = by_label.values().map(|v| v.1).sum::<f64>() + between;
        assert_eq!(total, 1_100.0);
        // Args that disagree or do not parse are no passes.
        assert!(crate::model::GraphPasses::parse(0, "a 1 ns", "0-1; 1-2", &mut names).is_none());
        assert!(crate::model::GraphPasses::parse(0, "a 1 ns", "5-1", &mut names).is_none());
        assert!(crate::model::GraphPasses::parse(0, "a one ns", "0-1", &mut names).is_none());
    }

    #[test]
    fn compile_ids() {
        assert_eq!(parse_compile_id("0/0"), (Some(0), Some(0)));
        assert_eq!(parse_compile_id("3/2_1"), (Some(3), Some(2)));
        assert_eq!(parse_compile_id("Unknown"), (None, None));
    }

    #[test]
    fn counts_read_with_defaults_and_breaks_summed() {
        let counts: CompileCounts = serde_json::from_str(
            r#"{"graphs": 2, "graph_breaks": [{"reason": "a", "count": 2},
                {"reason": "b", "count": 1}], "extra": true}"#,
        )
        .unwrap();
        assert_eq!(counts.graphs, 2);
        assert_eq!(counts.graph_break_count(), 3);
        assert_eq!(counts.recompiles, 0);
    }
}
