//! The analysis panels (from the `analysis` crate): overview, utilization heatmap,
//! memory, collectives, kernels, operators, insights. Clicking a row that has a time
//! range jumps there on the timeline; a row with only a name selects that name's longest
//! slice.

use std::sync::Arc;

use eframe::egui::{self, Color32, RichText};

use crate::app::Loaded;
use crate::heatmap::{engine_heatmap, Heatmap};
use crate::load::Analyses;
use crate::model::Timeline;
use crate::ui::format_ns;

/// Which panel is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Tab {
    /// Temporal breakdown and steps.
    #[default]
    Overview,
    /// Engine utilization heatmap and table.
    Utilization,
    /// Memory timeline.
    Memory,
    /// Collectives across ranks.
    Collectives,
    /// Kernel table.
    Kernels,
    /// Operator table.
    Operators,
    /// Findings.
    Insights,
    /// The critical path of a step, and the dimming of what is off it.
    CriticalPath,
}

impl Tab {
    /// Every tab, in order.
    pub const ALL: [Tab; 8] = [
        Tab::Overview,
        Tab::Utilization,
        Tab::Memory,
        Tab::Collectives,
        Tab::Kernels,
        Tab::Operators,
        Tab::Insights,
        Tab::CriticalPath,
    ];

    /// The tab's title.
    pub fn title(self) -> &'static str {
        match self {
            Tab::Overview => "Overview",
            Tab::Utilization => "Utilization",
            Tab::Memory => "Memory",
            Tab::Collectives => "Collectives",
            Tab::Kernels => "Kernels",
            Tab::Operators => "Operators",
            Tab::Insights => "Insights",
            Tab::CriticalPath => "Critical path",
        }
    }
}

/// Panel state: tab, sort orders, cached heatmap.
#[derive(Debug)]
pub struct PanelState {
    /// The tab shown.
    pub tab: Tab,
    /// Kernel table: sort column and descending.
    pub kernel_sort: (usize, bool),
    /// Operator table: sort column and descending.
    pub operator_sort: (usize, bool),
    heatmap: Option<Heatmap>,
}

impl Default for PanelState {
    fn default() -> Self {
        PanelState {
            tab: Tab::default(),
            // Most time first, as the analysis' own tables.
            kernel_sort: (3, true),
            operator_sort: (2, true),
            heatmap: None,
        }
    }
}

enum Jump {
    /// A time range of a rank, in the analyses' µs since that rank's origin.
    RankRange(i64, f64, f64),
    /// The longest slice with this name.
    Name(String),
    /// A time range on the timeline (ns since its origin).
    Timeline(f64, f64),
    /// One slice.
    Slice(crate::model::SliceRef),
    /// One collective: its kernel on every rank, the one on `rank` selected.
    Collective {
        process_group: String,
        seq: i64,
        rank: i64,
    },
}

/// Formats µs the way every panel does (3 decimals), so tests can find the numbers.
pub fn us(v: f64) -> String {
    format!("{v:.3}")
}

/// Formats a byte count exactly, with MiB beside it.
pub fn bytes(n: i64) -> String {
    format!("{n} bytes ({:.1} MiB)", n as f64 / (1u64 << 20) as f64)
}

/// Formats a percentage (2 decimals).
pub fn pct(v: f64) -> String {
    format!("{v:.2}")
}

