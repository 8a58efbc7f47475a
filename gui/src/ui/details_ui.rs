//! Below the timeline: search results on the left, the selection on the right.

use std::sync::Arc;

use eframe::egui;

use crate::app::{Loaded, Selection};
use crate::model::{SliceRef, Timeline};
use crate::range::range_stats;
use crate::search::Search;
use crate::ui::format_ns;

/// Rows of search results shown.
const SHOWN_MATCHES: usize = 200;

/// Draws the search column and the selection details.
pub fn details_ui(ui: &mut egui::Ui, loaded: &mut Loaded, search: &mut Search) {
    let timeline = Arc::clone(&loaded.timeline);
    ui.columns(2, |cols| {
        search_ui(&mut cols[0], &timeline, loaded, search);
        egui::ScrollArea::vertical()
            .id_salt("selection")
            .auto_shrink(false)
            .show(&mut cols[1], |ui| selection_ui(ui, &timeline, loaded));
    });
}

fn slice_line(timeline: &Timeline, slice: SliceRef) -> String {
    let (s, e) = timeline.span(slice);
    let track = &timeline.tracks[slice.track as usize];
    let group = &timeline.groups[track.group as usize];
    format!(
        "{} · {} / {} · {} @ {}",
        timeline.slice_name(slice),
        group.label,
        track.label,
        format_ns((e - s) as f64),
        format_ns(s as f64)
    )
}

fn search_ui(ui: &mut egui::Ui, timeline: &Timeline, loaded: &mut Loaded, search: &mut Search) {
    ui.horizontal(|ui| {
        ui.label("Search");
        let field = ui.add(
            egui::TextEdit::singleline(&mut search.text)
                .hint_text("search slices by name (/)")
                .desired_width(f32::INFINITY),
        );
        if search.focus_requested {
            field.request_focus();
            search.focus_requested = false;
        }
        if field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
            if let Some(next) = search.next(timeline) {
                loaded.view.select_slice(timeline, next);
            }
        }
    });
    search.run(timeline);
    if !search.searched.trim().is_empty() {
        ui.label(format!(
            "{} matches{}",
            search.total,
            if search.total as usize > search.matches.len() {
                format!(" (first {} kept)", search.matches.len())
            } else {
                String::new()
            }
        ));
    }
    egui::ScrollArea::vertical()
        .id_salt("search results")
        .auto_shrink(false)
        .show(ui, |ui| {
            let mut chosen = None;
            for (i, slice) in search.matches.iter().take(SHOWN_MATCHES).enumerate() {
                let selected = search.current == Some(i);
                if ui
                    .selectable_label(selected, slice_line(timeline, *slice))
                    .clicked()
                {
                    chosen = Some(i);
                }
            }
            if let Some(i) = chosen {
                search.current = Some(i);
                loaded.view.select_slice(timeline, search.matches[i]);
            }
        });
}

fn selection_ui(ui: &mut egui::Ui, timeline: &Timeline, loaded: &mut Loaded) {
    let view = &mut loaded.view;
    match view.selection {
        Selection::None => {
            ui.weak(
                "Click a slice to see its arguments, flows and nesting; Shift+drag for a range.",
            );
        }
        Selection::Slice(slice) => {
            let mut go = None;
            let row = timeline.row(slice);
            let i = slice.index as usize;
            let track = &timeline.tracks[slice.track as usize];
            let group = &timeline.groups[track.group as usize];
            let (s, e) = timeline.span(slice);
            ui.heading(timeline.slice_name(slice));
            egui::Grid::new("slice facts").striped(true).show(ui, |ui| {
                let mut fact = |k: &str, v: String| {
                    ui.strong(k);
                    ui.label(v);
                    ui.end_row();
                };
                fact("category", timeline.names.get(row.category[i]).to_owned());
                fact("track", format!("{} / {}", group.label, track.label));
                fact("start", format_ns(s as f64));
                fact("duration", format_ns((e - s) as f64));
                fact("self time", format_ns(timeline.self_time_ns(slice) as f64));
                fact("event index", row.event_index[i].to_string());
            });
            crate::ui::roofline_ui::roofline_ui(
                ui,
                timeline,
                &loaded.analyses,
                &mut view.roofline,
                slice,
            );
            let args = track.slice_args(row.args_at[i]);
            if !args.is_empty() {
                ui.separator();
                ui.strong("args");
                egui::Grid::new("slice args").striped(true).show(ui, |ui| {
                    for (k, v) in args {
                        ui.label(k);
                        ui.label(v);
                        ui.end_row();
                    }
                });
            }
            let flows = timeline.flows_of(slice);
            if !flows.is_empty() {
                ui.separator();
                ui.strong("flows ([ / ] to follow)");
                for (flow, outgoing) in flows {
                    let f = &timeline.flows[flow as usize];
                    let (track, t) = if outgoing { f.to } else { f.from };
                    if let Some(other) = timeline.innermost_at(track, t) {
                        let arrow = if outgoing { "to" } else { "from" };
                        let text = format!(
                            "{arrow} {} ({})",
                            slice_line(timeline, other),
                            timeline.names.get(f.category)
                        );
                        if ui.link(text).clicked() {
                            go = Some(other);
                        }
                    }
                }
            }
            if let Some(parent) = timeline.parent(slice) {
                ui.separator();
                if ui
                    .link(format!("parent: {}", slice_line(timeline, parent)))
                    .clicked()
                {
                    go = Some(parent);
                }
            }
            let children = timeline.children(slice);
            if !children.is_empty() {
                ui.separator();
                ui.strong(format!("children ({})", children.len()));
                for child in children.iter().take(100) {
                    if ui.link(slice_line(timeline, *child)).clicked() {
                        go = Some(*child);
                    }
                }
            }
            if let Some(next) = go {
                view.select_slice(timeline, next);
            }
        }
        Selection::Range(s, e) => {
            let stale = view.range_stats.as_ref().is_none_or(|(r, _)| *r != (s, e));
            if stale && view.range_drag_from.is_none() {
                view.range_stats = Some(((s, e), range_stats(timeline, s, e)));
            }
            ui.heading(format!(
                "range {} to {} ({})",
                format_ns(s),
                format_ns(e),
                format_ns(e - s)
            ));
            let Some((_, stats)) = &view.range_stats else {
                return;
            };
            egui::Grid::new("range names").striped(true).show(ui, |ui| {
                ui.strong("name");
                ui.strong("count");
                ui.strong("total");
                ui.strong("average");
                ui.end_row();
                for line in stats.names.iter().take(300) {
                    ui.label(timeline.names.get(line.name));
                    ui.label(line.count.to_string());
                    ui.label(format_ns(line.total_ns as f64));
                    ui.label(format_ns(line.average_ns()));
                    ui.end_row();
                }
            });
            if !stats.counters.is_empty() {
                ui.separator();
                egui::Grid::new("range counters")
                    .striped(true)
                    .show(ui, |ui| {
                        ui.strong("counter");
                        ui.strong("start");
                        ui.strong("end");
                        ui.strong("change");
                        ui.end_row();
                        for c in &stats.counters {
                            ui.label(&timeline.tracks[c.track as usize].label);
                            ui.label(format!("{}", c.at_start));
                            ui.label(format!("{}", c.at_end));
                            ui.label(format!("{:+}", c.at_end - c.at_start));
                            ui.end_row();
                        }
                    });
            }
        }
    }
}
