//! Measures what the viewer's quality bars are about, headless (no window, no GPU):
//! opening a trace (reading every file into the timeline) and building frames at every
//! zoom level. Baselines measured in the same run: the bare streaming parse of the same
//! files (`trace_format::CountingSink`, the floor for opening) and a frame built without
//! level of detail (one shape per visible slice).
//!
//! With `--ui`, also whole viewer frames: the egui pass of the complete window (panels,
//! timeline, shapes) at 1600×1000 points plus egui's tessellation into triangles, i.e.
//! everything but the GPU upload and draw (headless through `egui_kittest`).
//!
//! ```text
//! cargo run --release -p gui --example viewer_bench -- /tmp/big.json [--runs 3] [--width 1600] [--ui]
//! ```

use std::path::PathBuf;
use std::time::{Duration, Instant};

use gui::frame::{build_frame, Layout, Viewport};
use gui::load::{collect_trace_files, load_timeline, Progress};
use gui::model::{Timeline, TrackKind};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A frame without level of detail: one shape per slice that intersects the view, on
/// the tracks laid out in `[y0, y1)`.
fn naive_frame(
    timeline: &Timeline,
    layout: &Layout,
    viewport: &Viewport,
    width: f32,
    y0: f32,
    y1: f32,
) -> usize {
    let (t0, t1) = (viewport.start_ns as i64, viewport.end_ns as i64);
    let mut shapes = Vec::new();
    for place in layout
        .tracks
        .iter()
        .filter(|p| p.top + p.height >= y0 && p.top < y1)
    {
        let track = &timeline.tracks[place.track as usize];
        if let TrackKind::Slices { rows } = &track.kind {
            for row in rows {
                let first = row.first_ending_after(t0);
                for i in first..row.len() {
                    if row.start_ns[i] > t1 {
                        break;
                    }
                    let x0 = viewport.x_of(row.start_ns[i] as f64, width);
                    let x1 = viewport.x_of(row.end_ns[i] as f64, width);
                    shapes.push((x0, x1, i as u32));
                }
            }
        }
    }
    std::hint::black_box(&shapes).len()
}

fn main() -> anyhow::Result<()> {
    let mut paths = Vec::new();
    let mut runs = 3usize;
    let mut width = 1600f32;
    let mut ui = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => runs = args.next().and_then(|n| n.parse().ok()).unwrap_or(runs),
            "--width" => width = args.next().and_then(|n| n.parse().ok()).unwrap_or(width),
            "--ui" => ui = true,
            _ => paths.push(PathBuf::from(arg)),
        }
    }
    anyhow::ensure!(
        !paths.is_empty(),
        "usage: viewer_bench PATH… [--runs N] [--width PX]"
    );
    let files = collect_trace_files(&paths)?;
    let bytes: u64 = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();

    // Baseline: parse only.
    let mut parse = Vec::new();
    let mut events = 0;
    for _ in 0..runs {
        let start = Instant::now();
        events = 0;
        for f in &files {
            let mut sink = trace_format::CountingSink::default();
            trace_format::TraceReader::open(f).read(&mut sink)?;
            events += sink.events;
        }
        parse.push(start.elapsed());
    }

    // Opening: every file into the timeline.
    let mut open = Vec::new();
    let mut timeline = None;
    for _ in 0..runs {
        drop(timeline.take());
        let progress = Progress::for_files(&files);
        let start = Instant::now();
        timeline = Some(load_timeline(&files, &progress)?);
        open.push(start.elapsed());
    }
    let timeline = timeline.expect("at least one run");
    println!(
        "input: {} file(s), {:.0} MB, {} events, {} slices, {} tracks, {} flows",
        files.len(),
        bytes as f64 / 1e6,
        events,
        timeline.slice_count,
        timeline.tracks.len(),
        timeline.flows.len()
    );
    let open_ms = ms(median(open.clone()));
    let parse_ms = ms(median(parse.clone()));
    println!(
        "open (timeline ready): median {open_ms:.0} ms of {runs} (runs: {:?} ms); parse-only baseline median {parse_ms:.0} ms; ratio {:.2}x",
        open.iter().map(|d| ms(*d).round()).collect::<Vec<_>>(),
        open_ms / parse_ms
    );

    // Frames at zoom levels from the whole trace to 1 / 10^5 of it, panned across the
    // trace: first with every track expanded and built (a very tall window: the worst
    // case), then as the viewer shows it (groups collapsed as on opening, a 1000 px
    // window scrolled through the tracks).
    let all = Layout::new(&timeline, &[]);
    let collapsed: Vec<bool> = timeline.groups.iter().map(|g| g.collapsed).collect();
    let window = Layout::new(&timeline, &collapsed);
    for (what, layout, window_px) in [
        ("every track expanded and built", &all, all.height),
        ("opening layout, 1000 px window", &window, 1000.0),
    ] {
        frames_table(&timeline, layout, width, window_px, what);
    }
    if ui {
        drop(timeline);
        ui_frames(&paths);
    }
    Ok(())
}

