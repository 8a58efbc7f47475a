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
