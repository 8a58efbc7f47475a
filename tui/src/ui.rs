//! Drawing: a pure function of the state ([`draw`]); nothing here changes the state.
//!
//! Layout: a title bar, the panes, a status line (input error, filter being typed, or
//! key hints) and the tab bar. A terminal of at least [`WIDE_WIDTH`]×[`WIDE_HEIGHT`]
//! shows every pane at once; a smaller one (80×24 and up) shows one view at a time
//! (`Tab` switches: overview, device, activity).

mod format;
mod ours;
mod panes;

use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Tabs};
use ratatui::Frame;

use crate::app::{App, CoreSort, TabView, Units, View};

pub use format::{format_bytes, format_seconds};

/// Width from which every pane is shown at once.
pub const WIDE_WIDTH: u16 = 120;
/// Height from which every pane is shown at once.
pub const WIDE_HEIGHT: u16 = 36;

/// Draws the whole screen for `app`.
pub fn draw(frame: &mut Frame<'_>, app: &App) {
    let area = frame.area();
    if area.height < 4 || area.width < 20 {
        let text = Paragraph::new("neuron-top: terminal too small");
        frame.render_widget(text, area);
        return;
    }
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(1),
            Constraint::Min(1),
            Constraint::Length(1),
            Constraint::Length(1),
        ])
        .split(area);
    title_ui(frame, rows[0], app);
    let body = rows[1];
    if app.runtimes.is_empty() {
        let waiting = format!("waiting for reports from {} …", app.source_label);
        let mut lines = vec![Line::from(waiting)];
        if let Some(note) = &app.input_ended {
            lines.push(Line::from(format!("input ended: {note}")));
        }
        frame.render_widget(
            Paragraph::new(lines).block(Block::default().borders(Borders::ALL)),
            body,
        );
    } else {
        let history_len = body.width as usize;
        let view = app.tab_view(history_len);
        if area.width >= WIDE_WIDTH && area.height >= WIDE_HEIGHT {
            wide_ui(frame, body, app, &view);
        } else {
            narrow_ui(frame, body, app, &view);
        }
    }
    status_ui(frame, rows[2], app);
    tabs_ui(frame, rows[3], app);
    if app.help {
        help_ui(frame, area);
    }
}

fn wide_ui(frame: &mut Frame<'_>, area: Rect, app: &App, view: &TabView) {
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Percentage(42),
            Constraint::Percentage(28),
            Constraint::Percentage(30),
        ])
        .split(area);
    let top = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([
            Constraint::Percentage(32),
            Constraint::Percentage(36),
            Constraint::Percentage(32),
        ])
        .split(rows[0]);
    panes::utilization_ui(frame, top[0], app, view);
    let mid = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Length(4), Constraint::Min(3)])
        .split(top[1]);
    panes::vcpu_ui(frame, mid[0], view);
    panes::memory_summary_ui(frame, mid[1], view);
    panes::memory_tree_ui(frame, top[2], app);
    let second = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Percentage(60), Constraint::Percentage(40)])
        .split(rows[1]);
    ours::engines_ui(frame, second[0], view);
    ours::hbm_ui(frame, second[1], view);
    // With the replay's roofline, the operators take more of the row for their extra
    // columns (collectives and latency drop their least wanted figures first).
    let third_split = if view.roofline.is_some() {
        [30, 44, 26]
    } else {
        [36, 32, 32]
    };
    let third = Layout::default()
        .direction(Direction::Horizontal)
        .constraints(third_split.map(Constraint::Percentage))
        .split(rows[2]);
    ours::collectives_ui(frame, third[0], view);
    ours::operators_ui(frame, third[1], app, view);
    ours::latency_ui(frame, third[2], view);
}

fn narrow_ui(frame: &mut Frame<'_>, area: Rect, app: &App, view: &TabView) {
    let cols = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Percentage(45), Constraint::Percentage(55)])
        .split(area);
    match app.view {
        View::Overview => {
            let left = Layout::default()
                .direction(Direction::Vertical)
                .constraints([Constraint::Min(3), Constraint::Length(4)])
                .split(cols[0]);
            panes::utilization_ui(frame, left[0], app, view);
            panes::vcpu_ui(frame, left[1], view);
            let right = Layout::default()
                .direction(Direction::Vertical)
                .constraints([Constraint::Length(8), Constraint::Min(3)])
                .split(cols[1]);
            panes::memory_summary_ui(frame, right[0], view);
            panes::memory_tree_ui(frame, right[1], app);
        }
        View::Device => {
            let rows = Layout::default()
                .direction(Direction::Vertical)
                .constraints([Constraint::Min(4), Constraint::Length(7)])
                .split(area);
            ours::engines_ui(frame, rows[0], view);
            ours::hbm_ui(frame, rows[1], view);
        }
        View::Activity => {
            let cols = if view.roofline.is_some() {
                Layout::default()
                    .direction(Direction::Horizontal)
                    .constraints([Constraint::Percentage(36), Constraint::Percentage(64)])
                    .split(area)
            } else {
                cols
            };
            let left = Layout::default()
                .direction(Direction::Vertical)
                .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
                .split(cols[0]);
            ours::collectives_ui(frame, left[0], view);
            ours::latency_ui(frame, left[1], view);
            ours::operators_ui(frame, cols[1], app, view);
        }
    }
}

