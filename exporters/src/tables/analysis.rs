//! Analysis results (`analysis::Report`) as small tables, written next to the event
//! tables by [`crate::CsvExporter::add_analysis`] and
//! [`crate::ParquetExporter::add_analysis`].
//!
//! Each row is one element of a list in the report; a column is the element's serde
//! field of the same name (see `analysis::Report`: times in µs, `null`/empty where the
//! report has `null`). Column kinds: `i64` (Arrow `Int64`), `f64` (Arrow `Float64`),
//! `text` (`Utf8`); all nullable. Enums are their serde spelling (`COMPUTATION`,
//! `host`, `device_idle`, …).
//!
//! | table | one row per (report field) | columns |
//! |---|---|---|
//! | `analysis_temporal` | rank (`temporal_breakdown.ranks`) | `rank` i64, `idle_time_us, compute_time_us, non_compute_time_us, kernel_time_us, idle_time_pctg, compute_time_pctg, non_compute_time_pctg` f64 |
//! | `analysis_kernels` | kernel name (or `others`, compat mode) per type and rank (`kernel_breakdown.kernels`) | `rank` i64, `kernel_type, name` text, `count` i64, `sum_us, max_us, min_us, stddev_us, mean_us, p50_us, p99_us` f64 (the percentiles empty in compat mode) |
//! | `analysis_steps` | `ProfilerStep` per rank (`steps`) | `rank, step` i64, `start_us, dur_us, computation_us, communication_us, peer_wait_us, memory_us, other_device_us, host_bound_idle_us, other_idle_us` f64, `bound` text (`host`/`device`) |
//! | `analysis_collectives` | collective matched across ranks (`collectives.instances`) | `process_group` text, `seq` i64, `collective, dtype` text, `group_size, bytes` i64, `arrival_skew_us, end_skew_us` f64, `waited_for_rank, arrived_last, arrived_first` i64 (the last two empty on a tie), `transfer_us` (the shortest duration across ranks), `mean_wait_us, algbw_gbps, bus_bandwidth_gbps, fraction_of_peak` f64, `ranks` text (the per-rank arrivals, durations and waits as a JSON array) |
//! | `analysis_collective_groups` | process group and operation (`collectives.groups`) | `process_group, collective` text, `ranks` text (JSON), `instances, bytes` i64, `size_histogram` text (JSON `[{up_to_bytes, instances}]`), `transfer_us, wait_us, mean_start_skew_us, max_start_skew_us` f64, `busbw_min_gbps, busbw_p50_gbps, busbw_p90_gbps, busbw_max_gbps` f64 (`bus_bandwidth_gbps` split), `median_fraction_of_peak` f64, `nodes` i64, `inter_node` i64 (1 spans nodes, 0 not, empty unknown), `link` text, `peak_bus_gbps` f64 (the link's nominal bus bandwidth) |
//! | `analysis_collective_ranks` | rank (`collectives.per_rank`) | `rank, instances` i64, `dur_us, wait_us, transfer_us` f64, `times_waited_for, times_arrived_first` i64 (instances it alone arrived last, first), `others_waited_us` f64 (the others' wait in the instances it arrived last) |
//! | `analysis_all_to_all` | (group, collective, sender, receiver) of an all-to-all(v) matrix (`collectives.all_to_all`) | `process_group, collective` text, `src_rank, dst_rank, bytes, instances` i64 (bytes `src_rank` sent `dst_rank` over the group's `instances`) |
//! | `analysis_utilization` | rank and device (`utilization`) | `rank, device` i64, `window_start_us, window_us, device_busy_pct, peer_wait_us, peer_wait_pct` f64, `engine_source` text, `model_flops, hardware_flops` i64, `peak_tflops, mfu_pct, hfu_pct, tensor_throttled_us` f64, `tensor_throttle_events, host_bound_steps, device_bound_steps` i64, `engines, cores, dma` text (JSON) |
//! | `analysis_insights` | finding, most important first (`insights`) | `kind` text, `rank` i64, `score, value, threshold` f64, `unit, summary` text, `start_us, end_us` f64 (`time_range_us`) |
//! | `analysis_roofline` | operator and unique arguments per analyzed rank, most time to win first (`per_rank[].roofline.ops`) | `rank` i64, `device, name, category, input_dims, input_types, input_strides, concrete_inputs, params, compute_spec` text, `count, nested_calls` i64, `kernel_time_us, kernel_time_mean_us, gflops, data_moved_bytes, flops_per_byte, tflops_per_sec_mean, tb_per_sec_mean, roofline_time_us, roofline_pct` f64, `bound` text (`compute`/`memory`, empty without a device), `win_us` f64 (`kernel_time_mean_us`, `tflops_per_sec_mean`, `tb_per_sec_mean`: the means of the per-call spreads), `op_index` i64 (the row's position in its rank's table, from 0: what the tables below join on, with `rank`), `device_flops_per_call` f64 (the kernels' own `flops` args, neuron), `peak_spec` text and `peak_tflops` f64 (the device peak used), `should_bind, busiest` text and `engines` text (JSON `[{engine, busy_per_call_us, share_pct}]`: the split by engine on neuron traces with engine busy times) |
//! | `analysis_roofline_kernels` | kernel of a roofline row, most time first (`ops[].kernels`) | `rank, op_index` i64, `name` text, `count` i64, `total_us, dur_mean_us, dur_median_us, dur_min_us, dur_max_us` f64 |
//! | `analysis_roofline_passes` | pass of a compiled graph's row, by label (`ops[].passes`) | `rank, op_index` i64, `graph, pass` text, `count` i64, `time_us, share_pct, gflops, data_moved_bytes` f64, `compute_spec` text, `roofline_time_us, roofline_pct` f64, `bound` text |
//! | `analysis_roofline_uncovered` | operator the model does not cost, per rank, most kernel time first (`per_rank[].roofline.uncovered`) | `rank` i64, `name, category` text, `count` i64, `kernel_time_us` f64, `reason` text |

