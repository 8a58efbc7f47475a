//! The timeline canvas: ruler, group headers, track labels, slices, counters, flows.

use std::sync::Arc;

use eframe::egui::{self, pos2, vec2, Align2, Color32, FontId, Rect, Sense, Stroke};

use crate::app::{Loaded, Selection};
use crate::frame::{build_frame, hit_test, Shape, HEADER_HEIGHT, ROW_HEIGHT};
use crate::model::Timeline;
use crate::ui::{format_ns, name_color};

/// Width of the label column.
pub const LABEL_WIDTH: f32 = 230.0;
/// Height of the time ruler.
pub const RULER_HEIGHT: f32 = 24.0;

/// The outline of slices on the critical path while the rest is dimmed.
pub const CRITICAL_COLOR: Color32 = Color32::from_rgb(255, 140, 40);

/// A slice's color when it is off the critical path and the path is highlighted.
pub fn dimmed(color: Color32) -> Color32 {
    color.gamma_multiply(0.18)
}

fn hover_id() -> egui::Id {
    egui::Id::unique("neuron-viewer-hover-time")
}

/// The time under the mouse in the last frame, when it was over the tracks.
pub fn hover_time(ctx: &egui::Context) -> Option<f64> {
    ctx.data(|d| d.get_temp::<f64>(hover_id()))
}