/// Draws the panels.
pub fn panels_ui(ui: &mut egui::Ui, loaded: &mut Loaded, state: &mut PanelState) {
    let ctx = ui.ctx().clone();
    crate::ui::critical_path_ui::critical_path_update(&ctx, loaded, state.tab == Tab::CriticalPath);
    ui.horizontal_wrapped(|ui| {
        for tab in Tab::ALL {
            ui.selectable_value(&mut state.tab, tab, tab.title());
        }
    });
    ui.separator();
    let timeline = Arc::clone(&loaded.timeline);
    let analyses = match &loaded.analyses {
        None => {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label("computing the analyses…");
            });
            None
        }
        Some(Err(e)) => {
            ui.colored_label(
                Color32::from_rgb(230, 80, 80),
                format!("analyses failed: {e}"),
            );
            None
        }
        Some(Ok(a)) => Some(a),
    };
    let mut jump = None;
    egui::ScrollArea::both()
        .id_salt("panel")
        .auto_shrink(false)
        .show(ui, |ui| {
            if state.tab == Tab::Utilization {
                heatmap_ui(ui, &timeline, state, &mut jump);
            }
            let Some(a) = analyses else { return };
            for error in &a.report.errors {
                ui.colored_label(Color32::from_rgb(240, 170, 40), format!("warning: {error}"));
            }
            match state.tab {
                Tab::Overview => overview_ui(ui, a, &mut jump),
                Tab::Utilization => utilization_ui(ui, a),
                Tab::Memory => memory_ui(ui, a, &mut jump),
                Tab::Collectives => collectives_ui(ui, a, &mut jump),
                Tab::Kernels => kernels_ui(ui, a, state, &mut jump),
                Tab::Operators => operators_ui(ui, a, state, &mut jump),
                Tab::Insights => insights_ui(ui, a, &mut jump),
                Tab::CriticalPath => {
                    let critical = &mut loaded.critical;
                    if let Some(slice) =
                        crate::ui::critical_path_ui::critical_path_ui(ui, a, critical)
                    {
                        jump = Some(Jump::Slice(slice));
                    }
                }
            }
        });
    if let Some(jump) = jump {
        let view = &mut loaded.view;
        match jump {
            Jump::RankRange(rank, s_us, e_us) => {
                if let Some(a) = analyses {
                    if let (Some(s), Some(e)) = (a.abs_ns(rank, s_us), a.abs_ns(rank, e_us)) {
                        let s = (s - timeline.origin_ns) as f64;
                        let e = (e - timeline.origin_ns) as f64;
                        view.jump_to(&timeline, s, e, None);
                        view.selection = crate::app::Selection::Range(s, e);
                    }
                }
            }
            Jump::Collective {
                process_group,
                seq,
                rank,
            } => {
                let kernels = collective_kernels(&timeline, &process_group, seq);
                if let (Some(s), Some(e)) = (
                    kernels.iter().map(|k| timeline.span(*k).0).min(),
                    kernels.iter().map(|k| timeline.span(*k).1).max(),
                ) {
                    let chosen = kernels
                        .iter()
                        .find(|k| {
                            let file = timeline.groups
                                [timeline.tracks[k.track as usize].group as usize]
                                .file;
                            timeline.files[file as usize].rank == Some(rank)
                        })
                        .or(kernels.first())
                        .copied();
                    if let Some(kernel) = chosen {
                        view.jump_to(&timeline, s as f64, e as f64, Some(kernel.track));
                        view.selection = crate::app::Selection::Slice(kernel);
                    }
                }
            }
            Jump::Timeline(s, e) => {
                view.jump_to(&timeline, s, e, None);
                view.selection = crate::app::Selection::Range(s, e);
            }
            Jump::Slice(slice) => view.select_slice(&timeline, slice),
            Jump::Name(name) => {
                if let Some(slice) = longest_named(&timeline, &name) {
                    view.select_slice(&timeline, slice);
                    let (s, e) = timeline.span(slice);
                    view.jump_to(&timeline, s as f64, e as f64, Some(slice.track));
                }
            }
        }
    }
}

/// The kernels of one collective on every rank: device slices whose arguments name the
/// process group (`Process Group Name`) and sequence number (`Seq`), as NCCL kernels and
/// ours carry them.
pub fn collective_kernels(
    timeline: &Timeline,
    process_group: &str,
    seq: i64,
) -> Vec<crate::model::SliceRef> {
    let Some(kernel) = timeline.names.lookup("kernel") else {
        return Vec::new();
    };
    let seq = seq.to_string();
    let mut found = Vec::new();
    for (t, track) in timeline.tracks.iter().enumerate() {
        for (depth, row) in track.rows().iter().enumerate() {
            for i in 0..row.len() {
                if row.category[i] != kernel || row.args_at[i] == u64::MAX {
                    continue;
                }
                let args = track.slice_args(row.args_at[i]);
                let has =
                    |key: &str, value: &str| args.iter().any(|(k, v)| *k == key && *v == value);
                if has("Process Group Name", process_group) && has("Seq", &seq) {
                    found.push(crate::model::SliceRef {
                        track: t as u32,
                        depth: depth as u16,
                        index: i as u32,
                    });
                }
            }
        }
    }
    found
}