use serde_json::Value;

use super::Cell;

/// How a column's values are typed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `i64`.
    Int,
    /// `f64`.
    Float,
    /// Text (JSON for nested values).
    Text,
}

/// A column of an analysis table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AnalysisColumn {
    /// Name (the report field's serde name, except `start_us`/`end_us`).
    pub name: &'static str,
    /// Its type.
    pub kind: Kind,
}

const fn c(name: &'static str, kind: Kind) -> AnalysisColumn {
    AnalysisColumn { name, kind }
}
use Kind::{Float as F, Int as I, Text as T};

/// How many analysis tables there are.
pub const ANALYSIS_TABLE_COUNT: usize = 13;

/// The analysis tables, in the order of [`crate::TableStats::analysis_rows`].
pub const ANALYSIS_TABLES: [&str; ANALYSIS_TABLE_COUNT] = [
    "analysis_temporal",
    "analysis_kernels",
    "analysis_steps",
    "analysis_collectives",
    "analysis_collective_groups",
    "analysis_collective_ranks",
    "analysis_all_to_all",
    "analysis_utilization",
    "analysis_insights",
    "analysis_roofline",
    "analysis_roofline_kernels",
    "analysis_roofline_passes",
    "analysis_roofline_uncovered",
];

/// The columns of each analysis table (same order as [`ANALYSIS_TABLES`]).
pub const ANALYSIS_SCHEMAS: [&[AnalysisColumn]; ANALYSIS_TABLE_COUNT] = [
    &[
        c("rank", I),
        c("idle_time_us", F),
        c("compute_time_us", F),
        c("non_compute_time_us", F),
        c("kernel_time_us", F),
        c("idle_time_pctg", F),
        c("compute_time_pctg", F),
        c("non_compute_time_pctg", F),
    ],
    &[
        c("rank", I),
        c("kernel_type", T),
        c("name", T),
        c("count", I),
        c("sum_us", F),
        c("max_us", F),
        c("min_us", F),
        c("stddev_us", F),
        c("mean_us", F),
        c("p50_us", F),
        c("p99_us", F),
    ],
    &[
        c("rank", I),
        c("step", I),
        c("start_us", F),
        c("dur_us", F),
        c("computation_us", F),
        c("communication_us", F),
        c("peer_wait_us", F),
        c("memory_us", F),
        c("other_device_us", F),
        c("host_bound_idle_us", F),
        c("other_idle_us", F),
        c("bound", T),
    ],
    &[
        c("process_group", T),
        c("seq", I),
        c("collective", T),
        c("dtype", T),
        c("group_size", I),
        c("bytes", I),
        c("arrival_skew_us", F),
        c("end_skew_us", F),
        c("waited_for_rank", I),
        c("arrived_last", I),
        c("arrived_first", I),
        c("transfer_us", F),
        c("mean_wait_us", F),
        c("algbw_gbps", F),
        c("bus_bandwidth_gbps", F),
        c("fraction_of_peak", F),
        c("ranks", T),
    ],
    &[
        c("process_group", T),
        c("collective", T),
        c("ranks", T),
        c("instances", I),
        c("bytes", I),
        c("size_histogram", T),
        c("transfer_us", F),
        c("wait_us", F),
        c("mean_start_skew_us", F),
        c("max_start_skew_us", F),
        c("busbw_min_gbps", F),
        c("busbw_p50_gbps", F),
        c("busbw_p90_gbps", F),
        c("busbw_max_gbps", F),
        c("median_fraction_of_peak", F),
        c("nodes", I),
        c("inter_node", I),
        c("link", T),
        c("peak_bus_gbps", F),
    ],
    &[
        c("rank", I),
        c("instances", I),
        c("dur_us", F),
        c("wait_us", F),
        c("transfer_us", F),
        c("times_waited_for", I),
        c("times_arrived_first", I),
        c("others_waited_us", F),
    ],
    &[
        c("process_group", T),
        c("collective", T),
        c("src_rank", I),
        c("dst_rank", I),
        c("bytes", I),
        c("instances", I),
    ],
    &[
        c("rank", I),
        c("device", I),
        c("window_start_us", F),
        c("window_us", F),
        c("device_busy_pct", F),
        c("peer_wait_us", F),
        c("peer_wait_pct", F),
        c("engine_source", T),
        c("model_flops", I),
        c("hardware_flops", I),
        c("peak_tflops", F),
        c("mfu_pct", F),
        c("hfu_pct", F),
        c("tensor_throttled_us", F),
        c("tensor_throttle_events", I),
        c("host_bound_steps", I),
        c("device_bound_steps", I),
        c("engines", T),
        c("cores", T),
        c("dma", T),
    ],
    &[
        c("kind", T),
        c("rank", I),
        c("score", F),
        c("value", F),
        c("threshold", F),
        c("unit", T),
        c("summary", T),
        c("start_us", F),
        c("end_us", F),
    ],
    &[
        c("rank", I),
        c("device", T),
        c("name", T),
        c("category", T),
        c("input_dims", T),
        c("input_types", T),
        c("input_strides", T),
        c("concrete_inputs", T),
        c("params", T),
        c("compute_spec", T),
        c("count", I),
        c("nested_calls", I),
        c("kernel_time_us", F),
        c("kernel_time_mean_us", F),
        c("gflops", F),
        c("data_moved_bytes", F),
        c("flops_per_byte", F),
        c("tflops_per_sec_mean", F),
        c("tb_per_sec_mean", F),
        c("roofline_time_us", F),
        c("roofline_pct", F),
        c("bound", T),
        c("win_us", F),
        c("op_index", I),
        c("device_flops_per_call", F),
        c("peak_spec", T),
        c("peak_tflops", F),
        c("should_bind", T),
        c("busiest", T),
        c("engines", T),
    ],
    &[
        c("rank", I),
        c("op_index", I),
        c("name", T),
        c("count", I),
        c("total_us", F),
        c("dur_mean_us", F),
        c("dur_median_us", F),
        c("dur_min_us", F),
        c("dur_max_us", F),
    ],
    &[
        c("rank", I),
        c("op_index", I),
        c("graph", T),
        c("pass", T),
        c("count", I),
        c("time_us", F),
        c("share_pct", F),
        c("gflops", F),
        c("data_moved_bytes", F),
        c("compute_spec", T),
        c("roofline_time_us", F),
        c("roofline_pct", F),
        c("bound", T),
    ],
    &[
        c("rank", I),
        c("name", T),
        c("category", T),
        c("count", I),
        c("kernel_time_us", F),
        c("reason", T),
    ],
];

