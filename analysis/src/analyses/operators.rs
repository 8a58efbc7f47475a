//! A `key_averages`-style operator table: per operator name (and input shapes), calls,
//! total and self host time, and device time — the numbers PyTorch's
//! `prof.key_averages()` gives for the same run, op for op (checked against torch itself:
//! `tests/operator_table_equals_torch_key_averages.rs`).
//!
//! The table is built from [`crate::RankTrace::host_ops`], which the loader fills in the
//! same streaming pass as everything else (no second read of the file): per host operator
//! (`cpu_op`, `user_annotation`, and host runtime/driver calls, which torch counts as CPU
//! events too) 40 bytes (start, duration, `External id`, interned name and `Input Dims`,
//! thread), and the device time summed per `External id`.
//!
//! torch's rules (`torch.autograd.profiler_util.EventList._build_tree`), followed here:
//! - the profiler's own calls and three autograd bookkeeping ops are dropped
//!   ([`FILTERED_NAMES`]); their time is their parent's self time;
//! - per thread, an event is the child of the innermost open event that it starts
//!   within and does not outlast (a partial overlap is no nesting);
//! - a child with its parent's name that is the parent's only child folds into the
//!   parent (the parent counts once, takes the child's children and device work);
//! - self host time is the duration minus the children's durations;
//! - every `ProfilerStep#N` is one line, `ProfilerStep*`.
//!
//! Device time is linked the way Kineto links it: a kernel, copy or memset carries the
//! `External id` of the operator that launched it; that is the operator's self device
//! time, and its total device time adds its descendants'. Device rows are not lines of
//! this table (torch's `key_averages` lists them with zero CPU time): the kernel table
//! has them. Python frames (`with_stack`) are not lines either, as `key_averages` leaves
//! them out by default. Not reproduced: torch keys a `record_function` range and an
//! operator of the same name apart, and it lists `[memory]` events that fall outside
//! every operator as a line of their own.
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
use crate::model::{HostOp, HostOpKind, HostOps, NameId, RankTrace};

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

/// Names torch's `_parse_kineto_results` drops before building the tree
/// (`torch.autograd.profiler_util._filter_name`): the profiler's own record-function
/// calls and three autograd bookkeeping ops. Their time stays in their parent's self time.
pub const FILTERED_NAMES: [&str; 8] = [
    "[memory]",
    "[OutOfMemory]",
    "profiler::_record_function_enter",
    "profiler::_record_function_enter_new",
    "profiler::_record_function_exit",
    "aten::is_leaf",
    "aten::output_nr",
    "aten::_version",
];

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
    // The device time an operator launched itself (a runtime call's belongs to its
    // operator, which carries the same `External id`).
    let own_device = |op: &HostOp| {
        if op.external_id >= 0 && op.kind == HostOpKind::Operator {
            host.device_ns_by_external_id
                .get(&op.external_id)
                .copied()
                .unwrap_or(0)
        } else {
            0
        }
    };
    // Every operator torch keeps, as an index into `host.operators` (4 bytes each), by
    // thread, then start, longest first (a parent before its children), then file order.
    let ops = &host.operators;
    let end = |o: &HostOp| o.ts_rel_ns + o.dur_ns;
    let filtered: Vec<Option<NameId>> = FILTERED_NAMES
        .iter()
        .map(|name| host.names.lookup(name))
        .collect();
    let mut order: Vec<u32> = (0..ops.len() as u32)
        .filter(|&i| !filtered.contains(&Some(ops[i as usize].name)))
        .collect();
    order.sort_unstable_by_key(|&i| {
        let o = &ops[i as usize];
        (o.thread, o.ts_rel_ns, std::cmp::Reverse(end(o)), i)
    });
    // The tree, as torch's `_populate_cpu_children` builds it: a parent holds a child
    // when the child starts before the parent's end and does not end after it (a
    // partial overlap is no nesting).
    const NONE: u32 = u32::MAX;
    let n = ops.len();
    let mut parent = vec![NONE; n];
    let mut child_count = vec![0u32; n];
    let mut child_ns = vec![0i64; n];
    let mut own: Vec<i64> = ops.iter().map(own_device).collect();
    let mut stack: Vec<u32> = Vec::new();
    for &i in &order {
        let o = &ops[i as usize];
        while let Some(&top) = stack.last() {
            let t = &ops[top as usize];
            if t.thread != o.thread || o.ts_rel_ns >= end(t) || end(o) > end(t) {
                stack.pop();
            } else {
                break;
            }
        }
        if let Some(&top) = stack.last() {
            parent[i as usize] = top;
            child_count[top as usize] += 1;
            child_ns[top as usize] += o.dur_ns;
        }
        stack.push(i);
    }
    // torch's `_remove_dup_nodes`: a child with its parent's name, the parent's only
    // child, folds into the parent (which takes the child's children and its device
    // work), until nothing changes. A folded operator's parent link stays, so its
    // children find the parent through it.
    let mut folded = vec![false; n];
    let resolve = |mut p: u32, folded: &[bool], parent: &[u32]| {
        while p != NONE && folded[p as usize] {
            p = parent[p as usize];
        }
        p
    };
    loop {
        let mut changed = false;
        for &i in &order {
            let i = i as usize;
            if folded[i] {
                continue;
            }
            let p = resolve(parent[i], &folded, &parent);
            if p == NONE {
                continue;
            }
            let p = p as usize;
            if ops[p].name == ops[i].name && child_count[p] == 1 {
                folded[i] = true;
                child_count[p] = child_count[i];
                child_ns[p] = child_ns[i];
                own[p] = own[i];
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    // Device time including descendants', children first (they follow their parent in
    // `order`).
    let mut device_total = vec![0i64; n];
    for &i in order.iter().rev() {
        let i = i as usize;
        if folded[i] {
            continue;
        }
        device_total[i] += own[i];
        let p = resolve(parent[i], &folded, &parent);
        if p != NONE {
            device_total[p as usize] += device_total[i];
        }
    }
    // No `Input Dims` and an empty list are one line, as torch's `str(input_shapes)`
    // makes both `[]`.
    let no_dims = [host.names.lookup(""), host.names.lookup("[]")];
    // Lines by name and shapes; every `ProfilerStep#N` is one line, `ProfilerStep*`, as
    // torch's `_rewrite_name` makes it (`None` below).
    let mut totals: BTreeMap<(Option<NameId>, Option<NameId>), Totals> = BTreeMap::new();
    for &i in &order {
        let i = i as usize;
        let o = &ops[i];
        if folded[i] || o.kind == HostOpKind::PythonFunction || !counted(o) {
            continue;
        }
        let dims =
            (options.by_shape && !no_dims.contains(&Some(o.input_dims))).then_some(o.input_dims);
        let name = (!host.names.get(o.name).starts_with("ProfilerStep#")).then_some(o.name);
        let t = totals.entry((name, dims)).or_default();
        t.calls += 1;
        t.cpu_total_ns += o.dur_ns;
        t.cpu_self_ns += o.dur_ns - child_ns[i];
        t.device_self_ns += own[i];
        t.device_total_ns += device_total[i];
    }
    let us = |ns: i64| ns as f64 / 1000.0;
    let mut operators: Vec<OperatorStats> = totals
        .into_iter()
        .map(|((name, dims), t)| OperatorStats {
            name: name
                .map_or("ProfilerStep*", |n| host.names.get(n))
                .to_owned(),
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
