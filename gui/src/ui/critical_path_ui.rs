//! The critical-path panel: the step, the path's length and time by `bound_by` (as
//! `neuronprof critical-path` prints them), the ranks it runs through, the events with
//! most time on it (click: select the slice), what could not be placed, and the toggle
//! that dims every slice off the path (key `C`).

use std::sync::Arc;

use eframe::egui::{self, Color32};

use crate::app::Loaded;
use crate::critical::{step_count, CriticalState};
use crate::load::Analyses;
use crate::model::SliceRef;
use crate::ui::panels_ui::{pct, us};

/// Starts the computation the panel or the dimming needs (the step asked for, once the
/// analyses are loaded) and takes a finished one. Called every frame.
pub fn critical_path_update(ctx: &egui::Context, loaded: &mut Loaded, needed: bool) {
    let state = &mut loaded.critical;
    if state.poll() {
        ctx.request_repaint();
    }
    if !(needed || state.dim) {
        return;
    }
    let Some(Ok(analyses)) = &loaded.analyses else {
        return;
    };
    let steps = *state
        .steps
        .get_or_insert_with(|| step_count(&loaded.timeline));
    let instance = match state.instance {
        Some(i) if i < steps => Some(i),
        _ if steps > 0 => Some(0),
        _ => None,
    };
    let wake = ctx.clone();
    state.request(&analyses.set, &loaded.timeline, instance, move || {
        wake.request_repaint()
    });
    if state.job.is_some() {
        // Look again soon: the wake-up may come before this frame ends.
        ctx.request_repaint_after(std::time::Duration::from_millis(100));
    }
}

/// Draws the panel. Returns the slice to select when an event is clicked.
pub fn critical_path_ui(
    ui: &mut egui::Ui,
    _analyses: &Analyses,
    state: &mut CriticalState,
) -> Option<SliceRef> {
    let steps = state.steps.unwrap_or(0);
    ui.horizontal(|ui| {
        if steps == 0 {
            ui.label("window: the whole trace (no ProfilerStep# annotation)");
        } else {
            ui.label("step (instance of ProfilerStep#):");
            let mut chosen = state.instance.unwrap_or(0);
            egui::ComboBox::from_id_salt("critical-step")
                .selected_text(chosen.to_string())
                .show_ui(ui, |ui| {
                    for i in 0..steps {
                        ui.selectable_value(&mut chosen, i, i.to_string());
                    }
                });
            state.instance = Some(chosen);
        }
        if state.job.is_some() {
            ui.spinner();
            ui.label("computing the critical path…");
        }
    });
    ui.checkbox(&mut state.dim, "Dim everything off the path (C)");
    let shown = match &state.result {
        None => return None,
        Some(Err(e)) => {
            ui.colored_label(
                Color32::from_rgb(230, 80, 80),
                format!("no critical path: {e}"),
            );
            return None;
        }
        Some(Ok(p)) => Arc::clone(p),
    };
    if shown.instance != state.instance {
        ui.weak(format!(
            "showing {} until the new step is computed",
            match shown.instance {
                Some(i) => format!("step {i}"),
                None => "the whole trace".to_owned(),
            }
        ));
    }
    let path = &shown.path;
    ui.strong(format!(
        "Critical path across ranks: {} µs",
        us(path.length_us)
    ));
    ui.label(format!(
        "{} nodes · {} edges · {} slices on the path",
        path.nodes,
        path.edges,
        shown.slice_count()
    ));
    if shown.not_on_timeline > 0 {
        ui.colored_label(
            Color32::from_rgb(240, 170, 40),
            format!(
                "{} path events have no slice on the timeline",
                shown.not_on_timeline
            ),
        );
    }
    egui::Grid::new("critical-windows")
        .striped(true)
        .show(ui, |ui| {
            for t in ["rank", "window (µs)", "events"] {
                ui.strong(t);
            }
            ui.end_row();
            for w in &path.windows {
                ui.label(w.rank.to_string());
                ui.label(us(w.end_us - w.start_us));
                ui.label(w.clipped_events.to_string());
                ui.end_row();
            }
        });
    ui.add_space(6.0);
    ui.strong("Time on the path by bound_by (µs, %)");
    egui::Grid::new("critical-summary")
        .striped(true)
        .show(ui, |ui| {
            for t in ["bound by", "time", "share"] {
                ui.strong(t);
            }
            ui.end_row();
            for s in &path.summary {
                ui.label(if s.bound_by.is_empty() {
                    "(dependencies)"
                } else {
                    s.bound_by
                });
                ui.label(us(s.duration_us));
                ui.label(pct(s.percent));
                ui.end_row();
            }
        });
    if path.ranks_on_path.len() > 1 {
        let parts: Vec<String> = path
            .ranks_on_path
            .iter()
            .map(|(r, t)| format!("rank {r} {} µs", us(*t)))
            .collect();
        ui.label(format!("through {}", parts.join(", ")));
    }
    ui.add_space(6.0);
    ui.strong("Events with most time on the path (click: select)");
    let mut select = None;
    egui::Grid::new("critical-events")
        .striped(true)
        .show(ui, |ui| {
            for t in ["event", "time (µs)", "edges", "bound by"] {
                ui.strong(t);
            }
            ui.end_row();
            for top in top_events(&shown, 20) {
                let name = path.path[top.first_edge].name.as_deref().unwrap_or("");
                let short: String = name.chars().take(48).collect();
                let link = ui.link(short).on_hover_text(name);
                if link.clicked() {
                    select = shown.edge_slices[top.longest_edge];
                }
                ui.label(us(top.time_us));
                ui.label(top.edges.to_string());
                ui.label(path.path[top.first_edge].bound_by);
                ui.end_row();
            }
        });
    let s = &path.skipped;
    let notes: Vec<String> = [
        (s.event_syncs, "event syncs"),
        (s.syncs_without_host_call, "syncs outside the window"),
        (s.kernels_without_edge, "device rows without an edge"),
        (s.negative_edges, "negative edges counted as 0"),
        (s.unmatched_collectives, "collectives not on every rank"),
        (s.rows_without_launch, "device rows without a launch"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    if !notes.is_empty() {
        ui.weak(format!("not placed: {}", notes.join("; ")));
    }
    select
}

/// One event name (and class) on the path: its time and edges, and which edge of it is
/// longest (what a click selects).
struct TopEvent {
    first_edge: usize,
    longest_edge: usize,
    time_us: f64,
    edges: usize,
}

/// The `n` (name, class) pairs with most path time, most first.
fn top_events(shown: &crate::critical::PathOnTimeline, n: usize) -> Vec<TopEvent> {
    let path = &shown.path.path;
    let mut by_key: crate::model::FastMap<(&str, &str), TopEvent> = Default::default();
    for (i, e) in path.iter().enumerate() {
        let Some(name) = e.name.as_deref() else {
            continue;
        };
        let top = by_key.entry((name, e.bound_by)).or_insert(TopEvent {
            first_edge: i,
            longest_edge: i,
            time_us: 0.0,
            edges: 0,
        });
        top.time_us += e.duration_us;
        top.edges += 1;
        if e.duration_us > path[top.longest_edge].duration_us {
            top.longest_edge = i;
        }
    }
    let mut tops: Vec<TopEvent> = by_key.into_values().collect();
    tops.sort_by(|a, b| {
        b.time_us
            .total_cmp(&a.time_us)
            .then(a.first_edge.cmp(&b.first_edge))
    });
    tops.truncate(n);
    tops
}
