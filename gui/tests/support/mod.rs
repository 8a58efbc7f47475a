//! Shared helpers of the viewer's tests: where the real traces are, and a harness that
//! drives the whole viewer (no GPU, no window: egui_kittest over AccessKit).

#![allow(dead_code)]

use eframe::egui;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use egui_kittest::Harness;
use gui::recent::RecentFiles;
use gui::ViewerApp;

/// The real traces vendored in the repository (`tests/data/traces`, provenance in
/// `tests/data/README.md`).
pub fn traces_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/traces");
    assert!(
        dir.is_dir(),
        "{} is missing: the vendored test data",
        dir.display()
    );
    dir
}

/// A harness running the viewer on `paths`, 1600×1000 points.
pub fn viewer(paths: Vec<PathBuf>) -> Harness<'static, ViewerApp> {
    let app = ViewerApp::new(paths, RecentFiles::in_memory());
    Harness::builder()
        .with_size(egui::vec2(1600.0, 1000.0))
        .build_ui_state(|ui, app: &mut ViewerApp| app.ui(ui), app)
}

/// Steps the harness until `done(app)` (at most 120 s; `what` names it in the failure),
/// then three more frames.
pub fn wait_until(
    harness: &mut Harness<'static, ViewerApp>,
    what: &str,
    done: impl Fn(&ViewerApp) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        harness.step();
        if done(harness.state()) {
            break;
        }
        assert!(Instant::now() < deadline, "{what} did not happen in 120 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    harness.run_steps(3);
}

/// Steps the harness until the loader has delivered the timeline and the analyses.
pub fn wait_loaded(harness: &mut Harness<'static, ViewerApp>) {
    wait_until(harness, "loading", |app| {
        !app.is_loading() && (app.loaded.is_some() || app.error.is_some())
    });
    if let Some(error) = &harness.state().error {
        panic!("loading failed: {error}");
    }
}
