//! Where the shared real traces are.

use std::path::{Path, PathBuf};

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

/// Every trace file (`.json.gz`) under `dir`'s `hta/`, `kineto-legacy/` and
/// `torch-2.15/`, sorted.
#[allow(dead_code)] // not every test crate goes through all of them
pub fn shared_trace_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for sub in ["hta", "kineto-legacy", "torch-2.15"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.to_string_lossy().ends_with(".json.gz") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}