/// Draws the timeline and handles its mouse input.
pub fn timeline_ui(ui: &mut egui::Ui, loaded: &mut Loaded) {
    let timeline = Arc::clone(&loaded.timeline);
    // With the critical path's dimming on: the path whose slices keep their color.
    let on_path = loaded
        .critical
        .dim
        .then(|| loaded.critical.shown().cloned())
        .flatten();
    let view = &mut loaded.view;
    let (rect, response) = ui.allocate_exact_size(ui.available_size(), Sense::click_and_drag());
    let tracks_rect = Rect::from_min_max(
        pos2(rect.left() + LABEL_WIDTH, rect.top() + RULER_HEIGHT),
        rect.max,
    );
    let ruler_rect = Rect::from_min_max(
        pos2(tracks_rect.left(), rect.top()),
        pos2(rect.right(), tracks_rect.top()),
    );
    let width = tracks_rect.width().max(1.0);
    view.last_width = width;
    view.last_height = tracks_rect.height();
    view.last_tracks_rect = tracks_rect;
    let max_span = timeline.end_ns.max(1) as f64;

    // Input.
    let pointer = response.hover_pos();
    let hover_t = pointer
        .filter(|p| p.x >= tracks_rect.left())
        .map(|p| view.viewport.t_of(p.x - tracks_rect.left(), width));
    ui.ctx().data_mut(|d| match hover_t {
        Some(t) => {
            d.insert_temp(hover_id(), t);
        }
        None => d.remove::<f64>(hover_id()),
    });
    if response.hovered() {
        let (scroll, zoom, shift) =
            ui.input(|i| (i.smooth_scroll_delta, i.zoom_delta(), i.modifiers.shift));
        if zoom != 1.0 {
            let around = hover_t.unwrap_or((view.viewport.start_ns + view.viewport.end_ns) / 2.0);
            view.viewport.zoom(1.0 / zoom as f64, around, max_span);
        } else if shift {
            let dx = scroll.x + scroll.y;
            view.viewport
                .pan(-(dx as f64) / width as f64 * view.viewport.span_ns());
        } else {
            view.scroll_y -= scroll.y;
            view.viewport
                .pan(-(scroll.x as f64) / width as f64 * view.viewport.span_ns());
        }
    }
    if response.drag_started() {
        let shift = ui.input(|i| i.modifiers.shift);
        let on_ruler = response
            .interact_pointer_pos()
            .is_some_and(|p| ruler_rect.contains(p));
        view.range_drag_from = None;
        if let (true, Some(p)) = (shift || on_ruler, response.interact_pointer_pos()) {
            view.range_drag_from = Some(view.viewport.t_of(p.x - tracks_rect.left(), width));
        }
    }
    if response.dragged() {
        match (view.range_drag_from, response.interact_pointer_pos()) {
            (Some(from), Some(p)) => {
                let t = view.viewport.t_of(p.x - tracks_rect.left(), width);
                view.selection = Selection::Range(from.min(t), from.max(t));
            }
            _ => {
                let delta = response.drag_delta();
                view.viewport
                    .pan(-(delta.x as f64) / width as f64 * view.viewport.span_ns());
                view.scroll_y -= delta.y;
            }
        }
    }
    if response.drag_stopped() {
        view.range_drag_from = None;
    }
    let max_scroll = (view.layout.height - tracks_rect.height() + 40.0).max(0.0);
    view.scroll_y = view.scroll_y.clamp(0.0, max_scroll);
    if response.clicked() {
        if let Some(p) = response.interact_pointer_pos() {
            click(&timeline, view, p, tracks_rect, rect);
        }
    }

    // Drawing.
    let painter = ui.painter_at(rect);
    let visuals = ui.visuals().clone();
    painter.rect_filled(rect, 0.0, visuals.extreme_bg_color);
    let to_screen_y = |y: f32| y - view.scroll_y + tracks_rect.top();
    let track_painter = painter.with_clip_rect(tracks_rect);
    let font = FontId::proportional(11.5);

    let frame = build_frame(
        &timeline,
        &view.layout,
        &view.viewport,
        width,
        view.scroll_y,
        view.scroll_y + tracks_rect.height(),
    );
    let selected = match view.selection {
        Selection::Slice(s) => Some(s),
        _ => None,
    };
    for shape in &frame.shapes {
        match *shape {
            Shape::Slice { slice, x0, x1, y } => {
                let row = timeline.row(slice);
                let name_id = row.name[slice.index as usize];
                let r = Rect::from_min_max(
                    pos2(tracks_rect.left() + x0.max(-2.0), to_screen_y(y) + 1.0),
                    pos2(
                        tracks_rect.left() + x1.min(width + 2.0),
                        to_screen_y(y) + ROW_HEIGHT - 1.0,
                    ),
                );
                let color = match &on_path {
                    Some(p) if !p.contains(slice) => dimmed(name_color(name_id)),
                    _ => name_color(name_id),
                };
                track_painter.rect_filled(r, 2.0, color);
                if on_path.as_ref().is_some_and(|p| p.contains(slice)) {
                    track_painter.rect_stroke(
                        r,
                        2.0,
                        Stroke::new(1.5, CRITICAL_COLOR),
                        egui::StrokeKind::Inside,
                    );
                }
                if Some(slice) == selected {
                    track_painter.rect_stroke(
                        r,
                        2.0,
                        Stroke::new(2.0, Color32::WHITE),
                        egui::StrokeKind::Inside,
                    );
                }
                let visible = r.intersect(tracks_rect);
                if visible.width() > 28.0 {
                    let name = timeline.names.get(name_id);
                    let text = elide(name, visible.width() - 6.0, 6.3);
                    track_painter.with_clip_rect(visible).text(
                        visible.left_center() + vec2(3.0, 0.0),
                        Align2::LEFT_CENTER,
                        text,
                        font.clone(),
                        Color32::WHITE,
                    );
                }
            }
            Shape::Merged {
                first,
                count,
                x0,
                x1,
                y,
            } => {
                let name_id = timeline.row(first).name[first.index as usize];
                let r = Rect::from_min_max(
                    pos2(tracks_rect.left() + x0, to_screen_y(y) + 1.0),
                    pos2(
                        tracks_rect.left() + x1.max(x0 + 1.0),
                        to_screen_y(y) + ROW_HEIGHT - 1.0,
                    ),
                );
                let color = name_color(name_id).gamma_multiply(0.55);
                let color = match &on_path {
                    Some(p) if !p.any_in(first, count) => dimmed(color),
                    Some(_) => CRITICAL_COLOR,
                    None => color,
                };
                track_painter.rect_filled(r, 0.0, color);
                if r.width() > 36.0 {
                    track_painter.text(
                        r.center(),
                        Align2::CENTER_CENTER,
                        format!("{count}"),
                        font.clone(),
                        Color32::from_gray(230),
                    );
                }
            }
            Shape::CounterBar {
                track,
                x0,
                x1,
                y_top,
                y_bottom,
            } => {
                let r = Rect::from_min_max(
                    pos2(tracks_rect.left() + x0, to_screen_y(y_top)),
                    pos2(tracks_rect.left() + x1, to_screen_y(y_bottom)),
                );
                track_painter.rect_filled(
                    r,
                    0.0,
                    name_color(track.wrapping_mul(7) + 3).gamma_multiply(0.9),
                );
            }
        }
    }

    // Counter peaks: a marker and the value where each counter is highest (the memory
    // timeline's peak, the deepest queue).
    for place in &view.layout.tracks {
        let track = &timeline.tracks[place.track as usize];
        if let crate::model::TrackKind::Counter { max, peak_ns, .. } = &track.kind {
            let top = to_screen_y(place.top);
            if top > rect.bottom() || top + place.height < tracks_rect.top() || *max <= 0.0 {
                continue;
            }
            let x = tracks_rect.left() + view.viewport.x_of(*peak_ns as f64, width);
            if !(tracks_rect.left()..=tracks_rect.right()).contains(&x) {
                continue;
            }
            let color = Color32::from_rgb(255, 90, 90);
            track_painter.line_segment(
                [pos2(x, top), pos2(x, top + place.height)],
                Stroke::new(1.0, color),
            );
            // Label on the side with room.
            let (at, align) = if x > tracks_rect.right() - 90.0 {
                (pos2(x - 3.0, top + 1.0), Align2::RIGHT_TOP)
            } else {
                (pos2(x + 3.0, top + 1.0), Align2::LEFT_TOP)
            };
            track_painter.text(
                at,
                align,
                format!("peak {}", format_value(*max)),
                FontId::proportional(10.5),
                color,
            );
        }
    }

    // Flows of the selected slice.
    if let Some(slice) = selected {
        for (flow, _) in timeline.flows_of(slice) {
            let flow = &timeline.flows[flow as usize];
            let point = |(track, t): (u32, i64)| {
                let place = view.layout.place_of(track)?;
                let depth = timeline
                    .innermost_at(track, t)
                    .map_or(0.0, |s| s.depth as f32);
                Some(pos2(
                    tracks_rect.left() + view.viewport.x_of(t as f64, width),
                    to_screen_y(place.top + depth * ROW_HEIGHT + ROW_HEIGHT / 2.0),
                ))
            };
            if let (Some(a), Some(b)) = (point(flow.from), point(flow.to)) {
                let stroke = Stroke::new(1.6, Color32::from_rgb(255, 220, 80));
                track_painter.line_segment([a, b], stroke);
                let dir = (b - a).normalized();
                let side = vec2(-dir.y, dir.x) * 4.0;
                track_painter.line_segment([b, b - dir * 8.0 + side], stroke);
                track_painter.line_segment([b, b - dir * 8.0 - side], stroke);
            }
        }
    }

    // Range selection.
    if let Selection::Range(s, e) = view.selection {
        let x0 = tracks_rect.left() + view.viewport.x_of(s, width);
        let x1 = tracks_rect.left() + view.viewport.x_of(e, width);
        let r = Rect::from_x_y_ranges(x0..=x1, rect.y_range());
        painter
            .with_clip_rect(Rect::from_min_max(
                ruler_rect.left_top(),
                rect.right_bottom(),
            ))
            .rect_filled(r, 0.0, Color32::from_rgba_unmultiplied(120, 170, 255, 40));
        painter.text(
            pos2(x0.max(tracks_rect.left()) + 4.0, ruler_rect.bottom() + 2.0),
            Align2::LEFT_TOP,
            format_ns(e - s),
            font.clone(),
            Color32::from_rgb(160, 200, 255),
        );
    }

    // Labels and group headers.
    let label_painter = painter.with_clip_rect(Rect::from_min_max(
        pos2(rect.left(), tracks_rect.top()),
        rect.right_bottom(),
    ));
    label_painter.rect_filled(
        Rect::from_min_max(
            pos2(rect.left(), tracks_rect.top()),
            pos2(tracks_rect.left(), rect.bottom()),
        ),
        0.0,
        visuals.panel_fill,
    );
    for place in &view.layout.tracks {
        let top = to_screen_y(place.top);
        if top > rect.bottom() || top + place.height < tracks_rect.top() {
            continue;
        }
        let track = &timeline.tracks[place.track as usize];
        label_painter.text(
            pos2(rect.left() + 14.0, top + 2.0),
            Align2::LEFT_TOP,
            elide(&track.label, LABEL_WIDTH - 20.0, 6.3),
            font.clone(),
            visuals.text_color(),
        );
        label_painter.line_segment(
            [
                pos2(rect.left(), top + place.height + 2.0),
                pos2(rect.right(), top + place.height + 2.0),
            ],
            Stroke::new(0.5, visuals.faint_bg_color),
        );
    }
    for header in &view.layout.groups {
        let top = to_screen_y(header.top);
        if top > rect.bottom() || top + HEADER_HEIGHT < tracks_rect.top() {
            continue;
        }
        let group = &timeline.groups[header.group as usize];
        let r = Rect::from_min_size(pos2(rect.left(), top), vec2(rect.width(), HEADER_HEIGHT));
        label_painter.rect_filled(r, 0.0, visuals.widgets.inactive.bg_fill);
        let arrow = if view.collapsed[header.group as usize] {
            "[+]"
        } else {
            "[-]"
        };
        label_painter.text(
            r.left_center() + vec2(4.0, 0.0),
            Align2::LEFT_CENTER,
            format!("{arrow} {}  ({} tracks)", group.label, group.tracks.len()),
            FontId::proportional(12.5),
            visuals.strong_text_color(),
        );
    }

    // Ruler.
    ruler_ui(&painter, ruler_rect, tracks_rect, view.viewport, &visuals);

    // Tooltip.
    if let (Some(p), true) = (pointer, response.hovered()) {
        if tracks_rect.contains(p) {
            let y = p.y - tracks_rect.top() + view.scroll_y;
            if let Some(slice) = hit_test(
                &timeline,
                &view.layout,
                &view.viewport,
                width,
                p.x - tracks_rect.left(),
                y,
            ) {
                let (s, e) = timeline.span(slice);
                response.clone().on_hover_text_at_pointer(format!(
                    "{}\n{}",
                    timeline.slice_name(slice),
                    format_ns((e - s) as f64)
                ));
            } else if let (Some((place, _)), Some(t)) = (view.layout.track_at(y), hover_t) {
                let track = &timeline.tracks[place.track as usize];
                if let Some(v) = track.counter_value_at(t.floor() as i64) {
                    response.clone().on_hover_text_at_pointer(format!(
                        "{}\n{}",
                        track.label,
                        format_value(v)
                    ));
                }
            }
        }
    }
}

