//! neuron-viewer: a desktop viewer for Kineto traces (what `torch.profiler` writes, with
//! `neuron` device activity or any other) that shows the `analysis` crate's results next
//! to the timeline.
//!
//! # Key types
//! - [`model::Timeline`]: every event of every opened file on one time axis, in columnar
//!   per-track rows ([`model::Row`]) with nesting depth computed at load.
//! - [`load`]: file discovery, background loading with byte progress
//!   ([`load::spawn_load`]), then the analyses ([`load::Analyses`]).
//! - [`frame`]: the shapes of one frame, computed without a window
//!   ([`frame::build_frame`]), so frame building is tested and benchmarked headless.
//! - [`app::ViewerApp`]: the eframe application; [`run_viewer`] opens the window.
//!
//! # Design choices
//! - **Tracks.** One track per (file, pid, tid); one group per (file, pid), host
//!   processes before devices. Unnamed neuron tracks are labelled from the emulator's
//!   conventions (DESIGN.md): tid 1000 + 100 × core + engine → `core C · engine E`, tid
//!   10000 + q → `DMA queue q`, device tid → `queue N`. Counter (`C`) series and the
//!   `[memory]` events' `Total Allocated` become area-chart counter tracks in their
//!   process' group; the `[memory]` instants stay on their thread as well.
//! - **No event is lost.** Every `X` and instant event becomes a slice (Chrome `B`/`E`
//!   pairs too, per track; an unclosed `B` shows as an instant). Events without `ts`
//!   and unmatched `E`s cannot be placed: they are counted in the file's warnings. Within a track,
//!   slices are sorted by (start, longer first) and each goes one row below the deepest
//!   slice still open; a slice that partly overlaps another is put on a row where nothing
//!   is open, so overlapping events are drawn on separate rows rather than hidden.
//! - **Level of detail.** Each row's slices never overlap, so starts and ends are both
//!   sorted and a binary search finds what a pixel column holds: slices under
//!   [`frame::MIN_SLICE_PX`] wide that start in one column become one block with their
//!   count. A frame costs O(visible rows × pixels × log n), whatever the zoom.
//! - **Arguments** are kept at load as compact text per track (`key␟value␞`), so the
//!   details panel never re-reads the file.
//! - **Time.** Ranks are aligned on absolute time (`baseTimeNanoseconds` + `ts`); time 0
//!   is the earliest event of all files. Files are read once each (no pre-scan), in
//!   parallel, through a byte-counting reader for the progress bar.
//! - **Damage.** Files are read leniently: a damaged trace opens with the events before
//!   the damage and a warning naming the file, byte offset and event index.
//! - **Analyses** run after the timeline is shown, in the same background thread, with
//!   the options `neuronprof analyze --json --lenient` uses, so the panels show the same
//!   numbers. Analysis `_us` times count from each rank's first analysed event
//!   ([`load::Analyses::rank_origins_ns`]), which is how rows jump to the timeline.
//! - **Critical path** ([`critical`], panel 8): `neuronprof critical-path --instance N`'s
//!   default mode (every rank in one graph, the path through the rank that arrived last)
//!   on instance N of `ProfilerStep#` (a step selector; the whole trace when no file has
//!   steps), computed off the UI thread from the analyses' read of the files (loaded
//!   with [`analysis::LoadOptions::with_timeline`]: about 40 bytes more per host event,
//!   so another step costs no re-read). The panel shows the length, the windows, the
//!   time by `bound_by`, the ranks the path runs through, the events with most time on
//!   it (a click selects the slice) and what the graph could not place; `C` (or the
//!   panel's checkbox) dims every slice whose event is not on the path (HTA's
//!   `critical_path_events_set`: the events of the path's nodes) and outlines those
//!   that are.
//! - **Roofline of a selected operator** ([`roofline`]): a host operator slice shows its
//!   row of the rank's roofline table (the analyses', computed once per rank by the
//!   loader): GFLOP and bytes per call, FLOPs/byte, this call's TFLOP/s and TB/s from
//!   the union of the kernels its launches flow to (the row's mean when none is found),
//!   % of roofline, bound, device and peak, calls with these shapes and the time to
//!   win; or the table's reason when the model does not cover the operator.
//!
//! # Example
//! ```
//! use gui::frame::{build_frame, Layout, Viewport};
//! # let dir = std::env::temp_dir().join(format!("gui-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir).unwrap();
//! # let path = dir.join("rank0.json");
//! # std::fs::write(&path, r#"{"traceEvents": [
//! #  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 5.0, "dur": 10}]}"#).unwrap();
//! let progress = gui::load::Progress::for_files(&[path.clone()]);
//! let timeline = gui::load::load_timeline(&[path], &progress)?;
//! let layout = Layout::new(&timeline, &[]);
//! let frame = build_frame(&timeline, &layout, &Viewport::whole(&timeline), 800.0, 0.0, 600.0);
//! assert_eq!(frame.slices_represented, 1);
//! # Ok::<(), anyhow::Error>(())
//! ```
#![warn(missing_docs)]

pub mod app;
pub mod critical;
pub mod frame;
pub mod heatmap;
pub mod load;
pub mod model;
pub mod range;
pub mod recent;
pub mod roofline;
pub mod search;
pub mod ui;

use std::path::PathBuf;

pub use app::ViewerApp;

/// Opens the viewer window on `paths` (files or rank directories; empty: an empty
/// window that accepts drops) and returns when it is closed.
pub fn run_viewer(paths: Vec<PathBuf>) -> anyhow::Result<()> {
    let options = eframe::NativeOptions {
        renderer: eframe::Renderer::Glow,
        viewport: eframe::egui::ViewportBuilder::default()
            .with_title("neuron-viewer")
            .with_inner_size([1600.0, 1000.0])
            .with_drag_and_drop(true),
        ..Default::default()
    };
    let recent = recent::RecentFiles::load_default();
    eframe::run_native(
        "neuron-viewer",
        options,
        Box::new(move |_cc| Ok(Box::new(ViewerApp::new(paths, recent)))),
    )
    .map_err(|e| anyhow::anyhow!("the viewer window failed: {e}"))
}