fn objects<T: serde::Serialize>(items: &[T]) -> Vec<Value> {
    items
        .iter()
        .map(|item| serde_json::to_value(item).unwrap_or(Value::Null))
        .collect()
}

/// The rows of every analysis table (same order as [`ANALYSIS_TABLES`]), cells in
/// [`ANALYSIS_SCHEMAS`] order.
pub fn analysis_rows(report: &analysis::Report) -> [Vec<Vec<Cell>>; ANALYSIS_TABLE_COUNT] {
    let mut insights = objects(&report.insights);
    for finding in &mut insights {
        if let Some(object) = finding.as_object_mut() {
            let range = object.remove("time_range_us").unwrap_or(Value::Null);
            object.insert("start_us".into(), range.get(0).cloned().unwrap_or_default());
            object.insert("end_us".into(), range.get(1).cloned().unwrap_or_default());
        }
    }
    let mut groups = objects(&report.collectives.groups);
    for group in &mut groups {
        if let Some(object) = group.as_object_mut() {
            let busbw = object.remove("bus_bandwidth_gbps").unwrap_or(Value::Null);
            for (i, name) in [
                "busbw_min_gbps",
                "busbw_p50_gbps",
                "busbw_p90_gbps",
                "busbw_max_gbps",
            ]
            .into_iter()
            .enumerate()
            {
                object.insert(name.into(), busbw.get(i).cloned().unwrap_or_default());
            }
            if let Some(Value::Bool(spans)) = object.get("inter_node") {
                let spans = i64::from(*spans);
                object.insert("inter_node".into(), spans.into());
            }
        }
    }
    let mut all_to_all = Vec::new();
    for a in &report.collectives.all_to_all {
        for (i, row) in a.bytes.iter().enumerate() {
            for (j, bytes) in row.iter().enumerate() {
                all_to_all.push(serde_json::json!({
                    "process_group": a.process_group,
                    "collective": a.collective,
                    "src_rank": a.ranks[i],
                    "dst_rank": a.ranks[j],
                    "bytes": bytes,
                    "instances": a.instances,
                }));
            }
        }
    }
    let roofline = roofline_objects(report);
    let sources = [
        report
            .temporal_breakdown
            .as_ref()
            .map(|t| objects(&t.ranks))
            .unwrap_or_default(),
        objects(&report.kernel_breakdown.kernels),
        objects(&report.steps),
        objects(&report.collectives.instances),
        groups,
        objects(&report.collectives.per_rank),
        all_to_all,
        objects(&report.utilization),
        insights,
        roofline.ops,
        roofline.kernels,
        roofline.passes,
        roofline.uncovered,
    ];
    let mut out: [Vec<Vec<Cell>>; ANALYSIS_TABLE_COUNT] = Default::default();
    for ((rows, objects), schema) in out.iter_mut().zip(sources).zip(ANALYSIS_SCHEMAS) {
        *rows = objects
            .iter()
            .map(|object| {
                schema
                    .iter()
                    .map(|column| cell(object.get(column.name), column.kind))
                    .collect()
            })
            .collect();
    }
    out
}