/// The longest slice named exactly `name`.
pub fn longest_named(timeline: &Timeline, name: &str) -> Option<crate::model::SliceRef> {
    let id = timeline.names.lookup(name)?;
    let mut best: Option<(i64, crate::model::SliceRef)> = None;
    for (t, track) in timeline.tracks.iter().enumerate() {
        for (depth, row) in track.rows().iter().enumerate() {
            for i in 0..row.len() {
                if row.name[i] == id {
                    let dur = row.end_ns[i] - row.start_ns[i];
                    if best.is_none_or(|(d, _)| dur > d) {
                        best = Some((
                            dur,
                            crate::model::SliceRef {
                                track: t as u32,
                                depth: depth as u16,
                                index: i as u32,
                            },
                        ));
                    }
                }
            }
        }
    }
    best.map(|(_, s)| s)
}

fn header(ui: &mut egui::Ui, titles: &[&str]) {
    for t in titles {
        ui.strong(*t);
    }
    ui.end_row();
}

fn overview_ui(ui: &mut egui::Ui, a: &Analyses, jump: &mut Option<Jump>) {
    let r = &a.report;
    ui.label(format!("device: {} · ranks {:?}", r.device_type, r.ranks));
    ui.strong("Temporal breakdown (µs, %)");
    match &r.temporal_breakdown {
        Some(t) => {
            egui::Grid::new("temporal").striped(true).show(ui, |ui| {
                header(
                    ui,
                    &[
                        "rank",
                        "idle",
                        "compute",
                        "non-compute",
                        "kernel",
                        "idle %",
                        "compute %",
                        "non-compute %",
                    ],
                );
                for rank in &t.ranks {
                    ui.label(rank.rank.to_string());
                    for v in [
                        rank.idle_time_us,
                        rank.compute_time_us,
                        rank.non_compute_time_us,
                        rank.kernel_time_us,
                    ] {
                        ui.label(us(v));
                    }
                    for v in [
                        rank.idle_time_pctg,
                        rank.compute_time_pctg,
                        rank.non_compute_time_pctg,
                    ] {
                        ui.label(pct(v));
                    }
                    ui.end_row();
                }
            });
        }
        None => {
            ui.weak("no temporal breakdown (see the notes above)");
        }
    }
    ui.add_space(8.0);
    ui.strong("Steps (µs; click to show on the timeline)");
    egui::Grid::new("steps").striped(true).show(ui, |ui| {
        header(
            ui,
            &[
                "rank",
                "step",
                "duration",
                "compute",
                "comm",
                "memory",
                "host-bound idle",
                "bound",
            ],
        );
        for s in &r.steps {
            ui.label(s.rank.to_string());
            if ui.link(format!("#{}", s.step)).clicked() {
                *jump = Some(Jump::RankRange(s.rank, s.start_us, s.start_us + s.dur_us));
            }
            for v in [
                s.dur_us,
                s.computation_us,
                s.communication_us,
                s.memory_us,
                s.host_bound_idle_us,
            ] {
                ui.label(us(v));
            }
            ui.label(format!("{:?}", s.bound));
            ui.end_row();
        }
    });
}

fn heatmap_ui(
    ui: &mut egui::Ui,
    timeline: &Arc<Timeline>,
    state: &mut PanelState,
    jump: &mut Option<Jump>,
) {
    let stale = state
        .heatmap
        .as_ref()
        .is_none_or(|h| !Arc::ptr_eq(&h.timeline, timeline));
    if stale {
        state.heatmap = Some(engine_heatmap(timeline, 120));
    }
    let Some(h) = &state.heatmap else { return };
    if h.rows.is_empty() {
        ui.weak("no engine instruction tracks in this trace (neuron_instruction), so no heatmap");
        return;
    }
    ui.strong("Engine busy % over time (one row per engine track; click a cell to go there)");
    let cell = egui::vec2(3.0, 12.0);
    for row in &h.rows {
        ui.horizontal(|ui| {
            let group = &timeline.groups[row.group as usize];
            let label = match timeline.files[group.file as usize].rank {
                Some(rank) => format!("rank {rank} · {}", row.label),
                None => format!("{} · {}", group.label, row.label),
            };
            ui.add_sized(
                [210.0, cell.y],
                egui::Label::new(RichText::new(label).small()).truncate(),
            );
            let (rect, response) = ui.allocate_exact_size(
                egui::vec2(cell.x * row.busy.len() as f32, cell.y),
                egui::Sense::click(),
            );
            let painter = ui.painter_at(rect);
            for (i, busy) in row.busy.iter().enumerate() {
                let x = rect.left() + i as f32 * cell.x;
                // Idle is the panel's background, busy a bright orange.
                let lerp = |a: u8, b: u8| (a as f32 + (b as f32 - a as f32) * busy) as u8;
                let color = Color32::from_rgb(lerp(28, 255), lerp(30, 176), lerp(38, 48));
                painter.rect_filled(
                    egui::Rect::from_min_size(egui::pos2(x, rect.top()), cell),
                    0.0,
                    color,
                );
            }
            if let Some(p) = response
                .interact_pointer_pos()
                .filter(|_| response.clicked())
            {
                let i = ((p.x - rect.left()) / cell.x) as usize;
                let (s, e) = h.bucket_span(i);
                *jump = Some(Jump::Timeline(s, e));
            }
        });
    }
}

