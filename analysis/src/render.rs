//! Text rendering: aligned tables, a few lines per section.

use std::fmt::Write as _;

use crate::analyses::kernel_breakdown::KernelStats;

use crate::classify::Mode;
use crate::report::Report;
use crate::stats::Describe;

mod collectives;
mod compile;
mod roofline;
mod utilization;
pub use roofline::{render_roofline, render_roofline_diff, TOP_ROOFLINE_OPS};

/// A table of text cells; numbers right-aligned, text left-aligned.
#[derive(Clone, Debug, Default)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new<S: AsRef<str>>(headers: &[S]) -> Self {
        Table {
            headers: headers.iter().map(|h| h.as_ref().to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Whether no row was added.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Renders with columns padded to their widest cell.
    pub fn render(&self) -> String {
        let columns = self.headers.len();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(columns) {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        let numeric = |i: usize| {
            self.rows.iter().all(|r| {
                r.get(i)
                    .is_some_and(|c| c == "-" || c.parse::<f64>().is_ok() || c.ends_with('%'))
            })
        };
        let align: Vec<bool> = (0..columns).map(numeric).collect();
        let mut out = String::new();
        let line = |out: &mut String, cells: &[String]| {
            let mut text = String::new();
            for (i, cell) in cells.iter().enumerate().take(columns) {
                if i > 0 {
                    text.push_str("  ");
                }
                let pad = widths[i].saturating_sub(cell.chars().count());
                if align[i] {
                    text.push_str(&" ".repeat(pad));
                    text.push_str(cell);
                } else {
                    text.push_str(cell);
                    text.push_str(&" ".repeat(pad));
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        };
        line(&mut out, &self.headers);
        for row in &self.rows {
            line(&mut out, row);
        }
        out
    }
}

fn num(v: f64) -> String {
    // `+ 0.0` turns a negative zero (the sum of nothing) into 0.
    let v = v + 0.0;
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// Bytes with a binary unit (`1.50 GiB`).
pub fn bytes(n: i64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value.abs() >= 1024.0 && unit < units.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.2} {}", units[unit])
    }
}

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), num)
}

fn describe_cells(d: &Describe) -> Vec<String> {
    d.values().iter().map(|v| opt(*v)).collect()
}

const DESCRIBE: [&str; 8] = ["count", "mean", "std", "min", "25%", "50%", "75%", "max"];

fn with_describe(first: &[&str]) -> Vec<String> {
    first
        .iter()
        .chain(DESCRIBE.iter())
        .map(|h| (*h).to_owned())
        .collect()
}

/// HTA's per-kernel table, as HTA prints it (compat mode).
fn hta_kernel_table(kernels: &[KernelStats]) -> Table {
    let mut t = Table::new(&[
        "rank", "type", "name", "sum us", "max us", "min us", "std us", "mean us",
    ]);
    for k in kernels {
        let name: String = k.name.chars().take(60).collect();
        t.row(vec![
            k.rank.to_string(),
            k.kernel_type.as_str().to_owned(),
            name,
            num(k.sum_us),
            num(k.max_us),
            num(k.min_us),
            num(k.stddev_us),
            num(k.mean_us),
        ]);
    }
    t
}

/// Kernels shown per (type, rank) in the default mode's table; the rest are summed on
/// one line (JSON has every name).
pub const TOP_KERNELS: usize = 10;

