//! What-if on another device: every device row of a CUDA, ROCm or neuron trace re-timed
//! for a target device from the per-op model, for [`super::what_if`] to re-time the
//! dependency graph with ([`super::what_if::ScaleRule::Rows`]); host work and launches
//! keep their time.
//!
//! # The method
//! A row belongs to a modeled call ([`crate::analyses::roofline`]: FLOPs and bytes from
//! its arguments) whose roofline on the source device is `R_s` and on the target `R_t`,
//! and whose kernels took `T` on the source. The share `f = min(1, R_s / T)` of its time
//! is what the roofline explains; it keeps its fraction of the roofline on the target
//! (× `R_t / R_s`). The rest, `1 − f`, is what a kernel takes beyond its roofline —
//! launch on the device, ramp-up, drain, the latency of its few dependent memory
//! round-trips, in small eager kernels nearly all their time — and scales with the two
//! devices' kernel latency ([`kernel_latency`]). So a row's factor is
//! `(1 − f) × L_t / L_s + f × R_t / R_s`. A row of no modeled call scales with the
//! latency ratio; copies, memsets and collectives keep their time (their speed is a
//! link's, which a device's roofline does not state).
//!
//! The figures of [`kernel_latency`], their source and the method's measured error
//! (H100 SXM ↔ MI300X, both directions, on two Hugging Face models) are in
//! `docs/WHAT-IF.md`, "Predicting another device".

use std::collections::HashMap;

use perf_model::{Category, DeviceSpec};
use serde::Serialize;

use super::CpGraph;
use crate::analyses::roofline::{roofline_table, RooflineOptions};
use crate::error::AnalysisError;
use crate::model::RankTrace;

/// Kernel latency per device, relative to the H100 SXM: how much longer a kernel that
/// is far from its roofline takes there. Measured, not published (no vendor states it):
/// `docs/WHAT-IF.md`, "Predicting another device".
pub const KERNEL_LATENCY: &[(&str, f64)] = &[("H100 SXM", 1.0), ("MI300X", 1.45)];

/// The kernel latency of `device` ([`KERNEL_LATENCY`], by its name), if measured.
pub fn kernel_latency(device: &DeviceSpec) -> Option<f64> {
    KERNEL_LATENCY
        .iter()
        .find(|(name, _)| *name == device.name)
        .map(|&(_, latency)| latency)
}

/// The op categories the prediction is reported by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum OpGroup {
    /// Matrix multiplications and convolutions (implicit GEMMs on the matrix units).
    #[serde(rename = "GEMM")]
    Gemm,
    /// Attention, forward and backward.
    #[serde(rename = "attention")]
    Attention,
    /// Elementwise ops, copies and fills.
    #[serde(rename = "elementwise")]
    Elementwise,
    /// Reductions, softmax and normalizations.
    #[serde(rename = "reduction")]
    Reduction,
    /// Everything else: embeddings, gathers, optimizers, memory copies, rows no
    /// operator launched.
    #[serde(rename = "other")]
    Other,
}

impl OpGroup {
    /// Every group, in table order.
    pub const ALL: [OpGroup; 5] = [
        OpGroup::Gemm,
        OpGroup::Attention,
        OpGroup::Elementwise,
        OpGroup::Reduction,
        OpGroup::Other,
    ];

    /// The group of a model category.
    pub fn of(category: Category) -> OpGroup {
        match category {
            Category::Gemm | Category::ConvFwd | Category::ConvBwd => OpGroup::Gemm,
            Category::SdpaFwd | Category::SdpaBwd => OpGroup::Attention,
            Category::Elementwise => OpGroup::Elementwise,
            Category::Reduce | Category::Softmax | Category::NormFwd | Category::NormBwd => {
                OpGroup::Reduction
            }
            _ => OpGroup::Other,
        }
    }

    /// The label (`GEMM`, `attention`, …).
    pub fn label(self) -> &'static str {
        match self {
            OpGroup::Gemm => "GEMM",
            OpGroup::Attention => "attention",
            OpGroup::Elementwise => "elementwise",
            OpGroup::Reduction => "reduction",
            OpGroup::Other => "other",
        }
    }
}

/// One device row's re-timing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowRetime {
    /// New duration / recorded duration.
    pub factor: f64,
    /// Its launching operator's group.
    pub group: OpGroup,
}

