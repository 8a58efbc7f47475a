//! Compiled graphs (`torch.compile(backend="neuron")`, python/README.md "Compiled
//! graphs"): each graph kernel is a row of its own, costed from what the kernel states of
//! its passes, and the ops inside it are attributed their share of its time.
//!
//! - **Which kernels.** A device row with `passes`, `pass_spans_ns` and `pass_costs` args
//!   ([`crate::model::GraphPasses`] with costs). Its launching operator
//!   (`CompiledFunction`, `CompiledFunctionBackward`) has no performance model; the
//!   kernel's own pass costs replace one, so its time is modeled instead of "not
//!   covered". Rows are keyed by kernel name and the kernel's `flops` and `bytes` args
//!   (one program per set of input shapes).
//! - **A pass's cost** is what the emulator states: the FLOPs of its nodes, the HBM bytes
//!   it moves after fusion (an intermediate kept in SBUF moves nothing), and its units —
//!   TensorE for a pass with a matmul (the elementwise nodes fused into its PSUM
//!   evacuation count with it), else the vector engines — in its first node's dtype. Its
//!   roofline is [`perf_model::roofline`] of that cost on the device.
//! - **The graph's roofline** is the sum of its passes' rooflines: passes are issued in
//!   order and each is bound by its own limit. A graph whose passes overlap (independent
//!   passes run side by side) can beat it, so its percent can exceed 100.
//! - **Each pass's share** of a call's kernel time: at each instant the time is split
//!   evenly among the passes running ([`crate::analyses::compile`]'s split, so the shares
//!   and the time no pass ran add up to the kernel's time). Passes with the same label
//!   (`addmm+gelu+mul+add`) are one line, per call of the graph: how many, their time,
//!   FLOPs, bytes and roofline, percent of roofline and bound.

use perf_model::{Bound, Category, DeviceSpec, OpCost, Roofline};
use serde::Serialize;

use super::{kernel_stats, RooflineOp, Spread};
use crate::analyses::compile::pass_shares;
use crate::model::{FastMap, GraphPasses, NameId, RankTrace};

/// The passes of a compiled graph with the same label, per call of the graph.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GraphPass {
    /// The pass's nodes (`addmm+gelu+mul+add`), fused ones joined by `+`.
    pub pass: String,
    /// Passes with this label in one call.
    pub count: u64,
    /// Their share of a call's kernel time, µs (mean over the calls).
    pub time_us: f64,
    /// That share over the call's kernel time, %.
    pub share_pct: f64,
    /// GFLOP per call.
    pub gflops: f64,
    /// HBM bytes per call (after fusion).
    pub data_moved_bytes: f64,
    /// The units and type of the first of them (`matrix_fp32`).
    pub compute_spec: String,
    /// Σ of their rooflines per call, µs (`null` without a device).
    pub roofline_time_us: Option<f64>,
    /// Roofline time / their share of the kernel time, % (`null` without a device or
    /// when they had no time of their own).
    pub roofline_pct: Option<f64>,
    /// The limit binding most of their roofline time.
    pub bound: Option<Bound>,
}

/// The key of a graph row: kernel name, and its `flops` and `bytes` args.
pub(super) type GraphKey = (NameId, i64, i64);

