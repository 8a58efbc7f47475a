//! neuronprof's panes: engines with history, HBM history, collectives, top operators,
//! execution latency and dropped records.

use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Sparkline};
use ratatui::Frame;

use super::format::{
    fit, fit_ranked, format_bytes, format_percent, format_rate, format_seconds, short_tag,
    sparkline, truncate,
};
use super::panes::block;
use crate::app::{App, OperatorsRoofline, TabView};
use crate::roofline::{Bound, OpRoofline};

const NO_EXTENSION: &str = "not in these reports (neuronprof extension)";

pub(super) fn engines_ui(frame: &mut Frame<'_>, area: Rect, view: &TabView) {
    let inner_w = area.width.saturating_sub(2) as usize;
    let inner_h = area.height.saturating_sub(2) as usize;
    let mut lines = Vec::new();
    if !view.has_extension {
        lines.push(Line::from(NO_EXTENSION));
    } else if view.engines.is_empty() {
        lines.push(Line::from("no engine activity reported"));
    }
    let label_w = view
        .engines
        .iter()
        .map(|e| e.label.chars().count())
        .max()
        .unwrap_or(8);
    let spark_w = inner_w.saturating_sub(label_w + 9);
    let shown = if view.engines.len() > inner_h {
        inner_h.saturating_sub(1)
    } else {
        view.engines.len()
    };
    for e in view.engines.iter().take(shown) {
        lines.push(Line::from(vec![
            Span::raw(format!("{:<label_w$} {:>6.1}% ", e.label, e.utilization)),
            Span::styled(
                sparkline(&e.history, 100.0, spark_w),
                Style::default().fg(Color::Cyan),
            ),
        ]));
    }
    if shown < view.engines.len() {
        lines.push(Line::from(format!(
            "… {} more engines",
            view.engines.len() - shown
        )));
    }
    frame.render_widget(
        Paragraph::new(lines).block(block(" Engine Utilization (history) ".into())),
        area,
    );
}

pub(super) fn hbm_ui(frame: &mut Frame<'_>, area: Rect, view: &TabView) {
    // What the capacity is (the title says): the HBM of the tab's logical cores, one
    // rank's on a rank tab and every rank's on "all", not the chip's.
    let title = match view.hbm {
        Some(_) => format!(
            " HBM Usage, {} logical core{} ",
            view.hbm_cores,
            if view.hbm_cores == 1 { "" } else { "s" }
        ),
        None => " HBM Usage ".to_string(),
    };
    let outer = block(title);
    let inner = outer.inner(area);
    frame.render_widget(outer, area);
    if inner.height == 0 {
        return;
    }
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Length(1), Constraint::Min(0)])
        .split(inner);
    let summary = match view.hbm {
        Some((used, peak, capacity)) => {
            let pct = if capacity > 0 {
                format!(" ({:.1}%)", used as f64 * 100.0 / capacity as f64)
            } else {
                String::new()
            };
            let parts = [
                format!("used {}{pct}", format_bytes(used)),
                format!("of {}", format_bytes(capacity)),
                format!("peak {}", format_bytes(peak)),
            ];
            fit(&parts, inner.width as usize)
        }
        None if view.has_memory => format!(
            "device {} (no HBM capacity reported)",
            format_bytes(view.device_total)
        ),
        None => "no device memory reported".to_string(),
    };
    frame.render_widget(Paragraph::new(summary), rows[0]);
    let data: Vec<u64> = view.hbm_history.iter().map(|b| *b as u64).collect();
    let max = view
        .hbm
        .map(|(_, peak, _)| peak)
        .filter(|p| *p > 0)
        .unwrap_or_else(|| data.iter().copied().max().unwrap_or(0))
        .max(1);
    let start = data.len().saturating_sub(rows[1].width as usize);
    frame.render_widget(
        Sparkline::default()
            .data(&data[start..])
            .max(max)
            .style(Style::default().fg(Color::Magenta)),
        rows[1],
    );
}