/// One rank's devices.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankDevices {
    /// The rank.
    pub rank: i64,
    /// The device its trace ran on.
    pub source: String,
    /// Target kernel latency / source kernel latency; `null` when either is not
    /// measured (then that share keeps its time).
    pub latency_ratio: Option<f64>,
}

/// Every device row of a set of traces re-timed for a target device.
#[derive(Clone, Debug, Default)]
pub struct Retiming {
    /// By (rank, event index).
    pub rows: HashMap<(i64, u64), RowRetime>,
    /// Per rank.
    pub ranks: Vec<RankDevices>,
    /// Rows kept as recorded: copies, memsets, collectives.
    pub kept: u64,
}

/// A row's factor: the share its roofline explains (`roofline_us / call_us`, at most 1)
/// scaled by the roofline ratio, the rest by the latency ratio.
pub fn row_factor(
    call_us: f64,
    source_roofline_us: f64,
    target_roofline_us: f64,
    latency: f64,
) -> f64 {
    if !(call_us > 0.0 && source_roofline_us > 0.0) {
        return latency;
    }
    let explained = (source_roofline_us / call_us).min(1.0);
    (1.0 - explained) * latency + explained * target_roofline_us / source_roofline_us
}

/// Re-times every device row of `traces` for `target`. Each trace's device is the one
/// its `deviceProperties` name; an error when a trace's is not in the device table.
pub fn retime_rows(traces: &[RankTrace], target: &DeviceSpec) -> Result<Retiming, AnalysisError> {
    let mut out = Retiming::default();
    for trace in traces {
        let table = roofline_table(trace, &RooflineOptions::default().with_row_models(true))?;
        let Some(source) = table.device_spec else {
            return Err(AnalysisError::NotApplicable {
                analysis: "what-if --device",
                reason: format!("rank {}: {}", trace.rank, table.device_source),
            });
        };
        let latency_ratio = kernel_latency(target)
            .zip(kernel_latency(&source))
            .map(|(t, s)| t / s);
        let latency = latency_ratio.unwrap_or(1.0);
        for model in &table.row_models {
            let row = &trace.rows[model.row as usize];
            let group = OpGroup::of(model.category);
            let kept = row.is_collective() || trace.category(row) != "kernel";
            let factor = if kept {
                out.kept += 1;
                1.0
            } else {
                match &model.call {
                    Some(call) => row_factor(
                        call.kernel_time_us,
                        perf_model::roofline(&call.cost, &source).time_s * 1e6,
                        perf_model::roofline(&call.cost, target).time_s * 1e6,
                        latency,
                    ),
                    None => latency,
                }
            };
            out.rows
                .insert((trace.rank, row.event_index), RowRetime { factor, group });
        }
        out.ranks.push(RankDevices {
            rank: trace.rank,
            source: source.name,
            latency_ratio,
        });
    }
    Ok(out)
}

/// One group's device time in the window, recorded and predicted.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupTime {
    /// The group.
    pub group: OpGroup,
    /// Σ of its rows' recorded durations, µs.
    pub recorded_us: f64,
    /// Σ of their re-timed durations, µs.
    pub predicted_us: f64,
}

/// What a what-if on another device adds to its answer. JSON: `{"target", "ranks":
/// [RankDevices…], "device_busy_us", "predicted_device_busy_us", "groups":
/// [{"group", "recorded_us", "predicted_us"}…], "kept_rows"}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CrossDevice {
    /// The target device.
    pub target: String,
    /// Each rank's source device and latency ratio.
    pub ranks: Vec<RankDevices>,
    /// The union of the window's device rows, recorded, over every rank, µs.
    pub device_busy_us: f64,
    /// The same union in the re-timed graph, µs.
    pub predicted_device_busy_us: f64,
    /// Per op group, in [`OpGroup::ALL`] order (groups with no row left out).
    pub groups: Vec<GroupTime>,
    /// Rows kept as recorded (copies, memsets, collectives), in the whole traces.
    pub kept_rows: u64,
}

