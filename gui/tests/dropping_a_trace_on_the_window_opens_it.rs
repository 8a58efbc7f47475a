//! An empty window invites a drop; dropping a trace opens it and puts it first in the
//! recent files; the Open field opens a typed path the same way.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use eframe::egui;
use egui_kittest::kittest::Queryable as _;

#[derive(Debug)]
struct Dropped(PathBuf);

impl egui::DroppedFile for Dropped {
    fn path(&self) -> &Path {
        &self.0
    }
    fn bytes(&self) -> Result<Vec<u8>, String> {
        std::fs::read(&self.0).map_err(|e| e.to_string())
    }
}

#[test]
fn dropping_a_trace_on_the_window_opens_it() {
    let dir = support::traces_dir();
    let mut harness = support::viewer(Vec::new());
    harness.run_steps(2);
    assert!(
        harness
            .query_all_by_label_contains("Drop Kineto traces")
            .count()
            == 1
    );
    assert!(harness.state().loaded.is_none());

    let path = dir.join("hta/simple_add.json.gz");
    harness
        .input_mut()
        .dropped_files
        .push(Arc::new(Dropped(path.clone())));
    harness.step();
    assert!(harness.state().is_loading(), "the drop starts a load");
    support::wait_loaded(&mut harness);
    let loaded = harness.state().loaded.as_ref().unwrap();
    assert_eq!(loaded.files, vec![path.clone()]);
    assert!(loaded.timeline.slice_count > 0);
    let canonical = std::fs::canonicalize(&path).unwrap();
    assert_eq!(harness.state().recent.paths()[0], vec![canonical]);

    // Typing a path in the Open field and pressing Open replaces what is shown.
    let other = dir.join("hta/triton_example.json.gz");
    harness.state_mut().open_text = other.display().to_string();
    harness.get_by_label("Open").click();
    harness.step();
    support::wait_loaded(&mut harness);
    assert_eq!(harness.state().loaded.as_ref().unwrap().files, vec![other]);
    assert_eq!(harness.state().recent.paths().len(), 2);

    // A path that does not exist is an error in the window, not a crash.
    harness.state_mut().open_text = dir.join("no-such-trace.json").display().to_string();
    harness.get_by_label("Open").click();
    harness.run_steps(2);
    let error = harness.state().error.clone().expect("an error is shown");
    assert!(error.contains("no-such-trace.json"), "{error}");
    assert!(
        harness
            .query_all_by_label_contains("no-such-trace.json")
            .count()
            >= 1
    );
}