fn utilization_ui(ui: &mut egui::Ui, a: &Analyses) {
    ui.add_space(8.0);
    for d in &a.report.utilization {
        ui.strong(format!(
            "rank {} device {}: busy {} % · MFU {} · HFU {}",
            d.rank,
            d.device,
            pct(d.device_busy_pct),
            d.mfu_pct.map_or("–".into(), pct),
            d.hfu_pct.map_or("–".into(), pct)
        ));
        egui::Grid::new(("engines", d.rank, d.device))
            .striped(true)
            .show(ui, |ui| {
                header(
                    ui,
                    &[
                        "core",
                        "engine",
                        "busy µs",
                        "active %",
                        "instructions",
                        "wait µs",
                    ],
                );
                for e in &d.engines {
                    ui.label(e.core.map_or("–".into(), |c| c.to_string()));
                    ui.label(&e.engine);
                    ui.label(us(e.busy_us));
                    ui.label(pct(e.active_pct));
                    ui.label(e.instructions.to_string());
                    ui.label(us(e.wait_us));
                    ui.end_row();
                }
            });
        if let Some(dma) = &d.dma {
            ui.label(format!(
                "DMA: {} transfers, {} bytes, {} queues, active {} %",
                dma.transfers,
                dma.bytes,
                dma.queues,
                pct(dma.active_pct)
            ));
        }
        ui.add_space(6.0);
    }
}

fn memory_ui(ui: &mut egui::Ui, a: &Analyses, jump: &mut Option<Jump>) {
    for rank in &a.report.per_rank {
        for d in &rank.memory.devices {
            ui.strong(format!("rank {} · {}", rank.rank, d.device));
            egui::Grid::new(("memory", rank.rank, &d.device))
                .striped(true)
                .show(ui, |ui| {
                    ui.label("peak allocated");
                    if ui
                        .link(format!(
                            "{} at {} µs",
                            bytes(d.peak_allocated_bytes),
                            us(d.peak_allocated_at_us)
                        ))
                        .clicked()
                    {
                        let at = d.peak_allocated_at_us;
                        *jump = Some(Jump::RankRange(rank.rank, at - 50.0, at + 50.0));
                    }
                    ui.end_row();
                    ui.label("peak reserved");
                    ui.label(bytes(d.peak_reserved_bytes));
                    ui.end_row();
                    ui.label("capacity");
                    ui.label(d.capacity_bytes.map_or("–".into(), bytes));
                    ui.end_row();
                    ui.label("live at peak");
                    ui.label(format!(
                        "{} allocations, {}",
                        d.live_at_peak.count,
                        bytes(d.live_at_peak.bytes)
                    ));
                    ui.end_row();
                });
            ui.label("largest live at the peak:");
            egui::Grid::new(("live", rank.rank, &d.device))
                .striped(true)
                .show(ui, |ui| {
                    header(ui, &["bytes", "allocated at µs", "step"]);
                    for alloc in &d.live_at_peak.largest {
                        ui.label(alloc.bytes.to_string());
                        if ui.link(us(alloc.allocated_at_us)).clicked() {
                            let at = alloc.allocated_at_us;
                            *jump = Some(Jump::RankRange(rank.rank, at - 20.0, at + 20.0));
                        }
                        ui.label(alloc.step.map_or("–".into(), |s| s.to_string()));
                        ui.end_row();
                    }
                });
            ui.add_space(6.0);
        }
        if rank.memory.devices.is_empty() {
            ui.weak(format!("rank {}: no [memory] events", rank.rank));
        }
    }
}

