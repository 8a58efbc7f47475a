//! The viewer's state and its top-level UI: loading, menus, panels, keyboard.

use std::path::PathBuf;
use std::sync::Arc;

use eframe::egui;

use crate::frame::{Layout, Viewport};
use crate::load::{spawn_load, Analyses, LoadJob, LoadMessage};
use crate::model::{SliceRef, Timeline};
use crate::recent::RecentFiles;
use crate::search::Search;
use crate::ui::panels_ui::PanelState;

/// What is selected on the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Selection {
    /// Nothing.
    #[default]
    None,
    /// One slice.
    Slice(SliceRef),
    /// A time range, ns since the timeline's origin.
    Range(f64, f64),
}

/// The timeline view: what is visible and selected.
#[derive(Debug)]
pub struct TimelineView {
    /// Visible time range.
    pub viewport: Viewport,
    /// Collapsed groups.
    pub collapsed: Vec<bool>,
    /// Vertical scroll, pixels from the top of the content.
    pub scroll_y: f32,
    /// Layout for `collapsed` (rebuilt when it changes).
    pub layout: Layout,
    /// What is selected.
    pub selection: Selection,
    /// Where a range drag started (ns), while dragging.
    pub range_drag_from: Option<f64>,
    /// Width of the track area in the last frame (pixels).
    pub last_width: f32,
    /// Height of the track area in the last frame (pixels).
    pub last_height: f32,
    /// Screen rectangle of the track area in the last frame.
    pub last_tracks_rect: egui::Rect,
    /// Statistics of the selected range, computed once per range.
    pub range_stats: Option<((f64, f64), crate::range::RangeStats)>,
    /// The roofline of the selected operator, looked up once per selection.
    pub roofline: Option<crate::roofline::SelectedRoofline>,
}

impl TimelineView {
    /// A view of the whole timeline with every group expanded.
    pub fn new(timeline: &Timeline) -> Self {
        let collapsed: Vec<bool> = timeline.groups.iter().map(|g| g.collapsed).collect();
        TimelineView {
            viewport: Viewport::whole(timeline),
            layout: Layout::new(timeline, &collapsed),
            collapsed,
            scroll_y: 0.0,
            selection: Selection::None,
            range_drag_from: None,
            last_width: 1000.0,
            last_height: 600.0,
            range_stats: None,
            roofline: None,
            last_tracks_rect: egui::Rect::NOTHING,
        }
    }

    /// Flips a group between collapsed and expanded.
    pub fn toggle_group(&mut self, timeline: &Timeline, group: usize) {
        if let Some(c) = self.collapsed.get_mut(group) {
            *c = !*c;
        }
        self.layout = Layout::new(timeline, &self.collapsed);
    }

    /// Shows `[start_ns, end_ns]` and scrolls `track` into view (expanding its group).
    pub fn jump_to(&mut self, timeline: &Timeline, start_ns: f64, end_ns: f64, track: Option<u32>) {
        self.viewport.focus(start_ns, end_ns);
        if let Some(track) = track {
            let group = timeline.tracks[track as usize].group as usize;
            if self.collapsed.get(group).copied().unwrap_or(false) {
                self.toggle_group(timeline, group);
            }
            if let Some(place) = self.layout.place_of(track) {
                let visible = place.top >= self.scroll_y
                    && place.top + place.height <= self.scroll_y + self.last_height;
                if !visible {
                    self.scroll_y = (place.top - 40.0).max(0.0);
                }
            }
        }
    }

    /// Selects a slice and shows it.
    pub fn select_slice(&mut self, timeline: &Timeline, slice: SliceRef) {
        self.selection = Selection::Slice(slice);
        let (start, end) = timeline.span(slice);
        let (start, end) = (start as f64, end as f64);
        let visible = start >= self.viewport.start_ns && end <= self.viewport.end_ns;
        if !visible {
            self.jump_to(timeline, start, end, Some(slice.track));
        } else {
            self.jump_scroll_only(slice.track);
        }
    }

