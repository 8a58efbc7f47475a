//! Where the shared real traces are.

use std::path::PathBuf;

/// `../shared/traces`, or `None` (with a printed message) when absent.
pub fn traces_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED: {} not found; HTA parity tests need the shared traces",
            dir.display()
        );
        None
    }
}