fn collectives_ui(ui: &mut egui::Ui, a: &Analyses, jump: &mut Option<Jump>) {
    let c = &a.report.collectives;
    let slow = c.bottleneck_rank;
    match slow {
        Some(rank) => {
            ui.colored_label(
                Color32::from_rgb(240, 110, 90),
                format!("bottleneck rank: {rank}"),
            );
        }
        None => {
            ui.label("no bottleneck rank");
        }
    }
    ui.strong("Per rank (µs)");
    egui::Grid::new("coll ranks").striped(true).show(ui, |ui| {
        header(
            ui,
            &[
                "rank",
                "instances",
                "wait",
                "transfer",
                "times waited for",
                "others waited",
            ],
        );
        for r in &c.per_rank {
            let text = |s: String| {
                if Some(r.rank) == slow {
                    RichText::new(s)
                        .color(Color32::from_rgb(240, 110, 90))
                        .strong()
                } else {
                    RichText::new(s)
                }
            };
            ui.label(text(r.rank.to_string()));
            ui.label(text(r.instances.to_string()));
            ui.label(text(us(r.wait_us)));
            ui.label(text(us(r.transfer_us)));
            ui.label(text(r.times_waited_for.to_string()));
            ui.label(text(us(r.others_waited_us)));
            ui.end_row();
        }
    });
    ui.add_space(6.0);
    ui.strong("Instances: skew and waiting per rank (µs)");
    egui::Grid::new("coll instances")
        .striped(true)
        .show(ui, |ui| {
            header(
                ui,
                &[
                    "collective",
                    "group",
                    "seq",
                    "skew",
                    "waited for",
                    "transfer",
                    "wait per rank",
                ],
            );
            for inst in c.instances.iter().take(500) {
                ui.label(&inst.collective);
                ui.label(&inst.process_group);
                match inst.seq {
                    Some(seq) => {
                        if ui.link(seq.to_string()).clicked() {
                            *jump = Some(Jump::Collective {
                                process_group: inst.process_group.clone(),
                                seq,
                                rank: inst.waited_for_rank,
                            });
                        }
                    }
                    None => {
                        ui.label("–");
                    }
                }
                ui.label(us(inst.arrival_skew_us));
                let waited_for = RichText::new(inst.waited_for_rank.to_string());
                if Some(inst.waited_for_rank) == slow {
                    ui.label(waited_for.color(Color32::from_rgb(240, 110, 90)).strong());
                } else {
                    ui.label(waited_for);
                }
                ui.label(us(inst.transfer_us));
                let waits: Vec<String> = inst
                    .ranks
                    .iter()
                    .map(|r| format!("{}:{}", r.rank, us(r.wait_us)))
                    .collect();
                ui.label(waits.join(" "));
                ui.end_row();
            }
        });
}

fn sort_header(ui: &mut egui::Ui, titles: &[&str], sort: &mut (usize, bool)) {
    for (i, t) in titles.iter().enumerate() {
        let mark = if sort.0 == i {
            if sort.1 {
                " (desc)"
            } else {
                " (asc)"
            }
        } else {
            ""
        };
        if ui.button(format!("{t}{mark}")).clicked() {
            *sort = if sort.0 == i { (i, !sort.1) } else { (i, true) };
        }
    }
    ui.end_row();
}

