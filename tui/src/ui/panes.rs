//! AWS neuron-top's panes: NeuronCore utilization, vCPU, memory summary, memory details.

use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

use super::format::{bar, format_bytes, sparkline};
use crate::app::{App, TabView, Units};

pub(super) fn block(title: String) -> Block<'static> {
    Block::default().borders(Borders::ALL).title(Span::styled(
        title,
        Style::default().add_modifier(Modifier::BOLD),
    ))
}

/// Color of a utilization bar: green from 70 %, yellow from 30 %, red below — an idle
/// accelerator is what a user should notice.
fn util_color(percent: f64) -> Color {
    if percent >= 70.0 {
        Color::Green
    } else if percent >= 30.0 {
        Color::Yellow
    } else {
        Color::Red
    }
}

pub(super) fn utilization_ui(frame: &mut Frame<'_>, area: Rect, app: &App, view: &TabView) {
    let version = if view.core_version.is_empty() {
        String::new()
    } else {
        format!(" {}", view.core_version)
    };
    let title = format!(" NeuronCore{version} Utilization ");
    let inner_w = area.width.saturating_sub(2) as usize;
    let inner_h = area.height.saturating_sub(2) as usize;
    let label_w = view
        .cores
        .iter()
        .map(|c| c.label.chars().count())
        .max()
        .unwrap_or(3);
    let mut lines = Vec::new();
    if view.cores.is_empty() {
        lines.push(Line::from(if view.not_running > 0 {
            "no runtime running: each tab keeps its last figures"
        } else {
            "no NeuronCore counters in the reports"
        }));
    }
    let shown = if view.cores.len() > inner_h {
        inner_h.saturating_sub(1)
    } else {
        view.cores.len()
    };
    let extra_w = view
        .cores
        .iter()
        .map(|c| physical_text(c).chars().count())
        .max()
        .unwrap_or(0);
    for core in view.cores.iter().take(shown) {
        let value = match app.units {
            Units::Percent => format!("{:>6.1}%", core.utilization),
            Units::Tflops => match core.flops {
                Some(f) => format!("{:>6.1}TF", f / 1e12),
                None => format!("{:>8}", "-"),
            },
        };
        // The line: label, bar, value, then the physical cores at LNC=2 (`85/90%`) when
        // the bar can stay 10 cells wide, then the history when 20 cells are left.
        let fixed = label_w + 2 + 8;
        let mut avail = inner_w.saturating_sub(fixed);
        let extra = format!("{:>extra_w$}", physical_text(core));
        let extra = if !extra.trim().is_empty() && avail >= extra.chars().count() + 10 {
            avail -= extra.chars().count();
            extra
        } else {
            String::new()
        };
        let (bar_w, spark_w) = if avail >= 20 {
            let bar_w = (avail * 2 / 5).clamp(10, 40);
            (bar_w, avail - bar_w - 1)
        } else {
            (avail.min(40), 0)
        };
        let mut spans = vec![
            Span::raw(format!("{:<label_w$} ", core.label)),
            Span::styled(
                bar(core.utilization, bar_w),
                Style::default().fg(util_color(core.utilization)),
            ),
            Span::raw(format!(" {value:>8}")),
            Span::styled(extra, Style::default().fg(Color::DarkGray)),
        ];
        if spark_w > 0 {
            spans.push(Span::styled(
                format!(" {}", sparkline(&core.history, 100.0, spark_w)),
                Style::default().fg(Color::Cyan),
            ));
        }
        lines.push(Line::from(spans));
    }
    if shown < view.cores.len() {
        lines.push(Line::from(format!(
            "… {} more cores",
            view.cores.len() - shown
        )));
    }
    // On "all", runtimes that exited or finished are left out; the last line says so.
    if view.not_running > 0 && !view.cores.is_empty() && lines.len() < inner_h {
        lines.push(Line::styled(
            format!("{} exited/finished not shown", view.not_running),
            Style::default().fg(Color::DarkGray),
        ));
    }
    frame.render_widget(Paragraph::new(lines).block(block(title)), area);
}