fn click(
    timeline: &Timeline,
    view: &mut crate::app::TimelineView,
    p: egui::Pos2,
    tracks_rect: Rect,
    rect: Rect,
) {
    let y = p.y - tracks_rect.top() + view.scroll_y;
    if p.y < tracks_rect.top() {
        return;
    }
    if let Some(header) = view
        .layout
        .groups
        .iter()
        .find(|g| (g.top..g.top + HEADER_HEIGHT).contains(&y))
    {
        let group = header.group as usize;
        view.toggle_group(timeline, group);
        return;
    }
    if p.x < tracks_rect.left() || p.x > rect.right() {
        return;
    }
    let width = tracks_rect.width();
    view.selection = match hit_test(
        timeline,
        &view.layout,
        &view.viewport,
        width,
        p.x - tracks_rect.left(),
        y,
    ) {
        Some(slice) => Selection::Slice(slice),
        None => Selection::None,
    };
}

/// Cuts `text` to about `width` pixels of `char_px`-wide characters, with an ellipsis.
fn elide(text: &str, width: f32, char_px: f32) -> String {
    let fits = (width / char_px).max(0.0) as usize;
    if text.chars().count() <= fits {
        text.to_owned()
    } else if fits <= 1 {
        String::new()
    } else {
        let mut cut: String = text.chars().take(fits - 1).collect();
        cut.push('…');
        cut
    }
}