pub(super) fn collectives_ui(frame: &mut Frame<'_>, area: Rect, view: &TabView) {
    let width = area.width.saturating_sub(2) as usize;
    let many = view.collectives.len() > 1;
    let mut lines = Vec::new();
    if !view.has_extension {
        lines.push(Line::from(NO_EXTENSION));
    } else {
        if let Some(rank) = view.waited_for_rank {
            lines.push(Line::from(Span::styled(
                format!("waiting for rank {rank}"),
                Style::default()
                    .fg(Color::Yellow)
                    .add_modifier(Modifier::BOLD),
            )));
        }
        for c in &view.collectives {
            let l = &c.latency;
            let mut parts = Vec::new();
            if many {
                parts.push((0, short_tag(&c.tag).to_string()));
            }
            parts.push((1, format!("{} done", c.completed)));
            parts.push((2, format!("p50 {}", format_seconds(l.p50))));
            parts.push((4, format!("p90 {}", format_seconds(l.p90))));
            parts.push((3, format!("p99 {}", format_seconds(l.p99))));
            parts.push((5, format!("max {}", format_seconds(l.p100))));
            lines.push(Line::from(fit_ranked(&parts, width)));
        }
        lines.push(Line::from(Span::styled(
            format!("in flight: {}", view.in_flight.len()),
            Style::default().add_modifier(Modifier::BOLD),
        )));
        for (tag, f) in &view.in_flight {
            let waiting = if f.waiting_for_ranks.is_empty() {
                String::new()
            } else {
                let ranks: Vec<String> = f.waiting_for_ranks.iter().map(u32::to_string).collect();
                format!(" waits {}", ranks.join(","))
            };
            let mut parts = Vec::new();
            if many {
                parts.push(short_tag(tag).to_string());
            }
            parts.push(format!("{}#{}", f.op, f.seq));
            parts.push(format_seconds(Some(f.age_s)));
            if !waiting.is_empty() {
                parts.push(waiting.trim_start().to_string());
            }
            parts.push(format_bytes(f.bytes));
            // PyTorch names its process groups "0", "1", …: a bare number after the
            // size would read as a count.
            parts.push(format!("pg {}", f.group));
            lines.push(Line::from(fit(&parts, width)));
        }
    }
    frame.render_widget(
        Paragraph::new(lines).block(block(" Collectives ".into())),
        area,
    );
}

pub(super) fn operators_ui(frame: &mut Frame<'_>, area: Rect, app: &App, view: &TabView) {
    if let (true, Some(roofline)) = (view.has_extension, &view.roofline) {
        operators_roofline_ui(frame, area, app, view, roofline);
        return;
    }
    let inner_w = area.width.saturating_sub(2) as usize;
    let inner_h = area.height.saturating_sub(2) as usize;
    let title = format!(" Top Operators by {} ", app.op_sort.label());
    let mut lines = Vec::new();
    if !view.has_extension {
        lines.push(Line::from(NO_EXTENSION));
    } else {
        let name_w = inner_w.saturating_sub(20).max(4);
        lines.push(Line::from(Span::styled(
            format!("{:<name_w$} {:>7} {:>11}", "operator", "calls", "device"),
            Style::default().add_modifier(Modifier::BOLD),
        )));
        if view.operators.is_empty() {
            lines.push(Line::from("none over the period"));
        }
        for op in view.operators.iter().take(inner_h.saturating_sub(1)) {
            let name: String = if op.name.chars().count() > name_w {
                let mut s: String = op.name.chars().take(name_w.saturating_sub(1)).collect();
                s.push('…');
                s
            } else {
                op.name.clone()
            };
            lines.push(Line::from(format!(
                "{name:<name_w$} {:>7} {:>11}",
                op.calls,
                format_seconds(Some(op.device_time_s))
            )));
        }
    }
    frame.render_widget(Paragraph::new(lines).block(block(title)), area);
}

/// Narrowest operator name column before a figure is dropped (calls first, then the
/// achieved throughput).
const OP_NAME_MIN: usize = 18;