    fn jump_scroll_only(&mut self, track: u32) {
        if let Some(place) = self.layout.place_of(track) {
            if place.top < self.scroll_y || place.top > self.scroll_y + self.last_height - 20.0 {
                self.scroll_y = (place.top - 40.0).max(0.0);
            }
        }
    }
}

/// A loaded set of traces.
#[derive(Debug)]
pub struct Loaded {
    /// Files shown.
    pub files: Vec<PathBuf>,
    /// The timeline.
    pub timeline: Arc<Timeline>,
    /// The view of it.
    pub view: TimelineView,
    /// The analyses, once computed (or why they failed).
    pub analyses: Option<Result<Box<Analyses>, String>>,
    /// The critical path panel and the dimming of slices off the path.
    pub critical: crate::critical::CriticalState,
}

/// The whole viewer.
#[derive(Debug)]
pub struct ViewerApp {
    /// A load in progress.
    pub job: Option<LoadJob>,
    /// What is shown.
    pub loaded: Option<Loaded>,
    /// The last loading error.
    pub error: Option<String>,
    /// Search state.
    pub search: Search,
    /// Analysis panel state.
    pub panels: PanelState,
    /// Recently opened paths.
    pub recent: RecentFiles,
    /// Text of the "open" field.
    pub open_text: String,
    /// Whether the key help is shown.
    pub show_help: bool,
    /// Repaint handle for the loader thread (set on the first frame).
    ctx: Option<egui::Context>,
    /// Paths to open on the first frame.
    pending: Vec<PathBuf>,
}

impl ViewerApp {
    /// A viewer that will open `paths` on its first frame.
    pub fn new(paths: Vec<PathBuf>, recent: RecentFiles) -> Self {
        ViewerApp {
            job: None,
            loaded: None,
            error: None,
            search: Search::default(),
            panels: PanelState::default(),
            recent,
            open_text: String::new(),
            show_help: false,
            ctx: None,
            pending: paths,
        }
    }

    /// Starts loading `paths` in the background (replacing what is shown when done).
    pub fn open(&mut self, paths: Vec<PathBuf>) {
        let ctx = self.ctx.clone();
        let wake = move || {
            if let Some(ctx) = &ctx {
                ctx.request_repaint();
            }
        };
        match spawn_load(paths.clone(), wake) {
            Ok(job) => {
                self.recent.add(&paths);
                self.error = None;
                self.job = Some(job);
            }
            Err(e) => self.error = Some(e),
        }
    }

    /// Whether a load is still running (timeline or analyses).
    pub fn is_loading(&self) -> bool {
        self.job.is_some()
    }

    fn poll_job(&mut self) {
        let Some(job) = &self.job else { return };
        loop {
            match job.receiver.try_recv() {
                Ok(LoadMessage::Timeline(timeline)) => {
                    self.search = Search::default();
                    self.panels = PanelState::default();
                    self.loaded = Some(Loaded {
                        files: job.files.clone(),
                        view: TimelineView::new(&timeline),
                        timeline,
                        analyses: None,
                        critical: Default::default(),
                    });
                }
                Ok(LoadMessage::Analysis(result)) => {
                    if let Some(loaded) = &mut self.loaded {
                        loaded.analyses = Some(result);
                    }
                    self.job = None;
                    return;
                }
                Ok(LoadMessage::Failed(e)) => {
                    self.error = Some(e);
                    self.job = None;
                    return;
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => return,
                Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                    self.job = None;
                    return;
                }
            }
        }
    }