/// A round tick step (1, 2 or 5 × 10^k ns) giving ticks about `min_px` apart.
pub fn tick_step_ns(span_ns: f64, width: f32, min_px: f32) -> f64 {
    let raw = span_ns / (width / min_px).max(1.0) as f64;
    let magnitude = 10f64.powf(raw.max(1.0).log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|step| *step >= raw)
        .unwrap_or(10.0 * magnitude)
}

fn ruler_ui(
    painter: &egui::Painter,
    ruler: Rect,
    tracks: Rect,
    viewport: crate::frame::Viewport,
    visuals: &egui::Visuals,
) {
    painter.rect_filled(ruler, 0.0, visuals.panel_fill);
    let width = ruler.width();
    let step = tick_step_ns(viewport.span_ns(), width, 110.0);
    let mut t = (viewport.start_ns / step).floor() * step;
    let clip = painter.with_clip_rect(Rect::from_min_max(ruler.left_top(), tracks.right_bottom()));
    while t <= viewport.end_ns {
        let x = ruler.left() + viewport.x_of(t, width);
        clip.line_segment(
            [pos2(x, ruler.bottom() - 6.0), pos2(x, tracks.bottom())],
            Stroke::new(
                0.5,
                visuals
                    .widgets
                    .noninteractive
                    .bg_stroke
                    .color
                    .gamma_multiply(0.6),
            ),
        );
        clip.text(
            pos2(x + 3.0, ruler.top() + 3.0),
            Align2::LEFT_TOP,
            format_ns(t),
            FontId::proportional(11.0),
            visuals.text_color(),
        );
        t += step;
    }
}

/// A counter value, compact (`1.5 G`, `342`, `0.25`).
pub fn format_value(v: f64) -> String {
    let abs = v.abs();
    if abs >= 1e9 {
        format!("{:.2} G", v / 1e9)
    } else if abs >= 1e6 {
        format!("{:.2} M", v / 1e6)
    } else if abs >= 1e4 {
        format!("{:.1} k", v / 1e3)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}