/// The roofline tables' rows, flattened over the analyzed ranks.
#[derive(Default)]
struct RooflineObjects {
    ops: Vec<Value>,
    kernels: Vec<Value>,
    passes: Vec<Value>,
    uncovered: Vec<Value>,
}

/// Inserts `fields` into `object` (a serde object; anything else stays as it is).
fn extend(mut object: Value, fields: impl IntoIterator<Item = (&'static str, Value)>) -> Value {
    if let Some(map) = object.as_object_mut() {
        for (name, value) in fields {
            map.insert(name.into(), value);
        }
    }
    object
}

/// The roofline rows of every analyzed rank, flattened: the rank, the device and the
/// row's position on each row, the means of the per-call spreads as
/// `kernel_time_mean_us`, `tflops_per_sec_mean` and `tb_per_sec_mean`, the peak and the
/// engine split as columns; each row's kernels and passes, and the uncovered operators.
fn roofline_objects(report: &analysis::Report) -> RooflineObjects {
    let mut out = RooflineObjects::default();
    for table in report.per_rank.iter().filter_map(|r| r.roofline.as_ref()) {
        let rank = Value::from(table.rank);
        for (index, (row, op)) in objects(&table.ops).into_iter().zip(&table.ops).enumerate() {
            let at = [
                ("rank", rank.clone()),
                ("op_index", Value::from(index as i64)),
            ];
            let (peak_spec, peak_tflops) = op
                .peak
                .as_ref()
                .map_or((Value::Null, Value::Null), |(spec, tflops)| {
                    (Value::from(spec.as_str()), Value::from(*tflops))
                });
            let engines = op.engines.as_ref();
            out.ops.push(extend(
                row,
                at.clone().into_iter().chain([
                    (
                        "device",
                        table.device.clone().map_or(Value::Null, Value::from),
                    ),
                    (
                        "kernel_time_mean_us",
                        Value::from(op.kernel_time_per_call_us.mean),
                    ),
                    ("tflops_per_sec_mean", Value::from(op.tflops_per_sec.mean)),
                    ("tb_per_sec_mean", Value::from(op.tb_per_sec.mean)),
                    ("peak_spec", peak_spec),
                    ("peak_tflops", peak_tflops),
                    (
                        "should_bind",
                        engines
                            .and_then(|e| e.should_bind.clone())
                            .map_or(Value::Null, Value::from),
                    ),
                    (
                        "busiest",
                        engines.map_or(Value::Null, |e| Value::from(e.busiest.as_str())),
                    ),
                    (
                        "engines",
                        engines.map_or(Value::Null, |e| {
                            serde_json::to_value(&e.engines).unwrap_or(Value::Null)
                        }),
                    ),
                ]),
            ));
            for kernel in &op.kernels {
                out.kernels.push(serde_json::json!({
                    "rank": table.rank,
                    "op_index": index,
                    "name": kernel.name,
                    "count": kernel.count,
                    "total_us": kernel.total_us,
                    "dur_mean_us": kernel.dur_us.mean,
                    "dur_median_us": kernel.dur_us.median,
                    "dur_min_us": kernel.dur_us.min,
                    "dur_max_us": kernel.dur_us.max,
                }));
            }
            for pass in op.passes.iter().flatten() {
                let object = serde_json::to_value(pass).unwrap_or(Value::Null);
                out.passes.push(extend(
                    object,
                    at.clone()
                        .into_iter()
                        .chain([("graph", Value::from(op.name.as_str()))]),
                ));
            }
        }
        for op in objects(&table.uncovered) {
            out.uncovered.push(extend(op, [("rank", rank.clone())]));
        }
    }
    out
}

fn cell(value: Option<&Value>, kind: Kind) -> Cell {
    let value = value.filter(|v| !v.is_null());
    match kind {
        Kind::Int => Cell::Int(value.and_then(Value::as_i64)),
        Kind::Float => Cell::Float(value.and_then(Value::as_f64)),
        Kind::Text => Cell::Text(value.map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })),
    }
}