/// The default mode's per-kernel table: per (type, rank) the [`TOP_KERNELS`] names with
/// the largest total, with the statistics of their launches, then one line for the rest.
fn kernel_stats_table(kernels: &[KernelStats]) -> Table {
    let mut t = Table::new(&[
        "rank", "type", "name", "count", "total us", "mean us", "min us", "p50 us", "p99 us",
        "max us",
    ]);
    let mut groups: Vec<((&str, i64), Vec<&KernelStats>)> = Vec::new();
    for k in kernels {
        let key = (k.kernel_type.as_str(), k.rank);
        match groups.iter_mut().find(|(g, _)| *g == key) {
            Some((_, list)) => list.push(k),
            None => groups.push((key, vec![k])),
        }
    }
    for ((kernel_type, rank), mut list) in groups {
        list.sort_by(|a, b| {
            b.sum_us
                .total_cmp(&a.sum_us)
                .then_with(|| a.name.cmp(&b.name))
        });
        for k in list.iter().take(TOP_KERNELS) {
            let name: String = k.name.chars().take(60).collect();
            t.row(vec![
                rank.to_string(),
                kernel_type.to_owned(),
                name,
                k.count.to_string(),
                num(k.sum_us),
                num(k.mean_us),
                num(k.min_us),
                opt(k.p50_us),
                opt(k.p99_us),
                num(k.max_us),
            ]);
        }
        let rest = &list[list.len().min(TOP_KERNELS)..];
        if !rest.is_empty() {
            t.row(vec![
                rank.to_string(),
                kernel_type.to_owned(),
                format!("({} more names)", rest.len()),
                rest.iter().map(|k| k.count).sum::<u64>().to_string(),
                num(rest.iter().map(|k| k.sum_us).sum()),
                "-".to_owned(),
                "-".to_owned(),
                "-".to_owned(),
                "-".to_owned(),
                "-".to_owned(),
            ]);
        }
    }
    t
}

/// Renders the whole report as text sections.
pub fn render_report(report: &Report) -> String {
    let mut out = String::new();
    let device = match (report.device_activity, report.mode) {
        (true, _) => report.device_type.clone(),
        (false, Mode::Default) => format!(
            "{} (no device activity in the traces: host-side analyses only)",
            report.device_type
        ),
        (false, Mode::HtaCompat) => format!(
            "{} (HTA's label; the traces have no device activity)",
            report.device_type
        ),
    };
    let _ = writeln!(
        out,
        "ranks {}  device {device}  mode {:?}{}",
        // Runs collapsed (`[0-255]`): a fleet's header is one short line.
        crate::insights::rank_list(&report.ranks),
        report.mode,
        if report.last_step_filtered {
            "  (last ProfilerStep excluded, as HTA does)"
        } else {
            ""
        }
    );
    if !report.insights.is_empty() {
        let _ = writeln!(out, "\nInsights");
        for (i, f) in report.insights.iter().enumerate() {
            let _ = writeln!(out, "{:>2}. {}", i + 1, f.summary);
        }
    }
    for note in report.errors.iter().chain(&report.notes) {
        let _ = writeln!(out, "note: {note}");
    }
    // A CPU-only run (default mode): the host-side sections only.
    let device_sections = report.device_activity || report.mode == Mode::HtaCompat;
    if let Some(temporal) = &report.temporal_breakdown {
        let mut t = Table::new(&[
            "rank",
            "idle us",
            "compute us",
            "non-compute us",
            "kernel us",
            "idle %",
            "compute %",
            "non-compute %",
        ]);
        for r in &temporal.ranks {
            t.row(vec![
                r.rank.to_string(),
                num(r.idle_time_us),
                num(r.compute_time_us),
                num(r.non_compute_time_us),
                num(r.kernel_time_us),
                num(r.idle_time_pctg),
                num(r.compute_time_pctg),
                num(r.non_compute_time_pctg),
            ]);
        }
        section(&mut out, "Temporal breakdown", &t);
    }
    if device_sections {
        render_device_totals(&mut out, report);
    }
    for rank in &report.per_rank {
        if device_sections {
            render_rank_device(&mut out, rank);
        }
        if let Some(table) = &rank.operators {
            render_operators(&mut out, table, TOP_OPERATORS);
        }
        if let Some(table) = &rank.roofline {
            render_roofline(&mut out, table, TOP_ROOFLINE_OPS);
        }
    }
    render_tail(&mut out, report);
    out
}

/// Overlap, kernel types and kernels.
fn render_device_totals(out: &mut String, report: &Report) {
    let mut t = Table::new(&["rank", "comm us", "overlap us", "overlap %"]);
    for r in &report.comm_comp_overlap.ranks {
        t.row(vec![
            r.rank.to_string(),
            num(r.comm_time_us),
            num(r.overlap_time_us),
            opt(r.comp_comm_overlap_pctg),
        ]);
    }
    section(out, "Communication-computation overlap", &t);
    let mut t = Table::new(&["kernel type", "sum us", "%"]);
    for k in &report.kernel_breakdown.by_type {
        t.row(vec![
            k.kernel_type.clone(),
            num(k.sum_us),
            num(k.percentage),
        ]);
    }
    section(out, "Kernel types", &t);
    let t = match report.mode {
        Mode::HtaCompat => hta_kernel_table(&report.kernel_breakdown.kernels),
        Mode::Default => kernel_stats_table(&report.kernel_breakdown.kernels),
    };
    section(out, "Kernels", &t);
}

