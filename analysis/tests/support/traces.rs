//! Where the real traces are: vendored in `tests/data/traces`.

use std::path::{Path, PathBuf};

/// The real traces vendored in the repository (`tests/data/traces`, provenance in
/// `tests/data/README.md`). They are part of the repository, so they are never skipped.
#[allow(dead_code)] // not every test crate reads the vendored traces
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

/// The folder holding `tracelens/` (Hugging Face models on MI300X and H100 with TraceLens's
/// reports): `NEURONPROF_SHARED_TRACES` when set, else the repository's vendored copy
/// (`tests/data/traces/tracelens`, `tests/data/README.md`), which a plain clone has.
/// `None` (the caller records a skip) only when a named folder lacks it.
#[allow(dead_code)] // not every test crate reads the shared collection
pub fn shared_traces_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("NEURONPROF_SHARED_TRACES")
        .map(PathBuf::from)
        .unwrap_or_else(traces_dir);
    dir.join("tracelens").is_dir().then_some(dir)
}
