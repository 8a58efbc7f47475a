//! Where the real traces are: vendored in `tests/data/traces`.

use std::path::{Path, PathBuf};

/// The real traces vendored in the repository (`tests/data/traces`, provenance in
/// `tests/data/README.md`). They are part of the repository, so they are never skipped.
pub fn traces_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/traces");
    assert!(
        dir.is_dir(),
        "{} is missing: the vendored test data",
        dir.display()
    );
    dir
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
