//! Trace diff: operator and kernel counts and total durations of two traces compared.
//!
//! HTA `TraceDiff.compare_traces` / `ops_diff` (`hta-analyses.md`, "Trace diff"): for one
//! rank and iteration(s) of each trace (default: the first of each), group rows by
//! (category, name) → count and Σ duration, sum per name (or HTA's short name), outer
//! join; `diff = test − control`; `+`, `-` or `=` by count. HTA's `TraceDiff` parses
//! without the last-step filter, and assigns iterations as everywhere else (host rows by
//! the `ProfilerStep` they start in, device rows by their launch).
//!
//! Unlike the other analyses this needs every complete event of the chosen iterations:
//! the rows of [`crate::RankTrace::rows`] plus the host operators and other host events
//! the loader keeps in [`crate::RankTrace::host_ops`] in the same streaming pass (start,
//! duration and interned name of each), so the file is not read again. Durations are
//! summed as integers (ns, or HTA's rounded µs) and turned into µs once per name.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::analyses::operators::host_ops;
use crate::classify::Mode;
use crate::error::AnalysisError;
use crate::frame::{hta_round_us, step_number, Frames};
use crate::model::TraceSet;

/// Which rows a diff compares.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceFilter {
    /// Host rows (`stream` −1).
    Cpu,
    /// Device rows (`stream` ≠ −1).
    Gpu,
    /// Both.
    #[default]
    All,
}

/// What to summarize of one trace.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct DiffOptions {
    /// The rank (default: the first).
    pub rank: Option<i64>,
    /// Iterations (default: the first `ProfilerStep`).
    pub iterations: Option<Vec<i64>>,
    /// Rows compared.
    pub device: DeviceFilter,
    /// Group by HTA's short name (template and call arguments removed).
    pub use_short_name: bool,
    /// Times: HTA's rounded µs or exact.
    pub mode: Mode,
}

impl DiffOptions {
    /// Sets the rank and iterations.
    pub fn at(mut self, rank: i64, iterations: Vec<i64>) -> Self {
        self.rank = Some(rank);
        self.iterations = Some(iterations);
        self
    }

    /// Sets [`DiffOptions::device`].
    pub fn device(mut self, device: DeviceFilter) -> Self {
        self.device = device;
        self
    }

    /// Sets [`DiffOptions::use_short_name`].
    pub fn short_names(mut self, on: bool) -> Self {
        self.use_short_name = on;
        self
    }

    /// Sets [`DiffOptions::mode`].
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }
}

/// Count and total duration of one name.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OpTotals {
    /// Occurrences.
    pub counts: u64,
    /// Σ duration, µs.
    pub total_duration_us: f64,
}

/// One trace's totals by name. JSON: `{"rank", "iterations", "ops": {name: OpTotals}}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpsSummary {
    /// The rank summarized.
    pub rank: i64,
    /// The iterations summarized.
    pub iterations: Vec<i64>,
    /// Totals by name (or short name), sorted by name.
    pub ops: BTreeMap<String, OpTotals>,
}

fn not_applicable(reason: String) -> AnalysisError {
    AnalysisError::NotApplicable {
        analysis: "trace_diff",
        reason,
    }
}