/// The rows of the graph kernels of `calls` (per key, the kernels and their passes).
pub(super) fn graph_rows(
    trace: &RankTrace,
    calls: FastMap<GraphKey, Vec<(u32, &GraphPasses)>>,
    device: Option<&DeviceSpec>,
) -> Vec<RooflineOp> {
    let mut out = Vec::with_capacity(calls.len());
    for ((name, _, _), calls) in calls {
        let Some(&(_, first)) = calls.first() else {
            continue;
        };
        let Some(costs) = first.costs.as_deref() else {
            continue;
        };
        let lines: Vec<Option<Roofline>> = costs
            .iter()
            .map(|c| {
                let cost = OpCost {
                    category: Category::CompiledGraph,
                    flops: c.flops,
                    bytes: c.bytes,
                    compute: c.compute,
                    params: String::new(),
                };
                device.map(|d| perf_model::roofline(&cost, d))
            })
            .collect();
        let n = calls.len() as f64;
        let us: Vec<f64> = calls
            .iter()
            .map(|&(r, _)| trace.rows[r as usize].dur_ns.max(0) as f64 / 1e3)
            .collect();
        let total_us: f64 = us.iter().sum();
        let time = Spread::of(&mut us.clone());
        // Per pass index: its share of the calls' time, summed.
        let mut share_ns = vec![0.0; costs.len()];
        for &(r, passes) in &calls {
            let (shares, _) = pass_shares(trace.rows[r as usize].dur_ns, &passes.spans);
            for (sum, s) in share_ns.iter_mut().zip(shares) {
                *sum += s;
            }
        }
        // The passes by label, in order of first appearance.
        let mut order: Vec<NameId> = Vec::new();
        let mut by_label: FastMap<NameId, Vec<usize>> = FastMap::default();
        for (i, &label) in first.labels.iter().enumerate() {
            by_label
                .entry(label)
                .or_insert_with(|| {
                    order.push(label);
                    Vec::new()
                })
                .push(i);
        }
        let mut passes: Vec<GraphPass> = order
            .iter()
            .map(|label| {
                let idx = &by_label[label];
                let time_us = idx.iter().map(|&i| share_ns[i]).sum::<f64>() / n / 1e3;
                let roofline_us = device.map(|_| {
                    idx.iter()
                        .filter_map(|&i| lines[i].as_ref())
                        .map(|l| l.time_s * 1e6)
                        .sum::<f64>()
                });
                GraphPass {
                    pass: trace.names.get(*label).to_owned(),
                    count: idx.len() as u64,
                    time_us,
                    share_pct: if time.mean > 0.0 {
                        time_us / time.mean * 100.0
                    } else {
                        0.0
                    },
                    gflops: idx.iter().map(|&i| costs[i].flops).sum::<f64>() / 1e9,
                    data_moved_bytes: idx.iter().map(|&i| costs[i].bytes).sum(),
                    compute_spec: costs[idx[0]].compute.label(),
                    roofline_time_us: roofline_us,
                    roofline_pct: roofline_us
                        .filter(|_| time_us > 0.0)
                        .map(|r| r / time_us * 100.0),
                    bound: dominant(
                        idx.iter()
                            .filter_map(|&i| lines[i].as_ref())
                            .map(|l| (l.bound, l.time_s)),
                    ),
                }
            })
            .collect();
        passes.sort_by(|a, b| b.time_us.total_cmp(&a.time_us));
        let flops: f64 = costs.iter().map(|c| c.flops).sum();
        let bytes: f64 = costs.iter().map(|c| c.bytes).sum();
        let roofline_us =
            device.map(|_| lines.iter().flatten().map(|l| l.time_s * 1e6).sum::<f64>());
        // The spec and bound of the passes holding most of the roofline time (most of
        // the FLOPs without a device).
        let spec = dominant(
            costs
                .iter()
                .zip(&lines)
                .filter_map(|(c, l)| l.as_ref().map(|l| (c.compute, l.time_s))),
        )
        .or_else(|| {
            costs
                .iter()
                .max_by(|a, b| a.flops.total_cmp(&b.flops))
                .map(|c| c.compute)
        });
        let bound = dominant(lines.iter().flatten().map(|l| (l.bound, l.time_s)));
        let peak = costs
            .iter()
            .zip(&lines)
            .find(|(c, _)| Some(c.compute) == spec)
            .and_then(|(_, l)| l.as_ref()?.peak.clone())
            .map(|p| (p.spec, p.flops_per_sec / 1e12));
        let per_call = |amount: f64| {
            let mut v: Vec<f64> = us
                .iter()
                .filter(|&&t| t > 0.0)
                .map(|&t| amount / (t * 1e-6) / 1e12)
                .collect();
            Spread::of(&mut v)
        };
        let stated: Vec<i64> = calls
            .iter()
            .map(|&(r, _)| trace.rows[r as usize].flops)
            .collect();
        let device_flops = stated
            .iter()
            .all(|&f| f >= 0)
            .then(|| stated.iter().sum::<i64>() as f64 / n);
        let win_us = roofline_us.map_or(0.0, |r| (total_us - r * n).max(0.0));
        let engines = super::engines::engine_split(
            trace,
            calls.iter().map(|&(r, _)| r),
            calls.len(),
            total_us,
            bound.zip(spec.map(|s| s.unit)),
        );
        out.push(RooflineOp {
            name: trace.names.get(name).to_owned(),
            category: Category::CompiledGraph,
            input_dims: String::new(),
            input_types: String::new(),
            input_strides: String::new(),
            concrete_inputs: String::new(),
            params: format!(
                "compiled graph: {} passes, {} distinct",
                costs.len(),
                passes.len()
            ),
            compute_spec: spec.map(|s| s.label()).unwrap_or_default(),
            count: calls.len() as u64,
            nested_calls: 0,
            kernel_time_us: total_us,
            unnested_kernel_time_us: total_us,
            kernel_time_per_call_us: time,
            gflops: flops / 1e9,
            data_moved_bytes: bytes,
            flops_per_byte: if bytes > 0.0 { flops / bytes } else { 0.0 },
            tflops_per_sec: per_call(flops),
            tb_per_sec: per_call(bytes),
            roofline_time_us: roofline_us,
            roofline_pct: roofline_us
                .filter(|_| time.mean > 0.0)
                .map(|r| r / time.mean * 100.0),
            bound,
            peak,
            device_flops_per_call: device_flops,
            win_us,
            engines,
            kernels: kernel_stats(trace, calls.iter().map(|&(r, _)| r)),
            passes: Some(passes),
        });
    }
    out
}

/// The key holding the most weight (roofline time) among `items`.
fn dominant<K: PartialEq>(items: impl Iterator<Item = (K, f64)>) -> Option<K> {
    let mut totals: Vec<(K, f64)> = Vec::new();
    for (k, t) in items {
        match totals.iter_mut().find(|(x, _)| *x == k) {
            Some(e) => e.1 += t,
            None => totals.push((k, t)),
        }
    }
    totals
        .into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(k, _)| k)
}
