//! Per-operator efficiency before and after: two roofline tables (two runs, or one model
//! on two devices) matched row by row on operator name, `Input Dims`, `Input type` and
//! `Concrete Inputs` (strides may differ between runs of one model), each pair with its
//! kernel time per call and percent of roofline on both sides.

use serde::Serialize;

use super::{RankRoofline, RooflineOp};

/// One operator with one set of arguments, before and after.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RooflineChange {
    /// Operator name.
    pub name: String,
    /// The model's parameters (`M=… N=… K=…`).
    pub params: String,
    /// Calls before and after.
    pub count: (u64, u64),
    /// Mean kernel time per call before and after, µs.
    pub kernel_time_per_call_us: (f64, f64),
    /// Σ kernel time after − before, µs.
    pub kernel_time_delta_us: f64,
    /// Percent of its roofline before and after (`null` without a device).
    pub roofline_pct: (Option<f64>, Option<f64>),
    /// Mean achieved TFLOP/s before and after.
    pub tflops_per_sec: (f64, f64),
}

/// The per-operator comparison of two roofline tables.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RooflineDiff {
    /// The devices, before and after.
    pub devices: (Option<String>, Option<String>),
    /// Rows in both tables, largest change of total kernel time first.
    pub changes: Vec<RooflineChange>,
    /// Rows only before (name and params).
    pub only_before: Vec<(String, String)>,
    /// Rows only after.
    pub only_after: Vec<(String, String)>,
}

fn key(op: &RooflineOp) -> (&str, &str, &str, &str) {
    (
        &op.name,
        &op.input_dims,
        &op.input_types,
        &op.concrete_inputs,
    )
}

/// Compares `before` with `after`.
pub fn roofline_diff(before: &RankRoofline, after: &RankRoofline) -> RooflineDiff {
    let after_by_key: std::collections::HashMap<_, &RooflineOp> =
        after.ops.iter().map(|op| (key(op), op)).collect();
    let before_keys: std::collections::HashSet<_> = before.ops.iter().map(key).collect();
    let mut changes = Vec::new();
    let mut only_before = Vec::new();
    for b in &before.ops {
        let Some(a) = after_by_key.get(&key(b)) else {
            only_before.push((b.name.clone(), b.params.clone()));
            continue;
        };
        changes.push(RooflineChange {
            name: b.name.clone(),
            params: b.params.clone(),
            count: (b.count, a.count),
            kernel_time_per_call_us: (
                b.kernel_time_per_call_us.mean,
                a.kernel_time_per_call_us.mean,
            ),
            kernel_time_delta_us: a.kernel_time_us - b.kernel_time_us,
            roofline_pct: (b.roofline_pct, a.roofline_pct),
            tflops_per_sec: (b.tflops_per_sec.mean, a.tflops_per_sec.mean),
        });
    }
    let only_after = after
        .ops
        .iter()
        .filter(|op| !before_keys.contains(&key(op)))
        .map(|op| (op.name.clone(), op.params.clone()))
        .collect();
    changes.sort_by(|x, y| {
        y.kernel_time_delta_us
            .abs()
            .total_cmp(&x.kernel_time_delta_us.abs())
            .then_with(|| (&x.name, &x.params).cmp(&(&y.name, &y.params)))
    });
    RooflineDiff {
        devices: (before.device.clone(), after.device.clone()),
        changes,
        only_before,
        only_after,
    }
}
