//! A `key_averages`-style operator table: per operator name (and input shapes), calls,
//! total and self host time, and device time.
//!
//! Host operators (`cpu_op`, `user_annotation`) are not kept by [`crate::RankTrace`], so
//! the rank's file is read a second time, streaming, keeping 40 bytes per operator.
//! Self host time is the duration minus that of direct children on the same thread
//! (nesting by time, as the profiler records it). Device time is linked the way Kineto
//! links it: a kernel, copy or memset carries the `External id` of the operator that
//! launched it; that is the operator's self device time, and its total device time adds
//! its descendants'.

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;

use serde::Serialize;
use trace_format::{ArgValue, Event, Ident, TraceReader, TraceSink};

use crate::classify::is_device_work_category;
use crate::error::AnalysisError;
use crate::model::{Names, RankTrace};

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

/// The operator table of one rank. JSON: `{"rank", "operators": [OperatorStats…]}`, sorted
/// by device total then host total time, largest first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OperatorTable {
    /// The rank.
    pub rank: i64,
    /// One line per (name, shapes).
    pub operators: Vec<OperatorStats>,
}

#[derive(Clone, Copy)]
struct Op {
    start_ns: i64,
    end_ns: i64,
    name: u32,
    dims: u32,
    external_id: i64,
}

struct OpSink {
    names: Names,
    by_thread: HashMap<(i64, i64), Vec<Op>>,
    device_by_external_ns: HashMap<i64, i64>,
    group_by_shape: bool,
}

fn ident_key(ident: Option<&Ident<'_>>) -> i64 {
    match ident {
        Some(Ident::Num(n)) => *n,
        Some(Ident::Str(s)) => s.len() as i64 ^ i64::MIN,
        None => -1,
    }
}

impl TraceSink for OpSink {
    fn on_event(&mut self, _index: u64, event: &Event<'_>) -> ControlFlow<()> {
        let (Some(ts_ns), Some(dur_ns), Some(category)) =
            (event.ts_ns, event.dur_ns, &event.category)
        else {
            return ControlFlow::Continue(());
        };
        let category = category.normalized();
        let external_id = event
            .arg("External id")
            .and_then(|v| v.as_i64())
            .unwrap_or(-1);
        if is_device_work_category(category.as_str()) {
            if external_id >= 0 {
                *self.device_by_external_ns.entry(external_id).or_default() += dur_ns;
            }
            return ControlFlow::Continue(());
        }
        if !matches!(category.as_str(), "cpu_op" | "user_annotation") {
            return ControlFlow::Continue(());
        }
        let dims = match (self.group_by_shape, event.arg("Input Dims")) {
            (true, Some(ArgValue::Array(raw))) => self.names.intern(raw.as_str()),
            _ => self.names.intern(""),
        };
        let op = Op {
            start_ns: ts_ns,
            end_ns: ts_ns + dur_ns,
            name: self.names.intern(event.name()),
            dims,
            external_id,
        };
        let thread = (ident_key(event.pid.as_ref()), ident_key(event.tid.as_ref()));
        self.by_thread.entry(thread).or_default().push(op);
        ControlFlow::Continue(())
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

/// Builds the operator table of one rank; `group_by_shape` splits names by `Input Dims`.
pub fn operator_table(
    trace: &RankTrace,
    group_by_shape: bool,
) -> Result<OperatorTable, AnalysisError> {
    let mut sink = OpSink {
        names: Names::default(),
        by_thread: HashMap::new(),
        device_by_external_ns: HashMap::new(),
        group_by_shape,
    };
    TraceReader::open(&trace.path)
        .read(&mut sink)
        .map_err(|source| AnalysisError::Read {
            path: trace.path.clone(),
            source: Box::new(source),
        })?;
    let mut totals: BTreeMap<(u32, u32), Totals> = BTreeMap::new();
    for ops in sink.by_thread.values_mut() {
        ops.sort_by_key(|o| (o.start_ns, std::cmp::Reverse(o.end_ns)));
        // Per op: children time and device total, accumulated through a nesting stack.
        let n = ops.len();
        let mut child_ns = vec![0i64; n];
        let mut device_total = vec![0i64; n];
        let mut stack: Vec<usize> = Vec::new();
        let device_self = |o: &Op| {
            if o.external_id >= 0 {
                sink.device_by_external_ns
                    .get(&o.external_id)
                    .copied()
                    .unwrap_or(0)
            } else {
                0
            }
        };
        let finish = |i: usize, stack: &[usize], child_ns: &mut [i64], device_total: &mut [i64]| {
            device_total[i] += device_self(&ops[i]);
            if let Some(&parent) = stack.last() {
                child_ns[parent] += ops[i].end_ns - ops[i].start_ns;
                device_total[parent] += device_total[i];
            }
        };
        for i in 0..n {
            while let Some(&top) = stack.last() {
                if ops[i].start_ns >= ops[top].end_ns {
                    stack.pop();
                    finish(top, &stack, &mut child_ns, &mut device_total);
                } else {
                    break;
                }
            }
            stack.push(i);
        }
        while let Some(top) = stack.pop() {
            finish(top, &stack, &mut child_ns, &mut device_total);
        }
        for (i, o) in ops.iter().enumerate() {
            let t = totals.entry((o.name, o.dims)).or_default();
            t.calls += 1;
            t.cpu_total_ns += o.end_ns - o.start_ns;
            t.cpu_self_ns += o.end_ns - o.start_ns - child_ns[i];
            t.device_self_ns += device_self(o);
            t.device_total_ns += device_total[i];
        }
    }
    let us = |ns: i64| ns as f64 / 1000.0;
    let mut operators: Vec<OperatorStats> = totals
        .into_iter()
        .map(|((name, dims), t)| OperatorStats {
            name: sink.names.get(name).to_owned(),
            input_dims: sink.names.get(dims).to_owned(),
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
    });
    Ok(OperatorTable {
        rank: trace.rank,
        operators,
    })
}
