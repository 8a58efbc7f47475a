//! Drawing: the timeline canvas, the details below it and the analysis panels.

pub mod critical_path_ui;
pub mod details_ui;
pub mod panels_ui;
pub mod roofline_ui;
pub mod timeline_ui;

use eframe::egui;

/// The keys, shown by `?`.
pub const KEYS: &[(&str, &str)] = &[
    ("W / S", "zoom in / out (at the mouse)"),
    ("A / D", "pan left / right"),
    ("Ctrl + wheel", "zoom at the cursor"),
    ("wheel, Shift + wheel", "scroll tracks, pan"),
    ("drag", "pan"),
    ("Shift + drag, drag on the ruler", "select a time range"),
    (
        "click",
        "select a slice; click a group header to collapse it",
    ),
    ("F", "focus the selection (or show everything)"),
    ("/", "search by name; Enter or N: next match"),
    ("[ / ]", "follow the selected slice's flow back / forward"),
    ("Esc", "clear the selection"),
    (
        "1 to 8",
        "analysis panels: overview, utilization, memory, collectives, kernels, operators, \
         insights, critical path",
    ),
    (
        "C",
        "dim everything off the critical path (or show it all again)",
    ),
    ("?", "this help"),
];

/// The key help.
pub fn help_ui(ui: &mut egui::Ui) {
    egui::Grid::new("keys").striped(true).show(ui, |ui| {
        for (key, what) in KEYS {
            ui.strong(*key);
            ui.label(*what);
            ui.end_row();
        }
    });
}

/// A color for a name: stable, readable under white text.
pub fn name_color(name_id: u32) -> egui::Color32 {
    let h = (name_id.wrapping_mul(2_654_435_761)) as f32 / u32::MAX as f32;
    let hsva = egui::ecolor::Hsva::new(h, 0.45, 0.62, 1.0);
    hsva.into()
}

/// Formats ns with a unit that fits (`1.234 ms`).
pub fn format_ns(ns: f64) -> String {
    let abs = ns.abs();
    if abs >= 1e9 {
        format!("{:.3} s", ns / 1e9)
    } else if abs >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else if abs >= 1e3 {
        format!("{:.3} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}