    /// Draws the whole viewer into `ui` (the root of the window, or a test harness).
    pub fn ui(&mut self, ui: &mut egui::Ui) {
        let ctx = ui.ctx().clone();
        if self.ctx.is_none() {
            self.ctx = Some(ctx.clone());
        }
        if !self.pending.is_empty() {
            let paths = std::mem::take(&mut self.pending);
            self.open(paths);
        }
        self.poll_job();
        let dropped: Vec<PathBuf> = ctx.input(|i| {
            i.raw
                .dropped_files
                .iter()
                .map(|f| f.path().to_path_buf())
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        });
        if !dropped.is_empty() {
            self.open(dropped);
        }
        if self.job.is_some() {
            ctx.request_repaint_after(std::time::Duration::from_millis(50));
        }
        self.keys(&ctx);

        egui::Panel::top("menu").show(ui, |ui| self.top_bar_ui(ui));
        if self.loaded.is_some() {
            egui::Panel::bottom("details")
                .resizable(true)
                .default_size(230.0)
                .show(ui, |ui| {
                    if let Some(loaded) = &mut self.loaded {
                        crate::ui::details_ui::details_ui(ui, loaded, &mut self.search);
                    }
                });
            egui::Panel::right("analyses")
                .resizable(true)
                .default_size(470.0)
                .show(ui, |ui| {
                    if let Some(loaded) = &mut self.loaded {
                        crate::ui::panels_ui::panels_ui(ui, loaded, &mut self.panels);
                    }
                });
        }
        egui::CentralPanel::default().show(ui, |ui| match &mut self.loaded {
            Some(loaded) => crate::ui::timeline_ui::timeline_ui(ui, loaded),
            None => self.welcome_ui(ui),
        });
        if self.show_help {
            egui::Window::new("Keys")
                .open(&mut self.show_help)
                .show(&ctx, crate::ui::help_ui);
        }
    }

    fn keys(&mut self, ctx: &egui::Context) {
        if ctx.egui_wants_keyboard_input() {
            if ctx.input(|i| i.key_pressed(egui::Key::Escape)) {
                ctx.memory_mut(|m| m.request_focus(egui::Id::NULL));
            }
            return;
        }
        let pressed = |key| ctx.input(|i| i.key_pressed(key));
        let typed = |text: &str| {
            ctx.input(|i| {
                i.events
                    .iter()
                    .any(|e| matches!(e, egui::Event::Text(t) if t == text))
            })
        };
        if typed("?") {
            self.show_help = !self.show_help;
        }
        let Some(loaded) = &mut self.loaded else {
            return;
        };
        let timeline = Arc::clone(&loaded.timeline);
        let view = &mut loaded.view;
        let max_span = timeline.end_ns.max(1) as f64;
        let center = (view.viewport.start_ns + view.viewport.end_ns) / 2.0;
        let around = ctx
            .pointer_hover_pos()
            .and_then(|_| crate::ui::timeline_ui::hover_time(ctx))
            .unwrap_or(center);
        if ctx.input(|i| i.key_down(egui::Key::W)) {
            view.viewport.zoom(0.92, around, max_span);
            ctx.request_repaint();
        }
        if ctx.input(|i| i.key_down(egui::Key::S)) {
            view.viewport.zoom(1.0 / 0.92, around, max_span);
            ctx.request_repaint();
        }
        if ctx.input(|i| i.key_down(egui::Key::A)) {
            view.viewport.pan(-0.03 * view.viewport.span_ns());
            ctx.request_repaint();
        }
        if ctx.input(|i| i.key_down(egui::Key::D)) {
            view.viewport.pan(0.03 * view.viewport.span_ns());
            ctx.request_repaint();
        }
        if pressed(egui::Key::F) {
            match view.selection {
                Selection::Slice(slice) => {
                    let (s, e) = timeline.span(slice);
                    view.jump_to(&timeline, s as f64, e as f64, Some(slice.track));
                }
                Selection::Range(s, e) => view.viewport.focus(s, e),
                Selection::None => view.viewport = Viewport::whole(&timeline),
            }
        }
        if pressed(egui::Key::Escape) {
            view.selection = Selection::None;
        }
        let digits = [
            egui::Key::Num1,
            egui::Key::Num2,
            egui::Key::Num3,
            egui::Key::Num4,
            egui::Key::Num5,
            egui::Key::Num6,
            egui::Key::Num7,
            egui::Key::Num8,
        ];
        for (key, tab) in digits.into_iter().zip(crate::ui::panels_ui::Tab::ALL) {
            if pressed(key) {
                self.panels.tab = tab;
            }
        }
        if typed("/") {
            self.search.focus_requested = true;
        }
        if typed("c") || typed("C") {
            loaded.critical.dim = !loaded.critical.dim;
        }
        if typed("[") || typed("]") {
            let forward = typed("]");
            if let Selection::Slice(slice) = view.selection {
                if let Some(next) = crate::search::follow_flow(&timeline, slice, forward) {
                    view.select_slice(&timeline, next);
                }
            }
        }
        if pressed(egui::Key::Enter) || pressed(egui::Key::N) {
            if let Some(next) = self.search.next(&timeline) {
                view.select_slice(&timeline, next);
            }
        }
    }