/// The top operators with their roofline (replay): per operator its device time, the
/// achieved TFLOP/s (TB/s when memory-bound), % of roofline and bound (`C`/`M`); "—"
/// for an operator the model does not cover, "…" for one whose calls running in the
/// period end in a later one.
fn operators_roofline_ui(
    frame: &mut Frame<'_>,
    area: Rect,
    app: &App,
    view: &TabView,
    roofline: &OperatorsRoofline,
) {
    let inner_w = area.width.saturating_sub(2) as usize;
    let inner_h = area.height.saturating_sub(2) as usize;
    let sort = app.op_sort.label();
    let title = match &roofline.device {
        Ok(device) => {
            let long = format!(" Top Operators by {sort} · roofline vs {device} ");
            let medium = format!(" Top Operators by {sort} · vs {device} ");
            if long.chars().count() <= inner_w {
                long
            } else if medium.chars().count() <= inner_w {
                medium
            } else {
                format!(" Ops by {sort} · vs {device} ")
            }
        }
        Err(_) => format!(" Top Operators by {sort} · no roofline "),
    };
    let mut lines = Vec::new();
    if let Err(why) = &roofline.device {
        lines.push(Line::from(Span::styled(
            truncate(&format!("roofline: {why}"), inner_w),
            Style::default().fg(Color::Yellow),
        )));
    }
    // (header, width), right-aligned after the name; dropped from the end of `optional`
    // while the name column is narrower than OP_NAME_MIN.
    let (mut calls, mut achieved) = (true, true);
    let width = |calls: bool, achieved: bool| {
        8 + 9 + if calls { 7 } else { 0 } + if achieved { 11 } else { 0 }
    };
    if inner_w.saturating_sub(width(calls, achieved)) < OP_NAME_MIN {
        calls = false;
    }
    if inner_w.saturating_sub(width(calls, achieved)) < OP_NAME_MIN {
        achieved = false;
    }
    let name_w = inner_w.saturating_sub(width(calls, achieved)).max(4);
    let row = |name: &str, calls_cell: &str, device: &str, rate: &str, pct: &str| {
        let mut text = format!("{:<name_w$}", truncate(name, name_w));
        if calls {
            text.push_str(&format!(" {calls_cell:>6}"));
        }
        text.push_str(&format!(" {device:>8}"));
        if achieved {
            text.push_str(&format!(" {rate:>10}"));
        }
        text.push_str(&format!(" {pct:>7}"));
        text
    };
    lines.push(Line::from(Span::styled(
        row("operator", "calls", "device", "achieved", "%roof"),
        Style::default().add_modifier(Modifier::BOLD),
    )));
    if view.operators.is_empty() {
        lines.push(Line::from("none over the period"));
    }
    let room = inner_h.saturating_sub(lines.len());
    for op in view.operators.iter().take(room) {
        let (rate, pct) = match roofline.ops.get(&op.name) {
            Some(r) => roofline_cells(r),
            // Modeled, but none of its calls ends in this period.
            None if roofline.modeled.contains(&op.name) => ("…".to_string(), "…".to_string()),
            None => ("—".to_string(), "—".to_string()),
        };
        lines.push(Line::from(row(
            &op.name,
            &op.calls.to_string(),
            &format_seconds(Some(op.device_time_s)),
            &rate,
            &pct,
        )));
    }
    frame.render_widget(Paragraph::new(lines).block(block(title)), area);
}

/// The achieved rate (TB/s when memory-bound, else TFLOP/s) and `% C`/`% M` of one
/// operator.
fn roofline_cells(r: &OpRoofline) -> (String, String) {
    let bound = r.bound();
    let rate = match bound {
        Some(Bound::Memory) => format_rate(r.tb_per_sec() * 1e12, "B/s"),
        _ => format_rate(r.tflops_per_sec() * 1e12, "F/s"),
    };
    let letter = bound.map_or("-", Bound::letter);
    let pct = match r.roofline_pct() {
        Some(p) => format!("{} {letter}", format_percent(p)),
        None => "-".to_string(),
    };
    (rate, pct)
}

pub(super) fn latency_ui(frame: &mut Frame<'_>, area: Rect, view: &TabView) {
    let width = area.width.saturating_sub(2) as usize;
    let mut lines = Vec::new();
    if view.latencies.is_empty() {
        lines.push(Line::from("no execution stats in the reports"));
    }
    let single = view.latencies.len() == 1;
    for row in &view.latencies {
        let done = format!("{} done, {} failed", row.completed, row.failed);
        if single {
            lines.push(Line::from(done));
            for (label, p) in [("total", &row.total), ("device", &row.device)] {
                let get = |f: fn(&analysis::live::LatencyPercentiles) -> Option<f64>| {
                    format_seconds(p.as_ref().and_then(f))
                };
                let parts = [
                    (0, format!("{label:<6}")),
                    (4, format!("p0 {}", get(|p| p.p0))),
                    (1, format!("p50 {}", get(|p| p.p50))),
                    (2, format!("p99 {}", get(|p| p.p99))),
                    (3, format!("max {}", get(|p| p.p100))),
                ];
                lines.push(Line::from(fit_ranked(&parts, width)));
            }
        } else {
            let d = row.device.as_ref();
            let parts = [
                short_tag(&row.tag).to_string(),
                format!("p50 {}", format_seconds(d.and_then(|p| p.p50))),
                format!("p99 {}", format_seconds(d.and_then(|p| p.p99))),
                format!("{} done", row.completed),
                format!("{} failed", row.failed),
            ];
            lines.push(Line::from(fit(&parts, width)));
        }
    }
    if view.has_extension {
        let style = if view.dropped_records > 0 {
            Style::default().fg(Color::Red)
        } else {
            Style::default()
        };
        lines.push(Line::from(Span::styled(
            format!("dropped records: {}", view.dropped_records),
            style,
        )));
    }
    frame.render_widget(
        Paragraph::new(lines).block(block(" Execution Latency ".into())),
        area,
    );
}
