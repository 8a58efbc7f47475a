//! A `key_averages`-style operator table: per operator name (and input shapes), calls,
//! total and self host time, and device time.
//!
//! The table is built from [`crate::RankTrace::host_ops`], which the loader fills in the
//! same streaming pass as everything else (no second read of the file): per host operator
//! (`cpu_op`, `user_annotation`) 40 bytes (start, duration, `External id`, interned name
//! and `Input Dims`, thread), and the device time summed per `External id`.
//!
//! Self host time is the duration minus that of direct children on the same thread
//! (nesting by time, as the profiler records it). Device time is linked the way Kineto
//! links it: a kernel, copy or memset carries the `External id` of the operator that
//! launched it; that is the operator's self device time, and its total device time adds
//! its descendants'.
//!
//! With a step ([`OperatorOptions::step`]) only operators that start inside that
//! `ProfilerStep#N` (on any thread) are counted, with the device time they launched
//! (wherever it ran), as the other analyses assign host rows and their device work to
//! steps; self time still subtracts every child (nesting is computed over the whole
//! thread).
//!
//! JSON ([`OperatorTable`]): `{"rank": 0, "by_shape": false, "step": null, "operators":
//! [{"name", "input_dims", "calls", "cpu_total_us", "cpu_self_us", "device_self_us",
//! "device_total_us"}, …]}`, sorted by device total, then host total time, largest
//! first, then by name and shapes.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::AnalysisError;
use crate::frame::step_number;
use crate::model::{HostOp, HostOps, NameId, RankTrace};

/// One line of the table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OperatorStats {
    /// Operator name.
    pub name: String,
    /// `Input Dims` as written (empty unless grouped by shape).
    pub input_dims: String,
    /// Calls.
    pub calls: u64,
    /// Σ duration on the host, µs.
    pub cpu_total_us: f64,
    /// Σ duration minus direct children, µs.
    pub cpu_self_us: f64,
    /// Σ device time of work launched directly by this operator, µs.
    pub device_self_us: f64,
    /// Σ device time including work launched by nested operators, µs.
    pub device_total_us: f64,
}

/// The operator table of one rank. JSON: `{"rank", "by_shape", "step", "operators":
/// [OperatorStats…]}`, sorted by device total then host total time, largest first (ties
/// by name, then shapes).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OperatorTable {
    /// The rank.
    pub rank: i64,
    /// Whether lines are split by `Input Dims`
    /// (`key_averages(group_by_input_shape=True)`).
    pub by_shape: bool,
    /// The one `ProfilerStep#N` counted, when chosen.
    pub step: Option<i64>,
    /// One line per (name, shapes).
    pub operators: Vec<OperatorStats>,
}

/// What [`operator_table_with`] counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OperatorOptions {
    /// Split lines by `Input Dims`.
    pub by_shape: bool,
    /// Count only operators that start in `ProfilerStep#N`.
    pub step: Option<i64>,
}

impl OperatorOptions {
    /// Sets [`OperatorOptions::by_shape`].
    pub fn with_by_shape(mut self, on: bool) -> Self {
        self.by_shape = on;
        self
    }

    /// Sets [`OperatorOptions::step`].
    pub fn with_step(mut self, step: Option<i64>) -> Self {
        self.step = step;
        self
    }
}

#[derive(Default)]
struct Totals {
    calls: u64,
    cpu_total_ns: i64,
    cpu_self_ns: i64,
    device_self_ns: i64,
    device_total_ns: i64,
}

fn not_applicable(reason: String) -> AnalysisError {
    AnalysisError::NotApplicable {
        analysis: "operators",
        reason,
    }
}

/// The host operators kept by the loader, or why there are none.
pub(crate) fn host_ops<'t>(
    trace: &'t RankTrace,
    analysis: &'static str,
) -> Result<&'t HostOps, AnalysisError> {
    trace
        .host_ops
        .as_ref()
        .ok_or_else(|| AnalysisError::NotApplicable {
            analysis,
            reason: format!(
                "rank {}: host operators were not kept when {} was read \
                 (LoadOptions::with_host_ops(false))",
                trace.rank,
                trace.path.display()
            ),
        })
}

/// Builds the operator table of one rank; `group_by_shape` splits names by `Input Dims`.
pub fn operator_table(
    trace: &RankTrace,
    group_by_shape: bool,
) -> Result<OperatorTable, AnalysisError> {
    operator_table_with(
        trace,
        &OperatorOptions::default().with_by_shape(group_by_shape),
    )
}