/// The physical cores' utilization of a logical core, ` 85/90%`, or empty.
fn physical_text(core: &crate::app::CoreRow) -> String {
    if core.physical.is_empty() {
        return String::new();
    }
    let pcts: Vec<String> = core
        .physical
        .iter()
        .map(|(_, p)| format!("{p:.0}"))
        .collect();
    format!(" {}%", pcts.join("/"))
}

pub(super) fn vcpu_ui(frame: &mut Frame<'_>, area: Rect, view: &TabView) {
    let mut lines = Vec::new();
    match view.runtime_vcpu {
        Some((user, system)) => lines.push(Line::from(format!(
            "runtime user {user:>5.1}% sys {system:>5.1}%"
        ))),
        None => lines.push(Line::from("runtime -")),
    }
    match &view.system_vcpu {
        Some(c) => lines.push(Line::from(format!(
            "system  user {:>5.1}% sys {:>5.1}%",
            c.user, c.system
        ))),
        None => lines.push(Line::from("system  -")),
    }
    frame.render_widget(
        Paragraph::new(lines).block(block(" vCPU Utilization ".into())),
        area,
    );
}

pub(super) fn memory_summary_ui(frame: &mut Frame<'_>, area: Rect, view: &TabView) {
    let inner_w = area.width.saturating_sub(2) as usize;
    let col = inner_w / 2;
    // Two columns of "label value" with a space between them; labels are cut to fit.
    let val_w = 8usize;
    let label_w = col.saturating_sub(val_w + 2).clamp(1, 11);
    let cell = |label: &str, bytes: u64| {
        let label: String = label.chars().take(label_w).collect();
        format!("{label:<label_w$} {:>val_w$} ", format_bytes(bytes))
    };
    let mut lines = Vec::new();
    if !view.has_memory {
        lines.push(Line::from("no memory report"));
    } else {
        let head = Style::default().add_modifier(Modifier::BOLD);
        lines.push(Line::from(vec![
            Span::styled(format!("{:<col$}", cell("Host", view.host_total)), head),
            Span::styled(cell("Device", view.device_total), head),
        ]));
        let host = view.host.entries();
        let device = view.device.entries();
        for (i, (dl, db)) in device.into_iter().enumerate() {
            let left = host.get(i).map(|(l, b)| cell(l, *b)).unwrap_or_default();
            lines.push(Line::from(format!("{left:<col$}{}", cell(dl, db))));
        }
    }
    frame.render_widget(
        Paragraph::new(lines).block(block(" Memory Usage Summary ".into())),
        area,
    );
}

pub(super) fn memory_tree_ui(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let nodes = app.tree_nodes();
    let inner_h = area.height.saturating_sub(2) as usize;
    let inner_w = area.width.saturating_sub(2) as usize;
    let cursor = app.tree_cursor.min(nodes.len().saturating_sub(1));
    let first = cursor.saturating_sub(inner_h.saturating_sub(1));
    let mut lines = Vec::new();
    for (i, node) in nodes.iter().enumerate().skip(first).take(inner_h) {
        let marker = match (node.has_children, node.expanded) {
            (true, true) => "▾ ",
            (true, false) => "▸ ",
            _ => "  ",
        };
        let left = format!("{}{marker}{}", "  ".repeat(node.depth), node.label);
        let right = node.bytes.map(format_bytes).unwrap_or_default();
        let pad = inner_w.saturating_sub(left.chars().count() + right.chars().count());
        let text = format!("{left}{}{right}", " ".repeat(pad));
        let style = if i == cursor {
            Style::default().add_modifier(Modifier::REVERSED)
        } else {
            Style::default()
        };
        lines.push(Line::from(Span::styled(text, style)));
    }
    if nodes.is_empty() {
        lines.push(Line::from("no memory details"));
    }
    frame.render_widget(
        Paragraph::new(lines).block(block(" Memory Usage Details ".into())),
        area,
    );
}
