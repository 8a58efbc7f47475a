//! Helpers shared by the CLI's integration tests.

use std::path::PathBuf;

/// The shared real traces (`../shared/traces/` beside the repository), or `None` with a
/// printed notice when that folder is absent, so the calling test can skip.
pub fn shared_traces() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "skipping: {} is absent (the shared real traces)",
            dir.display()
        );
        None
    }
}