/// Builds the operator table of one rank as `options` say.
pub fn operator_table_with(
    trace: &RankTrace,
    options: &OperatorOptions,
) -> Result<OperatorTable, AnalysisError> {
    let host = host_ops(trace, "operators")?;
    // The step's time range(s): `ProfilerStep#N` rows, as the frame's iterations use.
    let windows: Option<Vec<(i64, i64)>> = match options.step {
        None => None,
        Some(step) => {
            let windows: Vec<(i64, i64)> = trace
                .rows
                .iter()
                .filter(|r| step_number(trace.name(r), true) == Some(step))
                .map(|r| (r.ts_rel_ns, r.ts_rel_ns.saturating_add(r.dur_ns)))
                .collect();
            if windows.is_empty() {
                return Err(not_applicable(format!(
                    "rank {} has no ProfilerStep#{step}",
                    trace.rank
                )));
            }
            Some(windows)
        }
    };
    let counted = |op: &HostOp| {
        windows.as_ref().is_none_or(|w| {
            w.iter()
                .any(|&(start, end)| start <= op.ts_rel_ns && op.ts_rel_ns < end)
        })
    };
    let device_self = |op: &HostOp| {
        if op.external_id >= 0 {
            host.device_ns_by_external_id
                .get(&op.external_id)
                .copied()
                .unwrap_or(0)
        } else {
            0
        }
    };
    // Every operator, as an index into `host.operators` (4 bytes each), by thread, then
    // start, longest first (a parent before its children), then file order.
    let ops = &host.operators;
    let end = |o: &HostOp| o.ts_rel_ns + o.dur_ns;
    let mut order: Vec<u32> = (0..ops.len() as u32).collect();
    order.sort_unstable_by_key(|&i| {
        let o = &ops[i as usize];
        (o.thread, o.ts_rel_ns, std::cmp::Reverse(end(o)), i)
    });
    let no_dims = host.names.lookup("");
    let mut totals: BTreeMap<(NameId, Option<NameId>), Totals> = BTreeMap::new();
    // The operators open at the current one (its ancestors), with what their finished
    // children added: time on the host and device time including descendants'.
    struct Open {
        op: u32,
        child_ns: i64,
        device_total_ns: i64,
    }
    let mut stack: Vec<Open> = Vec::new();
    let mut finish = |done: Open, stack: &mut Vec<Open>| {
        let o = &ops[done.op as usize];
        if let Some(parent) = stack.last_mut() {
            parent.child_ns += o.dur_ns;
            parent.device_total_ns += done.device_total_ns;
        }
        if counted(o) {
            let dims = (options.by_shape && Some(o.input_dims) != no_dims).then_some(o.input_dims);
            let t = totals.entry((o.name, dims)).or_default();
            t.calls += 1;
            t.cpu_total_ns += o.dur_ns;
            t.cpu_self_ns += o.dur_ns - done.child_ns;
            t.device_self_ns += device_self(o);
            t.device_total_ns += done.device_total_ns;
        }
    };
    for &i in &order {
        let o = &ops[i as usize];
        while let Some(top) = stack.last() {
            let t = &ops[top.op as usize];
            if t.thread != o.thread || o.ts_rel_ns >= end(t) {
                let done = stack.pop().expect("a top");
                finish(done, &mut stack);
            } else {
                break;
            }
        }
        stack.push(Open {
            op: i,
            child_ns: 0,
            device_total_ns: device_self(o),
        });
    }
    while let Some(done) = stack.pop() {
        finish(done, &mut stack);
    }
    let us = |ns: i64| ns as f64 / 1000.0;
    let mut operators: Vec<OperatorStats> = totals
        .into_iter()
        .map(|((name, dims), t)| OperatorStats {
            name: host.names.get(name).to_owned(),
            input_dims: dims.map_or("", |d| host.names.get(d)).to_owned(),
            calls: t.calls,
            cpu_total_us: us(t.cpu_total_ns),
            cpu_self_us: us(t.cpu_self_ns),
            device_self_us: us(t.device_self_ns),
            device_total_us: us(t.device_total_ns),
        })
        .collect();
    operators.sort_by(|a, b| {
        b.device_total_us
            .total_cmp(&a.device_total_us)
            .then(b.cpu_total_us.total_cmp(&a.cpu_total_us))
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.input_dims.cmp(&b.input_dims))
    });
    Ok(OperatorTable {
        rank: trace.rank,
        by_shape: options.by_shape,
        step: options.step,
        operators,
    })
}