/// Summarizes one trace for a diff, from what the loader kept (no second read).
pub fn ops_summary<'t>(
    set: &'t TraceSet,
    options: &DiffOptions,
) -> Result<OpsSummary, AnalysisError> {
    let frames = Frames::build_with(set, options.mode, false);
    let rank = options
        .rank
        .or_else(|| frames.ranks.first().map(|f| f.rank()))
        .ok_or(AnalysisError::NoTraces)?;
    let frame = frames
        .rank(rank)
        .ok_or_else(|| not_applicable(format!("no rank {rank}")))?;
    let trace = frame.trace;
    let host = host_ops(trace, "trace_diff")?;
    let mut available: Vec<i64> = set
        .ranks
        .iter()
        .flat_map(|r| r.names.iter())
        .filter_map(|n| step_number(n, false))
        .collect();
    available.sort_unstable();
    available.dedup();
    let iterations = match &options.iterations {
        Some(wanted) => wanted.clone(),
        None => available.iter().take(1).copied().collect(),
    };
    if iterations.is_empty() {
        return Err(not_applicable("the trace has no ProfilerStep".into()));
    }
    if let Some(bad) = iterations.iter().find(|i| !available.contains(i)) {
        return Err(not_applicable(format!(
            "no iteration {bad} (have {available:?})"
        )));
    }
    let steps: Vec<(i64, i64, i64)> = frame
        .rows
        .iter()
        .filter_map(|r| step_number(frame.name(r), true).map(|n| (r.start_ticks, r.dur_ticks(), n)))
        .collect();
    // Device rows take their launch's iteration: HTA's rows on a stream > 0 and, in the
    // default mode, device rows on stream 0 (a PrivateUse1 device's default stream;
    // HTA takes nothing there, so a neuron trace's kernels were left out of the diff).
    let correlated = |r: &crate::frame::FrameRow| {
        let stream = frame.model_row(r).stream;
        stream > 0 || (options.mode == Mode::Default && stream == 0 && r.is_device)
    };
    let device_iteration: HashMap<u64, i64> = frame
        .rows
        .iter()
        .filter(|r| correlated(r))
        .map(|r| (frame.model_row(r).event_index, r.iteration))
        .collect();
    let rounding = options.mode == Mode::HtaCompat && trace.ts_is_float;
    // (start in the steps' unit, duration in ns or rounded µs).
    let times = |ts_rel_ns: i64, dur_ns: i64| {
        if rounding {
            let (s, e) = hta_round_us(ts_rel_ns, dur_ns);
            (s, e - s)
        } else {
            (ts_rel_ns, dur_ns)
        }
    };
    // HTA: the last step (in row order) that contains the start. When the steps do not
    // overlap at most one does, and a binary search over them sorted finds it.
    let mut sorted = steps.clone();
    sorted.sort_unstable();
    let disjoint = sorted.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0);
    let host_iteration = |start: i64| {
        if disjoint {
            let i = sorted.partition_point(|&(s, _, _)| s <= start);
            return match i.checked_sub(1).map(|i| sorted[i]) {
                Some((s, d, n)) if start < s + d => n,
                _ => -1,
            };
        }
        let mut found = -1;
        for &(s, d, n) in &steps {
            if s <= start && start < s + d {
                found = n;
            }
        }
        found
    };
    let wanted = |stream: i64| match options.device {
        DeviceFilter::Cpu => stream == -1,
        DeviceFilter::Gpu => stream != -1,
        DeviceFilter::All => true,
    };
    // Σ per name, in integer units (ns, or rounded µs), then µs.
    let mut totals: HashMap<&str, (u64, i64)> = HashMap::new();
    let mut add = |name: &'t str, dur: i64| {
        let t = totals.entry(name).or_default();
        t.0 += 1;
        t.1 += dur;
    };
    for row in &trace.rows {
        if !wanted(row.stream) {
            continue;
        }
        let (start, dur) = times(row.ts_rel_ns, row.dur_ns);
        let iteration = if let Some(&iteration) = device_iteration.get(&row.event_index) {
            iteration
        } else if row.stream < 0 || (row.stream == 0 && trace.category(row) == "cpu_op") {
            host_iteration(start)
        } else {
            -1
        };
        if iterations.contains(&iteration) {
            add(trace.name(row), dur);
        }
    }
    // Host events that are not rows have no `stream`.
    if wanted(-1) {
        let others = host
            .operators
            .iter()
            .filter(|o| !o.in_rows)
            .map(|o| (o.ts_rel_ns, o.dur_ns, o.name))
            .chain(host.spans.iter().map(|s| (s.ts_rel_ns, s.dur_ns, s.name)));
        for (ts_rel_ns, dur_ns, name) in others {
            let (start, dur) = times(ts_rel_ns, dur_ns);
            if iterations.contains(&host_iteration(start)) {
                add(host.names.get(name), dur);
            }
        }
    }
    let mut by_key: BTreeMap<String, (u64, i64)> = BTreeMap::new();
    for (name, (counts, dur)) in totals {
        let key = if options.use_short_name {
            shorten_name(name)
        } else {
            name.to_owned()
        };
        let t = by_key.entry(key).or_default();
        t.0 += counts;
        t.1 += dur;
    }
    let ops = by_key
        .into_iter()
        .map(|(name, (counts, dur))| {
            let total_duration_us = if rounding {
                dur as f64
            } else {
                dur as f64 / 1000.0
            };
            let totals = OpTotals {
                counts,
                total_duration_us,
            };
            (name, totals)
        })
        .collect();
    Ok(OpsSummary {
        rank,
        iterations,
        ops,
    })
}