fn frames_table(timeline: &Timeline, layout: &Layout, width: f32, window_px: f32, what: &str) {
    let whole = Viewport::whole(timeline);
    println!(
        "frames at {width} px wide, {what} ({} of {} px of tracks per frame):",
        window_px.min(layout.height).round(),
        layout.height.round()
    );
    println!("  zoom (of trace)   lod median   lod max   shapes   no-lod median   ratio");
    for zoom in [1.0, 0.1, 0.01, 0.001, 0.0001, 0.00001] {
        let span = whole.span_ns() * zoom;
        let positions = 40;
        let mut lod = Vec::new();
        let mut naive = Vec::new();
        let mut shapes = 0;
        for p in 0..positions {
            let f = p as f64 / (positions - 1).max(1) as f64;
            let start = whole.start_ns + (whole.span_ns() - span) * f;
            let viewport = Viewport {
                start_ns: start,
                end_ns: start + span,
            };
            let y0 = ((layout.height - window_px).max(0.0) as f64 * f) as f32;
            let t = Instant::now();
            let frame = build_frame(timeline, layout, &viewport, width, y0, y0 + window_px);
            lod.push(t.elapsed());
            shapes = shapes.max(frame.shapes.len());
            let t = Instant::now();
            std::hint::black_box(naive_frame(
                timeline,
                layout,
                &viewport,
                width,
                y0,
                y0 + window_px,
            ));
            naive.push(t.elapsed());
        }
        let max = *lod.iter().max().expect("frames");
        let (lod_m, naive_m) = (ms(median(lod)), ms(median(naive)));
        println!(
            "  {zoom:<16}  {lod_m:>8.2} ms  {:>6.2} ms  {shapes:>7}  {naive_m:>10.2} ms  {:>6.1}x",
            ms(max),
            naive_m / lod_m.max(1e-6)
        );
    }
}

/// Whole-window frames: egui pass plus tessellation, at each zoom level.
fn ui_frames(paths: &[PathBuf]) {
    use eframe::egui;
    let app = gui::ViewerApp::new(paths.to_vec(), gui::recent::RecentFiles::in_memory());
    let mut harness = egui_kittest::Harness::builder()
        .with_size(egui::vec2(1600.0, 1000.0))
        .build_ui_state(|ui, app: &mut gui::ViewerApp| app.ui(ui), app);
    // Wait for the timeline and the analyses (they use the cores while running).
    while harness.state().is_loading() || harness.state().loaded.is_none() {
        harness.step();
        std::thread::sleep(Duration::from_millis(20));
    }
    let timeline = harness
        .state()
        .loaded
        .as_ref()
        .expect("loaded")
        .timeline
        .clone();
    let whole = Viewport::whole(&timeline);
    println!("whole window, 1600x1000 points: egui pass + tessellation (no GPU):");
    println!("  zoom (of trace)   median     max     triangles");
    for zoom in [1.0, 0.1, 0.01, 0.001, 0.0001, 0.00001] {
        let span = whole.span_ns() * zoom;
        let mut times = Vec::new();
        let mut triangles = 0;
        for p in 0..20 {
            let start = whole.start_ns + (whole.span_ns() - span) * p as f64 / 19.0;
            harness
                .state_mut()
                .loaded
                .as_mut()
                .expect("loaded")
                .view
                .viewport = Viewport {
                start_ns: start,
                end_ns: start + span,
            };
            let t = Instant::now();
            harness.step();
            let shapes = harness.output().shapes.clone();
            let meshes = harness.ctx.tessellate(shapes, 1.0);
            times.push(t.elapsed());
            triangles = meshes
                .iter()
                .map(|m| match &m.primitive {
                    egui::epaint::Primitive::Mesh(mesh) => mesh.indices.len() / 3,
                    _ => 0,
                })
                .sum::<usize>()
                .max(triangles);
        }
        let max = *times.iter().max().expect("frames");
        println!(
            "  {zoom:<16}  {:>6.2} ms  {:>6.2} ms  {triangles:>9}",
            ms(median(times)),
            ms(max)
        );
    }
}