fn title_ui(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let mut spans = vec![Span::styled(
        " neuron-top ",
        Style::default().add_modifier(Modifier::BOLD | Modifier::REVERSED),
    )];
    let mut text = String::new();
    if let Some(i) = &app.instance {
        if !i.instance_type.is_empty() || !i.instance_id.is_empty() {
            text.push_str(&format!(" {} {} │", i.instance_type, i.instance_id));
        }
    }
    text.push_str(&format!(
        " {} │ reports {}",
        app.source_label, app.documents_applied
    ));
    if area.width < WIDE_WIDTH {
        text.push_str(&format!(" │ {}", app.view.label()));
    }
    if let Some(r) = &app.replay {
        let t = r.times_s.get(r.index).copied().unwrap_or(0.0);
        let state = if r.playing { "▶" } else { "⏸" };
        spans.push(Span::styled(
            format!(
                " {state} {}/{} t={}",
                r.index + 1,
                r.documents.len(),
                format_seconds(Some(t))
            ),
            Style::default().fg(Color::Green),
        ));
    }
    if app.units == Units::Tflops {
        spans.push(Span::styled(" TFLOPS", Style::default().fg(Color::Cyan)));
    }
    if app.core_sort == CoreSort::Utilization {
        spans.push(Span::styled(
            " cores:busiest",
            Style::default().fg(Color::Cyan),
        ));
    }
    if !app.filter.is_empty() {
        spans.push(Span::styled(
            format!(" filter:{}", app.filter),
            Style::default().fg(Color::Yellow),
        ));
    }
    if app.frozen {
        spans.push(Span::styled(
            format!(" FROZEN ({} queued)", app.queued.len()),
            Style::default()
                .fg(Color::Black)
                .bg(Color::Yellow)
                .add_modifier(Modifier::BOLD),
        ));
    }
    // Flags first: the information after them is what a narrow terminal cuts.
    spans.push(Span::raw(text));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn status_ui(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let line = if let Some(input) = &app.filter_input {
        Line::from(vec![
            Span::styled("filter: ", Style::default().fg(Color::Yellow)),
            Span::raw(format!("{input}█")),
            Span::styled(
                "  Enter apply, Esc clear",
                Style::default().fg(Color::DarkGray),
            ),
        ])
    } else if let Some(err) = &app.last_error {
        Line::from(Span::styled(
            format!("error #{}: {err}", app.errors),
            Style::default().fg(Color::Red),
        ))
    } else if let Some(note) = &app.input_ended {
        Line::from(Span::styled(
            format!("input ended: {note}"),
            Style::default().fg(Color::Yellow),
        ))
    } else if app.replay.is_some() {
        Line::from(Span::styled(
            "←/→ step  space play  Home/End  ? help  q quit",
            Style::default().fg(Color::DarkGray),
        ))
    } else {
        Line::from(Span::styled(
            "? help  q quit  f freeze  / filter  F %/TFLOPS  Tab view  a/d tab",
            Style::default().fg(Color::DarkGray),
        ))
    };
    frame.render_widget(Paragraph::new(line), area);
}

fn tabs_ui(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let titles: Vec<Line<'_>> = app
        .tab_labels()
        .into_iter()
        .enumerate()
        .map(|(i, label)| {
            let style = if label.ends_with("(exited)") {
                Style::default().fg(Color::DarkGray)
            } else {
                Style::default()
            };
            Line::from(Span::styled(format!("{}:{label}", i + 1), style))
        })
        .collect();
    let tabs = Tabs::new(titles)
        .select(app.selected)
        .highlight_style(Style::default().add_modifier(Modifier::REVERSED | Modifier::BOLD))
        .divider(" ");
    frame.render_widget(tabs, area);
}

fn help_ui(frame: &mut Frame<'_>, area: Rect) {
    let rows = crate::app::KEY_HELP.len() as u16 + 2;
    // Wide enough for the longest binding (a space, the 13-column key, its text) and
    // the borders, so no line is cut at 80 columns.
    let widest = crate::app::KEY_HELP
        .iter()
        .map(|(_, what)| 1 + 13 + what.chars().count())
        .max()
        .unwrap_or(0);
    let width = (widest as u16 + 3).min(area.width);
    let height = rows.min(area.height);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    let lines: Vec<Line<'_>> = crate::app::KEY_HELP
        .iter()
        .map(|(keys, what)| {
            Line::from(vec![
                Span::styled(format!(" {keys:<13}"), Style::default().fg(Color::Cyan)),
                Span::raw(*what),
            ])
        })
        .collect();
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(concat!(
            " neuron-top ",
            env!("CARGO_PKG_VERSION"),
            " help "
        ))),
        popup,
    );
}