/// HTA's `shorten_name`: drops template arguments `<…>`, call arguments `(…)` and the
/// return type, keeping the last word; memory kernel names are kept whole.
pub fn shorten_name(name: &str) -> String {
    let memory = ["Memcpy", "Memset", "hipMemcpy", "hipMemset", "dma"]
        .iter()
        .any(|p| name.starts_with(p));
    if memory || (!name.contains('<') && !name.contains('(')) {
        return name.to_owned();
    }
    let mut stack: Vec<char> = Vec::new();
    for c in name.replace("->", "").chars() {
        let open = match c {
            '>' => '<',
            ')' => '(',
            _ => {
                stack.push(c);
                continue;
            }
        };
        while stack.last().is_some_and(|&t| t != open) {
            stack.pop();
        }
        stack.pop();
    }
    let text: String = stack.into_iter().collect();
    text.rsplit(' ').next().unwrap_or("").to_owned()
}

/// One name in a diff.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DiffRow {
    /// The name.
    pub name: String,
    /// Count in the control trace.
    pub control_counts: u64,
    /// Count in the test trace.
    pub test_counts: u64,
    /// Σ duration in the control trace, µs.
    pub control_total_duration_us: f64,
    /// Σ duration in the test trace, µs.
    pub test_total_duration_us: f64,
    /// `test_counts − control_counts`.
    pub diff_counts: i64,
    /// `test − control` duration, µs.
    pub diff_duration_us: f64,
    /// `+`, `-` or `=` by count.
    pub counts_change_category: char,
}

/// The comparison. JSON: `{"rows": [DiffRow…]}` sorted by name.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceDiff {
    /// One row per name in either trace.
    pub rows: Vec<DiffRow>,
}

/// Names added, deleted, increased, decreased and unchanged (by count), as HTA's
/// `ops_diff`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OpsDiff {
    /// Only in the test trace.
    pub added: Vec<String>,
    /// Only in the control trace.
    pub deleted: Vec<String>,
    /// More often in the test trace.
    pub increased: Vec<String>,
    /// Less often in the test trace (but present).
    pub decreased: Vec<String>,
    /// As often in both.
    pub unchanged: Vec<String>,
}

/// Compares two summaries (HTA `compare_traces`).
pub fn compare_traces(control: &OpsSummary, test: &OpsSummary) -> TraceDiff {
    let mut names: Vec<&String> = control.ops.keys().chain(test.ops.keys()).collect();
    names.sort();
    names.dedup();
    let zero = OpTotals::default();
    let rows = names
        .into_iter()
        .map(|name| {
            let c = control.ops.get(name).unwrap_or(&zero);
            let t = test.ops.get(name).unwrap_or(&zero);
            let diff_counts = t.counts as i64 - c.counts as i64;
            DiffRow {
                name: name.clone(),
                control_counts: c.counts,
                test_counts: t.counts,
                control_total_duration_us: c.total_duration_us,
                test_total_duration_us: t.total_duration_us,
                diff_counts,
                diff_duration_us: t.total_duration_us - c.total_duration_us,
                counts_change_category: match diff_counts {
                    d if d > 0 => '+',
                    d if d < 0 => '-',
                    _ => '=',
                },
            }
        })
        .collect();
    TraceDiff { rows }
}

impl TraceDiff {
    /// HTA's `ops_diff` lists.
    pub fn ops_diff(&self) -> OpsDiff {
        let mut out = OpsDiff::default();
        for r in &self.rows {
            let name = r.name.clone();
            if r.control_counts == 0 && r.test_counts > 0 {
                out.added.push(name.clone());
            }
            if r.control_counts > 0 && r.test_counts == 0 {
                out.deleted.push(name.clone());
            }
            if r.control_counts > 0 && r.diff_counts > 0 {
                out.increased.push(name.clone());
            }
            if r.test_counts > 0 && r.diff_counts < 0 {
                out.decreased.push(name.clone());
            }
            if r.test_counts > 0 && r.diff_counts == 0 {
                out.unchanged.push(name);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_like_hta() {
        assert_eq!(
            shorten_name("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"),
            "at::native::vectorized_elementwise_kernel"
        );
        assert_eq!(shorten_name("aten::empty"), "aten::empty");
        assert_eq!(
            shorten_name("Memcpy HtoD (Pinned -> Device)"),
            "Memcpy HtoD (Pinned -> Device)"
        );
    }
}