fn kernels_ui(ui: &mut egui::Ui, a: &Analyses, state: &mut PanelState, jump: &mut Option<Jump>) {
    let kb = &a.report.kernel_breakdown;
    ui.strong("By type");
    egui::Grid::new("kernel types")
        .striped(true)
        .show(ui, |ui| {
            header(ui, &["type", "µs", "%"]);
            for t in &kb.by_type {
                ui.label(&t.kernel_type);
                ui.label(us(t.sum_us));
                ui.label(pct(t.percentage));
                ui.end_row();
            }
        });
    ui.add_space(6.0);
    ui.strong("Kernels (click a name to select its longest run)");
    let mut rows: Vec<_> = kb.kernels.iter().collect();
    let (col, desc) = state.kernel_sort;
    rows.sort_by(|x, y| {
        let o = match col {
            0 => x.name.cmp(&y.name),
            1 => x.rank.cmp(&y.rank),
            2 => x.count.cmp(&y.count),
            3 => x.sum_us.total_cmp(&y.sum_us),
            4 => x.mean_us.total_cmp(&y.mean_us),
            5 => x.min_us.total_cmp(&y.min_us),
            6 => x.p50_us.unwrap_or(0.0).total_cmp(&y.p50_us.unwrap_or(0.0)),
            7 => x.p99_us.unwrap_or(0.0).total_cmp(&y.p99_us.unwrap_or(0.0)),
            8 => x.max_us.total_cmp(&y.max_us),
            _ => x.stddev_us.total_cmp(&y.stddev_us),
        };
        if desc {
            o.reverse()
        } else {
            o
        }
    });
    egui::Grid::new("kernels").striped(true).show(ui, |ui| {
        sort_header(
            ui,
            &[
                "name", "rank", "count", "sum µs", "mean", "min", "p50", "p99", "max", "stddev",
            ],
            &mut state.kernel_sort,
        );
        for k in rows {
            if ui.link(&*k.name).clicked() {
                *jump = Some(Jump::Name(k.name.to_string()));
            }
            ui.label(k.rank.to_string());
            ui.label(k.count.to_string());
            for v in [
                Some(k.sum_us),
                Some(k.mean_us),
                Some(k.min_us),
                k.p50_us,
                k.p99_us,
            ]
            .into_iter()
            .chain([Some(k.max_us), Some(k.stddev_us)])
            {
                ui.label(v.map_or_else(|| "-".to_owned(), us));
            }
            ui.end_row();
        }
    });
}

fn operators_ui(ui: &mut egui::Ui, a: &Analyses, state: &mut PanelState, jump: &mut Option<Jump>) {
    for table in &a.operators {
        let table = match table {
            Ok(t) => t,
            Err(e) => {
                ui.colored_label(Color32::from_rgb(230, 80, 80), e);
                continue;
            }
        };
        ui.strong(format!("rank {}", table.rank));
        let mut rows: Vec<_> = table.operators.iter().collect();
        let (col, desc) = state.operator_sort;
        rows.sort_by(|x, y| {
            let o = match col {
                0 => x.name.cmp(&y.name),
                1 => x.calls.cmp(&y.calls),
                2 => x.cpu_total_us.total_cmp(&y.cpu_total_us),
                3 => x.cpu_self_us.total_cmp(&y.cpu_self_us),
                4 => x.device_self_us.total_cmp(&y.device_self_us),
                _ => x.device_total_us.total_cmp(&y.device_total_us),
            };
            if desc {
                o.reverse()
            } else {
                o
            }
        });
        egui::Grid::new(("operators", table.rank))
            .striped(true)
            .show(ui, |ui| {
                sort_header(
                    ui,
                    &[
                        "name",
                        "calls",
                        "CPU total µs",
                        "CPU self",
                        "device self",
                        "device total",
                    ],
                    &mut state.operator_sort,
                );
                for op in rows.iter().take(1000) {
                    if ui.link(&op.name).clicked() {
                        *jump = Some(Jump::Name(op.name.clone()));
                    }
                    ui.label(op.calls.to_string());
                    for v in [
                        op.cpu_total_us,
                        op.cpu_self_us,
                        op.device_self_us,
                        op.device_total_us,
                    ] {
                        ui.label(us(v));
                    }
                    ui.end_row();
                }
            });
    }
}

fn insights_ui(ui: &mut egui::Ui, a: &Analyses, jump: &mut Option<Jump>) {
    if a.report.insights.is_empty() {
        ui.label("no findings");
    }
    for f in &a.report.insights {
        ui.group(|ui| {
            ui.label(RichText::new(&f.summary).strong());
            ui.label(format!(
                "{:?}{} · value {:.3} {} (threshold {:.3})",
                f.kind,
                f.rank.map_or(String::new(), |r| format!(" · rank {r}")),
                f.value,
                f.unit,
                f.threshold
            ));
            if let (Some((s, e)), Some(rank)) = (f.time_range_us, f.rank) {
                if ui
                    .link(format!(
                        "show {} on the timeline",
                        format_ns((e - s) * 1000.0)
                    ))
                    .clicked()
                {
                    *jump = Some(Jump::RankRange(rank, s, e));
                }
            }
        });
    }
}