    fn top_bar_ui(&mut self, ui: &mut egui::Ui) {
        ui.horizontal(|ui| {
            ui.strong("neuron-viewer");
            ui.separator();
            let field = ui.add(
                egui::TextEdit::singleline(&mut self.open_text)
                    .hint_text("trace .json / .json.gz or rank directory")
                    .desired_width(280.0),
            );
            let enter = field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
            if (ui.button("Open").clicked() || enter) && !self.open_text.trim().is_empty() {
                let paths = self
                    .open_text
                    .split_whitespace()
                    .map(PathBuf::from)
                    .collect();
                self.open(paths);
            }
            let recent = self.recent.paths().to_vec();
            ui.menu_button("Recent", |ui| {
                if recent.is_empty() {
                    ui.label("(none yet)");
                }
                for paths in recent {
                    let text = paths
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(" ");
                    if ui.button(text).clicked() {
                        self.open(paths);
                        ui.close();
                    }
                }
            });
            if ui.button("?").on_hover_text("keys").clicked() {
                self.show_help = !self.show_help;
            }
            if let Some(job) = &self.job {
                let stage = job
                    .progress
                    .stage
                    .lock()
                    .map(|s| s.clone())
                    .unwrap_or_default();
                let fraction = job.progress.fraction();
                ui.add(
                    egui::ProgressBar::new(fraction)
                        .desired_width(220.0)
                        .text(format!("{stage} {:.0}%", fraction * 100.0)),
                );
            }
            if let Some(loaded) = &self.loaded {
                let t = &loaded.timeline;
                ui.label(format!(
                    "{} files · {} slices · {} tracks · {} flows",
                    t.files.len(),
                    t.slice_count,
                    t.tracks.len(),
                    t.flows.len()
                ));
            }
        });
        if let Some(error) = &self.error {
            ui.colored_label(
                egui::Color32::from_rgb(230, 80, 80),
                format!("warning: {error}"),
            );
        }
        if let Some(loaded) = &self.loaded {
            for file in &loaded.timeline.files {
                for warning in &file.warnings {
                    ui.colored_label(
                        egui::Color32::from_rgb(240, 170, 40),
                        format!("warning: {}: {warning}", file.path.display()),
                    );
                }
            }
        }
    }

    fn welcome_ui(&mut self, ui: &mut egui::Ui) {
        ui.vertical_centered(|ui| {
            ui.add_space(80.0);
            ui.heading("neuron-viewer");
            if self.job.is_some() {
                ui.label("Loading…");
            } else {
                ui.label(
                    "Drop Kineto traces (.json, .json.gz) or a directory of rank traces here,",
                );
                ui.label("type a path above, or pick one from Recent.");
            }
        });
    }
}

impl eframe::App for ViewerApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        ViewerApp::ui(self, ui);
    }
}