/// One rank's device sections: idle time, queue length, memory bandwidth, launches.
fn render_rank_device(out: &mut String, rank: &crate::report::RankReport) {
    {
        let mut t = Table::new(&with_describe(&["stream", "category", "idle us", "ratio"]));
        for e in &rank.idle_time.entries {
            let mut cells = vec![
                e.stream.to_string(),
                e.idle_category.as_str().to_owned(),
                num(e.idle_time_us),
                opt(e.idle_time_ratio),
            ];
            cells.extend(describe_cells(&e.interval_stats));
            t.row(cells);
        }
        section(out, &format!("Idle time, rank {}", rank.rank), &t);
        let mut t = Table::new(&with_describe(&["stream"]));
        for q in &rank.queue_length {
            let mut cells = vec![q.stream.to_string()];
            cells.extend(describe_cells(&q.queue_length));
            t.row(cells);
        }
        section(out, &format!("Queue length, rank {}", rank.rank), &t);
        let mut t = Table::new(&with_describe(&["copy kind (GB/s)"]));
        for m in &rank.memory_bw {
            let mut cells = vec![m.name.clone()];
            cells.extend(describe_cells(&m.memory_bw_gbps));
            t.row(cells);
        }
        section(out, &format!("Memory bandwidth, rank {}", rank.rank), &t);
        let s = &rank.launch_stats;
        let mut t = Table::new(&with_describe(&["us"]));
        for (label, d) in [
            ("launch call", &s.cpu_duration),
            ("device", &s.gpu_duration),
            ("launch delay", &s.launch_delay),
        ] {
            let mut cells = vec![label.to_owned()];
            cells.extend(describe_cells(d));
            t.row(cells);
        }
        section(out, &format!("Launch statistics, rank {}", rank.rank), &t);
    }
}

/// Steps, collectives, stragglers, neuron utilization.
fn render_tail(out: &mut String, report: &Report) {
    let mut t = Table::new(&[
        "rank",
        "step",
        "window",
        "dur us",
        "host window us",
        "compute us",
        "exposed comm us",
        "of which waiting for peers us",
        "memory us",
        "other device us",
        "host-bound idle us",
        "other idle us",
        "bound",
    ]);
    for s in &report.steps {
        t.row(vec![
            s.rank.to_string(),
            s.step.to_string(),
            format!("{:?}", s.window).to_lowercase(),
            num(s.dur_us),
            opt(s.host_dur_us),
            num(s.computation_us),
            num(s.communication_us),
            num(s.peer_wait_us),
            num(s.memory_us),
            num(s.other_device_us),
            num(s.host_bound_idle_us),
            num(s.other_idle_us),
            format!("{:?}", s.bound).to_lowercase(),
        ]);
    }
    if !report.steps.is_empty() {
        section(
            out,
            "Steps (split over each step's device window, else its host window)",
            &t,
        );
    }
    collectives::render_collectives(out, &report.collectives);
    if let Some(s) = &report.stragglers {
        let _ = writeln!(
            out,
            "\nPotential stragglers: {:?} (by {} on stream {})",
            s.stragglers, s.kernel, s.stream
        );
    }
    compile::render_compile(out, &report.compile);
    utilization::render_utilization(out, &report.utilization);
}

/// Operators shown per rank in the text report (the JSON has them all).
pub const TOP_OPERATORS: usize = 10;