/// The window's device rows, recorded and re-timed (`node_times`, from
/// [`super::what_if::WhatIf::node_times`]), by group and as busy time.
pub fn summarize(
    graph: &CpGraph<'_>,
    node_times: &[i64],
    retiming: &Retiming,
    target: &str,
) -> CrossDevice {
    // Per device event of the graph: its start and end nodes.
    let mut spans: HashMap<u32, (Option<usize>, Option<usize>)> = HashMap::new();
    for (id, node) in graph.graph.nodes.iter().enumerate() {
        if graph.events[node.event as usize].stream < 0 {
            continue;
        }
        let slot = spans.entry(node.event).or_default();
        if node.is_start {
            slot.0 = Some(id);
        } else {
            slot.1 = Some(id);
        }
    }
    let us = |ticks: i64| ticks as f64 / graph.ticks_per_us as f64;
    let mut groups: HashMap<OpGroup, (f64, f64)> = HashMap::new();
    let mut recorded: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
    let mut predicted: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
    let mut events: Vec<_> = spans.into_iter().collect();
    events.sort_unstable_by_key(|(event, _)| *event);
    for (event, (start, end)) in events {
        let (Some(start), Some(end)) = (start, end) else {
            continue;
        };
        let e = &graph.events[event as usize];
        let nodes = &graph.graph.nodes;
        let old = (nodes[start].ts, nodes[end].ts);
        let new = (node_times[start], node_times[end]);
        let group = retiming
            .rows
            .get(&(e.rank, e.event_index))
            .map_or(OpGroup::Other, |r| r.group);
        let slot = groups.entry(group).or_default();
        slot.0 += us(old.1 - old.0);
        slot.1 += us(new.1 - new.0);
        recorded.entry(e.rank).or_default().push(old);
        predicted.entry(e.rank).or_default().push(new);
    }
    let busy = |by_rank: HashMap<i64, Vec<(i64, i64)>>| -> f64 {
        by_rank
            .into_values()
            .map(|spans| us(crate::stats::union_length(spans)))
            .sum()
    };
    CrossDevice {
        target: target.to_owned(),
        ranks: retiming.ranks.clone(),
        device_busy_us: busy(recorded),
        predicted_device_busy_us: busy(predicted),
        groups: OpGroup::ALL
            .iter()
            .filter_map(|g| {
                groups.get(g).map(|&(recorded_us, predicted_us)| GroupTime {
                    group: *g,
                    recorded_us,
                    predicted_us,
                })
            })
            .collect(),
        kept_rows: retiming.kept,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_roofline_share_scales_with_the_roofline_and_the_rest_with_latency() {
        // A call at its roofline: only the roofline ratio counts.
        assert_eq!(row_factor(10.0, 10.0, 5.0, 1.45), 0.5);
        // Beyond it (a slow call on the source) still only its roofline share.
        assert_eq!(row_factor(8.0, 10.0, 5.0, 1.45), 0.5);
        // A quarter explained: 0.75 × 1.45 + 0.25 × 0.5.
        let f = row_factor(4.0, 1.0, 0.5, 1.45);
        assert!((f - (0.75 * 1.45 + 0.25 * 0.5)).abs() < 1e-12, "{f}");
        // No roofline: all latency.
        assert_eq!(row_factor(4.0, 0.0, 0.0, 1.45), 1.45);
    }

    #[test]
    fn groups_follow_the_model_categories() {
        assert_eq!(OpGroup::of(Category::ConvFwd), OpGroup::Gemm);
        assert_eq!(OpGroup::of(Category::SdpaBwd), OpGroup::Attention);
        assert_eq!(OpGroup::of(Category::NormFwd), OpGroup::Reduction);
        assert_eq!(OpGroup::of(Category::Softmax), OpGroup::Reduction);
        assert_eq!(OpGroup::of(Category::Memory), OpGroup::Other);
        assert_eq!(
            crate::stats::union_length(vec![(0, 10), (5, 15), (20, 30)]),
            25
        );
    }

    #[test]
    fn measured_latencies_are_found_by_device_name() {
        let h100 = DeviceSpec::builtin("h100-sxm").unwrap();
        let mi300x = DeviceSpec::builtin("mi300x").unwrap();
        assert_eq!(kernel_latency(&h100), Some(1.0));
        assert_eq!(kernel_latency(&mi300x), Some(1.45));
        assert_eq!(kernel_latency(&DeviceSpec::builtin("b200").unwrap()), None);
    }
}