/// The `top` operators of a table by self device time, then self host time (ties by
/// name, then shapes), as an aligned table under a title that says how many there are.
/// An empty table (no host operators) is not shown.
pub fn render_operators(
    out: &mut String,
    table: &crate::analyses::operators::OperatorTable,
    top: usize,
) {
    if table.operators.is_empty() {
        return;
    }
    let mut ops: Vec<_> = table.operators.iter().collect();
    ops.sort_by(|a, b| {
        b.device_self_us
            .total_cmp(&a.device_self_us)
            .then(b.cpu_self_us.total_cmp(&a.cpu_self_us))
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.input_dims.cmp(&b.input_dims))
    });
    let mut headers = vec!["operator"];
    if table.by_shape {
        headers.push("input dims");
    }
    headers.extend([
        "calls",
        "host total us",
        "host self us",
        "device self us",
        "device total us",
    ]);
    let mut t = Table::new(&headers);
    for o in ops.iter().take(top) {
        let mut cells = vec![shorten(&o.name, 60)];
        if table.by_shape {
            cells.push(shorten(&shapes_text(&o.input_dims), 48));
        }
        cells.extend([
            o.calls.to_string(),
            num(o.cpu_total_us),
            num(o.cpu_self_us),
            num(o.device_self_us),
            num(o.device_total_us),
        ]);
        t.row(cells);
    }
    let step = table
        .step
        .map_or_else(String::new, |s| format!(", ProfilerStep#{s}"));
    let title = format!(
        "Operators, rank {}{step} (top {} of {} by self device, then self host time)",
        table.rank,
        top.min(ops.len()),
        ops.len()
    );
    section(out, &title, &t);
}

/// An operator's `Input Dims` on one line: each input's shape, ` x ` between them
/// (`[8944, 1024] x [1024, 2816]`; a non-tensor input is `[]`, a tensor list its
/// shapes in brackets). Traces write the list pretty-printed over many lines; text
/// that is not a JSON list is shown with its whitespace collapsed.
pub fn shapes_text(input_dims: &str) -> String {
    fn one(value: &serde_json::Value) -> String {
        match value {
            serde_json::Value::Array(items) => {
                let inner: Vec<String> = items.iter().map(one).collect();
                format!("[{}]", inner.join(", "))
            }
            other => other.to_string(),
        }
    }
    match serde_json::from_str::<serde_json::Value>(input_dims) {
        Ok(serde_json::Value::Array(inputs)) => {
            let shapes: Vec<String> = inputs.iter().map(one).collect();
            shapes.join(" x ")
        }
        _ => input_dims.split_whitespace().collect::<Vec<_>>().join(" "),
    }
}

/// `text` cut to `max` characters, with `…` when cut.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

fn section(out: &mut String, title: &str, table: &Table) {
    let _ = writeln!(out, "\n{title}");
    out.push_str(&table.render());
}

/// Renders a trace diff: the counts of added, deleted, increased and decreased names,
/// then the `top` rows with the largest change in total duration.
pub fn render_diff(diff: &crate::analyses::trace_diff::TraceDiff, top: usize) -> String {
    let lists = diff.ops_diff();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} names: {} added, {} deleted, {} more often, {} less often, {} as often",
        diff.rows.len(),
        lists.added.len(),
        lists.deleted.len(),
        lists.increased.len(),
        lists.decreased.len(),
        lists.unchanged.len()
    );
    let mut rows: Vec<&crate::analyses::trace_diff::DiffRow> = diff.rows.iter().collect();
    rows.sort_by(|a, b| {
        b.diff_duration_us
            .abs()
            .total_cmp(&a.diff_duration_us.abs())
            .then_with(|| a.name.cmp(&b.name))
    });
    let mut table = Table::new(&[
        "change",
        "control calls",
        "test calls",
        "control us",
        "test us",
        "diff us",
        "name",
    ]);
    for r in rows.into_iter().take(top) {
        table.row(vec![
            r.counts_change_category.to_string(),
            r.control_counts.to_string(),
            r.test_counts.to_string(),
            format!("{:.3}", r.control_total_duration_us),
            format!("{:.3}", r.test_total_duration_us),
            format!("{:+.3}", r.diff_duration_us),
            r.name.clone(),
        ]);
    }
    out.push_str(&table.render());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_numbers_right_and_text_left() {
        let mut t = Table::new(&["name", "us"]);
        t.row(vec!["a".into(), "1".into()]);
        t.row(vec!["longer".into(), "123.50".into()]);
        assert_eq!(
            t.render(),
            "name        us\na            1\nlonger  123.50\n"
        );
    }

    #[test]
    fn operators_top_n_by_self_device_then_self_host_time() {
        use crate::analyses::operators::{OperatorStats, OperatorTable};
        let op = |name: &str, dims: &str, calls, host_self, device_self| OperatorStats {
            name: name.to_owned(),
            input_dims: dims.to_owned(),
            calls,
            cpu_total_us: host_self + 1.0,
            cpu_self_us: host_self,
            device_self_us: device_self,
            device_total_us: device_self + 2.0,
        };
        let mut table = OperatorTable {
            rank: 3,
            by_shape: false,
            step: None,
            // In the table's own order (device total, then host total), not the text's.
            operators: vec![
                op("aten::linear", "", 2, 5.0, 0.0),
                op("aten::relu", "", 4, 9.5, 1.0),
                op("aten::add", "", 1, 0.5, 1.0),
                op("aten::mm", "", 8, 1.0, 30.0),
            ],
        };
        let mut out = String::new();
        render_operators(&mut out, &table, 3);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[1],
            "Operators, rank 3 (top 3 of 4 by self device, then self host time)"
        );
        assert_eq!(
            lines[2],
            "operator    calls  host total us  host self us  device self us  device total us"
        );
        assert_eq!(
            lines[3],
            "aten::mm        8              2             1              30               32"
        );
        assert!(lines[4].starts_with("aten::relu "), "{out}");
        assert!(lines[5].starts_with("aten::add "), "{out}");
        assert_eq!(lines.len(), 6, "three operators shown: {out}");

        table.by_shape = true;
        table.step = Some(7);
        table.operators[3].input_dims = "[[2, 3], [3, 4]]".into();
        let mut out = String::new();
        render_operators(&mut out, &table, 10);
        assert!(
            out.contains("Operators, rank 3, ProfilerStep#7 (top 4 of 4 by self device"),
            "{out}"
        );
        assert!(
            out.contains("\noperator      input dims       calls  "),
            "{out}"
        );
        assert!(
            out.contains("\naten::mm      [2, 3] x [3, 4]      8  "),
            "shapes on one line: {out}"
        );
        table.operators[3].input_dims = "[\n  [\n    2,\n    3\n  ],\n  []\n]".into();
        let mut out = String::new();
        render_operators(&mut out, &table, 10);
        assert!(
            out.contains("\naten::mm      [2, 3] x []      8  "),
            "{out}"
        );

        table.operators[0].name = "x".repeat(70);
        let mut out = String::new();
        render_operators(&mut out, &table, 10);
        let cut = format!("\n{}… ", "x".repeat(59));
        assert!(
            out.contains(&cut),
            "long names are cut to 60 characters: {out}"
        );

        table.operators.clear();
        let mut out = String::new();
        render_operators(&mut out, &table, 10);
        assert!(out.is_empty(), "no section without operators");
    }

    #[test]
    fn diff_lists_largest_duration_changes_first() {
        use crate::analyses::trace_diff::{compare_traces, OpTotals, OpsSummary};
        let summary = |ops: &[(&str, u64, f64)]| OpsSummary {
            rank: 0,
            iterations: vec![1],
            ops: ops
                .iter()
                .map(|(n, c, d)| {
                    (
                        (*n).to_owned(),
                        OpTotals {
                            counts: *c,
                            total_duration_us: *d,
                        },
                    )
                })
                .collect(),
        };
        let control = summary(&[("aten::mm", 2, 10.0), ("aten::add", 1, 1.0)]);
        let test = summary(&[("aten::mm", 3, 40.0), ("aten::relu", 1, 2.0)]);
        let text = render_diff(&compare_traces(&control, &test), 10);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "3 names: 1 added, 1 deleted, 1 more often, 0 less often, 0 as often"
        );
        assert!(
            lines[2].contains("aten::mm") && lines[2].contains("+30.000"),
            "{text}"
        );
        assert!(lines[3].contains("aten::relu"), "{text}");
        assert!(
            lines[4].contains("aten::add") && lines[4].contains("-1.000"),
            "{text}"
        );
    }
}
